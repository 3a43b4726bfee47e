package tests

import (
	"strings"
	"testing"
	"time"
)

// TestTunnelIPv6Underlay runs Geneve, then VXLAN, between two govs
// switches over an IPv6 underlay (remote_ip an IPv6 address, the
// underlay addresses on br-phy): the next hop is found by govs' own
// neighbour solicitation and learned from the advertisement (nothing is
// set by hand), tnl/neigh/show lists it; ping both ways and a short
// iperf3 over each (figures logged).
func TestTunnelIPv6Underlay(t *testing.T) {
	start := time.Now()
	// nodad: the addresses are usable at once.
	a := tunSetup(t, "a", "fd31::1/64 nodad", "fd31::2", "geneve", "10.9.0.1/24")
	b := tunSetup(t, "b", "fd31::2/64 nodad", "fd31::1", "geneve", "10.9.0.2/24")
	for _, n := range []*tunNode{a, b} {
		// The IPv6 outer header is 20 bytes longer than IPv4's.
		if _, err := vswRun("ip", "-n", n.vif.Name, "link", "set", "eth0", "mtu", "1430"); err != nil {
			t.Fatal(err)
		}
	}
	tunUnderlay(t, a, b)
	vswWait(t, vswTimeout, "tunnel status", func() bool {
		out, _ := a.sw.e.vsctl("get", "interface", "tun0", "status")
		return strings.Contains(out, `tunnel_egress_iface=br-phy`)
	})
	for _, typ := range []string{"geneve", "vxlan"} {
		if typ != "geneve" {
			for _, n := range []*tunNode{a, b} {
				n.sw.e.mustVsctl("set", "interface", "tun0", "type="+typ)
			}
		}
		a.vif.waitPing("10.9.0.2")
		b.vif.waitPing("10.9.0.1")
		out := a.vif.iperf(b.vif, "10.9.0.2", "-t", "1")
		t.Logf("iperf3 TCP over %s, IPv6 underlay, govs to govs: %s", typ, vswIperfSummary(out))
	}
	neigh := a.sw.run("tnl/neigh/show")
	if !strings.Contains(neigh, "\nfd31::2 ") || !strings.Contains(neigh, "   br-phy\n") {
		t.Errorf("tnl/neigh/show lacks fd31::2 on br-phy:\n%s", neigh)
	}
	if dump := a.sw.run("dpctl/dump-flows"); !strings.Contains(dump, "ipv6(src=fd31::1,dst=fd31::2") {
		t.Errorf("no IPv6 tnl_push in the datapath flows:\n%s", dump)
	}
	t.Logf("took %v", time.Since(start).Round(time.Millisecond))
}
