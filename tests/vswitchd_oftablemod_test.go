package tests

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestOpenFlowTableModDifferential: OFPT_TABLE_MOD (`ovs-ofctl
// mod-table`) and OFPMP_TABLE_DESC (`dump-table-desc`) against Debian's
// ovs-vswitchd: OpenFlow 1.4's eviction and vacancy settings as
// dump-table-desc reports them, the errors for the read-only table and
// bad settings, OpenFlow 1.1 and 1.2's miss behaviours as dump-tables
// reports them, and what they do to a packet that misses table 0:
// "continue" takes it to table 1, "drop" drops it, "controller" sends it
// to the controller (ofproto/trace's table lines and actions compared).
func TestOpenFlowTableModDifferential(t *testing.T) {
	deb, govs := startSwitchPair(t, "gtmd", "10.232.0", "gtmo", "10.233.0")
	o14, o15 := []string{"-O", "OpenFlow14"}, []string{"-O", "OpenFlow15"}
	steps := [][]string{
		append(o14, "dump-table-desc", "BR"),
		append(o14, "mod-table", "BR", "0", "evict"),
		append(o15, "dump-table-desc", "BR"),
		append(o14, "mod-table", "BR", "0", "noevict"),
		append(o14, "mod-table", "BR", "3", "vacancy:20,80"),
		append(o14, "dump-table-desc", "BR"),
		append(o14, "mod-table", "BR", "3", "vacancy:80,20"),
		append(o14, "mod-table", "BR", "3", "vacancy:20,101"),
		append(o14, "mod-table", "BR", "254", "evict"),
		append(o14, "mod-table", "BR", "all", "evict"),
		append(o14, "dump-table-desc", "BR"),
		append(o14, "mod-table", "BR", "all", "noevict"),
		append(o14, "mod-table", "BR", "3", "novacancy"),
		append(o15, "dump-table-desc", "BR"),
		{"-O", "OpenFlow13", "dump-table-desc", "BR"},
		{"-O", "OpenFlow11", "mod-table", "BR", "1", "drop"},
		{"-O", "OpenFlow11", "mod-table", "BR", "2", "continue"},
		{"-O", "OpenFlow11", "mod-table", "BR", "3", "controller"},
		{"-O", "OpenFlow11", "dump-tables", "BR"},
		{"-O", "OpenFlow12", "dump-tables", "BR"},
		{"-O", "OpenFlow12", "mod-table", "BR", "254", "continue"},
		{"-O", "OpenFlow12", "mod-table", "BR", "all", "controller"},
		{"-O", "OpenFlow12", "dump-tables", "BR"},
	}
	for i, args := range steps {
		t.Run(fmt.Sprintf("ofctl/%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}

	// A packet from port 2 that misses table 0; table 1 sends to port 1.
	for _, s := range []*ofSwitch{deb, govs} {
		for _, args := range [][]string{{"del-flows", s.br}, {"add-flow", s.br, "table=1,priority=1,actions=output:1"}} {
			if out, rc := s.ofctl(args...); rc != 0 {
				t.Fatalf("%v: %s", args, out)
			}
		}
	}
	pkt := "in_port=2,udp,nw_src=10.0.0.1,nw_dst=10.0.0.2,udp_src=1,udp_dst=2"
	tables := regexp.MustCompile(`(?m)^ *\d+\. .*$`)
	trace := func(s *ofSwitch) string {
		t.Helper()
		out := s.appctl("ofproto/trace", s.br, pkt)
		return strings.Join(tables.FindAllString(out, -1), "\n") + "\n" + s.traceActions(pkt)
	}
	for _, miss := range []string{"continue", "drop", "controller"} {
		for _, s := range []*ofSwitch{deb, govs} {
			if out, rc := s.ofctl("-O", "OpenFlow12", "mod-table", s.br, "0", miss); rc != 0 {
				t.Fatalf("mod-table 0 %s: %s", miss, out)
			}
		}
		got, want := trace(govs), trace(deb)
		if miss == "controller" {
			// The packet-in's userspace action names each switch's own
			// upcall: compare the table lines, and that both send one.
			got, want = got[:strings.LastIndex(got, "\n")], want[:strings.LastIndex(want, "\n")]
		}
		if got != want {
			t.Errorf("table 0 %s: ofproto/trace\ngovs:\n%s\nDebian's ovs-vswitchd:\n%s", miss, got, want)
		}
	}
}
