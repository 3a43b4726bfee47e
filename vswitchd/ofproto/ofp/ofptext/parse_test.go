package ofptext

import (
	"testing"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// format prints a parsed flow as ovs-ofctl dump-flows --no-stats does
// (ofputil_flow_stats_format without the statistics).
func format(fs *Flow, v ofp.Version) string {
	s := "actions=" + ofp.FormatActions(fs.Actions, v, nil)
	if m := ofp.FormatMatch(&fs.Match, int(fs.Priority), nil); m != "" {
		s = m + " " + s
	}
	return s
}

// versionCase is a text in, and what comes out of it in version v.
type versionCase struct {
	v        ofp.Version
	in, want string
}

// TestParseFormat parses flows and formats them back with the codec's
// printer as OVS's ovs-ofctl shows them after the switch (the outputs are Debian's ovs-ofctl
// dump-flows --no-stats of the same flows).
func TestParseFormat(t *testing.T) {
	for _, tc := range []versionCase{
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
		// nat in exec is the ct's nat (Debian prints it so); a pop into
		// ct_mark is no CT write outside ct (OVS's ofpact_get_mf_dst).
		{ofp.V15, "ip,actions=ct(commit,exec(nat))", "ip actions=ct(commit,nat)"},
		{ofp.V15, "actions=pop:NXM_NX_CT_MARK[]", "actions=pop:NXM_NX_CT_MARK[]"},
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
		// OVS's parse_SET_QUEUE (str_to_u32: strtoul, truncated),
		// parse_POP_QUEUE (its argument ignored), parse_ENQUEUE.
		{ofp.V10, "actions=set_queue:5,output:2,pop_queue", "actions=set_queue:5,output:2,pop_queue"},
		{ofp.V10, "actions=set_queue:-1,set_queue:0x100000001,set_queue:010,pop_queue:5", "actions=set_queue:4294967295,set_queue:1,set_queue:8,pop_queue"},
		{ofp.V10, "actions=enqueue:2:7,enqueue(IN_PORT,1),enqueue:LOCAL:3,enqueue:1q2", "actions=enqueue:2:7,enqueue:IN_PORT:1,enqueue:LOCAL:3,enqueue:1:2"},
		{ofp.V10, "actions=write_actions(set_queue:9,output:2)", "actions=write_actions(set_queue:9,output:2)"},
		// OpenFlow 1.0's reserved port numbers, as OVS's 16-bit ports.
		{ofp.V10, "in_port=65280,actions=output:010,output:+5,output:65534,resubmit:4294967041",
			"in_port=65280 actions=output:10,output:5,LOCAL,resubmit:65281"},
	} {
		checkVersionCase(t, tc, func(fs *Flow) (string, error) { return format(fs, tc.v), nil })
	}
}

// checkVersionCase parses tc.in as a flow to add and compares what out
// makes of it with tc.want.
func checkVersionCase(t *testing.T, tc versionCase, out func(fs *Flow) (string, error)) {
	t.Helper()
	fs, err := ParseFlow(tc.in, ParseAdd, nil)
	if err != nil {
		t.Errorf("%s: %v", tc.in, err)
		return
	}
	got, err := out(fs)
	if err != nil {
		t.Errorf("%s in %s: %v", tc.in, tc.v, err)
	} else if got != tc.want {
		t.Errorf("%s in %s:\n got %s\nwant %s", tc.in, tc.v, got, tc.want)
	}
}

// TestParseEncode parses actions and formats them as the flow mod of
// version v carries them back (Debian's ovs-ofctl parse-flow).
func TestParseEncode(t *testing.T) {
	for _, tc := range []versionCase{
		// OVS's SET_IP_ECN and SET_IP_TTL: NXAST_REG_LOAD in 1.0, a
		// set_field of nw_ecn and OFPAT11_SET_NW_TTL from 1.2.
		{ofp.V10, "ip,actions=mod_nw_ecn:1,mod_nw_ttl:9", "ip actions=load:0x1->NXM_NX_IP_ECN[],load:0x9->NXM_NX_IP_TTL[]"},
		{ofp.V13, "ip,actions=mod_nw_ecn:1,mod_nw_ttl:9", "ip actions=set_field:1->nw_ecn,mod_nw_ttl:9"},
		{ofp.V15, "ipv6,actions=mod_nw_ecn:3,mod_nw_ttl:0x10", "ipv6 actions=set_field:3->nw_ecn,mod_nw_ttl:16"},
		// parse_int_string: octal after a 0, wider than 64 bits.
		{ofp.V10, "actions=load:010->NXM_NX_REG0[],load:0x1234567890abcdef1234->NXM_NX_XXREG0[8..100]",
			"actions=load:0x8->NXM_NX_REG0[],load:0x567890abcdef1234->NXM_NX_XXREG0[8..71],load:0x1234->NXM_NX_XXREG0[72..100]"},
		// tun_metadata without a TLV map: as long as the value (and
		// mask) need, a set masked unless given whole; in OpenFlow 1.0
		// as NXAST_REG_LOAD2, shown as a set_field.
		{ofp.V10, "actions=set_field:1->tun_metadata0,load:1->tun_metadata1[0..7],set_field:0xff/0xff->tun_metadata2",
			"actions=set_field:0x1->tun_metadata0,set_field:0x1/0xff->tun_metadata1,set_field:0xff/0xff->tun_metadata2"},
		{ofp.V13, "actions=set_field:0x0100->tun_metadata0,load:0x1ff->NXM_NX_TUN_METADATA2[4..12]",
			"actions=set_field:0x100->tun_metadata0,set_field:0x1ff0/0x1ff0->tun_metadata2"},
		{ofp.V13, "tun_metadata1=5,tun_metadata0=1/0xff00,tun_metadata3=0x1234/0xff,ip,actions=drop",
			"ip,tun_metadata0=0/0xff00,tun_metadata1=0x5,tun_metadata3=0x34 actions=drop"},
	} {
		checkVersionCase(t, tc, func(fs *Flow) (string, error) {
			fm := &ofp.FlowMod{Command: ofp.FlowAdd, Match: fs.Match, Priority: fs.Priority, BufferID: 0xffffffff,
				OutPort: ofp.PortAny, OutGroup: ofp.GroupAny, Actions: fs.Actions}
			msg, err := ofp.Decode(ofp.EncodeFlowMod(tc.v, 1, fm))
			if err != nil {
				return "", err
			}
			back := msg.(*ofp.FlowMod)
			return format(&Flow{Match: back.Match, Actions: back.Actions, Priority: back.Priority}, tc.v), nil
		})
	}
}

// TestParseErrors checks OVS's texts for bad flows.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		in   string
		cmd  int
		want string
	}{
		{"xyz=1,actions=drop", ParseAdd, "unknown keyword xyz"},
		{"ip,actions=foo", ParseAdd, "unknown action foo"},
		{"ip", ParseAdd, "must specify an action"},
		{"xyz", ParseDelete, "field xyz missing value"},
		{"igmp,actions=drop", ParseAdd, "field igmp missing value"},
		{"priority=5", ParseDump, "unknown keyword priority"},
		{"in_port=1,actions=output:2,drop", ParseAdd, "\"drop\" must not be accompanied by any other action or instruction"},
		{"cookie=1/1,actions=drop", ParseAdd, "flow additions cannot use a cookie mask"},
		{"tcp,tp_dst=abc,actions=drop", ParseAdd, "abc: bad syntax for tcp_dst value"},
		{"tcp,tp_dst=1/abc,actions=drop", ParseAdd, "1/abc: bad syntax for tcp_dst mask"},
		{"tcp,tp_dst=70000,actions=drop", ParseAdd, "70000: value too large for 2-byte field tcp_dst"},
		{"reg0=0x100000000,actions=drop", ParseAdd, "0x100000000: value too large for 4-byte field reg0"},
		{"dl_src=zz,actions=drop", ParseAdd, "zz: invalid Ethernet address"},
		{"nw_src=1.2.3,actions=drop", ParseAdd, "1.2.3: invalid IP address"},
		{"actions=write_actions(output:1),group:1", ParseAdd,
			"invalid instruction ordering: apply_actions must appear before write_actions, for OpenFlow 1.1+ compatibility"},
		{"actions=clear_actions,clear_actions", ParseAdd, "duplicate clear_actions instruction not allowed, for OpenFlow 1.1+ compatibility"},
		{"actions=clone(goto_table:1)", ParseAdd, "goto_table instruction not allowed here"},
		{"actions=conjunction(1,1/2),load:1->reg0", ParseAdd,
			`"conjunction" actions may be used along with "note" but not any other kind of action (such as the "set_field" action used here)`},
		{"actions=resubmit(,256)", ParseAdd, "256: resubmit to unknown table"},
		{"actions=set_queue", ParseAdd, "missing required numeric argument"},
		{"actions=set_queue:abc", ParseAdd, "invalid numeric format abc"},
		{"actions=set_queue:0b1", ParseAdd, "invalid numeric format 0b1"},
		{"actions=set_queue:1_0", ParseAdd, "invalid numeric format 1_0"},
		{"actions=set_queue:0x", ParseAdd, "invalid numeric format 0x"},
		{"actions=enqueue", ParseAdd, `"enqueue" syntax is "enqueue:PORT:QUEUE" or "enqueue(PORT,QUEUE)"`},
		{"actions=enqueue:1", ParseAdd, `"enqueue" syntax is "enqueue:PORT:QUEUE" or "enqueue(PORT,QUEUE)"`},
		{"actions=enqueue:1:", ParseAdd, `"enqueue" syntax is "enqueue:PORT:QUEUE" or "enqueue(PORT,QUEUE)"`},
		{"actions=enqueue:foo:1", ParseAdd, "foo: enqueue to unknown port"},
		{"actions=enqueue:1:abc", ParseAdd, "invalid numeric format abc"},
		{"actions=enqueue:1::2", ParseAdd, "invalid numeric format :2"},
		// ct_mark, ct_label and nat only in ct, which takes nothing else
		// (ofpacts_verify_nested's texts, at parse time as OVS).
		{"actions=set_field:1->ct_label", ParseAdd, "cannot set CT fields outside of ct action"},
		{"actions=move:NXM_NX_REG0[]->NXM_NX_CT_MARK[]", ParseAdd, "cannot set CT fields outside of ct action"},
		{"actions=write_actions(set_field:1->ct_mark)", ParseAdd, "cannot set CT fields outside of ct action"},
		{"actions=clone(nat)", ParseAdd, `Cannot have NAT action outside of "ct" action`},
		{"actions=nat(src=10.0.0.1)", ParseAdd, `Cannot have NAT action outside of "ct" action`},
		{"ip,actions=ct(commit,exec(output:1))", ParseAdd, "ct action doesn't support nested action output"},
		{"ip,actions=ct(commit,exec(pop:NXM_NX_CT_MARK[]))", ParseAdd, "ct action doesn't support nested action pop"},
		{"ip,actions=ct(commit,exec(set_field:1->reg0))", ParseAdd, "ct action doesn't support nested modification of reg0"},
		{"actions=clone(ct(commit,exec(ct_clear)))", ParseAdd, "ct action doesn't support nested action ct_clear"},
		// parse_SET_IP_ECN and parse_SET_IP_TTL (str_to_u8).
		{"ip,actions=mod_nw_ecn:4", ParseAdd, "4: not a valid ECN"},
		{"ip,actions=mod_nw_ecn:x", ParseAdd, `invalid ECN "x"`},
		{"ip,actions=mod_nw_ttl:256", ParseAdd, `invalid TTL "256"`},
		{"ip,actions=mod_nw_ttl:-1", ParseAdd, `invalid TTL "-1"`},
		{"ip,actions=mod_nw_ttl:1_0", ParseAdd, `invalid TTL "1_0"`},
		// parse_CT's texts.
		{"actions=ct(table=255)", ParseAdd, "invalid table 0xff"},
		{"ip,actions=ct(table=0x5)", ParseAdd, "unknown table 0x5"},
		{"actions=ct(zone=70000)", ParseAdd, "70000: unknown field `70000'"},
		{"actions=ct(alg=ssh)", ParseAdd, `invalid conntrack helper "ssh"`},
		{"ip,actions=ct(alg=21)", ParseAdd, `invalid conntrack helper "21"`},
		{"ip,actions=ct(force)", ParseAdd, `"force" flag requires "commit" flag.`},
		// tun_metadata's names, and one match each.
		{"actions=set_field:1->tun_metadata64", ParseAdd, "tun_metadata64 is not a valid OXM field name"},
		{"actions=set_field:1->NXM_NX_TUN_METADATA0", ParseAdd, "NXM_NX_TUN_METADATA0 is not a valid OXM field name"},
		{"tun_metadata0=5,tun_metadata0=6,actions=drop", ParseAdd, "field tun_metadata0 set multiple times"},
		// ofputil_port_from_string: decimal only.
		{"actions=output:0x10", ParseAdd, "0x10: output to unknown port"},
		{"actions=output:4294967039", ParseAdd, "4294967039: output to unknown port"},
		// parse_reg_load: parse_int_string in the field's width.
		{"actions=load:0x123456789->NXM_NX_REG0[]", ParseAdd, "0x123456789->NXM_NX_REG0[]: cannot parse integer value"},
		{"actions=load:-1->NXM_NX_REG0[]", ParseAdd, "-1->NXM_NX_REG0[]: cannot parse integer value"},
		{"actions=load:256->NXM_NX_REG0[0..7]", ParseAdd, "256->NXM_NX_REG0[0..7]: value 0x100 does not fit into 8 bits"},
		{"tcp,actions=load:300->NXM_OF_TCP_SRC[0..7]", ParseAdd, "300->NXM_OF_TCP_SRC[0..7]: value 300 does not fit into 8 bits"},
	} {
		_, err := ParseFlow(tc.in, tc.cmd, nil)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: got %v, want %q", tc.in, err, tc.want)
		}
	}
}

// FuzzParseFlow: any text either parses, for every command, into a flow
// whose flow mod the switch's decoder takes back (or refuses with an
// OpenFlow error) and that formats, or is refused with an error;
// nothing panics. The same text as an action list alone either parses
// or is refused, and as a packet-out's holds no instruction.
func FuzzParseFlow(f *testing.F) {
	for _, s := range []string{"actions=drop", "priority=5,ip,nw_src=10.0.0.0/8,actions=output:2",
		"table=3,udp6,ipv6_dst=fe80::1/64,actions=load:0x5->NXM_NX_REG1[0..7],goto_table:4",
		"ct_state=+trk+est,ip,actions=ct(commit,zone=NXM_NX_REG0[0..15],exec(set_field:1->ct_mark))",
		"dl_vlan=5,actions=mod_vlan_vid:7,mod_vlan_pcp:2,output:1", "tcp,tcp_flags=+syn-ack,actions=clone(drop)",
		"learn(table=2,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[]),resubmit(,2)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if acts, err := ParseActions(s, nil); err == nil {
			ofp.FormatActions(acts, ofp.V13, nil)
			Inconsistent(acts, flow.Key{})
			actionsUsable(acts)
		}
		// A packet-out's list holds no instruction.
		if acts, err := ParseApplyActions(s, nil); err == nil {
			for i := range acts {
				if instructionOf(acts[i].Type) != instApply && instructionOf(acts[i].Type) != instMeter {
					t.Fatalf("%q: instruction %v in an action list", s, acts[i].Type)
				}
			}
		}
		for _, cmd := range []int{ParseAdd, ParseModifyStrict, ParseDelete, ParseDump} {
			fs, err := ParseFlow(s, cmd, nil)
			if err != nil {
				continue
			}
			for _, v := range []ofp.Version{ofp.V10, ofp.V13, ofp.V15} {
				fm := &ofp.FlowMod{Command: ofp.FlowAdd, Match: fs.Match, Priority: fs.Priority, Table: 0,
					BufferID: 0xffffffff, OutPort: fs.OutPort, OutGroup: fs.OutGroup, Actions: fs.Actions}
				if _, err := ofp.Decode(ofp.EncodeFlowMod(v, 1, fm)); err != nil {
					if _, ok := err.(*ofp.Error); !ok {
						t.Fatalf("%q in %s: decode: %v", s, v, err)
					}
				}
				format(fs, v)
			}
		}
	})
}

// TestUsableProtocols checks the protocols flows leave usable, as
// Debian's ovs-ofctl parse-flow prints them.
func TestUsableProtocols(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ip,nw_src=10.0.0.0/8,actions=drop", "any"},
		{"ip,nw_src=10.0.0.1/255.0.255.0,actions=drop", "NXM,OXM,OpenFlow11"},
		{"reg0=5,actions=drop", "NXM,OXM"},
		{"table=1,actions=drop", "OXM,OpenFlow10+table_id,NXM+table_id,OpenFlow11"},
		{"actions=pop_vlan", "OpenFlow10,NXM"},
		{"actions=clone(output:1),push_vlan:0x8100", "OXM,OpenFlow11"},
		{"actions=meter:1", "OXM-OpenFlow13,OXM-OpenFlow14,OXM-OpenFlow15"},
		{"tcp6,tp_dst=80,actions=drop", "NXM,OXM"},
		{"actions=push_vlan:0x8100,mod_nw_tos:16", "none"},
		// check_set_ip: dec_ttl, mod_nw_ecn and mod_nw_ttl of a packet
		// the match does not make IP.
		{"actions=dec_ttl", "OpenFlow10,NXM"},
		{"arp,actions=dec_ttl(1,2,3)", "OpenFlow10,NXM"},
		{"ipv6,actions=dec_ttl", "any"},
		{"actions=clone(dec_ttl)", "OpenFlow10,NXM"},
		{"actions=mod_nw_ecn:1", "OpenFlow10,NXM"},
		{"ip,actions=mod_nw_ecn:1,mod_nw_ttl:9", "any"},
		{"actions=load:0xffff->NXM_NX_REG0[0..15],move:NXM_NX_REG0[0..15]->NXM_OF_VLAN_TCI[]", "any"},
		{"actions=load:5->OXM_OF_METADATA[]", "any"},
		{"actions=set_field:5->metadata", "NXM,OXM,OpenFlow11"},
		{"tun_metadata0=1,actions=drop", "NXM,OXM"},
		{"actions=set_field:1->tun_metadata0", "NXM,OXM"},
		{"actions=load:1->tun_metadata0[0..7]", "any"},
	} {
		fs, err := ParseFlow(tc.in, ParseAdd, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if got := fs.Usable.String(); got != tc.want {
			t.Errorf("%s: usable %s, want %s", tc.in, got, tc.want)
		}
	}
}
