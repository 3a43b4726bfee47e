package flow_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
)

// normalMask is the mask OVS's NORMAL gives a flow that it forwards
// without changing its tag: port, addresses, type, VID and tag presence,
// and the fragment bits of IP.
func normalMask(k *flow.Key) flow.Mask {
	m := flow.Mask{InPort: ^uint32(0), EthType: 0xffff, VLANTCI: 0x1fff,
		EthSrc: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, EthDst: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	if k.EthType == flow.EthTypeIPv4 || k.EthType == flow.EthTypeIPv6 {
		m.NwFrag = flow.FragAny | flow.FragLater
	}
	return m
}

// The expected texts are lines of `ovs-appctl dpctl/dump-flows [-m]` of
// Debian's OVS 3.1 (netdev datapath) for the same packets, up to the
// statistics.
func TestFormatODP(t *testing.T) {
	ip := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	mac := dptest.MAC
	a1, a2 := ip("10.77.0.1"), ip("10.77.0.2")
	names := func(no uint32) string { return map[uint32]string{1: "dprb0", 3: "dpra0", 4: "dprc0"}[no] }
	const meta = "skb_priority(0/0),skb_mark(0/0),ct_state(0/0),ct_zone(0/0),ct_mark(0/0),ct_label(0/0),recirc_id(0),dp_hash(0/0),"
	for _, tt := range []struct {
		name    string
		in      uint32
		frame   dptest.Frame
		mask    func(*flow.Key) flow.Mask
		brief   string
		verbose string
	}{{
		name:  "icmp",
		in:    3,
		frame: dptest.Frame{Src: mac("02:00:00:00:00:01"), Dst: mac("02:00:00:00:00:02"), IPv4: &dptest.IPv4{Src: a1, Dst: a2}, ICMP: &dptest.ICMP{Type: 8}},
		brief: "recirc_id(0),in_port(3),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02),eth_type(0x0800),ipv4(frag=no)",
		verbose: meta + "in_port(dpra0),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02),eth_type(0x0800)," +
			"ipv4(src=10.77.0.1/0.0.0.0,dst=10.77.0.2/0.0.0.0,proto=1/0,tos=0/0,ttl=64/0,frag=no),icmp(type=8/0,code=0/0)",
	}, {
		name:  "tcp",
		in:    3,
		frame: dptest.Frame{Src: mac("02:00:00:00:00:01"), Dst: mac("02:00:00:00:00:02"), IPv4: &dptest.IPv4{Src: a1, Dst: a2}, TCP: &dptest.TCP{Src: 52006, Dst: 5301, Flags: dptest.ACK}},
		brief: "recirc_id(0),in_port(3),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02),eth_type(0x0800),ipv4(frag=no)",
		verbose: meta + "in_port(dpra0),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02),eth_type(0x0800)," +
			"ipv4(src=10.77.0.1/0.0.0.0,dst=10.77.0.2/0.0.0.0,proto=6/0,tos=0/0,ttl=64/0,frag=no),tcp(src=52006/0,dst=5301/0),tcp_flags(0/0)",
	}, {
		name:  "pop-vlan",
		in:    1,
		frame: dptest.Frame{Src: mac("02:00:00:00:00:0b"), Dst: mac("02:00:00:00:00:99"), Tags: []dptest.Tag{{VID: 10}}, IPv4: &dptest.IPv4{Src: a1, Dst: a2}, UDP: &dptest.UDP{Src: 1000, Dst: 2000}},
		mask: func(k *flow.Key) flow.Mask {
			m := normalMask(k)
			m.VLANTCI, m.VLANTPID = 0xffff, 0xffff
			return m
		},
		brief: "recirc_id(0),in_port(1),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:0b,dst=02:00:00:00:00:99),eth_type(0x8100),vlan(vid=10,pcp=0),encap(eth_type(0x0800),ipv4(frag=no))",
		verbose: meta + "in_port(dprb0),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:0b,dst=02:00:00:00:00:99),eth_type(0x8100),vlan(vid=10,pcp=0)," +
			"encap(eth_type(0x0800),ipv4(src=10.77.0.1/0.0.0.0,dst=10.77.0.2/0.0.0.0,proto=17/0,tos=0/0,ttl=64/0,frag=no),udp(src=1000/0,dst=2000/0))",
	}, {
		name:    "vlan-pcp-wildcarded",
		in:      1,
		frame:   dptest.Frame{Src: mac("02:00:00:00:00:0b"), Dst: mac("02:00:00:00:00:0a"), Tags: []dptest.Tag{{VID: 10, PCP: 5}}, IPv4: &dptest.IPv4{Src: a1, Dst: a2}, UDP: &dptest.UDP{Src: 1000, Dst: 2000}},
		brief:   "recirc_id(0),in_port(1),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:0b,dst=02:00:00:00:00:0a),eth_type(0x8100),vlan(vid=10,pcp=5/0x0),encap(eth_type(0x0800),ipv4(frag=no))",
		verbose: "",
	}, {
		name:  "vlan-vid-only",
		in:    4,
		frame: dptest.Frame{Src: mac("02:00:00:00:00:03"), Dst: mac("02:00:00:00:00:0a"), Tags: []dptest.Tag{{VID: 10}}, IPv4: &dptest.IPv4{Src: a1, Dst: a2}, UDP: &dptest.UDP{Src: 1000, Dst: 2000}},
		brief: "recirc_id(0),in_port(4),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:03,dst=02:00:00:00:00:0a),eth_type(0x8100),vlan(vid=10),encap(eth_type(0x0800),ipv4(frag=no))",
		verbose: meta + "in_port(dprc0),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:03,dst=02:00:00:00:00:0a),eth_type(0x8100),vlan(vid=10,pcp=0/0x0)," +
			"encap(eth_type(0x0800),ipv4(src=10.77.0.1/0.0.0.0,dst=10.77.0.2/0.0.0.0,proto=17/0,tos=0/0,ttl=64/0,frag=no),udp(src=1000/0,dst=2000/0))",
	}, {
		name:  "arp-broadcast-request",
		in:    3,
		frame: dptest.Frame{Src: mac("02:00:00:00:00:01"), Dst: dptest.Broadcast, ARP: &dptest.ARP{Op: 1, SHA: mac("02:00:00:00:00:01"), SPA: a1, TPA: a2}},
		mask: func(k *flow.Key) flow.Mask {
			m := normalMask(k)
			m.NwProto, m.IPv4Src, m.IPv4Dst = 0xff, [4]byte{0xff, 0xff, 0xff, 0xff}, [4]byte{0xff, 0xff, 0xff, 0xff}
			return m
		},
		brief: "recirc_id(0),in_port(3),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:01,dst=ff:ff:ff:ff:ff:ff),eth_type(0x0806),arp(sip=10.77.0.1,tip=10.77.0.2,op=1)",
		verbose: meta + "in_port(dpra0),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:01,dst=ff:ff:ff:ff:ff:ff),eth_type(0x0806)," +
			"arp(sip=10.77.0.1,tip=10.77.0.2,op=1,sha=02:00:00:00:00:01/00:00:00:00:00:00,tha=00:00:00:00:00:00/00:00:00:00:00:00)",
	}, {
		name:  "arp-unicast-reply",
		in:    1,
		frame: dptest.Frame{Src: mac("02:00:00:00:00:02"), Dst: mac("02:00:00:00:00:01"), ARP: &dptest.ARP{Op: 2, SHA: mac("02:00:00:00:00:02"), THA: mac("02:00:00:00:00:01"), SPA: a2, TPA: a1}},
		brief: "recirc_id(0),in_port(1),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:02,dst=02:00:00:00:00:01),eth_type(0x0806)",
		verbose: meta + "in_port(dprb0),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:02,dst=02:00:00:00:00:01),eth_type(0x0806)," +
			"arp(sip=10.77.0.2/0.0.0.0,tip=10.77.0.1/0.0.0.0,op=2/0,sha=02:00:00:00:00:02/00:00:00:00:00:00,tha=02:00:00:00:00:01/00:00:00:00:00:00)",
	}, {
		name:    "802.3",
		in:      1,
		frame:   dptest.Frame{Src: mac("02:00:00:00:00:0b"), Dst: mac("02:00:00:00:00:0a"), EtherType: 40, Payload: append([]byte{0x42, 0x42, 3}, make([]byte, 43)...)},
		brief:   "recirc_id(0),in_port(1),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:0b,dst=02:00:00:00:00:0a),eth_type(0/0xffff)",
		verbose: meta + "in_port(dprb0),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:0b,dst=02:00:00:00:00:0a),eth_type(0/0xffff)",
	}, {
		name:  "first-fragment",
		in:    1,
		frame: dptest.Frame{Src: mac("02:00:00:00:00:0b"), Dst: mac("02:00:00:00:00:0a"), IPv4: &dptest.IPv4{Src: a1, Dst: a2, MF: true}, UDP: &dptest.UDP{Src: 1000, Dst: 2000}},
		brief: "recirc_id(0),in_port(1),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:0b,dst=02:00:00:00:00:0a),eth_type(0x0800),ipv4(frag=first)",
		verbose: meta + "in_port(dprb0),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:0b,dst=02:00:00:00:00:0a),eth_type(0x0800)," +
			"ipv4(src=10.77.0.1/0.0.0.0,dst=10.77.0.2/0.0.0.0,proto=17/0,tos=0/0,ttl=64/0,frag=first),udp(src=1000/0,dst=2000/0)",
	}, {
		name:  "later-fragment",
		in:    1,
		frame: dptest.Frame{Src: mac("02:00:00:00:00:0b"), Dst: mac("02:00:00:00:00:0a"), IPv4: &dptest.IPv4{Src: a1, Dst: a2, Proto: 17, FragOff: 2}, Payload: make([]byte, 28)},
		brief: "recirc_id(0),in_port(1),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:0b,dst=02:00:00:00:00:0a),eth_type(0x0800),ipv4(frag=later)",
		verbose: meta + "in_port(dprb0),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:0b,dst=02:00:00:00:00:0a),eth_type(0x0800)," +
			"ipv4(src=10.77.0.1/0.0.0.0,dst=10.77.0.2/0.0.0.0,proto=17/0,tos=0/0,ttl=64/0,frag=later)",
	}, {
		name: "ipv6-mld",
		in:   3,
		frame: dptest.Frame{Src: mac("02:00:00:00:00:01"), Dst: mac("33:33:00:00:00:16"),
			IPv6: &dptest.IPv6{Src: ip("::"), Dst: ip("ff02::16"), HopLimit: 1}, ICMP: &dptest.ICMP{Type: 143}},
		brief: "recirc_id(0),in_port(3),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:01,dst=33:33:00:00:00:16),eth_type(0x86dd),ipv6(frag=no)",
		verbose: meta + "in_port(dpra0),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:01,dst=33:33:00:00:00:16),eth_type(0x86dd)," +
			"ipv6(src=::/::,dst=ff02::16/::,label=0/0,proto=58/0,tclass=0/0,hlimit=1/0,frag=no),icmpv6(type=143/0,code=0/0)",
	}, {
		name:  "priority-tag-802.3",
		in:    1,
		frame: dptest.Frame{Src: mac("02:00:00:00:00:0b"), Dst: mac("02:00:00:00:00:0a"), Tags: []dptest.Tag{{VID: 0}}, EtherType: 0, Payload: make([]byte, 46)},
		mask: func(k *flow.Key) flow.Mask {
			m := normalMask(k)
			m.VLANTCI, m.VLANTPID = 0xffff, 0xffff
			return m
		},
		brief:   "recirc_id(0),in_port(1),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:0b,dst=02:00:00:00:00:0a),eth_type(0x8100),vlan(vid=0,pcp=0),encap()",
		verbose: meta + "in_port(dprb0),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:0b,dst=02:00:00:00:00:0a),eth_type(0x8100),vlan(vid=0,pcp=0),encap()",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			var k flow.Key
			if !flow.Extract(tt.frame.Bytes(), tt.in, &k) {
				t.Fatal("runt")
			}
			mf := normalMask
			if tt.mask != nil {
				mf = tt.mask
			}
			m := mf(&k)
			if got := flow.FormatODP(&k, &m, flow.ODPFormat{}); got != tt.brief {
				t.Errorf("brief:\n got %s\nwant %s", got, tt.brief)
			}
			// The packet fields alone are what follows packet_type.
			_, want, _ := strings.Cut(tt.brief, "packet_type(ns=0,id=0),")
			if got := flow.FormatODPPacket(&k, &m); got != want {
				t.Errorf("packet fields:\n got %s\nwant %s", got, want)
			}
			if tt.verbose == "" {
				return
			}
			if got := flow.FormatODP(&k, &m, flow.ODPFormat{Verbose: true, PortName: names}); got != tt.verbose {
				t.Errorf("verbose:\n got %s\nwant %s", got, tt.verbose)
			}
		})
	}
}

func TestFormatODPExact(t *testing.T) {
	var k flow.Key
	flow.Extract(dptest.Frame{Src: dptest.MAC("00:00:00:00:00:01"), Dst: dptest.MAC("00:00:00:00:00:02"),
		IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), TOS: 4},
		TCP:  &dptest.TCP{Src: 1, Dst: 2, Flags: dptest.SYN | dptest.ACK}}.Bytes(), 7, &k)
	// Without megaflows OVS matches the datapath metadata exactly
	// (flow_wildcards_init_for_packet): skb_priority and the ct
	// attributes show as zero.
	m := flow.Exact()
	want := "skb_priority(0),ct_state(0),ct_zone(0),ct_mark(0),ct_label(0),recirc_id(0),in_port(7),packet_type(ns=0,id=0),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800)," +
		"ipv4(src=10.0.0.1,dst=10.0.0.2,proto=6,tos=0x4,ttl=64,frag=no),tcp(src=1,dst=2),tcp_flags(syn|ack)"
	if got := flow.FormatODP(&k, &m, flow.ODPFormat{}); got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	m.IPv4Src = [4]byte{255, 255, 255, 0}
	m.TpDst = 0xff00
	m.TCPFlags = dptest.SYN
	want = "skb_priority(0),ct_state(0),ct_zone(0),ct_mark(0),ct_label(0),recirc_id(0),in_port(7),packet_type(ns=0,id=0),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800)," +
		"ipv4(src=10.0.0.1/255.255.255.0,dst=10.0.0.2,proto=6,tos=0x4,ttl=64,frag=no),tcp(src=1,dst=2/0xff00),tcp_flags(+syn)"
	if got := flow.FormatODP(&k, &m, flow.ODPFormat{}); got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	k.RecircID, k.CtState, k.CtZone, k.CtMark, k.CtLabel[15] = 1, 0x22, 5, 0x2a, 1
	k.CtNwProto, k.CtTpSrc, k.CtTpDst = 6, 1, 2
	copy(k.CtNwSrc[:], []byte{10, 0, 0, 1})
	copy(k.CtNwDst[:], []byte{10, 0, 0, 2})
	m = flow.Mask{InPort: ^uint32(0), RecircID: ^uint32(0), CtState: 0x23, CtZone: 0xffff, CtMark: 0xff, CtNwProto: 0xff, CtTpDst: 0xffff}
	want = "ct_state(-new+est+trk),ct_zone(0x5),ct_mark(0x2a/0xff),ct_tuple4(proto=6,tp_dst=2),recirc_id(0x1),in_port(7),packet_type(ns=0,id=0)"
	if got := flow.FormatODP(&k, &m, flow.ODPFormat{}); got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	for f, want := range map[uint16]string{0: "none", 0x002: "S", 0x012: "S.", 0x019: "FP.", 0x01d: "FPR.", 0x0c0: "EC", 0x210: ".[200]"} {
		if got := flow.FormatTCPFlags(f); got != want {
			t.Errorf("flags %#x: %s, want %s", f, got, want)
		}
	}
}
