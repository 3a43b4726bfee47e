package tests

import (
	"strconv"
	"strings"
	"testing"
)

// TestVswitchdFloodVLANs: namespaces a, b and c on access ports of VLAN
// 10 of a bridge with flood_vlans=10: NORMAL learns nothing there, so c
// receives every ping between a and b; fdb/show lists no entry on VLAN
// 10. With flood_vlans cleared, the pings go to b alone.
func TestVswitchdFloodVLANs(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	a := vswAddNS(t, "fv-a", "10.97.0.1/24")
	b := vswAddNS(t, "fv-b", "10.97.0.2/24")
	c := vswAddNS(t, "fv-c", "10.97.0.3/24")
	const br = "gvswfvbr"
	e.mustVsctl("add-br", br, "--", "set", "bridge", br, "flood_vlans=10",
		"--", "add-port", br, a.Host, "tag=10", "--", "add-port", br, b.Host, "tag=10", "--", "add-port", br, c.Host, "tag=10")
	a.waitPing("10.97.0.2")
	sentToC := func() int {
		out, _ := vswRun("cat", "/sys/class/net/"+c.Host+"/statistics/tx_packets")
		n, _ := strconv.Atoi(strings.TrimSpace(out))
		return n
	}
	before := sentToC()
	if err := a.ping("10.97.0.2", 20); err != nil {
		t.Fatal(err)
	}
	// 20 requests and 20 replies, flooded.
	if got := sentToC() - before; got < 40 {
		t.Errorf("c received %d packets of 20 pings between a and b on a flood VLAN, want 40 or more", got)
	}
	if fdb := e.mustAppctl("fdb/show", br); strings.Contains(fdb, "   10  ") {
		t.Errorf("fdb/show has entries on flood VLAN 10:\n%s", fdb)
	}
	if e.logged("flood_vlans is not supported") {
		t.Errorf("flood_vlans reported as not supported")
	}
	e.mustVsctl("clear", "bridge", br, "flood_vlans")
	a.waitPing("10.97.0.2")
	before = sentToC()
	if err := a.ping("10.97.0.2", 20); err != nil {
		t.Fatal(err)
	}
	// Flooding would send c all 40. Learning sends it none of them, but
	// c still gets broadcast and multicast (ARP, IPv6 neighbour and
	// router traffic) while the 20 pings run, more of it on a loaded
	// machine: allow well under half.
	if got := sentToC() - before; got >= 20 {
		t.Errorf("c received %d packets of 20 pings between a and b once learning is back, want fewer than 20", got)
	}
}
