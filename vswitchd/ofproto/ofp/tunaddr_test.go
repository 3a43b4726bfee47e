package ofp

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
)

// tunFlow is a packet's flow from a tunnel with outer addresses src and dst.
func tunFlow(src, dst string) Flow {
	var f Flow
	f.TunSrc = netip.MustParseAddr(src).As16()
	f.TunDst = netip.MustParseAddr(dst).As16()
	return f
}

// TestTunAddrFields: tun_src/tun_dst read an IPv4 tunnel's outer
// addresses and 0 for an IPv6 one; tun_ipv6_src/tun_ipv6_dst the IPv6
// ones and :: for an IPv4 one, as OVS's flow_tnl. Writing one version's
// field gives the key that version's address.
func TestTunAddrFields(t *testing.T) {
	v4 := tunFlow("192.0.2.1", "192.0.2.2")
	v6 := tunFlow("2001:db8::102:304", "2001:db8::ffff:c000:202")
	for _, tc := range []struct {
		name string
		f    *Flow
		id   FieldID
		want string
	}{
		{"v4 tun_src", &v4, FieldTunSrc, "192.0.2.1"},
		{"v4 tun_dst", &v4, FieldTunDst, "192.0.2.2"},
		{"v4 tun_ipv6_src", &v4, FieldTunIPv6Src, "::"},
		{"v4 tun_ipv6_dst", &v4, FieldTunIPv6Dst, "::"},
		// The low 4 bytes (and a ffff before them) are no IPv4 address.
		{"v6 tun_src", &v6, FieldTunSrc, "0.0.0.0"},
		{"v6 tun_dst", &v6, FieldTunDst, "0.0.0.0"},
		{"v6 tun_ipv6_src", &v6, FieldTunIPv6Src, "2001:db8::102:304"},
		{"v6 tun_ipv6_dst", &v6, FieldTunIPv6Dst, "2001:db8::ffff:c000:202"},
	} {
		got, _ := netip.AddrFromSlice(FieldByID(tc.id).Get(tc.f))
		if got.String() != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}

	f := v4
	FieldByID(FieldTunIPv6Dst).Set(&f, netip.MustParseAddr("2001:db8::9").AsSlice())
	if got := netip.AddrFrom16(f.TunDst); got != netip.MustParseAddr("2001:db8::9") {
		t.Errorf("set tun_ipv6_dst: key has %s", got)
	}
	if got := FieldByID(FieldTunDst).Get(&f); !bytes.Equal(got, []byte{0, 0, 0, 0}) {
		t.Errorf("tun_dst after set tun_ipv6_dst: %v", got)
	}
	FieldByID(FieldTunDst).Set(&f, []byte{198, 51, 100, 7})
	if got := netip.AddrFrom16(f.TunDst); got != netip.MustParseAddr("::ffff:198.51.100.7") {
		t.Errorf("set tun_dst: key has %s, want it v4-mapped", got)
	}
	// A partial write (load:...->NXM_NX_TUN_IPV6_SRC[0..15]) keeps the
	// other bits.
	f = v6
	FieldByID(FieldTunIPv6Src).SetMasked(&f, make([]byte, 16), append(make([]byte, 14), 0xff, 0xff))
	if got := netip.AddrFrom16(f.TunSrc); got != netip.MustParseAddr("2001:db8::102:0") {
		t.Errorf("load to tun_ipv6_src[0..15]: %s", got)
	}
	// set_field:fd31::ffff:ac1f:2->tun_ipv6_dst in OpenFlow 1.0 is two
	// loads; the first leaves a v4-mapped address, which the second
	// must keep.
	f = Flow{}
	want := netip.MustParseAddr("fd31::ffff:ac1f:2")
	for _, ref := range []FieldRef{{FieldByID(FieldTunIPv6Dst), 0, 64}, {FieldByID(FieldTunIPv6Dst), 64, 64}} {
		v := want.As16()
		value, mask := refValue(ref, binary.BigEndian.Uint64(v[16-ref.Ofs/8-8:]))
		ref.Field.SetMasked(&f, value, mask)
	}
	if got := netip.AddrFrom16(f.TunDst); got != want {
		t.Errorf("two loads to tun_ipv6_dst: %s, want %s", got, want)
	}
}

// matches reports whether f matches m, as the classifier compares.
func matches(m *Match, f *Flow) bool { return f.Masked(&m.Mask) == m.Flow }

// TestTunAddrMatchSeparation: a match on tun_src (exact or a prefix)
// covers the v4-mapped prefix, so that it never matches an IPv6 tunnel
// whose address ends in the same bytes, and a match on tun_ipv6_src
// never matches an IPv4 tunnel (unless a v4-mapped address meets it,
// ::/16 or ::102:304/::ffff:ffff: the key keeps one address for both,
// TunAddrSplit); each round-trips through NXM and
// formats as OVS's match_format.
func TestTunAddrMatchSeparation(t *testing.T) {
	v4 := tunFlow("1.2.3.4", "192.0.2.2")
	// An IPv6 address whose last 6 bytes are those of ::ffff:1.2.3.4.
	v6 := tunFlow("2001:db8::ffff:102:304", "2001:db8::2")
	set := func(m *Match, id FieldID, v, mk []byte) {
		fd := FieldByID(id)
		fd.SetMasked(&m.Flow, v, mk)
		fd.SetMask(&m.Mask, mk)
	}
	ip := func(s string) []byte { return netip.MustParseAddr(s).AsSlice() }
	for _, tc := range []struct {
		name   string
		id     FieldID
		v, m   []byte
		v4, v6 bool
		text   string
	}{
		{"tun_src exact", FieldTunSrc, ip("1.2.3.4"), ip("255.255.255.255"), true, false, "tun_src=1.2.3.4"},
		{"tun_src prefix", FieldTunSrc, ip("1.2.3.0"), ip("255.255.255.0"), true, false, "tun_src=1.2.3.0/24"},
		{"tun_ipv6_src exact", FieldTunIPv6Src, ip("2001:db8::ffff:102:304"), ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), false, true, "tun_ipv6_src=2001:db8::ffff:102:304"},
		{"tun_ipv6_src non-contiguous", FieldTunIPv6Src, ip("2001::102:304"), ip("ffff::ffff:ffff"), false, true, "tun_ipv6_src=2001::102:304/ffff::ffff:ffff"},
		{"tun_ipv6_dst prefix", FieldTunIPv6Dst, ip("2001:db8::"), ip("ffff:ffff::"), false, true, "tun_ipv6_dst=2001:db8::/32"},
		{"tun_dst", FieldTunDst, ip("192.0.2.2"), ip("255.255.255.255"), true, false, "tun_dst=192.0.2.2"},
		// The mask's TunMask bits tell these two apart (OVS's also
		// match the other version's tunnels; govs' do not).
		{"tun_src 0", FieldTunSrc, ip("0.0.0.0"), ip("255.255.255.255"), false, false, "tun_src=0.0.0.0"},
		{"tun_ipv6_src ::", FieldTunIPv6Src, ip("::"), ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), false, false, "tun_ipv6_src=::"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Match
			set(&m, tc.id, tc.v, tc.m)
			if got := matches(&m, &v4); got != tc.v4 {
				t.Errorf("matches the IPv4 tunnel: %v, want %v", got, tc.v4)
			}
			if got := matches(&m, &v6); got != tc.v6 {
				t.Errorf("matches the IPv6 tunnel: %v, want %v", got, tc.v6)
			}
			if got := FormatMatch(&m, 32768, nil); got != tc.text {
				t.Errorf("formatted %q, want %q", got, tc.text)
			}
			for _, nx := range []bool{true, false} {
				b := AppendNXMatch(nil, &m, nx)
				d, err := DecodeNXMatch(b)
				if err != nil {
					t.Fatalf("decode (nx %v): %v", nx, err)
				}
				if d.Flow != m.Flow || d.Mask != m.Mask {
					t.Errorf("NXM round trip (nx %v): %s", nx, FormatMatch(&d, 32768, nil))
				}
			}
		})
	}

	// A megaflow that consulted tun_src of an IPv4 tunnel's packet (as a
	// move or a field's hash marks it) tells it from the IPv6 tunnel.
	var wc Flow
	MarkRef(&wc, FieldRef{Field: FieldByID(FieldTunSrc), NBits: 32})
	if a, b := v4.Masked(&wc), v6.Masked(&wc); a == b {
		t.Errorf("consulting tun_src: the IPv4 and IPv6 tunnels' packets are one megaflow")
	}
	// The megaflow says which fields were consulted, as OVS's shows them.
	MarkRef(&wc, FieldRef{Field: FieldByID(FieldTunIPv6Dst), NBits: 128})
	m := Match{Flow: v4, Mask: wc}
	m.Normalize()
	if got, want := FormatMatch(&m, 32768, nil), "tun_src=1.2.3.4,tun_ipv6_dst=::"; got != want {
		t.Errorf("megaflow of the IPv4 tunnel: %s, want %s", got, want)
	}
	m = Match{Flow: v6, Mask: wc}
	m.Normalize()
	if got, want := FormatMatch(&m, 32768, nil), "tun_src=0.0.0.0,tun_ipv6_dst=2001:db8::2"; got != want {
		t.Errorf("megaflow of the IPv6 tunnel: %s, want %s", got, want)
	}
}

// tun_gbp_id and tun_gbp_flags are NXM_NX_TUN_GBP_ID (NXM_NX field 38, 2
// bytes) and NXM_NX_TUN_GBP_FLAGS (39, 1 byte), both maskable; they encode
// after tun_id as Debian's `ovs-ofctl parse-nx-match` orders
// "NXM_NX_TUN_GBP_ID(004d), NXM_NX_TUN_GBP_FLAGS_W(08/48),
// NXM_NX_TUN_ID(000000000000002a)", and show as OVS's match_format: the
// ID in decimal or 0x../0x.. masked, the flags' value alone in hex.
func TestTunGBPNXM(t *testing.T) {
	id := func(v, m []byte) []byte { return nxmEntry(nxmHeader(classNXM1, 38, 2), v, m) }
	flags := func(v, m []byte) []byte { return nxmEntry(nxmHeader(classNXM1, 39, 1), v, m) }
	tunID := nxmEntry(nxmHeader(classNXM1, 16, 8), []byte{0, 0, 0, 0, 0, 0, 0, 42}, nil)
	for _, tc := range []struct {
		in, want []byte
		text     string
	}{
		{bytes.Join([][]byte{id([]byte{0, 77}, nil), flags([]byte{8}, []byte{0x48}), tunID}, nil),
			bytes.Join([][]byte{tunID, id([]byte{0, 77}, nil), flags([]byte{8}, []byte{0x48})}, nil),
			"tun_id=0x2a,tun_gbp_id=77,tun_gbp_flags=0x8"},
		{bytes.Join([][]byte{id([]byte{0, 0x10}, []byte{0, 0xf0}), flags([]byte{0x48}, nil)}, nil), nil,
			"tun_gbp_id=0x10/0xf0,tun_gbp_flags=0x48"},
	} {
		m, err := DecodeNXMatch(tc.in)
		if err != nil {
			t.Fatalf("%x: %v", tc.in, err)
		}
		want := tc.want
		if want == nil {
			want = tc.in
		}
		if got := AppendNXMatch(nil, &m, true); !bytes.Equal(got, want) {
			t.Errorf("%x encodes as %x, want %x", tc.in, got, want)
		}
		if got := FormatMatch(&m, 32768, nil); got != tc.text {
			t.Errorf("%x formats as %q, want %q", tc.in, got, tc.text)
		}
	}
	// A packet-in's metadata: the fields that are set, exact.
	pi := PacketIn{}
	pi.Metadata.TunGBPID, pi.Metadata.TunGBPFlags = 88, 0
	if m := pi.metadataMatch(); m.Mask.TunGBPID != 0xffff || m.Flow.TunGBPID != 88 || m.Mask.TunGBPFlags != 0 {
		t.Errorf("packet-in metadata %+v / %+v", m.Flow.Key, m.Mask.Key)
	}
}
