package ofp

import (
	"strings"
	"testing"
)

// TestConjunctionCodec: conjunction actions and conj_id matches decode
// from and encode to what Debian's ovs-ofctl reads, and malformed ones
// get OVS's NXBAC_BAD_CONJUNCTION.
func TestConjunctionCodec(t *testing.T) {
	print := func(b []byte) string { return ofpPrint(t, b) }
	acts := []Action{{Type: ActConjunction, ID: 7, Clause: 1, NClauses: 3}, {Type: ActConjunction, ID: 0xfffffffe, Clause: 0, NClauses: 64}}
	wire := AppendActions(nil, V13, acts)
	back, err := DecodeActions(V13, wire)
	if err != nil || len(back) != 2 || back[0].ID != 7 || back[0].Clause != 1 || back[0].NClauses != 3 || back[1].NClauses != 64 {
		t.Fatalf("round trip: %v %+v", err, back)
	}
	var m Match
	fields[FieldConjID].SetMasked(&m.Flow, []byte{0, 0, 0, 7}, []byte{255, 255, 255, 255})
	fields[FieldConjID].SetMasked(&m.Mask, []byte{255, 255, 255, 255}, []byte{255, 255, 255, 255})
	for _, v := range []Version{V10, V13, V15} {
		out := print(one(t, EncodeFlowStatsReply(v, 1, v == V10, []FlowStats{
			{Match: m, Actions: []Action{{Type: ActOutput, Port: 2}}}, {Actions: acts}})))
		for _, want := range []string{"priority=0,conj_id=7 actions=output:2", "priority=0 actions=conjunction(7,2/3),conjunction(4294967294,1/64)"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: no %q in\n%s", v, want, out)
			}
		}
	}
	for _, bad := range [][2]uint8{{0, 1}, {2, 2}, {0, 65}} {
		b := appendConjunction(nil, &Action{ID: 1, Clause: bad[0], NClauses: bad[1]})
		if _, err := DecodeActions(V13, b); err == nil || err.Errno != BadConjunction {
			t.Errorf("clause %d of %d: %v, want NXBAC_BAD_CONJUNCTION", bad[0], bad[1], err)
		}
	}
	if err := CheckConjunction([]Action{acts[0], {Type: ActOutput, Port: 1}}); err == nil || err.Errno != BadConjunction {
		t.Errorf("conjunction with output: %v", err)
	}
	for _, v := range []Version{V10, V13} {
		if out := print(EncodeError(v, 1, BadConjunction, make([]byte, 8))); !strings.Contains(out, "NXBAC_BAD_CONJUNCTION") {
			t.Errorf("%s error:\n%s", v, out)
		}
	}
}
