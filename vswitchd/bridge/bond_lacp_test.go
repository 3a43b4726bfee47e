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
