package tests

import (
	"fmt"
	"testing"
)

// traceFieldFlows match on the registers, metadata and the other fields
// an OVN user's trace gives, so that the traces below take different
// paths by them.
var traceFieldFlows = []string{
	"priority=100,in_port=1,reg0=0x1,actions=output:2",
	"priority=100,in_port=1,metadata=0x1,actions=resubmit(,1)",
	"priority=90,in_port=1,reg1=0x1,actions=set_field:0x3->reg2,resubmit(,1)",
	"priority=90,in_port=1,reg7=0x1,actions=output:3",
	"priority=5,in_port=1,actions=output:LOCAL",
	"table=1,priority=10,reg15=0x2,actions=output:3",
	"table=1,priority=10,reg2=0x3,metadata=0x1,actions=output:2",
	"table=1,priority=5,actions=output:2",
	// The IPv6 flow label: a rule on the whole label matched (the
	// megaflow shows no mask), or missed, or the label only set (OVS's
	// 20-bit mask shown), or some of its bits loaded.
	"priority=100,in_port=1,reg4=0x1,actions=resubmit(,3)",
	"priority=100,in_port=1,reg4=0x2,actions=resubmit(,4)",
	"table=3,priority=10,ipv6,ipv6_label=0x5,actions=output:2",
	"table=3,priority=5,actions=resubmit(,4)",
	"table=4,priority=6,ipv6,ipv6_src=::9,actions=load:0x3->NXM_NX_IPV6_LABEL[0..3],output:2",
	"table=4,priority=5,ipv6,actions=set_field:0x7->ipv6_label,output:2",
	"table=4,priority=1,actions=output:3",
	// Zero and masked registers and metadata in a rule's title.
	"priority=6,in_port=1,reg6=0,reg7=0x5/0xff,metadata=0/0xf0,actions=output:LOCAL",
	"priority=6,in_port=1,reg8=0x10/0x10,metadata=0x100,actions=output:2",
}

// traceFieldCorpus: flows with every field an ofproto/trace flow may
// give (OVS's parse_ofp_exact_flow takes any field mf_from_name knows),
// some refused as OVS refuses them.
var traceFieldCorpus = []string{
	"reg0=0x1", "reg15=0x2", "xreg0=0x1", "xxreg1=0x1", "reg1=1,reg2=3",
	"metadata=0x1", "metadata=0x1,reg2=3", "metadata=0x1,reg15=2",
	"skb_priority=0x1", "ct_label=1", "ct_label=0x1234567890abcdef1234", "conj_id=1", "actset_output=1",
	"sctp,sctp_src=1", "ip,ip_dscp=8", "mpls,mpls_label=5", "packet_type=(0,0x800)", "tun_gbp_id=1",
	"ct_state=+trk", "ct_state=trk", "ct_state=0x21", "ct_mark=0x5",
	"NXM_NX_REG0=0x1", "OXM_OF_METADATA=0x1", "NXM_NX_XXREG1=0x1", "xreg7=1", "xxreg3=1", "xreg8=1", "xxreg4=1", "reg16=1",
	"reg0=0x1/0xff", "reg0=0x100000000", "reg0=1,reg0=2", "reg0=0,reg0=2",
	"mpls,mpls_tc=3", "mpls,mpls_bos=1", "mpls,mpls_ttl=9", "ip,mpls_label=5",
	"ip,ip_ecn=1", "ipv6,ipv6_label=5", "tun_gbp_flags=1", "tun_erspan_ver=1", "tun_ipv6_src=::1",
	"ct_nw_src=1.2.3.4", "ct_state=trk,ip,ct_nw_src=1.2.3.4", "ct_zone=5", "nsh_spi=1", "dl_type=0x894f,nsh_spi=1",
	"in_port_oxm=1", "dp_hash=1", "recirc_id=0", "ip,ip_dscp=64", "vlan_vid=0x1005", "vlan_pcp=3", "dl_vlan=5,vlan_pcp=3",
	"ip,dl_type=0x800", "tcp,nw_proto=6", "tcp,ip", "ip,nw_tos=4,nw_tos=8",
	"ip,nw_proto=6,tcp_src=5",
	// Conntrack fields of a valid connection; ct_label matched.
	"ct_state=0x21,ip,ct_nw_proto=6,ct_nw_src=1.2.3.4,ct_nw_dst=5.6.7.8,ct_tp_src=1,ct_tp_dst=80",
	"ct_state=est|trk,ipv6,ct_nw_proto=17,ct_ipv6_src=fd00::1,ct_tp_dst=53",
	"ct_state=trk,ip,ct_nw_proto=6", "ct_state=new|trk,ct_nw_proto=6", "ct_state=new|trk,ip,ct_ipv6_src=::1",
	"ct_label=0x5", "ct_label=0x5,ct_state=trk", "ct_label=0x100000000000000000000000000000000", "ct_label=xyz",
	// Every other name and alias OVS's mf_from_name knows.
	"ip_src=10.0.0.1", "ip,ip_src=10.0.0.1,ip_dst=10.0.0.2", "ip,ip_ecn=2,ip_proto=17", "ip,ip_frag=first",
	"eth_src=00:00:00:00:00:09", "eth_type=0x800", "ip,ip_proto=6,tcp_src=1,tcp_dst=2,tcp_flags=0x2",
	"tunnel_id=5", "udp,udp_src=1,udp_dst=2", "sctp,sctp_dst=9", "udp,sctp_src=1", "udp,nw_frag=later,udp_src=1",
	"icmp,icmp_type=8,icmp_code=1", "icmp6,icmpv6_type=135,nd_target=fd00::1,nd_sll=00:00:00:00:00:03",
	"arp,arp_op=2,arp_sha=00:00:00:00:00:04,arp_tha=00:00:00:00:00:05", "rarp,arp_spa=1.2.3.4",
	"ipv6,ipv6_src=::1,ipv6_dst=::2,ipv6_label=0x12345", "ip,nw_ttl=9,nw_tos=0xfc", "ip,ip_dscp=300",
	"vlan_vid=5", "vlan_vid=0x1fff,vlan_pcp=7", "dl_vlan_pcp=2", "vlan_tci=0x1005", "in_port_oxm=2",
	"actset_output=LOCAL", "actset_output=nosuch", "conj_id=xyz", "conj_id=0x100000000",
	"skb_priority=0x7,reg1=1", "skb_priority=0x100000000", "metadata=0x10000000000000000", "metadata=0xfedcba9876543210",
	"xxreg0=0x100000000000000000000000000000000", "xxreg0=0xffffffffffffffffffffffffffffffff", "xreg3=0x100000000",
	"dp_hash=1,dp_hash=2", "pkt_mark=1,pkt_mark=0", "skb_priority=1,skb_priority=2", "metadata=1,metadata=1",
	"xreg0=1,reg1=2", "xreg0=1,reg0=2", "reg01=1", "reg=1", "xxreg=1", "recirc_id=1,recirc_id=2",
	"ct_zone=1,ct_zone=2", "ct_mark=1,ct_mark=2", "ct_state=trk,ct_state=new",
	"nsh_flags=1", "nsh_c1=1", "nshc1=1", "nsp=1", "nsi=1", "tun_erspan_idx=1", "tun_gtpu_flags=1", "mplsm",
	"reg4=1,ipv6,ipv6_label=5", "reg4=1,ipv6,ipv6_label=6", "reg4=2,ipv6,ipv6_label=6", "reg4=2,ipv6,ipv6_src=::9,ipv6_label=0x12345",
	"xreg0=0x200000001,xxreg1=0x3,metadata=0xab,skb_priority=0x7,ct_label=0x10,ct_state=est|trk,ct_zone=3,ct_mark=2",
	"reg4=2,ip", "reg4=1,ip", "reg7=5", "reg7=0x105", "reg7=0x105,metadata=0x10", "reg8=0x30,metadata=0x100",
	"REG0=1", "reg0=-1", "reg0=xyz", "metadata=xyz", "ip,ip_dscp=0x40", "ipv6,ipv6_label=0x100000", "ip,nw_ttl=300",
	"tcp,tp_dst=70000", "tcp,tp_dst=x", "ct_zone=70000", "ct_mark=0x100000000", "dl_type=0x10000", "ip,nw_proto=256",
	"recirc_id=0x100000000", "ip,nw_tos=256", "tcp,tcp_flags=0x1000", "dl_vlan=4096", "dl_vlan_pcp=8", "vlan_tci=0x10000",
	"ip,nw_src=1.2.3", "ip,nw_src=::1", "dl_src=xx", "ip,nw_frag=bogus", "arp,arp_op=256", "ct_state=bogus", "ct_state=0x100",
	"dl_vlan=0xffff", "vlan_tci=0", "dl_vlan=0", "ip,nw_frag=not_later", "ct_state=0", "recirc_id=0,recirc_id=0x5",
	"tcp,tcp_flags=syn|ack", "tcp,tcp_flags=+syn", "tcp,tcp_flags=bogus", "ip,nw_src=10.0.0.1/24", "reg0=xyz/1",
	"icmp6,icmpv6_type=136,nd_tll=00:00:00:00:00:01,nd_reserved=0x60000000", "tun_src=::1", "ipv6,ipv6_src=1.2.3.4",
	"actset_output=0x100000000", "metadata=-1", "conj_id=-1", "reg0=010", "reg0=0x", "reg0=0x0000000000000001",
	"reg0=0x00000000100000000", "reg0= 5", "ct_label=-1", "xreg1=-1", "ip,ip_dscp=-1",
	"ip,nw_frag=yes", "ip,nw_frag=NO", "reg0=5/0xffffffff", "reg0=5/0xfffffff0", "reg0=5/xyz", "reg0=5/0x100000000",
	"ct_state=+bogus", "ct_state=trk|bogus", "reg0", "reg0:3", "reg0=3 reg1=4", "ip(5)", "ct_state=-trk",
	"ip,nw_src=10.0.0.1/32", "ip,nw_dst=10.0.0.1/255.255.255.255", "ipv6,ipv6_src=::1/128", "ipv6,ipv6_dst=::1/64",
	"arp,arp_sha=00:00:00:00:00:05/ff:ff:ff:ff:ff:ff", "arp,arp_tha=00:00:00:00:00:05/ff:ff:ff:ff:ff:00",
	"ipv4,nw_src=1.2.3.4", "ip4", "ip6,ipv6_src=::1", "igmp", "ip,nw_proto=2",
	"mpls", "mpls_label=1", "tun_metadata0=1", "tun_src=1.2.3.4,tun_dst=5.6.7.8,reg3=7,metadata=0x2",
	"tun_ipv6_src=fd00::1,tun_ipv6_dst=fd00::2,reg3=7", "tun_ipv6_dst=fd00::2/ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
	"tun_ipv6_dst=fd00::2,tun_ipv6_dst=fd00::3", "tun_ipv6_dst=xyz",
	"tun_gbp_id=70000", "tun_gbp_flags=0x100", "tun_gbp_id=0x10/0xf0", "tun_gbp_id=77,tun_gbp_flags=0x48,reg0=0x1",
	"tun_src=1.2.3.4,tun_dst=5.6.7.8,tun_gbp_id=77,tun_gbp_flags=8", "tun_gbp_id=1,tun_gbp_id=2",
}

// traceFieldGovsRefuses are the flows of traceFieldCorpus with fields
// govs' datapath has no place for (MPLS, NSH, packet types, ERSPAN,
// GTP-U), which Debian's traces and govs refuses rather than trace them
// as if they were not given: govs' error.
var traceFieldGovsRefuses = map[string]string{
	"mpls,mpls_label=5":        "mpls: govs does not support MPLS",
	"mpls,mpls_tc=3":           "mpls: govs does not support MPLS",
	"mpls,mpls_bos=1":          "mpls: govs does not support MPLS",
	"mpls,mpls_ttl=9":          "mpls: govs does not support MPLS",
	"packet_type=(0,0x800)":    "field packet_type: govs does not support it",
	"tun_erspan_ver=1":         "field tun_erspan_ver: govs does not support it",
	"dl_type=0x894f,nsh_spi=1": "field nsh_spi: govs does not support it",
	"tun_erspan_idx=1":         "field tun_erspan_idx: govs does not support it",
	"tun_gtpu_flags=1":         "field tun_gtpu_flags: govs does not support it",
	"mplsm":                    "mplsm: govs does not support MPLS",
	"mpls":                     "mpls: govs does not support MPLS",
}

// TestOpenFlowTraceFieldsDifferential: ofproto/trace takes the fields
// Debian's takes (registers, metadata, OVN's fields) and refuses what
// it refuses, with the same Flow: line, rules, Final flow:, Megaflow:
// and datapath actions (issue 12).
func TestOpenFlowTraceFieldsDifferential(t *testing.T) {
	deb, govs := startSwitchPair(t, "gtxd", "10.248.0", "gtxo", "10.249.0")
	for _, s := range []*ofSwitch{deb, govs} {
		s.replaceFlows(traceFieldFlows...)
	}
	for i, f := range traceFieldCorpus {
		pkt := "in_port=1,dl_src=00:00:00:00:00:01,dl_dst=00:00:00:00:00:02," + f
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
			run := func(s *ofSwitch) (string, int) {
				out, rc := s.traceArgsRC(s.br, "--names", pkt)
				return tunTraceTarget.ReplaceAllString(s.normalizeOfctl(out), "ovs-appctl: T: server returned an error"), rc
			}
			want, wantRC := run(deb)
			got, gotRC := run(govs)
			if refusal, ok := traceFieldGovsRefuses[f]; ok {
				// Debian's traces it; govs has no such field to trace.
				wantErr := fmt.Sprintf("Bad openflow flow syntax: %s: %s\novs-appctl: T: server returned an error\n", pkt, refusal)
				if wantRC != 0 || gotRC != 2 || got != wantErr {
					t.Errorf("ofproto/trace %s: govs (exit %d):\n%s\nwant (exit 2):\n%s\nDebian's (exit %d, want 0):\n%s", pkt, gotRC, got, wantErr, wantRC, want)
				}
				return
			}
			if got != want || gotRC != wantRC {
				t.Errorf("ofproto/trace %s:\ngovs (exit %d):\n%s\nDebian's (exit %d):\n%s", pkt, gotRC, got, wantRC, want)
			}
		})
	}
}
