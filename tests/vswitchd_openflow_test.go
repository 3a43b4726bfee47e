package tests

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// OpenFlow on govs' bridges, judged by Debian's ovs-ofctl against Debian's
// ovs-vswitchd running the same set-up side by side.

const vswOfctl = "/usr/bin/ovs-ofctl"

// ofSwitch is one switch under test: its rundir (where <bridge>.mgmt
// is), its bridge and the names of its ports, mapped to neutral names for
// comparison.
type ofSwitch struct {
	t      *testing.T
	dir    string
	vsctl  func(args ...string) string
	appctl func(args ...string) string
	br     string
	names  map[string]string // interface name -> neutral name
	a, b   *vswNS
	intf   string
}

// ofctl runs ovs-ofctl against the switch and returns its output and exit
// status.
func (s *ofSwitch) ofctl(args ...string) (string, int) {
	s.t.Helper()
	return s.runRC(vswOfctl, args...)
}

// runRC runs a tool with OVS_RUNDIR set to the switch's rundir and
// returns its output and exit status; it fails the test if the tool could
// not run at all.
func (s *ofSwitch) runRC(name string, args ...string) (string, int) {
	s.t.Helper()
	out, err := vswRunEnv([]string{"OVS_RUNDIR=" + s.dir}, name, args...)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out, 0
	case errors.As(err, &exit):
		return out, exit.ExitCode()
	}
	s.t.Fatalf("%s %v: %v", filepath.Base(name), args, err)
	return "", 0
}

// setUp builds the set-up both switches run: bridge <prefix>0 (netdev)
// with the veths of namespaces a and b as OpenFlow ports 1 and 2 and
// internal port <prefix>i as 3, every port up.
func (s *ofSwitch) setUp(prefix, subnet string) {
	s.t.Helper()
	s.br, s.intf = prefix+"0", prefix+"i"
	s.a = vswAddPrefixedNS(s.t, prefix, "a", subnet+".1/24")
	s.b = vswAddPrefixedNS(s.t, prefix, "b", subnet+".2/24")
	s.names = map[string]string{s.br: "BR", s.a.Host: "A", s.b.Host: "B", s.intf: "I"}
	s.vsctl("add-br", s.br, "--", "set", "bridge", s.br, "datapath_type=netdev",
		"--", "add-port", s.br, s.a.Host, "--", "set", "interface", s.a.Host, "ofport_request=1",
		"--", "add-port", s.br, s.b.Host, "--", "set", "interface", s.b.Host, "ofport_request=2",
		"--", "add-port", s.br, s.intf, "--", "set", "interface", s.intf, "type=internal", "ofport_request=3")
	// OVS leaves internal ports down; govs brings them up. Up on both.
	for _, dev := range []string{s.br, s.intf} {
		if _, err := vswRun("ip", "link", "set", dev, "up"); err != nil {
			s.t.Fatal(err)
		}
	}
	vswWait(s.t, vswTimeout, s.br+"'s ports to be up in OpenFlow", func() bool {
		out, rc := s.ofctl("-O", "OpenFlow13", "dump-ports-desc", s.br)
		return rc == 0 && strings.Count(out, "state:      LIVE") == 4
	})
}

// startDebianSwitch runs Debian's ovsdb-server and ovs-vswitchd in a
// temporary rundir of their own, passing extra to ovs-vswitchd.
func startDebianSwitch(t *testing.T, extra ...string) *ofSwitch {
	t.Helper()
	vswNeedRoot(t)
	for _, p := range []string{"/usr/sbin/ovs-vswitchd", vswOfctl} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: install openvswitch-switch", p)
		}
	}
	dir, err := os.MkdirTemp("", "gofd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(dir, "ovs-vswitchd.log")); err == nil {
				t.Logf("Debian's ovs-vswitchd.log:\n%s", vswTail(string(b), 30))
			}
		}
		os.RemoveAll(dir)
	})
	env := []string{"OVS_RUNDIR=" + dir, "OVS_DBDIR=" + dir, "OVS_LOGDIR=" + dir}
	sock := filepath.Join(dir, "db.sock")
	if _, err := vswRun("ovsdb-tool", "create", filepath.Join(dir, "conf.db"), vswSchema); err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		name string
		args []string
		exit []string
	}{
		{"ovsdb-server", []string{filepath.Join(dir, "conf.db"), "--remote=punix:" + sock}, []string{"exit"}},
		{"ovs-vswitchd", append([]string{"unix:" + sock}, extra...), []string{"exit", "--cleanup"}},
	} {
		pidfile := filepath.Join(dir, d.name+".pid")
		args := append(d.args, "--pidfile="+pidfile, "--unixctl="+filepath.Join(dir, d.name+".ctl"),
			"--log-file="+filepath.Join(dir, d.name+".log"), "--detach", "--no-chdir", "-vconsole:off")
		if _, err := vswRunEnv(env, "/usr/sbin/"+d.name, args...); err != nil {
			t.Fatal(err)
		}
		pid := vswReadPid(pidfile)
		if pid <= 0 {
			t.Fatalf("Debian's %s --detach returned without a pidfile", d.name)
		}
		// Cleanups run last-in first-out: the switch stops before the
		// database, removing its bridges' devices.
		t.Cleanup(func() {
			vswRunEnv(env, vswAppctl, append([]string{"-t", filepath.Join(dir, d.name+".ctl")}, d.exit...)...)
			vswWaitGone(t, pid)
			vswKill(t, pid)
		})
		if d.name == "ovsdb-server" {
			if _, err := vswRun(vswVsctl, "--db=unix:"+sock, "--no-wait", "init"); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := &ofSwitch{t: t, dir: dir}
	s.appctl = func(args ...string) string {
		t.Helper()
		out, err := vswRunEnv(env, vswAppctl, append([]string{"-t", filepath.Join(dir, "ovs-vswitchd.ctl")}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	s.vsctl = func(args ...string) string {
		t.Helper()
		out, err := vswRun(vswVsctl, append([]string{"--db=unix:" + sock, "--timeout=20"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	return s
}

func startGovsSwitch(t *testing.T) *ofSwitch {
	t.Helper()
	e := vswNewEnv(t)
	return &ofSwitch{t: t, dir: e.dir, vsctl: e.mustVsctl, appctl: func(args ...string) string { return e.mustAppctl(args...) }}
}

// dpPortNames maps the switch's datapath port numbers to port names.
func (s *ofSwitch) dpPortNames() map[string]string {
	s.t.Helper()
	names := map[string]string{}
	for _, m := range regexp.MustCompile(`(\S+) (?:\d+|LOCAL)/(\d+):`).FindAllStringSubmatch(s.appctl("dpif/show"), -1) {
		names[m[2]] = m[1]
	}
	return names
}

// traceActions returns the "Datapath actions" of ofproto/trace of pkt,
// with datapath port numbers replaced by neutral port names.
func (s *ofSwitch) traceActions(pkt string) string {
	s.t.Helper()
	line, names := s.traceLine(pkt)
	parts := strings.Split(line, ",")
	for i, p := range parts {
		if n, ok := names[p]; ok {
			parts[i] = n
		}
	}
	return s.normalizeOfctl(strings.Join(parts, ","))
}

// traceLine returns the "Datapath actions" of ofproto/trace of pkt and
// the switch's datapath port names by number.
func (s *ofSwitch) traceLine(pkt string) (string, map[string]string) {
	s.t.Helper()
	names := s.dpPortNames()
	out := s.appctl("ofproto/trace", s.br, pkt)
	m := regexp.MustCompile(`(?m)^Datapath actions: (.*)$`).FindStringSubmatch(out)
	if m == nil {
		s.t.Fatalf("ofproto/trace %s:\n%s", pkt, out)
	}
	return m[1], names
}

var ofNormalizers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`dpid:[0-9a-f]{16}`), "dpid:D"},
	// ovs-ofctl's own log lines (a refused flow mod it decodes back).
	{regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\|`), "TIME|"},
	// What a loaded machine makes ovs-ofctl log about itself: a long
	// poll interval, and the coverage counters it dumps after one.
	{regexp.MustCompile(`(?m)^TIME\|\d+\|(timeval|coverage|poll_loop)\|.*\n`), ""},
	{regexp.MustCompile(`addr:[0-9a-f:]{17}`), "addr:M"},
	{regexp.MustCompile(`duration=[0-9.]+s`), "duration=Ts"},
	{regexp.MustCompile(`\b(n_packets|n_bytes|idle_age|hard_age|lookup|matched|pkts|bytes|drop|errs|frame|over|crc|coll|packet_count|byte_count)=(\d+|\?)`), "$1=N"},
	// hard_age shows when the whole seconds since a change differ from
	// the flow's: a matter of timing.
	{regexp.MustCompile(`hard_age=N, `), ""},
}

// normalizeOfctl removes from ovs-ofctl's output what legitimately
// differs between two switches: addresses, datapath IDs, durations,
// counters, interface names, and the order of dump-ports' port blocks
// (the switch's reply order).
func (s *ofSwitch) normalizeOfctl(out string) string {
	for name, neutral := range s.names {
		out = regexp.MustCompile(`\b`+regexp.QuoteMeta(name)+`\b`).ReplaceAllString(out, neutral)
	}
	for _, n := range ofNormalizers {
		out = n.re.ReplaceAllString(out, n.with)
	}
	lines := strings.Split(out, "\n")
	var blocks []string
	var head, tail []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "  port "):
			blocks = append(blocks, l)
		case len(blocks) > 0 && strings.HasPrefix(l, "           "):
			blocks[len(blocks)-1] += "\n" + l
		case len(blocks) == 0:
			head = append(head, l)
		default:
			tail = append(tail, l)
		}
	}
	slices.Sort(blocks)
	return strings.Join(slices.Concat(head, blocks, tail), "\n")
}

// fieldFlowSteps are TestOpenFlowDifferential's steps for the flows of
// file, all in table (a match "table=N"), that match and set new fields:
// added in OpenFlow 1.3 and dumped in 1.0, 1.3 and 1.5; deleted, added in
// 1.0 and dumped; dumped by match; one deleted strictly by del.
func fieldFlowSteps(file, table, match, del string) [][]string {
	return [][]string{
		{"-O", "OpenFlow13", "add-flows", "BR", file},
		{"--sort", "dump-flows", "BR", table},
		{"-O", "OpenFlow13", "--sort", "dump-flows", "BR", table},
		{"-O", "OpenFlow15", "--sort", "dump-flows", "BR", table},
		{"del-flows", "BR", table},
		{"add-flows", "BR", file},
		{"--sort", "dump-flows", "BR", table},
		{"dump-flows", "BR", match},
		{"--strict", "del-flows", "BR", del},
		{"--sort", "dump-flows", "BR", table},
	}
}

// TestOpenFlowDifferential runs Debian's ovs-ofctl against govs and
// against Debian's ovs-vswitchd, both with a bridge of two veth ports in
// namespaces and an internal port, and requires the same output (once
// normalised) and exit status.
func TestOpenFlowDifferential(t *testing.T) {
	deb := startDebianSwitch(t)
	deb.setUp("gofd", "10.78.0")
	govs := startGovsSwitch(t)
	govs.setUp("gofo", "10.79.0")
	// Some traffic on both, so that counters are not all zero.
	deb.a.waitPing("10.78.0.2")
	govs.a.waitPing("10.79.0.2")

	for _, cmd := range []string{"show", "dump-ports-desc", "dump-flows", "dump-ports", "dump-tables", "dump-desc"} {
		for _, version := range []string{"", "OpenFlow10", "OpenFlow13", "OpenFlow15"} {
			args := []string{cmd}
			name := cmd + "/default"
			if version != "" {
				args = []string{"-O", version, cmd}
				name = cmd + "/" + version
			}
			t.Run(name, func(t *testing.T) {
				want, wantRC := deb.ofctl(append(args, deb.br)...)
				got, gotRC := govs.ofctl(append(args, govs.br)...)
				if gotRC != wantRC {
					t.Errorf("exit status %d, Debian's %d\ngovs:\n%s\nDebian:\n%s", gotRC, wantRC, got, want)
				}
				g, w := govs.normalizeOfctl(got), deb.normalizeOfctl(want)
				if g != w {
					t.Errorf("govs:\n%s\nDebian's ovs-vswitchd:\n%s", g, w)
				}
				t.Logf("compared:\n%s", g)
			})
		}
	}

	// Flow tables: the same commands, the same output and exit status.
	dir := t.TempDir()
	files := map[string]string{
		"flows1": "priority=10,in_port=1,actions=output:2\npriority=10,in_port=2,actions=output:1\n" +
			"cookie=0x10,priority=20,ip,nw_src=10.0.0.1,actions=NORMAL\ncookie=0x11,priority=20,ip,nw_src=10.0.0.2,actions=NORMAL\n" +
			"cookie=0x20,table=1,priority=5,arp,actions=drop\ntable=2,priority=7,tcp,tp_dst=22,actions=drop\n",
		"flows2": "priority=10,in_port=1,actions=output:3\ncookie=0x10,priority=20,ip,nw_src=10.0.0.1,actions=NORMAL\n",
		"flows3": "table=1,priority=100,in_port=1,dl_type=0x0800,nw_dst=10.0.0.0/8,reg3=5,actions=load:7->NXM_NX_REG1[0..15],move:NXM_NX_REG1[]->NXM_NX_REG2[],resubmit(,3),output:2,push_vlan:0x8100,set_field:4106->vlan_vid,goto_table:5\n" +
			"table=2,vlan_tci=0x1005/0x1fff,actions=pop_vlan,output:LOCAL,IN_PORT,FLOOD,ALL\n" +
			"table=3,tcp,tp_dst=80,metadata=0x5/0xff,reg0=1/1,actions=clone(output:1,pop_vlan),write_metadata:0x10/0xf0,goto_table:4\n" +
			"table=4,icmp,icmp_type=8,actions=output:1\ntable=4,udp6,ipv6_src=::1,tp_src=53,actions=output:1\n" +
			"table=4,dl_src=01:00:00:00:00:00/01:00:00:00:00:00,actions=drop\n" +
			"table=5,cookie=0x6,xreg1=0x123,actions=load:0x1->NXM_OF_IN_PORT[],output_reg:NXM_NX_REG2[0..15]\n",
		// IPv6 tunnels' outer addresses matched (exact, prefix, any
		// mask), set, loaded and moved, beside tun_src and tun_dst.
		"tunnel6": "table=9,priority=1,tun_ipv6_src=2001:db8::1,actions=output:2\n" +
			"table=9,priority=2,tun_ipv6_dst=2001:db8::/64,tun_ipv6_src=fd00::5,actions=set_field:2001:db8::9->tun_ipv6_dst,output:2\n" +
			"table=9,priority=3,tun_src=192.0.2.1,tun_ipv6_dst=fd00::/ffff:ffff::ffff,actions=load:0x1->NXM_NX_TUN_IPV6_SRC[0..15],move:NXM_NX_TUN_IPV6_SRC[64..127]->NXM_NX_XXREG1[0..63]\n" +
			"table=9,priority=4,tun_src=192.0.2.0/24,actions=set_field:192.0.2.9->tun_dst,move:NXM_NX_TUN_IPV6_DST[]->NXM_NX_XXREG0[],output:2\n" +
			"table=9,priority=5,tun_dst=192.0.2.7,tun_ipv6_src=::/ffff::,actions=set_field:fd00::1->tun_ipv6_src,output:2\n",
		// VXLAN's Group Based Policy fields matched (exact, masked),
		// set, loaded and moved.
		"gbp": "table=10,priority=1,tun_gbp_id=77,actions=output:2\n" +
			"table=10,priority=2,tun_gbp_id=0x10/0xf0,tun_gbp_flags=0x48,actions=set_field:88->tun_gbp_id,output:2\n" +
			"table=10,priority=3,tun_gbp_flags=0x8/0x8,tun_id=5,actions=set_field:0x40->tun_gbp_flags,load:0x7->NXM_NX_TUN_GBP_ID[0..3],output:2\n" +
			"table=10,priority=4,tun_gbp_id=0,actions=move:NXM_NX_TUN_GBP_ID[]->NXM_NX_REG0[0..15],move:NXM_NX_REG1[0..7]->NXM_NX_TUN_GBP_FLAGS[],output:2\n",
		// VLAN actions in OpenFlow 1.0 and 1.1 forms: a push_vlan
		// before them in 1.1+ only where the flow has no tag.
		"vlan10": "table=6,priority=1,in_port=1,actions=mod_vlan_vid:5,mod_vlan_pcp:2,output:2\n" +
			"table=6,priority=2,in_port=1,dl_vlan=7,actions=mod_vlan_vid:5,output:2\n" +
			"table=6,priority=3,in_port=1,actions=set_field:0x1005->vlan_tci,output:2\n" +
			"table=6,priority=4,in_port=1,actions=set_field:0->vlan_tci,output:2\n" +
			"table=6,priority=5,in_port=1,dl_vlan=3,actions=clone(mod_vlan_vid:8,output:2),strip_vlan,mod_vlan_pcp:1,output:2\n",
		// set_tunnel and set_tunnel64 (NXAST_SET_TUNNEL(64)), as the
		// tunnel flows of OpenStack's OVS agent write them.
		"tunnel": "table=7,priority=1,in_port=1,actions=set_tunnel:0x5,output:2\n" +
			"table=7,priority=2,in_port=1,actions=set_tunnel64:0x6,output:2\n" +
			"table=7,priority=3,in_port=1,actions=set_tunnel:0x100000000,output:2\n" +
			"table=7,priority=4,in_port=1,dl_vlan=3,actions=strip_vlan,set_tunnel:0,output:2\n" +
			"table=7,priority=5,in_port=1,actions=write_actions(set_tunnel:0x7,output:2)\n",
		// set_queue, pop_queue and enqueue: OpenFlow 1.0's enqueue
		// shows as set_queue, output, pop_queue in 1.1+.
		"queue10": "table=8,priority=1,in_port=1,actions=set_queue:5,output:2,pop_queue\n" +
			"table=8,priority=2,in_port=1,dl_vlan=3,actions=enqueue:2:7,enqueue:IN_PORT:1,enqueue:LOCAL:4294967295\n" +
			"table=8,priority=3,in_port=1,actions=clone(set_queue:1,output:2),pop_queue,output:LOCAL\n",
		"queue13": "table=8,priority=4,in_port=1,actions=set_queue:0x10,enqueue:2:3\n" +
			"table=8,priority=5,in_port=1,actions=write_actions(set_queue:9,output:2)\n",
		"vlan11": "table=6,priority=6,in_port=1,actions=mod_vlan_vid:5,output:2\n" +
			"table=6,priority=7,in_port=1,actions=mod_vlan_pcp:3,output:2\n" +
			"table=6,priority=8,in_port=1,dl_vlan=4,actions=mod_vlan_vid:6,mod_vlan_pcp:2,output:2\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := func(name string) string { return filepath.Join(dir, name) }
	for i, args := range [][]string{
		{"del-flows", "BR"},
		{"dump-flows", "BR"},
		{"add-flows", "BR", f("flows1")},
		{"dump-aggregate", "BR"},
		{"-O", "OpenFlow13", "dump-aggregate", "BR"},
		{"-O", "OpenFlow15", "dump-aggregate", "BR", "table=1"},
		{"mod-flows", "BR", "in_port=1,actions=output:3"},
		{"--strict", "mod-flows", "BR", "priority=10,in_port=2,actions=drop"},
		{"dump-flows", "BR"},
		{"-O", "OpenFlow13", "dump-flows", "BR"},
		{"-O", "OpenFlow15", "dump-flows", "BR"},
		{"del-flows", "BR", "cookie=0x10/-1"},
		{"-O", "OpenFlow13", "del-flows", "BR", "cookie=0x11/-1"},
		{"dump-flows", "--no-stats", "BR"},
		{"--strict", "del-flows", "BR", "priority=10,in_port=1"},
		{"del-flows", "BR", "table=1"},
		{"diff-flows", "BR", f("flows2")},
		{"replace-flows", "BR", f("flows2")},
		{"-O", "OpenFlow13", "replace-flows", "BR", f("flows2")},
		{"-O", "OpenFlow13", "dump-flows", "--no-stats", "BR"},
		{"diff-flows", "BR", f("flows2")},
		{"-O", "OpenFlow13", "add-flows", "BR", f("flows3")},
		{"-O", "OpenFlow14", "add-flows", "BR", f("flows3")},
		{"dump-flows", "BR"},
		{"-O", "OpenFlow10", "dump-flows", "BR"},
		{"-O", "OpenFlow13", "dump-flows", "BR"},
		{"-O", "OpenFlow15", "dump-flows", "--no-stats", "BR"},
		{"add-flows", "BR", f("vlan10")},
		{"-O", "OpenFlow11", "add-flows", "BR", f("vlan11")},
		{"--sort", "dump-flows", "BR", "table=6"},
		{"-O", "OpenFlow11", "--sort", "dump-flows", "BR", "table=6"},
		{"-O", "OpenFlow13", "--sort", "dump-flows", "BR", "table=6"},
		{"-O", "OpenFlow13", "add-flows", "BR", f("tunnel")},
		{"--sort", "dump-flows", "BR", "table=7"},
		{"-O", "OpenFlow15", "--sort", "dump-flows", "BR", "table=7"},
		{"add-flows", "BR", f("queue10")},
		{"-O", "OpenFlow13", "add-flows", "BR", f("queue13")},
		{"--sort", "dump-flows", "BR", "table=8"},
		{"-O", "OpenFlow11", "--sort", "dump-flows", "BR", "table=8"},
		{"-O", "OpenFlow13", "--sort", "dump-flows", "BR", "table=8"},
		{"-O", "OpenFlow15", "--sort", "dump-flows", "BR", "table=8"},
		{"--sort", "dump-flows", "BR", "table=8,out_port=1"},
		// pop_queue and enqueue are not for an action set.
		{"-O", "OpenFlow13", "add-flow", "BR", "table=8,actions=write_actions(pop_queue)"},
		{"-O", "OpenFlow13", "add-flow", "BR", "table=8,actions=write_actions(enqueue:1:2)"},
		{"dump-tables", "BR"},
		// Errors: a read-only table, a group and a meter that do not
		// exist, goto_table backwards, an unusable flow format.
		{"add-flow", "BR", "table=254,actions=drop"},
		{"add-flow", "BR", "actions=group:5"},
		{"-O", "OpenFlow15", "add-flow", "BR", "actions=group:5"},
		{"-O", "OpenFlow13", "add-flow", "BR", "actions=meter:5,output:1"},
		{"-O", "OpenFlow13", "add-flow", "BR", "table=3,actions=goto_table:2"},
		{"add-flow", "BR", "tcp,actions=push_vlan:0x8100,output:1"},
		{"add-flow", "BR", "nw_dst=10.0.0.1,actions=drop"},
		// Queue statistics of a switch without QoS: none for every
		// port or one; OFPQOFC_BAD_QUEUE for a queue, OFPQOFC_BAD_PORT
		// for a port the bridge lacks.
		{"queue-stats", "BR"},
		{"queue-stats", "BR", "1"},
		{"queue-stats", "BR", "1", "5"},
		{"-O", "OpenFlow13", "queue-stats", "BR", "ALL", "5"},
		{"-O", "OpenFlow13", "queue-stats", "BR", "LOCAL"},
		{"-O", "OpenFlow14", "queue-stats", "BR", "99"},
		{"queue-stats", "BR", "99", "1"},
		// Queue configurations: none; OpenFlow 1.0–1.3 take physical
		// ports only (OFPQOFC_BAD_PORT for LOCAL), 1.4's QUEUE_DESC any.
		// (A queue of one port: OVS's netdev-linux fails to query the
		// kernel's qdisc here, NXQOFC_QUEUE_ERROR; a port of govs without
		// the queue says OFPQOFC_BAD_QUEUE, as netdev-dpdk's,
		// TestVswitchdQueueQoS.)
		{"queue-get-config", "BR"},
		{"queue-get-config", "BR", "1"},
		{"queue-get-config", "BR", "LOCAL"},
		{"-O", "OpenFlow13", "queue-get-config", "BR", "1", "5"},
		{"-O", "OpenFlow13", "queue-get-config", "BR", "LOCAL"},
		{"-O", "OpenFlow14", "queue-get-config", "BR"},
		{"-O", "OpenFlow14", "queue-get-config", "BR", "LOCAL"},
		{"-O", "OpenFlow15", "queue-get-config", "BR", "ANY", "5"},
		{"-O", "OpenFlow14", "queue-get-config", "BR", "99"},
		// An action set holds no output_trunc (OFPBAC_BAD_TYPE).
		{"-O", "OpenFlow13", "add-flow", "BR", "actions=write_actions(output(port=1,max_len=100))"},
		{"del-flows", "BR"},
		{"dump-flows", "BR"},
	} {
		t.Run(fmt.Sprintf("flows/%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}
	// The tunnel fields added after the others: IPv6 tunnels' addresses,
	// VXLAN's Group Based Policy.
	for i, args := range slices.Concat(
		fieldFlowSteps(f("tunnel6"), "table=9", "tun_ipv6_dst=2001:db8::/64", "table=9,priority=1,tun_ipv6_src=2001:db8::1"),
		fieldFlowSteps(f("gbp"), "table=10", "tun_gbp_id=77", "table=10,priority=2,tun_gbp_id=0x10/0xf0,tun_gbp_flags=0x48")) {
		t.Run(fmt.Sprintf("fields/%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}
	// The same flow table gives the same ofproto/trace datapath actions
	// (datapath port numbers mapped to port names).
	chain := "table=0,priority=200,in_port=3,ip,actions=resubmit(,10)\n"
	for i := 10; i < 55; i++ {
		chain += fmt.Sprintf("table=%d,actions=resubmit(,%d)\n", i, i+1)
	}
	chain += "table=55,actions=output:1\n"
	traceFlows := chain + `table=0,priority=100,in_port=1,ip,actions=resubmit(,1)
table=0,priority=90,in_port=1,actions=output:2
table=0,priority=100,in_port=2,dl_vlan=10,actions=pop_vlan,output:1
table=0,priority=50,in_port=2,actions=push_vlan:0x8100,set_field:4106->vlan_vid,output:1,output:3
table=1,priority=10,tcp,tp_dst=80,actions=load:0x50->NXM_NX_REG0[],resubmit(,2)
table=1,priority=5,actions=goto_table:3
table=1,priority=20,udp,tp_dst=53,actions=mod_tp_dst:5353,mod_tp_src:99,mod_nw_dst:10.0.0.9,mod_nw_src:10.0.0.8,mod_dl_src:00:00:00:00:00:09,output:2
table=1,priority=20,tcp,tp_dst=8080,actions=mod_tp_dst:80,output:2
table=2,reg0=0x50,actions=output:3,clone(push_vlan:0x8100,set_field:4097->vlan_vid,output:2),output:2
table=3,priority=1,udp,actions=drop
table=3,priority=0,ip,actions=move:NXM_OF_IP_SRC[0..7]->NXM_NX_REG1[0..7],resubmit(,4)
table=4,reg1=0x1,actions=output:2
table=4,reg1=0x2,actions=output:3,exit,output:1
table=5,tun_ipv6_src=2001:db8::1,tun_ipv6_dst=2001:db8::/64,actions=set_field:2001:db8::2->tun_ipv6_dst,output:2
table=5,tun_src=192.0.2.1,actions=move:NXM_NX_TUN_IPV6_SRC[]->NXM_NX_XXREG1[]
table=5,tun_gbp_id=0x4d/0xff,tun_gbp_flags=0x8,actions=set_field:88->tun_gbp_id,output:2
`
	if err := os.WriteFile(f("trace"), []byte(traceFlows), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*ofSwitch{deb, govs} {
		if out, rc := s.ofctl("-O", "OpenFlow13", "replace-flows", s.br, f("trace")); rc != 0 {
			t.Fatalf("replace-flows: %s", out)
		}
	}
	// ovs-appctl bridge/dump-flows lists the same flows in OVS's
	// flow_stats_ds format (table_id first, the default priority left
	// out), in the classifier's order, which differs; Debian's also lists
	// its hidden table-254 flows, which govs does not have.
	dumpFlows := func(s *ofSwitch) string {
		var lines []string
		for _, l := range strings.Split(s.normalizeOfctl(s.appctl("bridge/dump-flows", s.br)), "\n") {
			if l != "" && !strings.HasPrefix(l, "table_id=254, ") {
				lines = append(lines, l)
			}
		}
		slices.Sort(lines)
		return strings.Join(lines, "\n")
	}
	if got, want := dumpFlows(govs), dumpFlows(deb); got != want {
		t.Errorf("bridge/dump-flows:\ngovs:\n%s\nDebian's ovs-vswitchd:\n%s", got, want)
	}

	// The MAC table's static entries (fdb/add, fdb/del) and the other
	// bridge commands: the same output, errors and exit statuses. Of
	// fdb/show and fdb/stats-show only what the commands here decide
	// (learned entries come and go with the namespaces' own traffic).
	const macA, macB = "00:00:00:00:0a:01", "00:00:00:00:0a:02"
	appctlOut := func(s *ofSwitch, args []string) string {
		args = slices.Clone(args)
		for i, a := range args {
			if a == "BR" {
				args[i] = s.br
			} else if a == "A" {
				args[i] = s.a.Host
			} else if a == "B" {
				args[i] = s.b.Host
			}
		}
		out, rc := s.runRC(vswAppctl, append([]string{"--timeout=10", "-t", traceTarget(s)}, args...)...)
		out = regexp.MustCompile(`ovs-appctl: \S+: server`).ReplaceAllString(out, "ovs-appctl: CTL: server")
		var keep []string
		for _, l := range strings.Split(s.normalizeOfctl(out), "\n") {
			if (args[0] != "fdb/show" || strings.HasSuffix(l, "static")) &&
				(args[0] != "fdb/stats-show" || strings.Contains(l, "static")) {
				keep = append(keep, l)
			}
		}
		return fmt.Sprintf("%s(exit %d)", strings.Join(keep, "\n"), rc)
	}
	for _, args := range [][]string{
		{"fdb/add", "BR", "A", "0", macA},
		{"fdb/add", "BR", "A", "10", macB},
		{"fdb/add", "BR", "A", "0", macA},
		{"fdb/add", "BR", "B", "10", macB},
		{"fdb/add", "BR", "nosuch", "0", macA},
		{"fdb/add", "nosuch", "A", "0", macA},
		{"fdb/add", "BR", "A", "0", "zz"},
		{"fdb/add", "BR", "A", "0"},
		{"fdb/show", "BR"},
		{"fdb/stats-show", "BR"},
		{"fdb/flush", "BR"},
		{"fdb/show", "BR"},
		{"fdb/del", "BR", "0", "00:00:00:00:0a:09"},
		{"fdb/del", "BR", "0", macA},
		{"fdb/del", "BR", "0", macA},
		{"fdb/del", "nosuch", "0", macA},
		{"fdb/show", "BR"},
		{"fdb/stats-show", "BR"},
		{"fdb/stats-clear", "BR"},
		{"fdb/stats-clear"},
		{"fdb/stats-clear", "nosuch"},
		{"dpif/dump-dps"},
		{"dpif/show-dp-features"},
		{"dpif/show-dp-features", "nosuch"},
		{"coverage/read-counter"},
		{"coverage/read-counter", "nosuch"},
		{"mdb/show", "BR"},
		{"mdb/show", "nosuch"},
		{"mdb/flush", "BR"},
		{"mdb/flush"},
		{"bridge/reconnect"},
		{"bridge/reconnect", "BR"},
		{"bridge/reconnect", "nosuch"},
	} {
		if got, want := appctlOut(govs, args), appctlOut(deb, args); got != want {
			t.Errorf("ovs-appctl %v:\ngovs:\n%s\nDebian's ovs-vswitchd:\n%s", args, got, want)
		}
	}
	for _, pkt := range []string{
		"in_port=1,tcp,nw_src=10.0.0.1,tp_dst=80", "in_port=1,tcp,nw_src=10.0.0.1,tp_dst=81",
		"in_port=1,udp,nw_src=10.0.0.1", "in_port=1,udp,nw_src=10.0.0.1,udp_dst=53", "in_port=1,tcp,nw_src=10.0.0.1,tcp_dst=8080",
		"in_port=1,icmp,nw_src=10.0.0.2", "in_port=1,icmp,nw_src=10.0.0.3",
		"in_port=1,arp", "in_port=2,dl_vlan=10", "in_port=2,dl_vlan=11", "in_port=2", "in_port=3,ip", "in_port=3,arp",
	} {
		want, got := deb.traceActions(pkt), govs.traceActions(pkt)
		if got != want {
			t.Errorf("ofproto/trace %s: govs %q, Debian's %q", pkt, got, want)
		}
	}

	// Conjunctive matches (OVN's ACLs on address sets): the flows dump
	// the same, a conjunction mixed with output is refused the same, and
	// traces agree (a complete conjunction without a conj_id flow too).
	conj := `priority=100,tcp,nw_src=10.0.0.1,actions=conjunction(1,1/2)
priority=100,tcp,nw_src=10.0.0.2,actions=conjunction(1,1/2)
priority=100,tcp,nw_src=10.0.0.3,actions=conjunction(1,1/2),conjunction(2,1/2)
priority=100,tcp,tp_dst=80,actions=conjunction(1,2/2)
priority=100,tcp,tp_dst=443,actions=conjunction(1,2/2)
priority=100,conj_id=1,tcp,actions=output:2
priority=200,tcp,nw_src=10.0.0.3,actions=conjunction(3,1/2)
priority=200,tcp,tp_dst=443,actions=conjunction(3,2/2)
priority=150,tcp,nw_src=10.0.0.2,tp_dst=22,actions=output:3
priority=0,actions=output:1
`
	if err := os.WriteFile(f("conj"), []byte(conj), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, args := range [][]string{
		{"replace-flows", "BR", f("conj")},
		{"add-flow", "BR", "tcp,actions=conjunction(4,1/2),output:1"},
	} {
		t.Run(fmt.Sprintf("conj/%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}
	// OVS dumps flows of one mask in hash order: compare sorted lines.
	for _, version := range []string{"OpenFlow10", "OpenFlow13"} {
		dump := func(s *ofSwitch) string {
			out, rc := s.ofctl("-O", version, "dump-flows", s.br)
			lines := strings.Split(s.normalizeOfctl(out), "\n")
			slices.Sort(lines)
			return fmt.Sprintf("exit %d\n%s", rc, strings.Join(lines, "\n"))
		}
		if got, want := dump(govs), dump(deb); got != want {
			t.Errorf("conjunctive dump-flows %s: govs:\n%s\nDebian's:\n%s", version, got, want)
		}
	}
	for _, src := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"} {
		for _, port := range []string{"80", "443", "22"} {
			pkt := "in_port=1,tcp,nw_src=" + src + ",tp_dst=" + port
			want, got := deb.traceActions(pkt), govs.traceActions(pkt)
			if got != want {
				t.Errorf("ofproto/trace %s: govs %q, Debian's %q", pkt, got, want)
			}
		}
	}

	// With no flows both drop; NORMAL back, both forward.
	for _, s := range []*ofSwitch{deb, govs} {
		if out, rc := s.ofctl("del-flows", s.br); rc != 0 {
			t.Fatalf("del-flows: %s", out)
		}
	}
	govs.a.noPing("10.79.0.2")
	for _, s := range []*ofSwitch{deb, govs} {
		if out, rc := s.ofctl("add-flow", s.br, "priority=0,actions=NORMAL"); rc != 0 {
			t.Fatalf("add-flow: %s", out)
		}
	}
	govs.a.waitPing("10.79.0.2")

	// fail_mode=secure: no flow on either.
	deb.vsctl("set", "bridge", deb.br, "fail_mode=secure")
	govs.vsctl("set", "bridge", govs.br, "fail_mode=secure")
	for _, version := range []string{"OpenFlow10", "OpenFlow15"} {
		want, wantRC := deb.ofctl("-O", version, "dump-flows", deb.br)
		got, gotRC := govs.ofctl("-O", version, "dump-flows", govs.br)
		if gotRC != wantRC || govs.normalizeOfctl(got) != deb.normalizeOfctl(want) {
			t.Errorf("secure dump-flows %s: govs (exit %d):\n%s\nDebian's (exit %d):\n%s", version, gotRC, got, wantRC, want)
		}
	}
}

// TestOpenFlowFailSecure: a bridge with fail_mode=secure and no flows
// drops everything (a ping between namespaces fails) and forwards again
// when fail_mode is removed; the management socket is 0750 and goes with
// its bridge.
func TestOpenFlowFailSecure(t *testing.T) {
	e := vswNewEnv(t)
	a := vswAddPrefixedNS(t, "gofs", "a", "10.76.0.1/24")
	b := vswAddPrefixedNS(t, "gofs", "b", "10.76.0.2/24")
	e.mustVsctl("add-br", "gofs0", "--", "add-port", "gofs0", a.Host, "--", "add-port", "gofs0", b.Host)
	mgmt := filepath.Join(e.dir, "gofs0.mgmt")
	fi, err := os.Stat(mgmt)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o750 {
		t.Fatalf("%s: %v %v", mgmt, fi, err)
	}
	a.waitPing("10.76.0.2")

	e.mustVsctl("set", "bridge", "gofs0", "fail_mode=secure")
	a.noPing("10.76.0.2")
	if out := e.mustAppctl("ofproto/trace", "gofs0", fmt.Sprintf("in_port=%d", e.ofport(a.Host))); !strings.Contains(out, "No match") {
		t.Errorf("ofproto/trace on a secure bridge:\n%s", out)
	}

	e.mustVsctl("remove", "bridge", "gofs0", "fail_mode", "secure")
	a.waitPing("10.76.0.2")

	e.mustVsctl("del-br", "gofs0")
	if _, err := os.Stat(mgmt); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("%s after del-br: %v", mgmt, err)
	}
	out, rc := (&ofSwitch{t: t, dir: e.dir}).ofctl("show", "gofs0")
	if rc != 1 || !strings.Contains(out, "is not a bridge or a socket") {
		t.Errorf("ovs-ofctl show on a deleted bridge: exit %d:\n%s", rc, out)
	}

	// The switch removes its sockets when it exits, bridges kept or not.
	e.mustVsctl("add-br", "gofs1")
	mgmt = filepath.Join(e.dir, "gofs1.mgmt")
	if _, err := os.Stat(mgmt); err != nil {
		t.Fatal(err)
	}
	e.stopSwitch(false)
	if _, err := os.Stat(mgmt); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("%s after exit: %v", mgmt, err)
	}
}

// TestOpenFlowTraffic: real traffic between namespaces steered by flows:
// forwarding by in_port, a drop taking effect at once (the flows cached
// in the datapath are revalidated before add-flow's barrier returns),
// VLAN push and pop seen by a VLAN interface, and a resubmit chain over
// 45 tables.
func TestOpenFlowTraffic(t *testing.T) {
	s := startGovsSwitch(t)
	s.setUp("goft", "10.81.0")
	add := s.replaceFlows
	add("in_port=1,actions=output:2", "in_port=2,actions=output:1")
	s.a.waitPing("10.81.0.2")

	// A drop at a higher priority: no ping gets through once add-flow
	// returned, though the flows above are installed in the datapath.
	if out, rc := s.ofctl("add-flow", s.br, "priority=40000,icmp,actions=drop"); rc != 0 {
		t.Fatalf("add-flow: %s", out)
	}
	s.a.noPing("10.81.0.2")
	if out, rc := s.ofctl("--strict", "del-flows", s.br, "priority=40000,icmp"); rc != 0 {
		t.Fatalf("del-flows: %s", out)
	}
	s.a.waitPing("10.81.0.2")

	// VLAN: the switch tags what a sends to b (this kernel has no 802.1Q
	// module, so b's side is a packet socket, which sees the tag in its
	// auxiliary data): b sends an echo request to a, whose answer must
	// reach b tagged with VLAN 10.
	amac := strings.TrimSpace(s.a.mustExec("cat", "/sys/class/net/eth0/address"))
	bmac := strings.TrimSpace(s.b.mustExec("cat", "/sys/class/net/eth0/address"))
	s.a.mustExec("ip", "neigh", "replace", "10.81.0.2", "lladdr", bmac, "dev", "eth0", "nud", "permanent")
	add("in_port=1,actions=push_vlan:0x8100,set_field:4106->vlan_vid,output:2",
		"in_port=2,dl_vlan=10,actions=pop_vlan,output:1",
		"in_port=2,actions=output:1")
	if out, err := s.b.exec("python3", "-c", vlanEchoScript, amac, "10.81.0.1", bmac, "10.81.0.2"); err != nil || !strings.Contains(out, "tagged reply") {
		t.Logf("%s", s.appctl("dpif/dump-flows", s.br))
		t.Fatalf("VLAN echo: %v\n%s", err, out)
	}
	s.a.noPing("10.81.0.2") // b's kernel drops the tagged requests

	// Header rewrites seen by the receivers: a pings 10.81.0.99, which
	// the switch rewrites (with dec_ttl) to b's address and MAC; b's
	// answers get .99 and its MAC as their source back.
	s.a.mustExec("ip", "neigh", "replace", "10.81.0.99", "lladdr", "02:00:00:00:00:99", "dev", "eth0", "nud", "permanent")
	s.a.mustExec("ip", "neigh", "del", "10.81.0.2", "dev", "eth0")
	add("in_port=1,arp,actions=output:2", "in_port=2,arp,actions=output:1",
		"in_port=1,ip,nw_dst=10.81.0.99,actions=mod_nw_dst:10.81.0.2,mod_dl_dst:"+bmac+",dec_ttl,output:2",
		"in_port=2,ip,nw_src=10.81.0.2,actions=mod_nw_src:10.81.0.99,mod_dl_src:02:00:00:00:00:99,output:1")
	s.a.waitPing("10.81.0.99")
	s.a.noPing("10.81.0.2") // no flow forwards a's IP to .2 itself

	// A resubmit chain over 45 tables each way, carrying a register.
	var chain []string
	chain = append(chain, "in_port=1,actions=load:0x1->NXM_NX_REG5[],resubmit(,1)",
		"in_port=2,actions=load:0x2->NXM_NX_REG5[],resubmit(,1)")
	for i := 1; i < 46; i++ {
		chain = append(chain, fmt.Sprintf("table=%d,actions=resubmit(,%d)", i, i+1))
	}
	chain = append(chain, "table=46,reg5=1,actions=output:2", "table=46,reg5=2,actions=output:1")
	add(chain...)
	s.a.waitPing("10.81.0.2")
	out := s.appctl("ofproto/trace", s.br, "in_port=1,icmp")
	if !strings.Contains(out, "46. reg5=0x1, priority 32768") || !strings.HasSuffix(strings.TrimSpace(out), "Datapath actions: "+
		regexp.MustCompile(`(\S+) 2/(\d+):`).FindStringSubmatch(s.appctl("dpif/show"))[2]) {
		t.Errorf("trace of the chain:\n%s", out)
	}

	// Rule and table counters from the datapath: ten pings each way
	// count in new ICMP flows with their bytes (98-byte frames), though
	// all but the first take the cached datapath flow, and keep flows
	// with a shorter idle_timeout than the pings last alive.
	add("in_port=1,arp,actions=output:2", "in_port=2,arp,actions=output:1",
		"idle_timeout=2,in_port=1,icmp,actions=output:2", "idle_timeout=2,in_port=2,icmp,actions=output:1")
	if out, err := s.a.exec("ping", "-q", "-n", "-c", "10", "-i", "0.4", "-w", vswPingDeadline, "10.81.0.2"); err != nil {
		t.Fatalf("10 pings over flows with idle_timeout=2: %v\n%s", err, out)
	}
	counts := regexp.MustCompile(`n_packets=(\d+), n_bytes=(\d+), idle_timeout=2,.*icmp,in_port=\d`)
	vswWait(t, vswTimeout, "the ICMP flows to count 10 pings each", func() bool {
		out, _ := s.ofctl("dump-flows", s.br, "icmp")
		m := counts.FindAllStringSubmatch(out, -1)
		for _, c := range m {
			if n, _ := strconv.Atoi(c[1]); n < 10 {
				return false
			}
		}
		return len(m) == 2
	})
	out, _ = s.ofctl("dump-flows", s.br, "icmp")
	for _, c := range counts.FindAllStringSubmatch(out, -1) {
		if n, _ := strconv.Atoi(c[1]); c[2] != strconv.Itoa(98*n) {
			t.Errorf("n_packets=%s but n_bytes=%s, want 98 bytes each:\n%s", c[1], c[2], out)
		}
	}
	tables, _ := s.ofctl("dump-tables", s.br)
	if m := regexp.MustCompile(`table 0:\s+active=4, lookup=(\d+), matched=(\d+)`).FindStringSubmatch(tables); m == nil ||
		len(m[1]) < 2 || len(m[2]) < 2 {
		t.Errorf("dump-tables after 20+ packets:\n%s", tables)
	}
	t.Logf("%s\n%s", out, tables)
}

// vlanEchoScript sends, from a packet socket on eth0, ICMP echo requests
// to argv[1]/argv[2] from argv[3]/argv[4] until an echo reply tagged with
// VLAN 10 comes back (the tag is in the packet
// socket's auxiliary data, as the kernel takes it off the frame).
const vlanEchoScript = `
import socket, struct, sys, time
amac, aip, bmac, bip = sys.argv[1:5]
mac = lambda m: bytes.fromhex(m.replace(":", ""))
def csum(b):
    if len(b) % 2: b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b)); s = (s >> 16) + (s & 0xffff); s += s >> 16
    return ~s & 0xffff
icmp = struct.pack("!BBHHH", 8, 0, 0, 0x4747, 1) + b"govs-vlan-test.."
icmp = icmp[:2] + struct.pack("!H", csum(icmp)) + icmp[4:]
ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(icmp), 1, 0, 64, 1, 0, socket.inet_aton(bip), socket.inet_aton(aip))
ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
frame = mac(amac) + mac(bmac) + struct.pack("!H", 0x0800) + ip + icmp
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind(("eth0", 0))
s.setsockopt(263, 8, 1)  # SOL_PACKET, PACKET_AUXDATA
s.settimeout(0.2)
deadline = time.time() + 60
while time.time() < deadline:
    s.send(frame)
    end = time.time() + 0.5
    while time.time() < end:
        try:
            data, anc, _, _ = s.recvmsg(4096, 1024)
        except socket.timeout:
            break
        vid = None
        for lvl, typ, val in anc:
            if lvl == 263 and typ == 8:
                status, _, _, _, _, tci = struct.unpack("IIIHHH", val[:18])
                if status & 0x10:
                    vid = tci & 0xfff
        if data[12:14] == b"\x81\x00":
            vid = struct.unpack("!H", data[14:16])[0] & 0xfff
            data = data[:12] + data[16:]
        if vid == 10 and data[12:14] == b"\x08\x00" and data[23] == 1 and data[34] == 0 and data[38:40] == b"\x47\x47":
            print("tagged reply")
            sys.exit(0)
print("no tagged reply")
sys.exit(1)
`

// TestOpenFlowFailOpen: a standalone bridge given a controller loses its
// NORMAL flow (OVS flushes the tables when controllers come or go), drops
// while the controller may still answer, fails open to NORMAL once the
// controller has been unreachable for three inactivity probe intervals,
// and gets its NORMAL flow back when the controller is removed.
func TestOpenFlowFailOpen(t *testing.T) {
	t.Parallel() // 15 s of it is waiting for the switch to fail open
	e := vswNewEnv(t)
	a := vswAddPrefixedNS(t, "gofo", "a", "10.77.0.1/24")
	b := vswAddPrefixedNS(t, "gofo", "b", "10.77.0.2/24")
	e.mustVsctl("add-br", "gofo0", "--", "add-port", "gofo0", a.Host, "--", "add-port", "gofo0", b.Host)
	a.waitPing("10.77.0.2")
	sw := &ofSwitch{t: t, dir: e.dir}

	// Port 1 on 127.0.0.1 refuses connections: the controller never
	// answers. The default inactivity probe is 5 s, so OVS fails open
	// after 15 s.
	e.mustVsctl("set-controller", "gofo0", "tcp:127.0.0.1:1")
	vswWait(t, vswTimeout, "the NORMAL flow to be flushed", func() bool {
		out, rc := sw.ofctl("dump-flows", "gofo0")
		return rc == 0 && !strings.Contains(out, "actions=NORMAL")
	})
	// The datapath's cached flows are revalidated soon after the flush:
	// wait for the drop (well within the 15 s before failing open).
	vswWait(t, 10*time.Second, "pings to be dropped", func() bool {
		_, err := a.exec("ping", "-q", "-n", "-c", "2", "-i", "0.2", "-W", "1", "10.77.0.2")
		return err != nil
	})

	a.waitPing("10.77.0.2")
	vswWait(t, vswTimeout, "the fail-open log line", func() bool {
		log, _ := os.ReadFile(e.logPath())
		return strings.Contains(string(log), "failing open")
	})
	if out := e.mustAppctl("ofproto/trace", "gofo0", fmt.Sprintf("in_port=%d", e.ofport(a.Host))); !strings.Contains(out, "fail-open") {
		t.Errorf("ofproto/trace while failing open:\n%s", out)
	}

	e.mustVsctl("del-controller", "gofo0")
	vswWait(t, vswTimeout, "the NORMAL flow to come back", func() bool {
		out, rc := sw.ofctl("dump-flows", "gofo0")
		return rc == 0 && strings.Contains(out, "actions=NORMAL")
	})
	a.waitPing("10.77.0.2")
}
