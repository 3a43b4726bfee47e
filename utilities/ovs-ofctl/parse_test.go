package main

import (
	"testing"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// TestParseFormat parses flows and formats them back as OVS's ovs-ofctl
// shows them after the switch (the outputs are Debian's ovs-ofctl
// dump-flows --no-stats of the same flows).
func TestParseFormat(t *testing.T) {
	for _, tc := range []struct {
		v        ofp.Version
		in, want string
	}{
		{ofp.V10, "actions=drop", "actions=drop"},
		{ofp.V10, "priority=5,ip,nw_src=10.0.0.0/8,actions=output:2", "priority=5,ip,nw_src=10.0.0.0/8 actions=output:2"},
		{ofp.V10, "in_port=1,actions=mod_dl_src:00:11:22:33:44:55,2", "in_port=1 actions=mod_dl_src:00:11:22:33:44:55,output:2"},
		{ofp.V13, "in_port=1,actions=set_field:00:11:22:33:44:55->eth_src,2", "in_port=1 actions=set_field:00:11:22:33:44:55->eth_src,output:2"},
		{ofp.V10, "tcp,tp_dst=80,actions=NORMAL", "tcp,tp_dst=80 actions=NORMAL"},
		{ofp.V10, "reg0=1,actions=resubmit(,2)", "reg0=0x1 actions=resubmit(,2)"},
		{ofp.V13, "priority=9,udp6,ipv6_dst=fe80::1/64,actions=load:0x5->NXM_NX_REG1[0..7],goto_table:4",
			"priority=9,udp6,ipv6_dst=fe80::/64 actions=load:0x5->NXM_NX_REG1[0..7],goto_table:4"},
		{ofp.V10, "arp,arp_tpa=1.2.3.4,actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],IN_PORT",
			"arp,arp_tpa=1.2.3.4 actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],IN_PORT"},
		{ofp.V10, "icmp,icmp_type=8,actions=local", "icmp,icmp_type=8 actions=LOCAL"},
		{ofp.V10, "ct_state=+trk+est,ip,actions=ct(commit,zone=5,exec(set_field:1->ct_mark))",
			"ct_state=+est+trk,ip actions=ct(commit,zone=5,exec(set_field:0x1->ct_mark))"},
		{ofp.V10, "dl_vlan=5,dl_vlan_pcp=3,actions=mod_vlan_vid:7,strip_vlan", "dl_vlan=5,dl_vlan_pcp=3 actions=mod_vlan_vid:7,strip_vlan"},
		{ofp.V10, "tcp,tcp_flags=+syn-ack,actions=drop", "tcp,tcp_flags=+syn-ack actions=drop"},
		{ofp.V10, "metadata=0x5/0xff,actions=note:01.02.03,exit", "metadata=0x5/0xff actions=note:01.02.03,exit"},
		{ofp.V10, "dl_src=00:11:22:33:44:55/ff:ff:ff:00:00:00,actions=controller(reason=no_match,max_len=128,id=3)",
			"dl_src=00:11:22:00:00:00/ff:ff:ff:00:00:00 actions=controller(reason=no_match,max_len=128,id=3)"},
		{ofp.V10, "priority=7,actions=controller", "priority=7 actions=CONTROLLER:65535"},
		{ofp.V10, "ip,actions=ct(commit,nat(src=10.0.0.1-10.0.0.9:100-200,persistent,random))",
			"ip actions=ct(commit,nat(src=10.0.0.1-10.0.0.9:100-200,persistent,random))"},
		{ofp.V10, "ipv6,actions=ct(commit,nat(src=[fe80::1]-[fe80::5]:80))", "ipv6 actions=ct(commit,nat(src=[fe80::1]-[fe80::5]:80))"},
		{ofp.V10, "ip,actions=learn(table=2,limit=10,result_dst=reg3[5],eth_type=0x800,ip_dst=ip_src,nw_proto=6,load:0xabcdef->xxreg0[3..50],nw_src=10.0.0.1,in_port=99)",
			"ip actions=learn(table=2,limit=10,result_dst=NXM_NX_REG3[5],eth_type=0x800,NXM_OF_IP_DST[]=NXM_OF_IP_SRC[],nw_proto=6,load:0xabcdef->NXM_NX_XXREG0[3..50],ip_src=10.0.0.1,in_port=99)"},
		{ofp.V10, "tcp,actions=learn(NXM_NX_REG0[0..3]=5,output:NXM_NX_REG0[0..15]),fin_timeout(idle_timeout=5)",
			"tcp actions=learn(table=1,NXM_NX_REG0[0..3]=0x5,output:NXM_NX_REG0[0..15]),fin_timeout(idle_timeout=5)"},
		{ofp.V10, "actions=multipath(symmetric_l3l4+udp,1024,iter_hash,5000,5000,reg1[0..12])",
			"actions=multipath(symmetric_l3l4+udp,1024,iter_hash,5000,5000,NXM_NX_REG1[0..12])"},
		{ofp.V10, "actions=bundle(symmetric_l4,60,active_backup,ofport,slaves:1,2,3)", "actions=bundle(symmetric_l4,60,active_backup,ofport,members:1,2,3)"},
		{ofp.V10, "actions=bundle_load(eth_src,0,hrw,ofport,NXM_NX_REG0[],members:4,8)", "actions=bundle_load(eth_src,0,hrw,ofport,NXM_NX_REG0[],members:4,8)"},
		{ofp.V10, "ip,actions=check_pkt_larger(1500)->NXM_NX_REG0[0],resubmit(,1)", "ip actions=check_pkt_larger(1500)->NXM_NX_REG0[0],resubmit(,1)"},
		{ofp.V10, "ip,actions=dec_ttl(1,2,3),controller(userdata=01.02.03,pause,meter_id=3),output_reg:NXM_NX_REG1[0..15]",
			"ip actions=dec_ttl(1,2,3),controller(userdata=01.02.03,pause,meter_id=3),output:NXM_NX_REG1[0..15]"},
		{ofp.V10, "actions=resubmit:1,resubmit(2,),resubmit(,3)", "actions=resubmit:1,resubmit:2,resubmit(,3)"},
		{ofp.V10, "ip4,actions=drop", "ip actions=drop"},
		{ofp.V10, "ipv4,nw_src=1.2.3.4,actions=drop", "ip,nw_src=1.2.3.4 actions=drop"},
		{ofp.V10, "ip6,ipv6_src=::1,actions=drop", "ipv6,ipv6_src=::1 actions=drop"},
		{ofp.V10, "ip,nw_proto=2,actions=drop", "ip,nw_proto=2 actions=drop"},
	} {
		fs, err := parseFlow(tc.in, parseAdd, nil)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		st := ofp.FlowStats{Match: fs.match, Priority: fs.priority, Actions: fs.actions}
		if got := formatFlowStats(&st, tc.v, false, nil); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

// TestParseErrors checks OVS's texts for bad flows.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		in   string
		cmd  int
		want string
	}{
		{"xyz=1,actions=drop", parseAdd, "unknown keyword xyz"},
		{"ip,actions=foo", parseAdd, "unknown action foo"},
		{"ip", parseAdd, "must specify an action"},
		{"xyz", parseDelete, "field xyz missing value"},
		{"igmp,actions=drop", parseAdd, "field igmp missing value"},
		{"priority=5", parseDump, "unknown keyword priority"},
		{"in_port=1,actions=output:2,drop", parseAdd, "\"drop\" must not be accompanied by any other action or instruction"},
		{"cookie=1/1,actions=drop", parseAdd, "flow additions cannot use a cookie mask"},
		{"tcp,tp_dst=abc,actions=drop", parseAdd, "abc: bad syntax for tcp_dst value"},
		{"tcp,tp_dst=1/abc,actions=drop", parseAdd, "1/abc: bad syntax for tcp_dst mask"},
		{"tcp,tp_dst=70000,actions=drop", parseAdd, "70000: value too large for 2-byte field tcp_dst"},
		{"reg0=0x100000000,actions=drop", parseAdd, "0x100000000: value too large for 4-byte field reg0"},
		{"dl_src=zz,actions=drop", parseAdd, "zz: invalid Ethernet address"},
		{"nw_src=1.2.3,actions=drop", parseAdd, "1.2.3: invalid IP address"},
	} {
		_, err := parseFlow(tc.in, tc.cmd, nil)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: got %v, want %q", tc.in, err, tc.want)
		}
	}
}

// FuzzParseFlow: any text either parses into a flow whose flow mod the
// switch's decoder takes back (and that formats), or is refused with an
// error; nothing panics.
func FuzzParseFlow(f *testing.F) {
	for _, s := range []string{"actions=drop", "priority=5,ip,nw_src=10.0.0.0/8,actions=output:2",
		"table=3,udp6,ipv6_dst=fe80::1/64,actions=load:0x5->NXM_NX_REG1[0..7],goto_table:4",
		"ct_state=+trk+est,ip,actions=ct(commit,zone=NXM_NX_REG0[0..15],exec(set_field:1->ct_mark))",
		"dl_vlan=5,actions=mod_vlan_vid:7,mod_vlan_pcp:2,output:1", "tcp,tcp_flags=+syn-ack,actions=clone(drop)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, cmd := range []int{parseAdd, parseModifyStrict, parseDelete, parseDump} {
			fs, err := parseFlow(s, cmd, nil)
			if err != nil || cmd == parseDump {
				continue
			}
			for _, v := range []ofp.Version{ofp.V10, ofp.V13, ofp.V15} {
				fm, err := fs.flowMod(cmd, v)
				if err != nil {
					continue
				}
				b := ofp.EncodeFlowMod(v, 1, fm)
				// The switch may refuse what OVS's ovs-ofctl sends as
				// well (a value beyond a field's bits), with an
				// OpenFlow error, never otherwise.
				if _, err := ofp.Decode(b); err != nil {
					if _, ok := err.(*ofp.Error); !ok {
						t.Fatalf("%q in %s: decode: %v", s, v, err)
					}
				}
				formatFlowMod(fm, v)
				st := ofp.FlowStats{Match: fm.Match, Priority: fm.Priority, Actions: fm.Actions}
				formatFlowStats(&st, v, true, nil)
			}
		}
	})
}

// FuzzParseGroup: any text either parses into a group mod the switch's
// decoder takes back (or refuses with an OpenFlow error) and that
// formats, or is refused with an error; nothing panics.
func FuzzParseGroup(f *testing.F) {
	for _, s := range []string{"group_id=2,type=select,bucket=output:1,bucket=weight:5,output:2",
		"group_id=3,type=fast_failover,bucket=watch_port:1,actions=output:1",
		"group_id=6,type=select,selection_method=hash,bucket=bucket_id:7,weight:3,actions=output:1", "group_id=all"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, cmd := range []uint16{ofp.GroupAdd, ofp.GroupModify, ofp.GroupDelete} {
			gm, err := parseGroup(s, cmd, nil)
			if err != nil {
				continue
			}
			for _, v := range []ofp.Version{ofp.V11, ofp.V13, ofp.V15} {
				if _, err := ofp.Decode(ofp.EncodeGroupMod(v, 1, gm)); err != nil {
					if _, ok := err.(*ofp.Error); !ok {
						t.Fatalf("%q in %s: decode: %v", s, v, err)
					}
				}
				formatGroup(&ofp.GroupDesc{Type: gm.Type, ID: gm.ID, Buckets: gm.Buckets, Props: gm.Props}, v, nil)
			}
		}
	})
}

// FuzzParseMeter: any text either parses into a meter mod the switch's
// decoder takes back (or refuses with an OpenFlow error) and that
// formats, or is refused with an error; nothing panics.
func FuzzParseMeter(f *testing.F) {
	for _, s := range []string{"meter=1,kbps,burst,stats,bands=type=drop,rate=100,burst_size=10",
		"meter=2,pktps,band=type=dscp_remark,rate=5,prec_level=1", "meter=all"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, cmd := range []uint16{ofp.MeterAdd, ofp.MeterDelete} {
			mm, err := parseMeter(s, cmd)
			if err != nil {
				continue
			}
			if _, err := ofp.Decode(ofp.EncodeMeterMod(ofp.V13, 1, mm)); err != nil {
				if _, ok := err.(*ofp.Error); !ok {
					t.Fatalf("%q: decode: %v", s, err)
				}
			}
			formatMeter(mm.ID, mm.Flags, mm.Bands)
		}
	})
}
