package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// tunTraceFlows match on tunnel fields: tun_id, tun_flags and two
// tun_metadata fields of different lengths, one only from the Geneve
// port (OpenFlow port 4).
var tunTraceFlows = []string{
	"priority=10,tun_id=5,actions=output:2",
	"priority=20,tun_metadata0=0xa0001,actions=output:1",
	"priority=30,in_port=4,tun_metadata1=0x1/0xff,actions=output:2",
	"priority=25,tun_flags=+oam,actions=output:1",
	// tun_flags written (its OAM flag), then matched.
	"priority=40,in_port=3,actions=set_field:+oam->tun_flags,resubmit(,1)",
	"priority=45,in_port=4,tun_id=6,actions=load:0->NXM_NX_TUN_FLAGS[0],resubmit(,1)",
	"table=1,priority=10,tun_flags=+oam,actions=output:2",
	// IPv6 tunnels' addresses matched and set; tun_src=172.31.9.3 must
	// not match an IPv6 address ending in ffff:ac1f:903.
	"priority=50,tun_ipv6_src=fd00::2,actions=output:2",
	"priority=50,tun_ipv6_src=fd00::3,tun_ipv6_dst=fd00::1,actions=set_field:fd00::9->tun_ipv6_dst,resubmit(,1)",
	"priority=48,tun_src=172.31.9.3,actions=output:1",
	"priority=47,tun_ipv6_dst=fd00::/64,actions=move:NXM_NX_TUN_IPV6_SRC[0..31]->NXM_NX_REG1[],resubmit(,2)",
	"table=1,priority=20,tun_ipv6_dst=fd00::9,actions=output:2",
	"table=2,priority=20,reg1=0xac1f0903,actions=output:1",
	// VXLAN's Group Based Policy fields matched, set and loaded (tun_id
	// 7 only).
	"priority=60,tun_id=7,actions=resubmit(,3)",
	"table=3,priority=30,tun_gbp_id=77,actions=set_field:88->tun_gbp_id,load:0x8->NXM_NX_TUN_GBP_FLAGS[],resubmit(,4)",
	"table=3,priority=20,tun_gbp_id=0x10/0xf0,actions=move:NXM_NX_TUN_GBP_ID[]->NXM_NX_REG2[0..15],output:2",
	"table=3,priority=10,tun_gbp_flags=0x48,actions=output:1",
	"table=3,priority=5,actions=output:2",
	"table=4,priority=10,tun_gbp_id=88,tun_gbp_flags=0x8,actions=output:2",
	"table=4,priority=5,actions=output:1",
	"table=2,priority=10,actions=output:2",
	"table=1,priority=5,actions=output:1",
	"priority=0,actions=drop",
}

// tunTraceCorpus are ofproto/trace flows with tunnel fields, from the
// Geneve port and from others, with and without an outer destination
// (without one the packet is not from a tunnel: OVS shows no tunnel
// fields), and flows OVS refuses.
var tunTraceCorpus = []string{
	"in_port=4,tun_id=5,tun_src=172.31.9.2,tun_dst=172.31.9.1,dl_src=00:00:00:00:00:01,dl_dst=00:00:00:00:00:02",
	"in_port=4,tun_src=172.31.9.2,tun_dst=172.31.9.1,tun_flags=oam,tun_tos=0x12,tun_ttl=64",
	"in_port=4,tun_src=172.31.9.2,tun_dst=172.31.9.1,tun_metadata0=0xa0001,ip,nw_src=10.0.0.1,nw_dst=10.0.0.2",
	"in_port=4,tun_src=172.31.9.2,tun_dst=172.31.9.1,tun_metadata1=0x201,tun_metadata0=0x123456789",
	"in_port=4,tun_dst=172.31.9.1,tun_tos=0x10,tun_id=0x99,tcp,tp_dst=80",
	"in_port=4,tun_dst=172.31.9.1,tun_metadata1=0x1234",
	"in_port=2,tun_dst=172.31.9.1,tun_metadata5=7",
	"in_port=1,tun_id=5",
	"in_port=4,tun_metadata0=0xa0001",
	"in_port=4,tun_src=172.31.9.2,tun_flags=1",
	"in_port=4,tun_dst=0.0.0.0,tunnel_id=5",
	// ECN (tnl_process_ecn): outer CE with an inner CE, ECT(1), ECT(0),
	// not-ECT (dropped), IPv6, and an outer that is not CE.
	"in_port=4,tun_id=5,tun_src=172.31.9.2,tun_dst=172.31.9.1,tun_tos=3,tcp,nw_ecn=3",
	"in_port=4,tun_id=5,tun_src=172.31.9.2,tun_dst=172.31.9.1,tun_tos=3,tcp,nw_ecn=1",
	"in_port=4,tun_id=5,tun_src=172.31.9.2,tun_dst=172.31.9.1,tun_tos=0xbb,udp,nw_tos=0xb8,nw_ecn=2",
	"in_port=4,tun_id=5,tun_src=172.31.9.2,tun_dst=172.31.9.1,tun_tos=3,tcp,nw_ecn=0",
	"in_port=4,tun_id=5,tun_src=172.31.9.2,tun_dst=172.31.9.1,tun_tos=3,tcp6,nw_ecn=1",
	"in_port=4,tun_id=5,tun_src=172.31.9.2,tun_dst=172.31.9.1,tun_tos=2,tcp,nw_ecn=0",
	"in_port=3,dl_src=00:00:00:00:00:01",
	"in_port=4,tun_id=6,tun_src=172.31.9.2,tun_dst=172.31.9.1,tun_flags=oam",
	"in_port=4,tun_id=6,tun_src=172.31.9.2,tun_dst=172.31.9.1",
	// IPv6 tunnels (tun_ipv6_src, tun_ipv6_dst), and an IPv4 one whose
	// address is the low bytes of an IPv6 one's.
	"in_port=4,tun_ipv6_src=fd00::2,tun_ipv6_dst=fd00::1,dl_src=00:00:00:00:00:01",
	"in_port=4,tun_ipv6_src=fd00::3,tun_ipv6_dst=fd00::1,tun_id=5,ip",
	"in_port=4,tun_ipv6_src=fd00::ffff:ac1f:903,tun_ipv6_dst=fd00::1",
	"in_port=4,tun_ipv6_src=fd00::ffff:ac1f:903,tun_ipv6_dst=fd01::1",
	"in_port=4,tun_src=172.31.9.3,tun_dst=172.31.9.1",
	"in_port=4,tun_ipv6_dst=fd00::1,tun_tos=0x10,tun_ttl=64",
	"in_port=4,tun_ipv6_src=fd00::2/128,tun_ipv6_dst=fd00::1",
	"in_port=4,tun_ipv6_src=fd00::5,tun_ipv6_dst=fd00::1,tun_metadata0=0xa0001",
	"in_port=1,tun_ipv6_src=fd00::2",
	"in_port=4,tun_src=172.31.9.2,tun_ipv6_dst=fd00::1",
	// Group Based Policy: an exact, a masked and a flags rule, none.
	"in_port=4,tun_id=7,tun_src=172.31.9.2,tun_dst=172.31.9.1,tun_gbp_id=77",
	"in_port=4,tun_id=7,tun_src=172.31.9.2,tun_dst=172.31.9.1,tun_gbp_id=0x1f,tun_gbp_flags=0x40",
	"in_port=4,tun_id=7,tun_src=172.31.9.2,tun_dst=172.31.9.1,tun_gbp_flags=0x48",
	"in_port=4,tun_id=7,tun_src=172.31.9.2,tun_dst=172.31.9.1",
	"in_port=1,tun_id=7,tun_gbp_id=77",
	// Refused.
	"in_port=4,tun_gbp_id=0x10000",
	"in_port=4,tun_ipv6_src=1.2.3.4",
	"in_port=4,tun_ipv6_src=fd00::/64",
	"in_port=4,tun_src=fd00::1",
	"in_port=4,tun_flags=+oam",
	"in_port=4,tun_flags=df",
	"in_port=4,tun_id=0x1/0xff",
	"in_port=4,tun_metadata0=1,tun_metadata0=2",
	"in_port=4,tun_tos=256",
	"in_port=4,tun_id=0x10000000000000000",
	"in_port=4,tun_metadata64=1",
	"in_port=4,tun_metadata0=xyz",
	"in_port=4,tun_src=1.2.3",
}

// traceRC runs ofproto/trace on the switch's bridge and returns its
// output and exit status.
func (s *ofSwitch) traceRC(pkt string) (string, int) {
	s.t.Helper()
	return s.traceArgsRC(s.br, pkt)
}

// traceArgsRC runs ofproto/trace with args as given (options, bridge,
// flow, in any order).
func (s *ofSwitch) traceArgsRC(args ...string) (string, int) {
	s.t.Helper()
	return s.runRC(vswAppctl, append([]string{"--timeout=10", "-t", traceTarget(s), "ofproto/trace"}, args...)...)
}

// traceTarget is ovs-appctl's target for the switch's ovs-vswitchd.
func traceTarget(s *ofSwitch) string {
	if ctl := filepath.Join(s.dir, "ovs-vswitchd.ctl"); fileExists(ctl) {
		return ctl // Debian's switch, started with --unixctl
	}
	return "ovs-vswitchd"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// tunTraceDPActions is ofproto/trace's "Datapath actions" line, which
// compareTrace compares with port names for numbers.
var tunTraceDPActions = regexp.MustCompile(`(?m)^Datapath actions: .*$`)

// tunTraceTarget is how ovs-appctl names the switch in its error line:
// each is reached its own way.
var tunTraceTarget = regexp.MustCompile(`(?m)^ovs-appctl: \S+: server returned an error$`)

// tunTraceMegaflowDlDst is dl_dst in a Megaflow line. OVS 3.1 looks up
// every output in its native tunnel port map (terminate_native_tunnel),
// which reads dl_dst; govs does only for output to a LOCAL port. That
// is not about the tunnel fields traced here and is left out.
var tunTraceMegaflowDlDst = regexp.MustCompile(`(?m)^(Megaflow: .*)dl_dst=[^,]*,`)

// tunTraceNormalize removes what differs between the switches' traces
// for reasons of their own: datapath port numbers, the appctl target,
// the megaflow's dl_dst (above).
func tunTraceNormalize(s *ofSwitch, out string) string {
	out = tunTraceDPActions.ReplaceAllString(s.normalizeOfctl(out), "Datapath actions: A")
	out = tunTraceMegaflowDlDst.ReplaceAllString(out, "$1")
	return tunTraceTarget.ReplaceAllString(out, "ovs-appctl: T: server returned an error")
}

// TestOpenFlowTunnelTraceDifferential: ofproto/trace of flows with
// tunnel fields (issue 12) prints Flow:, the rules, Final flow: and
// Megaflow: as Debian's ovs-vswitchd does, with the same datapath
// actions, and refuses the same flows with the same error.
func TestOpenFlowTunnelTraceDifferential(t *testing.T) {
	deb, govs := startSwitchPair(t, "gttd", "10.236.0", "gtto", "10.237.0")
	for _, s := range []*ofSwitch{deb, govs} {
		tun := s.br + "g"
		s.names[tun] = "G"
		s.vsctl("add-port", s.br, tun, "--", "set", "interface", tun, "type=geneve",
			"options:remote_ip=172.31.9.2", "options:key=flow", "ofport_request=4")
		if out, rc := s.ofctl("add-tlv-map", s.br, "{class=0x102,type=0x80,len=4}->tun_metadata0,{class=0xffff,type=1,len=8}->tun_metadata1"); rc != 0 {
			t.Fatalf("add-tlv-map: %s", out)
		}
		s.replaceFlows(tunTraceFlows...)
	}
	for i, pkt := range tunTraceCorpus {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
			want, wantRC := deb.traceRC(pkt)
			got, gotRC := govs.traceRC(pkt)
			if wantRC == 0 {
				compareTrace(t, deb, govs, "", pkt)
			}
			want, got = tunTraceNormalize(deb, want), tunTraceNormalize(govs, got)
			if got != want || gotRC != wantRC {
				t.Errorf("ofproto/trace %s:\ngovs (exit %d):\n%s\nDebian's (exit %d):\n%s", pkt, gotRC, got, wantRC, want)
			}
		})
	}

	// ofproto/list-tunnels: each tunnel port's options as OVS's
	// tnl_port_format writes them; datapath port numbers differ (govs'
	// tunnels of a kind and UDP port share one vport), sorted by name.
	listTunnels := func(s *ofSwitch) string {
		for _, o := range [][]string{
			{"v", "type=vxlan", "options:remote_ip=flow", "options:local_ip=flow", "options:key=flow", "options:tos=inherit"},
			{"r", "type=gre", "options:remote_ip=fd00::2", "options:local_ip=fd00::1", "options:ttl=9", "options:out_key=0"},
			{"h", "type=geneve", "options:remote_ip=flow", "options:in_key=7", "options:out_key=flow", "options:ttl=inherit",
				"options:tos=0x20", "options:df_default=false", "options:csum=true", "options:dst_port=6082"},
		} {
			tun := s.br + o[0]
			s.names[tun] = strings.ToUpper(o[0])
			s.vsctl(append([]string{"--may-exist", "add-port", s.br, tun, "--", "set", "interface", tun}, o[1:]...)...)
		}
		var lines []string
		vswWait(t, vswTimeout, "4 tunnels in ofproto/list-tunnels", func() bool {
			out, _ := s.runRC(vswAppctl, "--timeout=10", "-t", traceTarget(s), "ofproto/list-tunnels")
			lines = strings.Split(strings.TrimSpace(s.normalizeOfctl(out)), "\n")
			return len(lines) == 4
		})
		for i, l := range lines {
			lines[i] = regexp.MustCompile(`port( |=)\d+`).ReplaceAllString(l, "port${1}N")
		}
		slices.SortFunc(lines, func(a, b string) int { return strings.Compare(a[strings.Index(a, ":"):], b[strings.Index(b, ":"):]) })
		return strings.Join(lines, "\n")
	}
	if got, want := listTunnels(govs), listTunnels(deb); got != want {
		t.Errorf("ofproto/list-tunnels:\ngovs:\n%s\nDebian's:\n%s", got, want)
	}
}

// TestOpenFlowTunnelPacketIn: a packet-in carries the tunnel fields its
// flow set (tun_id, tun_src, tun_dst, tun_metadata as long as its
// mapping; tun_ipv6_src, tun_ipv6_dst; tun_gbp_id, tun_gbp_flags) in its metadata as Debian's ovs-vswitchd sends them, in
// NXT_PACKET_IN2 and OpenFlow 1.3's PACKET_IN (issue 15).
func TestOpenFlowTunnelPacketIn(t *testing.T) {
	deb, govs := startSwitchPair(t, "gtpd", "10.77.0", "gtpo", "10.77.0")
	for _, s := range []*ofSwitch{deb, govs} {
		s.a.mustExec("ip", "link", "set", "eth0", "address", "02:00:00:77:00:01")
		if out, rc := s.ofctl("add-tlv-map", s.br, "{class=0x102,type=0x80,len=4}->tun_metadata0,{class=0xffff,type=1,len=8}->tun_metadata1"); rc != 0 {
			t.Fatalf("add-tlv-map: %s", out)
		}
	}
	for _, c := range []struct{ what, actions string }{
		{"Geneve", "set_field:0xa0001->tun_metadata0,set_field:0x1234->tun_metadata1,set_field:5->tun_id," +
			"set_field:172.31.9.2->tun_src,set_field:172.31.9.1->tun_dst"},
		// A VXLAN Group Based Policy's: tun_gbp_id and tun_gbp_flags.
		{"GBP", "set_field:5->tun_id,set_field:172.31.9.2->tun_src,set_field:172.31.9.1->tun_dst," +
			"set_field:77->tun_gbp_id,set_field:0x8->tun_gbp_flags"},
		// An IPv6 tunnel's: tun_ipv6_src and tun_ipv6_dst.
		{"IPv6 tunnel", "set_field:5->tun_id,set_field:fd00::2->tun_ipv6_src,set_field:fd00::1->tun_ipv6_dst"},
	} {
		for _, s := range []*ofSwitch{deb, govs} {
			// The namespace's other packets (IPv6 neighbour discovery)
			// would reach the monitor as misses.
			s.replaceFlows("arp,actions="+c.actions+",controller", "priority=0,actions=drop")
		}
		for _, args := range [][]string{{"-P", "nxt_packet_in2"}, {"-O", "OpenFlow13"}} {
			want := deb.firstPacketIn(args...)
			got := govs.firstPacketIn(args...)
			if got != want {
				t.Errorf("%s, monitor %v: govs:\n%s\nDebian's ovs-vswitchd:\n%s", c.what, args, got, want)
			}
			t.Logf("%s, monitor %v:\n%s", c.what, args, got)
		}
	}
}

// TestOpenFlowTunnelResume: NXT_RESUME gives the flow back the tunnel
// fields the packet-in reported. The flow pauses after setting them;
// `ovs-ofctl monitor BR resume` sends each paused packet-in back, and
// the table the rest resubmits to matches on them: its flow counts
// packets in govs as in Debian's ovs-vswitchd.
func TestOpenFlowTunnelResume(t *testing.T) {
	deb, govs := startSwitchPair(t, "gtrd", "10.77.0", "gtro", "10.77.0")
	for _, s := range []*ofSwitch{deb, govs} {
		if out, rc := s.ofctl("add-tlv-map", s.br, "{class=0x102,type=0x80,len=4}->tun_metadata0"); rc != 0 {
			t.Fatalf("add-tlv-map: %s", out)
		}
		s.replaceFlows("arp,actions=set_field:0xa0001->tun_metadata0,set_field:5->tun_id,set_field:172.31.9.1->tun_dst,"+
			"controller(pause),resubmit(,5)",
			"table=5,tun_id=5,tun_dst=172.31.9.1,tun_metadata0=0xa0001,actions=drop")
		mon := exec.Command(vswOfctl, "-P", "nxt_packet_in2", "monitor", s.br, "65534", "resume")
		mon.Env = append(os.Environ(), "OVS_RUNDIR="+s.dir)
		ping := exec.Command("ip", "netns", "exec", s.a.Name, "ping", "-q", "-n", "-i", "0.2", "10.77.0.9")
		for _, p := range []*exec.Cmd{mon, ping} {
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				p.Process.Signal(syscall.SIGTERM)
				p.Wait()
			})
		}
		vswWait(t, vswTimeout, "the resumed packets to match table 5 of "+s.br, func() bool {
			out, _ := s.ofctl("dump-flows", s.br, "table=5")
			return strings.Contains(out, "n_packets=") && !strings.Contains(out, "n_packets=0,")
		})
	}
}
