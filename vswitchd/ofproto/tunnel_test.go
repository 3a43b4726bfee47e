package ofproto

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/netdev/tunnel"
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
	if !strings.HasPrefix(acts, "clone(tnl_push(tnl_port(4789),header(eth(dst=02:00:00:00:00:20,src=02:00:00:00:00:10),ipv4(src=172.31.0.1,dst=172.31.0.2,ttl=64),udp(dst=4789),vxlan(vni=0x5)),out_port(3)),2)") {
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
