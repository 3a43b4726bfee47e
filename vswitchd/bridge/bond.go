package bridge

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/govs/govs/schema/vswitchd"
	"github.com/govs/govs/vswitchd/lacp"
	"github.com/govs/govs/vswitchd/ofproto"
)

// Bonds, as OVS's bond.c: a Port with more than one Interface runs all of
// them; NORMAL treats them as one port (ofproto). Each member is enabled
// while it has carrier (bond-detect-mode=carrier; miimon is not run) and,
// with lacp=active|passive, LACP lets it (bond_lacp.go), after
// bond_updelay/bond_downdelay; an active-backup bond sends on its active
// member, which changes only when it is disabled (or bond-primary comes
// back, or bond/set-active-member); balance-slb hashes source MAC and VLAN
// onto 256 buckets, balance-tcp (LACP negotiated only) the L3 and L4
// headers, each bucket sending on one member, and every
// bond-rebalance-interval the buckets move from the most to the least
// loaded members (ofproto's BondRebalance).

// Bond modes govs runs.
const (
	BondActiveBackup = "active-backup"
	BondBalanceSLB   = "balance-slb"
	BondBalanceTCP   = "balance-tcp"
)

// BondSpec is a bond's configuration, from its Port row.
type BondSpec struct {
	// Mode is BondActiveBackup or BondBalanceSLB.
	Mode string
	// Updelay and Downdelay are bond_updelay and bond_downdelay, in ms.
	Updelay, Downdelay int
	// Primary is other_config:bond-primary, "" if unset.
	Primary string
	// LACP is the bond's LACP configuration; nil for lacp=off.
	LACP *LACPSpec
	// RebalanceInterval is other_config:bond-rebalance-interval in ms,
	// 0 for no rebalancing.
	RebalanceInterval int
	// Single: the port has one interface and runs LACP only (OVS runs
	// LACP on such a port, as a bundle without a bond): lacp/show lists
	// it, bond/show and bond/list do not, and NORMAL treats it as a
	// plain port whatever LACP says.
	Single bool
}

// defaultRebalanceInterval and minRebalanceInterval are bridge.c's.
const (
	defaultRebalanceInterval = 10000
	minRebalanceInterval     = 1000
)

// bondSpec reads p's bond settings, as bridge.c's port_configure_bond,
// adding to problems what OVS warns about and what govs does not run.
func bondSpec(p vswitchd.Port, problems *[]string) *BondSpec {
	b := &BondSpec{Mode: BondActiveBackup, Updelay: max(0, p.BondUpdelay), Downdelay: max(0, p.BondDowndelay),
		Primary: p.OtherConfig["bond-primary"]}
	switch {
	case p.BondMode == nil:
		*problems = append(*problems, fmt.Sprintf("port %s: Using the default bond_mode %s. Note that in previous versions, the default bond_mode was balance-slb", p.Name, b.Mode))
	case *p.BondMode == vswitchd.PortBondModeBalanceSLB:
		b.Mode = BondBalanceSLB
	case *p.BondMode == vswitchd.PortBondModeBalanceTCP:
		b.Mode = BondBalanceTCP
	case *p.BondMode != vswitchd.PortBondModeActiveBackup:
		// The schema allows no other; OVS's text all the same.
		*problems = append(*problems, fmt.Sprintf("port %s: unknown bond_mode %s, defaulting to %s", p.Name, *p.BondMode, b.Mode))
	}
	switch d := p.OtherConfig["bond-detect-mode"]; d {
	case "", "carrier":
	case "miimon":
		*problems = append(*problems, fmt.Sprintf("port %s: other_config:bond-detect-mode=miimon %s; carrier detection runs", p.Name, notRunning))
	default:
		*problems = append(*problems, fmt.Sprintf("port %s: unsupported bond-detect-mode %s, defaulting to carrier", p.Name, d))
	}
	b.LACP = lacpSpec(p, problems)
	b.RebalanceInterval = smapInt(p.OtherConfig, "bond-rebalance-interval", defaultRebalanceInterval)
	if b.RebalanceInterval != 0 && b.RebalanceInterval < minRebalanceInterval {
		b.RebalanceInterval = minRebalanceInterval
	}
	if b.Mode == BondBalanceTCP && b.LACP == nil {
		*problems = append(*problems, fmt.Sprintf("port %s: bond_mode=balance-tcp needs LACP (lacp=active or passive); without it the bond drops every packet, as OVS's does", p.Name))
	}
	return b
}

// bondRun is one running bond.
type bondRun struct {
	name, bridge string
	spec         BondSpec
	// members are the attached members by interface name.
	members map[string]*member
	// active is the active member's name, "" if none.
	active string
	// timer fires at the earliest pending up/down delay or LACP timer.
	timer *time.Timer
	// lacp runs the bond's LACP; nil for lacp=off.
	lacp *lacp.LACP
	// nextRebalance is when the buckets are next rebalanced; zero when
	// the bond is not balanced.
	nextRebalance time.Time
}

// BondBalancer is implemented by an OFBridge that hashes balanced bonds'
// flows onto buckets (ofproto.Bridge).
type BondBalancer interface {
	BondHashes(bond string) []ofproto.BondHash
	BondRebalance(bond string) []string
	BondMigrate(bond string, hash int, member string)
}

// balanced is bond_is_balanced: balance-slb or balance-tcp with a
// rebalancing interval, and not running active-backup for want of an
// LACP partner.
func (b *bondRun) balanced() bool {
	return !b.spec.Single && b.spec.RebalanceInterval != 0 && b.spec.Mode != BondActiveBackup &&
		!(b.lacp != nil && b.spec.LACP.FallbackAB && b.lacp.Status() == lacp.Configured)
}

// balancer returns b's bridge's BondBalancer, nil if none. Caller holds
// mu.
func (s *Switch) balancer(b *bondRun) BondBalancer {
	if rb := s.bridges[b.bridge]; rb != nil {
		bb, _ := rb.of.(BondBalancer)
		return bb
	}
	return nil
}

// rebalance is bond_rebalance's schedule: when b's interval passed, its
// buckets are rebalanced. It returns when it is next due, zero if b is
// not balanced. Caller holds mu.
func (s *Switch) rebalance(b *bondRun, now time.Time) time.Time {
	if !b.balanced() {
		b.nextRebalance = time.Time{}
		return time.Time{}
	}
	interval := time.Duration(b.spec.RebalanceInterval) * time.Millisecond
	if b.nextRebalance.IsZero() || b.nextRebalance.Sub(now) > interval {
		b.nextRebalance = now.Add(interval)
	}
	if now.Before(b.nextRebalance) {
		return b.nextRebalance
	}
	b.nextRebalance = now.Add(interval)
	if bb := s.balancer(b); bb != nil {
		for _, l := range bb.BondRebalance(b.name) {
			s.log.Infof("%s", l)
		}
	}
	return b.nextRebalance
}

// member is one member's state (bond.c's struct bond_member).
type member struct {
	// carrier is may_enable as last seen (carrier, and LACP's consent):
	// enable-member's setting holds until it changes.
	carrier, enabled bool
	// link is the carrier as LACP last heard of it.
	link bool
	// delay is when a pending change of enabled takes effect; zero if
	// none is pending.
	delay time.Time
}

// names returns the bond's attached members, sorted.
func (b *bondRun) names() []string { return slices.Sorted(maps.Keys(b.members)) }

// syncBonds makes s.bonds those of the last snapshot, with their attached
// members, and runs them. Caller holds mu.
func (s *Switch) syncBonds() {
	want := map[string]bool{}
	if s.last != nil {
		for _, br := range s.last.Bridges {
			for _, p := range br.Ports {
				if p.Bond == nil {
					continue
				}
				want[p.Name] = true
				b := s.bonds[p.Name]
				if b == nil {
					b = &bondRun{name: p.Name, members: map[string]*member{}}
					s.bonds[p.Name] = b
				}
				b.bridge, b.spec = br.Name, *p.Bond
				s.configureLACP(b)
				for _, spec := range p.Ifaces {
					ifc := s.ifaces[spec.Name]
					attached := ifc != nil && ifc.state == StateAttached && ifc.bridge == br.Name
					if _, ok := b.members[spec.Name]; ok && !attached {
						s.removeMember(b, spec.Name)
					} else if !ok && attached {
						// bond_member_register: enabled as the carrier is, at once.
						m := &member{link: s.carrier(ifc, false)}
						m.carrier = m.link && (b.lacp == nil || b.lacp.MayEnable(spec.Name))
						if !b.spec.Single {
							s.enableMember(spec.Name, m, m.carrier)
						}
						b.members[spec.Name] = m
					}
					if attached {
						s.registerLACPMember(b, ifc)
					}
				}
				for n := range b.members {
					if !slices.ContainsFunc(p.Ifaces, func(i IfaceSpec) bool { return i.Name == n }) {
						s.removeMember(b, n)
					}
				}
			}
		}
	}
	dropUnwanted(s.bonds, want, func(b *bondRun) *time.Timer { return b.timer })
	s.runBonds(false)
}

// carrier reports whether ifc has carrier, reading the kernel if fresh.
func (s *Switch) carrier(ifc *iface, fresh bool) bool {
	if fresh || ifc.link == nil {
		if l, err := s.devs.Link(ifc.spec.Name); err == nil {
			ifc.link = &l
		}
	}
	return ifc.link != nil && ifc.link.OperUp
}

// runBonds is bond_run for every bond: members follow their carrier after
// their delays, and a bond without an enabled active member chooses
// another. fresh reads the carriers from the kernel. Caller holds mu.
func (s *Switch) runBonds(fresh bool) {
	now := time.Now()
	s.receiveLACP(now)
	for _, b := range s.bonds {
		next := s.runLACP(b, fresh, now)
		for _, n := range b.names() {
			if b.spec.Single {
				// A port, not a bond: LACP only.
				break
			}
			m, ifc := b.members[n], s.ifaces[n]
			up := s.carrier(ifc, false) && (b.lacp == nil || b.lacp.MayEnable(n))
			if up != m.carrier || !m.delay.IsZero() {
				m.carrier = up
				s.linkStatusUpdate(b, n, m, up, now)
			}
			if !m.delay.IsZero() && (next.IsZero() || m.delay.Before(next)) {
				next = m.delay
			}
		}
		if !b.spec.Single {
			s.chooseActive(b, now)
		}
		if r := s.rebalance(b, now); !r.IsZero() && (next.IsZero() || r.Before(next)) {
			next = r
		}
		if b.timer != nil {
			b.timer.Stop()
			b.timer = nil
		}
		if !next.IsZero() {
			b.timer = time.AfterFunc(next.Sub(now), s.wakeBonds)
		}
	}
	s.pushConfigs()
}

// dropUnwanted deletes the runs of m that want does not name, stopping
// their timers (timer returns nil for none).
func dropUnwanted[T any](m map[string]T, want map[string]bool, timer func(T) *time.Timer) {
	for name, r := range m {
		if !want[name] {
			if t := timer(r); t != nil {
				t.Stop()
			}
			delete(m, name)
		}
	}
}

// wake signals ch without blocking: a pending signal covers this one.
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// wakeBonds asks the daemon to run the bonds (BondsChanged).
func (s *Switch) wakeBonds() { wake(s.bondWake) }

// BondsChanged is signalled when a bond member's delay expired or its
// carrier changed: the daemon then calls RunBonds and writes the status.
func (s *Switch) BondsChanged() <-chan struct{} { return s.bondWake }

// RunBonds runs the bonds with the kernel's carrier states.
func (s *Switch) RunBonds() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runBonds(true)
}

// linkStatusUpdate is bond_link_status_update, with OVS's log lines.
func (s *Switch) linkStatusUpdate(b *bondRun, name string, m *member, up bool, now time.Time) {
	if (up == m.enabled) != m.delay.IsZero() {
		s.log.Infof("member %s: link state %s", name, upDown(up, "up", "down"))
		if up == m.enabled {
			m.delay = time.Time{}
			s.log.Infof("member %s: will not be %s", name, upDown(up, "disabled", "enabled"))
		} else {
			delay := b.spec.Downdelay
			if up {
				delay = b.spec.Updelay
			}
			m.delay = now.Add(time.Duration(delay) * time.Millisecond)
			if delay != 0 {
				s.log.Infof("member %s: will be %s if it stays %s for %d ms", name,
					upDown(up, "enabled", "disabled"), upDown(up, "up", "down"), delay)
			}
		}
	}
	if !m.delay.IsZero() && !now.Before(m.delay) {
		s.enableMember(name, m, up)
	}
}

func upDown(up bool, yes, no string) string {
	if up {
		return yes
	}
	return no
}

// enableMember is bond_enable_member.
func (s *Switch) enableMember(name string, m *member, enable bool) {
	m.delay = time.Time{}
	if m.enabled != enable {
		m.enabled = enable
		s.log.Infof("member %s: %s", name, upDown(enable, "enabled", "disabled"))
	}
}

// chooseActive is bond_choose_active_member, run when the active member
// is gone or disabled, or an enabled primary is not active.
func (s *Switch) chooseActive(b *bondRun, now time.Time) {
	cur := b.members[b.active]
	p := b.members[b.spec.Primary]
	if cur != nil && cur.enabled && (p == nil || !p.enabled || b.active == b.spec.Primary) {
		return
	}
	old := b.active
	b.active = ""
	switch {
	case p != nil && p.enabled:
		b.active = b.spec.Primary
	default:
		// The first enabled member; else the one whose updelay ends
		// first (bond_choose_member).
		var best time.Time
		for _, n := range b.names() {
			m := b.members[n]
			if m.enabled {
				b.active = n
				break
			}
			if !m.delay.IsZero() && (best.IsZero() || m.delay.Before(best)) && !m.enabled {
				best, b.active = m.delay, n
			}
		}
	}
	switch m := b.members[b.active]; {
	case m == nil:
		if old != "" {
			s.log.Infof("bond %s: all members disabled", b.name)
		}
	case m.enabled:
		s.log.Infof("bond %s: active member is now %s", b.name, b.active)
	default:
		s.log.Infof("bond %s: active member is now %s, skipping remaining %d ms updelay (since no member was enabled)",
			b.name, b.active, m.delay.Sub(now).Milliseconds())
		s.enableMember(b.active, m, true)
	}
}

// activeMAC is the MAC of b's active member, "" if none or unknown.
func (s *Switch) activeMAC(b *bondRun) string {
	if ifc := s.ifaces[b.active]; ifc != nil && ifc.link != nil && len(ifc.link.MAC) == 6 {
		return ifc.link.MAC.String()
	}
	return ""
}

// bondOf returns the running bond ifc is a member of, nil if none.
func (s *Switch) bondOf(ifc *iface) *bondRun {
	if ifc.port.Bond == nil {
		return nil
	}
	b := s.bonds[ifc.port.Name]
	if b == nil || b.members[ifc.spec.Name] == nil {
		return nil
	}
	return b
}

// BondList is `ovs-appctl bond/list`.
func (s *Switch) BondList() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var w strings.Builder
	w.WriteString("bond\ttype\trecircID\tmembers\n")
	for _, name := range s.bondNames() {
		b := s.bonds[name]
		if b.spec.Single {
			continue
		}
		fmt.Fprintf(&w, "%s\t%s\t%d\t%s\n", name, b.spec.Mode, 0, strings.Join(b.names(), ", "))
	}
	return w.String()
}

func (s *Switch) bondNames() []string { return slices.Sorted(maps.Keys(s.bonds)) }

// BondShow is `ovs-appctl bond/show [port]`.
func (s *Switch) BondShow(args []string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := slices.DeleteFunc(s.bondNames(), func(n string) bool { return s.bonds[n].spec.Single })
	if len(args) > 0 {
		if b := s.bonds[args[0]]; b == nil || b.spec.Single {
			return "", fmt.Errorf("no such bond")
		}
		names = args[:1]
	}
	var w strings.Builder
	now := time.Now()
	for _, name := range names {
		b := s.bonds[name]
		fmt.Fprintf(&w, "---- %s ----\n", name)
		fmt.Fprintf(&w, "bond_mode: %s\n", b.spec.Mode)
		w.WriteString("bond may use recirculation: no, Recirc-ID : -1\n")
		w.WriteString("bond-hash-basis: 0\n")
		w.WriteString("lb_output action: disabled, bond-id: -1\n")
		if b.spec.Mode == BondBalanceSLB {
			w.WriteString("all members active: false\n")
		}
		fmt.Fprintf(&w, "updelay: %d ms\n", b.spec.Updelay)
		fmt.Fprintf(&w, "downdelay: %d ms\n", b.spec.Downdelay)
		var hashes []ofproto.BondHash
		if b.balanced() {
			fmt.Fprintf(&w, "next rebalance: %d ms\n", b.nextRebalance.Sub(now).Milliseconds())
			if bb := s.balancer(b); bb != nil {
				hashes = bb.BondHashes(name)
			}
		}
		lacpStatus, fallback := "off", false
		if b.lacp != nil {
			lacpStatus, fallback = b.lacp.Status().String(), b.spec.LACP.FallbackAB
		}
		fmt.Fprintf(&w, "lacp_status: %s\n", lacpStatus)
		fmt.Fprintf(&w, "lacp_fallback_ab: %t\n", fallback)
		primary := b.spec.Primary
		if primary == "" {
			primary = "<none>"
		}
		fmt.Fprintf(&w, "active-backup primary: %s\n", primary)
		if mac := s.activeMAC(b); mac != "" {
			fmt.Fprintf(&w, "active member mac: %s(%s)\n", mac, b.active)
		} else {
			w.WriteString("active member mac: 00:00:00:00:00:00(none)\n")
		}
		for _, n := range b.names() {
			m := b.members[n]
			fmt.Fprintf(&w, "\nmember %s: %s\n", n, upDown(m.enabled, "enabled", "disabled"))
			if n == b.active {
				w.WriteString("  active member\n")
			}
			if !m.delay.IsZero() {
				fmt.Fprintf(&w, "  %s expires in %d ms\n", upDown(m.enabled, "downdelay", "updelay"), m.delay.Sub(now).Milliseconds())
			}
			fmt.Fprintf(&w, "  may_enable: %t\n", m.carrier)
			for _, h := range hashes {
				if h.Member == n && h.TxBytes/1024 != 0 {
					fmt.Fprintf(&w, "  hash %d: %d kB load\n", h.Hash, h.TxBytes/1024)
				}
			}
		}
		w.WriteString("\n")
	}
	return w.String(), nil
}

// lookupMember finds member name of bond port, with OVS's errors. Caller
// holds mu.
func (s *Switch) lookupMember(port, name string) (*bondRun, *member, error) {
	b := s.bonds[port]
	if b == nil || b.spec.Single {
		return nil, nil, fmt.Errorf("no such bond")
	}
	m := b.members[name]
	if m == nil {
		return nil, nil, fmt.Errorf("no such member")
	}
	return b, m, nil
}

// SetActiveMember is `ovs-appctl bond/set-active-member port member`.
func (s *Switch) SetActiveMember(port, name string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, m, err := s.lookupMember(port, name)
	switch {
	case err != nil:
		return "", err
	case !m.enabled:
		return "", fmt.Errorf("cannot make disabled member active")
	case b.active == name:
		return "no change", nil
	}
	b.active = name
	s.log.Infof("bond %s: active member is now %s", b.name, name)
	s.pushConfigs()
	return "done", nil
}

// EnableMember is `ovs-appctl bond/enable-member port member` (enable)
// and bond/disable-member: the member's state until its carrier next
// changes, as OVS's.
func (s *Switch) EnableMember(port, name string, enable bool) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, m, err := s.lookupMember(port, name)
	if err != nil {
		return "", err
	}
	s.enableMember(name, m, enable)
	s.chooseActive(b, time.Now())
	s.pushConfigs()
	return upDown(enable, "enabled", "disabled"), nil
}

// BondMigrate is `ovs-appctl bond/migrate port hash member`, with OVS's
// errors: it moves a bucket of a balance-slb bond to an enabled member.
func (s *Switch) BondMigrate(port, hash, name string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bonds[port]
	switch {
	case b == nil || b.spec.Single:
		return "", fmt.Errorf("no such bond")
	case b.spec.Mode != BondBalanceSLB:
		return "", fmt.Errorf("not an SLB bond")
	case strings.Trim(hash, "0123456789") != "":
		return "", fmt.Errorf("bad hash")
	}
	// atoi: digits only, and as C's, what overflows is undefined; take
	// the low bits of what fits.
	h := 0
	for _, c := range hash {
		h = (h*10 + int(c-'0')) & 0xffff
	}
	m := b.members[name]
	switch {
	case m == nil:
		return "", fmt.Errorf("no such member")
	case !m.enabled:
		return "", fmt.Errorf("cannot migrate to disabled member")
	}
	if bb := s.balancer(b); bb != nil {
		bb.BondMigrate(port, h&0xff, name)
	}
	return "migrated", nil
}

// BondHash is `ovs-appctl bond/hash mac [vlan] [basis]`: the bucket a
// balance-slb bond puts the source MAC mac on VLAN vlan in, with OVS's
// errors, checked in OVS's order.
func BondHash(args []string) (string, error) {
	var vlan, basis uint32
	var ok bool
	if len(args) > 1 {
		if vlan, ok = scanUint(args[1]); !ok {
			return "", fmt.Errorf("invalid vlan")
		}
	}
	if len(args) > 2 {
		if basis, ok = scanUint(args[2]); !ok {
			return "", fmt.Errorf("invalid basis")
		}
	}
	mac, ok := scanMAC(args[0])
	if !ok {
		return "", fmt.Errorf("invalid mac")
	}
	return fmt.Sprint(ofproto.BondHashMAC(mac, uint16(vlan), basis) & 0xff), nil
}

// scanUint is ovs_scan's %u: optional spaces and sign, then decimal
// digits, up to the first other character; wraps as C's.
func scanUint(s string) (uint32, bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	var v uint32
	n := 0
	for ; n < len(s) && s[n] >= '0' && s[n] <= '9'; n++ {
		v = v*10 + uint32(s[n]-'0')
	}
	if neg {
		v = -v
	}
	return v, n > 0
}

// scanMAC is ovs_scan's ETH_ADDR_SCAN_FMT: six groups of hex digits
// (each taken modulo 256) separated by colons; what follows is ignored.
func scanMAC(s string) ([6]byte, bool) {
	var mac [6]byte
	for i := range mac {
		if i > 0 {
			if s == "" || s[0] != ':' {
				return mac, false
			}
			s = s[1:]
		}
		n := 0
		for ; n < len(s) && strings.IndexByte("0123456789abcdefABCDEF", s[n]) >= 0; n++ {
			c := s[n] | 0x20
			d := c - '0'
			if c >= 'a' {
				d = c - 'a' + 10
			}
			mac[i] = mac[i]<<4 | d
		}
		if n == 0 {
			return mac, false
		}
		s = s[n:]
	}
	return mac, true
}
