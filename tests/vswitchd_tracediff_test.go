package tests

import (
	"cmp"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// traceDiffFlows: an IP flow and flows for other types beside it, for
// ofproto/trace's megaflow of packets of every type.
var traceDiffFlows = []string{
	"priority=100,in_port=1,ip,nw_dst=10.0.0.2,actions=output:2",
	"priority=90,in_port=1,dl_vlan=7,actions=pop_vlan,output:2",
	"priority=80,in_port=1,tcp,actions=output:3",
	"priority=70,in_port=1,pkt_mark=0x5,actions=output:3",
	"priority=60,in_port=1,dl_src=00:00:00:00:00:07,actions=set_field:0x7->pkt_mark,output:2",
	"priority=5,in_port=1,actions=output:2",
	// Select groups that pick by dp_hash: a packet without one is
	// hashed and recirculated, the rest of the actions frozen (and
	// not traced); one with a dp_hash picks. In an all group's bucket
	// the recirculation ends the bucket; the next bucket goes on.
	"priority=95,in_port=1,sctp,actions=set_field:0x5->reg0,group:7,output:3",
	"priority=96,in_port=1,sctp,dl_src=00:00:00:00:00:08,actions=group:8,output:LOCAL",
	// Nesting: resubmits, goto_table, clone, group buckets,
	// check_pkt_larger's branches, the action set.
	"priority=60,in_port=2,icmp,actions=clone(set_field:0x1->reg0,resubmit(,1),output:3),output:1",
	"priority=60,in_port=2,udp,actions=group:1,output:3",
	"priority=62,in_port=2,udp,nw_dst=10.0.0.7,actions=group:2",
	"priority=62,in_port=2,tcp,nw_dst=10.0.0.7,actions=group:3",
	"priority=60,in_port=2,arp,actions=write_actions(output:3),goto_table:1",
	"priority=55,in_port=2,ip,actions=resubmit(,1),output:1",
	"priority=50,in_port=2,dl_vlan=5,actions=pop_vlan,resubmit(,1)",
	"table=1,priority=10,actions=resubmit(,3),output:3",
	"table=3,priority=10,actions=set_field:0x5->reg1,resubmit(,4),output:1",
	"table=4,priority=10,in_port=2,actions=resubmit(,5)",
	"table=5,priority=10,actions=output:3",
	// Conjunctive recirculation: "Final flow:" after the thaw.
	"priority=65,in_port=2,udp,udp_dst=53,actions=ct(table=2,zone=5)",
	"table=2,priority=10,ct_state=+trk+new,ip,actions=ct(commit,zone=5),output:1",
	// The packet metadata a trace flow may give: dp_hash (read by a
	// move, a dp_hash select group), pkt_mark; recirc_id=0 matched.
	"priority=60,in_port=3,actions=move:NXM_NX_DP_HASH[0..3]->NXM_NX_REG0[0..3],resubmit(,6)",
	"priority=61,in_port=3,tcp,actions=group:5",
	"priority=61,in_port=3,udp,actions=group:6",
	"table=6,priority=6,recirc_id=0,actions=output:2",
	"table=6,priority=7,pkt_mark=0x5,actions=output:1",
	// Sets of IP and ARP header fields consult nw_proto (OVS's
	// mf_set_mask_l3_prereqs), OXM's ip_dscp aside.
	"priority=110,in_port=LOCAL,ip,nw_src=10.9.0.1,actions=set_field:1->ip_ecn,output:2",
	"priority=110,in_port=LOCAL,ip,nw_src=10.9.0.2,actions=load:0x20->NXM_OF_IP_TOS[],output:2",
	"priority=110,in_port=LOCAL,ip,nw_src=10.9.0.3,actions=mod_nw_dst:10.9.9.9,dec_ttl,output:2",
	"priority=110,in_port=LOCAL,ip,nw_src=10.9.0.4,actions=set_field:0x10->ip_dscp,output:2",
	"priority=110,in_port=LOCAL,arp,actions=set_field:1.2.3.4->arp_spa,output:2",
	// Sets of some bits of a field: masked datapath sets, and megaflows
	// that match only those bits (none set without an IP protocol). In a
	// table of their own, ordered so that no lookup passes a rule of
	// another Ethernet type (OVS's staged lookup would then skip nw_proto,
	// govs' does not).
	"priority=115,in_port=LOCAL,dl_src=00:00:00:00:01:00/ff:ff:ff:ff:ff:00,actions=resubmit(,8)",
	"table=8,priority=50,ipv6,actions=load:0x77->NXM_NX_IPV6_DST[0..15],load:0x3->NXM_NX_IP_TTL[0..1],output:2",
	"table=8,priority=45,arp,actions=load:0x7->NXM_OF_ARP_TPA[0..7],output:2",
	"table=8,priority=40,tcp,actions=load:0x5->NXM_OF_TCP_DST[0..3],load:0x9->NXM_OF_IP_SRC[0..7],output:2",
	"table=8,priority=30,udp,actions=set_field:0x100/0xff00->udp_src,load:0xabcd->NXM_OF_ETH_SRC[0..15],output:2",
	"table=8,priority=10,ip,actions=load:0x5->NXM_OF_IP_SRC[0..7],output:2",
	// resubmit(ct): table 10 is looked up with the connection's
	// original tuple in place of the packet's (the megaflow matches
	// ct_nw_src etc.), the actions after it see the packet's again; a
	// packet with no tuple, or not IP, is not looked up.
	"priority=116,in_port=LOCAL,dl_src=00:00:00:00:02:00/ff:ff:ff:ff:ff:00,actions=resubmit(,9)",
	"table=9,priority=10,ct_state=+trk+est,ip,actions=resubmit(,10,ct),output:3",
	"table=9,priority=10,ct_state=+trk+est,ipv6,actions=resubmit(,10,ct)",
	"table=9,priority=5,ct_state=+trk-inv,actions=resubmit(,10,ct),output:2",
	"table=10,priority=20,tcp,nw_src=10.0.0.1,tp_dst=80,actions=output:2",
	"table=10,priority=15,tcp6,ipv6_src=fd00::1,actions=output:1",
	"table=10,priority=10,ip,nw_dst=10.5.0.2,actions=output:1",
	// output_trunc: a trunc before each truncated output (and before
	// the sets it commits); IN_PORT and the input port are not output.
	"priority=117,in_port=LOCAL,dl_src=00:00:00:00:03:00/ff:ff:ff:ff:ff:00,actions=resubmit(,11)",
	"table=11,priority=10,ip,actions=output(port=2,max_len=100),mod_nw_dst:10.9.9.9,output(port=1,max_len=64),output:3",
	"table=11,priority=5,arp,actions=output(port=LOCAL,max_len=60),output(port=IN_PORT,max_len=60),output:1",
}

// traceDiffCorpus are ofproto/trace flows for traceDiffFlows, and flows
// whose fields' prerequisites are not met (OVS refuses them: tp_dst is
// TCP's, nw_src IPv4's, nw_proto IP's).
var traceDiffCorpus = []string{
	"in_port=1,dl_src=00:00:00:00:00:01,dl_dst=00:00:00:00:00:02",
	"in_port=1,dl_src=00:00:00:00:00:07,dl_dst=00:00:00:00:00:02",
	"in_port=1,ip,nw_src=10.0.0.1,nw_dst=10.0.0.2",
	"in_port=1,dl_vlan=7,dl_src=00:00:00:00:00:01",
	"in_port=1,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.3,tp_dst=80",
	"in_port=1,udp,nw_src=10.0.0.1,nw_dst=10.0.0.3,udp_dst=53",
	"in_port=1,ipv6,ipv6_dst=::1",
	"in_port=1,arp,arp_spa=10.0.0.1,arp_tpa=10.0.0.2",
	"in_port=1,sctp,nw_src=10.0.0.1,nw_dst=10.0.0.3,tp_src=5,tp_dst=6",
	"in_port=1,dp_hash=0x23,sctp,nw_src=10.0.0.1,nw_dst=10.0.0.3,tp_src=5,tp_dst=6",
	"in_port=1,dp_hash=0x24,sctp,nw_src=10.0.0.1,nw_dst=10.0.0.3,tp_src=5,tp_dst=6",
	"in_port=1,sctp,dl_src=00:00:00:00:00:08,nw_src=10.0.0.1,nw_dst=10.0.0.3,tp_src=5,tp_dst=7",
	"in_port=3,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1,tp_dst=2",
	"in_port=3,dp_hash=0x1",
	"in_port=3,dp_hash=0x11,pkt_mark=0x5",
	"in_port=3,pkt_mark=5",
	"in_port=3,recirc_id=0",
	"in_port=3,recirc_id=0x7ffffff0",
	"in_port=3,dp_hash=0x7,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1,tp_dst=2",
	"in_port=3,dp_hash=0x2a,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1,tp_dst=2",
	// A select group with no live bucket reads no field to hash.
	"in_port=3,udp,nw_src=10.0.0.1,nw_dst=10.0.0.2,udp_src=1,udp_dst=2",
	"in_port=LOCAL,tcp,nw_src=10.9.0.1,nw_ttl=5",
	"in_port=LOCAL,ip,nw_src=10.9.0.1,nw_ttl=5",
	"in_port=LOCAL,udp,nw_src=10.9.0.2",
	"in_port=LOCAL,ip,nw_src=10.9.0.2",
	"in_port=LOCAL,tcp6",
	"in_port=LOCAL,tcp,nw_src=10.9.0.3,nw_ttl=5",
	"in_port=LOCAL,ip,nw_src=10.9.0.3,nw_ttl=5",
	"in_port=LOCAL,tcp,nw_src=10.9.0.4",
	// (With arp_op 1 OVS sends the flow to its slow path, the kernel
	// datapath having no ARP set; govs' datapath sets ARP fields.)
	"in_port=LOCAL,arp,arp_op=0",
	"in_port=LOCAL,dl_src=00:00:00:00:00:01",
	"in_port=LOCAL,dl_vlan=4,dl_vlan_pcp=5,dl_src=00:00:00:00:00:01",
	"in_port=LOCAL,dl_src=00:00:00:00:00:04",
	"in_port=LOCAL,dl_vlan=4,dl_vlan_pcp=5,dl_src=00:00:00:00:00:04",
	"in_port=LOCAL,dl_vlan=4,dl_vlan_pcp=5,dl_src=00:00:00:00:00:05",
	"in_port=LOCAL,tcp,dl_src=00:00:00:00:01:0a,nw_src=10.1.2.3,tcp_dst=0x1234",
	"in_port=LOCAL,tcp,dl_src=00:00:00:00:01:0a,nw_src=10.1.2.9,tcp_dst=0x1235",
	"in_port=LOCAL,udp,dl_src=00:00:00:00:01:0b,udp_src=53",
	"in_port=LOCAL,arp,dl_src=00:00:00:00:01:0c,arp_op=0,arp_tpa=10.0.0.1",
	"in_port=LOCAL,ip,dl_src=00:00:00:00:01:0d,nw_src=10.1.2.3",
	"in_port=LOCAL,tcp6,dl_src=00:00:00:00:01:0e,ipv6_dst=fd00::1,nw_ttl=64",
	// OVS's staged lookup past L3 (a flow on udp_dst=53 adds no L4 bits
	// to a TCP or ICMP packet's megaflow) and its ports trie (a UDP one's
	// gets tp_dst=0x0/0xffe0, the bits that tell 0 from 53).
	"in_port=2,icmp,nw_src=10.0.0.1",
	"in_port=2,udp,nw_src=10.0.0.1",
	"in_port=2,udp,nw_src=10.0.0.1,nw_dst=10.0.0.7,udp_dst=55",
	"in_port=2,udp,nw_src=10.0.0.2,nw_dst=10.0.0.7,udp_dst=56",
	"in_port=2,udp,nw_src=10.0.0.3,nw_dst=10.0.0.7,udp_dst=54",
	"in_port=2,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.7,tcp_src=1000,tcp_dst=80",
	"in_port=2,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.7,tcp_src=1001,tcp_dst=80",
	"in_port=2,tcp,nw_src=10.0.0.2,nw_dst=10.0.0.7,tcp_src=1002,tcp_dst=80",
	"in_port=2,tcp,nw_src=10.0.0.1",
	"in_port=2,arp",
	"in_port=2,ip,nw_src=10.0.0.1",
	"in_port=2,dl_vlan=5",
	"in_port=2,udp,nw_src=10.0.0.1,udp_dst=53",
	"in_port=LOCAL,dl_src=00:00:00:00:02:01,ct_state=trk|est,tcp,nw_src=10.5.0.1,nw_dst=10.5.0.2,tp_src=1234,tp_dst=8080,ct_nw_proto=6,ct_nw_src=10.0.0.1,ct_nw_dst=10.0.0.2,ct_tp_src=1234,ct_tp_dst=80",
	"in_port=LOCAL,dl_src=00:00:00:00:02:01,ct_state=trk|est,udp,nw_src=10.5.0.1,nw_dst=10.5.0.2,ct_nw_proto=17,ct_nw_src=10.0.0.9,ct_nw_dst=10.5.0.2,ct_tp_dst=53",
	"in_port=LOCAL,dl_src=00:00:00:00:02:01,ct_state=trk|est,tcp,nw_src=10.5.0.1,nw_dst=10.5.0.2",
	"in_port=LOCAL,dl_src=00:00:00:00:02:01,ct_state=trk|est,tcp6,ipv6_src=fd00::9,ct_nw_proto=6,ct_ipv6_src=fd00::1,ct_ipv6_dst=fd00::2,ct_tp_dst=22",
	"in_port=LOCAL,dl_src=00:00:00:00:02:01,ct_state=trk,arp",
	"in_port=LOCAL,dl_src=00:00:00:00:03:01,udp,nw_src=10.6.0.1,nw_dst=10.6.0.2",
	"in_port=LOCAL,dl_src=00:00:00:00:03:01,arp",
	// From here on Megaflow: is left out.
	megaflowsFrom,
	// Refused.
	"in_port=1,udp,nw_src=10.0.0.1,nw_dst=10.0.0.3,tp_dst=53",
	"in_port=1,tp_dst=53",
	"in_port=1,nw_proto=17,tp_dst=53",
	"in_port=1,ip,tp_dst=53",
	"in_port=1,udp,tcp_dst=53",
	"in_port=1,nw_src=10.0.0.1",
	"in_port=1,arp,nw_proto=1",
	"in_port=1,ip,arp_tpa=10.0.0.1",
	"in_port=1,ipv6,icmp_type=1",
	"in_port=3,dp_hash=0x1/0xf",
	"in_port=3,pkt_mark=xyz",
	"in_port=3,pkt_mark=0x1ffffffff",
}

// TestOpenFlowTraceDifferential: ofproto/trace prints the same as
// Debian's ovs-vswitchd, Megaflow: included (a non-IP packet's leaves
// the IP flow's fields out), and refuses the same flows with the same
// error (issue 12).
func TestOpenFlowTraceDifferential(t *testing.T) {
	deb, govs := startSwitchPair(t, "gtdd", "10.240.0", "gtdo", "10.241.0")
	for _, s := range []*ofSwitch{deb, govs} {
		if out, rc := s.ofctl("-O", "OpenFlow13", "add-group", s.br, "group_id=1,type=all,bucket=output:3,bucket=resubmit(,3),output:1"); rc != 0 {
			t.Fatalf("add-group: %s", out)
		}
		// Select groups: hashing fields (OVS's scores shown), and by
		// default with weights too uneven for OVS's dp_hash table.
		for _, g := range []string{
			"group_id=2,type=select,selection_method=hash,fields(ip_src,nw_proto,udp_dst),bucket=bucket_id:5,output:1,bucket=bucket_id:6,output:3,bucket=bucket_id:7,weight:3,output:LOCAL",
			"group_id=3,type=select,bucket=bucket_id:1,weight:1,output:1,bucket=bucket_id:2,weight:1000,output:3,bucket=bucket_id:3,weight:500,output:LOCAL",
			"group_id=5,type=select,selection_method=dp_hash,bucket=bucket_id:1,output:1,bucket=bucket_id:2,weight:3,output:2,bucket=bucket_id:3,output:LOCAL",
			"group_id=6,type=select,bucket=bucket_id:1,watch_port:9,output:1,bucket=bucket_id:2,watch_port:8,output:2",
			"group_id=7,type=select,bucket=bucket_id:1,output:2,bucket=bucket_id:2,output:3",
			"group_id=8,type=all,bucket=bucket_id:1,output:2,bucket=bucket_id:2,group:7,bucket=bucket_id:3,output:3",
		} {
			if out, rc := s.ofctl("-O", "OpenFlow15", "add-group", s.br, g); rc != 0 {
				t.Fatalf("add-group: %s", out)
			}
		}
		s.replaceFlows(traceDiffFlows...)
		// Nicira's only (no OXM form): OpenFlow 1.0.
		if out, rc := s.ofctl("add-flow", s.br, "priority=60,in_port=2,tcp,actions=check_pkt_larger(100)->reg0[0],resubmit(,1)"); rc != 0 {
			t.Fatalf("add-flow: %s", out)
		}
		// OpenFlow 1.1's set_vlan_vid and set_vlan_pcp (after a
		// push_vlan where the flow has no tag), and 1.0's mod_vlan_*.
		for _, f := range [][2]string{
			{"OpenFlow11", "priority=120,in_port=LOCAL,dl_src=00:00:00:00:00:01,actions=mod_vlan_vid:5,output:2"},
			{"OpenFlow11", "priority=120,in_port=LOCAL,dl_src=00:00:00:00:00:04,dl_vlan=4,actions=mod_vlan_vid:6,mod_vlan_pcp:2,output:2"},
			{"OpenFlow10", "priority=120,in_port=LOCAL,dl_src=00:00:00:00:00:05,actions=mod_vlan_vid:5,mod_vlan_pcp:2,output:2"},
		} {
			if out, rc := s.ofctl("-O", f[0], "add-flow", s.br, f[1]); rc != 0 {
				t.Fatalf("add-flow %s: %s", f[1], out)
			}
		}
	}
	megaflows := true
	for i, pkt := range traceDiffCorpus {
		if pkt == megaflowsFrom {
			megaflows = false
			continue
		}
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
			want, wantRC := deb.traceRC(pkt)
			got, gotRC := govs.traceRC(pkt)
			want, got = tunTraceNormalize(deb, want), tunTraceNormalize(govs, got)
			want, got = traceRecircID.ReplaceAllString(want, "${1}0xN"), traceRecircID.ReplaceAllString(got, "${1}0xN")
			if !megaflows {
				want, got = traceMegaflow.ReplaceAllString(want, ""), traceMegaflow.ReplaceAllString(got, "")
			}
			if got != want || gotRC != wantRC {
				t.Errorf("ofproto/trace %s:\ngovs (exit %d):\n%s\nDebian's (exit %d):\n%s", pkt, gotRC, got, wantRC, want)
			}
		})
	}

	// Options anywhere among the arguments: --ct-next's states for the
	// ct() recirculations in turn, -generate, --names (ports named in
	// the flows, rules and actions); bad ones refused with OVS's errors.
	const ctFlow = "in_port=2,udp,nw_src=10.0.0.1,udp_dst=53"
	for i, args := range [][]string{
		{"BR", ctFlow, "--ct-next", "trk,est"},
		{"--ct-next", "trk,est,rpl", "BR", ctFlow, "-generate"},
		{"BR", "--ct-next", "trk new", "--ct-next", "trk,inv", ctFlow},
		{"BR", ctFlow, "--ct-next", "est"},
		{"BR", ctFlow, "--ct-next", "trk,inv,est"},
		{"BR", ctFlow, "--ct-next", "trk,bogus"},
		{"BR", ctFlow, "--ct-next"},
		{"BR", ctFlow, "--frobnicate"},
		{"-generate"},
		{"BR", "--names", "in_port=1,ip,nw_src=10.0.0.1,nw_dst=10.0.0.2"},
		{"BR", "--names", "in_port=2,icmp,nw_src=10.0.0.1"},
		{"BR", "--names", "in_port=2,udp,nw_src=10.0.0.1"},
		{"BR", "--names", "in_port=2,arp"},
		{"--names", "BR", ctFlow},
		{"BR", "in_port=1,dl_src=00:00:00:00:00:07,dl_dst=00:00:00:00:00:02", "--names"},
		{"BR", "--ct-next", "trk new", ctFlow, "--ct-next", "trk,est"},
		{"BR", ctFlow, "--ct-next", "trk|est"},
		{"BR", ctFlow, "--ct-next", "new,est"},
		{"BR", ctFlow, "--ct-next", "inv,new,rpl"},
		{"BR", "-names", "in_port=LOCAL,dl_src=00:00:00:00:00:01"},
		{"BR", "in_port=2,arp", "a", "b"},
	} {
		t.Run(fmt.Sprintf("opts/%02d", i), func(t *testing.T) {
			run := func(s *ofSwitch) (string, int) {
				a := slices.Clone(args)
				if j := slices.Index(a, "BR"); j >= 0 {
					a[j] = s.br
				}
				out, rc := s.traceArgsRC(a...)
				out = tunTraceNormalize(s, out)
				return traceRecircID.ReplaceAllString(out, "${1}0xN"), rc
			}
			want, wantRC := run(deb)
			got, gotRC := run(govs)
			if got != want || gotRC != wantRC {
				t.Errorf("ofproto/trace %q:\ngovs (exit %d):\n%s\nDebian's (exit %d):\n%s", args, gotRC, got, wantRC, want)
			}
		})
	}

	// The masked sets' and output_trunc's datapath actions (the corpus
	// above leaves datapath actions out: ports are numbered
	// differently), with ports named.
	for i, pkt := range traceDiffCorpus {
		if !strings.Contains(pkt, "dl_src=00:00:00:00:01:0") && !strings.Contains(pkt, "dl_src=00:00:00:00:03:0") {
			continue
		}
		t.Run(fmt.Sprintf("masked/%02d", i), func(t *testing.T) {
			actions := func(s *ofSwitch) string {
				out, _ := s.traceArgsRC(s.br, "--names", pkt)
				out = s.normalizeOfctl(out)
				if i := strings.Index(out, "Datapath actions: "); i >= 0 {
					return strings.TrimSpace(out[i:])
				}
				return out
			}
			got, want := actions(govs), actions(deb)
			t.Logf("%s: %s", pkt, got)
			if got != want {
				t.Errorf("ofproto/trace --names %s:\ngovs:     %s\nDebian's: %s", pkt, got, want)
			}
		})
	}

	// OpenFlow 1.1 dumps "no VLAN" (dl_vlan=0xffff) as OVS's OXM match
	// says it: vlan_tci=0x0000/0x1fff.
	for i, args := range [][]string{
		{"-O", "OpenFlow11", "add-flow", "BR", "priority=200,dl_vlan=0xffff,actions=drop"},
		{"-O", "OpenFlow11", "dump-flows", "--no-stats", "BR", "dl_vlan=0xffff"},
	} {
		t.Run(fmt.Sprintf("of11/%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}
	// -generate is taken, and govs' log says what it does not do with it.
	if log := readFileString(filepath.Join(govs.dir, "ovs-vswitchd.log")); !strings.Contains(log, "|ofproto_dpif|INFO|ofproto/trace: -generate: the trace is of the flow; govs runs no action on a generated packet") {
		t.Errorf("govs' log does not report what -generate does not do")
	}

	// dp_hash and recirc_id: a controller's flow may match them only at
	// their defaults (recirc_id=0, dp_hash any), else OFPBRC_EPERM.
	for i, args := range [][]string{
		{"add-flow", "BR", "table=7,dp_hash=0x1/0xf,actions=output:2"},
		{"-O", "OpenFlow13", "add-flow", "BR", "table=7,dp_hash=0x10/0xf0,actions=output:2"},
		{"-O", "OpenFlow13", "add-flow", "BR", "table=7,recirc_id=1,actions=output:2"},
		{"mod-flows", "BR", "table=7,dp_hash=1/0xf,actions=output:3"},
		{"-O", "OpenFlow13", "add-flow", "BR", "table=7,recirc_id=0,dp_hash=0x3/0,actions=output:3"},
		{"add-flow", "BR", "table=7,actions=load:0x5->NXM_NX_DP_HASH[]"},
		{"dump-flows", "--no-stats", "BR", "table=7"},
		{"-O", "OpenFlow15", "dump-flows", "--no-stats", "BR", "table=7"},
		{"dump-flows", "--no-stats", "BR", "dp_hash=0x1/0xf"},
	} {
		t.Run(fmt.Sprintf("hidden/%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}
	// Before OpenFlow 1.2 an add resets a flow's counters, a modify
	// does not: the counters after each, of a flow a packet-out counted.
	counts := regexp.MustCompile(`n_packets=(\d+).*priority=300`)
	packets := func(s *ofSwitch) string {
		out, _ := s.ofctl("dump-flows", s.br, "ip")
		if m := counts.FindStringSubmatch(out); m != nil {
			return m[1]
		}
		return out
	}
	for _, args := range [][]string{
		{"-O", "OpenFlow10", "add-flow", "BR", "priority=300,ip,actions=drop"},
		{"packet-out", "BR", "1", "table", ipv4Packet},
		{"-O", "OpenFlow10", "mod-flows", "BR", "ip,actions=output:2"},
		{"-O", "OpenFlow11", "mod-flows", "BR", "ip,actions=output:3"},
		{"-O", "OpenFlow10", "--strict", "mod-flows", "BR", "priority=300,ip,actions=drop"},
		{"-O", "OpenFlow10", "add-flow", "BR", "priority=300,ip,actions=drop"},
		{"packet-out", "BR", "1", "table", ipv4Packet},
		{"-O", "OpenFlow11", "add-flow", "BR", "priority=300,ip,actions=drop"},
	} {
		compareOfctl(t, deb, govs, args)
		if got, want := packets(govs), packets(deb); got != want {
			t.Errorf("after ovs-ofctl %v: n_packets=%s, Debian's %s", args, got, want)
		}
	}

	// A select group without a method takes, for each TCP connection,
	// the bucket OVS's dp_hash table has at the connection's symmetric
	// L3/L4 hash: after a packet-out of 24 connections' SYNs, each
	// bucket's port sent the same number of them on both switches (OVS
	// counts no group statistics for a packet-out).
	txPkts := regexp.MustCompile(`tx pkts=(\d+)`)
	sent := func(s *ofSwitch) []int {
		var n []int
		for _, port := range []string{"1", "3", "LOCAL"} {
			out, _ := s.ofctl("dump-ports", s.br, port)
			m := txPkts.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("dump-ports %s: %s", port, out)
			}
			v, _ := strconv.Atoi(m[1])
			n = append(n, v)
		}
		return n
	}
	// govs' first, then Debian's must come to the same counts on ports 3
	// and LOCAL (port 1 is left out of the comparison: Debian's
	// sometimes sends it a packet or two of its own).
	var want string
	for _, s := range []*ofSwitch{govs, deb} {
		if out, rc := s.ofctl("-O", "OpenFlow15", "add-group", s.br, "group_id=4,type=select,bucket=bucket_id:0,output:1,bucket=bucket_id:1,weight:2,output:3,bucket=bucket_id:2,output:LOCAL"); rc != 0 {
			t.Fatalf("add-group: %s", out)
		}
		// Nothing else is sent anywhere: b, whose port's old flows
		// output to 1, 3 and LOCAL, goes quiet.
		s.b.mustExec("ip", "link", "set", "eth0", "down")
		s.replaceFlows("priority=400,in_port=2,tcp,actions=group:4")
		before := sent(s)
		for i := range 24 {
			if out, rc := s.ofctl("packet-out", s.br, "2", "table", tcpSYN(uint16(40000+7*i))); rc != 0 {
				t.Fatalf("packet-out: %s", out)
			}
		}
		var got string
		vswWait(t, vswTimeout, s.br+"'s ports to send the 24 packets as govs' did", func() bool {
			after := sent(s)
			delta := []int{after[0] - before[0], after[1] - before[1], after[2] - before[2]}
			got = fmt.Sprint(delta[1:])
			if s == govs {
				return delta[0]+delta[1]+delta[2] >= 24
			}
			return got == want
		})
		want = got
	}
	t.Logf("default select group's buckets (packets to ports 3, LOCAL): %s", want)
}

// tcpSYN is an Ethernet frame (hex) for packet-out: a TCP SYN from
// 10.0.0.1:sport to 10.0.0.2:80.
func tcpSYN(sport uint16) string {
	return fmt.Sprintf("ffffffffffff000000000001080045000028000100004006"+"00000a0000010a000002%04x0050000000000000000050020400"+"00000000", sport)
}

// megaflowsFrom marks where traceDiffCorpus's traces are compared
// without their Megaflow: line.
const megaflowsFrom = "-"

var traceMegaflow = regexp.MustCompile(`(?m)^Megaflow: .*$`)

// traceRecircID matches a recirculation ID in a trace: each switch numbers
// them from its own start, and traffic a bridge's own ports send (IPv6
// multicast reports through the ct() flows) may take some first.
var traceRecircID = regexp.MustCompile(`(recirc\(|recirc_id=)0x[0-9a-f]+`)

// ipv4Packet is an Ethernet frame (hex) for packet-out: a UDP datagram
// from 10.0.0.1 to 10.0.0.2.
const ipv4Packet = "ffffffffffff00000000000108004500001c00010000401100000a0000010a000002003500350008000000"

// tracePrefixFlows: rules on nw_src and nw_dst prefixes of every length
// in several tables, priorities that overlap, both fields in one rule,
// resubmits between the tables, and a table without a default rule.
var tracePrefixFlows = []string{
	"priority=300,ip,nw_src=10.1.2.0/24,actions=resubmit(,1)",
	"priority=200,ip,nw_src=10.1.0.0/16,actions=output:2",
	"priority=100,ip,nw_src=10.0.0.0/8,actions=resubmit(,2)",
	"priority=250,ip,nw_dst=192.168.10.5,actions=output:3",
	"priority=150,ip,nw_src=172.16.0.0/12,nw_dst=192.168.0.0/16,actions=output:1",
	"priority=120,ip,nw_src=5.5.5.8,actions=output:2",
	"priority=50,ip,actions=resubmit(,3)",
	"priority=0,actions=drop",
	"table=1,priority=10,ip,nw_dst=10.9.0.0/16,actions=output:1",
	"table=1,priority=20,ip,nw_dst=10.9.8.0/24,actions=output:2",
	"table=1,priority=5,actions=output:3",
	"table=2,priority=10,ip,nw_dst=20.0.0.0/8,actions=output:1",
	"table=2,priority=30,ip,nw_dst=20.1.1.1,actions=output:2",
	"table=3,priority=10,ip,nw_src=30.0.0.0/24,nw_dst=40.0.0.0/16,actions=output:2",
	"table=3,priority=5,ip,nw_src=30.0.0.0/16,actions=output:1",
	"table=3,priority=7,ip,nw_dst=40.1.0.0/17,actions=output:3",
	"table=3,priority=20,tcp,nw_src=30.0.0.0/24,tp_dst=0x1f90/0xfff0,actions=output:3",
	"table=3,priority=21,tcp,nw_src=30.0.0.0/24,tp_src=1024/0xfc00,tp_dst=22,actions=output:1",
}

// TestOpenFlowTracePrefixTries: ofproto/trace's Megaflow: of IPv4
// packets through tables of address prefixes is Debian's, whose
// classifier keeps prefix tries on nw_dst and nw_src: a megaflow matches
// only the address bits that tell the packet from the prefixes it does
// not match (issue 12).
func TestOpenFlowTracePrefixTries(t *testing.T) {
	deb, govs := startSwitchPair(t, "gtpd", "10.242.0", "gtpo", "10.243.0")
	for _, s := range []*ofSwitch{deb, govs} {
		s.replaceFlows(tracePrefixFlows...)
	}
	for i, addrs := range [][3]string{
		{"10.1.2.3", "10.9.8.1"}, // /24 then table 1's /24
		{"10.1.2.3", "10.9.7.1"},
		{"10.1.2.3", "10.8.0.1"},
		{"10.1.3.3", "1.2.3.4"},  // /16
		{"10.2.0.1", "20.1.1.1"}, // /8 then table 2's /32
		{"10.2.0.1", "20.1.1.0"},
		{"10.2.0.1", "21.0.0.1"}, // a miss in table 2
		{"10.1.2.3", "192.168.10.5"},
		{"172.16.5.5", "192.168.10.5"},
		{"172.16.5.5", "192.168.10.4"},
		{"172.32.5.5", "192.168.10.4"},
		{"5.5.5.10", "1.1.1.1"}, // OVS: nw_src=5.5.5.10/31
		{"5.5.5.8", "1.1.1.1"},
		{"5.5.5.9", "1.1.1.1"},
		{"30.0.0.9", "40.0.0.1"}, // table 3
		{"30.0.1.9", "40.0.0.1"},
		{"30.0.1.9", "40.1.0.1"},
		{"30.1.1.9", "40.1.200.1"},
		{"128.0.0.1", "128.0.0.1"},
		{"11.0.0.1", "192.169.0.1"},
		// Table 3's ports: OVS's staged lookup and ports trie.
		{"30.0.0.9", "40.0.0.1", "tcp,tp_src=1025,tp_dst=8085"},
		{"30.0.0.9", "40.0.0.1", "tcp,tp_src=1025,tp_dst=22"},
		{"30.0.0.9", "40.0.0.1", "tcp,tp_src=80,tp_dst=22"},
		{"30.0.0.9", "40.0.0.1", "tcp,tp_src=80,tp_dst=443"},
		{"30.0.0.9", "40.0.0.1", "udp,udp_src=1025,udp_dst=22"},
		{"30.0.1.9", "40.0.0.1", "tcp,tp_src=1025,tp_dst=22"},
	} {
		pkt := fmt.Sprintf("in_port=1,%s,nw_src=%s,nw_dst=%s", cmp.Or(addrs[2], "ip"), addrs[0], addrs[1])
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
			want, wantRC := deb.traceRC(pkt)
			got, gotRC := govs.traceRC(pkt)
			want, got = tunTraceNormalize(deb, want), tunTraceNormalize(govs, got)
			if got != want || gotRC != wantRC {
				t.Errorf("ofproto/trace %s:\ngovs (exit %d):\n%s\nDebian's (exit %d):\n%s", pkt, gotRC, got, wantRC, want)
			}
			t.Logf("%s: %s", pkt, traceMegaflow.FindString(got))
		})
	}
}

// TestPrefixTrieMegaflowTraffic: UDP datagrams from a to eight addresses
// of a /24 that a flow forwards, beside a /32 of the same /24 and an
// nw_src /16 at higher priorities, take as many megaflows in govs'
// datapath as in Debian's (dpif/dump-flows): one, which the prefix
// tries let match nw_dst=172.31.5.0/24 (without them, one per address).
func TestPrefixTrieMegaflowTraffic(t *testing.T) {
	deb, govs := startSwitchPair(t, "gtmd", "10.244.0", "gtmo", "10.245.0")
	const addrs = 8
	dump := map[*ofSwitch]string{}
	for _, s := range []*ofSwitch{deb, govs} {
		s.replaceFlows(
			"priority=300,ip,nw_dst=172.31.5.200,actions=drop",
			"priority=250,ip,nw_src=10.99.0.0/16,actions=drop",
			"priority=100,ip,nw_dst=172.31.5.0/24,actions=output:2",
			"priority=0,actions=drop")
		bmac := strings.TrimSpace(s.b.mustExec("cat", "/sys/class/net/eth0/address"))
		s.a.mustExec("ip", "route", "replace", "172.31.5.0/24", "dev", "eth0")
		var dsts []string
		for i := range addrs {
			dst := fmt.Sprintf("172.31.5.%d", 10+i)
			s.a.mustExec("ip", "neigh", "replace", dst, "lladdr", bmac, "dev", "eth0", "nud", "permanent")
			dsts = append(dsts, dst)
		}
		// Datagrams to every address until the /24 flow counted two
		// rounds of them (a datagram the namespace drops early on is
		// sent again): the later ones find the megaflows the first made.
		send := func() {
			s.a.mustExec(append([]string{debPython, "-c", `import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for d in sys.argv[1:]: s.sendto(b"govs", (d, 9))`}, dsts...)...)
		}
		counted := regexp.MustCompile(`n_packets=(\d+),.*priority=100,`)
		vswWait(t, vswTimeout, s.br+"'s /24 flow to count two rounds of datagrams", func() bool {
			out, _ := s.ofctl("dump-flows", s.br, "ip,nw_dst=172.31.5.0/24")
			if m := counted.FindStringSubmatch(out); m != nil {
				if n, _ := strconv.Atoi(m[1]); n >= 2*addrs {
					return true
				}
			}
			send()
			return false
		})
		var lines []string
		for _, l := range strings.Split(s.appctl("dpif/dump-flows", s.br), "\n") {
			if strings.Contains(l, "172.31.5.") {
				lines = append(lines, l)
			}
		}
		dump[s] = strings.Join(lines, "\n")
		t.Logf("%s: %d megaflows for %d addresses:\n%s", s.br, len(lines), addrs, dump[s])
	}
	n := func(s *ofSwitch) int { return strings.Count(dump[s], "172.31.5.") }
	if n(govs) != n(deb) || n(govs) >= addrs {
		t.Errorf("govs has %d megaflows for the %d addresses, Debian's %d:\ngovs:\n%s\nDebian's:\n%s", n(govs), addrs, n(deb), dump[govs], dump[deb])
	}
	// The same IPv4 masks (a's address aside, in each switch's subnet).
	ipv4 := regexp.MustCompile(`ipv4\([^)]*\)`)
	got := strings.ReplaceAll(strings.Join(ipv4.FindAllString(dump[govs], -1), " "), "10.245.0.1/", "A/")
	want := strings.ReplaceAll(strings.Join(ipv4.FindAllString(dump[deb], -1), " "), "10.244.0.1/", "A/")
	if got != want {
		t.Errorf("govs' megaflows match %s, Debian's %s", got, want)
	}
}

// TestOpenFlowTracePrefixesConfig: Flow_Table prefixes chooses the
// fields a table keeps prefix tries on, as in Debian's ovs-vswitchd:
// IPv6 addresses, none (the megaflow matches a subtable's whole mask),
// OVS's default for a row without prefixes; the same megaflows, and the
// same warnings for fields that cannot be used.
func TestOpenFlowTracePrefixesConfig(t *testing.T) {
	deb, govs := startSwitchPair(t, "gtcd", "10.246.0", "gtco", "10.247.0")
	inPorts := []string{"1", "2", "3", "LOCAL"}
	for _, s := range []*ofSwitch{deb, govs} {
		s.vsctl("--", "--id=@v6", "create", "Flow_Table", "prefixes=ipv6_dst,ipv6_src",
			"--", "--id=@none", "create", "Flow_Table", "prefixes=none",
			"--", "--id=@bad", "create", "Flow_Table", "prefixes=nw_dst,eth_src,frobnicate",
			"--", "--id=@dflt", "create", "Flow_Table", "name=dflt",
			"--", "set", "Bridge", s.br, "flow_tables:0=@v6", "flow_tables:1=@none", "flow_tables:2=@bad", "flow_tables:3=@dflt")
		var flows []string
		for table := range 4 {
			flows = append(flows,
				fmt.Sprintf("table=%d,priority=30,ipv6,ipv6_src=2001:db8::/32,actions=output:1", table),
				fmt.Sprintf("table=%d,priority=40,ipv6,ipv6_src=2001:db8:0:1::5,actions=output:2", table),
				fmt.Sprintf("table=%d,priority=35,ipv6,ipv6_dst=fd00::/8,actions=output:3", table),
				fmt.Sprintf("table=%d,priority=30,ip,nw_src=10.0.0.0/8,actions=output:1", table),
				fmt.Sprintf("table=%d,priority=40,ip,nw_src=10.1.2.3,actions=output:2", table),
				fmt.Sprintf("table=%d,priority=35,ip,nw_dst=192.168.0.0/16,actions=output:3", table),
				fmt.Sprintf("table=%d,priority=0,actions=drop", table))
		}
		// Table 0 sends the packets of ports 2, 3 and LOCAL to tables 1,
		// 2 and 3.
		for table := 1; table < 4; table++ {
			flows = append(flows, fmt.Sprintf("priority=100,in_port=%s,actions=resubmit(,%d)", inPorts[table], table))
		}
		s.replaceFlows(flows...)
	}
	var pkts []string
	for table := range 4 {
		for _, p := range []string{
			"ipv6,ipv6_src=2001:db8::7,ipv6_dst=fe80::1",
			"ipv6,ipv6_src=2001:db8:0:1::5,ipv6_dst=fd00::1",
			"ipv6,ipv6_src=2001:db9::1,ipv6_dst=::1",
			"ip,nw_src=10.2.0.1,nw_dst=1.1.1.1",
			"ip,nw_src=10.1.2.3,nw_dst=192.168.1.1",
			"ip,nw_src=11.0.0.1,nw_dst=192.169.1.1",
		} {
			pkts = append(pkts, fmt.Sprintf("in_port=%s,%s", inPorts[table], p))
		}
	}
	for i, pkt := range pkts {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
			want, wantRC := deb.traceRC(pkt)
			got, gotRC := govs.traceRC(pkt)
			want, got = tunTraceNormalize(deb, want), tunTraceNormalize(govs, got)
			if got != want || gotRC != wantRC {
				t.Errorf("ofproto/trace %s:\ngovs (exit %d):\n%s\nDebian's (exit %d):\n%s", pkt, gotRC, got, wantRC, want)
			}
			t.Logf("%s: %s", pkt, traceMegaflow.FindString(got))
		})
	}
	// OVS's log lines about the rows, in both logs.
	for _, s := range []*ofSwitch{deb, govs} {
		log := readFileString(filepath.Join(s.dir, "ovs-vswitchd.log"))
		for _, want := range []string{
			"|bridge|WARN|bridge BR: 'prefixes' with incompatible field: eth_src",
			"|bridge|WARN|bridge BR: 'prefixes' with unknown field: frobnicate",
			"|bridge|INFO|bridge BR table 0: Prefix lookup with: ipv6_dst,ipv6_src.",
			"|bridge|INFO|bridge BR table 1: Prefix lookup with: none.",
			"|bridge|INFO|bridge BR table 2: Prefix lookup with: ip_dst.",
		} {
			if want = strings.ReplaceAll(want, "BR", s.br); !strings.Contains(log, want) {
				t.Errorf("%s's log has no %q", s.br, want)
			}
		}
		if strings.Contains(log, "table 3: Prefix lookup") {
			t.Errorf("%s's log says table 3's prefixes, which are OVS's default", s.br)
		}
	}
	// A column govs does not implement (table 3's name) is reported.
	if want := "|bridge|WARN|bridge " + govs.br + " table 3: Flow_Table name not implemented by govs, not applied"; !strings.Contains(readFileString(filepath.Join(govs.dir, "ovs-vswitchd.log")), want) {
		t.Errorf("govs' log has no %q", want)
	}
	// Table 1 back to the default, and table 3 to ipv6_src only: the
	// tries are rebuilt from the flows the tables have, and the
	// megaflows change.
	changed := []string{"in_port=2,ip,nw_src=10.2.0.1,nw_dst=1.1.1.1", "in_port=LOCAL,ip,nw_src=10.2.0.1,nw_dst=1.1.1.1",
		"in_port=LOCAL,ipv6,ipv6_src=2001:db8::7,ipv6_dst=fe80::1"}
	before := map[string]string{}
	for _, pkt := range changed {
		out, _ := deb.traceRC(pkt)
		before[pkt] = traceMegaflow.FindString(out)
	}
	for _, s := range []*ofSwitch{deb, govs} {
		s.vsctl("--", "--id=@v6", "create", "Flow_Table", "prefixes=ipv6_src",
			"--", "remove", "Bridge", s.br, "flow_tables", "1", "--", "set", "Bridge", s.br, "flow_tables:3=@v6")
	}
	for _, pkt := range changed {
		var got, want string
		vswWait(t, vswTimeout, "the traces of "+pkt+" to agree after the change", func() bool {
			want, _ = deb.traceRC(pkt)
			got, _ = govs.traceRC(pkt)
			want, got = tunTraceNormalize(deb, want), tunTraceNormalize(govs, got)
			return got == want && traceMegaflow.FindString(want) != before[pkt]
		})
		t.Logf("%s: %s", pkt, traceMegaflow.FindString(got))
	}
}
