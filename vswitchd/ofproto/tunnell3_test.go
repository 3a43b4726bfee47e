package ofproto

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/netdev/tunnel"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// A legacy_l2 GRE tunnel (tun2) and a legacy_l3 one (tun3) to the same
// remote, as OVS allows them (its tunnel match has the packet type):
// NORMAL floods to tun2 only; output to tun3 sends the packet behind its
// Ethernet header with its type as the GRE protocol; a decapsulated IP
// packet (TunFlagL3) enters on tun3, an Ethernet frame on tun2, and the
// megaflow tells them apart.
func TestTunnelGRELegacyL3(t *testing.T) {
	tb := newTestBacker(t)
	tb.SetTunnelEnv(&fakeTnlEnv{neigh: map[netip.Addr]net.HardwareAddr{netip.MustParseAddr("172.31.0.2"): {2, 0, 0, 0, 0, 0x20}}})
	l2 := &TunnelConfig{Kind: tunnel.KindGRE, Remote: netip.MustParseAddr("172.31.0.2")}
	l3 := &TunnelConfig{Kind: tunnel.KindGRE, Remote: netip.MustParseAddr("172.31.0.2"), L3: true}
	br := tb.bridge("br-int", BridgeConfig{Ports: []PortConfig{trunk("vif", 1),
		{Name: "tun2", OFPort: 2, DPPort: 100, Tag: -1, Tunnel: l2}, {Name: "tun3", OFPort: 3, DPPort: 100, Tag: -1, Tunnel: l3}}})
	tb.bridge("br-phy", BridgeConfig{Ports: []PortConfig{trunk("ul", 2), {Name: "br-phy", OFPort: LocalOFPort, DPPort: 3, Tag: -1}}})

	acts, _ := tb.xlate(1, eth(macA, macB))
	if strings.Count(acts, "tnl_push(") != 1 || !strings.Contains(acts, "gre((flags=0x0,proto=0x6558))") {
		t.Errorf("NORMAL flood: %s, want tun2's tnl_push only", acts)
	}

	mustMod(t, br, fmSpec{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {1, 0}}, actions: []ofp.Action{output(3)}})
	acts, mask := tb.xlate(1, eth(macA, macB))
	if want := "tnl_push(tnl_port(100),header(size=38,type=3,eth(dst=02:00:00:00:00:20,src=02:00:00:00:00:10,dl_type=0x0800),ipv4(src=172.31.0.1,dst=172.31.0.2,proto=47,tos=0,ttl=64,frag=0x4000),gre((flags=0x0,proto=0x800))),out_port(3)),2"; acts != want {
		t.Errorf("output to tun3:\n got %s\nwant %s", acts, want)
	}
	if mask.EthType != 0xffff {
		t.Errorf("output to tun3 does not match eth_type: %+v", mask)
	}
	// A VLAN-tagged IPv4 frame: the same protocol, the tag goes with
	// the header (in the datapath).
	if acts, _ := tb.xlate(1, eth(macA, macB, tag(5))); !strings.Contains(acts, "proto=0x800") {
		t.Errorf("tagged output to tun3: %s", acts)
	}

	mustMod(t, br, fmSpec{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {3, 0}}, actions: []ofp.Action{output(1)}})
	mustMod(t, br, fmSpec{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {2, 0}}})
	dec := func(l3 bool) datapath.Upcall {
		u := datapath.Upcall{}
		flow.Extract(eth("00:00:00:00:00:00", "00:00:00:00:00:00"), 100, &u.Key)
		u.Key.TunSrc, u.Key.TunDst = netip.MustParseAddr("172.31.0.2").As16(), netip.MustParseAddr("172.31.0.1").As16()
		if l3 {
			u.Key.TunFlags |= flow.TunFlagL3
		}
		return u
	}
	u := []datapath.Upcall{dec(true), dec(false)}
	tb.Upcall(u)
	if got := u[0].Actions.String(); got != "1" {
		t.Errorf("IP packet from the tunnel: %s, want tun3's flow", got)
	}
	if got := u[1].Actions.String(); got != "drop" {
		t.Errorf("Ethernet frame from the tunnel: %s, want tun2's flow", got)
	}
	if u[0].Mask.TunFlags&flow.TunFlagL3 == 0 {
		t.Errorf("megaflow does not match the packet type: %+v", u[0].Mask)
	}
	if got := tb.ListTunnels(); !strings.Contains(got, "tun3 (gre: ::->172.31.0.2, key=0, legacy_l3, dp port=100") ||
		!strings.Contains(got, "tun2 (gre: ::->172.31.0.2, key=0, legacy_l2, dp port=100") {
		t.Errorf("list-tunnels:\n%s", got)
	}

	// Without a legacy_l3 port, an IP packet from GRE has no port.
	tb.bridge("br-int", BridgeConfig{Ports: []PortConfig{trunk("vif", 1), {Name: "tun2", OFPort: 2, DPPort: 100, Tag: -1, Tunnel: l2}}})
	mustMod(t, br, fmSpec{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {2, 0}}, actions: []ofp.Action{output(1)}})
	u = []datapath.Upcall{dec(true), dec(false)}
	tb.Upcall(u)
	if got := u[0].Actions.String(); got != "drop" {
		t.Errorf("IP packet without a legacy_l3 port: %s", got)
	}
	if got := u[1].Actions.String(); got != "1" {
		t.Errorf("Ethernet frame to tun2: %s", got)
	}
}
