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
	{"add-flow", "BR", "priority=5,tun_flags=+oam,actions=drop"},
	{"add-flow", "BR", "priority=6,tun_flags=-oam,tun_id=5,actions=drop"},
	{"--sort", "dump-flows", "--no-stats", "BR"},
	{"--sort", "-O", "OpenFlow13", "dump-flows", "--no-stats", "BR"},
	{"--sort", "-O", "OpenFlow15", "dump-flows", "--no-stats", "BR", "tun_flags=+oam"},
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
