package ofproto

import (
	"net/netip"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Setting the TOS byte's bits is a masked datapath set of the bits
// written (as Debian's ovs-vswitchd traces it), none when they already
// hold the value; pkt_mark is set, matched by a later lookup, and shows
// as skb_mark.
func TestSetTOSAndMarkTranslation(t *testing.T) {
	tb, br := emptyTables(t)
	set := func(id ofp.FieldID, v ...byte) ofp.Action {
		m := make([]byte, len(v))
		for i := range m {
			m[i] = 0xff
		}
		return ofp.Action{Type: ofp.ActSetField, Field: ofp.FieldByID(id), Value: v, Mask: m}
	}
	ip := map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}, ofp.FieldInPort: {1, 0}}
	frame := func(tos uint8) []byte {
		return dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
			IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), TOS: tos},
			UDP:  &dptest.UDP{Src: 1, Dst: 2}}.Bytes()
	}
	for _, tc := range []struct {
		name string
		act  ofp.Action
		tos  uint8
		want string
	}{
		{"nw_tos", set(ofp.FieldIPTOS, 0x20), 0, "set(ipv4(tos=0x20/0xfc)),2"},
		{"ip_dscp", set(ofp.FieldIPDSCP, 5), 0xff, "set(ipv4(tos=0x14/0xfc)),2"},
		{"ip_ecn", set(ofp.FieldIPECN, 1), 0, "set(ipv4(tos=0x1/0x3)),2"},
		{"unchanged", set(ofp.FieldIPTOS, 0x20), 0x21, "2"},
	} {
		mustMod(t, br, fmSpec{prio: 10, match: ip, actions: []ofp.Action{tc.act, output(2)}})
		if got, _ := tb.xlate(1, frame(tc.tos)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	in2 := map[ofp.FieldID][2]uint64{ofp.FieldInPort: {2, 0}}
	mustMod(t, br, fmSpec{prio: 10, match: in2, actions: []ofp.Action{set(ofp.FieldPktMark, 0, 0, 0, 5), resubmitTo(1)}})
	mustMod(t, br, fmSpec{table: 1, prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldPktMark: {5, 0}}, actions: []ofp.Action{output(3)}})
	if got, _ := tb.xlate(2, frame(0)); got != "set(skb_mark(0x5)),3" {
		t.Errorf("pkt_mark: %s", got)
	}
	if err := br.FlowMod(fmSpec{actions: []ofp.Action{set(ofp.FieldIPDSCP, 1), output(1)}}.mod()); err == nil || err.Errno != ofp.MatchInconsistent {
		t.Errorf("ip_dscp without ip: %v", err)
	}
}

// A set of some bits of a field (a masked set_field, a load of a bit
// range) is a full-value set action in govs' datapath: the datapath flow
// matches the whole field, so that a packet with other bits there is not
// given this packet's (OVS unwildcards the same without masked sets).
func TestPartialSetMatchesWholeField(t *testing.T) {
	tb, br := emptyTables(t)
	udpDst := ofp.FieldByID(ofp.FieldUDPDst)
	mustMod(t, br, fmSpec{match: map[ofp.FieldID][2]uint64{ofp.FieldEthType: {0x800, 0}, ofp.FieldIPProto: {17, 0}},
		actions: []ofp.Action{ofp.LoadAction(udpDst, []byte{0x01, 0x00}, []byte{0xff, 0x00}), output(2)}})
	got, mask := tb.xlate(1, ipFrame(0, 64, false))
	if got != "set(udp(dst=258)),2" {
		t.Errorf("actions %s, want set(udp(dst=258)),2", got)
	}
	if mask.TpDst != 0xffff {
		t.Errorf("megaflow tp_dst mask %#x, want 0xffff", mask.TpDst)
	}
}

// An ARP packet with opcode 0 has no header to set (OVS's
// commit_set_nw_action checks nw_proto): no set(arp(...)), and the flow
// matches the opcode; with an opcode the set is there.
func TestNoL3SetWithoutProto(t *testing.T) {
	tb, br := emptyTables(t)
	mustMod(t, br, fmSpec{match: map[ofp.FieldID][2]uint64{ofp.FieldEthType: {0x806, 0}},
		actions: []ofp.Action{ofp.LoadAction(ofp.FieldByID(ofp.FieldARPTPA), []byte{1, 2, 3, 4}, []byte{0xff, 0xff, 0xff, 0xff}), output(2)}})
	arp := func(op uint16) []byte {
		return dptest.Frame{Src: dptest.MAC(macB), Dst: dptest.MAC(macA), ARP: &dptest.ARP{Op: op,
			SPA: netip.MustParseAddr("10.0.0.1"), TPA: netip.MustParseAddr("10.0.0.2")}}.Bytes()
	}
	got, mask := tb.xlate(1, arp(0))
	if got != "2" || mask.NwProto != 0xff {
		t.Errorf("opcode 0: %s, nw_proto mask %#x; want 2 and 0xff", got, mask.NwProto)
	}
	if got, _ := tb.xlate(1, arp(1)); got != "set(arp(tip=1.2.3.4)),2" {
		t.Errorf("opcode 1: %s, want set(arp(tip=1.2.3.4)),2", got)
	}
}

// A set of an IP header field consults nw_proto, as OVS's
// mf_set_mask_l3_prereqs (OXM's ip_dscp aside), so that a megaflow of a
// packet with an IP protocol, which sets the field, is not used for one
// without, which has no header to set; and the flow of a packet without
// one matches that it has none, whichever field the set writes (for OXM's
// ip_dscp OVS leaves that out, and its megaflow then skips the set for
// later packets with a protocol; govs' does not).
func TestL3SetConsultsProto(t *testing.T) {
	for _, tt := range []struct {
		field     ofp.FieldID
		val       byte
		wantTCP   string
		protoMask uint8 // for the TCP packet
	}{
		{ofp.FieldIPECN, 1, "set(ipv4(tos=0x1/0x3)),2", 0xff},
		{ofp.FieldIPTOS, 0x20, "set(ipv4(tos=0x20/0xfc)),2", 0xff},
		{ofp.FieldIPDSCP, 0x10, "set(ipv4(tos=0x40/0xfc)),2", 0},
	} {
		tb, br := emptyTables(t)
		mustMod(t, br, fmSpec{match: map[ofp.FieldID][2]uint64{ofp.FieldEthType: {0x800, 0}},
			actions: []ofp.Action{ofp.LoadAction(ofp.FieldByID(tt.field), []byte{tt.val}, []byte{0xff}), output(2)}})
		frame := func(proto uint8) []byte {
			f := dptest.Frame{Src: dptest.MAC(macB), Dst: dptest.MAC(macA),
				IPv4:    &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), TTL: 64, Proto: proto},
				Payload: make([]byte, 20)}
			if proto == 6 {
				f.TCP, f.Payload = &dptest.TCP{Src: 1, Dst: 2}, nil
			}
			return f.Bytes()
		}
		name := ofp.FieldByID(tt.field).Name
		if got, mask := tb.xlate(1, frame(6)); got != tt.wantTCP || mask.NwProto != tt.protoMask {
			t.Errorf("%s, tcp: %s, nw_proto mask %#x; want %s and %#x", name, got, mask.NwProto, tt.wantTCP, tt.protoMask)
		}
		if got, mask := tb.xlate(1, frame(0)); got != "2" || mask.NwProto != 0xff {
			t.Errorf("%s, protocol 0: %s, nw_proto mask %#x; want 2 and 0xff", name, got, mask.NwProto)
		}
	}
}
