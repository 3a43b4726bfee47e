package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ofctlActionFlows use every action govs' switch takes, the Nicira ones
// with their own syntax (learn, multipath, bundle, bundle_load,
// check_pkt_larger, fin_timeout, dec_ttl with ids, controller with
// userdata) among the others. Debian's ovs-ofctl loads them (OpenFlow
// 1.0 with NXM).
// The first flow drops every packet: the bridge's own port sends IPv6
// neighbour and multicast traffic once up, which would otherwise run the
// learn actions below and change the tables between the two tools' dumps.
const ofctlActionFlows = `priority=1000,actions=drop
priority=100,actions=learn(table=1,idle_timeout=10,hard_timeout=20,fin_idle_timeout=5,fin_hard_timeout=6,priority=5,cookie=0x7,send_flow_rem,delete_learned,NXM_OF_VLAN_TCI[0..11],NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],load:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15],output:NXM_NX_REG0[0..15])
priority=99,ip,actions=learn(table=2,limit=10,result_dst=reg3[5],eth_type=0x800,ip_dst=ip_src,nw_proto=6,tcp_dst=80,load:0xabcdef->xxreg0[3..50],load:ip_src[0..7]->reg4[8..15],eth_src=00:11:22:33:44:55,nw_src=10.0.0.1,in_port=99)
priority=98,tcp,actions=learn(table=3,NXM_NX_REG0[0..3]=5,eth_type=0x800,ip_proto=6,ip_dst=10.1.2.3,tcp_src=tcp_dst),fin_timeout(idle_timeout=5,hard_timeout=10)
priority=97,actions=multipath(eth_src,50,modulo_n,1,0,NXM_NX_REG0[0..15])
priority=96,actions=multipath(symmetric_l3l4+udp,1024,iter_hash,5000,5000,reg1[0..12]),multipath(symmetric_l3,7,hrw,2,0,reg2[0..1]),multipath(nw_dst,1,hash_threshold,16,0,reg3[])
priority=95,actions=bundle(eth_src,0,hrw,ofport,members:4,8)
priority=94,actions=bundle(symmetric_l4,60,active_backup,ofport,slaves:1,2,3)
priority=93,actions=bundle_load(nw_src,0,hrw,ofport,NXM_NX_REG0[],members:4,8),bundle_load(symmetric_l3l4,5,active_backup,ofport,reg1[0..15],members:2,LOCAL)
priority=92,ip,actions=check_pkt_larger(1500)->NXM_NX_REG0[0],check_pkt_larger(64)->xxreg1[100],resubmit(,1)
priority=91,tcp,actions=fin_timeout(idle_timeout=5),fin_timeout(hard_timeout=7)
priority=90,ip,actions=dec_ttl,dec_ttl(1,2,3),output:1
priority=89,actions=controller(userdata=01.02.03,pause),controller(reason=invalid_ttl,max_len=100),CONTROLLER:200
priority=88,actions=output_reg:NXM_NX_REG1[0..15],output:reg2[]
priority=87,ip,actions=ct(commit,zone=5,exec(set_field:0x1->ct_mark)),ct_clear,ct(table=2,zone=NXM_NX_REG0[0..15],nat)
priority=86,ipv6,actions=ct(commit,nat(dst=[fe80::1]-[fe80::5]:80))
priority=85,dl_vlan=5,actions=mod_vlan_vid:7,mod_vlan_pcp:2,strip_vlan,output:1
priority=84,ip,actions=mod_dl_src:00:11:22:33:44:55,mod_nw_src:10.0.0.1,mod_nw_tos:16,set_field:0x5->reg0,load:0x5->NXM_NX_REG1[3..7],move:NXM_OF_IP_SRC[]->NXM_NX_REG2[]
priority=83,actions=push:NXM_NX_REG0[],pop:NXM_NX_REG1[0..15],note:01.02.03,clone(output:1,pop_vlan),exit
priority=82,actions=resubmit:1,resubmit(,3),resubmit(2,4),group:1,IN_PORT,NORMAL,FLOOD,ALL,LOCAL
priority=81,tcp,actions=conjunction(5,1/2)
priority=80,conj_id=5,tcp,actions=drop
priority=79,ip,actions=learn(table=4,hard_timeout=30,NXM_OF_ETH_SRC[]=NXM_OF_ETH_DST[],output:NXM_OF_IN_PORT[]),learn(table=5,delete_learned,cookie=0x99,in_port=1,load:1->reg5[0])
priority=78,ip,actions=ct(commit,nat(src=10.0.0.1-10.0.0.9:100-200,persistent,random))
priority=77,ip,actions=set_field:0x10/0x30->pkt_mark,goto_table:2
`

// ofctlActionErrors are action texts both ovs-ofctls refuse, with the
// same words and exit status.
var ofctlActionErrors = []string{
	"actions=learn(table=255)",
	"actions=learn(foo=1)",
	"actions=learn(NXM_OF_ETH_DST[]=NXM_OF_IP_SRC[])",
	"actions=learn(NXM_NX_REG0[0..3]=99)",
	"actions=learn(load:5x->NXM_NX_REG0[])",
	"actions=learn(load:0x100->NXM_NX_REG0[0..7])",
	"actions=learn(result_dst=reg0[0..1])",
	"actions=learn(NXM_NX_REG0[40])",
	"actions=learn(ip_src=ip_dst)",
	"actions=learn(load:NXM_NX_REG0[]->NXM_OF_IP_SRC[])",
	"actions=multipath(eth_src,50,modulo_n,1,0)",
	"actions=multipath(foo,50,modulo_n,1,0,NXM_NX_REG0[])",
	"actions=multipath(eth_src,50,modulo_n,70000,0,NXM_NX_REG0[])",
	"actions=multipath(eth_src,50,modulo_n,5,0,NXM_NX_REG0[0..1])",
	"actions=multipath(eth_src,50,modulo_n,5,0,NXM_OF_IP_SRC[])",
	"actions=bundle(eth_src,0,hrw,ofport)",
	"actions=bundle(eth_src,0,hrw,ofport,foo:1)",
	"actions=bundle(foo,0,hrw,ofport,members:1)",
	"actions=bundle(eth_src,0,hrw,ofport,members:1,foo)",
	"actions=bundle(eth_src,0,hrw,ofport,members:controller)",
	"actions=bundle_load(eth_src,0,hrw,ofport,NXM_OF_IP_SRC[],members:1)",
	"actions=check_pkt_larger(1500)->NXM_NX_REG0[0..1]",
	"actions=check_pkt_larger(70000)->NXM_NX_REG0[0]",
	"actions=fin_timeout(foo=1)",
	"actions=dec_ttl(x)",
	"actions=controller(userdata=zz)",
	"actions=output_reg:foo",
	"actions=move:NXM_NX_REG0[]->NXM_NX_REG1[0..3]",
}

// TestUtilitiesOfctlActions loads flows with every action into a govs
// bridge with Debian's ovs-ofctl and requires govs' ovs-ofctl to dump
// them as Debian's does (OpenFlow 1.0, 1.3 and 1.5, with and without stats);
// then adds each line Debian's printed with govs' tool into an empty
// table and requires Debian's dump to be the same again; then compares
// both tools' refusals of bad action texts.
func TestUtilitiesOfctlActions(t *testing.T) {
	start := time.Now()
	s := startGovsSwitch(t)
	s.br = "goact0"
	s.names = map[string]string{s.br: "BR"}
	s.vsctl("add-br", s.br, "--", "set", "bridge", s.br, "datapath_type=netdev")
	vswWait(t, vswTimeout, s.br+" to answer OpenFlow", func() bool {
		_, rc := s.ofctl("show", s.br)
		return rc == 0
	})
	ours := govsUtility(t, "ovs-ofctl")
	flows := filepath.Join(t.TempDir(), "flows.txt")
	if err := os.WriteFile(flows, []byte(ofctlActionFlows), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, rc := s.ofctl("-O", "OpenFlow13", "add-group", s.br, "group_id=1,type=all,bucket=output:1"); rc != 0 {
		t.Fatalf("Debian's ovs-ofctl add-group: %s", out)
	}
	if out, rc := s.ofctl("add-flows", s.br, flows); rc != 0 {
		t.Fatalf("Debian's ovs-ofctl add-flows: %s", out)
	}
	compare := func(args ...string) string {
		t.Helper()
		want, wantRC := s.ofctl(args...)
		got, gotRC := s.runRC(ours, args...)
		if g, w := s.normalizeOfctl(got), s.normalizeOfctl(want); gotRC != wantRC || g != w {
			t.Errorf("ovs-ofctl %s:\ngovs' (exit %d):\n%s\nDebian's (exit %d):\n%s", strings.Join(args, " "), gotRC, g, wantRC, w)
		}
		return want
	}
	printed := compare("--no-stats", "--sort", "dump-flows", s.br)
	compare("-O", "OpenFlow13", "dump-flows", s.br)
	compare("-O", "OpenFlow15", "--names", "--rsort", "dump-flows", s.br)
	// The bridge's own NORMAL flow (no controller) is one more.
	if n := strings.Count(printed, "\n"); n != strings.Count(ofctlActionFlows, "\n")+1 {
		t.Fatalf("Debian's ovs-ofctl shows %d flows of %d:\n%s", n, strings.Count(ofctlActionFlows, "\n"), printed)
	}

	// Every line Debian's printed, added with govs' tool one by one,
	// gives the same table.
	if out, rc := s.ofctl("del-flows", s.br); rc != 0 {
		t.Fatal(out)
	}
	for _, line := range strings.Split(strings.TrimSpace(printed), "\n") {
		if out, rc := s.runRC(ours, "add-flow", s.br, strings.TrimSpace(line)); rc != 0 {
			t.Errorf("govs' ovs-ofctl add-flow %s: exit %d: %s", line, rc, out)
		}
	}
	if again, _ := s.ofctl("--no-stats", "--sort", "dump-flows", s.br); again != printed {
		t.Errorf("after govs' add-flow of each line, Debian's dump-flows:\n%s\nwant:\n%s", again, printed)
	}

	for _, bad := range ofctlActionErrors {
		compare("add-flow", s.br, bad)
	}
	t.Logf("%d flows, %d refusals in %v", strings.Count(printed, "\n"), len(ofctlActionErrors), time.Since(start).Round(time.Millisecond))
}
