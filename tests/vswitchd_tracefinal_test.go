package tests

import (
	"fmt"
	"regexp"
	"testing"
)

// traceFinalFlows change the packet's fields, VLAN, registers, metadata
// and mark, or leave them alone.
var traceFinalFlows = []string{
	"priority=10,in_port=1,dl_src=00:00:00:00:00:01,actions=push_vlan:0x8100,set_field:4106->vlan_vid,output:2",
	"priority=10,in_port=1,dl_vlan=7,actions=strip_vlan,output:2",
	"priority=10,in_port=1,ip,nw_dst=10.0.0.2,actions=load:0x5->NXM_NX_REG0[],set_field:0xab->reg3,mod_nw_src:10.1.1.1,dec_ttl,output:2",
	"priority=10,in_port=1,tcp,nw_dst=10.0.0.3,actions=mod_dl_dst:00:00:00:00:00:99,mod_tp_dst:8080,resubmit(,1),write_metadata:0x5",
	"table=1,actions=set_field:0x7->pkt_mark,load:0x1->NXM_NX_REG1[4],output:2",
	"priority=10,in_port=1,udp,actions=clone(mod_nw_dst:10.9.9.9,output:2),output:2",
	"priority=5,in_port=1,actions=output:2",
}

// traceFinalCorpus are packets for traceFinalFlows: one per flow.
var traceFinalCorpus = []string{
	"in_port=1,dl_src=00:00:00:00:00:01,dl_dst=00:00:00:00:00:02",
	"in_port=1,dl_vlan=7,dl_vlan_pcp=3,dl_src=00:00:00:00:00:03,dl_dst=00:00:00:00:00:02",
	"in_port=1,ip,nw_src=10.0.0.1,nw_dst=10.0.0.2,nw_ttl=64",
	"in_port=1,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.3,tp_src=1234,tp_dst=80,nw_ttl=64",
	"in_port=1,udp,nw_src=10.0.0.1,nw_dst=10.0.0.4",
	"in_port=1,dl_src=00:00:00:00:00:05,dl_dst=00:00:00:00:00:02",
}

var traceFinalLine = regexp.MustCompile(`(?m)^Final flow: .*$`)

// TestOpenFlowTraceFinalFlow: ofproto/trace's "Final flow:" shows the
// flow as the first bridge's actions left it (or "unchanged") as
// Debian's ovs-vswitchd does. Only that line and the exit status are
// compared (TestOpenFlowTraceDifferential compares whole traces).
func TestOpenFlowTraceFinalFlow(t *testing.T) {
	deb, govs := startSwitchPair(t, "gtfd", "10.238.0", "gtfo", "10.239.0")
	for _, s := range []*ofSwitch{deb, govs} {
		s.replaceFlows(traceFinalFlows...)
	}
	for i, pkt := range traceFinalCorpus {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
			want, wantRC := deb.traceRC(pkt)
			got, gotRC := govs.traceRC(pkt)
			want, got = tunTraceNormalize(deb, want), tunTraceNormalize(govs, got)
			if w, g := traceFinalLine.FindString(want), traceFinalLine.FindString(got); w != g || w == "" || gotRC != wantRC {
				t.Errorf("ofproto/trace %s:\ngovs (exit %d):\n%s\nDebian's (exit %d):\n%s", pkt, gotRC, got, wantRC, want)
			}
		})
	}
}
