package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The learn action: flows learned from traffic, judged by Debian's
// ovs-ofctl against govs and Debian's ovs-vswitchd side by side.

// learnSwitch is ovs-actions(7)'s MAC-learning switch made of learn flows
// only: table 0 learns each source into table 10, which loads its port
// into reg0; table 1 outputs to that port, or floods when none is known.
func learnSwitch(idle int) []string {
	return []string{
		"table=0,priority=0,actions=learn(table=10,idle_timeout=" + strconv.Itoa(idle) + ",delete_learned,cookie=0x5," +
			"NXM_OF_VLAN_TCI[0..11],NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],load:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15])," +
			"resubmit(,10),resubmit(,1)",
		"table=1,priority=10,reg0=0,actions=FLOOD",
		"table=1,priority=0,actions=output:NXM_NX_REG0[0..15]",
	}
}

// quietNS stops the namespaces' IPv6 chatter (router solicitations),
// which would learn their MACs again at times of its own.
func quietNS(t *testing.T, nss ...*vswNS) {
	t.Helper()
	for _, ns := range nss {
		ns.mustExec("sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1")
	}
}

func nsMAC(ns *vswNS) string {
	return strings.TrimSpace(ns.mustExec("cat", "/sys/class/net/eth0/address"))
}

// learnedLines returns the flows of table 10 that name one of the
// namespaces' MACs (as normalised: MACA, MACB), sorted.
func learnedLines(s *ofSwitch, version string) string {
	s.t.Helper()
	out, rc := s.ofctl("-O", version, "dump-flows", s.br, "table=10")
	if rc != 0 {
		s.t.Fatalf("dump-flows: %s", out)
	}
	var lines []string
	for _, l := range strings.Split(s.normalizeOfctl(out), "\n") {
		if strings.Contains(l, "MACA") || strings.Contains(l, "MACB") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestOpenFlowLearnDifferential loads learn flows in every OpenFlow
// version into govs and Debian's ovs-vswitchd and requires the same
// dump-flows output and exit status, the same refusals, the same
// ofproto/trace datapath actions, and, after the same pings, the same
// learned flows; deleting the learning flow deletes them on both.
func TestOpenFlowLearnDifferential(t *testing.T) {
	deb := startDebianSwitch(t)
	deb.setUp("golnd", "10.171.0")
	govs := startGovsSwitch(t)
	govs.setUp("golng", "10.172.0")
	for _, s := range []*ofSwitch{deb, govs} {
		quietNS(t, s.a, s.b)
		s.names[nsMAC(s.a)], s.names[nsMAC(s.b)] = "MACA", "MACB"
	}
	dir := t.TempDir()
	f := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	learns := f("learns", strings.Join([]string{
		"table=2,priority=5,actions=learn(table=10,idle_timeout=10,hard_timeout=20,fin_idle_timeout=2,fin_hard_timeout=4,priority=5,cookie=0x12,send_flow_rem,delete_learned," +
			"NXM_OF_VLAN_TCI[0..11],NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],load:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15],load:0x5->NXM_NX_REG1[]," +
			"eth_type=0x800,output:NXM_NX_REG2[0..15]),fin_timeout(idle_timeout=3,hard_timeout=7)",
		"table=2,priority=6,ip,actions=learn(table=11,limit=10,result_dst=reg3[5],eth_type=0x800,NXM_OF_IP_DST[]=NXM_OF_IP_SRC[],nw_proto=6,tcp_dst=80," +
			"load:0xabcdef0123->NXM_NX_XXREG0[3..50],load:NXM_OF_IP_SRC[0..7]->NXM_NX_REG4[8..15])",
		"table=2,priority=7,tcp,actions=learn(table=12,eth_src=00:11:22:33:44:55,eth_type=0x800,nw_proto=6,NXM_OF_TCP_SRC[]=NXM_OF_TCP_DST[]),fin_timeout(idle_timeout=1)",
	}, "\n")+"\n")
	for i, args := range [][]string{
		{"del-flows", "BR"},
		{"add-flows", "BR", learns},
		{"dump-flows", "BR"},
		{"-O", "OpenFlow10", "dump-flows", "BR"},
		{"-O", "OpenFlow13", "dump-flows", "BR"},
		{"-O", "OpenFlow15", "dump-flows", "BR"},
		{"-O", "OpenFlow13", "replace-flows", "BR", learns},
		{"-O", "OpenFlow15", "diff-flows", "BR", learns},
		// Refused (by ovs-ofctl itself, with the same words and status).
		{"add-flow", "BR", "actions=learn(table=255)"},
		{"add-flow", "BR", "actions=learn(table=1,NXM_OF_IP_DST[]=NXM_OF_IP_SRC[])"},
		{"add-flow", "BR", "actions=learn(table=1,load:NXM_OF_IP_SRC[]->NXM_NX_REG0[])"},
		{"add-flow", "BR", "actions=learn(table=1,NXM_NX_REG0[0..15]=NXM_NX_REG1[])"},
		{"add-flow", "BR", "actions=learn(table=1,bogus=1)"},
		{"add-flow", "BR", "actions=learn(table=1,load:0x5->NXM_OF_ETH_TYPE[])"},
		{"add-flow", "BR", "ip,actions=learn(table=1,load:NXM_NX_REG0[]->NXM_OF_IP_DST[])"},
		{"add-flow", "BR", "ip,actions=learn(table=1,eth_type=0x800,load:NXM_NX_REG0[]->NXM_OF_IP_DST[])"},
		{"-O", "OpenFlow13", "dump-flows", "BR"},
		{"del-flows", "BR"},
		{"dump-flows", "BR"},
	} {
		t.Run(fmt.Sprintf("flows/%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}

	// govs' own ovs-ofctl shows the learn flows as Debian's does.
	ours := govsUtility(t, "ovs-ofctl")
	if out, rc := govs.ofctl("add-flows", govs.br, learns); rc != 0 {
		t.Fatalf("add-flows: %s", out)
	}
	for _, version := range []string{"OpenFlow10", "OpenFlow13", "OpenFlow15"} {
		want, wantRC := govs.ofctl("-O", version, "dump-flows", govs.br)
		got, gotRC := govs.runRC(ours, "-O", version, "dump-flows", govs.br)
		if g, w := govs.normalizeOfctl(got), govs.normalizeOfctl(want); gotRC != wantRC || g != w {
			t.Errorf("govs' ovs-ofctl -O %s dump-flows (exit %d):\n%s\nDebian's (exit %d):\n%s", version, gotRC, g, wantRC, w)
		}
	}

	// The learning switch: the same trace before any traffic (a flood),
	// and the same learned flows after pings both ways.
	for _, s := range []*ofSwitch{deb, govs} {
		s.replaceFlows(learnSwitch(300)...)
	}
	for _, pkt := range []string{"in_port=1,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02", "in_port=2,dl_vlan=7,dl_src=02:00:00:00:00:02,dl_dst=ff:ff:ff:ff:ff:ff"} {
		// FLOOD's order is the switch's own: compare the ports sorted.
		sorted := func(s string) string {
			p := strings.Split(s, ",")
			slices.Sort(p)
			return strings.Join(p, ",")
		}
		if want, got := sorted(deb.traceActions(pkt)), sorted(govs.traceActions(pkt)); got != want {
			t.Errorf("ofproto/trace %s: govs %q, Debian's %q", pkt, got, want)
		}
	}
	// The learn action as ofproto/trace shows it, and what it would learn.
	learnLines := func(s *ofSwitch) string {
		var out []string
		for _, l := range strings.Split(s.appctl("ofproto/trace", s.br, "in_port=1,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02"), "\n") {
			// (Not the megaflow: the internal ports' chatter may have
			// filled table 10 on one switch.)
			if strings.Contains(l, "learn") {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	if want, got := learnLines(deb), learnLines(govs); got != want || !strings.Contains(got, "learn(table=10,") {
		t.Errorf("ofproto/trace of learn: govs:\n%s\nDebian's:\n%s", got, want)
	}
	deb.a.waitPing("10.171.0.2")
	govs.a.waitPing("10.172.0.2")
	for _, version := range []string{"OpenFlow10", "OpenFlow15"} {
		want, got := learnedLines(deb, version), learnedLines(govs, version)
		if got != want || !strings.Contains(got, "dl_dst=MACA") || !strings.Contains(got, "dl_dst=MACB") {
			t.Errorf("learned flows, %s: govs:\n%s\nDebian's:\n%s", version, got, want)
		}
	}
	// A packet to a learned MAC goes to its port on both.
	for _, s := range []*ofSwitch{deb, govs} {
		a, b := "MACA", "MACB"
		for mac, n := range s.names {
			if n == "MACA" {
				a = mac
			} else if n == "MACB" {
				b = mac
			}
		}
		if got := s.traceActions("in_port=2,dl_src=" + b + ",dl_dst=" + a); got != "A" {
			t.Errorf("ofproto/trace B to A: %q, want A", got)
		}
	}
	for i, args := range [][]string{
		{"--strict", "del-flows", "BR", "table=0,priority=0"},
		{"dump-flows", "BR", "table=10"},
	} {
		t.Run(fmt.Sprintf("delete_learned/%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}
}

// TestOpenFlowLearnTraffic: govs' bridge runs the learning switch made of
// learn flows; namespaces ping and iperf3 runs; the learned flows are
// kept while traffic flows, expire when it stops, and go with the
// learning flow (delete_learned).
func TestOpenFlowLearnTraffic(t *testing.T) {
	s := startGovsSwitch(t)
	s.setUp("golnt", "10.173.0")
	quietNS(t, s.a, s.b)
	amac, bmac := nsMAC(s.a), nsMAC(s.b)
	const idle = 2
	s.replaceFlows(learnSwitch(idle)...)
	s.a.waitPing("10.173.0.2")
	learned := func() map[string]string {
		out, rc := s.ofctl("dump-flows", s.br, "table=10")
		if rc != 0 {
			t.Fatalf("dump-flows: %s", out)
		}
		m := map[string]string{}
		for _, l := range strings.Split(out, "\n") {
			for _, mac := range []string{amac, bmac} {
				if strings.Contains(l, "dl_dst="+mac) {
					m[mac] = l
				}
			}
		}
		return m
	}
	flows := learned()
	for mac, port := range map[string]string{amac: "0x1", bmac: "0x2"} {
		want := "cookie=0x5,"
		if l := flows[mac]; !strings.Contains(l, want) || !strings.Contains(l, "idle_timeout=2") ||
			!strings.Contains(l, "vlan_tci=0x0000/0x0fff,dl_dst="+mac+" actions=load:"+port+"->NXM_NX_REG0[0..15]") {
			t.Errorf("learned flow for %s: %q", mac, l)
		}
	}

	// iperf3 for twice the idle timeout: the learned flows live through
	// it (refreshed by the traffic), so their age exceeds the timeout.
	out := s.a.iperf(s.b, "10.173.0.2", "-t", strconv.Itoa(2*idle+1))
	t.Logf("iperf3 through learned flows: %s", vswIperfSummary(out))
	durRe := regexp.MustCompile(`duration=([0-9.]+)s`)
	for mac, l := range learned() {
		m := durRe.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("learned flow for %s gone after iperf3: %q", mac, l)
		}
		if d, _ := strconv.ParseFloat(m[1], 64); d <= idle {
			t.Errorf("learned flow for %s is %.1fs old after %ds of traffic: not refreshed", mac, d, 2*idle+1)
		}
	}
	if len(learned()) != 2 {
		t.Errorf("learned flows after iperf3: %v", learned())
	}

	// Traffic stops: they expire.
	vswWait(t, vswTimeout, "learned flows to expire", func() bool { return len(learned()) == 0 })

	// Learned again; deleting the learning flow deletes them at once.
	// A datapath flow that outlived the learned flows it was translated
	// through runs the learn action again when its statistics reach
	// the bridge (as OVS's revalidator does), not at once: ping on until
	// both are back.
	s.a.waitPing("10.173.0.2")
	vswWait(t, vswTimeout, "both flows learned again", func() bool {
		s.a.ping("10.173.0.2", 1)
		return len(learned()) == 2
	})
	if out, rc := s.ofctl("--strict", "del-flows", s.br, "table=0,priority=0"); rc != 0 {
		t.Fatalf("del-flows: %s", out)
	}
	if l := learned(); len(l) != 0 {
		t.Errorf("delete_learned left %v", l)
	}
	s.a.noPing("10.173.0.2")
}
