package ofproto

import (
	"testing"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// check_pkt_larger as OVN's router MTU check uses it: the rest of the
// rule, and the goto_table after it, translated once per branch under one
// check_pkt_len; an enclosing list goes on after it, and as a rule's last
// action it still checks, as Debian's ovs-vswitchd translates it; the mask
// reads no length.
func TestCheckPktLargerTranslation(t *testing.T) {
	tb, br := emptyTables(t)
	bit := ofp.FieldRef{Field: ofp.FieldByID(ofp.FieldReg0), Ofs: 3, NBits: 1}
	cpl := ofp.Action{Type: ofp.ActCheckPktLarger, PktLen: 200, Dst: bit}
	in := func(p uint64) map[ofp.FieldID][2]uint64 { return map[ofp.FieldID][2]uint64{ofp.FieldInPort: {p, 0}} }
	mustMod(t, br, fmSpec{prio: 10, match: in(1), actions: []ofp.Action{cpl, {Type: ofp.ActGotoTable, Table: 1}}})
	mustMod(t, br, fmSpec{table: 1, prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldReg0: {8, 8}}, actions: []ofp.Action{output(2)}})
	mustMod(t, br, fmSpec{table: 1, prio: 5, actions: []ofp.Action{output(3)}})
	got, mask := tb.xlate(1, eth(macA, macB))
	if want := "check_pkt_len(size=200,gt(2),le(3))"; got != want {
		t.Errorf("goto after check: %s, want %s", got, want)
	}
	if mask.IPv4Src != [4]byte{} || mask.TpSrc != 0 {
		t.Errorf("mask reads fields no rule consulted: %+v", mask)
	}

	// In a resubmitted rule: the actions after the resubmit run too.
	mustMod(t, br, fmSpec{prio: 10, match: in(2), actions: []ofp.Action{resubmitTo(2), output(1)}})
	mustMod(t, br, fmSpec{table: 2, prio: 10, actions: []ofp.Action{cpl, resubmitTo(1)}})
	if got, _ := tb.xlate(2, eth(macA, macB)); got != "check_pkt_len(size=200,gt(drop),le(3)),1" {
		t.Errorf("resubmit: %s", got)
	}
	// Last action of the rule and the translation: empty branches.
	mustMod(t, br, fmSpec{prio: 10, match: in(3), actions: []ofp.Action{output(1), cpl}})
	if got, _ := tb.xlate(3, eth(macA, macB)); got != "1,check_pkt_len(size=200,gt(drop),le(drop))" {
		t.Errorf("last: %s", got)
	}
	// A set field before it is committed before the check.
	setSrc := ofp.Action{Type: ofp.ActSetField, Field: ofp.FieldByID(ofp.FieldEthSrc), Value: []byte{0, 0, 0, 0, 0, 9}, Mask: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	mustMod(t, br, fmSpec{prio: 20, match: in(1), actions: []ofp.Action{setSrc, cpl, output(2)}})
	if got, _ := tb.xlate(1, eth(macA, macB)); got != "set(eth(src=00:00:00:00:00:09)),check_pkt_len(size=200,gt(2),le(2))" {
		t.Errorf("commit before: %s", got)
	}
	// A destination govs cannot set is refused.
	bad := cpl
	bad.Dst = ofp.FieldRef{Field: ofp.FieldByID(ofp.FieldCtMark), NBits: 1}
	if err := br.FlowMod(fmSpec{actions: []ofp.Action{bad, output(1)}}.mod()); err == nil || err.Errno != ofp.BadSetType {
		t.Errorf("check_pkt_larger to ct_mark: %v", err)
	}
}
