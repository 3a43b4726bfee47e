package ofproto

import (
	"testing"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// A flow mod whose actions work on a header its match does not give
// (dec_ttl without an IP match, OVS's inconsistent_match) is taken in
// OpenFlow 1.0 and refused from 1.1 on with OFPBAC_MATCH_INCONSISTENT,
// as OVS's ofpacts_check_consistency; with the match's IP type it is
// taken in every version. Packet-outs are checked the same way against
// their packet.
func TestFlowModConsistency(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2)}})
	decTTL := []ofp.Action{{Type: ofp.ActDecTTL}, output(2)}
	for _, tc := range []struct {
		v    ofp.Version
		ip   bool
		want bool
	}{
		{ofp.V10, false, true}, {ofp.V13, false, false}, {ofp.V15, false, false}, {ofp.V11, false, false},
		{ofp.V13, true, true}, {ofp.V10, true, true},
	} {
		s := fmSpec{prio: 10, actions: decTTL}
		if tc.ip {
			s.match = map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}}
		}
		fm := s.mod()
		fm.Version = tc.v
		err := br.FlowMod(fm)
		if ok := err == nil; ok != tc.want || (err != nil && err.Errno != ofp.MatchInconsistent) {
			t.Errorf("version %v, ip %v: %v, want taken %v", tc.v, tc.ip, err, tc.want)
		}
	}
	// A frame of another Ethernet type than IP's.
	frame := append(eth(macA, macB)[:12:12], 0x88, 0xb5, 0, 0, 0, 0)
	for v, want := range map[ofp.Version]bool{ofp.V10: true, ofp.V13: false} {
		po := &ofp.PacketOut{Header: ofp.Header{Version: v}, BufferID: ofp.NoBuffer, InPort: 1, Actions: decTTL, Data: frame}
		if err := br.PacketOut(po); (err == nil) != want || (err != nil && err.Errno != ofp.MatchInconsistent) {
			t.Errorf("packet-out of a non-IP frame with dec_ttl, version %v: %v, want taken %v", v, err, want)
		}
	}
	po := &ofp.PacketOut{Header: ofp.Header{Version: ofp.V13}, BufferID: ofp.NoBuffer, InPort: 1, Actions: decTTL, Data: eth(macA, macB)}
	if err := br.PacketOut(po); err != nil {
		t.Errorf("packet-out of an IP frame with dec_ttl, version 1.3: %v", err)
	}
}
