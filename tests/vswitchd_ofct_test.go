package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// compareOfctl runs ovs-ofctl args ("BR" standing for the bridge) against
// Debian's switch and govs and requires the same normalised output and
// exit status.
func compareOfctl(t *testing.T, deb, govs *ofSwitch, args []string, norms ...func(string) string) {
	t.Helper()
	sub := func(s *ofSwitch) []string {
		out := slices.Clone(args)
		for i, a := range out {
			if a == "BR" {
				out[i] = s.br
			}
		}
		return out
	}
	want, wantRC := deb.ofctl(sub(deb)...)
	got, gotRC := govs.ofctl(sub(govs)...)
	g, w := sortGroupLines(govs.normalizeOfctl(got)), sortGroupLines(deb.normalizeOfctl(want))
	for _, n := range norms {
		g, w = n(g), n(w)
	}
	if gotRC != wantRC || g != w {
		t.Errorf("ovs-ofctl %v: exit %d, Debian's %d\ngovs:\n%s\nDebian's ovs-vswitchd:\n%s", args, gotRC, wantRC, g, w)
	}
}

// TestOpenFlowCtDifferential loads flows matching the conntrack fields,
// with ct_clear, into govs and into Debian's ovs-vswitchd with Debian's
// ovs-ofctl, and requires the same dump-flows output, the same errors for
// matches without their prerequisites, and the same ofproto/trace
// datapath actions.
func TestOpenFlowCtDifferential(t *testing.T) {
	deb := startDebianSwitch(t)
	deb.setUp("gctd", "10.186.0")
	govs := startGovsSwitch(t)
	govs.setUp("gcto", "10.187.0")

	flows := filepath.Join(t.TempDir(), "ct")
	if err := os.WriteFile(flows, []byte(`table=0,priority=100,ct_state=-trk,ip,actions=ct_clear,resubmit(,1)
table=0,priority=90,ct_state=+trk+est,ip,actions=output:2
table=0,priority=80,ct_state=+trk+new,ct_nw_proto=6,ct_tp_dst=80,ct_mark=1/1,ip,actions=output:3
table=0,priority=70,ct_state=-inv+trk,ipv6,ct_ipv6_src=2001:db8::1,ct_nw_proto=17,ct_tp_src=0x100/0xff00,actions=drop
table=0,priority=60,ct_state=+rpl+trk,ct_zone=5,ct_label=0x1/0x1,ct_nw_src=10.0.0.0/8,ct_nw_dst=10.1.2.3,ip,actions=drop
table=0,priority=50,ct_state=new|trk,actions=drop
table=0,priority=0,actions=NORMAL
table=1,priority=2,ct_state=-trk,actions=output:3
table=1,priority=1,actions=output:2
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, args := range [][]string{
		{"add-flows", "BR", flows},
		{"dump-flows", "--no-stats", "BR"},
		{"-O", "OpenFlow13", "dump-flows", "--no-stats", "BR"},
		{"-O", "OpenFlow15", "dump-flows", "--no-stats", "BR"},
		{"add-flow", "BR", "ct_nw_proto=6,actions=drop"},
		{"add-flow", "BR", "ct_state=+trk,ct_nw_proto=6,actions=drop"},
		{"add-flow", "BR", "ct_state=+est,ipv6,ct_nw_src=1.2.3.4,actions=drop"},
		{"-O", "OpenFlow13", "add-flow", "BR", "ct_state=+est,ip,ct_ipv6_dst=::1,actions=drop"},
		{"del-flows", "BR", "ct_state=+trk+est,ip"},
		{"dump-flows", "--no-stats", "BR", "table=0"},
	} {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}
	// An untracked packet: ct_clear needs no datapath action, the second
	// lookup sees -trk.
	for _, pkt := range []string{"in_port=1,tcp,nw_src=10.0.0.1,tp_dst=80", "in_port=2,udp,nw_src=10.0.0.2"} {
		want, got := deb.traceActions(pkt), govs.traceActions(pkt)
		if got != want {
			t.Errorf("ofproto/trace %s: govs %q, Debian's %q", pkt, got, want)
		}
	}
}
