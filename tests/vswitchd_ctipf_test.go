package tests

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOpenFlowCtIPFDifferential runs the fragment reassembler's commands
// (dpctl/ipf-*) with good and bad arguments on Debian's ovs-vswitchd
// (netdev) and govs and requires the same output and exit status; then,
// through a ct(commit) flow, fragmented pings (ping -s 3000: three
// fragments each way), over IPv4 and IPv6, with the defaults, with a minimum fragment size
// that makes the first two too small (refused, tracked as invalid and
// forwarded; the last fragments held), and with IPv4 reassembly disabled,
// and requires the same counters and held fragment lists (-m) after each.
func TestOpenFlowCtIPFDifferential(t *testing.T) {
	deb, govs := startSwitchPair(t, "gipd", "10.231.0", "gipg", "10.232.0")
	results := map[*ofSwitch][]string{}
	for _, sw := range []*ofSwitch{deb, govs} {
		net, target := "10.231.0", filepath.Join(sw.dir, "ovs-vswitchd.ctl")
		if sw == govs {
			net, target = "10.232.0", "ovs-vswitchd"
		}
		sw.replaceFlows("table=0,priority=100,arp,actions=NORMAL",
			"table=0,priority=100,icmp6,icmp_type=135,actions=NORMAL",
			"table=0,priority=100,icmp6,icmp_type=136,actions=NORMAL",
			"table=0,priority=90,ip,actions=ct(commit),NORMAL",
			"table=0,priority=90,ipv6,actions=ct(commit),NORMAL")
		sw.a.mustExec("ip", "-6", "addr", "add", "fd31::1/64", "dev", "eth0", "nodad")
		sw.b.mustExec("ip", "-6", "addr", "add", "fd31::2/64", "dev", "eth0", "nodad")
		sw.a.waitPing(net + ".2")
		sw.a.waitPing("fd31::2")
		run := func(args ...string) {
			out, rc := sw.runRC(vswAppctl, append([]string{"-t", target}, args...)...)
			out = strings.ReplaceAll(out, net+".", "NET.")
			out = regexp.MustCompile(`ovs-appctl: \S+: `).ReplaceAllString(out, "ovs-appctl: CTL: ")
			out = regexp.MustCompile(`ip_id=\d+,`).ReplaceAllString(out, "ip_id=ID,")
			results[sw] = append(results[sw], fmt.Sprintf("%s: exit %d:\n%s", strings.Join(args, " "), rc, out))
		}
		pingTo := func(dst string, want bool) {
			out, err := sw.a.exec("ping", "-q", "-n", "-c", "1", "-W", "2", "-s", "3000", dst)
			if (err == nil) != want {
				t.Errorf("%s: ping -s 3000 %s: %v, want an answer: %v\n%s", sw.br, dst, err, want, out)
			}
		}
		ping := func(want bool) { pingTo(net+".2", want) }
		for _, args := range [][]string{
			{"dpctl/ipf-get-status"},
			{"dpctl/ipf-get-status", "-m"},
			{"dpctl/ipf-get-status", "netdev@ovs-netdev"},
			{"dpctl/ipf-get-status", "-m", "netdev@ovs-netdev"},
			{"dpctl/ipf-get-status", "bogus"},
			{"dpctl/ipf-get-status", "a", "b"},
			{"dpctl/ipf-set-enabled"},
			{"dpctl/ipf-set-enabled", "v5"},
			{"dpctl/ipf-set-enabled", "bogus", "v6"},
			{"dpctl/ipf-set-disabled", "netdev@ovs-netdev", "v6"},
			{"dpctl/ipf-set-enabled", "v6x"},
			{"dpctl/ipf-set-enabled", "-x", "v6"},
			{"dpctl/ipf-set-min-frag", "v4"},
			{"dpctl/ipf-set-min-frag", "v4", "399"},
			{"dpctl/ipf-set-min-frag", "v6", "x"},
			{"dpctl/ipf-set-min-frag", "v7", "1000"},
			{"dpctl/ipf-set-min-frag", "bogus", "v4", "1000"},
			{"dpctl/ipf-set-min-frag", "netdev@ovs-netdev", "v6", "400"},
			{"dpctl/ipf-set-min-frag", "v6", "1280"},
			{"dpctl/ipf-set-min-frag", "v4", "+1300x"},
			{"dpctl/ipf-get-status"},
			{"dpctl/ipf-set-min-frag", "v4", "1200"},
			{"dpctl/ipf-set-max-nfrags", "5001"},
			{"dpctl/ipf-set-max-nfrags", "-1"},
			{"dpctl/ipf-set-max-nfrags", "netdev@ovs-netdev", "-1"},
			{"dpctl/ipf-set-max-nfrags", "4294967296"},
			{"dpctl/ipf-set-max-nfrags", "x"},
			{"dpctl/ipf-set-max-nfrags", "bogus", "10"},
			{"dpctl/ipf-set-max-nfrags", "5000"},
			{"dpctl/ipf-set-max-nfrags", "1000"},
			{"dpctl/ipf-get-status"},
		} {
			run(args...)
		}
		ping(true)
		pingTo("fd31::2", true)
		run("dpctl/ipf-get-status", "-m")
		// The request's first two fragments are refused and forwarded,
		// its last is held for a datagram that never completes: no
		// answer.
		run("dpctl/ipf-set-min-frag", "v4", "1501")
		ping(false)
		run("dpctl/ipf-get-status", "--more")
		// Disabled, IPv4 fragments are forwarded as invalid (and still
		// counted when too small).
		run("dpctl/ipf-set-disabled", "v4")
		ping(true)
		pingTo("fd31::2", true)
		run("dpctl/ipf-get-status", "-m")
		run("dpctl/ipf-set-disabled", "v6")
		ping(true)
		pingTo("fd31::2", true)
		run("dpctl/ipf-get-status")
	}
	for i := range max(len(results[deb]), len(results[govs])) {
		var d, g string
		if i < len(results[deb]) {
			d = results[deb][i]
		}
		if i < len(results[govs]) {
			g = results[govs][i]
		}
		if d != g {
			t.Errorf("govs:\n%s\nDebian's ovs-vswitchd:\n%s", g, d)
		}
	}
}
