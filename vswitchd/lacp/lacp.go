package lacp

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Transmission intervals; a partner is expired after rxMultiplier of
// them without a PDU (OVS's LACP_FAST_TIME_TX, LACP_SLOW_TIME_TX,
// LACP_RX_MULTIPLIER).
const (
	FastTx       = time.Second
	SlowTx       = 30 * time.Second
	rxMultiplier = 3
)

// Status is a bond's LACP status (OVS's enum lacp_status).
type Status uint8

const (
	// Disabled: the bond runs no LACP.
	Disabled Status = iota
	// Configured: LACP runs but no member is attached.
	Configured
	// Negotiated: some member is attached to the partner's aggregator.
	Negotiated
)

func (s Status) String() string {
	switch s {
	case Negotiated:
		return "negotiated"
	case Configured:
		return "configured"
	}
	return "off"
}

// Settings are a bond's LACP settings (OVS's struct lacp_settings).
type Settings struct {
	Name        string
	SysID       [6]byte
	SysPriority uint16
	Active      bool
	Fast        bool
	FallbackAB  bool
}

// MemberSettings are one member's (struct lacp_member_settings).
type MemberSettings struct {
	PortID, PortPriority uint16
	// Key is the aggregation key, 0 for the key member's port ID.
	Key uint16
}

// memberStatus is how current a member's partner information is.
type memberStatus uint8

const (
	current   memberStatus = iota // partner up to date
	expired                       // partner out of date
	defaulted                     // no partner
)

func (s memberStatus) String() string {
	switch s {
	case current:
		return "current"
	case expired:
		return "expired"
	}
	return "defaulted"
}

// member is one member's state (lacp.c's struct member).
type member struct {
	name      string
	cfg       MemberSettings
	status    memberStatus
	attached  bool
	carrierUp bool
	partner   Info
	// nttActor is the actor information last sent, or the partner's
	// view of us from its last PDU: a difference means Need To Transmit.
	nttActor Info
	// tx and rx are when the next PDU is due and when the partner's
	// information expires; zero means expired already.
	tx, rx time.Time

	rxPDUs, rxBad, rxMarker, txPDUs  uint32
	linkExpired, linkDefaulted, carr uint32
}

// LACP is one bond's LACP instance. It is not safe for concurrent use.
type LACP struct {
	s          Settings
	members    map[string]*member
	keyMember  *member
	negotiated bool
	// update: the attached members must be computed again.
	update bool
	// warn logs what OVS logs at WARN; nil for none.
	warn func(format string, args ...any)
}

// New returns an instance with no members; warn, if not nil, gets the
// warnings OVS logs (loopback detected).
func New(s Settings, warn func(format string, args ...any)) *LACP {
	l := &LACP{members: map[string]*member{}, warn: warn}
	l.Configure(s)
	return l
}

// Configure changes the settings (lacp_configure).
func (l *LACP) Configure(s Settings) {
	if l.s.SysID != s.SysID || l.s.SysPriority != s.SysPriority || l.s.FallbackAB != s.FallbackAB {
		l.update = true
	}
	l.s = s
}

// Settings returns the settings.
func (l *LACP) Settings() Settings { return l.s }

// Register adds member name or changes its settings
// (lacp_member_register). A new member starts defaulted, with carrier
// up.
func (l *LACP) Register(name string, ms MemberSettings, now time.Time) {
	m := l.members[name]
	if m == nil {
		m = &member{name: name, carrierUp: true}
		l.members[name] = m
		l.setDefaulted(m)
		if l.keyMember == nil {
			l.keyMember = m
		}
	} else if m.cfg == ms {
		return
	}
	m.cfg = ms
	l.update = true
	if l.s.Active || l.negotiated {
		l.setExpired(m, now)
	}
}

// Unregister removes member name (lacp_member_unregister).
func (l *LACP) Unregister(name string) {
	m := l.members[name]
	if m == nil {
		return
	}
	delete(l.members, name)
	l.update = true
	if l.keyMember == m {
		l.keyMember = nil
		if names := l.names(); len(names) > 0 {
			l.keyMember = l.members[names[0]]
		}
	}
}

// Members returns the members' names, sorted.
func (l *LACP) Members() []string { return l.names() }

func (l *LACP) names() []string { return slices.Sorted(maps.Keys(l.members)) }

// CarrierChanged tells that member name's carrier is now up or down
// (lacp_member_carrier_changed).
func (l *LACP) CarrierChanged(name string, up bool, now time.Time) {
	m := l.members[name]
	if m == nil {
		return
	}
	if m.status == current || l.s.Active {
		l.setExpired(m, now)
	}
	if m.carrierUp != up {
		m.carrierUp = up
		m.carr++
	}
}

// Process handles a slow protocols PDU member name received
// (lacp_process_packet). It returns whether the member may be enabled
// now, and an error for a PDU it could not use, which the caller logs
// (rate-limited) as OVS does: "<bond>: received an unparsable LACP PDU.".
func (l *LACP) Process(name string, pdu []byte, now time.Time) (bool, error) {
	m := l.members[name]
	if m == nil {
		return false, nil
	}
	m.rxPDUs++
	p, err := Decode(pdu)
	switch {
	case err == ErrMarker:
		m.rxMarker++
		return false, nil
	case err != nil:
		m.rxBad++
		return false, err
	case !m.carrierUp:
		return false, nil
	}
	m.status = current
	m.rx = now.Add(rxMultiplier * l.txInterval())
	m.nttActor = p.Partner
	if m.partner != p.Actor {
		l.update = true
		m.partner = p.Actor
	}
	return l.mayEnable(m), nil
}

func (l *LACP) txInterval() time.Duration {
	if l.s.Fast {
		return FastTx
	}
	return SlowTx
}

// Status returns Negotiated or Configured.
func (l *LACP) Status() Status {
	if l.negotiated {
		return Negotiated
	}
	return Configured
}

// MayEnable reports whether member name may carry traffic: attached to
// the aggregator with a partner in sync, or defaulted with fallback-ab
// (lacp_member_may_enable, which the caller asks only while the carrier
// is up).
func (l *LACP) MayEnable(name string) bool {
	m := l.members[name]
	if m == nil {
		return false
	}
	m.carrierUp = true
	return l.mayEnable(m)
}

func (l *LACP) mayEnable(m *member) bool {
	return m.attached && (m.partner.State&StateSync != 0 || l.s.FallbackAB && m.status == defaulted)
}

// IsCurrent reports whether member name has a partner: Interface
// lacp_current (lacp_member_is_current).
func (l *LACP) IsCurrent(name string) bool {
	m := l.members[name]
	return m != nil && m.status != defaulted
}

// Run expires partners whose PDUs stopped, recomputes the attached
// members and sends the PDUs that are due (lacp_run): send gets the
// member's name and the PDU. It reports whether anything a caller shows
// or acts on changed.
func (l *LACP) Run(now time.Time, send func(member string, p PDU)) bool {
	changed := false
	for _, name := range l.names() {
		m := l.members[name]
		if m.status == defaulted || now.Before(m.rx) {
			continue
		}
		switch m.status {
		case current:
			l.setExpired(m, now)
			m.linkExpired++
		case expired:
			l.setDefaulted(m)
			m.linkDefaulted++
		}
		changed = true
	}
	if l.update {
		l.updateAttached()
		changed = true
	}
	for _, name := range l.names() {
		m := l.members[name]
		if !l.mayTx(m) {
			continue
		}
		actor := l.actor(m)
		if now.Before(m.tx) && txEqual(actor, m.nttActor) {
			continue
		}
		m.nttActor = actor
		send(name, PDU{Actor: actor, Partner: m.partner})
		m.txPDUs++
		d := SlowTx
		if m.partner.State&StateTimeout != 0 {
			d = FastTx
		}
		m.tx = now.Add(d)
	}
	return changed
}

// Next returns when Run must run again: the earliest transmission or
// expiry due; zero if none.
func (l *LACP) Next() time.Time {
	var next time.Time
	earlier := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for _, m := range l.members {
		if l.mayTx(m) {
			earlier(m.tx)
		}
		if m.status != defaulted {
			earlier(m.rx)
		}
	}
	return next
}

func (l *LACP) mayTx(m *member) bool {
	return m.carrierUp && (l.s.Active || m.status != defaulted)
}

func (l *LACP) setDefaulted(m *member) {
	m.partner = Info{}
	l.update = true
	m.status = defaulted
}

func (l *LACP) setExpired(m *member, now time.Time) {
	m.status = expired
	m.partner.State |= StateTimeout
	m.partner.State &^= StateSync
	m.rx = now.Add(rxMultiplier * FastTx)
}

// updateAttached decides which members are attached to the aggregator,
// and so whether LACP negotiated (lacp_update_attached): the members
// whose partner is the system and key of the highest-priority link.
func (l *LACP) updateAttached() {
	l.update = false
	var lead, leadCurrent *member
	var leadPri Info
	leadEnable := false
	names := l.names()
	for _, n := range names {
		m := l.members[n]
		if m.status == current && m.attached {
			pri := l.priority(m)
			if leadCurrent == nil || infoLess(pri, leadPri) {
				leadCurrent, lead, leadPri, leadEnable = m, m, pri, true
			}
		}
	}
	for _, n := range names {
		m := l.members[n]
		m.attached = false
		if m.partner.SysID == l.s.SysID {
			if l.warn != nil {
				l.warn("member %s: Loopback detected. Interface is connected to its own bond", m.name)
			}
			continue
		}
		if m.status == defaulted {
			if l.s.FallbackAB {
				m.attached = true
			}
			continue
		}
		pri := l.priority(m)
		enable := l.mayEnable(m)
		if leadCurrent == nil || m.partner.SysID == leadCurrent.partner.SysID {
			m.attached = true
		}
		if m.attached && (lead == nil || enable && !leadEnable || enable == leadEnable && infoLess(pri, leadPri)) {
			lead, leadEnable, leadPri = m, enable, pri
		}
	}
	l.negotiated = lead != nil
	if lead != nil {
		for _, m := range l.members {
			if l.s.FallbackAB && m.status == defaulted || lead.partner.Key != m.partner.Key || lead.partner.SysID != m.partner.SysID {
				m.attached = false
			}
		}
	}
}

// infoLess compares as memcmp of the packed lacp_info does.
func infoLess(a, b Info) bool {
	var x, y [infoLen]byte
	a.put(x[:])
	b.put(y[:])
	return bytes.Compare(x[:], y[:]) < 0
}

// priority is member_get_priority: the information of the
// higher-priority system on m's link, without key and state.
func (l *LACP) priority(m *member) Info {
	var p Info
	switch pp := m.partner.SysPriority; {
	case l.s.SysPriority < pp:
		p = l.actor(m)
	case pp < l.s.SysPriority:
		p = m.partner
	case bytes.Compare(l.s.SysID[:], m.partner.SysID[:]) < 0:
		p = l.actor(m)
	default:
		p = m.partner
	}
	p.Key, p.State = 0, 0
	return p
}

// key is the bond's aggregation key: the key member's key, else its
// port ID.
func (l *LACP) key() uint16 {
	if l.keyMember.cfg.Key != 0 {
		return l.keyMember.cfg.Key
	}
	return l.keyMember.cfg.PortID
}

// actor is what m tells its partner about itself (member_get_actor).
func (l *LACP) actor(m *member) Info {
	var st uint8
	if l.s.Active {
		st |= StateActivity
	}
	if l.s.Fast {
		st |= StateTimeout
	}
	if m.attached {
		st |= StateSync
	}
	switch m.status {
	case defaulted:
		st |= StateDefaulted
	case expired:
		st |= StateExpired
	}
	if len(l.members) > 1 {
		st |= StateAggregation
	}
	if m.attached || !l.negotiated {
		st |= StateCollecting | StateDistributing
	}
	return Info{SysPriority: l.s.SysPriority, SysID: l.s.SysID, Key: l.key(),
		PortPriority: m.cfg.PortPriority, PortID: m.cfg.PortID, State: st}
}

// txEqual reports whether a and b differ in nothing that needs a PDU.
func txEqual(a, b Info) bool {
	const bits = StateActivity | StateTimeout | StateSync | StateAggregation
	return (a.State^b.State)&bits == 0 && a.PortID == b.PortID && a.PortPriority == b.PortPriority &&
		a.Key == b.Key && a.SysPriority == b.SysPriority && a.SysID == b.SysID
}

func stateString(st uint8) string {
	var w strings.Builder
	for _, f := range []struct {
		bit  uint8
		name string
	}{{StateActivity, "activity"}, {StateTimeout, "timeout"}, {StateAggregation, "aggregation"},
		{StateSync, "synchronized"}, {StateCollecting, "collecting"}, {StateDistributing, "distributing"},
		{StateDefaulted, "defaulted"}, {StateExpired, "expired"}} {
		if st&f.bit != 0 {
			w.WriteString(" " + f.name)
		}
	}
	return w.String()
}

// Show writes the bond as `ovs-appctl lacp/show` does
// (lacp_print_details).
func (l *LACP) Show(w *strings.Builder) {
	fmt.Fprintf(w, "---- %s ----\n", l.s.Name)
	status := "passive"
	if l.s.Active {
		status = "active"
	}
	if l.negotiated {
		status += " negotiated"
	}
	fmt.Fprintf(w, "  status: %s\n", status)
	fmt.Fprintf(w, "  sys_id: %s\n", macString(l.s.SysID))
	fmt.Fprintf(w, "  sys_priority: %d\n", l.s.SysPriority)
	if l.keyMember != nil {
		fmt.Fprintf(w, "  aggregation key: %d\n", l.key())
	} else {
		w.WriteString("  aggregation key: none\n")
	}
	if l.s.Fast {
		w.WriteString("  lacp_time: fast\n")
	} else {
		w.WriteString("  lacp_time: slow\n")
	}
	for _, n := range l.names() {
		m := l.members[n]
		a := l.actor(m)
		att := "detached"
		if m.attached {
			att = "attached"
		}
		fmt.Fprintf(w, "\nmember: %s: %s %s\n", n, m.status, att)
		fmt.Fprintf(w, "  port_id: %d\n", m.cfg.PortID)
		fmt.Fprintf(w, "  port_priority: %d\n", m.cfg.PortPriority)
		fmt.Fprintf(w, "  may_enable: %t\n", l.mayEnable(m))
		for _, side := range []struct {
			who  string
			info Info
		}{{"actor", a}, {"partner", m.partner}} {
			i := side.info
			fmt.Fprintf(w, "\n  %s sys_id: %s\n", side.who, macString(i.SysID))
			fmt.Fprintf(w, "  %s sys_priority: %d\n", side.who, i.SysPriority)
			fmt.Fprintf(w, "  %s port_id: %d\n", side.who, i.PortID)
			fmt.Fprintf(w, "  %s port_priority: %d\n", side.who, i.PortPriority)
			fmt.Fprintf(w, "  %s key: %d\n", side.who, i.Key)
			fmt.Fprintf(w, "  %s state:%s\n", side.who, stateString(i.State))
		}
	}
}

// ShowStats writes the bond's counters as `ovs-appctl lacp/show-stats`
// does (lacp_print_stats).
func (l *LACP) ShowStats(w *strings.Builder) {
	fmt.Fprintf(w, "---- %s statistics ----\n", l.s.Name)
	for _, n := range l.names() {
		m := l.members[n]
		fmt.Fprintf(w, "\nmember: %s:\n", n)
		fmt.Fprintf(w, "  TX PDUs: %d\n", m.txPDUs)
		fmt.Fprintf(w, "  RX PDUs: %d\n", m.rxPDUs)
		fmt.Fprintf(w, "  RX Bad PDUs: %d\n", m.rxBad)
		fmt.Fprintf(w, "  RX Marker Request PDUs: %d\n", m.rxMarker)
		fmt.Fprintf(w, "  Link Expired: %d\n", m.linkExpired)
		fmt.Fprintf(w, "  Link Defaulted: %d\n", m.linkDefaulted)
		fmt.Fprintf(w, "  Carrier Status Changed: %d\n", m.carr)
	}
}
