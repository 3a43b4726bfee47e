package ofproto

import (
	"fmt"
	"math/rand"
	"net/netip"
	"strings"
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
// range) is a masked set in govs' datapath, as in OVS's netdev datapath:
// it writes only those bits, so the datapath flow matches only those (the
// packet's other bits are left as they are); a set of the whole field is
// a whole set.
func TestPartialSetIsMasked(t *testing.T) {
	tb, br := emptyTables(t)
	udpDst := ofp.FieldByID(ofp.FieldUDPDst)
	mustMod(t, br, fmSpec{match: map[ofp.FieldID][2]uint64{ofp.FieldEthType: {0x800, 0}, ofp.FieldIPProto: {17, 0}},
		actions: []ofp.Action{ofp.LoadAction(udpDst, []byte{0x01, 0x00}, []byte{0xff, 0x00}), output(2)}})
	got, mask := tb.xlate(1, ipFrame(0, 64, false))
	if got != "set(udp(dst=256/0xff00)),2" {
		t.Errorf("actions %s, want set(udp(dst=256/0xff00)),2", got)
	}
	if mask.TpDst != 0xff00 {
		t.Errorf("megaflow tp_dst mask %#x, want 0xff00", mask.TpDst)
	}
	mustMod(t, br, fmSpec{match: map[ofp.FieldID][2]uint64{ofp.FieldEthType: {0x800, 0}, ofp.FieldIPProto: {17, 0}},
		actions: []ofp.Action{ofp.LoadAction(udpDst, []byte{0x01, 0x00}, []byte{0xff, 0xff}), output(2)}})
	got, mask = tb.xlate(1, ipFrame(0, 64, false))
	if got != "set(udp(dst=256)),2" || mask.TpDst != 0xffff {
		t.Errorf("whole set: actions %s, tp_dst mask %#x; want set(udp(dst=256)),2 and 0xffff", got, mask.TpDst)
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

// TestMaskedSetMegaflows: with rules that write some bits of ports,
// addresses and MACs, a packet that matches a megaflow installed for
// another gets the same actions from a fresh translation (the sets' values
// are the written bits, the same for every packet of the megaflow), and
// the megaflows, which match only those bits, serve many packets.
func TestMaskedSetMegaflows(t *testing.T) {
	tb, br := emptyTables(t)
	field := ofp.FieldByID
	ipProto := func(p uint64) map[ofp.FieldID][2]uint64 {
		return map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}, ofp.FieldIPProto: {p, 0}}
	}
	mustMod(t, br, fmSpec{prio: 20, match: ipProto(6), actions: []ofp.Action{
		ofp.LoadAction(field(ofp.FieldTCPDst), []byte{0, 5}, []byte{0, 0x0f}),
		ofp.LoadAction(field(ofp.FieldIPv4Src), []byte{0, 0, 0, 9}, []byte{0, 0, 0, 0xff}), output(2)}})
	mustMod(t, br, fmSpec{prio: 15, match: ipProto(17), actions: []ofp.Action{
		ofp.LoadAction(field(ofp.FieldUDPSrc), []byte{1, 0}, []byte{0xff, 0}),
		ofp.LoadAction(field(ofp.FieldEthSrc), []byte{0, 0, 0, 0, 0xab, 0xcd}, []byte{0, 0, 0, 0, 0xff, 0xff}), output(3)}})
	mustMod(t, br, fmSpec{prio: 5, match: map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeARP, 0}}, actions: []ofp.Action{
		ofp.LoadAction(field(ofp.FieldARPTPA), []byte{0, 0, 0, 7}, []byte{0, 0, 0, 0xff}), output(2)}})
	rng := rand.New(rand.NewSource(2))
	frame := func() []byte {
		src := dptest.MAC(fmt.Sprintf("00:00:00:00:%02x:%02x", rng.Intn(4), rng.Intn(4)))
		addr := func() netip.Addr { return netip.AddrFrom4([4]byte{10, 0, byte(rng.Intn(3)), byte(rng.Intn(5))}) }
		f := dptest.Frame{Src: src, Dst: dptest.MAC(macA)}
		switch rng.Intn(3) {
		case 0:
			f.IPv4, f.TCP = &dptest.IPv4{Src: addr(), Dst: addr()}, &dptest.TCP{Src: uint16(rng.Intn(200)), Dst: uint16(rng.Intn(200))}
		case 1:
			f.IPv4, f.UDP = &dptest.IPv4{Src: addr(), Dst: addr()}, &dptest.UDP{Src: uint16(rng.Intn(2000)), Dst: 53}
		default:
			f.ARP = &dptest.ARP{Op: 1, SHA: src, SPA: addr(), TPA: addr()}
		}
		return f.Bytes()
	}
	hits, megaflows, _ := megaflowProperty(t, tb, 2000, func() (k flow.Key) {
		flow.Extract(frame(), 1, &k)
		return k
	}, func(k flow.Key, acts string) {
		if !strings.Contains(acts, "/") {
			t.Fatalf("%v: %s, want masked sets", k, acts)
		}
	})
	if hits < 1500 {
		t.Errorf("only %d of 2000 packets hit one of %d megaflows", hits, megaflows)
	}
	t.Logf("%d megaflows served %d packets", megaflows, hits)
}
