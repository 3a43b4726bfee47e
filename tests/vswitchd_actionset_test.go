package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenFlowActionSet: write_actions and clear_actions load, dump and
// are refused as on Debian's ovs-vswitchd, and the action set runs as
// there: written across goto_table and resubmit, cleared, reordered
// (pop, push, dec_ttl, set-fields, then group or else output), and run
// at the end of the walk, not after an exit. ofproto/trace shows the same
// datapath actions, and so does a group bucket, which OVS runs as an
// action set (one output, set-fields first).
func TestOpenFlowActionSet(t *testing.T) {
	deb, govs := startSwitchPair(t, "gwxd", "10.236.0", "gwxo", "10.237.0")
	for i, args := range [][]string{
		{"-O", "OpenFlow13", "add-group", "BR", "group_id=1,type=all,bucket=output:1,bucket=output:3"},
		{"-O", "OpenFlow13", "add-group", "BR", "group_id=2,type=all,bucket=output:2,mod_dl_src:00:00:00:00:00:03,output:3"},
	} {
		t.Run(fmt.Sprintf("group/%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}
	file := filepath.Join(t.TempDir(), "flows")
	if err := os.WriteFile(file, []byte(`table=0,priority=10,in_port=1,ip,actions=write_actions(output:2),goto_table:1
table=0,priority=11,in_port=2,actions=write_actions(output:3,group:1,mod_dl_dst:00:00:00:00:00:07)
table=0,priority=10,in_port=3,ip,actions=resubmit(,4),write_actions(output:1),goto_table:3
table=0,priority=0,actions=NORMAL
table=1,priority=10,ip,nw_src=10.0.0.1,actions=write_actions(mod_dl_src:00:00:00:00:00:09,output:3),goto_table:2
table=1,priority=5,ip,actions=clear_actions,write_actions(output:2,push_vlan:0x8100,mod_vlan_vid:5,dec_ttl,pop_vlan)
table=2,priority=10,udp,actions=output:2,write_actions(set_field:10.0.0.9->ip_dst)
table=2,priority=5,actions=clear_actions
table=3,actions=exit
table=4,ip,actions=write_actions(mod_nw_tos:16)
table=0,priority=12,in_port=3,arp,actions=write_actions(resubmit(,6),mod_dl_src:00:00:00:00:00:05)
table=6,actions=output:1
table=0,priority=13,in_port=1,arp,actions=group:2
`), 0o644); err != nil {
		t.Fatal(err)
	}
	// ovs-ofctl speaks only OpenFlow 1.0 unless told, where instructions
	// have no encoding.
	for i, args := range [][]string{
		{"-O", "OpenFlow13", "add-flows", "BR", file},
		{"dump-flows", "--no-stats", "--rsort", "BR"},
		{"-O", "OpenFlow13", "dump-flows", "--no-stats", "--rsort", "BR"},
		{"-O", "OpenFlow15", "dump-flows", "--no-stats", "--rsort", "BR"},
	} {
		t.Run(fmt.Sprintf("flows/%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}
	// Both switches refusing the flows would compare equal.
	if out, _ := govs.ofctl("-O", "OpenFlow13", "dump-flows", govs.br, "table=1"); !strings.Contains(out, "clear_actions,write_actions(") {
		add, _ := govs.ofctl("-O", "OpenFlow13", "add-flows", govs.br, file)
		t.Fatalf("the flows were not added:\n%s\n%s", out, add)
	}
	for _, pkt := range []string{"in_port=1,udp,nw_src=10.0.0.1", "in_port=1,tcp,nw_src=10.0.0.1",
		"in_port=1,tcp,nw_src=10.0.0.2,nw_ttl=64", "in_port=1,dl_vlan=7,tcp,nw_src=10.0.0.2,nw_ttl=64",
		"in_port=2,ip", "in_port=3,icmp", "in_port=3,arp", "in_port=1,arp"} {
		if want, got := deb.traceNested(pkt), govs.traceNested(pkt); got != want {
			t.Errorf("ofproto/trace %s: govs %q, Debian's %q", pkt, got, want)
		}
	}
	// The OVS error cases, after the traces: a flow OVS accepts with
	// empty actions would take every packet.
	for i, args := range [][]string{
		{"-O", "OpenFlow13", "add-flow", "BR", "table=1,actions=write_actions(output:1),goto_table:1"},
		{"-O", "OpenFlow13", "add-flow", "BR", "actions=write_actions(resubmit(,1))"},
		{"-O", "OpenFlow13", "add-flow", "BR", "ip,actions=write_actions(set_field:80->tcp_dst,output:1)"},
		{"-O", "OpenFlow13", "add-flow", "BR", "actions=write_actions(output:1),write_actions(output:2)"},
		{"-O", "OpenFlow10", "add-flow", "BR", "actions=write_actions(output:1)"},
		{"-O", "OpenFlow15", "add-flow", "BR", "table=5,actions=clear_actions,write_actions(output:CONTROLLER)"},
		{"-O", "OpenFlow15", "dump-flows", "--no-stats", "BR", "table=5"},
		{"-O", "OpenFlow15", "dump-flows", "--no-stats", "--rsort", "BR"},
	} {
		t.Run(fmt.Sprintf("errors/%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}

}
