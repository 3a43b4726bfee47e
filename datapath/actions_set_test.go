package datapath

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/datapath/packet"
)

// l4Checksum computes the TCP/UDP checksum of an IPv4 packet at l3.
func l4Checksum(d []byte, l3 int) uint16 {
	ip := d[l3:]
	ihl := int(ip[0]&0xf) * 4
	seg := ip[ihl:binary.BigEndian.Uint16(ip[2:])]
	pseudo := append(append([]byte{}, ip[12:20]...), 0, ip[9])
	pseudo = binary.BigEndian.AppendUint16(pseudo, uint16(len(seg)))
	return dptest.Checksum(append(pseudo, seg...))
}

// TestSetFieldChecksums: rewriting addresses, ports and the TTL keeps the
// IPv4 and TCP/UDP checksums valid, through a VLAN tag too.
func TestSetFieldChecksums(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame dptest.Frame
		csum  int // offset of the L4 checksum in the segment
	}{
		{"tcp", dptest.Frame{IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
			TCP: &dptest.TCP{Src: 40000, Dst: 80}, Payload: []byte("hello")}, 16},
		{"udp tagged", dptest.Frame{Tags: []dptest.Tag{{VID: 5}}, IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"),
			Dst: netip.MustParseAddr("10.0.0.2")}, UDP: &dptest.UDP{Src: 53, Dst: 5353}, Payload: []byte("hello!")}, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.frame.Src, tc.frame.Dst = dptest.MAC("00:00:00:00:00:01"), dptest.MAC("00:00:00:00:00:02")
			b := tc.frame.Bytes()
			l3, _ := l3Offset(b)
			seg := b[l3+20:]
			binary.BigEndian.PutUint16(seg[tc.csum:], l4Checksum(b, l3))
			p := packet.New()
			copy(p.Tail(), b)
			p.SetLen(len(b))
			for _, a := range []Action{
				Set(SetIPv4Dst, []byte{192, 168, 7, 9}), Set(SetIPv4Src, []byte{172, 16, 0, 1}), Set(SetTpDst, []byte{0x1f, 0x90}),
				Set(SetTpSrc, []byte{0, 7}), Set(SetIPv4TTL, []byte{3}), Set(SetEthSrc, []byte{2, 0, 0, 0, 0, 9}),
			} {
				setField(p, a.Field, &a.Val)
			}
			d := p.Data()
			if got := dptest.Checksum(d[l3 : l3+20]); got != 0 {
				t.Errorf("IPv4 header checksum off by %#x", got)
			}
			if got := l4Checksum(d, l3); got != 0 {
				t.Errorf("L4 checksum off by %#x", got)
			}
			if netip.AddrFrom4([4]byte(d[l3+16:l3+20])).String() != "192.168.7.9" || d[l3+8] != 3 ||
				binary.BigEndian.Uint16(d[l3+22:]) != 8080 || d[11] != 9 {
				t.Errorf("fields not set: %x", d)
			}
		})
	}
}

// packetOf returns a packet holding frame b.
func packetOf(b []byte) *packet.Packet {
	p := packet.New()
	copy(p.Tail(), b)
	p.SetLen(len(b))
	return p
}

// l4Checksum6 computes the TCP, UDP or ICMPv6 checksum of an IPv6 packet
// without extension headers at l3: 0 if the packet's is right.
func l4Checksum6(d []byte, l3 int) uint16 {
	ip := d[l3:]
	seg := ip[40 : 40+int(binary.BigEndian.Uint16(ip[4:]))]
	pseudo := append([]byte{}, ip[8:40]...)
	pseudo = binary.BigEndian.AppendUint32(pseudo, uint32(len(seg)))
	pseudo = append(pseudo, 0, 0, 0, ip[6])
	return dptest.Checksum(append(pseudo, seg...))
}

// TestSetIPv6AndND: an ND responder's rewrite of a neighbour solicitation
// into an advertisement (OVN's) and a TCP/IPv6 address rewrite keep the
// ICMPv6 and TCP checksums valid.
func TestSetIPv6AndND(t *testing.T) {
	a, b := netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
	vip, vmac := netip.MustParseAddr("fd00::99"), dptest.MAC("0a:00:00:00:00:99")
	ns := dptest.Frame{Src: dptest.MAC("00:00:00:00:00:01"), Dst: dptest.MAC("33:33:ff:00:00:99"),
		IPv6: &dptest.IPv6{Src: a, Dst: netip.MustParseAddr("ff02::1:ff00:99"), HopLimit: 255},
		ICMP: &dptest.ICMP{Type: 135}, Payload: append(vip.AsSlice(), dptest.NDOpt(1, dptest.MAC("00:00:00:00:00:01"))...)}.Checksummed()
	p := packetOf(ns)
	for _, act := range []Action{
		Set(SetIPv6Dst, a.AsSlice()), Set(SetIPv6Src, vip.AsSlice()), Set(SetICMPv6Type, []byte{136}),
		Set(SetNDReserved, []byte{0x60, 0, 0, 0}), Set(SetNDOptionsType, []byte{2}), Set(SetNDTLL, vmac[:]),
	} {
		setField(p, act.Field, &act.Val)
	}
	d := p.Data()
	if c := l4Checksum6(d, 14); c != 0 {
		t.Errorf("ICMPv6 checksum off by %#x", c)
	}
	var k flow.Key
	flow.Extract(d, 1, &k)
	if k.TpSrc != 136 || k.NdReserved != 0x60000000 || k.NdOptionsType != 2 || k.ArpTHA != vmac || k.ArpSHA != [6]byte{} ||
		k.NdTarget != vip.As16() || k.IPv6Src != vip.As16() || k.IPv6Dst != a.As16() {
		t.Errorf("advertisement: %v", k)
	}
	// The target, then a source option rewritten.
	for _, act := range []Action{Set(SetNDTarget, b.AsSlice()), Set(SetNDOptionsType, []byte{1}), Set(SetNDSLL, []byte{2, 0, 0, 0, 0, 2}), Set(SetNDTLL, []byte{2, 0, 0, 0, 0, 3})} {
		setField(p, act.Field, &act.Val)
	}
	flow.Extract(p.Data(), 1, &k)
	if c := l4Checksum6(p.Data(), 14); c != 0 || k.NdTarget != b.As16() || k.ArpSHA != dptest.MAC("02:00:00:00:00:02") || k.ArpTHA != [6]byte{} {
		t.Errorf("checksum %#x, key %v", c, k)
	}

	tcp := dptest.Frame{IPv6: &dptest.IPv6{Src: a, Dst: b, HopLimit: 64}, TCP: &dptest.TCP{Src: 1, Dst: 2}, Payload: []byte("data")}.Checksummed()
	p = packetOf(tcp)
	for _, act := range []Action{Set(SetIPv6Src, vip.AsSlice()), Set(SetIPv6Dst, a.AsSlice()), Set(SetIPv6Label, []byte{0, 0x0a, 0xbc, 0xde})} {
		setField(p, act.Field, &act.Val)
	}
	flow.Extract(p.Data(), 1, &k)
	if c := l4Checksum6(p.Data(), 14); c != 0 || k.IPv6Src != vip.As16() || k.IPv6Dst != a.As16() || k.IPv6Label != 0xabcde {
		t.Errorf("tcp6: checksum %#x, key %v", c, k)
	}
}

// TestSetARPAndICMP: an ARP responder's rewrite of a request into a reply,
// and an ICMP echo request made a reply with its checksum right.
func TestSetARPAndICMP(t *testing.T) {
	ip1, vip := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.99")
	mac1, vmac := dptest.MAC("00:00:00:00:00:01"), dptest.MAC("0a:00:00:00:00:99")
	p := packetOf(dptest.Frame{Src: mac1, Dst: dptest.MAC("ff:ff:ff:ff:ff:ff"), ARP: &dptest.ARP{Op: 1, SHA: mac1, SPA: ip1, TPA: vip}}.Bytes())
	for _, act := range []Action{
		Set(SetARPOp, []byte{0, 2}), Set(SetARPTHA, mac1[:]), Set(SetARPSHA, vmac[:]), Set(SetARPTPA, ip1.AsSlice()), Set(SetARPSPA, vip.AsSlice()),
	} {
		setField(p, act.Field, &act.Val)
	}
	var k flow.Key
	flow.Extract(p.Data(), 1, &k)
	if k.NwProto != 2 || k.ArpSHA != vmac || k.ArpTHA != mac1 || k.IPv4Src != vip.As4() || k.IPv4Dst != ip1.As4() {
		t.Errorf("arp reply: %v", k)
	}

	p = packetOf(dptest.Frame{IPv4: &dptest.IPv4{Src: ip1, Dst: vip}, ICMP: &dptest.ICMP{Type: 8, Rest: 0x12340001}, Payload: []byte("ping")}.Checksummed())
	for _, act := range []Action{Set(SetICMPType, []byte{0}), Set(SetICMPCode, []byte{0}), Set(SetIPv4Src, vip.AsSlice()), Set(SetIPv4Dst, ip1.AsSlice())} {
		setField(p, act.Field, &act.Val)
	}
	d := p.Data()
	if c := dptest.Checksum(d[14+20:]); c != 0 || d[14+20] != 0 {
		t.Errorf("icmp echo reply: checksum off by %#x: %x", c, d)
	}
	if got := Set(SetNDTLL, vmac[:]).String() + Set(SetARPOp, []byte{0, 2}).String() + Set(SetICMPv6Type, []byte{136}).String(); got != "set(nd(tll=0a:00:00:00:00:99))set(arp(op=2))set(icmpv6(type=136))" {
		t.Errorf("format: %s", got)
	}
}

// TestSetFormatGroupsHeader: consecutive sets of one header show as OVS's
// one set per header, fields in OVS's order; another header or action
// between them starts a new one.
func TestSetFormatGroupsHeader(t *testing.T) {
	mac := [6]byte{0x50, 0x54, 0, 0, 0, 2}
	as := Actions{
		Set(SetEthSrc, mac[:]), Set(SetEthDst, mac[:]),
		Set(SetARPOp, []byte{0, 2}), Set(SetARPSHA, mac[:]), Set(SetARPSPA, []byte{10, 0, 0, 2}),
		Set(SetARPTHA, mac[:]), Set(SetARPTPA, []byte{10, 0, 0, 1}),
		Output(1), Set(SetEthDst, mac[:]),
		TpSet(SetTpDst, 6, 80), TpSet(SetTpSrc, 6, 1000), TpSet(SetTpSrc, 17, 53),
	}
	want := "set(eth(src=50:54:00:00:00:02,dst=50:54:00:00:00:02))," +
		"set(arp(sip=10.0.0.2,tip=10.0.0.1,op=2,sha=50:54:00:00:00:02,tha=50:54:00:00:00:02)),1," +
		"set(eth(dst=50:54:00:00:00:02)),set(tcp(src=1000,dst=80)),set(udp(src=53))"
	if got := as.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
