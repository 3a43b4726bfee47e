package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenFlowARPNDResponder answers a namespace's ARP request and IPv6
// neighbour solicitation for a virtual address in the switch, with flows
// like ovn-controller's responders (moves and set_fields of the Ethernet,
// ARP, IPv6, ICMP and ND fields, output to the input port), and its echo
// requests with ICMP responders: the pings succeed only if every rewrite
// and checksum is right, and the kernel's neighbour entries show the
// virtual MAC.
func TestOpenFlowARPNDResponder(t *testing.T) {
	s := startGovsSwitch(t)
	s.setUp("gond", "10.83.0")
	const (
		vip  = "10.83.0.99"
		vip6 = "fd83::99"
		vmac = "0a:00:00:00:83:99"
	)
	s.a.mustExec("ip", "-6", "addr", "add", "fd83::1/64", "dev", "eth0", "nodad")
	swapEth := "move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:" + vmac + "->eth_src,"
	s.replaceFlows(
		"priority=100,arp,arp_tpa="+vip+",arp_op=1,actions="+swapEth+
			"set_field:2->arp_op,move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],set_field:"+vmac+"->arp_sha,"+
			"move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],set_field:"+vip+"->arp_spa,IN_PORT",
		"priority=100,icmp,nw_dst="+vip+",icmp_type=8,icmp_code=0,actions="+swapEth+
			"move:NXM_OF_IP_SRC[]->NXM_OF_IP_DST[],set_field:"+vip+"->ip_src,set_field:0->icmp_type,IN_PORT",
		// nd_tll needs an NA in the match (ovs-ofctl refuses it here):
		// the solicitation's source option gets the address and becomes
		// a target option, before the type makes the packet an NA.
		"priority=100,icmp6,icmp_type=135,icmp_code=0,nd_target="+vip6+",actions="+swapEth+
			"move:NXM_NX_IPV6_SRC[]->NXM_NX_IPV6_DST[],set_field:"+vip6+"->ipv6_src,set_field:"+vmac+"->nd_sll,"+
			"set_field:2->nd_options_type,set_field:0x60000000->nd_reserved,set_field:136->icmpv6_type,IN_PORT",
		"priority=100,icmp6,ipv6_dst="+vip6+",icmp_type=128,icmp_code=0,actions="+swapEth+
			"move:NXM_NX_IPV6_SRC[]->NXM_NX_IPV6_DST[],set_field:"+vip6+"->ipv6_src,set_field:129->icmpv6_type,IN_PORT",
		"priority=0,actions=NORMAL")

	s.a.waitPing(vip)
	if out := s.a.mustExec("ip", "neigh", "show", vip, "dev", "eth0"); !strings.Contains(out, "lladdr "+vmac) {
		t.Errorf("ARP entry for %s: %q, want lladdr %s", vip, out, vmac)
	}
	s.a.waitPing(vip6)
	if out := s.a.mustExec("ip", "-6", "neigh", "show", vip6, "dev", "eth0"); !strings.Contains(out, "lladdr "+vmac) {
		t.Errorf("neighbour entry for %s: %q, want lladdr %s", vip6, out, vmac)
	}
	// The neighbour solicitation's datapath flow matches the target.
	if out := s.appctl("dpif/dump-flows", s.br); !strings.Contains(out, "nd(target="+vip6) {
		t.Errorf("no datapath flow matches nd(target=%s):\n%s", vip6, out)
	}
	// The real neighbours still answer through NORMAL.
	s.a.waitPing("10.83.0.2")
}

// TestOpenFlowNDFieldsDifferential loads flows that match the IPv6
// neighbour discovery fields and set the ARP, IPv6, ICMP and ND fields
// into govs and into Debian's ovs-vswitchd with Debian's ovs-ofctl, and
// requires the same dump-flows output in every version and the same
// errors for flows without their fields' prerequisites. (ofproto/trace is
// not compared: govs writes one set action per field where OVS writes
// one masked set per header.)
func TestOpenFlowNDFieldsDifferential(t *testing.T) {
	deb, govs := startSwitchPair(t, "gndd", "10.188.0", "gndo", "10.189.0")

	flows := filepath.Join(t.TempDir(), "nd")
	if err := os.WriteFile(flows, []byte(`table=0,priority=100,icmp6,icmp_type=135,nd_target=fd00::99,actions=set_field:136->icmpv6_type,set_field:0x60000000->nd_reserved,set_field:2->nd_options_type,set_field:0a:00:00:00:00:99->nd_tll,move:NXM_NX_IPV6_SRC[]->NXM_NX_IPV6_DST[],set_field:fd00::99->ipv6_src,IN_PORT
table=0,priority=90,icmp6,icmp_type=135,icmp_code=0,nd_target=fe80::/64,nd_sll=00:00:00:00:00:01,actions=load:0x1->NXM_NX_ND_TARGET[0..15],output:2
table=0,priority=80,icmp6,icmp_type=136,nd_tll=00:00:00:00:00:00/01:00:00:00:00:00,nd_reserved=0x20000000,actions=set_field:fd00::1->nd_target,output:3
table=0,priority=70,icmp6,icmp_type=136,nd_options_type=2,actions=move:NXM_NX_ND_TLL[]->NXM_OF_ETH_DST[],set_field:0x12345->ipv6_label,output:1
table=0,priority=60,icmp6,icmp_type=135,nd_sll=00:00:00:00:00:02,actions=set_field:00:00:00:00:00:05->nd_sll,set_field:3->icmpv6_code,output:1
table=0,priority=100,arp,arp_op=1,arp_tpa=10.0.0.99,actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:0a:00:00:00:00:99->eth_src,set_field:2->arp_op,move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],set_field:0a:00:00:00:00:99->arp_sha,move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],set_field:10.0.0.99->arp_spa,IN_PORT
table=0,priority=100,icmp,icmp_type=8,actions=set_field:0->icmp_type,set_field:1->icmp_code,output:2
table=0,priority=100,ipv6,ipv6_dst=fd00::/16,actions=set_field:fd00::2->ipv6_dst,load:0x5->NXM_NX_IPV6_LABEL[0..3],output:2
table=0,priority=0,actions=NORMAL
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, args := range [][]string{
		{"add-flows", "BR", flows},
		{"dump-flows", "--no-stats", "--rsort", "BR"},
		{"-O", "OpenFlow13", "dump-flows", "--no-stats", "--rsort", "BR"},
		{"-O", "OpenFlow15", "dump-flows", "--no-stats", "--rsort", "BR"},
		{"-O", "OpenFlow10", "add-flow", "BR", "priority=5,icmp6,icmp_type=136,actions=set_field:7->nd_reserved,set_field:1->nd_options_type,output:1"},
		{"-O", "OpenFlow10", "dump-flows", "--no-stats", "BR", "priority=5,icmp6"},
		// Without their prerequisites: the ND fields need an NS or NA,
		// nd_sll an NS and nd_tll an NA; sets need their headers.
		{"add-flow", "BR", "icmp6,nd_target=fd00::1,actions=drop"},
		{"add-flow", "BR", "icmp6,icmp_type=136,nd_sll=00:00:00:00:00:01,actions=drop"},
		{"-O", "OpenFlow13", "add-flow", "BR", "icmp6,icmp_type=135,nd_tll=00:00:00:00:00:01,actions=drop"},
		{"-O", "OpenFlow13", "add-flow", "BR", "icmp6,icmp_type=135,icmp_code=1,nd_reserved=1,actions=drop"},
		{"add-flow", "BR", "ip,actions=set_field:2->arp_op"},
		{"add-flow", "BR", "icmp6,actions=set_field:fd00::1->nd_target"},
		{"-O", "OpenFlow13", "add-flow", "BR", "ip,actions=set_field:fd00::1->ipv6_src"},
		{"add-flow", "BR", "tcp,actions=set_field:1->icmp_type"},
		{"add-flow", "BR", "icmp6,icmp_type=136,actions=move:NXM_NX_ND_SLL[]->NXM_OF_ETH_SRC[]"},
	} {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}
}

// startSwitchPair starts Debian's switch and govs' for a differential
// test, each set up with its prefix and subnet.
func startSwitchPair(t *testing.T, debPrefix, debSubnet, govsPrefix, govsSubnet string) (deb, govs *ofSwitch) {
	t.Helper()
	deb = startDebianSwitch(t)
	deb.setUp(debPrefix, debSubnet)
	govs = startGovsSwitch(t)
	govs.setUp(govsPrefix, govsSubnet)
	return deb, govs
}
