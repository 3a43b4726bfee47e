package flow_test

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
)

var (
	macA = dptest.MAC("00:00:00:00:00:0a")
	macB = dptest.MAC("00:00:00:00:00:0b")
	ip1  = netip.MustParseAddr("10.0.0.1")
	ip2  = netip.MustParseAddr("10.0.0.2")
	ip61 = netip.MustParseAddr("2001:db8::1")
	ip62 = netip.MustParseAddr("2001:db8::2")
)

func a4(a netip.Addr) [4]byte   { return a.As4() }
func a16(a netip.Addr) [16]byte { return a.As16() }

// base is the key of an untagged frame from A to B on port 7.
func base(ethType uint16) flow.Key {
	return flow.Key{InPort: 7, EthSrc: macA, EthDst: macB, EthType: ethType}
}

func TestExtract(t *testing.T) {
	udp4 := base(flow.EthTypeIPv4)
	udp4.IPv4Src, udp4.IPv4Dst = a4(ip1), a4(ip2)
	udp4.NwProto, udp4.NwTTL, udp4.NwTOS = 17, 64, 0xb8
	udp4.TpSrc, udp4.TpDst = 5000, 53

	tagged := udp4
	tagged.VLANTCI = 5<<13 | 10 | flow.VLANPresent
	tagged.VLANTPID = flow.EthTypeVLAN

	tcp4 := udp4
	tcp4.NwProto, tcp4.TCPFlags = 6, dptest.SYN|dptest.ACK
	tcp4.TpSrc, tcp4.TpDst = 40000, 80

	icmp4 := udp4
	icmp4.NwProto, icmp4.TpSrc, icmp4.TpDst = 1, 8, 0

	first := udp4
	first.NwFrag = flow.FragAny
	later := udp4
	later.NwFrag = flow.FragAny | flow.FragLater
	later.TpSrc, later.TpDst = 0, 0

	tcp6 := base(flow.EthTypeIPv6)
	tcp6.IPv6Src, tcp6.IPv6Dst = a16(ip61), a16(ip62)
	tcp6.IPv6Label, tcp6.NwTOS, tcp6.NwTTL = 0x12345, 0x28, 255
	tcp6.NwProto, tcp6.TpSrc, tcp6.TpDst, tcp6.TCPFlags = 6, 1234, 443, dptest.SYN

	ext6 := tcp6
	ext6.NwProto = 17
	ext6.TCPFlags = 0
	ext6.TpSrc, ext6.TpDst = 1, 2

	later6 := tcp6
	later6.NwProto, later6.NwFrag = flow.IPProtoFragment, flow.FragAny|flow.FragLater
	later6.TpSrc, later6.TpDst, later6.TCPFlags = 0, 0, 0

	icmp6 := tcp6
	icmp6.NwProto, icmp6.TpSrc, icmp6.TpDst, icmp6.TCPFlags = 58, 135, 0, 0

	arp := base(flow.EthTypeARP)
	arp.NwProto = 1
	arp.ArpSHA, arp.IPv4Src, arp.IPv4Dst = macA, a4(ip1), a4(ip2)

	qinq := base(flow.EthTypeVLAN)
	qinq.VLANTPID, qinq.VLANTCI = flow.EthTypeQinQ, 100|flow.VLANPresent

	udp := &dptest.UDP{Src: 5000, Dst: 53}
	v4 := func() *dptest.IPv4 { return &dptest.IPv4{Src: ip1, Dst: ip2, TOS: 0xb8} }
	v6 := func(ext ...dptest.IPv6Ext) *dptest.IPv6 {
		return &dptest.IPv6{Src: ip61, Dst: ip62, TrafficClass: 0x28, FlowLabel: 0x12345, HopLimit: 255, Ext: ext}
	}
	fr := func(f dptest.Frame) []byte {
		f.Src, f.Dst = macA, macB
		return f.Bytes()
	}

	tests := []struct {
		name  string
		frame []byte
		want  flow.Key
	}{
		{"ipv4 udp", fr(dptest.Frame{IPv4: v4(), UDP: udp}), udp4},
		{"ipv4 udp padded", fr(dptest.Frame{IPv4: v4(), UDP: udp, Pad: 20}), udp4},
		{"ipv4 options", fr(dptest.Frame{IPv4: &dptest.IPv4{Src: ip1, Dst: ip2, TOS: 0xb8, Options: []byte{1, 1, 1, 0}}, UDP: udp}), udp4},
		{"vlan ipv4 udp", fr(dptest.Frame{Tags: []dptest.Tag{{PCP: 5, VID: 10}}, IPv4: v4(), UDP: udp}), tagged},
		{"vlan DEI is not kept", fr(dptest.Frame{Tags: []dptest.Tag{{PCP: 5, VID: 10, DEI: true}}, IPv4: v4(), UDP: udp}), tagged},
		{"ipv4 tcp", fr(dptest.Frame{IPv4: v4(), TCP: &dptest.TCP{Src: 40000, Dst: 80, Flags: dptest.SYN | dptest.ACK}}), tcp4},
		{"ipv4 icmp", fr(dptest.Frame{IPv4: v4(), ICMP: &dptest.ICMP{Type: 8}}), icmp4},
		{"ipv4 first fragment", fr(dptest.Frame{IPv4: &dptest.IPv4{Src: ip1, Dst: ip2, TOS: 0xb8, MF: true}, UDP: udp}), first},
		{"ipv4 later fragment", fr(dptest.Frame{IPv4: &dptest.IPv4{Src: ip1, Dst: ip2, TOS: 0xb8, FragOff: 185}, UDP: udp}), later},
		{"ipv6 tcp", fr(dptest.Frame{IPv6: v6(), TCP: &dptest.TCP{Src: 1234, Dst: 443, Flags: dptest.SYN}}), tcp6},
		{"ipv6 ext headers", fr(dptest.Frame{IPv6: v6(dptest.IPv6Ext{Proto: 0}, dptest.IPv6Ext{Proto: 43}, dptest.IPv6Ext{Proto: 51}, dptest.IPv6Ext{Proto: 60}), UDP: &dptest.UDP{Src: 1, Dst: 2}}), ext6},
		{"ipv6 first fragment", fr(dptest.Frame{IPv6: v6(dptest.IPv6Ext{Proto: 44, MF: true}), UDP: &dptest.UDP{Src: 1, Dst: 2}}), func() flow.Key { k := ext6; k.NwFrag = flow.FragAny; return k }()},
		{"ipv6 later fragment", fr(dptest.Frame{IPv6: v6(dptest.IPv6Ext{Proto: 44, FragOff: 100}), TCP: &dptest.TCP{Src: 1234, Dst: 443}}), later6},
		{"icmpv6", fr(dptest.Frame{IPv6: v6(), ICMP: &dptest.ICMP{Type: 135}}), icmp6},
		{"arp", fr(dptest.Frame{ARP: &dptest.ARP{Op: 1, SHA: macA, SPA: ip1, TPA: ip2}}), arp},
		{"arp big opcode", fr(dptest.Frame{ARP: &dptest.ARP{Op: 0x100, SHA: macA, SPA: ip1, TPA: ip2}}), func() flow.Key { k := arp; k.NwProto = 0; return k }()},
		{"qinq keeps the outer tag only", fr(dptest.Frame{Tags: []dptest.Tag{{TPID: 0x88a8, VID: 100}, {VID: 10}}, IPv4: v4(), UDP: udp}), qinq},
		{"llc without snap", fr(dptest.Frame{EtherType: 46, Payload: make([]byte, 46)}), base(flow.EthTypeNone)},
		{"snap", fr(dptest.Frame{EtherType: 50, Payload: []byte{0xaa, 0xaa, 3, 0, 0, 0, 0x88, 0xcc, 1, 2}}), base(0x88cc)},
		{"other type", fr(dptest.Frame{EtherType: 0x88cc, Payload: []byte{1, 2, 3}}), base(0x88cc)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var k flow.Key
			if !flow.Extract(tt.frame, 7, &k) {
				t.Fatal("Extract reported a runt")
			}
			if k != tt.want {
				t.Errorf("key:\n got %v\nwant %v\n(%+v)", k, tt.want, k)
			}
		})
	}
}

// Neighbour solicitations and advertisements fill the ND fields as OVS's
// parse_icmpv6 does.
func TestExtractND(t *testing.T) {
	tgt := netip.MustParseAddr("fe80::1")
	nd := func(typ, code uint8, rest uint32, payload ...[]byte) []byte {
		var p []byte
		for _, b := range payload {
			p = append(p, b...)
		}
		return dptest.Frame{Src: macA, Dst: macB, IPv6: &dptest.IPv6{Src: ip61, Dst: ip62, HopLimit: 255},
			ICMP: &dptest.ICMP{Type: typ, Code: code, Rest: rest}, Payload: p}.Bytes()
	}
	key := func(typ, code uint8, f func(k *flow.Key)) flow.Key {
		k := base(flow.EthTypeIPv6)
		k.IPv6Src, k.IPv6Dst, k.NwTTL, k.NwProto = a16(ip61), a16(ip62), 255, 58
		k.TpSrc, k.TpDst = uint16(typ), uint16(code)
		if f != nil {
			f(&k)
		}
		return k
	}
	target := tgt.AsSlice()
	tests := []struct {
		name  string
		frame []byte
		want  flow.Key
	}{
		{"ns with sll", nd(135, 0, 0, target, dptest.NDOpt(1, macA)), key(135, 0, func(k *flow.Key) {
			k.NdTarget, k.ArpSHA, k.NdOptionsType = a16(tgt), macA, 1
		})},
		{"na with tll and flags", nd(136, 0, 0x60000000, target, dptest.NDOpt(2, macB)), key(136, 0, func(k *flow.Key) {
			k.NdTarget, k.ArpTHA, k.NdOptionsType, k.NdReserved = a16(tgt), macB, 2, 0x60000000
		})},
		{"first option type kept", nd(135, 0, 0, target, dptest.NDOpt(2, macB), dptest.NDOpt(1, macA)), key(135, 0, func(k *flow.Key) {
			k.NdTarget, k.ArpSHA, k.ArpTHA, k.NdOptionsType = a16(tgt), macA, macB, 2
		})},
		{"unknown option skipped", nd(135, 0, 0, target, []byte{5, 1, 0, 0, 0, 0, 5, 0xdc}, dptest.NDOpt(1, macA)), key(135, 0, func(k *flow.Key) {
			k.NdTarget, k.ArpSHA, k.NdOptionsType = a16(tgt), macA, 1
		})},
		{"duplicate option clears", nd(135, 0, 0, target, dptest.NDOpt(1, macA), dptest.NDOpt(1, macB)), key(135, 0, func(k *flow.Key) {
			k.NdOptionsType = 1
		})},
		{"zero-length option stops", nd(135, 0, 0, target, []byte{1, 0, 1, 2, 3, 4, 5, 6}), key(135, 0, func(k *flow.Key) {
			k.NdTarget = a16(tgt)
		})},
		{"truncated target", nd(135, 0, 7, target[:10]), key(135, 0, func(k *flow.Key) { k.NdReserved = 7 })},
		{"code not 0 is not nd", nd(135, 1, 7, target), key(135, 1, nil)},
		{"echo is not nd", nd(128, 0, 7, target), key(128, 0, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var k flow.Key
			flow.Extract(tt.frame, 7, &k)
			if k != tt.want {
				t.Errorf("key:\n got %+v\nwant %+v", k, tt.want)
			}
			// A head that ends inside the options needs the whole frame.
			var h flow.Key
			if ok, complete := flow.ExtractHead(tt.frame[:64], len(tt.frame), 7, &h); !ok || complete && h != tt.want {
				t.Errorf("ExtractHead: ok %v complete %v key %+v", ok, complete, h)
			}
		})
	}
	var k flow.Key
	flow.Extract(nd(135, 0, 0, target, dptest.NDOpt(1, macA)), 7, &k)
	if s := k.String(); !strings.Contains(s, ",icmpv6(type=135,code=0),nd(target=fe80::1,sll=00:00:00:00:00:0a,tll=00:00:00:00:00:00)") {
		t.Errorf("String: %s", s)
	}
}

// Malformed frames keep what parsed and leave the rest zero.
func TestExtractMalformed(t *testing.T) {
	good := dptest.Frame{Src: macA, Dst: macB, IPv4: &dptest.IPv4{Src: ip1, Dst: ip2}, UDP: &dptest.UDP{Src: 1, Dst: 2}}.Bytes()
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	l2only := base(flow.EthTypeIPv4)

	tests := []struct {
		name  string
		frame []byte
		want  flow.Key
	}{
		{"ipv4 truncated header", good[:14+19], l2only},
		{"ipv4 ihl below 5", mod(func(b []byte) []byte { b[14] = 0x44; return b }), l2only},
		{"ipv4 ihl beyond total length", mod(func(b []byte) []byte { b[14] = 0x4f; return b }), l2only},
		{"ipv4 total length beyond frame", mod(func(b []byte) []byte { b[17] += 100; return b }), l2only},
		{"ipv4 version 5", mod(func(b []byte) []byte { b[14] = 0x55; return b }), l2only},
		{"ipv4 udp truncated", mod(func(b []byte) []byte { b[17] -= 4; return b[:len(b)-4] }), func() flow.Key {
			k := l2only
			k.IPv4Src, k.IPv4Dst, k.NwProto, k.NwTTL = a4(ip1), a4(ip2), 17, 64
			return k
		}()},
		{"partial vlan tag", append(append([]byte(nil), good[:12]...), 0x81, 0x00, 0x00), func() flow.Key {
			k := base(flow.EthTypeVLAN)
			return k
		}()},
		{"vlan tag without type", append(append([]byte(nil), good[:12]...), 0x81, 0x00, 0x00, 0x0a), base(flow.EthTypeVLAN)},
		{"ethernet header only", good[:14], l2only},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var k flow.Key
			if !flow.Extract(tt.frame, 7, &k) {
				t.Fatal("Extract reported a runt")
			}
			if k != tt.want {
				t.Errorf("key:\n got %v\nwant %v", k, tt.want)
			}
		})
	}

	for _, n := range []int{0, 1, 13} {
		var k flow.Key
		if flow.Extract(good[:n], 7, &k) || k != (flow.Key{InPort: 7}) {
			t.Errorf("%d-byte runt: got true or key %v", n, k)
		}
	}
	var k flow.Key
	if flow.Extract(nil, 7, &k) || k.InPort != 7 {
		t.Error("nil frame")
	}
}

// A frame with a partial IPv6 extension header keeps addresses and label.
func TestExtractIPv6TruncatedExt(t *testing.T) {
	b := dptest.Frame{Src: macA, Dst: macB, IPv6: &dptest.IPv6{Src: ip61, Dst: ip62, FlowLabel: 7, Ext: []dptest.IPv6Ext{{Proto: 0}}}}.Bytes()
	b[14+40+1] = 200 // hop-by-hop length far beyond the payload
	var k flow.Key
	flow.Extract(b, 1, &k)
	want := flow.Key{InPort: 1, EthSrc: macA, EthDst: macB, EthType: flow.EthTypeIPv6, IPv6Src: a16(ip61), IPv6Dst: a16(ip62), IPv6Label: 7}
	if k != want {
		t.Errorf("got %v, want %v", k, want)
	}
}

// Key must stay padding-free: == and Hash rely on every byte being a field.
func TestKeyLayout(t *testing.T) {
	typ := reflect.TypeFor[flow.Key]()
	var sum uintptr
	for i := range typ.NumField() {
		sum += typ.Field(i).Type.Size()
	}
	if sum != typ.Size() || typ.Size() != flow.KeySize || flow.KeySize%8 != 0 {
		t.Fatalf("fields %d bytes, struct %d, KeySize %d", sum, typ.Size(), flow.KeySize)
	}
}

func TestMaskedAndHash(t *testing.T) {
	var k flow.Key
	flow.Extract(dptest.UDP4("00:00:00:00:00:01", "00:00:00:00:00:02"), 3, &k)
	m := flow.Mask{InPort: ^uint32(0), EthDst: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	got := k.Masked(&m)
	want := flow.Key{InPort: 3, EthDst: k.EthDst}
	if got != want {
		t.Errorf("Masked: got %v, want %v", got, want)
	}
	exact := flow.Exact()
	if k.Masked(&exact) != k {
		t.Error("Exact mask changed the key")
	}
	k2 := k
	k2.TpDst++
	if k.Hash() == k2.Hash() {
		t.Error("hash ignores TpDst")
	}
	if k3 := k.Masked(&exact); k.Hash() != k3.Hash() {
		t.Error("hash not deterministic")
	}
}

func TestKeyString(t *testing.T) {
	var k flow.Key
	f := dptest.Frame{Src: macA, Dst: macB, Tags: []dptest.Tag{{VID: 10, PCP: 3}},
		IPv4: &dptest.IPv4{Src: ip1, Dst: ip2}, UDP: &dptest.UDP{Src: 1, Dst: 2}}
	flow.Extract(f.Bytes(), 1, &k)
	want := "in_port(1),eth(src=00:00:00:00:00:0a,dst=00:00:00:00:00:0b),eth_type(0x8100),vlan(vid=10,pcp=3),encap(eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=1,dst=2))"
	if s := k.String(); s != want {
		t.Errorf("got  %s\nwant %s", s, want)
	}
	f.Tags = nil
	flow.Extract(f.Bytes(), 1, &k)
	want = "in_port(1),eth(src=00:00:00:00:00:0a,dst=00:00:00:00:00:0b),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=1,dst=2)"
	if s := k.String(); s != want {
		t.Errorf("got  %s\nwant %s", s, want)
	}
}
