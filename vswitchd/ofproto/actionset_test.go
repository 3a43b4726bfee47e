package ofproto

import (
	"testing"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

func writeActs(acts ...ofp.Action) ofp.Action {
	return ofp.Action{Type: ofp.ActWriteActions, Nested: acts}
}

// The action set runs in OVS's order, one action of each slot (the last
// written), every set-field in the order written, and only the group when
// both a group and an output are written; without either, nothing.
func TestActionSetList(t *testing.T) {
	pop, push, dec := ofp.Action{Type: ofp.ActPopVLAN}, ofp.Action{Type: ofp.ActPushVLAN, VLAN: 0x8100}, ofp.Action{Type: ofp.ActDecTTL}
	vid := func(v uint16) ofp.Action { return ofp.Action{Type: ofp.ActSetVLANVID, VLAN: v} }
	group := ofp.Action{Type: ofp.ActGroup, ID: 1}
	for _, tc := range []struct {
		set  []ofp.Action
		want string
	}{
		{[]ofp.Action{output(1), vid(5), dec, push, pop}, "pop_vlan,push_vlan:0x8100,dec_ttl,mod_vlan_vid:5,output:1"},
		{[]ofp.Action{vid(5), output(1), vid(6), output(2)}, "mod_vlan_vid:5,mod_vlan_vid:6,output:2"},
		{[]ofp.Action{group, output(2)}, "group:1"},
		{[]ofp.Action{output(2), group}, "group:1"},
		{[]ofp.Action{vid(5), dec}, ""},
		{nil, ""},
	} {
		if got := formatActionSet(tc.set); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.set, got, tc.want)
		}
	}
}

// Actions written across goto_table and resubmit run at the end of the
// walk (not after an exit); clear_actions forgets them; what an action set
// may not hold is refused as OVS refuses it.
func TestActionSetTranslation(t *testing.T) {
	tb, br := emptyTables(t)
	in := func(p uint64) map[ofp.FieldID][2]uint64 { return map[ofp.FieldID][2]uint64{ofp.FieldInPort: {p, 0}} }
	gotoT := func(t uint8) ofp.Action { return ofp.Action{Type: ofp.ActGotoTable, Table: t} }
	clear := ofp.Action{Type: ofp.ActClearActions}
	mustMod(t, br, fmSpec{prio: 10, match: in(1), actions: []ofp.Action{writeActs(output(2)), gotoT(1)}})
	mustMod(t, br, fmSpec{table: 1, prio: 10, match: in(1), actions: []ofp.Action{output(3), resubmitTo(2)}})
	mustMod(t, br, fmSpec{table: 2, prio: 10, actions: []ofp.Action{writeActs(output(3)), {Type: ofp.ActExit}}})
	mustMod(t, br, fmSpec{prio: 10, match: in(2), actions: []ofp.Action{writeActs(output(1)), gotoT(3)}})
	mustMod(t, br, fmSpec{table: 3, prio: 10, actions: []ofp.Action{clear, output(3)}})
	mustMod(t, br, fmSpec{prio: 10, match: in(3), actions: []ofp.Action{writeActs(output(1)), {Type: ofp.ActClone, Nested: []ofp.Action{writeActs(output(2))}}}})
	for _, tc := range []struct {
		in   uint32
		want string
	}{
		{1, "3"}, // the apply-actions output; the exit drops the set
		{2, "3"}, // cleared
		{3, "1"}, // a clone's writes end with it
	} {
		if got, _ := tb.xlate(tc.in, eth(macA, macB)); got != tc.want {
			t.Errorf("in_port %d: %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, bad := range []ofp.Action{{Type: ofp.ActExit}, {Type: ofp.ActController, Port: 7}, {Type: ofp.ActClone}} {
		err := br.FlowMod(fmSpec{actions: []ofp.Action{writeActs(bad)}}.mod())
		if err == nil || err.Errno != ofp.BadActionType {
			t.Errorf("write_actions(%s): %v, want OFPBAC_BAD_TYPE", formatAction(&bad), err)
		}
	}
}
