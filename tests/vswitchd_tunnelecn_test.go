package tests

import (
	"strings"
	"testing"
	"time"
)

// TestTunnelECN: govs decapsulates as OVS's tnl_process_ecn (RFC 6040).
// Side a (govs) marks its VXLAN packets' outer ECN CE on its underlay
// bridge (a congested hop); side b drops those whose inner packet is not
// ECN-capable (a plain ping does not pass, and coverage/show counts
// drop_action_congestion) and marks CE in those that are (ping -Q 1
// passes, the flow sets the inner ECN). b encapsulates the replies with
// the inner ECN copied to the outer header, CE as ECT(0), and with
// tos=inherit and ttl=inherit the inner DSCP and TTL.
func TestTunnelECN(t *testing.T) { testTunnelECN(t, vswBinary(t)) }

// TestTunnelECNDebian is TestTunnelECN with Debian's ovs-vswitchd as b:
// the same behaviour, flows and counter.
func TestTunnelECNDebian(t *testing.T) { testTunnelECN(t, "/usr/sbin/ovs-vswitchd") }

func testTunnelECN(t *testing.T, far string) {
	start := time.Now()
	a := tunSetup(t, "a", "172.31.0.1/24", "172.31.0.2", "vxlan", "10.9.0.1/24")
	b := tunSetupBin(t, "b", far, "172.31.0.2/24", "172.31.0.1", "vxlan", "10.9.0.2/24")
	tunUnderlay(t, a, b)
	a.vif.waitPing("10.9.0.2")
	a.sw.ofctl(t, "add-flow", "br-phy", "priority=10,in_port=LOCAL,udp,tp_dst=4789,actions=set_field:3->nw_ecn,NORMAL")

	// Not ECN-capable: dropped at b, counted.
	a.vif.noPing("10.9.0.2")
	vswWait(t, vswTimeout, "b's drop_action_congestion", func() bool {
		return strings.Contains(b.sw.run("coverage/show"), "drop_action_congestion")
	})
	dump := b.sw.run("dpctl/dump-flows")
	if !hasFlow(dump, "tos=0x3,", "eth_type(0x0800),ipv4(tos=0/0x3,", "actions:drop") {
		t.Errorf("b has no drop flow for outer CE, inner not-ECT:\n%s", dump)
	}

	// ECT(1) with DSCP 8: passes, the inner header gets CE. The reply
	// (the request's TOS, CE) leaves b with ECT(0) outside and, b's tun0
	// inheriting them, its DSCP and TTL.
	b.sw.e.mustVsctl("set", "interface", "tun0", "options:tos=inherit", "options:ttl=inherit")
	if _, err := a.vif.exec("ping", "-q", "-n", "-c", "3", "-i", "0.05", "-w", vswPingDeadline, "-Q", "0x21", "10.9.0.2"); err != nil {
		t.Fatalf("ping -Q 1: %v\nb's flows:\n%s", err, b.sw.run("dpctl/dump-flows"))
	}
	dump = b.sw.run("dpctl/dump-flows")
	// OVS 3.1's decapsulation keeps no DF flag (-df) though a sends DF.
	if !hasFlow(dump, "tunnel(tun_id=0x5,src=172.31.0.1,dst=172.31.0.2,tos=0x3,flags(-df-csum+key)),", "ipv4(tos=0x21/0x3,",
		"actions:set(ipv4(tos=0x3/0x3)),") {
		t.Errorf("b has no flow setting CE for outer CE, inner ECT(1):\n%s", dump)
	}
	if !hasFlow(dump, "in_port(", "ipv4(tos=0x23,ttl=64,", "ipv4(src=172.31.0.2,dst=172.31.0.1,proto=17,tos=0x22,ttl=64") {
		t.Errorf("b has no tnl_push with ECT(0) and the inner DSCP and TTL outside for the CE reply:\n%s", dump)
	}
	// With --names the tunnel actions name their ports, as OVS's
	// odp_portno_name_format.
	named := b.sw.run("dpctl/dump-flows", "--names")
	if !hasFlow(named, "in_port(vif)", "actions:tnl_push(tnl_port(vxlan_sys_4789),header(", "),out_port(br-phy)),ul") ||
		!hasFlow(named, "in_port(ul)", "actions:tnl_pop(vxlan_sys_4789)") ||
		!hasFlow(named, "in_port(vxlan_sys_4789)", "actions:set(ipv4(tos=0x3/0x3)),vif") {
		t.Errorf("b's flows with names:\n%s", named)
	}
	// Under OVS's module for it, ofproto/tunnel.c's "tunnel".
	if !b.sw.e.logged("|tunnel|WARN|dropping tunnel packet marked ECN CE but is not ECN capable") {
		t.Errorf("b's log lacks the ECN drop warning from module tunnel")
	}
	t.Logf("took %v", time.Since(start).Round(time.Millisecond))
}

// hasFlow reports whether a line of dump contains every one of parts.
func hasFlow(dump string, parts ...string) bool {
	for _, l := range strings.Split(dump, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return true
		}
	}
	return false
}
