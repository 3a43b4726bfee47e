package tunnel

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// innerFrame is a small inner Ethernet frame (an ARP request).
var innerFrame = mustHexT("ffffffffffff 020000000011 0806 0001 0800 06 04 0001 020000000011 c0a80001 000000000000 c0a80002")

func mustHexT(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		panic(err)
	}
	return b
}

func headerCases() []Header {
	v4s, v4d := netip.MustParseAddr("172.31.1.1"), netip.MustParseAddr("172.31.1.2")
	v6s, v6d := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
	mac := func(b byte) [6]byte { return [6]byte{2, 0, 0, 0, 0, b} }
	var out []Header
	for _, ips := range [][2]netip.Addr{{v4s, v4d}, {v6s, v6d}} {
		for _, csum := range []bool{false, true} {
			base := Header{EthDst: mac(2), EthSrc: mac(1), Src: ips[0], Dst: ips[1], TOS: 0x10, TTL: 64,
				DF: ips[0].Is4(), ID: 0x1234, SrcPort: 49152, Csum: csum}
			vx := base
			vx.Kind, vx.DstPort, vx.Key = KindVXLAN, 4789, 0xabcdef
			gn := base
			gn.Kind, gn.DstPort, gn.Key = KindGeneve, 6081, 5
			gn.Options = mustHexT("0102 80 01 deadbeef")
			gn.OAM = csum
			gr := base
			gr.Kind, gr.SrcPort, gr.KeyPresent, gr.Key, gr.SeqPresent = KindGRE, 0, true, 77, csum
			if csum {
				gr.Seq = 9
			}
			// VXLAN with the Group Based Policy extension.
			gbp := vx
			gbp.GBP, gbp.GBPID, gbp.GBPFlags = true, 77, 0x08
			if csum {
				gbp.GBPID, gbp.GBPFlags = 0, 0x48
			}
			// GRE of a legacy_l3 tunnel: IPv4 or IPv6 for protocol.
			gr3 := gr
			gr3.Proto = 0x0800
			if csum {
				gr3.Proto = 0x86dd
			}
			out = append(out, vx, gn, gr, gbp, gr3)
		}
	}
	return out
}

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range headerCases() {
		b, err := Build(&h, innerFrame)
		if err != nil {
			t.Fatalf("%v: %v", h.Kind, err)
		}
		if len(b) != h.Len()+len(innerFrame) {
			t.Errorf("%v: length %d, header says %d", h.Kind, len(b), h.Len())
		}
		got, inner, err := Parse(b)
		if err != nil {
			t.Fatalf("%v %v csum=%v: %v", h.Kind, h.Dst, h.Csum, err)
		}
		if !bytes.Equal(inner, innerFrame) {
			t.Errorf("%v: inner frame %x", h.Kind, inner)
		}
		if !h.Dst.Is4() {
			h.DF, h.ID = false, 0 // IPv6 has neither
		}
		if got.Kind != h.Kind || got.Src != h.Src || got.Dst != h.Dst || got.TOS != h.TOS || got.TTL != h.TTL ||
			got.DF != h.DF || got.ID != h.ID || got.SrcPort != h.SrcPort || got.DstPort != h.DstPort ||
			got.Csum != h.Csum || got.Key != h.Key || got.KeyPresent != h.KeyPresent || got.Seq != h.Seq ||
			got.SeqPresent != h.SeqPresent || !bytes.Equal(got.Options, h.Options) || got.EthDst != h.EthDst ||
			got.OAM != h.OAM || got.GBP != h.GBP || got.GBPID != h.GBPID || got.GBPFlags != h.GBPFlags || got.Proto != h.Proto {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, h)
		}
		// Any flipped bit in a checksummed header is caught or changes a field.
		if h.Csum && h.Kind != KindGRE {
			c := bytes.Clone(b)
			c[len(c)-1] ^= 1
			if _, _, err := Parse(c); !errors.Is(err, ErrCsum) {
				t.Errorf("%v %v: corrupted payload gave %v", h.Kind, h.Dst, err)
			}
		}
		for n := 0; n < h.Len(); n++ {
			if _, _, err := Parse(b[:n]); err == nil {
				t.Errorf("%v: truncated to %d parsed", h.Kind, n)
			}
		}
	}
}

// goldenVXLAN was packed and checksummed with Python's struct module, not
// with this package's code (IPv4 header checksum 0xe05d, no UDP checksum).
const goldenVXLAN = "020000000002 020000000001 0800 4500004e00004000 4011e05d ac1f0101 ac1f0102" +
	" c00012b5003a0000 0800000000002a00" +
	" ffffffffffff02000000001108060001080006040001020000000011c0a80001000000000000c0a80002"

// A VXLAN frame as an independent implementation packs it.
func TestVXLANGolden(t *testing.T) {
	h := Header{Kind: KindVXLAN, EthDst: [6]byte{2, 0, 0, 0, 0, 2}, EthSrc: [6]byte{2, 0, 0, 0, 0, 1},
		Src: netip.MustParseAddr("172.31.1.1"), Dst: netip.MustParseAddr("172.31.1.2"), TTL: 64, DF: true,
		SrcPort: 49152, DstPort: 4789, Key: 42}
	b, err := Build(&h, innerFrame)
	if err != nil {
		t.Fatal(err)
	}
	want := mustHexT(goldenVXLAN)
	if !bytes.Equal(b, want) {
		t.Errorf("got  %x\nwant %x", b, want)
	}
}

func FuzzParseHeader(f *testing.F) {
	for _, h := range headerCases() {
		b, _ := Build(&h, innerFrame)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, inner, err := Parse(b)
		if err != nil {
			return
		}
		if len(inner) > len(b) || !h.Src.IsValid() {
			t.Fatalf("parsed %+v inner %d of %d", h, len(inner), len(b))
		}
	})
}

// The VXLAN Group Based Policy header: the G bit with the I bit, the D and
// A flags and the policy ID; a reserved flag bit or the G bit without the
// I bit is malformed, and Build writes only the defined flags.
func TestVXLANGBP(t *testing.T) {
	h := Header{Kind: KindVXLAN, Src: netip.MustParseAddr("172.31.1.1"), Dst: netip.MustParseAddr("172.31.1.2"), TTL: 64,
		DstPort: 4789, Key: 42, GBPID: 0x1234, GBPFlags: 0xff}
	b, err := Build(&h, innerFrame)
	if err != nil {
		t.Fatal(err)
	}
	vx := b[ethLen+ipv4Len+udpLen:]
	if want := mustHexT("88 48 1234 00002a00"); !bytes.Equal(vx[:vxlanLen], want) {
		t.Fatalf("VXLAN header %x, want %x", vx[:vxlanLen], want)
	}
	got, _, err := Parse(b)
	if err != nil || !got.GBP || got.GBPID != 0x1234 || got.GBPFlags != 0x48 || got.Key != 42 {
		t.Fatalf("parsed %+v, %v", got, err)
	}
	for _, flags := range []string{"88490000", "80000000", "c8000000", "08001234"} {
		c := bytes.Clone(b)
		copy(c[ethLen+ipv4Len+udpLen:], mustHexT(flags))
		if _, _, err := Parse(c); !errors.Is(err, ErrMalformed) {
			t.Errorf("flags %s: %v, want malformed", flags, err)
		}
	}
	// No policy: no G bit.
	h.GBPID, h.GBPFlags = 0, 0
	b, _ = Build(&h, innerFrame)
	if got, _, err := Parse(b); err != nil || got.GBP || b[ethLen+ipv4Len+udpLen] != 0x08 {
		t.Errorf("without a policy: %+v, %v", got, err)
	}
}

// GRE's protocol: transparent Ethernet bridging (Proto 0, an Ethernet
// frame inside) or, for a legacy_l3 tunnel, any Ethernet type from
// 0x0600 on, as OVS's parse_gre_header; below that it is malformed.
func TestGREProto(t *testing.T) {
	h := Header{Kind: KindGRE, Src: netip.MustParseAddr("172.31.1.1"), Dst: netip.MustParseAddr("172.31.1.2"), TTL: 64}
	b, err := Build(&h, innerFrame)
	if err != nil {
		t.Fatal(err)
	}
	gre := b[ethLen+ipv4Len:]
	if !bytes.Equal(gre[:greBaseLen], mustHexT("0000 6558")) {
		t.Fatalf("GRE header %x", gre[:greBaseLen])
	}
	for proto, want := range map[uint16]error{0x6558: nil, 0x0800: nil, 0x86dd: nil, 0x0806: nil, 0x0600: nil, 0x05ff: ErrMalformed, 0: ErrMalformed} {
		c := bytes.Clone(b)
		c[ethLen+ipv4Len+2], c[ethLen+ipv4Len+3] = byte(proto>>8), byte(proto)
		got, inner, err := Parse(c)
		if !errors.Is(err, want) {
			t.Errorf("protocol %#x: %v, want %v", proto, err, want)
			continue
		}
		if err != nil {
			continue
		}
		l3 := proto != 0x6558
		if got.L3() != l3 || (l3 && got.Proto != proto) || (!l3 && got.Proto != 0) || !bytes.Equal(inner, innerFrame) {
			t.Errorf("protocol %#x: %+v L3 %v", proto, got, got.L3())
		}
	}
	h.Proto = 0x86dd
	if b, _ := Build(&h, nil); !bytes.Equal(b[ethLen+ipv4Len:], mustHexT("0000 86dd")) || !h.L3() {
		t.Errorf("legacy_l3 IPv6 GRE header %x", b[ethLen+ipv4Len:])
	}
	// Proto means nothing to other kinds.
	if (&Header{Kind: KindVXLAN, Proto: 0x800}).L3() {
		t.Error("VXLAN header says L3")
	}
}
