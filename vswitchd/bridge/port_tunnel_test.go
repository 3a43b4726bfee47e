package bridge

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/govs/govs/netdev/tunnel"
	"github.com/govs/govs/schema/vswitchd"
)

// Tunnel options are read as OVS's set_tunnel_config: a port without a
// usable remote_ip or with inconsistent addresses is refused with OVS's
// text; options it cannot use are warned about and ignored.
func TestTunnelParse(t *testing.T) {
	for _, tt := range []struct {
		typ      string
		opts     map[string]string
		err      string
		problems []string
	}{
		{"vxlan", map[string]string{"remote_ip": "10.0.0.2", "key": "5"}, "", nil},
		{"vxlan", map[string]string{"key": "5"}, "t0: vxlan type requires valid 'remote_ip' argument", nil},
		{"geneve", map[string]string{"remote_ip": "x"}, "t0: geneve type requires valid 'remote_ip' argument", []string{"t0: bad geneve 'remote_ip'"}},
		{"gre", map[string]string{"remote_ip": "10.0.0.2", "local_ip": "flow"}, "t0: gre type requires 'remote_ip=flow' with 'local_ip=flow'", nil},
		{"vxlan", map[string]string{"remote_ip": "10.0.0.2", "local_ip": "2001:db8::1"}, "t0: 'remote_ip' and 'local_ip' has to be of the same address family", nil},
		{"vxlan", map[string]string{"remote_ip": "224.0.0.1"}, "t0: vxlan type requires valid 'remote_ip' argument", []string{"t0: multicast remote_ip=224.0.0.1 not allowed"}},
		{"vxlan", map[string]string{"remote_ip": "flow", "tos": "3", "foo": "1"}, "", []string{"t0: invalid TOS 3", "t0: unknown vxlan argument 'foo'"}},
		{"gre", map[string]string{"remote_ip": "10.0.0.2", "dst_port": "1"}, "", []string{"t0: unknown gre argument 'dst_port'"}},
		{"geneve", map[string]string{"remote_ip": "10.0.0.2", "tos": "inherit", "ttl": "inherit", "egress_pkt_mark": "5"}, "", nil},
		// packet_type as OVS's set_tunnel_config: legacy_l2 wherever L2
		// is carried, legacy_l3 on GRE (and VXLAN-GPE), OVS's texts
		// otherwise, checked before remote_ip; ptap refused.
		{"gre", map[string]string{"remote_ip": "10.0.0.2", "packet_type": "legacy_l2"}, "", nil},
		{"vxlan", map[string]string{"remote_ip": "10.0.0.2", "packet_type": "legacy_l2"}, "", nil},
		{"geneve", map[string]string{"remote_ip": "10.0.0.2", "packet_type": "legacy_l2"}, "", nil},
		{"vxlan", map[string]string{"remote_ip": "10.0.0.2", "packet_type": "legacy_l3"}, "t0: legacy_l3 configured on VXLAN (without GPE) tunnel that cannot carry L3 traffic", nil},
		{"vxlan", map[string]string{"remote_ip": "10.0.0.2", "exts": "gpe", "packet_type": "legacy_l3"}, "t0: options:exts=gpe (VXLAN-GPE) is not supported by govs", nil},
		{"geneve", map[string]string{"packet_type": "legacy_l3"}, "t0: legacy_l3 configured on geneve tunnel that cannot carry L3 traffic", nil},
		{"gre", map[string]string{"packet_type": "l3"}, "t0: unknown packet_type 'l3'", nil},
		{"vxlan", map[string]string{"remote_ip": "10.0.0.2", "packet_type": ""}, "t0: unknown packet_type ''", nil},
		{"geneve", map[string]string{"remote_ip": "10.0.0.2", "packet_type": "ptap"}, "t0: options:packet_type=ptap is not supported by govs", nil},
		{"gre", map[string]string{"remote_ip": "10.0.0.2", "packet_type": "ptap"}, "t0: options:packet_type=ptap is not supported by govs", nil},
		// exts: VXLAN's gbp runs, gpe refuses the port, others warn;
		// not a key of other types.
		{"vxlan", map[string]string{"remote_ip": "10.0.0.2", "exts": "gbp,,foo"}, "", []string{"t0: unknown extension 'foo'"}},
		{"vxlan", map[string]string{"remote_ip": "10.0.0.2", "exts": "gbp,gpe"}, "t0: options:exts=gpe (VXLAN-GPE) is not supported by govs", nil},
		{"geneve", map[string]string{"remote_ip": "10.0.0.2", "exts": "gbp"}, "", []string{"t0: unknown geneve argument 'exts'"}},
	} {
		spec := IfaceSpec{Name: "t0", Type: tt.typ, Options: tt.opts}
		var problems []string
		err := driverOf(tt.typ).parse(&spec, parseEnv{}, &problems)
		slices.Sort(problems)
		if err != tt.err || !slices.Equal(problems, tt.problems) {
			t.Errorf("%s %v: error %q problems %q, want %q %q", tt.typ, tt.opts, err, problems, tt.err, tt.problems)
		}
		if err == "" && spec.Tunnel == nil {
			t.Errorf("%s %v: no tunnel configuration", tt.typ, tt.opts)
		}
	}
	// egress_pkt_mark is read as OVS's strtoul(value, NULL, 10).
	for v, want := range map[string]uint32{"5": 5, "4294967295": 0xffffffff, " 12abc": 12, "0x10": 0, "x": 0, "-1": 0xffffffff,
		"99999999999999999999": 0xffffffff, "-99999999999999999999": 0xffffffff, "4294967296": 0} {
		spec := IfaceSpec{Name: "t0", Type: "gre", Options: map[string]string{"remote_ip": "10.0.0.2", "egress_pkt_mark": v}}
		var problems []string
		driverOf("gre").parse(&spec, parseEnv{}, &problems)
		if c := spec.Tunnel; c == nil || !c.SetEgressPktMark || c.EgressPktMark != want || len(problems) != 0 {
			t.Errorf("egress_pkt_mark=%q: %+v %q, want mark %d", v, c, problems, want)
		}
	}
	spec := IfaceSpec{Name: "t0", Type: "vxlan", Options: map[string]string{"remote_ip": "10.0.0.2", "in_key": "flow", "out_key": "0x10"}}
	var problems []string
	driverOf("vxlan").parse(&spec, parseEnv{}, &problems)
	if c := spec.Tunnel; !c.InKeyFlow || c.OutKey != 16 || c.DstPort != 4789 {
		t.Errorf("keys and port: %+v", c)
	}
	for exts, want := range map[string]bool{"gbp": true, "foo,gbp": true, "": false, "gpe2": false} {
		spec = IfaceSpec{Name: "t0", Type: "vxlan", Options: map[string]string{"remote_ip": "10.0.0.2", "exts": exts}}
		driverOf("vxlan").parse(&spec, parseEnv{}, &problems)
		if spec.Tunnel.GBP != want {
			t.Errorf("exts=%s: GBP %v, want %v", exts, spec.Tunnel.GBP, want)
		}
	}
	for pt, want := range map[string]bool{"legacy_l3": true, "legacy_l2": false, "": false} {
		opts := map[string]string{"remote_ip": "10.0.0.2"}
		if pt != "" {
			opts["packet_type"] = pt
		}
		spec = IfaceSpec{Name: "t0", Type: "gre", Options: opts}
		if err := driverOf("gre").parse(&spec, parseEnv{}, &problems); err != "" || spec.Tunnel.L3 != want {
			t.Errorf("gre packet_type=%q: %q L3 %v, want %v", pt, err, spec.Tunnel != nil && spec.Tunnel.L3, want)
		}
	}
	spec = IfaceSpec{Name: "t0", Type: "geneve", Options: map[string]string{"remote_ip": "10.0.0.2", "tos": "inherit", "ttl": "inherit"}}
	driverOf("geneve").parse(&spec, parseEnv{}, &problems)
	if c := spec.Tunnel; !c.TOSInherit || !c.TTLInherit {
		t.Errorf("tos and ttl inherit: %+v", c)
	}
}

// other_config:tunnel-udp-gso (govs' own) turns UDP GSO on for a VXLAN or
// Geneve tunnel; GRE has no UDP and ignores it; a value other than true
// or false is reported and leaves it off.
func TestTunnelUDPGSOOption(t *testing.T) {
	for _, tt := range []struct {
		typ, v   string
		want     bool
		problems int
	}{
		{"geneve", "true", true, 0},
		{"vxlan", "true", true, 0},
		{"vxlan", "false", false, 0},
		{"gre", "true", false, 1}, // reported: no effect on GRE
		{"gre", "false", false, 0},
		{"geneve", "yes", false, 1},
		{"geneve", "", false, 1},
	} {
		row := vswitchd.Interface{Name: "t0", Type: tt.typ, Options: map[string]string{"remote_ip": "10.0.0.2"},
			OtherConfig: map[string]string{KeyTunnelUDPGSO: tt.v}}
		var problems []string
		spec := ifaceSpec(row, &problems)
		if err := driverOf(tt.typ).parse(&spec, parseEnv{}, &problems); err != "" {
			t.Fatal(err)
		}
		if spec.Tunnel.UDPGSO != tt.want || len(problems) != tt.problems {
			t.Errorf("%s tunnel-udp-gso=%q: %v, problems %q; want %v and %d", tt.typ, tt.v, spec.Tunnel.UDPGSO, problems, tt.want, tt.problems)
		}
	}
	spec := IfaceSpec{Name: "t0", Type: "geneve", Options: map[string]string{"remote_ip": "10.0.0.2"}}
	var problems []string
	driverOf("geneve").parse(&spec, parseEnv{}, &problems)
	if spec.Tunnel.UDPGSO {
		t.Error("tunnel-udp-gso on by default")
	}
}

// tunnel-udp-gso on an interface that is not a VXLAN or Geneve tunnel is
// reported, not silently ignored.
func TestTunnelUDPGSOOtherTypes(t *testing.T) {
	for _, typ := range []string{"", "internal", "tap"} {
		var problems []string
		ifaceSpec(vswitchd.Interface{Name: "p0", Type: typ, OtherConfig: map[string]string{KeyTunnelUDPGSO: "true"}}, &problems)
		if len(problems) != 1 || !strings.Contains(problems[0], "has no effect") {
			t.Errorf("type %q: problems %q, want one saying it has no effect", typ, problems)
		}
	}
}

// tnl/ports/show lists the vports as OVS's (no padding); -v (in any case)
// gives one line per vport and local route of the route table, the match
// ofproto's terminates applies, in dpctl's format; any other argument is
// ignored, as by OVS.
func TestTunnelPortsShow(t *testing.T) {
	h := newHarness()
	devs := map[string][]netip.Prefix{
		"br-phy": {netip.MustParsePrefix("172.31.0.1/24"), netip.MustParsePrefix("fd31::1/64")},
		"lo":     {netip.MustParsePrefix("127.0.0.1/8")},
	}
	r := tunnel.NewRouter(func(dev string) ([]netip.Prefix, error) { return devs[dev], nil })
	for _, rt := range []struct {
		dst   string
		local bool
		dev   string
	}{
		{"fd31::1/128", true, "br-phy"},
		{"172.31.0.1/32", true, "br-phy"},
		{"127.0.0.0/8", true, "lo"},
		{"172.31.0.0/24", false, "br-phy"},
	} {
		dst, plen, _, err := tunnel.ParseCIDR(rt.dst)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.InsertKernel(0, dst, plen, rt.local, rt.dev, netip.Addr{}); err != nil {
			t.Fatalf("%s: %v", rt.dst, err)
		}
	}
	h.sw.SetRouter(r)
	var d db
	d.bridge("br-int", "t0:vxlan:remote_ip=172.31.0.2", "t1:geneve:remote_ip=172.31.0.2", "t2:gre:remote_ip=172.31.0.2",
		"t3:vxlan:remote_ip=172.31.0.3")
	h.sw.Apply(Build(d.rows))
	gre := h.sw.vports["gre_sys"]
	if gre == nil {
		t.Fatalf("no gre_sys vport: %v", h.log.lines)
	}
	g := fmt.Sprintf("gre_sys (%d) : ", gre.no)
	brief := "Listening ports:\n" +
		"genev_sys_6081 (6081) ref_cnt=1\n" +
		fmt.Sprintf("gre_sys (%d) ref_cnt=1\n", gre.no) +
		"vxlan_sys_4789 (4789) ref_cnt=2\n"
	verbose := "Listening ports:\n" +
		"genev_sys_6081 (6081) : eth_type(0x0800),ipv4(dst=127.0.0.0/255.0.0.0,proto=17,frag=no),udp(dst=6081)\n" +
		"genev_sys_6081 (6081) : eth_type(0x0800),ipv4(dst=172.31.0.1,proto=17,frag=no),udp(dst=6081)\n" +
		"genev_sys_6081 (6081) : eth_type(0x86dd),ipv6(dst=fd31::1,proto=17,frag=no),udp(dst=6081)\n" +
		g + "eth_type(0x0800),ipv4(dst=127.0.0.0/255.0.0.0,proto=47,frag=no)\n" +
		g + "eth_type(0x0800),ipv4(dst=172.31.0.1,proto=47,frag=no)\n" +
		g + "eth_type(0x86dd),ipv6(dst=fd31::1,proto=47,frag=no)\n" +
		"vxlan_sys_4789 (4789) : eth_type(0x0800),ipv4(dst=127.0.0.0/255.0.0.0,proto=17,frag=no),udp(dst=4789)\n" +
		"vxlan_sys_4789 (4789) : eth_type(0x0800),ipv4(dst=172.31.0.1,proto=17,frag=no),udp(dst=4789)\n" +
		"vxlan_sys_4789 (4789) : eth_type(0x86dd),ipv6(dst=fd31::1,proto=17,frag=no),udp(dst=4789)\n"
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, brief},
		{[]string{"foo"}, brief},
		{[]string{"-v"}, verbose},
		{[]string{"-V"}, verbose},
	} {
		got, err := h.sw.TunnelPortsShow(tt.args)
		if err != nil || got != tt.want {
			t.Errorf("tnl/ports/show %q: %v\n%s\nwant\n%s", tt.args, err, got, tt.want)
		}
	}
}
