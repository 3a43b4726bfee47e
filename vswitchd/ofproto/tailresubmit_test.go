package ofproto

import (
	"strings"
	"testing"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// TestTailResubmitAsNested checks a translation, whose table walk goes
// on in its loop with a resubmit that ends a rule's actions, against a
// trace of the same packet, whose resubmits nest: the same datapath
// actions, with in_port, the rule and the depth restored as the nested
// resubmits restore them.
func TestTailResubmitAsNested(t *testing.T) {
	in := func(p uint32) map[ofp.FieldID][2]uint64 {
		return map[ofp.FieldID][2]uint64{ofp.FieldInPort: {uint64(p), 0}}
	}
	resubmit := func(port uint32, table uint8) ofp.Action {
		return ofp.Action{Type: ofp.ActResubmit, Port: port, Table: table}
	}
	inPort := output(ofp.PortInPort)
	for _, tc := range []struct {
		name string
		mods []fmSpec
		want string
	}{
		{"action set after a walk that changed in_port", []fmSpec{
			{prio: 1, match: in(1), actions: []ofp.Action{writeActs(inPort), resubmit(3, 1)}},
			{table: 1, prio: 1, match: in(3), actions: []ofp.Action{resubmitTo(2)}},
			{table: 2, prio: 1, actions: []ofp.Action{output(2)}},
		}, "2,1"},
		{"the rest of a list after a nested walk", []fmSpec{
			{prio: 1, actions: []ofp.Action{resubmitTo(1), inPort}},
			{table: 1, prio: 1, match: in(1), actions: []ofp.Action{resubmit(2, 2)}},
			{table: 2, prio: 1, match: in(2), actions: []ofp.Action{resubmit(3, 3)}},
			{table: 3, prio: 1, match: in(3), actions: []ofp.Action{inPort, resubmitTo(4)}},
			{table: 4, prio: 1, actions: []ofp.Action{output(2)}},
		}, "3,2,1"},
		{"goto_table and resubmits", []fmSpec{
			{prio: 1, actions: []ofp.Action{{Type: ofp.ActGotoTable, Table: 1}}},
			{table: 1, prio: 1, actions: []ofp.Action{resubmit(2, 2)}},
			{table: 2, prio: 1, match: in(2), actions: []ofp.Action{{Type: ofp.ActGotoTable, Table: 3}}},
			{table: 3, prio: 1, match: in(2), actions: []ofp.Action{resubmit(3, 1)}},
			{table: 1, prio: 2, match: in(3), actions: []ofp.Action{output(2)}},
		}, "2"},
		{"over the depth limit", []fmSpec{
			{prio: 1, actions: []ofp.Action{output(3), resubmitTo(1)}},
			{table: 1, prio: 1, actions: []ofp.Action{resubmitTo(1)}},
		}, "3"},
		{"a miss after a resubmit", []fmSpec{
			{prio: 1, actions: []ofp.Action{resubmitTo(1), output(2)}},
			{table: 1, prio: 1, actions: []ofp.Action{resubmitTo(7)}},
		}, "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := newTestBacker(t)
			br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}})
			mustMod(t, br, fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll})
			for _, s := range tc.mods {
				mustMod(t, br, s)
			}
			got, _ := tb.xlate(1, eth(macA, macB))
			out, err := tb.Trace("br0", "in_port=1,udp,dl_src="+macA+",dl_dst="+macB+",nw_src=10.0.0.1,nw_dst=10.0.0.2,udp_src=1,udp_dst=2")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "\nDatapath actions: "+got+"\n") {
				t.Errorf("translation %s, trace:\n%s", got, out)
			}
			if got != tc.want {
				t.Errorf("actions %s, want %s", got, tc.want)
			}
		})
	}
}
