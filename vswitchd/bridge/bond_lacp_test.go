package bridge

import (
	"strings"
	"testing"

	"github.com/govs/govs/vswitchd/lacp"
)

type sentFrame struct {
	dpPort uint32
	frame  []byte
}

func (b *fakeBacker) SetSlowProtocolsHandler(f func(uint32, []byte)) { b.slow = f }
func (b *fakeBacker) SendFrame(dpPort uint32, frame []byte) error {
	b.sent = append(b.sent, sentFrame{dpPort, frame})
	return nil
}

// TestBondLACP: a bond with lacp=active sends LACPDUs on its members,
// enables none of them until a partner in sync answers, then both;
// lacp/show, bond/show and lacp_current say so, and a PDU it cannot parse
// is counted.
func TestBondLACP(t *testing.T) {
	h := newHarness()
	d, p := bondDB("balance-tcp")
	mode := "active"
	p.LACP = &mode
	p.OtherConfig = map[string]string{"lacp-time": "fast", "lacp-system-id": "02:00:00:00:00:01"}
	want := Build(d.rows)
	for _, pr := range want.Problems {
		if strings.Contains(pr, "lacp") || strings.Contains(pr, "LACP") {
			t.Errorf("problem %q", pr)
		}
	}
	h.sw.Apply(want)
	if got := h.bondPorts(t); got != "p1:bond0 p2:bond0" {
		t.Errorf("without a partner NORMAL got %q", got)
	}
	if len(h.backer.sent) != 2 {
		t.Fatalf("sent %d PDUs, want one per member", len(h.backer.sent))
	}
	// The partner answers on each member with what it heard.
	for _, f := range h.backer.sent {
		b, err := lacp.ParseFrame(f.frame)
		if err != nil {
			t.Fatal(err)
		}
		ours, err := lacp.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		ours.Actor.State |= lacp.StateSync
		reply := lacp.PDU{Actor: lacp.Info{SysPriority: 65534, SysID: [6]byte{2, 0, 0, 0, 0, 2}, Key: 9, PortPriority: 65535,
			PortID: uint16(f.dpPort), State: lacp.StateActivity | lacp.StateAggregation | lacp.StateSync | lacp.StateCollecting | lacp.StateDistributing},
			Partner: ours.Actor}
		h.backer.slow(f.dpPort, reply.Frame([6]byte{2, 0, 0, 0, 0, 9}))
	}
	bad := lacp.PDU{}.Frame([6]byte{2, 0, 0, 0, 0, 9})
	bad[14+2] = 7 // no actor TLV
	h.backer.slow(h.backer.sent[0].dpPort, bad)
	h.sw.RunBonds()
	// Attached now, enabled once the partner says it is in sync.
	h.sw.RunBonds()
	show, err := h.sw.LACPShow([]string{"bond0"})
	if err != nil || !strings.Contains(show, "  status: active negotiated\n") || strings.Count(show, ": current attached\n") != 2 {
		t.Errorf("lacp/show: %v\n%s", err, show)
	}
	if got := h.bondPorts(t); got != "p1:bond0+* p2:bond0+" {
		t.Errorf("negotiated, NORMAL got %q", got)
	}
	if bs, _ := h.sw.BondShow(nil); !strings.Contains(bs, "bond_mode: balance-tcp\n") || !strings.Contains(bs, "lacp_status: negotiated\n") {
		t.Errorf("bond/show:\n%s", bs)
	}
	if cfgs := h.backer.brs["br0"].cfgs; cfgs[len(cfgs)-1].Ports[1].BondLACP != lacp.Negotiated || !cfgs[len(cfgs)-1].Ports[1].BondTCP {
		t.Errorf("NORMAL's bond member: %+v", cfgs[len(cfgs)-1].Ports[1])
	}
	st := statusOf(h.sw.Report(want), d.iface("p1").UUID)
	if st.LACPCurrent == nil || !*st.LACPCurrent {
		t.Errorf("lacp_current %v", st.LACPCurrent)
	}
	if st := statusOf(h.sw.Report(want), d.iface("p3").UUID); st.LACPCurrent != nil {
		t.Errorf("p3's lacp_current %v", *st.LACPCurrent)
	}
	stats, _ := h.sw.LACPShowStats(nil)
	if !strings.Contains(stats, "member: p1:\n  TX PDUs: 1\n  RX PDUs: 2\n  RX Bad PDUs: 1\n") {
		t.Errorf("lacp/show-stats:\n%s", stats)
	}
	if h.log.count("bond0: received an unparsable LACP PDU.") != 1 {
		t.Errorf("bad PDU not logged")
	}
	if _, err := h.sw.LACPShow([]string{"nosuch"}); err == nil || err.Error() != "no such lacp object" {
		t.Errorf("lacp/show nosuch: %v", err)
	}
}

func TestLACPSpecProblems(t *testing.T) {
	d, p := bondDB("balance-tcp")
	if want := Build(d.rows); !strings.Contains(strings.Join(want.Problems, "\n"), "port bond0: bond_mode=balance-tcp needs LACP") {
		t.Errorf("balance-tcp without LACP not reported: %q", want.Problems)
	}
	mode := "passive"
	p.LACP = &mode
	p.OtherConfig = map[string]string{"lacp-system-id": "nonsense"}
	if want := Build(d.rows); !strings.Contains(strings.Join(want.Problems, "\n"), "port bond0: Invalid lacp-system-id (nonsense)") {
		t.Errorf("bad lacp-system-id not reported: %q", want.Problems)
	}
}

// TestLACPOneInterface: lacp=active on a port of one interface runs LACP
// (a PDU sent, lacp/show lists it, system priority 65535 as OVS's) but
// makes no bond: NORMAL gets a plain port that hands its slow protocols
// frames over, and bond/show and bond/list do not know it.
func TestLACPOneInterface(t *testing.T) {
	h := newHarness()
	d := &db{}
	d.bridge("br0", "p1", "p2")
	mode := "active"
	d.port("p1").LACP = &mode
	want := Build(d.rows)
	for _, pr := range want.Problems {
		if strings.Contains(pr, "LACP") || strings.Contains(pr, "lacp") {
			t.Errorf("problem %q", pr)
		}
	}
	h.sw.Apply(want)
	if len(h.backer.sent) != 1 {
		t.Fatalf("sent %d PDUs, want 1", len(h.backer.sent))
	}
	cfgs := h.backer.brs["br0"].cfgs
	for _, pc := range cfgs[len(cfgs)-1].Ports {
		if pc.Bond != "" || pc.LACP != (pc.Name == "p1") {
			t.Errorf("NORMAL got port %s: bond %q, LACP %t", pc.Name, pc.Bond, pc.LACP)
		}
	}
	show, err := h.sw.LACPShow([]string{"p1"})
	if err != nil || !strings.Contains(show, "---- p1 ----\n  status: active") || !strings.Contains(show, "  sys_priority: 65535\n") {
		t.Errorf("lacp/show p1: %v\n%s", err, show)
	}
	if _, err := h.sw.BondShow([]string{"p1"}); err == nil || err.Error() != "no such bond" {
		t.Errorf("bond/show p1: %v", err)
	}
	if got := h.sw.BondList(); got != "bond\ttype\trecircID\tmembers\n" {
		t.Errorf("bond/list: %q", got)
	}
}

// TestBondRebalanceInterval: bond-rebalance-interval is run, not
// reported; under 1000 ms it is 1000, 0 disables rebalancing (no next
// rebalance in bond/show); bond/migrate refuses as OVS's.
func TestBondRebalanceInterval(t *testing.T) {
	for _, c := range []struct {
		v    string
		want int
	}{{"", 10000}, {"500", 1000}, {"0", 0}, {"2500", 2500}} {
		d, p := bondDB("balance-slb")
		if c.v != "" {
			p.OtherConfig = map[string]string{"bond-rebalance-interval": c.v}
		}
		want := Build(d.rows)
		for _, pr := range want.Problems {
			if strings.Contains(pr, "rebalance") {
				t.Errorf("problem %q", pr)
			}
		}
		var got int
		for _, ps := range want.Bridges[0].Ports {
			if ps.Bond != nil {
				got = ps.Bond.RebalanceInterval
			}
		}
		if got != c.want {
			t.Errorf("bond-rebalance-interval=%q: %d, want %d", c.v, got, c.want)
		}
		h := newHarness()
		h.sw.Apply(want)
		show, _ := h.sw.BondShow(nil)
		if strings.Contains(show, "next rebalance: ") != (c.want != 0) {
			t.Errorf("bond-rebalance-interval=%q: bond/show\n%s", c.v, show)
		}
		for _, m := range []struct{ hash, member, err string }{
			{"1", "nosuch", "no such member"}, {"1a", "p1", "bad hash"},
		} {
			if _, err := h.sw.BondMigrate("bond0", m.hash, m.member); err == nil || err.Error() != m.err {
				t.Errorf("bond/migrate bond0 %s %s: %v, want %s", m.hash, m.member, err, m.err)
			}
		}
	}
	h := newHarness()
	d, _ := bondDB("active-backup")
	h.sw.Apply(Build(d.rows))
	if _, err := h.sw.BondMigrate("bond0", "1", "p1"); err == nil || err.Error() != "not an SLB bond" {
		t.Errorf("bond/migrate on active-backup: %v", err)
	}
}
