package ofproto

import (
	"strings"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/vswitchd/rstp"
)

func TestSTPGate(t *testing.T) {
	tb := newTestBacker(t)
	discarding := trunk("p3", 3)
	discarding.STP = STPGate{NoLearn: true, NoForward: true}
	learning := trunk("p4", 4)
	learning.STP = STPGate{NoForward: true}
	br := tb.bridge("br0", BridgeConfig{RSTP: true, Ports: []PortConfig{
		trunk("p1", 1), trunk("p2", 2), discarding, learning,
	}})
	bpdu := rstp.Frame([6]byte(dptest.MAC(macA)), rstp.BPDU{Type: rstp.TypeTCN}.Encode())
	tb.run(t, []step{
		{1, eth(macA, bcast), "2"},                   // floods skip ports not forwarding
		{3, eth(macC, bcast), "drop"},                // a discarding port drops what it receives
		{4, eth(macD, macA), "drop"},                 // a learning port learns, forwards nothing
		{1, eth(macA, macD), "drop"},                 // D was learned on p4, which does not forward
		{1, eth(macA, macC), "2"},                    // C was not learned on p3
		{3, bpdu, "userspace(pid=0,slow_path(stp))"}, // BPDUs go to RSTP in any state
		{1, bpdu, "userspace(pid=0,slow_path(stp))"},
	})
	if got := br.FDBShow(); !strings.Contains(got, "00:00:00:00:00:0d") || strings.Contains(got, "00:00:00:00:00:0c") {
		t.Errorf("fdb/show:\n%s", got)
	}
	br.FDBFlushPort("p4")
	if got := br.FDBShow(); strings.Contains(got, "00:00:00:00:00:0d") {
		t.Errorf("after FDBFlushPort(p4):\n%s", got)
	}

	// Without RSTP a BPDU is a reserved address: NORMAL drops it.
	br.Reconfigure(BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2)}})
	tb.run(t, []step{{1, bpdu, "drop"}, {1, eth(macA, bcast), "2"}})
}
