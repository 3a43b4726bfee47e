package bridge

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/govs/govs/netdev"
	"github.com/govs/govs/vswitchd/ofproto"
	"github.com/govs/govs/vswitchd/ofproto/connmgr"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// ServeOpenFlow makes every bridge, from the next Apply on, serve OpenFlow
// on <rundir>/<bridge>.mgmt and connect to its controllers as OVS does,
// logging to log and controller connection states to rconnLog.
func (s *Switch) ServeOpenFlow(rundir string, log, rconnLog connmgr.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ofRundir, s.ofLog, s.ofRconn = rundir, log, rconnLog
}

// OpenFlowChanged receives a value (coalesced) when a controller
// connection's state or role changed: Report then has news for the
// Controller rows.
func (s *Switch) OpenFlowChanged() <-chan struct{} { return s.ofChanged }

func (s *Switch) pokeOpenFlow() {
	select {
	case s.ofChanged <- struct{}{}:
	default:
	}
}

// applyOpenFlow gives each bridge's connection manager its controllers,
// allowed versions and fail mode from the last snapshot, and reports
// port changes to the connections. It runs without mu: stopping a
// controller connection waits for it, and it may be waiting for mu.
func (s *Switch) applyOpenFlow() {
	type job struct {
		m    *connmgr.Manager
		spec *BridgeSpec
	}
	var jobs []job
	s.mu.Lock()
	if s.last != nil {
		for i := range s.last.Bridges {
			spec := &s.last.Bridges[i]
			if rb := s.bridges[spec.Name]; rb != nil && rb.mgmt != nil {
				jobs = append(jobs, job{rb.mgmt, spec})
			}
		}
	}
	s.mu.Unlock()
	for _, j := range jobs {
		j.m.SetVersions(j.spec.Protocols)
		j.m.SetFailMode(!j.spec.FailSecure)
		cs := make([]connmgr.Controller, len(j.spec.Controllers))
		for i, c := range j.spec.Controllers {
			cs[i] = c.Controller
		}
		j.m.SetControllers(cs)
		j.m.SyncPorts()
	}
}

// SyncOpenFlowPorts sends OFPT_PORT_STATUS to every bridge's connections
// for the ports added, deleted or changed (link state, admin state,
// address, speed) since the last call, and notes (and logs, as OVS) a
// bridge entering or leaving fail-open.
func (s *Switch) SyncOpenFlowPorts() {
	type job struct {
		m  *connmgr.Manager
		of OFBridge
	}
	var jobs []job
	s.mu.Lock()
	for _, name := range s.bridgeNames() {
		if rb := s.bridges[name]; rb.mgmt != nil {
			jobs = append(jobs, job{rb.mgmt, rb.of})
		}
	}
	s.mu.Unlock()
	for _, j := range jobs {
		j.m.SyncPorts()
		open := j.m.FailOpen()
		if j.of != nil {
			j.of.SetFailOpen(open)
			if g, ok := j.of.(ofGroups); ok {
				g.SetLivePorts(j.m.LivePorts())
			}
		}
	}
}

// managers returns the bridges' connection managers.
func (s *Switch) managers() []*connmgr.Manager {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ms []*connmgr.Manager
	for _, name := range s.bridgeNames() {
		if m := s.bridges[name].mgmt; m != nil {
			ms = append(ms, m)
		}
	}
	return ms
}

// OpenFlowMode reports, for the translation of bridge's packets, whether
// it has primary controllers and whether OVS's fail-open would be active
// now (standalone, and no controller connected for three inactivity
// probe intervals), in which case it forwards as NORMAL.
func (s *Switch) OpenFlowMode(bridge string) (hasControllers, failOpen bool) {
	s.mu.Lock()
	rb := s.bridges[bridge]
	var m *connmgr.Manager
	if rb != nil {
		m = rb.mgmt
	}
	s.mu.Unlock()
	if m == nil {
		return false, false
	}
	return m.HasPrimaryControllers(), m.FailOpen()
}

// startOpenFlow opens rb's management socket. Caller holds mu.
func (s *Switch) startOpenFlow(rb *runBridge) {
	if s.ofRundir == "" {
		return
	}
	path := filepath.Join(s.ofRundir, rb.name+".mgmt")
	m, err := connmgr.Listen(rb.name, path, ofSource{s, rb.name}, s.ofLog)
	if err != nil {
		s.log.Errorf("bridge %s: could not listen on %s: %v", rb.name, path, err)
		return
	}
	if s.ofRconn != nil {
		m.SetRconnLogger(s.ofRconn)
	}
	m.SetNotify(s.pokeOpenFlow)
	snoop := filepath.Join(s.ofRundir, rb.name+".snoop")
	if err := m.ListenSnoop(snoop); err != nil {
		s.log.Errorf("bridge %s: could not listen on %s: %v", rb.name, snoop, err)
	}
	rb.mgmt = m
	rb.of.SetAsync(m)
}

// stopOpenFlow closes rb's management socket and connections. Caller
// holds mu, so it does not wait for the connections' goroutines (they may
// be waiting for mu); they end without it.
// BridgeReconnect is `ovs-appctl bridge/reconnect [bridge]`: the
// bridge's (or every bridge's) controller connections drop and connect
// again.
func (s *Switch) BridgeReconnect(args []string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rbs []*runBridge
	if len(args) == 1 {
		rb, ok := s.bridges[args[0]]
		if !ok {
			return "", errors.New("Unknown bridge")
		}
		rbs = append(rbs, rb)
	} else {
		for _, rb := range s.bridges {
			rbs = append(rbs, rb)
		}
	}
	for _, rb := range rbs {
		if rb.mgmt != nil {
			rb.mgmt.Reconnect()
		}
	}
	return "", nil
}

func (s *Switch) stopOpenFlow(rb *runBridge) {
	if rb != nil && rb.mgmt != nil {
		rb.of.SetAsync(nil)
		rb.mgmt.Close()
		rb.mgmt = nil
	}
}

// StopOpenFlow closes every bridge's management socket and connections,
// for the daemon's exit: OVS removes its sockets whether or not it
// removes its bridges.
func (s *Switch) StopOpenFlow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rb := range s.bridges {
		s.stopOpenFlow(rb)
	}
	s.ofRundir = ""
}

// ofSource reports one bridge to its OpenFlow connections.
type ofSource struct {
	s    *Switch
	name string
}

// bridge returns the running bridge, nil once it is gone. Caller holds mu.
func (o ofSource) bridge() *runBridge { return o.s.bridges[o.name] }

func (o ofSource) DatapathID() uint64 {
	o.s.mu.Lock()
	defer o.s.mu.Unlock()
	if rb := o.bridge(); rb != nil {
		return rb.dpid
	}
	return 0
}

// ports returns the bridge's running interfaces by OpenFlow number, the
// local port last. Caller holds mu.
func (o ofSource) ports() []*iface {
	var ifcs []*iface
	for _, ifc := range o.s.ifaces {
		if ifc.bridge == o.name && ifc.state == StateAttached && ifc.ofport > 0 {
			ifcs = append(ifcs, ifc)
		}
	}
	slices.SortFunc(ifcs, func(a, b *iface) int { return a.ofport - b.ofport })
	return ifcs
}

func ofPortNo(ifc *iface) uint32 {
	if ifc.local {
		return ofp.PortLocal
	}
	return uint32(ifc.ofport)
}

func (o ofSource) Ports() []ofp.Port {
	o.s.mu.Lock()
	defer o.s.mu.Unlock()
	var ports []ofp.Port
	for _, ifc := range o.ports() {
		p := ofp.Port{No: ofPortNo(ifc), Name: ifc.spec.Name}
		var link *netdev.LinkInfo
		switch ifc.kind() {
		case KindKernel:
			if l, err := o.s.devs.Link(ifc.spec.Name); err == nil {
				link = &l
			} else {
				link = ifc.link
			}
		case KindPatch:
			link = &netdev.LinkInfo{AdminUp: true, OperUp: true}
		case KindVhost:
			link = &netdev.LinkInfo{AdminUp: true, OperUp: ifc.vhostUp}
		}
		if link == nil {
			link = &netdev.LinkInfo{}
		}
		copy(p.HWAddr[:], link.MAC)
		p.Config = ifc.ofConfig
		if !link.AdminUp {
			p.Config |= ofp.PortConfigDown
		}
		if link.OperUp {
			p.State |= ofp.PortStateLive
		} else {
			p.State |= ofp.PortStateDown
		}
		if _, dummy := ifc.driver().(dummyPort); !dummy {
			// A dummy has no features (netdev-dummy's get_features).
			p.Curr, p.CurrSpeed = portFeatures(link)
		}
		ports = append(ports, p)
	}
	return ports
}

// portFeatures returns OpenFlow's current features and speed (kbit/s) for
// a link, as OVS reports them for its netdev ports: a known speed as its
// feature bit, an unknown one (tap devices) as 10 Gbit/s full duplex, and
// always copper.
func portFeatures(l *netdev.LinkInfo) (features, kbps uint32) {
	half := l.Duplex == "half"
	pick := func(hd, fd uint32) uint32 {
		if half {
			return hd
		}
		return fd
	}
	switch l.Speed {
	case 10:
		features = pick(ofp.Feature10MBHD, ofp.Feature10MBFD)
	case 100:
		features = pick(ofp.Feature100MBHD, ofp.Feature100MBFD)
	case 1000:
		features = pick(ofp.Feature1GBHD, ofp.Feature1GBFD)
	case 0, 10000:
		features = ofp.Feature10GBFD
	case 40000:
		features = ofp.Feature40GBFD
	case 100000:
		features = ofp.Feature100GBFD
	case 1000000:
		features = ofp.Feature1TBFD
	default:
		features = ofp.FeatureOther
	}
	speed := l.Speed
	if speed == 0 {
		speed = 10000
	}
	return features | ofp.FeatureCopper, speed * 1000
}

func (o ofSource) PortStats() []ofp.PortStats {
	o.s.mu.Lock()
	defer o.s.mu.Unlock()
	now := time.Now()
	var stats []ofp.PortStats
	for _, ifc := range o.ports() {
		// Counters govs does not keep are reported unknown, as are all
		// of a patch port's.
		st := ofp.PortStats{No: ofPortNo(ifc), Duration: now.Sub(ifc.attachedAt).Truncate(time.Millisecond),
			RxFrameErr: ofp.Unknown, RxOverErr: ofp.Unknown, RxCRCErr: ofp.Unknown, Collision: ofp.Unknown}
		if ifc.dev == nil {
			st.RxPackets, st.TxPackets, st.RxBytes, st.TxBytes = ofp.Unknown, ofp.Unknown, ofp.Unknown, ofp.Unknown
			st.RxDropped, st.TxDropped, st.RxErrors, st.TxErrors = ofp.Unknown, ofp.Unknown, ofp.Unknown, ofp.Unknown
		} else {
			c := ifc.dev.Stats()
			st.RxPackets, st.TxPackets, st.RxBytes, st.TxBytes = c.RxPackets, c.TxPackets, c.RxBytes, c.TxBytes
			st.RxDropped, st.TxDropped, st.RxErrors, st.TxErrors = c.RxDropped, c.TxDropped, c.RxErrors, c.TxErrors
			if _, dummy := ifc.dev.(*netdev.DummyPort); dummy {
				// netdev-dummy's get_stats passes packets and bytes only.
				st.RxDropped, st.TxDropped, st.RxErrors, st.TxErrors = ofp.Unknown, ofp.Unknown, ofp.Unknown, ofp.Unknown
			}
		}
		stats = append(stats, st)
	}
	return stats
}

var (
	_ connmgr.QueueSource     = ofSource{}
	_ connmgr.FragHandler     = ofSource{}
	_ connmgr.FragHandler     = (*ofproto.Bridge)(nil)
	_ connmgr.TableConfigurer = ofSource{}
	_ connmgr.TableConfigurer = (*ofproto.Bridge)(nil)
)

// Queues reports OpenFlow port no's QoS queues (every port's for
// ofp.PortAny) with their counters, as netdev-dpdk's dump_queue_stats: a
// trtcm-policer's, by id; other QoS types have none. The duration is
// since the QoS was set. False if the bridge has no port no.
func (o ofSource) Queues(no uint32) ([]ofp.QueueStats, bool) {
	o.s.mu.Lock()
	defer o.s.mu.Unlock()
	ed, _ := o.s.dp.(EgressPolicingDatapath)
	var qs []ofp.QueueStats
	found := no == ofp.PortAny
	for _, ifc := range o.ports() {
		if no != ofp.PortAny && ofPortNo(ifc) != no {
			continue
		}
		found = true
		if ifc.qos.Type != QoSTrTCMPolicer {
			continue
		}
		for _, q := range ifc.qos.Queues {
			st := ofp.QueueStats{Port: ofPortNo(ifc), Queue: q.ID, Duration: time.Since(ifc.qosAt)}
			if ed != nil {
				c, _ := ed.TrTCMQueueStats(ifc.dpPort, q.ID)
				st.TxBytes, st.TxPackets, st.TxErrors = c.TxBytes, c.TxPackets, c.TxErrors
			}
			qs = append(qs, st)
		}
	}
	return qs, found
}

// of returns the bridge's OpenFlow switch, nil once it is gone.
func (o ofSource) of() OFBridge {
	o.s.mu.Lock()
	defer o.s.mu.Unlock()
	if rb := o.bridge(); rb != nil {
		return rb.of
	}
	return nil
}

// Flows reports the flows of every table.
func (o ofSource) Flows() []ofp.FlowStats {
	if of := o.of(); of != nil {
		return of.Flows()
	}
	return nil
}

// EachFlow calls fn with the flows of every table, one at a time.
func (o ofSource) EachFlow(fn func(f *ofp.FlowStats)) {
	if of := o.of(); of != nil {
		of.EachFlow(fn)
	}
}

// TableCounts reports table id's lookup and matched packet counts.
func (o ofSource) TableCounts(id uint8) (lookups, matched uint64) {
	if tc, ok := o.of().(interface {
		TableCounts(uint8) (uint64, uint64)
	}); ok {
		return tc.TableCounts(id)
	}
	return 0, 0
}

// SetPacketInOnMiss turns the bridge's miss rule on or off.
func (o ofSource) SetPacketInOnMiss(on bool) {
	if ms, ok := o.of().(interface{ SetPacketInOnMiss(bool) }); ok {
		ms.SetPacketInOnMiss(on)
	}
}

// FragHandling reports the bridge's fragment handling mode.
func (o ofSource) FragHandling() uint8 {
	if fh, ok := o.of().(connmgr.FragHandler); ok {
		return fh.FragHandling()
	}
	return ofp.FragNormal
}

// SetFragHandling sets the bridge's fragment handling mode.
func (o ofSource) SetFragHandling(mode uint8) {
	if fh, ok := o.of().(connmgr.FragHandler); ok {
		fh.SetFragHandling(mode)
	}
}

// TableMod applies OFPT_TABLE_MOD to the bridge's tables.
func (o ofSource) TableMod(m *ofp.TableMod) *ofp.Error {
	tc, ok := o.of().(connmgr.TableConfigurer)
	if !ok {
		return &ofp.Error{Errno: ofp.EPerm, Detail: "bridge is gone"}
	}
	return tc.TableMod(m)
}

// TableDescs reports the bridge's tables' settings.
func (o ofSource) TableDescs() []ofp.TableDesc {
	if tc, ok := o.of().(connmgr.TableConfigurer); ok {
		return tc.TableDescs()
	}
	return nil
}

// TableMiss reports table id's miss behaviour.
func (o ofSource) TableMiss(id uint8) uint8 {
	if tc, ok := o.of().(connmgr.TableConfigurer); ok {
		return tc.TableMiss(id)
	}
	return ofp.TableMissDefault
}

// FlowMod changes the bridge's flow tables.
func (o ofSource) FlowMod(fm *ofp.FlowMod) *ofp.Error {
	of := o.of()
	if of == nil {
		return &ofp.Error{Errno: ofp.EPerm, Detail: "bridge is gone"}
	}
	return of.FlowMod(fm)
}

// PacketOut executes an OFPT_PACKET_OUT on the bridge.
func (o ofSource) PacketOut(po *ofp.PacketOut) *ofp.Error {
	of := o.of()
	if of == nil {
		return &ofp.Error{Errno: ofp.EPerm, Detail: "bridge is gone"}
	}
	return of.PacketOut(po)
}

// Resume executes an NXT_RESUME on the bridge.
func (o ofSource) Resume(r *ofp.Resume) *ofp.Error {
	of := o.of()
	if of == nil {
		return &ofp.Error{Errno: ofp.EPerm, Detail: "bridge is gone"}
	}
	return of.Resume(r)
}

// Barrier waits for earlier flow changes to be in effect.
func (o ofSource) Barrier() {
	if of := o.of(); of != nil {
		of.Barrier()
	}
}

// ModifyPort applies OFPT_PORT_MOD as OVS's handle_port_mod: the port
// must exist and the request carry its current address; OFPPC_PORT_DOWN
// sets the device's administrative state, the other bits are the port's
// OpenFlow configuration, which the NORMAL pipeline honours (NO_RECV,
// NO_FWD, NO_FLOOD) or which has nothing to act on in govs yet
// (NO_PACKET_IN: no packet-ins; NO_STP, NO_RECV_STP: no STP) and is only
// reported, as OVS's is on a bridge without STP.
func (o ofSource) ModifyPort(m *ofp.PortMod) *ofp.Error {
	var toggle bool
	var name string
	var up bool
	err := func() *ofp.Error {
		o.s.mu.Lock()
		defer o.s.mu.Unlock()
		var ifc *iface
		for _, i := range o.ports() {
			if ofPortNo(i) == m.Port {
				ifc = i
			}
		}
		if ifc == nil {
			return &ofp.Error{Errno: ofp.PortModBadPort, Name: "OFPT_PORT_MOD", Detail: fmt.Sprintf("port %d", m.Port)}
		}
		var link netdev.LinkInfo
		if ifc.kind() == KindKernel {
			l, err := o.s.devs.Link(ifc.spec.Name)
			if err != nil {
				return &ofp.Error{Errno: ofp.PortModBadPort, Name: "OFPT_PORT_MOD", Detail: err.Error()}
			}
			link = l
		}
		var hw [6]byte
		copy(hw[:], link.MAC)
		if hw != m.HWAddr {
			return &ofp.Error{Errno: ofp.PortModBadHWAddr, Name: "OFPT_PORT_MOD", Detail: fmt.Sprintf("%s has %s", ifc.spec.Name, net.HardwareAddr(hw[:]))}
		}
		if m.Mask&ofp.PortConfigDown != 0 {
			if ifc.kind() != KindKernel {
				return &ofp.Error{Errno: ofp.PortModBadConfig, Name: "OFPT_PORT_MOD", Detail: fmt.Sprintf("%s has no administrative state", ifc.spec.Name)}
			}
			up = m.Config&ofp.PortConfigDown == 0
			toggle, name = up != link.AdminUp, ifc.spec.Name
		}
		mask := m.Mask &^ ofp.PortConfigDown
		cfg := ifc.ofConfig&^mask | m.Config&mask
		if cfg != ifc.ofConfig {
			ifc.ofConfig = cfg
			o.s.pushConfigs()
		}
		return nil
	}()
	if err != nil || !toggle {
		return err
	}
	as, ok := o.s.devs.(interface{ SetAdminUp(string, bool) error })
	if !ok {
		return &ofp.Error{Errno: ofp.PortModBadConfig, Name: "OFPT_PORT_MOD", Detail: "administrative state not settable"}
	}
	if err := as.SetAdminUp(name, up); err != nil {
		return &ofp.Error{Errno: ofp.PortModBadConfig, Name: "OFPT_PORT_MOD", Detail: err.Error()}
	}
	return nil
}

// OFProtoList is ovs-appctl ofproto/list: the bridges, one a line.
func (s *Switch) OFProtoList() string {
	var b strings.Builder
	for _, m := range s.managers() {
		fmt.Fprintln(&b, m.Bridge())
	}
	return b.String()
}

// BridgeDumpFlows is ovs-appctl bridge/dump-flows: every flow of the
// bridge, hidden ones included, in OVS's format. govs has none of OVS's
// hidden flows (in-band control, its internal table 254), so these are the
// flows of the OpenFlow tables.
func (s *Switch) BridgeDumpFlows(bridge string) (string, error) {
	s.mu.Lock()
	_, ok := s.bridges[bridge]
	s.mu.Unlock()
	if !ok {
		return "", errors.New("Unknown bridge")
	}
	var b strings.Builder
	(ofSource{s, bridge}).EachFlow(func(f *ofp.FlowStats) {
		b.WriteString(ofproto.FormatFlowBrief(f))
		b.WriteByte('\n')
	})
	return b.String(), nil
}
