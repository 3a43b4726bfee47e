package rstp

import (
	"fmt"
	"slices"
)

// Defaults and ranges of the bridge's and ports' settings (OVS's
// lib/rstp.h, 802.1D-2004 Table 17-1 and 17-2).
const (
	DefaultPriority          = 32768
	DefaultAgeingTime        = 300
	DefaultForceVersion      = 2 // RSTP; 0 is STP compatibility
	DefaultMaxAge            = 20
	DefaultForwardDelay      = 15
	DefaultTransmitHoldCount = 6
	DefaultPortPriority      = 128
	DefaultPathCost          = 200000 // 100 Mb/s
	// HelloTime is fixed in 802.1D-2004 (17.13.6).
	HelloTime = 2
	// migrateTime is MigrateTime (17.13.9).
	migrateTime = 3

	MinPriority, MaxPriority, PriorityStep = 0, 61440, 4096
	MinAgeingTime, MaxAgeingTime           = 10, 1000000
	MinMaxAge, MaxMaxAge                   = 6, 40
	MinForwardDelay, MaxForwardDelay       = 4, 30
	MinHoldCount, MaxHoldCount             = 1, 10
	MaxPortPriority, PortPriorityStep      = 240, 16
	MinPathCost, MaxPathCost               = 1, 200000000
	MaxPorts                               = 4095
)

// Config is a bridge's RSTP settings (OVS's struct ofproto_rstp_settings).
type Config struct {
	Address           [6]byte
	Priority          int
	AgeingTime        int
	ForceVersion      int
	MaxAge            int
	ForwardDelay      int
	TransmitHoldCount int
}

// DefaultConfig returns the defaults with address addr.
func DefaultConfig(addr [6]byte) Config {
	return Config{Address: addr, Priority: DefaultPriority, AgeingTime: DefaultAgeingTime,
		ForceVersion: DefaultForceVersion, MaxAge: DefaultMaxAge, ForwardDelay: DefaultForwardDelay,
		TransmitHoldCount: DefaultTransmitHoldCount}
}

// Check returns what is wrong with c: each value OVS would not take (it
// then keeps the previous one; here the default), as a sentence.
func (c *Config) Check() []string {
	var bad []string
	def := DefaultConfig(c.Address)
	check := func(v *int, name string, lo, hi int, dflt int) {
		if *v < lo || *v > hi {
			bad = append(bad, fmt.Sprintf("%s %d out of range %d..%d, using %d", name, *v, lo, hi, dflt))
			*v = dflt
		}
	}
	check(&c.Priority, "rstp-priority", MinPriority, MaxPriority, def.Priority)
	c.Priority -= c.Priority % PriorityStep
	check(&c.AgeingTime, "rstp-ageing-time", MinAgeingTime, MaxAgeingTime, def.AgeingTime)
	if c.ForceVersion != 0 && c.ForceVersion != 2 {
		bad = append(bad, fmt.Sprintf("rstp-force-protocol-version %d is neither 0 (STP) nor 2 (RSTP), using 2", c.ForceVersion))
		c.ForceVersion = 2
	}
	check(&c.ForwardDelay, "rstp-forward-delay", MinForwardDelay, MaxForwardDelay, def.ForwardDelay)
	check(&c.MaxAge, "rstp-max-age", MinMaxAge, MaxMaxAge, def.MaxAge)
	// 17.14: 2 * (Forward Delay - 1) >= Max Age >= 2 * Hello Time.
	if c.MaxAge > 2*(c.ForwardDelay-1) || c.MaxAge < 2*HelloTime {
		bad = append(bad, fmt.Sprintf("rstp-max-age %d and rstp-forward-delay %d break 2 * (forward delay - 1) >= max age, using %d and %d",
			c.MaxAge, c.ForwardDelay, def.MaxAge, def.ForwardDelay))
		c.MaxAge, c.ForwardDelay = def.MaxAge, def.ForwardDelay
	}
	check(&c.TransmitHoldCount, "rstp-transmit-hold-count", MinHoldCount, MaxHoldCount, def.TransmitHoldCount)
	return bad
}

// PortConfig is a port's settings (struct ofproto_port_rstp_settings).
type PortConfig struct {
	// Number is rstp-port-num, 0 for the first free one.
	Number int
	// Priority is rstp-port-priority, a multiple of 16 up to 240.
	Priority int
	// PathCost is rstp-path-cost or derived from the link speed.
	PathCost uint32
	// AdminEdge is rstp-port-admin-edge, AutoEdge rstp-port-auto-edge.
	AdminEdge, AutoEdge bool
	// Mcheck is rstp-port-mcheck: force the port to send RST BPDUs
	// again (protocol migration check), taken once when it turns true.
	Mcheck bool
}

// Check is Config.Check for a port.
func (c *PortConfig) Check() []string {
	var bad []string
	if c.Priority < 0 || c.Priority > MaxPortPriority {
		bad = append(bad, fmt.Sprintf("rstp-port-priority %d out of range 0..%d, using %d", c.Priority, MaxPortPriority, DefaultPortPriority))
		c.Priority = DefaultPortPriority
	}
	c.Priority -= c.Priority % PortPriorityStep
	if c.PathCost < MinPathCost || c.PathCost > MaxPathCost {
		bad = append(bad, fmt.Sprintf("rstp-path-cost %d out of range %d..%d, using %d", c.PathCost, MinPathCost, MaxPathCost, DefaultPathCost))
		c.PathCost = DefaultPathCost
	}
	return bad
}

// SpeedToCost is OVS's rstp_convert_speed_to_cost (802.1D-2004 Table
// 17-3): a port's default path cost for its speed in Mb/s.
func SpeedToCost(mbps uint64) uint32 {
	if mbps == 0 {
		return DefaultPathCost
	}
	// 20000000 at 1 Mb/s, a tenth for each tenfold speed, 2 from 10 Tb/s.
	cost := uint32(20000000)
	for s := uint64(10); s <= 10000000 && mbps >= s; s *= 10 {
		cost /= 10
	}
	return cost
}

// Role is a port's role.
type Role uint8

const (
	RoleDisabled Role = iota
	RoleRoot
	RoleDesignated
	RoleAlternate
	RoleBackup
)

// String is OVS's rstp_port_role_name.
func (r Role) String() string {
	switch r {
	case RoleRoot:
		return "Root"
	case RoleDesignated:
		return "Designated"
	case RoleAlternate:
		return "Alternate"
	case RoleBackup:
		return "Backup"
	}
	return "Disabled"
}

// State is a port's state.
type State uint8

const (
	// Disabled: the port takes no part (RSTP off on it, or no carrier).
	Disabled State = iota
	Discarding
	Learning
	Forwarding
)

// String is OVS's rstp_state_name.
func (s State) String() string {
	switch s {
	case Discarding:
		return "Discarding"
	case Learning:
		return "Learning"
	case Forwarding:
		return "Forwarding"
	}
	return "Disabled"
}

// Learns reports whether a port in state s learns MAC addresses; a port
// without RSTP (Disabled) is not gated.
func (s State) Learns() bool { return s != Discarding }

// Forwards reports whether a port in state s receives and sends frames.
func (s State) Forwards() bool { return s == Forwarding || s == Disabled }

// Bridge is one bridge's RSTP instance. It is not safe for concurrent
// use.
type Bridge struct {
	name string
	cfg  Config
	// id is BridgeIdentifier; bridgeVector the bridge priority vector.
	id        BridgeID
	times     Times // BridgeTimes
	rootVec   Vector
	rootPort  *Port
	rootTimes Times

	ports []*Port // by number
	// send transmits a BPDU (Encode's bytes) on a port; flush forgets
	// the MAC addresses a port learned.
	send  func(port string, bpdu []byte)
	flush func(port string)
	// changed: some port's state changed since Changed was last called;
	// tc: a topology change flushed addresses.
	changed bool
}

// New returns an instance with no ports. send transmits a BPDU on a
// port; flush, if not nil, forgets what a port learned (a topology
// change).
func New(name string, cfg Config, send func(port string, bpdu []byte), flush func(port string)) *Bridge {
	b := &Bridge{name: name, send: send, flush: flush}
	b.Configure(cfg)
	return b
}

// Name returns the bridge's name.
func (b *Bridge) Name() string { return b.name }

// Configure changes the settings. cfg must have passed Check. A change
// of protocol version restarts every port (17.13: BEGIN).
func (b *Bridge) Configure(cfg Config) {
	old := b.cfg
	b.cfg = cfg
	var addr uint64
	for _, x := range cfg.Address {
		addr = addr<<8 | uint64(x)
	}
	b.id = BridgeID(uint64(cfg.Priority)<<48 | addr)
	b.times = Times{MaxAge: uint16(cfg.MaxAge), HelloTime: HelloTime, ForwardDelay: uint16(cfg.ForwardDelay)}
	if old.ForceVersion != cfg.ForceVersion && old != (Config{}) {
		for _, p := range b.ports {
			p.begin()
		}
	}
	for _, p := range b.ports {
		p.reselect, p.selected = true, false
	}
	b.run()
}

// Port is one port of a bridge.
type Port struct {
	b     *Bridge
	name  string
	cfg   PortConfig
	id    uint16 // portId: priority / 16 in the top 4 bits, number below
	state State
	// enabled is portEnabled: carrier and administratively up.
	enabled bool

	// 17.19 per-port variables.
	agree, agreed, disputed, fdbFlush, forward, forwarding bool
	learn, learning, mcheck, newInfo, operEdge             bool
	proposed, proposing, rcvdBPDU, rcvdMsg, rcvdRSTP       bool
	rcvdSTP, rcvdTc, rcvdTcAck, rcvdTcn, reRoot, reselect  bool
	selected, sendRSTP, sync, synced, tcAck, tcProp        bool
	updtInfo                                               bool
	infoIs                                                 infoIs
	rcvdInfo                                               rcvdInfo
	role, selectedRole                                     Role
	designatedVec, msgVec, portVec                         Vector
	designatedTimes, msgTimes, portTimes                   Times
	txCount                                                int
	// The timers (17.17), in seconds.
	edgeDelayWhile, fdWhile, helloWhen, mdelayWhile, rbWhile int
	rcvdInfoWhile, rrWhile, tcWhile                          int
	// rcvd is the BPDU the receive machine holds.
	rcvd BPDU
	// The machines' states.
	pim, prt, pst, tcm, ppm, ptx, prx, bdm uint8

	rx, tx, errors uint64
	// uptime counts the seconds (ticks) since the port was added.
	uptime int
}

// SetPort adds port name or changes its settings.
func (b *Bridge) SetPort(name string, c PortConfig) {
	p := b.port(name)
	if p == nil {
		p = &Port{b: b, name: name, cfg: c}
		b.ports = append(b.ports, p)
		p.cfg.Number = b.number(p, c.Number)
		p.setID()
		p.begin()
	} else {
		mcheck := c.Mcheck && !p.cfg.Mcheck
		n := p.cfg.Number
		p.cfg = c
		p.cfg.Number = n
		if c.Number != 0 && c.Number != n {
			p.cfg.Number = b.number(p, c.Number)
		}
		p.setID()
		if mcheck && b.rstpVersion() {
			p.mcheck = true
		}
	}
	slices.SortFunc(b.ports, func(x, y *Port) int { return x.cfg.Number - y.cfg.Number })
	b.run()
}

// number returns want if no other port has it, else the first free
// number (rstp_first_free_number__).
func (b *Bridge) number(p *Port, want int) int {
	used := map[int]bool{}
	for _, q := range b.ports {
		if q != p {
			used[q.cfg.Number] = true
		}
	}
	if want > 0 && !used[want] {
		return want
	}
	for n := 1; ; n++ {
		if !used[n] {
			return n
		}
	}
}

func (p *Port) setID() {
	id := uint16(p.cfg.Priority>>4)<<12 | uint16(p.cfg.Number&0xfff)
	if id != p.id {
		p.id = id
		p.reselect, p.selected = true, false
	}
}

// DelPort removes port name.
func (b *Bridge) DelPort(name string) {
	i := slices.IndexFunc(b.ports, func(p *Port) bool { return p.name == name })
	if i < 0 {
		return
	}
	b.ports = slices.Delete(b.ports, i, i+1)
	for _, p := range b.ports {
		p.reselect, p.selected = true, false
	}
	b.changed = true
	b.run()
}

// Ports returns the ports' names, by port number.
func (b *Bridge) Ports() []string {
	var n []string
	for _, p := range b.ports {
		n = append(n, p.name)
	}
	return n
}

func (b *Bridge) port(name string) *Port {
	for _, p := range b.ports {
		if p.name == name {
			return p
		}
	}
	return nil
}

// SetEnabled tells whether port name can carry frames (carrier up).
func (b *Bridge) SetEnabled(name string, up bool) {
	if p := b.port(name); p != nil && p.enabled != up {
		p.enabled = up
		b.run()
	}
}

// Receive hands the instance a BPDU port name received (the bytes after
// the LLC header). It returns Decode's error, counted in the port's
// statistics, for a BPDU it discards.
func (b *Bridge) Receive(name string, bpdu []byte) error {
	p := b.port(name)
	if p == nil || !p.enabled {
		return nil
	}
	m, err := Decode(bpdu)
	if err == nil && m.Type == TypeConfig && m.Vector.DesignatedBridgeID == b.id && m.Vector.DesignatedPortID == p.id {
		err = fmt.Errorf("BPDU looped back to its sender")
	}
	if err != nil {
		p.errors++
		return err
	}
	p.rx++
	p.rcvd, p.rcvdBPDU = m, true
	b.run()
	return nil
}

// Tick advances the timers by a second and runs the machines.
func (b *Bridge) Tick() {
	for _, p := range b.ports {
		p.tick()
	}
	b.run()
}

// PortState returns port name's role and state; a port the instance does
// not know is Disabled.
func (b *Bridge) PortState(name string) (Role, State) {
	if p := b.port(name); p != nil {
		return p.role, p.state
	}
	return RoleDisabled, Disabled
}

// Changed reports whether a port's state changed, or a topology change
// flushed addresses, since the last call.
func (b *Bridge) Changed() bool {
	c := b.changed
	b.changed = false
	return c
}

// ID returns the bridge identifier.
func (b *Bridge) ID() BridgeID { return b.id }

func (b *Bridge) rstpVersion() bool { return b.cfg.ForceVersion >= 2 }
