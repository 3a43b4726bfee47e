package tests

import (
	"fmt"
	"strings"
	"testing"
)

// hashFields are the fields multipath hashes; bundle's text syntax takes
// the first four.
var hashFields = []string{"eth_src", "symmetric_l4", "symmetric_l3l4", "symmetric_l3l4+udp", "nw_src", "nw_dst", "symmetric_l3"}

// multipathCorpus is packets whose hashes differ in every field hashed:
// TCP, UDP, SCTP and ICMP over IPv4 and IPv6, fragments, VLANs, ARP.
func multipathCorpus(inPort string) []string {
	var pkts []string
	for i := range 4 {
		mac := fmt.Sprintf("dl_src=00:00:%02x:00:00:%02x,dl_dst=00:00:00:%02x:00:01", i, 3*i, i+1)
		v4 := fmt.Sprintf("nw_src=10.%d.0.%d,nw_dst=10.0.%d.2", i, 7*i+1, i)
		v6 := fmt.Sprintf("ipv6_src=2001:db8::%x,ipv6_dst=2001:db8:%x::2", 0x101*i+1, i)
		// ofproto/trace takes the ports by their protocol's names.
		tcp := fmt.Sprintf("tcp_src=%d,tcp_dst=%d", 1000+37*i, 80+i)
		udp := fmt.Sprintf("udp_src=%d,udp_dst=%d", 2000+41*i, 53+i)
		pkts = append(pkts,
			fmt.Sprintf("in_port=%s,tcp,%s,%s,%s", inPort, mac, v4, tcp),
			fmt.Sprintf("in_port=%s,udp,%s,%s,%s", inPort, mac, v4, udp),
			fmt.Sprintf("in_port=%s,tcp6,%s,%s,%s", inPort, mac, v6, tcp))
		switch i % 4 {
		case 0:
			pkts = append(pkts, fmt.Sprintf("in_port=%s,icmp,%s,%s,icmp_type=8", inPort, mac, v4))
		case 1:
			pkts = append(pkts, fmt.Sprintf("in_port=%s,arp,%s,arp_spa=10.0.0.%d,arp_tpa=10.0.0.9", inPort, mac, i))
		case 2:
			pkts = append(pkts, fmt.Sprintf("in_port=%s,dl_vlan=%d,udp6,%s,%s,%s", inPort, 10*i, mac, v6, udp),
				// Two tags: at OVS's default vlan-limit of 1 the inner one
				// is payload (eth_type 0x8100), so symmetric_l4 hashes
				// the outer VID only, in OVS as in govs.
				fmt.Sprintf("in_port=%s,dl_vlan=%d,dl_type=0x8100,%s", inPort, 10*i+1, mac))
		case 3:
			pkts = append(pkts, fmt.Sprintf("in_port=%s,sctp,%s,%s", inPort, mac, v4),
				fmt.Sprintf("in_port=%s,tcp,nw_frag=first,%s,%s,%s", inPort, mac, v4, tcp))
		}
	}
	return pkts
}

// TestOpenFlowMultipathDifferential: multipath, bundle and bundle_load
// load, dump and are refused as on Debian's ovs-vswitchd, and pick the
// same link or member for the same packets: every hash field with every
// multipath algorithm, the link written to eth_dst so that the datapath
// actions show it, for a corpus of packets traced in both switches.
// bundle follows the members' link state as there.
func TestOpenFlowMultipathDifferential(t *testing.T) {
	deb, govs := startSwitchPair(t, "gmpd", "10.240.0", "gmpo", "10.241.0")
	links := []int{2, 3, 7, 64, 65, 100, 5000}
	var mp, bl []string
	for i, f := range hashFields {
		for a, alg := range []string{"modulo_n", "hash_threshold", "hrw", "iter_hash"} {
			n := links[(i+a)%len(links)]
			mp = append(mp, fmt.Sprintf("multipath(%s,%d,%s,%d,%d,NXM_NX_REG0[0..15]),move:NXM_NX_REG0[0..15]->NXM_OF_ETH_DST[0..15],output:3",
				f, 10*i+a, alg, n, n+n/4))
		}
	}
	for i, f := range hashFields[:4] {
		for _, alg := range []string{"hrw", "active_backup"} {
			bl = append(bl, fmt.Sprintf("bundle_load(%s,%d,%s,ofport,NXM_NX_REG0[0..15],members:10,1,3,LOCAL,2),move:NXM_NX_REG0[0..15]->NXM_OF_ETH_DST[0..15],output:3",
				f, 7*i, alg))
		}
	}
	// eth_dst is set whole first: a set of part of a field nothing
	// consulted is a masked set in OVS, a whole one in govs.
	compareFlows(t, deb, govs, "table=0,priority=10,in_port=1,actions=mod_dl_dst:00:00:00:00:00:00,"+strings.Join(mp, ",")+"\n"+
		"table=0,priority=10,in_port=2,actions=mod_dl_dst:00:00:00:00:00:00,"+strings.Join(bl, ",")+"\n"+
		"table=0,priority=10,in_port=3,ip,actions=bundle(symmetric_l3l4,5,hrw,ofport,members:1,2)\n"+
		"table=0,priority=10,in_port=3,arp,actions=bundle(eth_src,0,active_backup,ofport,members:9,1,2)\n"+
		"table=0,priority=5,ip,actions=multipath(symmetric_l3,9,hrw,2,0,NXM_NX_REG1[4]),resubmit(,1)\n"+
		"table=1,priority=10,reg1=0x10/0x10,actions=output:2\n"+
		"table=1,priority=5,actions=output:1\n"+
		// Not NORMAL, whose flooding order differs.
		"table=0,priority=1,actions=drop\n")
	if out, _ := govs.ofctl("dump-flows", govs.br, "in_port=1"); !strings.Contains(out, "multipath(") {
		t.Fatalf("the multipath flow was not added:\n%s", out)
	}
	// Every packet through the multipath rule, some through the others
	// (LOCAL: table 0's last rules), to stay within the time budget.
	pkts := multipathCorpus("1")
	pkts = append(pkts, multipathCorpus("2")[:6]...)
	pkts = append(pkts, multipathCorpus("3")[:4]...)
	pkts = append(pkts, multipathCorpus("LOCAL")[:2]...)
	for i, pkt := range pkts {
		if got := compareTrace(t, deb, govs, "", pkt); i == 0 && !strings.Contains(got, "set(eth(dst=") {
			t.Errorf("ofproto/trace %s: %s, no link written to eth_dst", pkt, got)
		}
	}

	// A's link down: bundle and bundle_load pass over member 1 in both.
	for _, s := range []*ofSwitch{deb, govs} {
		s.a.mustExec("ip", "link", "set", "eth0", "down")
		vswWait(t, vswTimeout, s.br+"'s port 1 to be down", func() bool {
			out, _ := s.ofctl("dump-ports-desc", s.br, "1")
			return strings.Contains(out, "LINK_DOWN")
		})
	}
	for _, pkt := range append(multipathCorpus("2")[:3], multipathCorpus("3")[:3]...) {
		compareTrace(t, deb, govs, "port 1 down: ", pkt)
	}
	// The errors last: a flow both switches took would take every packet.
	for i, args := range [][]string{
		{"add-flow", "BR", "actions=multipath(eth_src,0,modulo_n,5,0,NXM_NX_REG0[0..1])"},
		{"add-flow", "BR", "actions=multipath(eth_src,0,modulo_n,2,0,NXM_OF_TCP_SRC[])"},
		{"add-flow", "BR", "actions=multipath(eth_src,0,modulo_n,2,0,NXM_NX_REG0[30..33])"},
		{"add-flow", "BR", "actions=multipath(foo,0,modulo_n,2,0,NXM_NX_REG0[])"},
		{"add-flow", "BR", "actions=bundle_load(eth_src,0,hrw,ofport,NXM_NX_REG0[0..7],members:1,2)"},
		{"add-flow", "BR", "actions=bundle(eth_src,0,hrw,ofport,members:1,CONTROLLER)"},
		{"add-flow", "BR", "actions=bundle(nw_src,0,hrw,ofport,members:1,2)"},
		{"add-flow", "BR", "actions=bundle(eth_src,0,hrw,ofport,members:1,0xff05)"},
		{"-O", "OpenFlow13", "add-flow", "BR", "actions=write_actions(bundle(eth_src,0,hrw,ofport,members:1,2))"},
		// An action set takes output:CONTROLLER, not NXAST_CONTROLLER
		// or NXAST_CONTROLLER2.
		{"-O", "OpenFlow13", "add-flow", "BR", "table=7,actions=write_actions(controller(reason=no_match))"},
		{"-O", "OpenFlow13", "add-flow", "BR", "table=7,actions=write_actions(controller(userdata=01.02))"},
		{"-O", "OpenFlow13", "add-flow", "BR", "table=7,actions=write_actions(controller)"},
		{"-O", "OpenFlow15", "dump-flows", "--no-stats", "--rsort", "BR"},
	} {
		t.Run(fmt.Sprintf("errors/%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}
}

// compareTrace requires the same datapath actions for pkt in both
// switches and returns govs'.
func compareTrace(t *testing.T, deb, govs *ofSwitch, when, pkt string) string {
	t.Helper()
	want, got := deb.traceNested(pkt), govs.traceNested(pkt)
	if got != want {
		t.Errorf("%sofproto/trace %s:\ngovs     %q\nDebian's %q", when, pkt, got, want)
	}
	return got
}

// TestOpenFlowBundleFailover: real traffic through a bundle action. A's
// packets go to the first live member of bundle(active_backup,
// members:4,2), where port 4 leads to a namespace without an address:
// pings to B fail while port 4's link is up, work once it goes down (the
// bundle moves to B), and fail again when it comes back.
func TestOpenFlowBundleFailover(t *testing.T) {
	govs := startGovsSwitch(t)
	govs.setUp("gbfo", "10.242.0")
	c := vswAddPrefixedNS(t, "gbfo", "c", "")
	govs.vsctl("add-port", govs.br, c.Host, "--", "set", "interface", c.Host, "ofport_request=4")
	govs.replaceFlows("priority=10,in_port=1,actions=bundle(eth_src,0,active_backup,ofport,members:4,2)",
		"priority=10,in_port=2,actions=output:1")
	vswWait(t, vswTimeout, "port 4 to be live", func() bool {
		out, _ := govs.ofctl("-O", "OpenFlow13", "dump-ports-desc", govs.br, "4")
		return strings.Contains(out, "LIVE")
	})
	govs.a.noPing("10.242.0.2")
	if out, _ := govs.ofctl("dump-ports", govs.br, "4"); !strings.Contains(out, "tx pkts=") || strings.Contains(out, "tx pkts=0,") {
		t.Errorf("nothing went out member 4 while it was live:\n%s", out)
	}
	c.mustExec("ip", "link", "set", "eth0", "down")
	govs.a.waitPing("10.242.0.2")
	c.mustExec("ip", "link", "set", "eth0", "up")
	vswWait(t, vswTimeout, "pings to fail with member 4 back", func() bool {
		_, err := govs.a.exec("ping", "-q", "-n", "-c", "1", "-W", "1", "10.242.0.2")
		return err != nil
	})
}
