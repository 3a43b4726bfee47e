package ofproto

import (
	"strings"
	"testing"

	"github.com/govs/govs/datapath"
)

// TestSpanningTreeGates: with a spanning tree on the bridge, BPDUs go to
// the protocol (or are sunk on a port without it), a discarding port
// neither learns nor forwards nor receives floods, a learning port learns
// but forwards nothing, and a forwarding one works as without a tree;
// closing a port's gate forgets what it learned.
func TestSpanningTreeGates(t *testing.T) {
	tb := newTestBacker(t)
	ports := func(g2, g3 PortGate) []PortConfig {
		p1, p2, p3 := trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)
		p1.Gate, p2.Gate, p3.Gate = GateForward, g2, g3
		return []PortConfig{p1, p2, p3, {Name: "br0", OFPort: LocalOFPort, DPPort: 4, Tag: -1}}
	}
	br := tb.bridge("br0", BridgeConfig{SpanningTree: "STP", Ports: ports(GateDiscard, GateLearn)})
	bpdu := datapath.Actions{datapath.Userspace(datapath.CookieSlowPath | datapath.CookieSlowPathSTP | 1)}.String()
	if bpdu != "userspace(pid=0,slow_path(stp))" {
		t.Errorf("BPDU action prints %s", bpdu)
	}
	tb.run(t, []step{
		{1, eth(macA, "01:80:c2:00:00:00"), bpdu},   // to STP, with the port
		{4, eth(macA, "01:80:c2:00:00:00"), "drop"}, // the local port runs no STP
		{1, eth(macA, bcast), "4"},                  // 2 discards, 3 learns: neither floods
		{2, eth(macB, bcast), "drop"},               // discarding: not even learned
		{3, eth(macC, bcast), "drop"},               // learning: learned, dropped
		{1, eth(macA, macB), "4"},                   // B unknown: flooded
		{1, eth(macA, macC), "drop"},                // C on 3, which does not forward
	})
	if got := br.FDBShow(); strings.Contains(got, "00:00:00:00:00:0b") || !strings.Contains(got, "00:00:00:00:00:0c") {
		t.Errorf("fdb/show:\n%s", got)
	}
	// The tree settles: 3 forwards, 2 stays discarding.
	br.Reconfigure(BridgeConfig{SpanningTree: "STP", Ports: ports(GateDiscard, GateForward)})
	tb.run(t, []step{
		{1, eth(macA, macC), "3"},
		{3, eth(macC, bcast), "1,4"},
	})
	// 3 blocks again: what it learned goes.
	br.Reconfigure(BridgeConfig{SpanningTree: "STP", Ports: ports(GateDiscard, GateDiscard)})
	if got := br.FDBShow(); strings.Contains(got, "00:00:00:00:00:0c") {
		t.Errorf("fdb/show after 3 blocked:\n%s", got)
	}
	// Without a tree the gates are open and BPDUs reserved.
	br.Reconfigure(BridgeConfig{Ports: ports(GateDiscard, GateDiscard)})
	tb.run(t, []step{
		{1, eth(macA, "01:80:c2:00:00:00"), "drop"},
		{2, eth(macB, bcast), "1,3,4"},
	})
}
