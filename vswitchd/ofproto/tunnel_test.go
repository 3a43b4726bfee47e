package ofproto

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/netdev/tunnel"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// fakeTnlEnv routes 172.31.0.0/24 to br-phy, owns 172.31.0.1, and has
// the neighbours it is told.
type fakeTnlEnv struct {
	mu    sync.Mutex
	neigh map[netip.Addr]net.HardwareAddr
}

func (e *fakeTnlEnv) Route(dst netip.Addr) (string, netip.Addr, netip.Addr, bool) {
	if !netip.MustParsePrefix("172.31.0.0/24").Contains(dst) {
		return "", netip.Addr{}, netip.Addr{}, false
	}
	return "br-phy", netip.MustParseAddr("172.31.0.1"), dst, true
}
func (e *fakeTnlEnv) IsLocal(a netip.Addr) bool { return a == netip.MustParseAddr("172.31.0.1") }
func (e *fakeTnlEnv) Neigh(_ string, ip netip.Addr) (net.HardwareAddr, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	m, ok := e.neigh[ip]
	return m, ok
}
func (e *fakeTnlEnv) LearnNeigh(_ string, ip netip.Addr, mac net.HardwareAddr) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.neigh[ip] = mac
	return true
}
func (e *fakeTnlEnv) DevMAC(string) (net.HardwareAddr, bool) {
	return net.HardwareAddr{2, 0, 0, 0, 0, 0x10}, true
}

// br-int (vif 1, tunnel tun0 on vport 4789) and br-phy (ul 2, local
// port 3): an ARP reply on br-phy teaches the next hop; output to tun0
// becomes one tnl_push with br-phy's actions inside; VXLAN for the local
// address arriving on ul is popped; the decapsulated packet enters br-int
// on tun0 when its VNI and source match.
func TestTunnelTranslation(t *testing.T) {
	tb := newTestBacker(t)
	env := &fakeTnlEnv{neigh: map[netip.Addr]net.HardwareAddr{}}
	tb.SetTunnelEnv(env)
	tnl := &TunnelConfig{Kind: tunnel.KindVXLAN, Remote: netip.MustParseAddr("172.31.0.2"), InKey: 5, OutKey: 5,
		InKeyPresent: true, OutKeyPresent: true, DstPort: 4789}
	tb.bridge("br-int", BridgeConfig{Ports: []PortConfig{trunk("vif", 1), {Name: "tun0", OFPort: 2, DPPort: 4789, Tag: -1, Tunnel: tnl}}})
	tb.bridge("br-phy", BridgeConfig{Ports: []PortConfig{trunk("ul", 2), {Name: "br-phy", OFPort: LocalOFPort, DPPort: 3, Tag: -1}}})

	ip := netip.MustParseAddr
	// No neighbour yet: dropped (an ARP request goes out).
	if acts, _ := tb.xlate(1, eth(macA, macB)); acts != "drop" {
		t.Errorf("without a neighbour: %s", acts)
	}
	reply := dptest.Frame{Src: dptest.MAC("02:00:00:00:00:20"), Dst: dptest.MAC("02:00:00:00:00:10"),
		ARP: &dptest.ARP{Op: 2, SHA: dptest.MAC("02:00:00:00:00:20"), SPA: ip("172.31.0.2"), THA: dptest.MAC("02:00:00:00:00:10"), TPA: ip("172.31.0.1")}}.Bytes()
	tb.xlate(2, reply)
	if m, ok := env.Neigh("br-phy", ip("172.31.0.2")); !ok || m.String() != "02:00:00:00:00:20" {
		t.Fatalf("ARP reply not learned: %v %v", m, ok)
	}
	acts, mask := tb.xlate(1, eth(macA, macB))
	if acts != "tnl_push(tnl_port(4789),header(size=50,type=4,eth(dst=02:00:00:00:00:20,src=02:00:00:00:00:10,dl_type=0x0800),ipv4(src=172.31.0.1,dst=172.31.0.2,proto=17,tos=0,ttl=64,frag=0x4000),udp(src=0,dst=4789,csum=0x0),vxlan(flags=0x8000000,vni=0x5)),out_port(3)),2" {
		t.Errorf("output to tun0: %s", acts)
	}
	if mask.IPv4Dst != ([4]byte{}) || mask.TunID != 0 {
		t.Errorf("inner mask consults %+v", mask)
	}

	h := tunnel.Header{Kind: tunnel.KindVXLAN, EthSrc: dptest.MAC("02:00:00:00:00:20"), EthDst: dptest.MAC("02:00:00:00:00:10"),
		Src: ip("172.31.0.2"), Dst: ip("172.31.0.1"), TTL: 64, SrcPort: 40000, DstPort: 4789, Key: 5}
	enc, _ := tunnel.Build(&h, eth(macB, macA))
	acts, mask = tb.xlate(2, enc)
	if acts != "tnl_pop(4789)" {
		t.Errorf("VXLAN for this host on ul: %s", acts)
	}
	if mask.TpDst != 0xffff || mask.IPv4Dst != [4]byte{0xff, 0xff, 0xff, 0xff} || mask.NwProto != 0xff {
		t.Errorf("pop mask %+v", mask)
	}
	u := []datapath.Upcall{{}}
	flow.Extract(eth(macB, macA), 4789, &u[0].Key)
	u[0].Key.TunID, u[0].Key.TunSrc, u[0].Key.TunDst = 5, h.Src.As16(), h.Dst.As16()
	tb.Upcall(u)
	if got := u[0].Actions.String(); got != "1" {
		t.Errorf("decapsulated VNI 5: %s", got)
	}
	u = []datapath.Upcall{{}}
	flow.Extract(eth(macB, macA), 4789, &u[0].Key)
	u[0].Key.TunID, u[0].Key.TunSrc, u[0].Key.TunDst = 6, h.Src.As16(), h.Dst.As16()
	tb.Upcall(u)
	if got := u[0].Actions.String(); got != "drop" || u[0].Mask.TunID != ^uint64(0) {
		t.Errorf("decapsulated VNI 6: %s, mask tun_id %#x", got, u[0].Mask.TunID)
	}
}

// Geneve with OVN's option mapped to tun_metadata0: a flow's set_field
// becomes the option tnl_push sends (with the C bit, the option being
// critical); a decapsulated packet matches tun_metadata0 through the
// map, the megaflow masking the options' headers and the matched bits;
// another value, or an unknown critical option, is dropped. A mapping in
// use cannot be deleted, and an unmapped field is refused as OVS does.
func TestTunnelGeneveMetadata(t *testing.T) {
	tb := newTestBacker(t)
	env := &fakeTnlEnv{neigh: map[netip.Addr]net.HardwareAddr{
		netip.MustParseAddr("172.31.0.2"): {2, 0, 0, 0, 0, 0x20}}}
	tb.SetTunnelEnv(env)
	tnl := &TunnelConfig{Kind: tunnel.KindGeneve, Remote: netip.MustParseAddr("172.31.0.2"), InKey: 5, OutKey: 5, DstPort: 6081}
	br := tb.bridge("br-int", BridgeConfig{Ports: []PortConfig{trunk("vif", 1), {Name: "tun0", OFPort: 2, DPPort: 6081, Tag: -1, Tunnel: tnl}}})
	tb.bridge("br-phy", BridgeConfig{Ports: []PortConfig{trunk("ul", 2), {Name: "br-phy", OFPort: LocalOFPort, DPPort: 3, Tag: -1}}})
	if err := br.TLVTableMod(&ofp.TLVTableMod{Command: ofp.TLVAdd, Maps: []ofp.TLVMap{{Class: 0x102, Type: 0x80, Len: 4, Index: 0}}}); err != nil {
		t.Fatal(err)
	}
	md := func(idx int, v ...byte) *ofp.FlowMod {
		fm := fmSpec{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {2, 0}}, actions: []ofp.Action{output(1)}}.mod()
		fm.Match.TunMD = []ofp.TunMDEntry{{Idx: idx, Value: v}}
		return fm
	}
	if err := br.FlowMod(md(0, 0x0a, 0x00, 0x01)); err != nil {
		t.Fatal(err)
	}
	// Other packets from the tunnel are dropped, not left to NORMAL.
	if err := br.FlowMod(fmSpec{prio: 5, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {2, 0}}}.mod()); err != nil {
		t.Fatal(err)
	}
	set := ofp.Action{Type: ofp.ActSetField, Field: ofp.TunMetadataField(0, 4), Value: []byte{0, 5, 0, 2}, Mask: []byte{0xff, 0xff, 0xff, 0xff}}
	if err := br.FlowMod(fmSpec{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {1, 0}}, actions: []ofp.Action{set, output(2)}}.mod()); err != nil {
		t.Fatal(err)
	}
	if err := br.FlowMod(md(1, 1)); err == nil || err.Errno != ofp.InvalidTLVField {
		t.Errorf("unmapped tun_metadata1: %v", err)
	}
	if err := br.TLVTableMod(&ofp.TLVTableMod{Command: ofp.TLVDelete, Maps: []ofp.TLVMap{{Index: 0}}}); err == nil || err.Errno != ofp.TLVInvalidDel {
		t.Errorf("deleting a mapping in use: %v", err)
	}

	acts, _ := tb.xlate(1, eth(macA, macB))
	if want := "geneve(crit,vni=0x5,options({class=0x102,type=0x80,len=4,0x50002}))"; !strings.Contains(acts, want) {
		t.Errorf("output to tun0: %s, want %s in it", acts, want)
	}

	decap := func(opts ...byte) []datapath.Upcall {
		u := []datapath.Upcall{{}}
		flow.Extract(eth(macB, macA), 6081, &u[0].Key)
		k := &u[0].Key
		k.TunID, k.TunSrc, k.TunDst = 5, netip.MustParseAddr("::ffff:172.31.0.2").As16(), netip.MustParseAddr("::ffff:172.31.0.1").As16()
		k.TunFlags = flow.TunFlagKey
		k.TunOptsLen = uint8(copy(k.TunOpts[:], opts))
		tb.Upcall(u)
		return u
	}
	u := decap(0x01, 0x02, 0x80, 0x01, 0x00, 0x0a, 0x00, 0x01)
	if got := u[0].Actions.String(); got != "1" {
		t.Errorf("tun_metadata0=0xa0001: %s", got)
	}
	m := u[0].Mask
	if m.TunOptsLen != 0xff || [8]byte(m.TunOpts[:8]) != [8]byte{0xff, 0xff, 0xff, 0x1f, 0xff, 0xff, 0xff, 0xff} {
		t.Errorf("mask options %#x %x", m.TunOptsLen, m.TunOpts[:8])
	}
	want := "tunnel(tun_id=0x5,src=172.31.0.2,dst=172.31.0.1,geneve({class=0x102,type=0x80,len=4,0xa0001}),flags(-df-csum+key))"
	if got := flow.FormatODP(&u[0].Key, &m, flow.ODPFormat{}); !strings.HasPrefix(got, want) {
		t.Errorf("megaflow %s, want %s...", got, want)
	}
	if got := decap(0x01, 0x02, 0x80, 0x01, 0x00, 0x0a, 0x00, 0x02)[0].Actions.String(); got != "drop" {
		t.Errorf("tun_metadata0=0xa0002: %s", got)
	}
	if got := decap(0x01, 0x02, 0x80, 0x01, 0x00, 0x0a, 0x00, 0x01, 0xff, 0xff, 0x80, 0x00)[0].Actions.String(); got != "drop" {
		t.Errorf("with an unknown critical option: %s", got)
	}
	if got := decap(0x01, 0x02, 0x80, 0x01, 0x00, 0x0a, 0x00, 0x01, 0xff, 0xff, 0x00, 0x00)[0].Actions.String(); got != "1" {
		t.Errorf("with an unknown non-critical option: %s", got)
	}
	if got := decap()[0].Actions.String(); got != "drop" {
		t.Errorf("without options: %s", got)
	}
}

// fakeTnlEnv6 routes 2001:db8:31::/64 to br-phy and owns 2001:db8:31::1.
type fakeTnlEnv6 struct{ fakeTnlEnv }

func (e *fakeTnlEnv6) Route(dst netip.Addr) (string, netip.Addr, netip.Addr, bool) {
	if !netip.MustParsePrefix("2001:db8:31::/64").Contains(dst) {
		return "", netip.Addr{}, netip.Addr{}, false
	}
	return "br-phy", netip.MustParseAddr("2001:db8:31::1"), dst, true
}
func (e *fakeTnlEnv6) IsLocal(a netip.Addr) bool { return a == netip.MustParseAddr("2001:db8:31::1") }

// The IPv6 underlay: a neighbour advertisement with a target link-layer
// address, output to br-phy's local port, teaches the next hop (one
// without the option, or a solicitation, teaches nothing); output to tun0
// then pushes an IPv6 outer header, and Geneve for the local address
// arriving on ul is popped.
func TestTunnelTranslationIPv6(t *testing.T) {
	tb := newTestBacker(t)
	env := &fakeTnlEnv6{fakeTnlEnv{neigh: map[netip.Addr]net.HardwareAddr{}}}
	tb.SetTunnelEnv(env)
	ip := netip.MustParseAddr
	tnl := &TunnelConfig{Kind: tunnel.KindGeneve, Remote: ip("2001:db8:31::2"), InKey: 5, OutKey: 5,
		InKeyPresent: true, OutKeyPresent: true, DstPort: 6081}
	tb.bridge("br-int", BridgeConfig{Ports: []PortConfig{trunk("vif", 1), {Name: "tun0", OFPort: 2, DPPort: 6081, Tag: -1, Tunnel: tnl}}})
	tb.bridge("br-phy", BridgeConfig{Ports: []PortConfig{trunk("ul", 2), {Name: "br-phy", OFPort: LocalOFPort, DPPort: 3, Tag: -1}}})

	if acts, _ := tb.xlate(1, eth(macA, macB)); acts != "drop" {
		t.Errorf("without a neighbour: %s", acts)
	}
	far, near := dptest.MAC("02:00:00:00:00:20"), dptest.MAC("02:00:00:00:00:10")
	nd := func(typ uint8, opt []byte) []byte {
		tgt := ip("2001:db8:31::2").As16()
		return dptest.Frame{Src: far, Dst: near, IPv6: &dptest.IPv6{Src: ip("2001:db8:31::2"), Dst: ip("2001:db8:31::1"), HopLimit: 255},
			ICMP: &dptest.ICMP{Type: typ, Rest: 0x60000000}, Payload: append(tgt[:], opt...)}.Checksummed()
	}
	tb.xlate(2, nd(136, nil))
	tb.xlate(2, nd(135, dptest.NDOpt(1, far)))
	if m, ok := env.Neigh("br-phy", ip("2001:db8:31::2")); ok {
		t.Fatalf("learned %v from an NA without TLL or an NS", m)
	}
	_, mask := tb.xlate(2, nd(136, dptest.NDOpt(2, far)))
	if m, ok := env.Neigh("br-phy", ip("2001:db8:31::2")); !ok || m.String() != "02:00:00:00:00:20" {
		t.Fatalf("NA not learned: %v %v", m, ok)
	}
	if mask.NdTarget[0] != 0xff || mask.ArpTHA[0] != 0xff || mask.TpSrc != 0xffff {
		t.Errorf("snoop mask %+v", mask)
	}
	acts, _ := tb.xlate(1, eth(macA, macB))
	if !strings.HasPrefix(acts, "tnl_push(tnl_port(6081),header(size=70,type=5,eth(dst=02:00:00:00:00:20,src=02:00:00:00:00:10,dl_type=0x86dd),ipv6(src=2001:db8:31::1,dst=2001:db8:31::2,label=0,proto=17,tclass=0x0,hlimit=64),udp(src=0,dst=6081,csum=0xffff),geneve(") ||
		!strings.Contains(acts, "geneve(") {
		t.Errorf("output to tun0: %s", acts)
	}

	h := tunnel.Header{Kind: tunnel.KindGeneve, EthSrc: far, EthDst: near,
		Src: ip("2001:db8:31::2"), Dst: ip("2001:db8:31::1"), TTL: 64, SrcPort: 40000, DstPort: 6081, Key: 5}
	enc, _ := tunnel.Build(&h, eth(macB, macA))
	if acts, _ := tb.xlate(2, enc); acts != "tnl_pop(6081)" {
		t.Errorf("Geneve over IPv6 for this host on ul: %s", acts)
	}
}

// ecnBridges is TestTunnelTranslation's br-int and br-phy with tun0's
// config c, the next hop known.
func ecnBridges(t *testing.T, c *TunnelConfig) *testBacker {
	tb := newTestBacker(t)
	env := &fakeTnlEnv{neigh: map[netip.Addr]net.HardwareAddr{
		netip.MustParseAddr("172.31.0.2"): {2, 0, 0, 0, 0, 0x20}}}
	tb.SetTunnelEnv(env)
	tb.bridge("br-int", BridgeConfig{Ports: []PortConfig{trunk("vif", 1), {Name: "tun0", OFPort: 2, DPPort: 4789, Tag: -1, Tunnel: c}}})
	tb.bridge("br-phy", BridgeConfig{Ports: []PortConfig{trunk("ul", 2), {Name: "br-phy", OFPort: LocalOFPort, DPPort: 3, Tag: -1}}})
	return tb
}

func ipFrame(tos, ttl uint8, v6 bool) []byte {
	f := dptest.Frame{Src: dptest.MAC(macB), Dst: dptest.MAC(macA), UDP: &dptest.UDP{Src: 1, Dst: 2}}
	if v6 {
		f.IPv6 = &dptest.IPv6{Src: netip.MustParseAddr("fd00::1"), Dst: netip.MustParseAddr("fd00::2"), TrafficClass: tos, HopLimit: ttl}
	} else {
		f.IPv4 = &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), TOS: tos, TTL: ttl}
	}
	return f.Bytes()
}

// A decapsulated packet whose outer ECN is CE (RFC 6040, OVS's
// tnl_process_ecn): an ECN-capable inner packet is marked CE, one that is
// not is dropped; the flow matches the outer TOS always and the inner
// ECN when the outer is CE, as OVS's tests/tunnel.at "ECN decapsulation".
func TestTunnelECNDecap(t *testing.T) {
	tb := ecnBridges(t, &TunnelConfig{Kind: tunnel.KindVXLAN, Remote: netip.MustParseAddr("172.31.0.2"), InKey: 5, OutKey: 5,
		InKeyPresent: true, OutKeyPresent: true, DstPort: 4789})
	for _, c := range []struct {
		outer, inner uint8
		v6           bool
		want         string
		ecnMasked    bool
	}{
		{outer: 0x03, inner: 0x03, want: "1", ecnMasked: true},
		{outer: 0x03, inner: 0x01, want: "set(ipv4(tos=0x3/0x3)),1", ecnMasked: true},
		{outer: 0x03, inner: 0x02, want: "set(ipv4(tos=0x3/0x3)),1", ecnMasked: true},
		{outer: 0x03, inner: 0x00, want: "drop", ecnMasked: true},
		{outer: 0xbb, inner: 0xb8, want: "drop", ecnMasked: true},
		{outer: 0x03, inner: 0x01, v6: true, want: "set(ipv6(tclass=0x3/0x3)),1", ecnMasked: true},
		{outer: 0x03, inner: 0x00, v6: true, want: "drop", ecnMasked: true},
		{outer: 0x02, inner: 0x00, want: "1"},
		{outer: 0x01, inner: 0x02, want: "1"},
	} {
		u := []datapath.Upcall{{}}
		flow.Extract(ipFrame(c.inner, 64, c.v6), 4789, &u[0].Key)
		k := &u[0].Key
		k.TunID, k.TunFlags, k.TunTOS, k.TunTTL = 5, flow.TunFlagKey, c.outer, 64
		k.TunSrc, k.TunDst = netip.MustParseAddr("::ffff:172.31.0.2").As16(), netip.MustParseAddr("::ffff:172.31.0.1").As16()
		tb.Upcall(u)
		m := u[0].Mask
		if got := u[0].Actions.String(); got != c.want || m.TunTOS != 0xff || (m.NwTOS&3 == 3) != c.ecnMasked {
			t.Errorf("outer tos %#x inner %#x (v6 %v): %s, mask tun_tos %#x nw_tos %#x; want %s, ECN masked %v",
				c.outer, c.inner, c.v6, got, m.TunTOS, m.NwTOS, c.want, c.ecnMasked)
		}
	}

	// A mirror of tun0's input to port 5 copies what goes on, not what
	// the ECN check drops.
	tnl := &TunnelConfig{Kind: tunnel.KindVXLAN, Remote: netip.MustParseAddr("172.31.0.2"), InKey: 5, OutKey: 5,
		InKeyPresent: true, OutKeyPresent: true, DstPort: 4789}
	tb.bridge("br-int", BridgeConfig{Ports: []PortConfig{trunk("vif", 1), {Name: "tun0", OFPort: 2, DPPort: 4789, Tag: -1, Tunnel: tnl}, trunk("m", 5)},
		Mirrors: []MirrorConfig{{Key: "m", Name: "m", Src: []string{"tun0"}, Out: []string{"m"}}}})
	for inner, want := range map[uint8]string{0x00: "drop", 0x01: "5,set(ipv4(tos=0x3/0x3)),1"} {
		u := []datapath.Upcall{{}}
		flow.Extract(ipFrame(inner, 64, false), 4789, &u[0].Key)
		k := &u[0].Key
		k.TunID, k.TunFlags, k.TunTOS, k.TunTTL = 5, flow.TunFlagKey, 0x03, 64
		k.TunSrc, k.TunDst = netip.MustParseAddr("::ffff:172.31.0.2").As16(), netip.MustParseAddr("::ffff:172.31.0.1").As16()
		tb.Upcall(u)
		if got := u[0].Actions.String(); got != want {
			t.Errorf("mirrored, inner tos %#x: %s, want %s", inner, got, want)
		}
	}
}

// Output to a tunnel: the outer ECN is the inner packet's (CE as ECT(0))
// and the inner ECN is in the megaflow; with tos=inherit and ttl=inherit
// the outer DSCP and TTL are the inner packet's too (OVS's
// tnl_port_send). A packet that is not IP gets the configured ones.
func TestTunnelEncapTOSTTL(t *testing.T) {
	hdr := func(tos string, ttl int) string {
		return "tnl_push(tnl_port(4789),header(size=50,type=4,eth(dst=02:00:00:00:00:20,src=02:00:00:00:00:10,dl_type=0x0800)," +
			"ipv4(src=172.31.0.1,dst=172.31.0.2,proto=17,tos=" + tos + ",ttl=" + strconv.Itoa(ttl) + ",frag=0x4000)," +
			"udp(src=0,dst=4789,csum=0x0),vxlan(flags=0x8000000,vni=0x5)),out_port(3)),2"
	}
	base := TunnelConfig{Kind: tunnel.KindVXLAN, Remote: netip.MustParseAddr("172.31.0.2"), InKey: 5, OutKey: 5,
		InKeyPresent: true, OutKeyPresent: true, DstPort: 4789}
	fixed, inherit := base, base
	fixed.TOS, fixed.TTL = 0x20, 10
	inherit.TOSInherit, inherit.TTLInherit = true, true
	for _, c := range []struct {
		name     string
		cfg      TunnelConfig
		frame    []byte
		want     string
		tos, ttl uint8 // the inner mask's
	}{
		{"not-ECT", base, ipFrame(0xb8, 33, false), hdr("0", 64), 0x03, 0},
		{"ECT(1)", base, ipFrame(0x01, 33, false), hdr("0x1", 64), 0x03, 0},
		{"CE", base, ipFrame(0x03, 33, false), hdr("0x2", 64), 0x03, 0},
		{"fixed ECT(0)", fixed, ipFrame(0xfe, 33, false), hdr("0x22", 10), 0x03, 0},
		{"inherit", inherit, ipFrame(0xb9, 33, false), hdr("0xb9", 33), 0xff, 0xff},
		{"inherit v6", inherit, ipFrame(0x2b, 7, true), hdr("0x2a", 7), 0xff, 0xff},
		{"inherit not IP", inherit, eth(macA, macB)[:14], hdr("0", 64), 0, 0},
	} {
		tb := ecnBridges(t, &c.cfg)
		frame := c.frame
		if c.name == "inherit not IP" {
			frame = append(frame[:12:12], 0x88, 0xb5, 0, 0, 0, 0)
		}
		acts, m := tb.xlate(1, frame)
		if acts != c.want || m.NwTOS != c.tos || m.NwTTL != c.ttl {
			t.Errorf("%s: %s, mask nw_tos %#x nw_ttl %#x\nwant %s, mask nw_tos %#x nw_ttl %#x", c.name, acts, m.NwTOS, m.NwTTL, c.want, c.tos, c.ttl)
		}
	}
}

// tun_flags' OAM flag, set by set_field, is the O bit of the Geneve
// header the packet is pushed in (OVS's netdev_geneve_build_header).
func TestTunnelGeneveOAM(t *testing.T) {
	tb := newTestBacker(t)
	tb.SetTunnelEnv(&fakeTnlEnv{neigh: map[netip.Addr]net.HardwareAddr{
		netip.MustParseAddr("172.31.0.2"): {2, 0, 0, 0, 0, 0x20}}})
	tnl := &TunnelConfig{Kind: tunnel.KindGeneve, Remote: netip.MustParseAddr("172.31.0.2"), InKey: 5, OutKey: 5, DstPort: 6081}
	br := tb.bridge("br-int", BridgeConfig{Ports: []PortConfig{trunk("vif", 1), {Name: "tun0", OFPort: 2, DPPort: 6081, Tag: -1, Tunnel: tnl}}})
	tb.bridge("br-phy", BridgeConfig{Ports: []PortConfig{trunk("ul", 2), {Name: "br-phy", OFPort: LocalOFPort, DPPort: 3, Tag: -1}}})
	oam := ofp.LoadAction(ofp.FieldByID(ofp.FieldTunFlags), []byte{0, 1}, []byte{0, 1})
	if err := br.FlowMod(fmSpec{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {1, 0}}, actions: []ofp.Action{oam, output(2)}}.mod()); err != nil {
		t.Fatal(err)
	}
	if acts, _ := tb.xlate(1, eth(macA, macB)); !strings.Contains(acts, "geneve(oam,vni=0x5)") {
		t.Errorf("output to tun0 after set_field:+oam->tun_flags: %s, want geneve(oam,vni=0x5) in it", acts)
	}
}

// options:egress_pkt_mark sets the packet's mark for the output to the
// tunnel, before its tnl_push, as OVS's tnl_port_send and commit.
func TestTunnelEgressPktMark(t *testing.T) {
	c := TunnelConfig{Kind: tunnel.KindVXLAN, Remote: netip.MustParseAddr("172.31.0.2"), InKey: 5, OutKey: 5,
		InKeyPresent: true, OutKeyPresent: true, DstPort: 4789, EgressPktMark: 5, SetEgressPktMark: true}
	push := "tnl_push(tnl_port(4789),header(size=50,type=4,eth(dst=02:00:00:00:00:20,src=02:00:00:00:00:10,dl_type=0x0800)," +
		"ipv4(src=172.31.0.1,dst=172.31.0.2,proto=17,tos=0,ttl=64,frag=0x4000),udp(src=0,dst=4789,csum=0x0),vxlan(flags=0x8000000,vni=0x5)),out_port(3)),2"
	tb := ecnBridges(t, &c)
	if acts, _ := tb.xlate(1, eth(macA, macB)); acts != "set(skb_mark(0x5)),"+push {
		t.Errorf("egress_pkt_mark=5: %s", acts)
	}
	// Zero is a mark too: a packet that left marked 7 leaves the tunnel
	// with 0; one whose 7 was never committed needs no set.
	c.EgressPktMark = 0
	for _, tc := range []struct {
		acts []ofp.Action
		want string
	}{
		{[]ofp.Action{setMark(7), output(ofp.PortInPort), output(2)}, "set(skb_mark(0x7)),1,set(skb_mark(0))," + push},
		{[]ofp.Action{setMark(7), output(2)}, push},
	} {
		tb = ecnBridges(t, &c)
		mustMod(t, tb.bridges["br-int"], fmSpec{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {1, 0}}, actions: tc.acts})
		if acts, _ := tb.xlate(1, eth(macA, macB)); acts != tc.want {
			t.Errorf("egress_pkt_mark=0 after pkt_mark 7:\n%s, want\n%s", acts, tc.want)
		}
	}
}

func setMark(v byte) ofp.Action {
	return ofp.Action{Type: ofp.ActSetField, Field: ofp.FieldByID(ofp.FieldPktMark), Value: []byte{0, 0, 0, v}, Mask: []byte{0xff, 0xff, 0xff, 0xff}}
}
