package ofp

import (
	"encoding/binary"
	"testing"
)

// TestTableStats11 checks the OpenFlow 1.1 and 1.2 table statistics'
// layout (ofp11_table_stats, ofp12_table_stats); their contents were
// checked with Debian's `ovs-ofctl ofp-print` against Debian's
// dump-tables.
func TestTableStats11(t *testing.T) {
	for _, tc := range []struct {
		v       Version
		size    int
		instOfs int
	}{{V11, 88, 48}, {V12, 128, 96}} {
		ts := []TableStats{{ID: 0, Active: 2, MaxEntries: 1000000}, {ID: 1, Lookup: 5, Matched: 3, MaxEntries: 1000000}}
		m := one(t, EncodeTableStatsReply(tc.v, 2, ts))
		body := m[16:]
		if len(body) != 2*tc.size {
			t.Fatalf("%s: %d bytes of body", tc.v, len(body))
		}
		last := body[tc.size:]
		if last[0] != 1 || binary.BigEndian.Uint64(last[tc.size-16:]) != 5 || binary.BigEndian.Uint64(last[tc.size-8:]) != 3 ||
			binary.BigEndian.Uint32(body[tc.size-20:]) != 2 {
			t.Errorf("%s: counters in %x", tc.v, body)
		}
		// Only the last table lacks goto_table.
		if binary.BigEndian.Uint32(body[tc.instOfs:]) != tableInstructions || binary.BigEndian.Uint32(last[tc.instOfs:]) != tableInstructions&^instGotoTable {
			t.Errorf("%s: instructions in %x", tc.v, body)
		}
	}
}
