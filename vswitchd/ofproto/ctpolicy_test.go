package ofproto

import (
	"slices"
	"testing"

	"github.com/govs/govs/datapath/conntrack"
)

// TestCTZonePolicies: zones with the same policy share one ID, the lowest
// free from 1; a zone given another policy takes a new ID and the policy
// no zone uses leaves the tracker; without zones nothing is left.
func TestCTZonePolicies(t *testing.T) {
	tb := newTestBacker(t)
	tr := tb.dp.Conntrack()
	a := conntrack.TimeoutPolicy{"udp_first": 1}
	b := conntrack.TimeoutPolicy{"udp_first": 2}
	check := func(what string, zones map[uint16]uint32, ids []uint32) {
		t.Helper()
		for z, want := range zones {
			if got := tb.ctTimeoutPolicy(z); got != want {
				t.Errorf("%s: zone %d has policy %d, want %d", what, z, got, want)
			}
		}
		if got := tr.TimeoutPolicies(); !slices.Equal(got, ids) {
			t.Errorf("%s: tracker policies %v, want %v", what, got, ids)
		}
	}
	if errs := tb.SetCTZonePolicies(map[uint16]conntrack.TimeoutPolicy{5: a, 6: a, 7: b}); errs != nil {
		t.Fatal(errs)
	}
	check("set", map[uint16]uint32{5: 1, 6: 1, 7: 2, 0: 0}, []uint32{1, 2})
	tb.SetCTZonePolicies(map[uint16]conntrack.TimeoutPolicy{5: b, 6: b, 7: b})
	check("all b", map[uint16]uint32{5: 2, 6: 2, 7: 2}, []uint32{2})
	tb.SetCTZonePolicies(map[uint16]conntrack.TimeoutPolicy{5: a, 7: b})
	check("a again", map[uint16]uint32{5: 1, 6: 0, 7: 2}, []uint32{1, 2})
	if errs := tb.SetCTZonePolicies(map[uint16]conntrack.TimeoutPolicy{5: {"bogus": 1}}); len(errs) != 1 {
		t.Errorf("bad attribute: errors %v, want one", errs)
	}
	check("refused", map[uint16]uint32{5: 0, 7: 0}, nil)
	tb.SetCTZonePolicies(nil)
	check("none", map[uint16]uint32{5: 0}, nil)
}
