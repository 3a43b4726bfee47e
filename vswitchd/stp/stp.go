package stp

import (
	"fmt"
	"net"
	"strings"
)

// ID is a bridge identifier: priority in the top 16 bits, the system ID
// (a MAC address) in the low 48.
type ID uint64

// NewID returns the identifier of priority and MAC mac.
func NewID(priority uint16, mac [6]byte) ID {
	id := ID(priority) << 48
	for i, b := range mac {
		id |= ID(b) << (8 * (5 - i))
	}
	return id
}

// Priority returns id's priority.
func (id ID) Priority() uint16 { return uint16(id >> 48) }

// MAC returns id's system ID.
func (id ID) MAC() net.HardwareAddr {
	m := make(net.HardwareAddr, 6)
	for i := range m {
		m[i] = byte(id >> (8 * (5 - i)))
	}
	return m
}

// String is the form Bridge.status shows (stp_bridge_id): "8000.0200000000aa".
func (id ID) String() string { return fmt.Sprintf("%04x.%012x", uint16(id>>48), uint64(id)&(1<<48-1)) }

// State is a port's state (OVS's enum stp_state: one bit each).
type State uint8

const (
	Disabled State = 1 << iota
	Listening
	Learning
	Forwarding
	Blocking
)

func (s State) String() string {
	switch s {
	case Disabled:
		return "disabled"
	case Listening:
		return "listening"
	case Learning:
		return "learning"
	case Forwarding:
		return "forwarding"
	case Blocking:
		return "blocking"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Learns reports whether a port in state s learns the source of what it
// receives (stp_learn_in_state): a disabled port runs as if without STP.
func (s State) Learns() bool { return s&(Disabled|Learning|Forwarding) != 0 }

// Forwards reports whether a port in state s forwards
// (stp_forward_in_state).
func (s State) Forwards() bool { return s&(Disabled|Forwarding) != 0 }

// Role is a port's role (OVS's enum stp_role).
type Role uint8

const (
	RoleRoot Role = iota
	RoleDesignated
	RoleAlternate
	RoleDisabled
)

func (r Role) String() string {
	switch r {
	case RoleRoot:
		return "root"
	case RoleDesignated:
		return "designated"
	case RoleAlternate:
		return "alternate"
	}
	return "disabled"
}

// Defaults and limits (OVS's stp.h and bridge.c).
const (
	DefaultBridgePriority = 32768
	DefaultPortPriority   = 128
	DefaultHelloTime      = 2000  // ms
	DefaultMaxAge         = 20000 // ms
	DefaultForwardDelay   = 15000 // ms
	// MaxPorts is the number of ports one bridge's STP has (port
	// numbers 1..255 in a port ID's low byte).
	MaxPorts = 255
	// DefaultPathCost is the cost of a port whose speed is unknown
	// (100 Mbit/s).
	DefaultPathCost = 19
	// messageAgeIncrement is what a bridge adds to the age of the root's
	// information it relays, in ticks (OVS's MESSAGE_AGE_INCREMENT).
	messageAgeIncrement = 1
)

// SpeedCost is the path cost of a link of mbps Mbit/s (stp_convert_speed).
func SpeedCost(mbps uint32) uint16 {
	switch {
	case mbps >= 10000:
		return 2
	case mbps >= 1000:
		return 4
	case mbps >= 100:
		return 19
	case mbps >= 16:
		return 62
	case mbps >= 10:
		return 100
	case mbps >= 4:
		return 250
	}
	return DefaultPathCost
}

// timer counts up in ticks of 1/256 s.
type timer struct {
	active bool
	value  int
}

func (t *timer) start(v int) { t.value, t.active = v, true }
func (t *timer) stop()       { t.active = false }

// expired advances t by elapsed and reports whether it reached timeout,
// stopping it then.
func (t *timer) expired(elapsed, timeout int) bool {
	if !t.active {
		return false
	}
	t.value += elapsed
	if t.value >= timeout {
		t.active = false
		return true
	}
	return false
}

func msToTicks(ms int) int { return ms * 256 / 1000 }
func ticksToMs(t int) int  { return t * 1000 / 256 }

// Port is one port of a bridge's STP (802.1D 8.5.5).
type Port struct {
	stp  *STP
	no   int // index in STP.ports
	name string

	id               uint16
	state            State
	pathCost         int
	designatedRoot   ID
	designatedCost   int
	designatedBridge ID
	designatedPort   int
	tcAck            bool
	configPending    bool
	changeDetection  bool

	messageAge, forwardDelay, hold timer

	changed                     bool
	txCount, rxCount, errsCount int
}

// STP is one bridge's spanning tree (802.1D 8.5.3). Not safe for
// concurrent use.
type STP struct {
	name string

	bridgeID           ID
	maxAge             int // ticks, as the root says
	helloTime          int
	forwardDelay       int
	bridgeMaxAge       int // ticks, ours when root
	bridgeHelloTime    int
	bridgeForwardDelay int
	rqMaxAge           int // ms, as configured
	rqHelloTime        int
	rqForwardDelay     int
	elapsedRemainder   int // thousandths of a tick not yet counted

	designatedRoot         ID
	rootPathCost           int
	rootPort               *Port
	topologyChangeDetected bool
	topologyChange         bool
	fdbFlush               bool

	helloTimer, tcnTimer, topologyChangeTimer timer

	ports [MaxPorts]Port

	send func(p *Port, bpdu []byte)
	log  Logger
}

// Logger is what the STP logs to: topology changes at INFO, odd BPDUs
// at WARN, as OVS's stp module.
type Logger interface {
	Infof(format string, args ...any)
	Warnf(format string, args ...any)
}

// New returns the STP of bridge name with identifier id (priority 0
// means the default) and no port enabled. send is called with each BPDU
// to send (Encode's bytes) and the port it leaves on. Either of send and
// log may be nil.
func New(name string, id ID, send func(portNo int, bpdu []byte), log Logger) *STP {
	if id>>48 == 0 {
		id |= DefaultBridgePriority << 48
	}
	s := &STP{name: name, bridgeID: id, log: log,
		rqMaxAge: DefaultMaxAge, rqHelloTime: DefaultHelloTime, rqForwardDelay: DefaultForwardDelay}
	if send != nil {
		s.send = func(p *Port, b []byte) { send(p.no, b) }
	}
	s.updateBridgeTimers()
	s.maxAge, s.helloTime, s.forwardDelay = s.bridgeMaxAge, s.bridgeHelloTime, s.bridgeForwardDelay
	s.designatedRoot = id
	s.helloTimer.start(0)
	for i := range s.ports {
		p := &s.ports[i]
		p.stp, p.no = s, i
		p.id = uint16(i+1) | DefaultPortPriority<<8
		p.pathCost = DefaultPathCost
		p.state = Disabled
		p.initialize(Disabled)
	}
	return s
}

// Name returns the bridge's name.
func (s *STP) Name() string { return s.name }

// BridgeID returns the bridge's identifier.
func (s *STP) BridgeID() ID { return s.bridgeID }

// DesignatedRoot returns the identifier of the bridge believed root.
func (s *STP) DesignatedRoot() ID { return s.designatedRoot }

// RootPathCost returns the cost of the path to the root.
func (s *STP) RootPathCost() int { return s.rootPathCost }

// IsRoot reports whether the bridge believes itself the root.
func (s *STP) IsRoot() bool { return s.bridgeID == s.designatedRoot }

// Port returns port number no (0..MaxPorts-1; the port ID's number is no+1).
func (s *STP) Port(no int) *Port { return &s.ports[no] }

func (s *STP) enabled(f func(p *Port)) {
	for i := range s.ports {
		if s.ports[i].state != Disabled {
			f(&s.ports[i])
		}
	}
}

// Tick runs the timers given that ms milliseconds passed (stp_tick).
func (s *STP) Tick(ms int) {
	total := min(max(ms, 0), 1<<20)*256 + s.elapsedRemainder
	elapsed := total / 1000
	s.elapsedRemainder = total % 1000
	if elapsed == 0 {
		return
	}
	if s.helloTimer.expired(elapsed, s.helloTime) {
		s.configBPDUGeneration()
		s.helloTimer.start(0)
	}
	if s.tcnTimer.expired(elapsed, s.bridgeHelloTime) {
		s.transmitTCN()
		s.tcnTimer.start(0)
	}
	if s.topologyChangeTimer.expired(elapsed, s.maxAge+s.forwardDelay) {
		s.topologyChangeDetected = false
		s.topologyChange = false
	}
	s.enabled(func(p *Port) {
		if p.messageAge.expired(elapsed, s.maxAge) {
			s.messageAgeExpiry(p)
		}
	})
	s.enabled(func(p *Port) {
		if p.forwardDelay.expired(elapsed, s.forwardDelay) {
			s.forwardDelayExpiry(p)
		}
		if p.hold.expired(elapsed, msToTicks(1000)) && p.configPending {
			p.transmitConfig()
		}
	})
}

func (s *STP) setBridgeID(id ID) {
	if id == s.bridgeID {
		return
	}
	root := s.IsRoot()
	s.enabled(func(p *Port) {
		if p.isDesignated() {
			p.designatedBridge = id
		}
	})
	s.bridgeID = id
	s.configurationUpdate()
	s.portStateSelection()
	if s.IsRoot() && !root {
		s.becomeRoot()
	}
}

// SetSystemID sets the MAC part of the bridge identifier.
func (s *STP) SetSystemID(mac [6]byte) {
	s.setBridgeID(s.bridgeID&^(1<<48-1) | NewID(0, mac))
}

// SetPriority sets the priority part of the bridge identifier.
func (s *STP) SetPriority(pri uint16) {
	s.setBridgeID(s.bridgeID&(1<<48-1) | ID(pri)<<48)
}

// SetTimes sets the hello time, max age and forward delay the bridge
// uses as root, in ms; they are clamped as stp_update_bridge_timers does:
// hello 1..10 s, max age 6..40 s and at least 2*(hello+1 s), forward
// delay up to 30 s and at least max age/2+1 s.
func (s *STP) SetTimes(hello, maxAge, fwdDelay int) {
	s.rqHelloTime, s.rqMaxAge, s.rqForwardDelay = hello, maxAge, fwdDelay
	s.updateBridgeTimers()
}

func (s *STP) updateBridgeTimers() {
	ht := min(max(s.rqHelloTime, 1000), 10000)
	ma := min(max(s.rqMaxAge, max(2*(ht+1000), 6000)), 40000)
	fd := min(max(s.rqForwardDelay, ma/2+1000), 30000)
	s.bridgeHelloTime, s.bridgeMaxAge, s.bridgeForwardDelay = msToTicks(ht), msToTicks(ma), msToTicks(fd)
	if s.IsRoot() {
		s.maxAge, s.helloTime, s.forwardDelay = s.bridgeMaxAge, s.bridgeHelloTime, s.bridgeForwardDelay
	}
}

// TopologyChange forces a topology change event (stp/tcn).
func (s *STP) TopologyChange() { s.topologyChangeDetection() }

// TakeFDBFlush reports whether the MAC table must be flushed (a topology
// change), clearing the request.
func (s *STP) TakeFDBFlush() bool {
	f := s.fdbFlush
	s.fdbFlush = false
	return f
}

// TakeChanged returns the numbers of the ports whose state changed since
// the last call.
func (s *STP) TakeChanged() []int {
	var nos []int
	for i := range s.ports {
		if p := &s.ports[i]; p.changed {
			p.changed = false
			nos = append(nos, i)
		}
	}
	return nos
}

// Received hands the STP a BPDU (its bytes after the LLC header) port no
// received (stp_received_bpdu). A port without STP ignores it; an
// invalid BPDU counts as an error and is returned.
func (s *STP) Received(no int, b []byte) error {
	p := &s.ports[no]
	if p.state == Disabled {
		return nil
	}
	bpdu, err := Decode(b)
	if err != nil {
		p.errsCount++
		return err
	}
	switch bpdu.Type {
	case TypeConfig:
		s.receivedConfig(p, &bpdu)
	case TypeTCN:
		if p.isDesignated() {
			s.topologyChangeDetection()
			p.tcAck = true
			p.transmitConfig()
		}
	}
	p.rxCount++
	return nil
}

func (s *STP) receivedConfig(p *Port, c *BPDU) {
	if c.MessageAge >= c.MaxAge {
		if s.log != nil {
			s.log.Warnf("%s: received config BPDU with message age (%d) greater than max age (%d)", s.name, c.MessageAge, c.MaxAge)
		}
		return
	}
	if !p.supersededBy(c) {
		if p.isDesignated() {
			p.transmitConfig()
		}
		return
	}
	root := s.IsRoot()
	p.designatedRoot, p.designatedCost = c.RootID, int(c.RootPathCost)
	p.designatedBridge, p.designatedPort = c.BridgeID, int(c.PortID)
	p.messageAge.start(int(c.MessageAge))
	s.configurationUpdate()
	s.portStateSelection()
	if !s.IsRoot() && root {
		s.helloTimer.stop()
		if s.topologyChangeDetected {
			s.topologyChangeTimer.stop()
			s.transmitTCN()
			s.tcnTimer.start(0)
		}
	}
	if p == s.rootPort {
		s.maxAge, s.helloTime, s.forwardDelay = int(c.MaxAge), int(c.HelloTime), int(c.ForwardDelay)
		tc := c.Flags&FlagTopologyChange != 0
		if tc && !s.topologyChange {
			// The root tells of a topology change: forget what was
			// learned, as 802.1D's short ageing would.
			s.fdbFlush = true
		}
		s.topologyChange = tc
		s.configBPDUGeneration()
		if c.Flags&FlagTopologyChangeAck != 0 {
			s.topologyChangeDetected = false
			s.tcnTimer.stop()
		}
	}
}

func (s *STP) configBPDUGeneration() {
	s.enabled(func(p *Port) {
		if p.isDesignated() {
			p.transmitConfig()
		}
	})
}

func (s *STP) transmitTCN() {
	if p := s.rootPort; p != nil {
		p.sendBPDU(BPDU{Type: TypeTCN}.Encode())
	}
}

func (s *STP) configurationUpdate() {
	s.rootSelection()
	s.designatedPortSelection()
}

// supersedesRoot reports whether p offers a better path to the root
// than the current candidate r.
func supersedesRoot(r, p *Port) bool {
	pCost, rCost := p.designatedCost+p.pathCost, r.designatedCost+r.pathCost
	switch {
	case p.designatedRoot != r.designatedRoot:
		return p.designatedRoot < r.designatedRoot
	case pCost != rCost:
		return pCost < rCost
	case p.designatedBridge != r.designatedBridge:
		return p.designatedBridge < r.designatedBridge
	case p.designatedPort != r.designatedPort:
		return p.designatedPort < r.designatedPort
	}
	return p.id < r.id
}

func (s *STP) rootSelection() {
	var root *Port
	s.enabled(func(p *Port) {
		if p.isDesignated() || p.designatedRoot >= s.bridgeID {
			return
		}
		if root == nil || supersedesRoot(root, p) {
			root = p
		}
	})
	s.rootPort = root
	if root == nil {
		s.designatedRoot, s.rootPathCost = s.bridgeID, 0
	} else {
		s.designatedRoot, s.rootPathCost = root.designatedRoot, root.designatedCost+root.pathCost
	}
}

func (s *STP) designatedPortSelection() {
	s.enabled(func(p *Port) {
		if p.isDesignated() || p.designatedRoot != s.designatedRoot ||
			s.rootPathCost < p.designatedCost ||
			s.rootPathCost == p.designatedCost && (s.bridgeID < p.designatedBridge ||
				s.bridgeID == p.designatedBridge && int(p.id) <= p.designatedPort) {
			p.becomeDesignated()
		}
	})
}

func (s *STP) portStateSelection() {
	s.enabled(func(p *Port) {
		switch {
		case p == s.rootPort:
			p.configPending, p.tcAck = false, false
			p.makeForwarding()
		case p.isDesignated():
			p.messageAge.stop()
			p.makeForwarding()
		default:
			p.configPending, p.tcAck = false, false
			p.makeBlocking()
		}
	})
}

func (s *STP) topologyChangeDetection() {
	if s.IsRoot() {
		s.topologyChange = true
		s.topologyChangeTimer.start(0)
	} else if !s.topologyChangeDetected {
		s.transmitTCN()
		s.tcnTimer.start(0)
	}
	s.fdbFlush = true
	s.topologyChangeDetected = true
	if s.log != nil {
		s.log.Infof("%s: detected topology change.", s.name)
	}
}

func (s *STP) messageAgeExpiry(p *Port) {
	root := s.IsRoot()
	p.becomeDesignated()
	s.configurationUpdate()
	s.portStateSelection()
	if s.IsRoot() && !root {
		s.maxAge, s.helloTime, s.forwardDelay = s.bridgeMaxAge, s.bridgeHelloTime, s.bridgeForwardDelay
		s.topologyChangeDetection()
		s.tcnTimer.stop()
		s.configBPDUGeneration()
		s.helloTimer.start(0)
	}
}

func (s *STP) designatedForSomePort() bool {
	for i := range s.ports {
		if p := &s.ports[i]; p.state != Disabled && p.designatedBridge == s.bridgeID {
			return true
		}
	}
	return false
}

func (s *STP) forwardDelayExpiry(p *Port) {
	switch p.state {
	case Listening:
		p.setState(Learning)
		p.forwardDelay.start(0)
	case Learning:
		p.setState(Forwarding)
		if s.designatedForSomePort() && p.changeDetection {
			s.topologyChangeDetection()
		}
	}
}

func (s *STP) becomeRoot() {
	s.maxAge, s.helloTime, s.forwardDelay = s.bridgeMaxAge, s.bridgeHelloTime, s.bridgeForwardDelay
	s.topologyChangeDetection()
	s.tcnTimer.stop()
	s.configBPDUGeneration()
	s.helloTimer.start(0)
}

// Name returns the port's name (SetName).
func (p *Port) Name() string { return p.name }

// SetName names the port for Show.
func (p *Port) SetName(n string) { p.name = n }

// No returns the port's number (its index).
func (p *Port) No() int { return p.no }

// ID returns the port identifier: priority in the high byte, number+1 in
// the low one.
func (p *Port) ID() uint16 { return p.id }

// State returns the port's state.
func (p *Port) State() State { return p.state }

// PathCost returns the port's path cost.
func (p *Port) PathCost() int { return p.pathCost }

// Counts returns the BPDUs the port sent and received and the invalid
// ones it received.
func (p *Port) Counts() (tx, rx, errs int) { return p.txCount, p.rxCount, p.errsCount }

// Role returns the port's role (stp_port_get_role).
func (p *Port) Role() Role {
	switch {
	case p.stp.rootPort != nil && p.stp.rootPort.id == p.id:
		return RoleRoot
	case p.isDesignated():
		return RoleDesignated
	case p.state == Disabled:
		return RoleDisabled
	}
	return RoleAlternate
}

// Enable starts STP on the port, blocking.
func (p *Port) Enable() {
	if p.state == Disabled {
		p.initialize(Blocking)
		p.stp.portStateSelection()
	}
}

// Disable stops STP on the port.
func (p *Port) Disable() {
	if p.state == Disabled {
		return
	}
	s := p.stp
	root := s.IsRoot()
	p.becomeDesignated()
	p.setState(Disabled)
	p.tcAck, p.configPending = false, false
	p.messageAge.stop()
	p.forwardDelay.stop()
	s.configurationUpdate()
	s.portStateSelection()
	if s.IsRoot() && !root {
		s.becomeRoot()
	}
}

// SetPriority sets the port's priority (the port ID's high byte).
func (p *Port) SetPriority(pri uint8) {
	id := p.id&0xff | uint16(pri)<<8
	if id == p.id {
		return
	}
	s := p.stp
	if p.isDesignated() {
		p.designatedPort = int(id)
	}
	p.id = id
	if s.bridgeID == p.designatedBridge && int(p.id) < p.designatedPort {
		p.becomeDesignated()
		s.portStateSelection()
	}
}

// SetPathCost sets the port's path cost.
func (p *Port) SetPathCost(c uint16) {
	if p.pathCost == int(c) {
		return
	}
	p.pathCost = int(c)
	p.stp.configurationUpdate()
	p.stp.portStateSelection()
}

func (p *Port) initialize(st State) {
	p.becomeDesignated()
	p.setState(st)
	p.tcAck, p.configPending = false, false
	p.changeDetection = true
	p.messageAge.stop()
	p.forwardDelay.stop()
	p.hold.stop()
	p.txCount, p.rxCount, p.errsCount = 0, 0, 0
}

func (p *Port) isDesignated() bool {
	return p.designatedBridge == p.stp.bridgeID && p.designatedPort == int(p.id)
}

func (p *Port) becomeDesignated() {
	s := p.stp
	p.designatedRoot, p.designatedCost = s.designatedRoot, s.rootPathCost
	p.designatedBridge, p.designatedPort = s.bridgeID, int(p.id)
}

// supersededBy reports whether c carries better information than p
// holds (stp_supersedes_port_info).
func (p *Port) supersededBy(c *BPDU) bool {
	switch {
	case c.RootID != p.designatedRoot:
		return c.RootID < p.designatedRoot
	case int(c.RootPathCost) != p.designatedCost:
		return int(c.RootPathCost) < p.designatedCost
	case c.BridgeID != p.designatedBridge:
		return c.BridgeID < p.designatedBridge
	}
	return c.BridgeID != p.stp.bridgeID || int(c.PortID) <= p.designatedPort
}

func (p *Port) makeForwarding() {
	if p.state == Blocking {
		p.setState(Listening)
		p.forwardDelay.start(0)
	}
}

func (p *Port) makeBlocking() {
	if p.state&(Disabled|Blocking) != 0 {
		return
	}
	if p.state&(Forwarding|Learning) != 0 && p.changeDetection {
		p.stp.topologyChangeDetection()
	}
	p.setState(Blocking)
	p.forwardDelay.stop()
}

func (p *Port) setState(st State) {
	if st != p.state {
		p.changed = true
	}
	p.state = st
}

func (p *Port) transmitConfig() {
	s := p.stp
	root := s.IsRoot()
	if !root && s.rootPort == nil {
		return
	}
	if p.hold.active {
		p.configPending = true
		return
	}
	c := BPDU{Type: TypeConfig, RootID: s.designatedRoot, RootPathCost: uint32(s.rootPathCost),
		BridgeID: s.bridgeID, PortID: p.id,
		MaxAge: uint16(s.maxAge), HelloTime: uint16(s.helloTime), ForwardDelay: uint16(s.forwardDelay)}
	if p.tcAck {
		c.Flags |= FlagTopologyChangeAck
	}
	if s.topologyChange {
		c.Flags |= FlagTopologyChange
	}
	if !root {
		c.MessageAge = uint16(s.rootPort.messageAge.value + messageAgeIncrement)
	}
	if int(c.MessageAge) < s.maxAge {
		p.tcAck, p.configPending = false, false
		p.sendBPDU(c.Encode())
		p.hold.start(0)
	}
}

func (p *Port) sendBPDU(b []byte) {
	if p.stp.send != nil {
		p.stp.send(p, b)
	}
	p.txCount++
}

// Show writes the bridge's STP as `ovs-appctl stp/show` prints it
// (stp_print_details).
func (s *STP) Show(w *strings.Builder) {
	fmt.Fprintf(w, "---- %s ----\n", s.name)
	w.WriteString("Root ID:\n")
	showID(w, s.designatedRoot, s.helloTime, s.maxAge, s.forwardDelay)
	if s.IsRoot() {
		w.WriteString("  This bridge is the root\n")
	} else {
		name := ""
		if s.rootPort != nil {
			name = s.rootPort.name
		}
		fmt.Fprintf(w, "  root-port       %s\n  root-path-cost  %d\n", name, s.rootPathCost)
	}
	w.WriteString("\nBridge ID:\n")
	showID(w, s.bridgeID, s.bridgeHelloTime, s.bridgeMaxAge, s.bridgeForwardDelay)
	w.WriteString("\n  Interface  Role       State      Cost  Pri.Nbr \n")
	w.WriteString("  ---------- ---------- ---------- ----- -------\n")
	s.enabled(func(p *Port) {
		fmt.Fprintf(w, "  %-10s %-10s %-10s %-5d %d.%d\n", p.name, p.Role(), p.state, p.pathCost, p.id>>8, p.id&0xff)
	})
	w.WriteString("\n")
}

// showID writes a bridge identifier and times (in ticks) for Show.
func showID(w *strings.Builder, id ID, hello, maxAge, fwdDelay int) {
	fmt.Fprintf(w, "  stp-priority  %d\n  stp-system-id   %s\n", id.Priority(), id.MAC())
	fmt.Fprintf(w, "  stp-hello-time  %ds\n  stp-max-age     %ds\n  stp-fwd-delay   %ds\n",
		ticksToMs(hello)/1000, ticksToMs(maxAge)/1000, ticksToMs(fwdDelay)/1000)
}
