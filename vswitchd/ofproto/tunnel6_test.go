package ofproto

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/govs/govs/datapath/flow"
)

// TestParseFlowTunnelIPv6: an ofproto/trace flow's tun_ipv6_src and
// tun_ipv6_dst are the key's outer addresses; Flow: shows both
// versions' fields (tun_src and tun_dst 0), and the megaflow of a packet
// from the tunnel (tnl_wc_init) the IPv6 ones, as OVS's. 0.0.0.0 or ::
// of the other version leaves an address alone.
func TestParseFlowTunnelIPv6(t *testing.T) {
	tab := traceTLVTable(t)
	k, _, _, err := parseFlow("in_port=1,tun_ipv6_src=fd00::ffff:ac1f:903,tun_ipv6_dst=fd00::1/128,tun_src=0.0.0.0,tun_ttl=64", tab, tracePort)
	if err != nil {
		t.Fatal(err)
	}
	if netip.AddrFrom16(k.TunSrc) != netip.MustParseAddr("fd00::ffff:ac1f:903") || netip.AddrFrom16(k.TunDst) != netip.MustParseAddr("fd00::1") {
		t.Fatalf("parsed tunnel %v -> %v", netip.AddrFrom16(k.TunSrc), netip.AddrFrom16(k.TunDst))
	}
	got := formatMatch(&k, ptr(packetMask(&k)), "1", false, true, "")
	want := "tun_src=0.0.0.0,tun_dst=0.0.0.0,tun_ipv6_src=fd00::ffff:ac1f:903,tun_ipv6_dst=fd00::1,tun_gbp_id=0,tun_gbp_flags=0,tun_tos=0,tun_ttl=64,"
	if !strings.HasPrefix(got, want) {
		t.Errorf("Flow:\n got %s\nwant %s...", got, want)
	}
	var m flow.Mask
	tunnelWC(&k, &m)
	if got := formatMatch(&k, &m, "1", true, true, ""); !strings.Contains(got, "tun_id=0,tun_ipv6_src=fd00::ffff:ac1f:903,tun_ipv6_dst=fd00::1,tun_tos=0,") {
		t.Errorf("Megaflow: %s", got)
	}
	// An IPv4 tunnel's megaflow has tun_src and tun_dst only.
	k4, _, _, err := parseFlow("in_port=1,tun_src=172.31.9.3,tun_dst=172.31.9.1,tun_ipv6_dst=::", tab, tracePort)
	if err != nil {
		t.Fatal(err)
	}
	m = flow.Mask{}
	tunnelWC(&k4, &m)
	if got := formatMatch(&k4, &m, "1", true, true, ""); !strings.Contains(got, "tun_id=0,tun_src=172.31.9.3,tun_dst=172.31.9.1,tun_tos=0,") {
		t.Errorf("Megaflow: %s", got)
	}
	for spec, msg := range map[string]string{
		"tun_ipv6_src=1.2.3.4":    "bad value for tun_ipv6_src (1.2.3.4: invalid IPv6 address)",
		"tun_ipv6_dst=xyz":        "bad value for tun_ipv6_dst (xyz: invalid IPv6 address)",
		"tun_ipv6_src=fd00::/64":  "wildcards not allowed here",
		"tun_src=fd00::1":         "bad value for tun_src (fd00::1: invalid IP address)",
		"tun_ipv6_dst=fd00::1/ff": "bad value for tun_ipv6_dst",
	} {
		if _, _, _, err := parseFlow(spec, tab, tracePort); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", spec, err, msg)
		}
	}
}
