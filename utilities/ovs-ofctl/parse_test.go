package main

import (
	"testing"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
	"github.com/govs/govs/vswitchd/ofproto/ofp/ofptext"
)

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
		for _, cmd := range []int{ofptext.ParseAdd, ofptext.ParseModifyStrict, ofptext.ParseDelete, ofptext.ParseDump} {
			fs, err := ofptext.ParseFlow(s, cmd, nil)
			if err != nil || cmd == ofptext.ParseDump {
				continue
			}
			for _, v := range []ofp.Version{ofp.V10, ofp.V13, ofp.V15} {
				fm, err := flowMod(fs, cmd, v)
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
