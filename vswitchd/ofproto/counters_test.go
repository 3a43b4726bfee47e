package ofproto

import (
	"fmt"
	"testing"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// TestRuleCountersFromDatapath: packets that the datapath forwards by an
// installed megaflow count, once a revalidation pass ran, in every rule
// and table their translation went through, with their bytes, as OVS's
// xlate cache pushes datapath stats; a miss counts a lookup, no match.
func TestRuleCountersFromDatapath(t *testing.T) {
	r := newSwitchRig(t, 2)
	br := r.b.AddBridge("br0")
	br.Reconfigure(BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2)}})
	mustMod(t, br, fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll})
	mustMod(t, br, fmSpec{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {1, 0}}, actions: []ofp.Action{resubmitTo(1)}})
	mustMod(t, br, fmSpec{table: 1, actions: []ofp.Action{output(2)}})
	frame := eth(macA, macB)
	const n = 10
	for range n {
		// One batch each: the first is the miss, the rest hit the
		// megaflow it installed.
		r.send(t, 1, frame)
	}
	r.send(t, 2, eth(macB, macA)) // no flow for in_port=2
	r.dp.Revalidate()
	want := fmt.Sprintf("packets=%d bytes=%d", n, n*len(frame))
	for _, f := range br.Flows() {
		if got := fmt.Sprintf("packets=%d bytes=%d", f.Packets, f.Bytes); got != want {
			t.Errorf("%s: %s, want %s", ruleTitleStats(f), got, want)
		}
	}
	for id, w := range [][2]uint64{{n + 1, n}, {n, n}, {0, 0}} {
		if l, m := br.TableCounts(uint8(id)); l != w[0] || m != w[1] {
			t.Errorf("table %d: lookup=%d matched=%d, want %d and %d", id, l, m, w[0], w[1])
		}
	}
	// Stats already pushed are not pushed again.
	r.dp.Revalidate()
	if l, _ := br.TableCounts(0); l != n+1 {
		t.Errorf("table 0 after a second pass: lookup=%d, want %d", l, n+1)
	}
}
