package tests

import (
	"strings"
	"testing"
)

// TestOpenFlowResubmitCT runs real traffic through flows that look
// tracked packets up by their connection's original tuple with
// resubmit(,T,ct), loaded with Debian's ovs-ofctl. First a firewall
// whose only rule for established packets names a's address as the
// source and b's as the destination: b's replies pass (their original
// tuple is a's), b's own connections do not. Then a VIP DNATed to b,
// whose established packets in both directions are forwarded by one
// rule on the VIP, which neither carries after NAT.
func TestOpenFlowResubmitCT(t *testing.T) {
	s := startGovsSwitch(t)
	s.setUp("gorc", "10.76.0")
	s.replaceFlows("table=0,priority=100,arp,actions=NORMAL",
		"table=0,priority=90,ip,actions=ct(table=1,zone=3)",
		"table=1,priority=100,ct_state=+trk+new,ip,in_port=1,actions=ct(commit,zone=3),output:2",
		"table=1,priority=100,ct_state=+trk+est,ip,actions=resubmit(,2,ct)",
		"table=1,priority=1,actions=drop",
		"table=2,priority=10,ip,nw_src=10.76.0.1,nw_dst=10.76.0.2,actions=NORMAL",
		"table=2,priority=1,actions=drop")
	s.a.waitPing("10.76.0.2")
	s.b.noPing("10.76.0.1")
	// The replies' datapath flow matches the connection's tuple, which
	// the lookup consulted in place of the packet's addresses.
	if flows := s.appctl("dpctl/dump-flows"); !strings.Contains(flows, "ct_tuple4(src=10.76.0.1,dst=10.76.0.2") {
		t.Errorf("no datapath flow matches the connection's tuple:\n%s", flows)
	}
	wait := tcpServer(t, s.b, "10.76.0.2", 7011)
	if !tcpConnect(s.a, "10.76.0.2", 7011, 10) {
		t.Fatalf("a could not connect to b\n%s", s.appctl("dpctl/dump-conntrack"))
	}
	if peer := wait(); peer != "10.76.0.1" {
		t.Errorf("b's server saw %q", peer)
	}

	// DNAT: the VIP .200 goes to b; neither side answers ARP for it.
	amac := strings.TrimSpace(s.a.mustExec("cat", "/sys/class/net/eth0/address"))
	bmac := strings.TrimSpace(s.b.mustExec("cat", "/sys/class/net/eth0/address"))
	s.a.mustExec("ip", "neigh", "replace", "10.76.0.200", "lladdr", bmac, "dev", "eth0", "nud", "permanent")
	s.b.mustExec("ip", "neigh", "replace", "10.76.0.1", "lladdr", amac, "dev", "eth0", "nud", "permanent")
	s.replaceFlows("table=0,priority=100,arp,actions=NORMAL",
		"table=0,priority=90,ip,actions=ct(table=1,zone=4,nat)",
		"table=1,priority=100,ct_state=+trk+new,ip,in_port=1,nw_dst=10.76.0.200,actions=ct(commit,zone=4,nat(dst=10.76.0.2)),output:2",
		"table=1,priority=100,ct_state=+trk+est,ip,actions=resubmit(,2,ct)",
		"table=1,priority=1,actions=drop",
		"table=2,priority=10,ip,nw_dst=10.76.0.200,actions=NORMAL",
		"table=2,priority=1,actions=drop")
	s.a.waitPing("10.76.0.200")
	wait = tcpServer(t, s.b, "10.76.0.2", 7012)
	if !tcpConnect(s.a, "10.76.0.200", 7012, 10) {
		t.Fatalf("no connection to the VIP\n%s", s.appctl("dpctl/dump-conntrack"))
	}
	if peer := wait(); peer != "10.76.0.1" {
		t.Errorf("b's server saw %q", peer)
	}
	// Without the VIP rule, established packets go nowhere.
	s.replaceFlows("table=0,priority=100,arp,actions=NORMAL",
		"table=0,priority=90,ip,actions=ct(table=1,zone=4,nat)",
		"table=1,priority=100,ct_state=+trk+est,ip,actions=resubmit(,2,ct)",
		"table=1,priority=1,actions=drop",
		"table=2,priority=10,ip,nw_dst=10.76.0.2,actions=NORMAL",
		"table=2,priority=1,actions=drop")
	s.a.noPing("10.76.0.200")
}
