package tests

import (
	"testing"
)

// tlvCommands are ovs-ofctl commands on the Geneve option map (and flows
// that use it), run in order against govs and Debian's ovs-vswitchd.
var tlvCommands = [][]string{
	{"dump-tlv-map", "BR"},
	{"add-tlv-map", "BR", "{class=0xffff,type=0,len=4}->tun_metadata0"},
	{"add-tlv-map", "BR", "{class=0x0102,type=0x80,len=4}->tun_metadata1,{class=0xffff,type=1,len=8}->tun_metadata5"},
	{"-O", "OpenFlow13", "dump-tlv-map", "BR"},
	{"add-tlv-map", "BR", "{class=0xffff,type=0,len=4}->tun_metadata2"},
	{"add-tlv-map", "BR", "{class=0xffff,type=9,len=4}->tun_metadata0"},
	{"add-tlv-map", "BR", "{class=0xffff,type=9,len=4}->tun_metadata9,{class=0xffff,type=9,len=4}->tun_metadata10"},
	{"add-tlv-map", "BR", "{class=0xffff,type=9,len=4}->tun_metadata9,{class=0xffff,type=10,len=4}->tun_metadata9"},
	{"add-tlv-map", "BR", "{class=0xffff,type=9,len=124}->tun_metadata9,{class=0xffff,type=10,len=124}->tun_metadata10"},
	{"add-tlv-map", "BR", "{class=0xffff,type=9,len=3}->tun_metadata9"},
	{"add-tlv-map", "BR", "{class=0xffff,type=9,len=128}->tun_metadata9"},
	{"add-tlv-map", "BR", "{class=0xffff,type=9,len=4}->tun_metadata64"},
	{"-O", "OpenFlow15", "dump-tlv-map", "BR"},
	{"del-tlv-map", "BR", "{class=0xffff,type=0,len=4}->tun_metadata3"},
	{"del-tlv-map", "BR", "{class=0xffff,type=0,len=4}->tun_metadata0"},
	{"dump-tlv-map", "BR"},
	{"add-tlv-map", "BR", "{class=0xffff,type=7,len=120}->tun_metadata7"},
	{"add-tlv-map", "BR", "{class=0xffff,type=8,len=124}->tun_metadata8"},
	{"dump-tlv-map", "BR"},
	{"del-tlv-map", "BR"},
	{"dump-tlv-map", "BR"},
	{"del-tlv-map", "BR"},
	// Unmapped tun_metadata fields (tun_metadata0 is mapped above):
	// NXFMFC_INVALID_TLV_FIELD in matches and actions.
	{"add-tlv-map", "BR", "{class=0xffff,type=0,len=4}->tun_metadata0"},
	{"add-flow", "BR", "tun_metadata7=1,actions=drop"},
	{"-O", "OpenFlow13", "add-flow", "BR", "tun_metadata7=1/0xff,actions=drop"},
	{"-O", "OpenFlow15", "add-flow", "BR", "actions=set_field:5->tun_metadata8"},
	{"add-flow", "BR", "actions=load:5->tun_metadata9[0..7]"},
	{"add-flow", "BR", "actions=move:tun_metadata10[0..7]->NXM_NX_REG0[0..7]"},
	{"-O", "OpenFlow13", "add-flow", "BR", "actions=move:NXM_NX_REG0[0..7]->tun_metadata11[0..7]"},
	// Mapped ones: matches (exact, masked, too long), set_field, load,
	// move from and to, and the mapping in use cannot be deleted.
	{"add-flow", "BR", "priority=7,tun_metadata0=0x1234,actions=drop"},
	{"add-flow", "BR", "priority=8,tun_metadata0=0x5/0xff,actions=set_field:0xa0001->tun_metadata0"},
	{"add-flow", "BR", "priority=9,actions=load:0x5->NXM_NX_TUN_METADATA0[0..7],move:NXM_NX_TUN_METADATA0[16..30]->NXM_NX_REG14[0..14]"},
	{"-O", "OpenFlow15", "add-flow", "BR", "priority=10,tun_metadata0=0x10000/0xffff0000,actions=move:NXM_NX_REG0[0..15]->NXM_NX_TUN_METADATA0[0..15]"},
	{"add-flow", "BR", "priority=11,tun_metadata0=0x123456789,actions=drop"},
	{"add-flow", "BR", "priority=12,actions=move:NXM_NX_TUN_METADATA0[16..40]->NXM_NX_XXREG0[0..24]"},
	{"add-flow", "BR", "priority=13,tun_metadata0=0xa0001/0xffffff,actions=drop"},
	{"del-tlv-map", "BR", "{class=0xffff,type=0,len=4}->tun_metadata0"},
	{"add-flow", "BR", "priority=5,tun_flags=+oam,actions=drop"},
	{"add-flow", "BR", "priority=6,tun_flags=-oam,tun_id=5,actions=drop"},
	{"--sort", "dump-flows", "--no-stats", "BR"},
	{"--sort", "-O", "OpenFlow13", "dump-flows", "--no-stats", "BR"},
	{"--sort", "-O", "OpenFlow15", "dump-flows", "--no-stats", "BR", "tun_flags=+oam"},
	{"--sort", "dump-flows", "--no-stats", "BR", "tun_metadata0=0x5/0xff"},
	{"-O", "OpenFlow13", "dump-aggregate", "BR", "tun_metadata0=0x1234"},
	{"dump-flows", "--no-stats", "BR", "tun_metadata3=0x1234"},
	// learn with tun_metadata: unmapped (NXFMFC_INVALID_TLV_FIELD), bits
	// beyond the mapping (OFPBAC_BAD_SET_LEN); mapped: matches from the
	// field, a register and an immediate, loads, and what a packet-out
	// through them learns (OVS keeps a learned match as long as its
	// value and mask need).
	{"add-tlv-map", "BR", "{class=0xffff,type=1,len=8}->tun_metadata1"},
	{"add-flow", "BR", "table=5,priority=4,actions=learn(table=6,NXM_NX_TUN_METADATA7[0..31])"},
	{"add-flow", "BR", "table=5,priority=5,actions=learn(table=6,load:0x7->NXM_NX_TUN_METADATA3[0..7])"},
	{"add-flow", "BR", "table=5,priority=6,actions=learn(table=6,tun_metadata0=0x1234,output:NXM_NX_TUN_METADATA0[0..15])"},
	{"add-flow", "BR", "table=5,priority=8,actions=learn(table=6,NXM_NX_TUN_METADATA0[32..63])"},
	{"add-flow", "BR", "table=5,priority=1,actions=learn(table=6,NXM_NX_TUN_METADATA0[0..31],load:NXM_NX_TUN_METADATA0[0..31]->NXM_NX_REG1[])," +
		"learn(table=6,priority=2,NXM_NX_TUN_METADATA0[0..15]=0x5,load:NXM_NX_REG0[]->NXM_NX_TUN_METADATA0[0..31])," +
		"learn(table=6,priority=3,load:0x7->NXM_NX_TUN_METADATA0[0..31],NXM_NX_TUN_METADATA1[0..15]=0x1)," +
		"learn(table=6,priority=7,NXM_NX_TUN_METADATA0[0..31]=NXM_NX_REG2[],NXM_NX_TUN_METADATA1[16..47]=NXM_NX_REG0[])"},
	{"add-flow", "BR", "priority=100,in_port=LOCAL,actions=set_field:0x77->reg0,set_field:0x88->reg2,resubmit(,5)"},
	{"--sort", "-O", "OpenFlow15", "dump-flows", "--no-stats", "BR", "table=5"},
	{"packet-out", "BR", "LOCAL", "table", "ffffffffffff00000000000108004500001c00010000401100000a0000010a000002003500350008000000"},
	{"--sort", "dump-flows", "--no-stats", "BR", "table=6"},
	{"--sort", "-O", "OpenFlow13", "dump-flows", "--no-stats", "BR", "table=6"},
}

// TestOpenFlowTLVDifferential: add-tlv-map, del-tlv-map and dump-tlv-map
// answer as Debian's ovs-vswitchd does, errors included.
func TestOpenFlowTLVDifferential(t *testing.T) {
	deb := startDebianSwitch(t)
	govs := startGovsSwitch(t)
	for _, s := range []*ofSwitch{deb, govs} {
		s.br = "gotlv0"
		s.names = map[string]string{s.br: "BR"}
		s.vsctl("add-br", s.br, "--", "set", "bridge", s.br, "datapath_type=netdev")
	}
	for i, args := range tlvCommands {
		run := func(s *ofSwitch) (string, int) {
			a := append([]string(nil), args...)
			for j := range a {
				if a[j] == "BR" {
					a[j] = s.br
				}
			}
			out, rc := s.ofctl(a...)
			return s.normalizeOfctl(out), rc
		}
		want, wantRC := run(deb)
		got, gotRC := run(govs)
		if got != want || gotRC != wantRC {
			t.Errorf("%d: ovs-ofctl %q: govs (exit %d):\n%s\nDebian's ovs-vswitchd (exit %d):\n%s", i, args, gotRC, got, wantRC, want)
		}
	}
}
