package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ovnTraceCorpus is packets for the flow table ovn-controller installed on
// a govs chassis (tests/testdata/ovn/br-int-router.flows: logical switch
// sw0 with VIFs 50:54:00:00:00:01/10.0.0.1 and :02/10.0.0.2, switch sw1
// with 50:54:00:00:01:01/10.0.1.1 on OpenFlow port 3, router lr0 between
// them at 00:00:00:00:ff:01/10.0.0.254 and :ff:02/10.0.1.254, port
// security on sw0-p1, an allow-related ACL and a drop of ICMP to
// sw0-p2). Each is sent in on OpenFlow ports 1 and 2 (the two sw0 VIFs,
// whichever bound first) with both sw0 addresses as source, so that the
// port-security and spoofing branches are taken too.
func ovnTraceCorpus() []string {
	var pkts []string
	type src struct{ mac, ip, ip6 string }
	srcs := []src{{"50:54:00:00:00:01", "10.0.0.1", "fe80::5254:ff:fe00:1"}, {"50:54:00:00:00:02", "10.0.0.2", "fe80::5254:ff:fe00:2"}}
	for _, port := range []int{1, 2} {
		for i, s := range srcs {
			o := srcs[1-i]
			eth := fmt.Sprintf("in_port=%d,dl_src=%s", port, s.mac)
			pkts = append(pkts,
				// ARP for the other VIF and for the router; a reply.
				eth+",dl_dst=ff:ff:ff:ff:ff:ff,arp,arp_op=1,arp_spa="+s.ip+",arp_tpa="+o.ip+",arp_sha="+s.mac,
				eth+",dl_dst=ff:ff:ff:ff:ff:ff,arp,arp_op=1,arp_spa="+s.ip+",arp_tpa=10.0.0.254,arp_sha="+s.mac,
				eth+",dl_dst="+o.mac+",arp,arp_op=2,arp_spa="+s.ip+",arp_tpa="+o.ip+",arp_sha="+s.mac+",arp_tha="+o.mac,
				// ICMP, TCP and UDP to the other VIF, and from a spoofed
				// address.
				eth+",dl_dst="+o.mac+",icmp,nw_src="+s.ip+",nw_dst="+o.ip+",nw_ttl=64,icmp_type=8",
				eth+",dl_dst="+o.mac+",tcp,nw_src="+s.ip+",nw_dst="+o.ip+",nw_ttl=64,tp_src=40000,tp_dst=80,tcp_flags=0x002",
				eth+",dl_dst="+o.mac+",udp,nw_src="+s.ip+",nw_dst="+o.ip+",nw_ttl=64,udp_src=40000,udp_dst=53",
				eth+",dl_dst="+o.mac+",icmp,nw_src=10.0.0.11,nw_dst="+o.ip+",nw_ttl=64,icmp_type=8",
				// Through the router to sw1, with TTL 64 and 1; to the
				// router's own address.
				eth+",dl_dst=00:00:00:00:ff:01,icmp,nw_src="+s.ip+",nw_dst=10.0.1.1,nw_ttl=64,icmp_type=8",
				eth+",dl_dst=00:00:00:00:ff:01,icmp,nw_src="+s.ip+",nw_dst=10.0.1.1,nw_ttl=1,icmp_type=8",
				eth+",dl_dst=00:00:00:00:ff:01,icmp,nw_src="+s.ip+",nw_dst=10.0.0.254,nw_ttl=64,icmp_type=8",
				eth+",dl_dst=00:00:00:00:ff:01,tcp,nw_src="+s.ip+",nw_dst=10.0.1.1,nw_ttl=64,tp_src=40000,tp_dst=22",
				// IPv6 neighbour solicitation and a multicast.
				eth+",dl_dst=33:33:ff:00:00:01,icmp6,ipv6_src="+s.ip6+",ipv6_dst=ff02::1:ff00:1,nw_ttl=255,icmpv6_type=135,icmpv6_code=0,nd_target="+o.ip6,
				eth+",dl_dst=33:33:00:00:00:01,icmp6,ipv6_src="+s.ip6+",ipv6_dst=ff02::1,nw_ttl=255,icmpv6_type=134,icmpv6_code=0",
				// A broadcast that is not ARP, and a frame to an unknown MAC.
				eth+",dl_dst=ff:ff:ff:ff:ff:ff,udp,nw_src="+s.ip+",nw_dst=255.255.255.255,udp_src=68,udp_dst=67",
				eth+",dl_dst=50:54:00:00:00:99,ip,nw_src="+s.ip+",nw_dst=10.0.0.99,nw_proto=17",
			)
		}
	}
	// From sw1's VIF on port 3, through the router to sw0.
	s3 := "in_port=3,dl_src=50:54:00:00:01:01"
	pkts = append(pkts,
		s3+",dl_dst=00:00:00:00:ff:02,icmp,nw_src=10.0.1.1,nw_dst=10.0.0.1,nw_ttl=64,icmp_type=8",
		s3+",dl_dst=00:00:00:00:ff:02,icmp,nw_src=10.0.1.1,nw_dst=10.0.0.2,nw_ttl=64,icmp_type=8",
		s3+",dl_dst=ff:ff:ff:ff:ff:ff,arp,arp_op=1,arp_spa=10.0.1.1,arp_tpa=10.0.1.254,arp_sha=50:54:00:00:01:01",
	)
	return pkts
}

// ovnRecircRe and ovnControllerRe match what each switch encodes its own
// way: recirculation ids, and the cookie of a controller action's
// userspace action (OVS prints its user_action_cookie: reason, dont_send,
// recirc_id, rule cookie...; govs' cookie is an index its upcall handler
// keeps those in).
var (
	ovnRecircRe     = regexp.MustCompile(`recirc\(0x[0-9a-f]+\)`)
	ovnControllerRe = regexp.MustCompile(`userspace\(pid=0,controller\([^)]*\)\)`)
)

// ovnNormalizeTrace replaces the switch's own encodings in datapath actions.
func ovnNormalizeTrace(acts string) string {
	return ovnControllerRe.ReplaceAllString(ovnRecircRe.ReplaceAllString(acts, "recirc(R)"), "userspace(pid=0,controller(C))")
}

// TestOpenFlowOVNTraceDifferential loads the flow table a real
// ovn-controller (OVN 23.03) installed on br-int into govs' and Debian's
// switches, on the same OpenFlow port numbers, and requires the same
// ofproto/trace datapath actions for a corpus of packets: ARP, ICMP, TCP,
// UDP and IPv6 neighbour discovery between the VIFs, through the logical
// router, with TTL 1, spoofed and to unknown destinations.
func TestOpenFlowOVNTraceDifferential(t *testing.T) {
	flows, err := os.ReadFile(filepath.Join("testdata", "ovn", "br-int-router.flows"))
	if err != nil {
		t.Fatal(err)
	}
	deb := startDebianSwitch(t)
	deb.setUp("gotd", "10.80.0")
	govs := startGovsSwitch(t)
	govs.setUp("gotg", "10.81.0")
	file := filepath.Join(t.TempDir(), "ovn.flows")
	if err := os.WriteFile(file, flows, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*ofSwitch{deb, govs} {
		if out, rc := s.ofctl("-O", "OpenFlow15", "replace-flows", s.br, file); rc != 0 {
			t.Fatalf("replace-flows of OVN's table: %s", out)
		}
	}
	// The tables read back the same.
	want, _ := deb.ofctl("-O", "OpenFlow15", "dump-flows", "--no-stats", "--sort", deb.br)
	got, _ := govs.ofctl("-O", "OpenFlow15", "dump-flows", "--no-stats", "--sort", govs.br)
	if g, w := govs.normalizeOfctl(got), deb.normalizeOfctl(want); g != w {
		t.Errorf("OVN's table reads back differently:\ngovs:\n%s\nDebian's:\n%s", g, w)
	}
	n, differ := 0, 0
	for _, pkt := range ovnTraceCorpus() {
		want, got := ovnNormalizeTrace(deb.traceActions(pkt)), ovnNormalizeTrace(govs.traceActions(pkt))
		n++
		if got != want {
			differ++
			t.Errorf("ofproto/trace %s:\ngovs:     %q\nDebian's: %q", pkt, got, want)
		}
	}
	t.Logf("%d flows, %d packets traced, %d differ", strings.Count(string(flows), "\n"), n, differ)
}
