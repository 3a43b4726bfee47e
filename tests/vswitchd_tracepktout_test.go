package tests

import (
	"fmt"
	"slices"
	"testing"
)

// TestOpenFlowTracePacketOutDifferential: ofproto/trace-packet-out
// traces a packet-out's actions (OVS's action syntax, parsed by the
// parser govs' ovs-ofctl uses) as Debian's ovs-vswitchd does: the same
// report, the same refusals of bad arguments, actions and flows, with
// the same exit statuses (issue 12).
func TestOpenFlowTracePacketOutDifferential(t *testing.T) {
	deb, govs := startSwitchPair(t, "gkod", "10.252.0", "gkoo", "10.253.0")
	for _, s := range []*ofSwitch{deb, govs} {
		if out, rc := s.ofctl("-O", "OpenFlow13", "add-group", s.br, "group_id=1,type=all,bucket=output:3,bucket=resubmit(,1),output:1"); rc != 0 {
			t.Fatalf("add-group: %s", out)
		}
		s.replaceFlows(
			"priority=10,in_port=1,ip,actions=output:2",
			"priority=5,actions=drop",
			"table=1,priority=10,ip,actions=set_field:0x5->reg1,output:2",
			"table=1,priority=5,actions=output:3",
			"table=2,priority=10,ct_state=+trk+new,ip,actions=ct(commit,zone=5),output:1",
			// A group and an action set in one rule.
			"table=3,priority=10,actions=group:1,write_actions(output:2)",
		)
	}
	const ipFlow = "in_port=1,ip,nw_src=10.0.0.1,nw_dst=10.0.0.2"
	const udpFlow = "in_port=1,udp,nw_src=10.0.0.1,nw_dst=10.0.0.2,udp_dst=53"
	const ethFlow = "in_port=1,dl_src=00:00:00:00:00:01,dl_dst=00:00:00:00:00:02"
	for i, args := range [][]string{
		{"BR", ipFlow, "output:2"},
		{"BR", ipFlow, "2,3"},
		{"BR", ipFlow, "drop"},
		{"BR", ipFlow, ""},
		{"BR", ethFlow, ""},
		{"BR", ipFlow, "resubmit(,1),output:3"},
		{"BR", ethFlow, "resubmit(,1)"},
		{"BR", ipFlow, "set_field:0x7->reg0,mod_nw_dst:10.9.9.9,output:2"},
		{"BR", ipFlow, "group:1"},
		{"BR", ipFlow, "resubmit(,3)"},
		{"BR", ipFlow, "clone(goto_table:1)"},
		{"BR", ipFlow, "clone(mod_dl_dst:00:00:00:00:00:09,output:2),output:3"},
		{"BR", ipFlow, "normal"},
		{"BR", ipFlow, "controller"},
		{"BR", ipFlow, "in_port"},
		{"BR", ipFlow, "output:in_port"},
		{"BR", ipFlow, "dec_ttl,output:2"},
		{"BR", ipFlow, "push_vlan:0x8100,set_field:4101->vlan_vid,output:2"},
		{"BR", ipFlow, "mod_vlan_vid:7,output:2"},
		{"BR", "in_port=1,dl_vlan=5", "pop_vlan,output:2"},
		{"BR", "in_port=1,tcp,tcp_dst=80", "mod_tp_dst:8080,output:2"},
		{"-consistent", "BR", "in_port=1,udp", "fin_timeout(idle_timeout=5),output:2"},
		{"BR", ipFlow, "-consistent", "strip_vlan,output:2"},
		{"BR", ipFlow, "group:99"},
		{"BR", ipFlow, "output:TABLE"},
		{"BR", ipFlow, "learn(table=3,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[]),output:2"},
		{"BR", ipFlow, "move:NXM_OF_IP_SRC[]->NXM_NX_REG0[],output:NXM_NX_REG2[0..15]"},
		{"BR", udpFlow, "ct(commit,zone=5),output:2"},
		{"BR", udpFlow, "ct(table=2,zone=5)"},
		{"BR", udpFlow, "ct(table=2,zone=5)", "--ct-next", "trk,est"},
		// An IP action on a non-IP flow: traced, not applied; refused
		// with -consistent.
		{"BR", ethFlow, "mod_nw_tos:16,output:2"},
		{"-consistent", "BR", ethFlow, "mod_nw_tos:16,output:2"},
		{"BR", ethFlow, "-consistent", "set_field:10.0.0.9->ip_src,output:2"},
		{"BR", ethFlow, "set_field:10.0.0.9->ip_src,output:2"},
		{"BR", ethFlow, "load:0x1->NXM_OF_IP_SRC[],output:2"},
		{"BR", "--names", ipFlow, "output:2"},
		{"BR", ipFlow, "--names", "resubmit(,1)"},
		{"BR", "--names", ipFlow, "group:1"},
		{"BR", "--names", ipFlow, "resubmit(,3)"},
		{"BR", "--names", udpFlow, "ct(commit,zone=5),mod_nw_dst:10.9.9.9,output:2"},
		{"BR", "--names", ipFlow + ",nw_ttl=64", "clone(mod_dl_dst:00:00:00:00:00:09,output:2),dec_ttl,output:3"},
		{"BR", "--names", "in_port=1,dl_vlan=5", "pop_vlan,output:2"},
		{"BR", "--names", ipFlow, "push_vlan:0x8100,set_field:4101->vlan_vid,output:2"},
		{"BR", "--names", ipFlow, "drop"},
		// Refused: instructions, bad actions, flows, ports, arguments.
		{"BR", ipFlow, "goto_table:1"},
		{"BR", ipFlow, "write_actions(output:2)"},
		{"BR", ipFlow, "meter:1,output:2"},
		{"BR", ipFlow, "frobnicate"},
		{"BR", ipFlow, "output:2,drop"},
		{"BR", ipFlow, "output:99999"},
		{"BR", ipFlow, "resubmit(,300)"},
		{"BR", "in_port=1,tp_dst=80", "output:2"},
		{"BR", "in_port=9", "output:2"},
		{"BR", "in_port=LOCAL,ip", "output:2"},
		{"nosuchbr", ipFlow, "output:2"},
		{"BR", ipFlow},
		{"BR"},
		{"BR", ipFlow, "a", "b", "output:2"},
		{"BR", ipFlow, "--frobnicate", "output:2"},
		{"BR", ipFlow, "--ct-next"},
	} {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
			run := func(s *ofSwitch) (string, int) {
				a := slices.Clone(args)
				if j := slices.Index(a, "BR"); j >= 0 {
					a[j] = s.br
				}
				out, rc := s.runRC(vswAppctl, append([]string{"--timeout=10", "-t", traceTarget(s), "ofproto/trace-packet-out"}, a...)...)
				if slices.Contains(a, "--names") {
					// Datapath ports by name: the actions compare too.
					out = s.normalizeOfctl(out)
				} else {
					out = tunTraceNormalize(s, out)
				}
				return traceRecircID.ReplaceAllString(out, "${1}0xN"), rc
			}
			want, wantRC := run(deb)
			got, gotRC := run(govs)
			if got != want || gotRC != wantRC {
				t.Errorf("ofproto/trace-packet-out %q:\ngovs (exit %d):\n%s\nDebian's (exit %d):\n%s", args, gotRC, got, wantRC, want)
			}
		})
	}
}
