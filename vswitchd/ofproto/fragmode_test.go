package ofproto

import (
	"testing"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// The fragment handling modes, as OVS's rule_dpif_lookup_from_table
// applies them: "normal" hides a first fragment's UDP port from the
// tables, "nx-match" shows it, "drop" drops every fragment; unfragmented
// packets are the same in every mode.
func TestFragHandling(t *testing.T) {
	tb, br := emptyTables(t)
	udp := map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}, ofp.FieldIPProto: {flow.IPProtoUDP, 0}}
	dns := map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}, ofp.FieldIPProto: {flow.IPProtoUDP, 0}, ofp.FieldUDPDst: {53, 0}}
	mustMod(t, br, fmSpec{prio: 10, match: dns, actions: []ofp.Action{output(2)}})
	mustMod(t, br, fmSpec{prio: 5, match: udp, actions: []ofp.Action{output(3)}})
	key := func(frag uint8) flow.Key {
		k := flow.Key{InPort: 1, EthType: flow.EthTypeIPv4, NwProto: flow.IPProtoUDP, NwTTL: 64, NwFrag: frag}
		if frag&flow.FragLater == 0 {
			k.TpSrc, k.TpDst = 1, 53
		}
		return k
	}
	actions := func(frag uint8) string {
		u := []datapath.Upcall{{Key: key(frag)}}
		tb.Revalidate(u)
		return u[0].Actions.String()
	}
	first, later := uint8(flow.FragAny), uint8(flow.FragAny|flow.FragLater)
	for _, tc := range []struct {
		mode             uint8
		no, first, later string
	}{
		{ofp.FragNormal, "2", "3", "3"},
		{ofp.FragNXMatch, "2", "2", "3"},
		{ofp.FragDrop, "2", "drop", "drop"},
		{ofp.FragNormal, "2", "3", "3"},
	} {
		br.SetFragHandling(tc.mode)
		if got := br.FragHandling(); got != tc.mode {
			t.Fatalf("mode %d after setting %d", got, tc.mode)
		}
		for _, c := range []struct {
			frag uint8
			want string
		}{{0, tc.no}, {first, tc.first}, {later, tc.later}} {
			if got := actions(c.frag); got != c.want {
				t.Errorf("%s, nw_frag %d: actions %q, want %q", ofp.FragName(tc.mode), c.frag, got, c.want)
			}
		}
	}
	// Reassembly is OVS's unsupported mode: nothing changes.
	br.SetFragHandling(ofp.FragReasm)
	if got := br.FragHandling(); got != ofp.FragNormal {
		t.Errorf("mode %s after asking for reassemble", ofp.FragName(got))
	}
}
