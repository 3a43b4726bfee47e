package rstp

// The state machines of 802.1D-2004 17.21-17.31, one port at a time, run
// until none moves (OVS's move_rstp__). Each step* function takes at most
// one transition, runs the new state's actions and reports whether it
// moved. The Port Role Selection machine is updtRolesTree, run whenever a
// port asks to reselect.

// infoIs (17.19.10).
type infoIs uint8

const (
	infoDisabled infoIs = iota
	infoMine
	infoAged
	infoReceived
)

// rcvdInfo (17.19.22), what rcvInfo finds.
type rcvdInfo uint8

const (
	superiorDesignated rcvdInfo = iota
	repeatedDesignated
	inferiorDesignated
	inferiorRootAlternate
	otherInfo
)

// Port Information machine states (17.27).
const (
	pimDisabled uint8 = iota
	pimAged
	pimUpdate
	pimCurrent
)

// Port Role Transitions states (17.29): the role's main state and the
// transient ones that return to it.
const (
	prtDisabled uint8 = iota // DISABLE_PORT / DISABLED_PORT
	prtRoot
	prtDesignated
	prtAlternate // BLOCK_PORT / ALTERNATE_PORT / BACKUP_PORT
)

// Topology Change machine states (17.31).
const (
	tcmInactive uint8 = iota
	tcmLearning
	tcmActive
)

// Port Protocol Migration states (17.24).
const (
	ppmCheckingRSTP uint8 = iota
	ppmSelectingSTP
	ppmSensing
)

// Bridge Detection states (17.25).
const (
	bdmEdge uint8 = iota
	bdmNotEdge
)

// maxMoves bounds one run: the machines settle in a few dozen moves; more
// means a bug, and the next event runs them again.
const maxMoves = 10000

// begin is BEGIN for one port: every machine in its initial state.
func (p *Port) begin() {
	p.infoIs = infoDisabled
	p.selected, p.reselect, p.updtInfo = false, true, false
	p.agree, p.agreed, p.proposed, p.proposing = false, false, false, false
	p.rcvdMsg, p.rcvdBPDU, p.rcvdRSTP, p.rcvdSTP = false, false, false, false
	p.rcvdTc, p.rcvdTcn, p.rcvdTcAck, p.tcProp, p.tcAck = false, false, false, false, false
	p.disputed, p.mcheck = false, false
	p.pim = pimDisabled
	p.rcvdInfoWhile = 0
	// INIT_PORT.
	p.role, p.selectedRole = RoleDisabled, RoleDisabled
	p.learn, p.forward, p.synced = false, false, false
	p.sync, p.reRoot = true, true
	p.rrWhile, p.fdWhile, p.rbWhile = p.fwdDelay(), p.maxAge(), 0
	p.prt = prtDisabled
	// DISCARDING.
	p.setLearning(false)
	p.setForwarding(false)
	p.pst = 0
	// INACTIVE.
	p.fdbFlush, p.tcWhile, p.tcAck = true, 0, false
	p.tcm = tcmInactive
	// CHECKING_RSTP.
	p.sendRSTP = p.b.rstpVersion()
	p.mdelayWhile = migrateTime
	p.ppm = ppmCheckingRSTP
	// EDGE or NOT_EDGE.
	p.operEdge = p.cfg.AdminEdge
	p.bdm = bdmNotEdge
	if p.operEdge {
		p.bdm = bdmEdge
	}
	// TRANSMIT_INIT then IDLE.
	p.newInfo, p.txCount = true, 0
	p.helloWhen = 0
	// DISCARD.
	p.edgeDelayWhile = migrateTime
}

// tick is the Port Timers machine (17.22).
func (p *Port) tick() {
	for _, t := range []*int{&p.edgeDelayWhile, &p.fdWhile, &p.helloWhen, &p.mdelayWhile, &p.rbWhile, &p.rcvdInfoWhile, &p.rrWhile, &p.tcWhile} {
		if *t > 0 {
			*t--
		}
	}
	if p.txCount > 0 {
		p.txCount--
	}
	p.uptime++
}

// run moves every machine of every port until none moves.
func (b *Bridge) run() {
	for i := 0; i < maxMoves; i++ {
		moved := false
		if b.reselecting() {
			b.updtRolesTree()
			moved = true
		}
		for _, p := range b.ports {
			for _, step := range []func() bool{p.stepPRX, p.stepPPM, p.stepBDM, p.stepPIM, p.stepPRT, p.stepPST, p.stepTCM, p.stepPTX} {
				if step() {
					moved = true
				}
			}
		}
		if !moved {
			return
		}
	}
}

// reselecting is the Port Role Selection machine's transition into
// ROLE_SELECTION: some port asks for it.
func (b *Bridge) reselecting() bool {
	for _, p := range b.ports {
		if p.reselect {
			return true
		}
	}
	return false
}

// Derived values (17.20).

func (p *Port) fwdDelay() int  { return int(p.designatedTimes.ForwardDelay) }
func (p *Port) maxAge() int    { return int(p.designatedTimes.MaxAge) }
func (p *Port) helloTime() int { return int(p.designatedTimes.HelloTime) }

// forwardDelay is 17.20.6.
func (p *Port) forwardDelay() int {
	if p.sendRSTP {
		return p.helloTime()
	}
	return p.fwdDelay()
}

func (p *Port) edgeDelay() int {
	// Every port is point-to-point (OVS's default admin p2p state).
	return migrateTime
}

func (p *Port) allSynced() bool {
	for _, q := range p.b.ports {
		if !q.selected || q.role != q.selectedRole || !(q.synced || q.role == RoleRoot) {
			return false
		}
	}
	return true
}

func (p *Port) reRooted() bool {
	for _, q := range p.b.ports {
		if q != p && q.rrWhile != 0 {
			return false
		}
	}
	return true
}

// Port Receive (17.23).
func (p *Port) stepPRX() bool {
	if !p.enabled && (p.rcvdBPDU || p.edgeDelayWhile != migrateTime) {
		// DISCARD.
		p.rcvdBPDU, p.rcvdRSTP, p.rcvdSTP, p.rcvdMsg = false, false, false, false
		p.edgeDelayWhile = migrateTime
		return true
	}
	if p.rcvdBPDU && p.enabled && !p.rcvdMsg {
		// RECEIVE: updtBPDUVersion.
		if p.rcvd.Type == TypeRST && p.rcvd.Version >= 2 {
			p.rcvdRSTP = true
		} else if p.rcvd.Type != TypeRST {
			p.rcvdSTP = true
		}
		p.setTcFlagsTCN()
		p.operEdge, p.rcvdBPDU, p.rcvdMsg = false, false, true
		p.edgeDelayWhile = migrateTime
		return true
	}
	return false
}

// setTcFlagsTCN is the part of setTcFlags for a TCN BPDU, which the
// Port Information machine does not look at (OtherInfo).
func (p *Port) setTcFlagsTCN() {
	if p.rcvd.Type == TypeTCN {
		p.rcvdTcn = true
	}
}

// Port Protocol Migration (17.24).
func (p *Port) stepPPM() bool {
	switch p.ppm {
	case ppmCheckingRSTP:
		if p.mdelayWhile != migrateTime && !p.enabled {
			p.enterCheckingRSTP()
			return true
		}
		if p.mdelayWhile == 0 {
			p.enterSensing()
			return true
		}
	case ppmSelectingSTP:
		if p.mdelayWhile == 0 || !p.enabled || p.mcheck {
			p.enterSensing()
			return true
		}
	case ppmSensing:
		if !p.enabled || p.mcheck || (p.b.rstpVersion() && !p.sendRSTP && p.rcvdRSTP) {
			p.enterCheckingRSTP()
			return true
		}
		if p.sendRSTP && p.rcvdSTP {
			p.ppm = ppmSelectingSTP
			p.sendRSTP = false
			p.mdelayWhile = migrateTime
			return true
		}
	}
	return false
}

func (p *Port) enterCheckingRSTP() {
	p.ppm = ppmCheckingRSTP
	p.mcheck = false
	p.sendRSTP = p.b.rstpVersion()
	p.mdelayWhile = migrateTime
}

func (p *Port) enterSensing() {
	p.ppm = ppmSensing
	p.rcvdRSTP, p.rcvdSTP = false, false
}

// Bridge Detection (17.25).
func (p *Port) stepBDM() bool {
	switch p.bdm {
	case bdmEdge:
		if (!p.enabled && !p.cfg.AdminEdge) || !p.operEdge {
			p.bdm, p.operEdge = bdmNotEdge, false
			return true
		}
	case bdmNotEdge:
		if (!p.enabled && p.cfg.AdminEdge) || (p.edgeDelayWhile == 0 && p.cfg.AutoEdge && p.sendRSTP && p.proposing) {
			p.bdm, p.operEdge = bdmEdge, true
			return true
		}
	}
	return false
}

// Port Information (17.27).
func (p *Port) stepPIM() bool {
	if !p.enabled && p.infoIs != infoDisabled {
		p.enterPIMDisabled()
		return true
	}
	switch p.pim {
	case pimDisabled:
		if p.rcvdMsg {
			p.enterPIMDisabled()
			return true
		}
		if p.enabled {
			p.enterAged()
			return true
		}
	case pimAged:
		if p.selected && p.updtInfo {
			p.enterUpdate()
			return true
		}
	case pimCurrent:
		if p.selected && p.updtInfo {
			p.enterUpdate()
			return true
		}
		if p.infoIs == infoReceived && p.rcvdInfoWhile == 0 && !p.updtInfo && !p.rcvdMsg {
			p.enterAged()
			return true
		}
		if p.rcvdMsg && !p.updtInfo {
			p.receive()
			return true
		}
	}
	return false
}

func (p *Port) enterPIMDisabled() {
	p.pim = pimDisabled
	p.rcvdMsg = false
	p.proposing, p.proposed, p.agree, p.agreed = false, false, false, false
	p.rcvdInfoWhile = 0
	p.infoIs = infoDisabled
	p.reselect, p.selected = true, false
}

func (p *Port) enterAged() {
	p.pim = pimAged
	p.infoIs = infoAged
	p.reselect, p.selected = true, false
}

func (p *Port) enterUpdate() {
	p.proposing, p.proposed = false, false
	p.agreed = p.agreed && p.betterOrSameInfo(infoMine)
	p.synced = p.synced && p.agreed
	p.portVec, p.portTimes = p.designatedVec, p.designatedTimes
	p.updtInfo = false
	p.infoIs = infoMine
	p.newInfo = true
	p.pim = pimCurrent
}

// receive is RECEIVE and the state rcvInfo leads to, then CURRENT.
func (p *Port) receive() {
	p.rcvdInfo = p.rcvInfo()
	m := &p.rcvd
	switch p.rcvdInfo {
	case superiorDesignated:
		p.agreed, p.proposing = false, false
		p.recordProposal()
		p.setTcFlags()
		p.agree = p.agree && p.betterOrSameInfo(infoReceived)
		p.portVec = p.msgVec
		p.portTimes = p.msgTimes
		if p.portTimes.HelloTime == 0 {
			p.portTimes.HelloTime = 1
		}
		p.updtRcvdInfoWhile()
		p.infoIs = infoReceived
		p.reselect, p.selected = true, false
	case repeatedDesignated:
		p.recordProposal()
		p.setTcFlags()
		p.updtRcvdInfoWhile()
	case inferiorDesignated:
		// recordDispute.
		if m.Type == TypeRST && m.Flags&FlagLearning != 0 {
			p.disputed, p.agreed = true, false
		}
	case inferiorRootAlternate:
		// recordAgreement (every port is point-to-point).
		if p.b.rstpVersion() && m.Type == TypeRST && m.Flags&FlagAgree != 0 {
			p.agreed, p.proposing = true, false
		} else {
			p.agreed = false
		}
		p.setTcFlags()
	}
	p.rcvdMsg = false
	p.pim = pimCurrent
}

// rcvInfo is 17.21.8; it sets msgVec and msgTimes.
func (p *Port) rcvInfo() rcvdInfo {
	m := &p.rcvd
	if m.Type == TypeTCN {
		return otherInfo
	}
	p.msgVec, p.msgTimes = m.Vector, m.Times
	c := p.msgVec.compare(p.portVec)
	switch m.role() {
	case bpduRoleDesignated:
		// 17.6: superior if better, or from the same designated bridge
		// and port (a change of what that port sends).
		same := p.msgVec.DesignatedBridgeID.addr() == p.portVec.DesignatedBridgeID.addr() &&
			p.msgVec.DesignatedPortID&0xfff == p.portVec.DesignatedPortID&0xfff
		switch {
		case c < 0 || (same && c != 0):
			return superiorDesignated
		case c == 0 && p.msgTimes != p.portTimes:
			return superiorDesignated
		case c == 0:
			return repeatedDesignated
		}
		return inferiorDesignated
	case bpduRoleRoot, bpduRoleAltBackup:
		if c >= 0 {
			return inferiorRootAlternate
		}
	}
	return otherInfo
}

func (p *Port) recordProposal() {
	if p.rcvd.role() == bpduRoleDesignated && p.rcvd.Type == TypeRST && p.rcvd.Flags&FlagProposal != 0 {
		p.proposed = true
	}
}

func (p *Port) setTcFlags() {
	switch p.rcvd.Type {
	case TypeConfig, TypeRST:
		if p.rcvd.Flags&FlagTC != 0 {
			p.rcvdTc = true
		}
		if p.rcvd.Flags&FlagTCAck != 0 {
			p.rcvdTcAck = true
		}
	case TypeTCN:
		p.rcvdTcn = true
	}
}

func (p *Port) updtRcvdInfoWhile() {
	if p.portTimes.MessageAge+1 <= p.portTimes.MaxAge {
		p.rcvdInfoWhile = 3 * int(p.portTimes.HelloTime)
	} else {
		p.rcvdInfoWhile = 0
	}
}

// betterOrSameInfo is 17.21.1.
func (p *Port) betterOrSameInfo(newInfoIs infoIs) bool {
	return (newInfoIs == infoReceived && p.infoIs == infoReceived && p.msgVec.compare(p.portVec) <= 0) ||
		(newInfoIs == infoMine && p.infoIs == infoMine && p.designatedVec.compare(p.portVec) <= 0)
}

// updtRolesTree is the Port Role Selection machine's ROLE_SELECTION
// (clearReselectTree, updtRolesTree, setSelectedTree; 17.21.25).
func (b *Bridge) updtRolesTree() {
	for _, p := range b.ports {
		p.reselect = false
	}
	bridgeVec := Vector{RootID: b.id, DesignatedBridgeID: b.id}
	best, bestPort := bridgeVec, (*Port)(nil)
	var bestPortID uint16
	for _, p := range b.ports {
		if p.infoIs != infoReceived || p.portVec.DesignatedBridgeID.addr() == b.id.addr() {
			continue
		}
		v := p.portVec
		v.RootPathCost += p.cfg.PathCost
		c := v.compare(best)
		if c < 0 || (c == 0 && bestPort != nil && p.id < bestPortID) {
			best, bestPort, bestPortID = v, p, p.id
		}
	}
	if bestPort != nil && b.rootPort != bestPort {
		b.changed = true
	}
	b.rootVec, b.rootPort = best, bestPort
	b.rootTimes = b.times
	if bestPort != nil {
		b.rootTimes = bestPort.portTimes
		b.rootTimes.MessageAge++
	}
	for _, p := range b.ports {
		p.designatedVec = Vector{RootID: best.RootID, RootPathCost: best.RootPathCost, DesignatedBridgeID: b.id, DesignatedPortID: p.id}
		p.designatedTimes = b.rootTimes
		p.designatedTimes.HelloTime = b.times.HelloTime
		switch {
		case p.infoIs == infoDisabled:
			p.selectedRole = RoleDisabled
		case p.infoIs == infoAged:
			p.selectedRole, p.updtInfo = RoleDesignated, true
		case p.infoIs == infoMine:
			p.selectedRole = RoleDesignated
			if p.portVec != p.designatedVec || p.portTimes != p.designatedTimes {
				p.updtInfo = true
			}
		case p == bestPort:
			p.selectedRole, p.updtInfo = RoleRoot, false
		case p.designatedVec.compare(p.portVec) >= 0:
			p.selectedRole, p.updtInfo = RoleAlternate, false
			if p.portVec.DesignatedBridgeID.addr() == b.id.addr() {
				p.selectedRole = RoleBackup
			}
		default:
			p.selectedRole, p.updtInfo = RoleDesignated, true
		}
	}
	for _, p := range b.ports {
		if p.reselect {
			return
		}
	}
	for _, p := range b.ports {
		p.selected = true
	}
}

func (b *Bridge) setSyncTree() {
	for _, p := range b.ports {
		p.sync = true
	}
}

func (b *Bridge) setReRootTree() {
	for _, p := range b.ports {
		p.reRoot = true
	}
}

// Port Role Transitions (17.29).
func (p *Port) stepPRT() bool {
	if !p.selected || p.updtInfo {
		return false
	}
	if p.role != p.selectedRole {
		switch p.selectedRole {
		case RoleDisabled:
			p.prt, p.role = prtDisabled, RoleDisabled
			p.learn, p.forward = false, false
		case RoleRoot:
			p.prt, p.role = prtRoot, RoleRoot
			p.rrWhile = p.fwdDelay()
		case RoleDesignated:
			p.prt, p.role = prtDesignated, RoleDesignated
		default:
			// BLOCK_PORT.
			p.prt, p.role = prtAlternate, p.selectedRole
			p.learn, p.forward = false, false
		}
		return true
	}
	switch p.prt {
	case prtDisabled:
		if !p.learning && !p.forwarding && (p.fdWhile != p.maxAge() || p.sync || p.reRoot || !p.synced) {
			// DISABLED_PORT.
			p.fdWhile, p.synced, p.rrWhile = p.maxAge(), true, 0
			p.sync, p.reRoot = false, false
			return true
		}
	case prtRoot:
		return p.stepRoot()
	case prtDesignated:
		return p.stepDesignated()
	case prtAlternate:
		return p.stepAlternate()
	}
	return false
}

func (p *Port) stepRoot() bool {
	switch {
	case p.proposed && !p.agree:
		// ROOT_PROPOSED.
		p.b.setSyncTree()
		p.proposed = false
	case (p.allSynced() && !p.agree) || (p.proposed && p.agree):
		// ROOT_AGREED.
		p.proposed, p.sync = false, false
		p.agree, p.newInfo = true, true
	case !p.forward && !p.reRoot:
		// REROOT.
		p.b.setReRootTree()
	case (p.fdWhile == 0 || (p.reRooted() && p.rbWhile == 0 && p.b.rstpVersion())) && p.learn && !p.forward:
		// ROOT_FORWARD.
		p.fdWhile, p.forward = 0, true
	case (p.fdWhile == 0 || (p.reRooted() && p.rbWhile == 0 && p.b.rstpVersion())) && !p.learn:
		// ROOT_LEARN.
		p.fdWhile, p.learn = p.forwardDelay(), true
	case p.reRoot && p.forward:
		// REROOTED.
		p.reRoot = false
	case p.rrWhile != p.fwdDelay():
		// ROOT_PORT again.
		p.rrWhile = p.fwdDelay()
	default:
		return false
	}
	return true
}

func (p *Port) stepDesignated() bool {
	switch {
	case !p.forward && !p.agreed && !p.proposing && !p.operEdge:
		// DESIGNATED_PROPOSE.
		p.proposing = true
		p.edgeDelayWhile = p.edgeDelay()
		p.newInfo = true
	case (!p.learning && !p.forwarding && !p.synced) || (p.agreed && !p.synced) || (p.operEdge && !p.synced) || (p.sync && p.synced):
		// DESIGNATED_SYNCED.
		p.rrWhile, p.synced, p.sync = 0, true, false
	case p.rrWhile == 0 && p.reRoot:
		// DESIGNATED_RETIRED.
		p.reRoot = false
	case ((p.sync && !p.synced) || (p.reRoot && p.rrWhile != 0) || p.disputed) && !p.operEdge && (p.learn || p.forward):
		// DESIGNATED_DISCARD.
		p.learn, p.forward, p.disputed = false, false, false
		p.fdWhile = p.forwardDelay()
	case (p.fdWhile == 0 || p.agreed || p.operEdge) && (p.rrWhile == 0 || !p.reRoot) && !p.sync && !p.learn:
		// DESIGNATED_LEARN.
		p.learn = true
		p.fdWhile = p.forwardDelay()
	case (p.fdWhile == 0 || p.agreed || p.operEdge) && (p.rrWhile == 0 || !p.reRoot) && !p.sync && p.learn && !p.forward:
		// DESIGNATED_FORWARD.
		p.forward, p.fdWhile = true, 0
		p.agreed = p.sendRSTP
	default:
		return false
	}
	return true
}

func (p *Port) stepAlternate() bool {
	switch {
	case p.learning || p.forwarding:
		// BLOCK_PORT waits for the port to stop.
		return false
	case p.proposed && !p.agree:
		// ALTERNATE_PROPOSED.
		p.b.setSyncTree()
		p.proposed = false
	case (p.allSynced() && !p.agree) || (p.proposed && p.agree):
		// ALTERNATE_AGREED.
		p.proposed = false
		p.agree, p.newInfo = true, true
	case p.rbWhile != 2*p.helloTime() && p.role == RoleBackup:
		// BACKUP_PORT.
		p.rbWhile = 2 * p.helloTime()
	case p.fdWhile != p.forwardDelay() || p.sync || p.reRoot || !p.synced:
		// ALTERNATE_PORT.
		p.fdWhile, p.synced, p.rrWhile = p.forwardDelay(), true, 0
		p.sync, p.reRoot = false, false
	default:
		return false
	}
	return true
}

// Port State Transition (17.30).
func (p *Port) stepPST() bool {
	switch {
	case !p.learn && (p.learning || p.forwarding):
		p.setLearning(false)
		p.setForwarding(false)
	case p.learn && !p.learning:
		p.setLearning(true)
	case p.learning && p.forward && !p.forwarding:
		p.setForwarding(true)
	case !p.forward && p.forwarding:
		p.setLearning(false)
		p.setForwarding(false)
	default:
		return false
	}
	return true
}

func (p *Port) setLearning(on bool) {
	p.learning = on
	p.updateState()
}

func (p *Port) setForwarding(on bool) {
	p.forwarding = on
	p.updateState()
}

// updateState derives the state OVS shows from learning and forwarding,
// and notes a change.
func (p *Port) updateState() {
	s := Discarding
	switch {
	case p.forwarding:
		s = Forwarding
	case p.learning:
		s = Learning
	}
	if s != p.state {
		p.state = s
		p.b.changed = true
	}
}

// Topology Change (17.31).
func (p *Port) stepTCM() bool {
	switch p.tcm {
	case tcmInactive:
		if p.fdbFlush {
			p.flush()
			return true
		}
		if p.learn {
			p.enterTCLearning()
			return true
		}
	case tcmLearning:
		switch {
		case (p.role == RoleRoot || p.role == RoleDesignated) && p.forward && !p.operEdge:
			// DETECTED.
			p.newTcWhile()
			p.setTcPropTree()
			p.newInfo = true
			p.tcm = tcmActive
		case p.role != RoleRoot && p.role != RoleDesignated && !(p.learn || p.learning) && !(p.rcvdTc || p.rcvdTcn || p.rcvdTcAck || p.tcProp):
			// INACTIVE.
			p.tcm = tcmInactive
			p.fdbFlush, p.tcWhile, p.tcAck = true, 0, false
		case p.rcvdTc || p.rcvdTcn || p.rcvdTcAck || p.tcProp:
			p.enterTCLearning()
		default:
			return false
		}
		return true
	case tcmActive:
		switch {
		case (p.role != RoleRoot && p.role != RoleDesignated) || p.operEdge:
			p.enterTCLearning()
		case p.rcvdTcn:
			// NOTIFIED_TCN, then NOTIFIED_TC.
			p.newTcWhile()
			p.notifiedTC()
		case p.rcvdTc:
			p.notifiedTC()
		case p.tcProp && !p.operEdge:
			// PROPAGATING.
			p.newTcWhile()
			p.fdbFlush = true
			p.tcProp = false
			p.flush()
		case p.rcvdTcAck:
			// ACKNOWLEDGED.
			p.tcWhile, p.rcvdTcAck = 0, false
		default:
			return false
		}
		return true
	}
	return false
}

func (p *Port) enterTCLearning() {
	p.tcm = tcmLearning
	p.rcvdTc, p.rcvdTcn, p.rcvdTcAck, p.tcProp = false, false, false, false
}

func (p *Port) notifiedTC() {
	p.rcvdTcn, p.rcvdTc = false, false
	if p.role == RoleDesignated {
		p.tcAck = true
	}
	p.setTcPropTree()
}

// flush is what the filtering database does for fdbFlush: forget what
// the port learned.
func (p *Port) flush() {
	p.fdbFlush = false
	if p.b.flush != nil {
		p.b.flush(p.name)
	}
	p.b.changed = true
}

func (p *Port) newTcWhile() {
	if p.tcWhile != 0 {
		return
	}
	if p.sendRSTP {
		p.tcWhile = p.helloTime() + 1
		p.newInfo = true
	} else {
		p.tcWhile = int(p.b.rootTimes.MaxAge + p.b.rootTimes.ForwardDelay)
	}
}

func (p *Port) setTcPropTree() {
	for _, q := range p.b.ports {
		if q != p {
			q.tcProp = true
		}
	}
}

// Port Transmit (17.26): IDLE's transitions.
func (p *Port) stepPTX() bool {
	if !p.selected || p.updtInfo || !p.enabled {
		return false
	}
	hold := p.txCount >= p.b.cfg.TransmitHoldCount
	switch {
	case p.helloWhen == 0:
		// TRANSMIT_PERIODIC, then IDLE.
		p.newInfo = p.newInfo || p.role == RoleDesignated || (p.role == RoleRoot && p.tcWhile != 0)
		p.helloWhen = p.helloTime()
		if p.helloWhen == 0 {
			p.helloWhen = HelloTime
		}
		return true
	case !p.newInfo || hold:
		return false
	case p.sendRSTP && (p.role == RoleRoot || p.role == RoleDesignated):
		p.transmit(TypeRST)
	case !p.sendRSTP && p.role == RoleDesignated:
		p.transmit(TypeConfig)
	case !p.sendRSTP && p.role == RoleRoot:
		p.transmit(TypeTCN)
	default:
		return false
	}
	return true
}

// transmit is txConfig, txRstp or txTcn (17.21.19-21).
func (p *Port) transmit(typ uint8) {
	p.newInfo = false
	p.txCount++
	m := BPDU{Type: typ, Vector: p.designatedVec, Times: p.designatedTimes}
	switch typ {
	case TypeConfig:
		if p.tcWhile != 0 {
			m.Flags |= FlagTC
		}
		if p.tcAck {
			m.Flags |= FlagTCAck
		}
		p.tcAck = false
	case TypeRST:
		m.Version = 2
		var r uint8
		switch p.role {
		case RoleRoot:
			r = bpduRoleRoot
		case RoleDesignated:
			r = bpduRoleDesignated
		case RoleAlternate, RoleBackup:
			r = bpduRoleAltBackup
		}
		m.Flags = r << roleShift
		if p.tcWhile != 0 {
			m.Flags |= FlagTC
		}
		if p.proposing {
			m.Flags |= FlagProposal
		}
		if p.learning {
			m.Flags |= FlagLearning
		}
		if p.forwarding {
			m.Flags |= FlagForward
		}
		if p.agree {
			m.Flags |= FlagAgree
		}
		p.tcAck = false
	}
	p.tx++
	if p.b.send != nil {
		p.b.send(p.name, m.Encode())
	}
}
