package bridge

import (
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govs/govs/schema/vswitchd"
)

// bondDB is a bridge with p3 and a bond bond0 of p1 and p2.
func bondDB(mode string) (*db, *vswitchd.Port) {
	d := &db{}
	br := d.bridge("br0", "p1", "p2", "p3")
	p1, p2 := d.port("p1"), d.port("p2")
	p1.Interfaces = append(p1.Interfaces, p2.Interfaces...)
	p1.Name = "bond0"
	if mode != "" {
		p1.BondMode = &mode
	}
	br.Ports = slices.DeleteFunc(br.Ports, func(u string) bool { return u == p2.UUID })
	return d, p1
}

// bondPorts returns the bond members NORMAL got last: name, enabled,
// active.
func (h *harness) bondPorts(t *testing.T) string {
	t.Helper()
	cfgs := h.backer.brs["br0"].cfgs
	var out []string
	for _, pc := range cfgs[len(cfgs)-1].Ports {
		if pc.Bond == "" {
			continue
		}
		s := pc.Name + ":" + pc.Bond
		if pc.BondEnabled {
			s += "+"
		}
		if pc.BondActive {
			s += "*"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func TestBondActiveBackup(t *testing.T) {
	h := newHarness()
	d, _ := bondDB("")
	want := Build(d.rows)
	if !slices.Contains(want.Problems, "port bond0: Using the default bond_mode active-backup. Note that in previous versions, the default bond_mode was balance-slb") {
		t.Errorf("problems %q", want.Problems)
	}
	h.sw.Apply(want)
	for _, n := range []string{"p1", "p2", "p3"} {
		if st := statusOf(h.sw.Report(want), d.iface(n).UUID); st.Error != "" || st.OFPort <= 0 {
			t.Errorf("%s: %+v", n, st)
		}
	}
	if got := h.bondPorts(t); got != "p1:bond0+* p2:bond0+" {
		t.Errorf("NORMAL got %q", got)
	}
	// Carrier loss on the active member: p2 takes over.
	h.devs.noCarrier = map[string]bool{"p1": true}
	if h.sw.LinkChanged("p1", 11, true) {
		t.Error("a carrier change asked for a reconfiguration")
	}
	if got := h.bondPorts(t); got != "p1:bond0 p2:bond0+*" {
		t.Errorf("after p1's carrier loss NORMAL got %q", got)
	}
	// p1 back: p2 stays active (no primary).
	h.devs.noCarrier = nil
	h.sw.LinkChanged("p1", 11, true)
	if got := h.bondPorts(t); got != "p1:bond0+ p2:bond0+*" {
		t.Errorf("after p1 is back NORMAL got %q", got)
	}
	// As Debian's ovs-vswitchd 3.1 prints it.
	h.devs.macs["p2"] = net.HardwareAddr{0x66, 0xb9, 0x36, 0x64, 0x19, 0x89}
	h.devs.noCarrier = map[string]bool{"p1": true}
	h.sw.RunBonds()
	show, err := h.sw.BondShow([]string{"bond0"})
	if want := "---- bond0 ----\n" +
		"bond_mode: active-backup\n" +
		"bond may use recirculation: no, Recirc-ID : -1\n" +
		"bond-hash-basis: 0\n" +
		"lb_output action: disabled, bond-id: -1\n" +
		"updelay: 0 ms\n" +
		"downdelay: 0 ms\n" +
		"lacp_status: off\n" +
		"lacp_fallback_ab: false\n" +
		"active-backup primary: <none>\n" +
		"active member mac: 66:b9:36:64:19:89(p2)\n" +
		"\n" +
		"member p1: disabled\n" +
		"  may_enable: false\n" +
		"\n" +
		"member p2: enabled\n" +
		"  active member\n" +
		"  may_enable: true\n" +
		"\n"; err != nil || show != want {
		t.Errorf("bond/show: %v\n%s\nwant:\n%s", err, show, want)
	}
	got := h.sw.Report(want).Ports
	i := slices.IndexFunc(got, func(p PortStatus) bool { return p.UUID == d.port("bond0").UUID })
	if i < 0 || got[i].BondActiveSlave != "66:b9:36:64:19:89" || got[i].RSTPStatus != nil || got[i].Status != nil {
		t.Errorf("Report's ports: %+v", got)
	}
	h.devs.noCarrier = nil
	h.sw.RunBonds()
	if _, err := h.sw.BondShow([]string{"nosuch"}); err == nil || err.Error() != "no such bond" {
		t.Errorf("bond/show nosuch: %v", err)
	}
	for _, c := range []struct{ port, member, want, err string }{
		{"bond0", "p1", "done", ""}, {"bond0", "p1", "no change", ""},
		{"nosuch", "p1", "", "no such bond"}, {"bond0", "p3", "", "no such member"},
	} {
		got, err := h.sw.SetActiveMember(c.port, c.member)
		if got != c.want || (err == nil) != (c.err == "") || err != nil && err.Error() != c.err {
			t.Errorf("set-active-member %s %s: %q %v", c.port, c.member, got, err)
		}
	}
	if got := h.bondPorts(t); got != "p1:bond0+* p2:bond0+" {
		t.Errorf("after set-active-member NORMAL got %q", got)
	}
	// Disabling the active member by hand fails over too; the setting
	// holds until the carrier changes.
	h.sw.EnableMember("bond0", "p1", false)
	h.sw.RunBonds()
	if got := h.bondPorts(t); got != "p1:bond0 p2:bond0+*" {
		t.Errorf("after disable-member NORMAL got %q", got)
	}
	if _, err := h.sw.SetActiveMember("bond0", "p1"); err == nil || err.Error() != "cannot make disabled member active" {
		t.Errorf("set-active-member of a disabled member: %v", err)
	}
	if got := h.sw.BondList(); got != "bond\ttype\trecircID\tmembers\nbond0\tactive-backup\t0\tp1, p2\n" {
		t.Errorf("bond/list: %q", got)
	}
}

func TestBondDelays(t *testing.T) {
	h := newHarness()
	d, p := bondDB("balance-slb")
	p.BondDowndelay = 50
	p.BondUpdelay = 30
	want := Build(d.rows)
	h.sw.Apply(want)
	if got := h.bondPorts(t); got != "p1:bond0+* p2:bond0+" {
		t.Fatalf("NORMAL got %q", got)
	}
	if cfgs := h.backer.brs["br0"].cfgs; !cfgs[len(cfgs)-1].Ports[1].BondSLB {
		t.Errorf("not balance-slb: %+v", cfgs[len(cfgs)-1].Ports[1])
	}
	h.devs.noCarrier = map[string]bool{"p1": true}
	h.sw.LinkChanged("p1", 11, true)
	if got := h.bondPorts(t); got != "p1:bond0+* p2:bond0+" {
		t.Errorf("within the downdelay NORMAL got %q", got)
	}
	// The daemon's loop: run the bonds when told to.
	deadline := time.After(10 * time.Second)
	for h.bondPorts(t) != "p1:bond0 p2:bond0+*" {
		select {
		case <-h.sw.BondsChanged():
			h.sw.RunBonds()
		case <-deadline:
			t.Fatalf("after the downdelay NORMAL got %q", h.bondPorts(t))
		}
	}
	for _, l := range []string{"INFO|member p1: link state down", "INFO|member p1: will be disabled if it stays down for 50 ms",
		"INFO|member p1: disabled", "INFO|bond bond0: active member is now p2"} {
		if !slices.Contains(h.log.lines, l) {
			t.Errorf("not logged: %q in %q", l, h.log.lines)
		}
	}
	// The bond goes away: NORMAL has no bond left.
	uuid := p.UUID
	d.rows.Ports = slices.DeleteFunc(d.rows.Ports, func(q vswitchd.Port) bool { return q.Name == "bond0" })
	d.rows.Bridges[0].Ports = slices.DeleteFunc(d.rows.Bridges[0].Ports, func(u string) bool { return u == uuid })
	h.sw.Apply(Build(d.rows))
	if got := h.bondPorts(t); got != "" || len(h.sw.bonds) != 0 {
		t.Errorf("after the bond's removal NORMAL got %q, bonds %v", got, h.sw.bonds)
	}
}

// FuzzBondSpec: any bond settings give a mode govs runs, non-negative
// delays, and a report of what it does not run (balance-tcp does not
// without LACP).
func FuzzBondSpec(f *testing.F) {
	f.Add("balance-tcp", "miimon", "p1", -5, 100)
	f.Add("balance-slb", "carrier", "", 0, 0)
	f.Add("", "bogus", "", 1<<31-1, -1)
	f.Fuzz(func(t *testing.T, mode, detect, primary string, up, down int) {
		p := vswitchd.Port{Name: "b", BondUpdelay: up, BondDowndelay: down,
			OtherConfig: map[string]string{"bond-detect-mode": detect, "bond-primary": primary}}
		if mode != "" {
			p.BondMode = &mode
		}
		var problems []string
		b := bondSpec(p, &problems)
		if b.Mode != BondActiveBackup && b.Mode != BondBalanceSLB && b.Mode != BondBalanceTCP || b.Updelay < 0 || b.Downdelay < 0 || b.Primary != primary {
			t.Errorf("bondSpec(%+v) = %+v", p, b)
		}
		if mode != BondActiveBackup && mode != BondBalanceSLB && len(problems) == 0 {
			t.Errorf("bond_mode %q not reported", mode)
		}
	})
}

// TestBondHashCommand: bond/hash as Debian's ovs-vswitchd 3.1 answers.
func TestBondHashCommand(t *testing.T) {
	for _, c := range []struct {
		args      []string
		want, err string
	}{
		{[]string{"00:11:22:33:44:55"}, "226", ""},
		{[]string{"00:11:22:33:44:55", "0", "0"}, "226", ""},
		{[]string{"02:00:00:00:00:01", "0", "7"}, "50", ""},
		{[]string{"aa:bb:cc:dd:ee:ff", "10"}, "247", ""},
		{[]string{"zz"}, "", "invalid mac"},
		{[]string{"00:11:22:33:44:55", "x"}, "", "invalid vlan"},
		{[]string{"00:11:22:33:44:55", "1", "y"}, "", "invalid basis"},
		{[]string{"zz", "x"}, "", "invalid vlan"},
	} {
		got, err := BondHash(c.args)
		if got != c.want || (err == nil) != (c.err == "") || err != nil && err.Error() != c.err {
			t.Errorf("bond/hash %q: %q, %v; want %q, %q", c.args, got, err, c.want, c.err)
		}
	}
}

// FuzzBondHash: bond/hash's parsers never panic, and a MAC it accepts is
// one with six groups.
func FuzzBondHash(f *testing.F) {
	for _, s := range [][3]string{{"00:11:22:33:44:55", "0", "0"}, {"a:b:c:d:e:f", "-1", "+7"}, {"0:0:0:0:0", "", ""}, {"fff:1:2:3:4:5x", " 9", "4294967296"}} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, mac, vlan, basis string) {
		if _, err := BondHash([]string{mac, vlan, basis}); err == nil && strings.Count(mac, ":") < 5 {
			t.Errorf("accepted MAC %q", mac)
		}
	})
}
