package datapath

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
)

// TestSetMasked: a masked set writes only its mask's bits, keeping the
// packet's others and the checksums right, on IPv4 TCP (through a VLAN
// tag), IPv6 UDP and ARP; a packet without the field is left alone; the
// format is OVS's set_masked one.
func TestSetMasked(t *testing.T) {
	mac := func(s string) []byte { m := dptest.MAC(s); return m[:] }
	b := dptest.Frame{Src: dptest.MAC("00:00:00:00:11:11"), Dst: dptest.MAC("00:00:00:00:00:02"), Tags: []dptest.Tag{{VID: 5}},
		IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
		TCP:  &dptest.TCP{Src: 40000, Dst: 0x1234}, Payload: []byte("hello")}.Bytes()
	l3, _ := l3Offset(b)
	binary.BigEndian.PutUint16(b[l3+20+16:], l4Checksum(b, l3))
	p := packetOf(b)
	for _, a := range []Action{
		SetMasked(SetEthSrc, mac("00:00:00:00:00:05"), mac("00:00:00:00:ff:ff")),
		SetMasked(SetIPv4Src, []byte{0, 0, 0, 9}, []byte{0, 0, 0, 0xff}),
		TpSetMasked(SetTpDst, flow.IPProtoTCP, 0x5, 0xf),
		SetMasked(SetIPv4TTL, []byte{0x0f}, []byte{0x0f}),
	} {
		applySet(p, a.Field, &a.Val, a.SetMask)
	}
	d := p.Data()
	var k flow.Key
	flow.Extract(d, 1, &k)
	if k.EthSrc != dptest.MAC("00:00:00:00:00:05") || k.IPv4Src != [4]byte{10, 0, 0, 9} || k.TpDst != 0x1235 || k.TpSrc != 40000 {
		t.Errorf("IPv4 TCP: %v", k)
	}
	if got := dptest.Checksum(d[l3 : l3+20]); got != 0 {
		t.Errorf("IPv4 header checksum off by %#x", got)
	}
	if got := l4Checksum(d, l3); got != 0 {
		t.Errorf("TCP checksum off by %#x", got)
	}

	b6 := dptest.Frame{IPv6: &dptest.IPv6{Src: netip.MustParseAddr("fd00::1"), Dst: netip.MustParseAddr("fd00::2"), HopLimit: 64},
		UDP: &dptest.UDP{Src: 53, Dst: 5353}, Payload: []byte("hi")}.Checksummed()
	p = packetOf(b6)
	for _, a := range []Action{
		SetMasked(SetIPv6Dst, netip.MustParseAddr("::77").AsSlice(), netip.MustParseAddr("::ffff").AsSlice()),
		SetMasked(SetIPv6Label, []byte{0, 0, 0, 5}, []byte{0, 0, 0, 0xff}),
		TpSetMasked(SetTpSrc, flow.IPProtoUDP, 0x100, 0xff00),
	} {
		applySet(p, a.Field, &a.Val, a.SetMask)
	}
	flow.Extract(p.Data(), 1, &k)
	if k.IPv6Dst != netip.MustParseAddr("fd00::77").As16() || k.IPv6Label != 5 || k.TpSrc != 0x135 {
		t.Errorf("IPv6 UDP: %v", k)
	}
	if got := l4Checksum6(p.Data(), 14); got != 0 {
		t.Errorf("UDP checksum off by %#x", got)
	}

	p = packetOf(dptest.Frame{Src: dptest.MAC("00:00:00:00:00:01"), Dst: dptest.MAC("ff:ff:ff:ff:ff:ff"),
		ARP: &dptest.ARP{Op: 1, SHA: dptest.MAC("00:00:00:00:00:01"), SPA: netip.MustParseAddr("10.0.0.1"), TPA: netip.MustParseAddr("10.0.0.99")}}.Bytes())
	a := SetMasked(SetARPTPA, []byte{0, 0, 0, 7}, []byte{0, 0, 0, 0xff})
	applySet(p, a.Field, &a.Val, a.SetMask)
	// Not in an ARP packet: left alone.
	tp := TpSetMasked(SetTpDst, flow.IPProtoTCP, 1, 1)
	applySet(p, tp.Field, &tp.Val, tp.SetMask)
	flow.Extract(p.Data(), 1, &k)
	if k.IPv4Dst != [4]byte{10, 0, 0, 7} || k.IPv4Src != [4]byte{10, 0, 0, 1} || k.TpDst != 0 {
		t.Errorf("ARP: %v", k)
	}

	as := Actions{SetMasked(SetEthSrc, mac("00:00:00:00:00:05"), mac("00:00:00:00:ff:ff")), TpSetMasked(SetTpDst, flow.IPProtoTCP, 5, 0xf),
		SetMasked(SetIPv4Src, []byte{1, 2, 3, 9}, []byte{0, 0, 0, 0xff}), SetMasked(SetIPv4TTL, []byte{0x0f}, []byte{0x0f}),
		SetMasked(SetIPv6Label, []byte{0, 0, 0, 5}, []byte{0, 0, 0, 0xff})}
	want := "set(eth(src=00:00:00:00:00:05/00:00:00:00:ff:ff)),set(tcp(dst=5/0xf)),set(ipv4(src=0.0.0.9/0.0.0.255,ttl=15/0xf)),set(ipv6(label=0x5/0xff))"
	if got := as.String(); got != want {
		t.Errorf("format:\ngot  %s\nwant %s", got, want)
	}
	if as[0].Equal(Set(SetEthSrc, mac("00:00:00:00:00:05"))) || !as[0].Equal(SetMasked(SetEthSrc, mac("00:00:00:00:00:05"), mac("00:00:00:00:ff:ff"))) {
		t.Error("Equal ignores the mask")
	}
}

// BenchmarkSetMasked applies the masked sets of a translation that
// rewrote the low byte of an IPv4/TCP packet's destination and the low
// bits of its destination port, per packet (both checksums updated).
func BenchmarkSetMasked(b *testing.B) {
	f := dptest.Frame{Src: dptest.MAC("00:00:00:00:11:11"), Dst: dptest.MAC("00:00:00:00:00:02"),
		IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
		TCP:  &dptest.TCP{Src: 40000, Dst: 0x1234}, Payload: make([]byte, 64)}.Bytes()
	l3, _ := l3Offset(f)
	binary.BigEndian.PutUint16(f[l3+20+16:], l4Checksum(f, l3))
	p := packetOf(f)
	as := []Action{SetMasked(SetIPv4Dst, []byte{0, 0, 0, 9}, []byte{0, 0, 0, 0xff}), TpSetMasked(SetTpDst, flow.IPProtoTCP, 0x5, 0xf)}
	b.ReportAllocs()
	for i := range b.N {
		// Values the packet does not have yet.
		as[0].Val[3], as[1].Val[1] = byte(i), byte(i)&0xf
		for j := range as {
			applySet(p, as[j].Field, &as[j].Val, as[j].SetMask)
		}
	}
	d := p.Data()
	if got := dptest.Checksum(d[l3 : l3+20]); got != 0 {
		b.Errorf("IPv4 header checksum off by %#x", got)
	}
	if got := l4Checksum(d, l3); got != 0 {
		b.Errorf("TCP checksum off by %#x", got)
	}
}
