package ofproto

import (
	"strings"
	"testing"
)

// traceRig is the bridges the expected texts below were captured from,
// with Debian's OVS 3.1: brd with system ports dprb0 (trunk), dpra0
// (trunk) and dprc0 (access VLAN 10), patched to brp; MACs ...:03 learned
// on dprc0 in VLAN 10 and ...:0b on dprb0 in VLAN 10.
func traceRig(t *testing.T) *testBacker {
	tb := newTestBacker(t)
	tb.bridge("brd", BridgeConfig{Ports: []PortConfig{
		{Name: "dprc0", OFPort: 3, DPPort: 4, Tag: 10},
		{Name: "dprb0", OFPort: 1, DPPort: 1, Tag: -1},
		{Name: "dpra0", OFPort: 2, DPPort: 3, Tag: -1},
		{Name: "brd", OFPort: LocalOFPort, DPPort: 2, Tag: -1},
		{Name: "pd", OFPort: 4, PatchPeer: "pp", Tag: -1},
	}})
	tb.bridge("brp", BridgeConfig{Ports: []PortConfig{
		{Name: "pp", OFPort: 1, PatchPeer: "pd", Tag: -1},
		{Name: "brp", OFPort: LocalOFPort, DPPort: 5, Tag: -1},
	}})
	tb.xlate(4, eth("02:00:00:00:00:03", bcast))
	tb.xlate(1, eth("02:00:00:00:00:0b", bcast, tag(10)))
	return tb
}

func TestTrace(t *testing.T) {
	tb := traceRig(t)
	for _, tt := range []struct {
		args []string
		want string
		err  string
	}{{
		args: []string{"brd", "in_port=dprb0,dl_src=02:00:00:00:00:0b,dl_dst=02:00:00:00:00:03,dl_vlan=10"},
		want: `Flow: in_port=1,dl_vlan=10,dl_vlan_pcp=0,vlan_tci1=0x0000,dl_src=02:00:00:00:00:0b,dl_dst=02:00:00:00:00:03,dl_type=0x0000

bridge("brd")
-------------
 0. priority 0
    NORMAL
     -> forwarding to learned port

Final flow: unchanged
Megaflow: recirc_id=0,eth,in_port=1,dl_vlan=10,dl_vlan_pcp=0,dl_src=02:00:00:00:00:0b,dl_dst=02:00:00:00:00:03,dl_type=0x0000
Datapath actions: pop_vlan,4
`}, {
		args: []string{"brd", "in_port=dprc0,dl_src=02:00:00:00:00:03,dl_dst=ff:ff:ff:ff:ff:ff"},
		want: `Flow: in_port=3,vlan_tci=0x0000,dl_src=02:00:00:00:00:03,dl_dst=ff:ff:ff:ff:ff:ff,dl_type=0x0000

bridge("brd")
-------------
 0. priority 0
    NORMAL
     -> no learned MAC for destination, flooding

bridge("brp")
-------------
 0. priority 0
    NORMAL
     -> no learned MAC for destination, flooding

Final flow: unchanged
Megaflow: recirc_id=0,eth,in_port=3,dl_src=02:00:00:00:00:03,dl_dst=ff:ff:ff:ff:ff:ff,dl_type=0x0000
Datapath actions: push_vlan(vid=10,pcp=0),1,3,2,5
`}, {
		args: []string{"brd", "in_port=dprc0,dl_src=02:00:00:00:00:03,dl_dst=02:00:00:00:00:03"},
		want: `Flow: in_port=3,vlan_tci=0x0000,dl_src=02:00:00:00:00:03,dl_dst=02:00:00:00:00:03,dl_type=0x0000

bridge("brd")
-------------
 0. priority 0
    NORMAL
     -> learned port is input port, dropping

Final flow: unchanged
Megaflow: recirc_id=0,eth,in_port=3,dl_src=02:00:00:00:00:03,dl_dst=02:00:00:00:00:03,dl_type=0x0000
Datapath actions: drop
`}, {
		args: []string{"brd", "in_port=dprc0,dl_src=02:00:00:00:00:03,dl_dst=01:80:c2:00:00:00"},
		want: `Flow: in_port=3,vlan_tci=0x0000,dl_src=02:00:00:00:00:03,dl_dst=01:80:c2:00:00:00,dl_type=0x0000

bridge("brd")
-------------
 0. priority 0
    NORMAL
     -> packet has reserved destination MAC, dropping

Final flow: unchanged
Megaflow: recirc_id=0,eth,in_port=3,dl_src=02:00:00:00:00:03,dl_dst=01:80:c2:00:00:00,dl_type=0x0000
Datapath actions: drop
`}, {
		args: []string{"brd", "in_port=dprc0,dl_vlan=10,dl_src=02:00:00:00:00:03,dl_dst=01:80:c2:00:00:01"},
		want: `Flow: in_port=3,dl_vlan=10,dl_vlan_pcp=0,vlan_tci1=0x0000,dl_src=02:00:00:00:00:03,dl_dst=01:80:c2:00:00:01,dl_type=0x0000

bridge("brd")
-------------
 0. priority 0
    NORMAL
     >>>> dropping VLAN 10 tagged packet received on port dprc0 configured as VLAN 10 access port <<<<
     >> disallowed VLAN VID for this input port, dropping

Final flow: unchanged
Megaflow: recirc_id=0,eth,in_port=3,dl_vlan=10,dl_src=02:00:00:00:00:03,dl_dst=01:80:c2:00:00:01,dl_type=0x0000
Datapath actions: drop
`}, {
		args: []string{"brd", "in_port=99"},
		want: `Flow: in_port=99,vlan_tci=0x0000,dl_src=00:00:00:00:00:00,dl_dst=00:00:00:00:00:00,dl_type=0x0000

bridge("brd")
-------------
 0. priority 0
    NORMAL
     >>>> received packet on unknown port 99 <<<<
     >> no input bundle, dropping

Final flow: unchanged
Megaflow: recirc_id=0,eth,in_port=99,dl_src=00:00:00:00:00:00,dl_dst=00:00:00:00:00:00,dl_type=0x0000
Datapath actions: drop
`}, {
		args: []string{"nobr", "in_port=1"}, err: "nobr: unknown bridge",
	}, {
		args: []string{"brd", "in_port=nosuch"}, err: "Bad openflow flow syntax: in_port=nosuch: bad value for in_port (nosuch: invalid or unknown port for in_port)",
	}, {
		args: []string{"brd", "foo=bar"}, err: "Bad openflow flow syntax: foo=bar: unknown field foo",
	}, {
		args: []string{"brd"}, err: "syntax error at brd (or the bridge name was omitted)",
	}, {
		args: []string{"brd", "in_port=1,ip,nw_src=1.2.3.4,tcp,tp_dst=80"}, err: "Bad openflow flow syntax: in_port=1,ip,nw_src=1.2.3.4,tcp,tp_dst=80: Ethernet type set multiple times",
	}, {
		// OVS's parse_ofp_exact_flow: a field given twice (unless it was
		// zero), no wildcards, each field's size; fields govs' datapath
		// does not carry refused.
		args: []string{"brd", "in_port=1,tcp,nw_proto=6"}, err: "Bad openflow flow syntax: in_port=1,tcp,nw_proto=6: field nw_proto set multiple times",
	}, {
		args: []string{"brd", "in_port=1,xreg0=1,reg1=2"}, err: "Bad openflow flow syntax: in_port=1,xreg0=1,reg1=2: field reg1 set multiple times",
	}, {
		args: []string{"brd", "in_port=1,ct_state=+trk"}, err: "Bad openflow flow syntax: in_port=1,ct_state=+trk: bad value for ct_state (+trk: wildcards not allowed here)",
	}, {
		args: []string{"brd", "xxreg3=0x100000000000000000000000000000000"}, err: "Bad openflow flow syntax: xxreg3=0x100000000000000000000000000000000: bad value for xxreg3 (0x100000000000000000000000000000000: value too large for 16-byte field xxreg3)",
	}, {
		args: []string{"brd", "reg16=1"}, err: "Bad openflow flow syntax: reg16=1: unknown field reg16",
	}, {
		args: []string{"brd", "in_port=1,tun_erspan_ver=1"}, err: "Bad openflow flow syntax: in_port=1,tun_erspan_ver=1: field tun_erspan_ver: govs does not support it",
	}, {
		args: []string{"brd", "in_port=1,tun_gbp_id=70000"}, err: "Bad openflow flow syntax: in_port=1,tun_gbp_id=70000: bad value for tun_gbp_id (70000: value too large for 2-byte field tun_gbp_id)",
	}, {
		args: []string{"brd", "in_port=1,mpls"}, err: "Bad openflow flow syntax: in_port=1,mpls: mpls: govs does not support MPLS",
	}, {
		args: []string{"brd", "in_port=1,nsh_spi=1"}, err: "Bad openflow flow syntax: in_port=1,nsh_spi=1: prerequisites not met for setting nsh_spi",
	}, {
		args: []string{"brd", "in_port=1,ct_state=trk,ct_nw_proto=6"}, err: "Bad openflow flow syntax: in_port=1,ct_state=trk,ct_nw_proto=6: prerequisites not met for setting ct_nw_proto",
	}} {
		got, err := tb.TraceCommand(tt.args)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%q: error %v, want %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q (%v):\n%s\nwant:\n%s", tt.args, err, got, tt.want)
		}
	}
}

// A trace's flow may give the registers and metadata: the Flow: line
// shows them as OVS's flow_format (xreg0=1 is reg1, xxreg1 reg4-reg7,
// the first register the most significant), and the pipeline starts
// with them.
func TestTraceRegisters(t *testing.T) {
	tb := traceRig(t)
	got, err := tb.TraceCommand([]string{"brd", "in_port=1,xreg0=0x200000001,xxreg1=0x3,metadata=0xab,skb_priority=0x7,ct_label=0x10,ct_state=est|trk"})
	if err != nil {
		t.Fatal(err)
	}
	const want = "Flow: skb_priority=0x7,ct_state=est|trk,ct_label=0x10,reg0=0x2,reg1=0x1,reg7=0x3,metadata=0xab,in_port=1,vlan_tci=0x0000,"
	if !strings.HasPrefix(got, want) {
		t.Errorf("got:\n%s\nwant a start of:\n%s", got, want)
	}
}

// The Flow: and Megaflow: lines of other protocols, as OVS 3.1 prints
// them for the same bridge (captured before brp was patched in: the
// floods here also reach brp's port 5).
func TestTraceFlowLines(t *testing.T) {
	tb := traceRig(t)
	for _, tt := range []struct{ spec, flow, megaflow, actions string }{
		{"in_port=1,tcp,nw_src=1.2.3.4,tp_dst=80,dl_src=02:00:00:00:00:0b,dl_dst=02:00:00:00:00:03",
			"tcp,in_port=1,vlan_tci=0x0000,dl_src=02:00:00:00:00:0b,dl_dst=02:00:00:00:00:03,nw_src=1.2.3.4,nw_dst=0.0.0.0,nw_tos=0,nw_ecn=0,nw_ttl=0,nw_frag=no,tp_src=0,tp_dst=80,tcp_flags=0",
			"recirc_id=0,eth,ip,in_port=1,dl_src=02:00:00:00:00:0b,dl_dst=02:00:00:00:00:03,nw_frag=no", "3,2,5"},
		{"udp,in_port=1,dl_vlan=10,dl_vlan_pcp=3",
			"udp,in_port=1,dl_vlan=10,dl_vlan_pcp=3,vlan_tci1=0x0000,dl_src=00:00:00:00:00:00,dl_dst=00:00:00:00:00:00,nw_src=0.0.0.0,nw_dst=0.0.0.0,nw_tos=0,nw_ecn=0,nw_ttl=0,nw_frag=no,tp_src=0,tp_dst=0",
			"recirc_id=0,eth,ip,in_port=1,dl_vlan=10,dl_vlan_pcp=3,dl_src=00:00:00:00:00:00,dl_dst=00:00:00:00:00:00,nw_frag=no", "pop_vlan,4,push_vlan(vid=10,pcp=3),3,2,5"},
		{"arp,in_port=1,arp_spa=10.0.0.1,arp_tpa=10.0.0.2,arp_op=1,dl_dst=ff:ff:ff:ff:ff:ff",
			"arp,in_port=1,vlan_tci=0x0000,dl_src=00:00:00:00:00:00,dl_dst=ff:ff:ff:ff:ff:ff,arp_spa=10.0.0.1,arp_tpa=10.0.0.2,arp_op=1,arp_sha=00:00:00:00:00:00,arp_tha=00:00:00:00:00:00",
			"recirc_id=0,eth,arp,in_port=1,dl_src=00:00:00:00:00:00,dl_dst=ff:ff:ff:ff:ff:ff,arp_spa=10.0.0.1,arp_tpa=10.0.0.2,arp_op=1", "3,2,5"},
		{"ipv6,in_port=1,ipv6_src=fe80::1",
			"ipv6,in_port=1,vlan_tci=0x0000,dl_src=00:00:00:00:00:00,dl_dst=00:00:00:00:00:00,ipv6_src=fe80::1,ipv6_dst=::,ipv6_label=0x00000,nw_proto=0,nw_tos=0,nw_ecn=0,nw_ttl=0,nw_frag=no",
			"recirc_id=0,eth,ipv6,in_port=1,dl_src=00:00:00:00:00:00,dl_dst=00:00:00:00:00:00,nw_frag=no", "3,2,5"},
		{"icmp,in_port=1,icmp_type=8",
			"icmp,in_port=1,vlan_tci=0x0000,dl_src=00:00:00:00:00:00,dl_dst=00:00:00:00:00:00,nw_src=0.0.0.0,nw_dst=0.0.0.0,nw_tos=0,nw_ecn=0,nw_ttl=0,nw_frag=no,icmp_type=8,icmp_code=0",
			"recirc_id=0,eth,ip,in_port=1,dl_src=00:00:00:00:00:00,dl_dst=00:00:00:00:00:00,nw_frag=no", "3,2,5"},
		{"in_port=1,dl_type=0x0800,nw_frag=later",
			"ip,in_port=1,vlan_tci=0x0000,dl_src=00:00:00:00:00:00,dl_dst=00:00:00:00:00:00,nw_src=0.0.0.0,nw_dst=0.0.0.0,nw_proto=0,nw_tos=0,nw_ecn=0,nw_ttl=0,nw_frag=later",
			"recirc_id=0,eth,ip,in_port=1,dl_src=00:00:00:00:00:00,dl_dst=00:00:00:00:00:00,nw_frag=later", "3,2,5"},
		{"in_port=1,vlan_tci=0x1005",
			"in_port=1,dl_vlan=5,dl_vlan_pcp=0,vlan_tci1=0x0000,dl_src=00:00:00:00:00:00,dl_dst=00:00:00:00:00:00,dl_type=0x0000",
			"recirc_id=0,eth,in_port=1,dl_vlan=5,dl_src=00:00:00:00:00:00,dl_dst=00:00:00:00:00:00,dl_type=0x0000", "3,2,5"},
		{"in_port=LOCAL",
			"in_port=LOCAL,vlan_tci=0x0000,dl_src=00:00:00:00:00:00,dl_dst=00:00:00:00:00:00,dl_type=0x0000",
			"recirc_id=0,eth,in_port=LOCAL,dl_src=00:00:00:00:00:00,dl_dst=00:00:00:00:00:00,dl_type=0x0000", "1,3,5"},
	} {
		got, err := tb.Trace("brd", tt.spec)
		if err != nil {
			t.Errorf("%s: %v", tt.spec, err)
			continue
		}
		for _, want := range []string{"Flow: " + tt.flow + "\n", "Megaflow: " + tt.megaflow + "\n", "Datapath actions: " + tt.actions + "\n"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: lacks %q:\n%s", tt.spec, want, got)
			}
		}
	}
}

// FuzzParseTraceArgs: ofproto/trace's option parsing never panics, and a
// --ct-next state it accepts formats back to flags it accepts again.
func FuzzParseTraceArgs(f *testing.F) {
	for _, s := range []string{"br0\x00in_port=1\x00--ct-next\x00trk,est", "--ct-next\x00trk new\x00-generate", "--l7\x00", "a\x00b\x00c\x00d", "--ct-next\x00inv,trk,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, joined string) {
		_, o, err := parseTraceArgs(strings.Split(joined, "\x00"), false)
		if err != nil {
			return
		}
		for _, st := range o.ctNext {
			if st == 0 { // formatted "0", as OVS's format_flags, which OVS's parser refuses too
				continue
			}
			again, err := parseCtStateFlags(strings.ReplaceAll(formatCtState(st, 0xff), "|", ","))
			if err != nil || again != st {
				t.Fatalf("state %#x formats as %q, parsed back as %#x, %v", st, formatCtState(st, 0xff), again, err)
			}
		}
	})
}

// TestTracePacketOutCommand: ofproto/trace-packet-out runs the actions
// in the last argument instead of the tables, and refuses what OVS 3.1's
// refuses with its texts (those of Debian's, in
// tests/vswitchd_tracepktout_test.go).
func TestTracePacketOutCommand(t *testing.T) {
	tb := traceRig(t)
	const flow = "in_port=1,ip,nw_src=10.0.0.1,nw_dst=10.0.0.2"
	got, err := tb.TracePacketOutCommand([]string{"brd", flow, "output:2"})
	const want = `Flow: ip,in_port=1,vlan_tci=0x0000,dl_src=00:00:00:00:00:00,dl_dst=00:00:00:00:00:00,nw_src=10.0.0.1,nw_dst=10.0.0.2,nw_proto=0,nw_tos=0,nw_ecn=0,nw_ttl=0,nw_frag=no

bridge("brd")
-------------
    output:2

Final flow: unchanged
Megaflow: recirc_id=0,eth,ip,in_port=1,nw_frag=no
Datapath actions: 3
`
	if err != nil || got != want {
		t.Errorf("output:2 (%v):\n%s\nwant:\n%s", err, got, want)
	}
	// No actions, or drop: the tables.
	for _, acts := range []string{"", "drop"} {
		got, err := tb.TracePacketOutCommand([]string{"brd", flow, acts})
		if err != nil || !strings.Contains(got, " 0. priority 0\n    NORMAL\n") {
			t.Errorf("%q (%v): the tables not traced:\n%s", acts, err, got)
		}
	}
	for _, tt := range []struct {
		args []string
		err  string
	}{
		{[]string{"brd"}, `"ofproto/trace-packet-out" command requires at least 2 arguments`},
		{[]string{"brd", flow}, "unknown action ip"},
		{[]string{"brd", flow, "--ct-next"}, "unknown action --ct-next"},
		{[]string{"brd", flow, "goto_table:1"}, "goto_table instruction not allowed here"},
		{[]string{"brd", flow, "write_actions(output:2)"}, "write_actions instruction not allowed here"},
		{[]string{"brd", flow, "output:2,drop"}, `"drop" must not be accompanied by any other action or instruction`},
		{[]string{"brd", flow, "resubmit(,300)"}, "300: resubmit to unknown table"},
		{[]string{"brd", flow, "meter:1,output:2"}, "Bad actions: OFPMMFC_INVALID_METER"},
		{[]string{"brd", flow, "group:9"}, "Bad actions: OFPBAC_BAD_OUT_GROUP"},
		{[]string{"brd", "in_port=1", "set_field:10.0.0.9->ip_src,output:2"}, "Bad actions: OFPBAC_MATCH_INCONSISTENT"},
		{[]string{"-consistent", "brd", "in_port=1", "mod_nw_tos:16,output:2"}, "Bad actions: OFPBAC_MATCH_INCONSISTENT"},
		{[]string{"brd", "in_port=1,tp_dst=80", "output:2"}, "Bad openflow flow syntax: in_port=1,tp_dst=80: prerequisites not met for setting tp_dst"},
		{[]string{"nosuch", flow, "output:2"}, "nosuch: unknown bridge"},
		{[]string{"brd", flow, "a", "b", "output:2"}, "too many arguments"},
		{[]string{"brd", flow, "--frobnicate", "output:2"}, "--frobnicate: unknown option"},
	} {
		if _, err := tb.TracePacketOutCommand(tt.args); err == nil || err.Error() != tt.err {
			t.Errorf("%q: error %v, want %q", tt.args, err, tt.err)
		}
	}
	// Without -consistent an OpenFlow 1.0 set of a header the packet
	// lacks is traced and changes nothing.
	got, err = tb.TracePacketOutCommand([]string{"brd", "in_port=1", "mod_nw_tos:16,output:2"})
	if err != nil || !strings.Contains(got, "    mod_nw_tos:16\n    output:2\n\nFinal flow: unchanged\n") {
		t.Errorf("mod_nw_tos of a non-IP packet (%v):\n%s", err, got)
	}
}
