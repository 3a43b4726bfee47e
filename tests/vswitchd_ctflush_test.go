package tests

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestOpenFlowCtFlushDifferential runs the forms of `dpctl/flush-conntrack`
// OVS 3.1 accepts (all, zone=N, an original or reply 5-tuple, both) and
// malformed ones on Debian's ovs-vswitchd (netdev) and govs, with the same
// UDP connections in zones 0 and 5, and requires the same output, exit
// status and remaining connections after each; then the partial forms
// again as NXT_CT_FLUSH from `ovs-ofctl ct-flush`. (A zone over 65535,
// which OVS 3.1 takes modulo 65536, govs refuses.)
func TestOpenFlowCtFlushDifferential(t *testing.T) {
	deb, govs := startSwitchPair(t, "gfld", "10.243.0", "gflo", "10.244.0")
	results := map[*ofSwitch][]string{}
	for _, sw := range []*ofSwitch{deb, govs} {
		net, target := "10.243.0", filepath.Join(sw.dir, "ovs-vswitchd.ctl")
		if sw == govs {
			net, target = "10.244.0", "ovs-vswitchd"
		}
		sw.replaceFlows("table=0,priority=100,arp,actions=NORMAL",
			"table=0,priority=100,icmp,actions=NORMAL",
			"table=0,priority=90,udp,in_port=1,tp_dst=7601,actions=ct(commit,zone=5),output:2",
			"table=0,priority=90,udp,in_port=1,tp_dst=7602,actions=ct(commit),output:2",
			"table=0,priority=1,actions=drop")
		sw.noTxChecksum()
		sw.a.waitPing(net + ".2")
		// fill opens the connections from ports 7600 and 7610 to 7601
		// (zone 5) and 7602 (zone 0).
		fill := func() {
			if strings.Count(sw.appctl("dpctl/dump-conntrack"), "udp,") == 4 {
				return
			}
			vswWait(t, vswTimeout, sw.br+" to track four datagrams", func() bool {
				sw.a.mustExec(debPython, "-c", `import socket, sys
for sp in (7600, 7610):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((sys.argv[1], sp))
    for dp in (7601, 7602): s.sendto(b"govs", (sys.argv[2], dp))`, net+".1", net+".2")
				return strings.Count(sw.appctl("dpctl/dump-conntrack"), "udp,") == 4
			})
		}
		a, b := net+".1", net+".2"
		orig := fmt.Sprintf("ct_nw_src=%s,ct_nw_dst=%s,ct_nw_proto=17,ct_tp_src=7600,ct_tp_dst=7601", a, b)
		reply := fmt.Sprintf("ct_nw_src=%s,ct_nw_dst=%s,ct_nw_proto=17,ct_tp_src=7601,ct_tp_dst=7600", b, a)
		orig0 := fmt.Sprintf("ct_nw_src=%s,ct_nw_dst=%s,ct_nw_proto=17,ct_tp_src=7610,ct_tp_dst=7602", a, b)
		record := func(args []string, out string, rc int) {
			dump := strings.ReplaceAll(sw.appctl("dpctl/dump-conntrack"), net+".", "NET.")
			lines := strings.Split(strings.TrimSpace(dump), "\n")
			slices.Sort(lines)
			res := strings.ReplaceAll(fmt.Sprintf("flush-conntrack %s: exit %d: %s\n%s", strings.Join(args, " "), rc,
				strings.TrimSpace(out), strings.Join(lines, "\n")), net+".", "NET.")
			results[sw] = append(results[sw], regexp.MustCompile(`ovs-appctl: \S+: `).ReplaceAllString(res, "ovs-appctl: CTL: "))
		}
		for _, args := range [][]string{
			{"zone=5", orig},
			{orig0},
			{"zone=5", "", reply},
			{"zone=5"},
			{},
			{"zone=x"},
			{"ct_nw_proto=17"},
			{"zone=5", "ct_tp_dst=7601"},
			{"zone=5", "ct_nw_src=" + a + ",ct_tp_src=7610"},
			{"zone=5", orig, reply},
			{"zone=5", orig, "ct_tp_src=7777"},
			{"zone=5", "ct_nw_src=9.9.9.9,ct_nw_dst=9.9.9.8,ct_nw_proto=17,ct_tp_src=1,ct_tp_dst=2"},
			{"zone=5", "ct_nw_proto=6"},
			{"zone=5", "ct_nw_proto=17,ct_tp_src=7610"},
			{"ct_ipv6_src=fd00::1"},
			{"netdev@ovs-netdev", "zone=5", orig, reply},
			{"bogus"},
			{"ct_nw_src=1.2.3.4"},
			{"ct_nw_src=bad,ct_nw_dst=1.2.3.4,ct_nw_proto=17"},
			{"mark=1"},
			{"zone=5", orig, reply, "extra"},
			{"netdev@ovs-netdev", "zone=5"},
			{"ct_ipv6_src=fd00::1,ct_ipv6_dst=fd00::2,ct_nw_proto=17,ct_tp_src=1,ct_tp_dst=2"},
		} {
			fill()
			out, rc := sw.runRC(vswAppctl, append([]string{"-t", target}, append([]string{"dpctl/flush-conntrack"}, args...)...)...)
			record(args, out, rc)
		}
		for _, args := range [][]string{
			{"zone=5", orig},
			{orig0},
			{"zone=5", "", reply},
			{"zone=5"},
			{},
			{"ct_nw_proto=17"},
			{"zone=5", "ct_nw_proto=17,ct_tp_dst=7601"},
			{"zone=5", "ct_nw_src=" + a + ",ct_nw_proto=17,ct_tp_src=7610"},
			{"zone=5", orig, reply},
			{"zone=5", orig, "ct_nw_proto=17,ct_tp_src=7777"},
			{"zone=5", "ct_nw_proto=6"},
			{"ct_nw_proto=17,ct_nw_dst=" + b},
			{"zone=5", "ct_nw_proto=1"},
			{"", "ct_nw_proto=17,ct_tp_src=7602"},
		} {
			fill()
			out, rc := sw.ofctl(append([]string{"ct-flush", sw.br}, args...)...)
			record(append([]string{"ofctl"}, args...), out, rc)
		}
	}
	for i := range results[deb] {
		if results[govs][i] != results[deb][i] {
			t.Errorf("govs:\n%s\nDebian's ovs-vswitchd:\n%s", results[govs][i], results[deb][i])
		}
	}
}
