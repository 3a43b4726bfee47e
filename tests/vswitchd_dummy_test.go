package tests

// ovs-vswitchd --enable-dummy, as OVS's own testsuite runs its switch
// (tests/ofproto-macros.at): dummy ports fed with netdev-dummy/receive,
// watched through their pcap files and Debian's ovs-ofctl. No root, no
// namespace, no kernel device: TestVswitchdDummy runs as any user.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/govs/govs/netdev"
)

// The frames the scenario sends, in OVS's flow syntax.
const (
	dummyBcast = "in_port(1),eth(src=50:54:00:00:00:05,dst=ff:ff:ff:ff:ff:ff),eth_type(0x0800)," +
		"ipv4(src=192.168.0.1,dst=192.168.0.2,proto=1,tos=0,ttl=64,frag=no),icmp(type=8,code=0)"
	dummyUnicast = "eth(src=50:54:00:00:00:07,dst=50:54:00:00:00:05),eth_type(0x0800)," +
		"ipv4(src=192.168.0.2,dst=192.168.0.1,proto=17,tos=0,ttl=64,frag=no),udp(src=1,dst=2)"
	// dummyToSelf is addressed to a MAC learned on p1, its own in_port:
	// NORMAL drops it; only the OpenFlow flow sends it to p2.
	dummyToSelf = "eth(src=50:54:00:00:00:09,dst=50:54:00:00:00:05),eth_type(0x8100),vlan(vid=0,pcp=0)," +
		"encap(eth_type(0x0800),ipv4(src=192.168.0.9,dst=192.168.0.1,proto=17,tos=0,ttl=64,frag=no),udp(src=7,dst=9))"
	dummyARP = "eth(src=50:54:00:00:00:05,dst=ff:ff:ff:ff:ff:ff),eth_type(0x0806)," +
		"arp(sip=1.1.1.1,tip=1.1.1.2,op=1,sha=50:54:00:00:00:05,tha=00:00:00:00:00:00)"
)

// dummyRig is a switch started with --enable-dummy and the means to
// drive it; ctl names its control socket for ovs-appctl -t.
type dummyRig struct {
	*ofSwitch
	ctl string
}

// appctlRC runs ovs-appctl and returns its output and exit status.
func (r *dummyRig) appctlRC(args ...string) (string, int) {
	r.t.Helper()
	return r.runRC(vswAppctl, append([]string{"--timeout=10", "-t", r.ctl}, args...)...)
}

// pcap returns the frames in the rundir's pcap file name so far.
func (r *dummyRig) pcap(name string) [][]byte {
	r.t.Helper()
	f, err := os.Open(filepath.Join(r.dir, name))
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	frames, err := netdev.ReadPcap(f)
	if err != nil {
		r.t.Fatalf("%s: %v", name, err)
	}
	return frames
}

func (r *dummyRig) waitFrames(name string, n int) [][]byte {
	r.t.Helper()
	var frames [][]byte
	vswWait(r.t, vswTimeout, fmt.Sprintf("%d frames in %s", n, name), func() bool {
		frames = r.pcap(name)
		return len(frames) >= n
	})
	if len(frames) != n {
		r.t.Fatalf("%s has %d frames, want %d", name, len(frames), n)
	}
	return frames
}

var dummyPortStatsRe = regexp.MustCompile(`port +(\S+): rx pkts=(\d+), bytes=(\d+), drop=(\S+), errs=(\S+),.*\n\s+tx pkts=(\d+), bytes=(\d+), drop=(\S+), errs=(\S+)`)

// portStats returns ovs-ofctl dump-ports' counters by port, one line each.
func (r *dummyRig) portStats() map[string]string {
	r.t.Helper()
	out, rc := r.ofctl("dump-ports", "br0")
	if rc != 0 {
		r.t.Fatalf("dump-ports: %s", out)
	}
	m := map[string]string{}
	for _, s := range dummyPortStatsRe.FindAllStringSubmatch(out, -1) {
		m[s[1]] = fmt.Sprintf("rx %s/%s drop=%s errs=%s tx %s/%s drop=%s errs=%s", s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9])
	}
	return m
}

func (r *dummyRig) receive(args ...string) {
	r.t.Helper()
	if out, rc := r.appctlRC(append([]string{"netdev-dummy/receive"}, args...)...); rc != 0 || out != "" {
		r.t.Fatalf("netdev-dummy/receive %v: exit %d: %s", args, rc, out)
	}
}

// dummyScenario runs OVS's testsuite set-up (a bridge on the dummy
// datapath with two dummy ports) through NORMAL learning and forwarding,
// an OpenFlow flow, set-admin-state and netdev-dummy/* errors, checking
// what OVS 3.1 does; it returns what it saw, for comparing two switches.
func dummyScenario(r *dummyRig) map[string]string {
	t := r.t
	t.Helper()
	seen := map[string]string{}
	r.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath-type=dummy", "fail-mode=standalone",
		"--", "add-port", "br0", "p1", "--", "set", "interface", "p1", "type=dummy", "ofport_request=1",
		"options:tx_pcap="+filepath.Join(r.dir, "p1-tx.pcap"),
		"--", "add-port", "br0", "p2", "--", "set", "interface", "p2", "type=dummy", "ofport_request=2",
		"options:pcap="+filepath.Join(r.dir, "p2.pcap"))
	// OVS's dummy datapath numbers ports after their names.
	show := r.appctl("dpif/show")
	want := "dummy@ovs-dummy: hit:0 missed:0\n  br0:\n    br0 65534/100: (dummy-internal)\n    p1 1/1: (dummy)\n    p2 2/2: (dummy)\n"
	if show != want {
		t.Errorf("dpif/show:\n%s\nwant:\n%s", show, want)
	}

	// NORMAL floods the broadcast from p1 to p2 (and the local port),
	// then sends p2's reply to p1 only: it learned where :05 is.
	r.receive("p1", dummyBcast)
	p2 := r.waitFrames("p2.pcap", 1)
	r.receive("p2", dummyUnicast, "--len", "100")
	p1 := r.waitFrames("p1-tx.pcap", 1)
	p2 = r.waitFrames("p2.pcap", 2) // pcap has what p2 received too
	if len(p1[0]) != 100 || !bytes.Equal(p2[1], p1[0]) {
		t.Errorf("p1 sent %x\np2 received %x", p1[0], p2[1])
	}
	var stats map[string]string
	vswWait(t, vswTimeout, "dump-ports to count the two frames", func() bool {
		stats = r.portStats()
		return strings.HasPrefix(stats["1"], "rx 1/106 ") && strings.HasPrefix(stats["2"], "rx 1/100 ") &&
			strings.Contains(stats["LOCAL"], "tx 1/106")
	})
	if !strings.Contains(stats["1"], "tx 1/100 ") || !strings.Contains(stats["2"], "tx 1/106 ") {
		t.Errorf("dump-ports: %q", stats)
	}
	for _, k := range []string{"1", "2", "LOCAL"} {
		seen["dump-ports "+k] = stats[k]
	}
	fdb := r.appctl("fdb/show", "br0")
	for _, mac := range []string{"    1     0  50:54:00:00:00:05", "    2     0  50:54:00:00:00:07"} {
		if !strings.Contains(fdb, mac) {
			t.Errorf("fdb/show lacks %q:\n%s", mac, fdb)
		}
	}

	// ofproto/trace takes the datapath flow form OVS's tests use.
	trace := r.appctl("ofproto/trace", "ovs-dummy", "in_port(2),"+dummyUnicast)
	if !strings.Contains(trace, "\nDatapath actions: 1\n") {
		t.Errorf("ofproto/trace ovs-dummy in_port(2),...:\n%s", trace)
	}
	seen["trace"] = trace

	// An OpenFlow flow sends what NORMAL would drop.
	if out, rc := r.ofctl("add-flow", "br0", "priority=100,udp,in_port=1,tp_dst=9,actions=output:2"); rc != 0 {
		t.Fatalf("add-flow: %s", out)
	}
	r.receive("p1", dummyToSelf)
	p2 = r.waitFrames("p2.pcap", 3)
	if len(p2[2]) != 110 || p2[2][12] != 0x81 {
		t.Errorf("p2 sent %x", p2[2])
	}
	vswWait(t, vswTimeout, "the flow to count its packet", func() bool {
		out, _ := r.ofctl("dump-flows", "br0", "udp")
		return strings.Contains(out, "n_packets=1, n_bytes=110,")
	})

	// set-admin-state shows the port down everywhere, but, as in OVS,
	// the dummy still sends: a NORMAL flood reaches p2.
	if out, rc := r.appctlRC("netdev-dummy/set-admin-state", "p2", "down"); rc != 0 || out != "OK\n" {
		t.Fatalf("set-admin-state: exit %d: %q", rc, out)
	}
	vswWait(t, vswTimeout, "p2's admin_state and link_state to be down", func() bool {
		return strings.TrimSpace(r.vsctl("get", "interface", "p2", "admin_state", "link_state")) == "down\ndown"
	})
	desc, _ := r.ofctl("dump-ports-desc", "br0")
	if !regexp.MustCompile(`2\(p2\): .*\n\s+config:\s+PORT_DOWN\n\s+state:\s+LINK_DOWN`).MatchString(desc) {
		t.Errorf("dump-ports-desc:\n%s", desc)
	}
	r.receive("p1", dummyARP)
	p2 = r.waitFrames("p2.pcap", 4)
	seen["admin down, p2 sends"] = fmt.Sprintf("%x", p2[3])
	if out, rc := r.appctlRC("netdev-dummy/set-admin-state", "up"); rc != 0 || out != "OK\n" {
		t.Errorf("set-admin-state up: exit %d: %q", rc, out)
	}
	vswWait(t, vswTimeout, "p2 to be up again", func() bool {
		return strings.TrimSpace(r.vsctl("get", "interface", "p2", "admin_state", "link_state")) == "up\nup"
	})
	seen["p1-tx.pcap"] = fmt.Sprintf("%x", r.pcap("p1-tx.pcap"))
	seen["p2.pcap"] = fmt.Sprintf("%x", r.pcap("p2.pcap"))

	for _, c := range []struct {
		args []string
		out  string
		rc   int
	}{
		{[]string{"netdev-dummy/receive", "nosuch", "ffffffffffff000000000001"}, "no such dummy netdev\novs-appctl: ovs-vswitchd: server returned an error\n", 2},
		{[]string{"netdev-dummy/receive", "p1", "garbage"}, "syntax error at garbage\novs-appctl: ovs-vswitchd: server returned an error\n", 2},
		{[]string{"netdev-dummy/receive", "p1", "--qid", "1", dummyARP}, "bad rx queue id.\novs-appctl: ovs-vswitchd: server returned an error\n", 2},
		{[]string{"netdev-dummy/receive", "p1", dummyARP, "--len", "10"}, "too small packet len\novs-appctl: ovs-vswitchd: server returned an error\n", 2},
		{[]string{"netdev-dummy/set-admin-state", "sideways"}, "Invalid Admin State\novs-appctl: ovs-vswitchd: server returned an error\n", 2},
		{[]string{"netdev-dummy/set-admin-state", "nosuch", "down"}, "Unknown Dummy Interface\novs-appctl: ovs-vswitchd: server returned an error\n", 2},
		{[]string{"netdev-dummy/conn-state", "p1"}, "p1: unknown\n", 0},
		{[]string{"netdev-dummy/ip4addr", "p1", "10.0.0.1/24"}, "OK\n", 0},
		{[]string{"netdev-dummy/ip4addr", "p1", "10.0.0.1/33"}, "10.0.0.1/33: IPv4 network prefix bits not between 0 and 32, inclusive\novs-appctl: ovs-vswitchd: server returned an error\n", 2},
		{[]string{"netdev-dummy/ip6addr", "p1", "foo"}, "foo: invalid IPv6 address\novs-appctl: ovs-vswitchd: server returned an error\n", 2},
		{[]string{"netdev-dummy/receive", "p1", "eth_type(0x86dd),ipv6(proto=6),tcp(src=1,dst=2)", "--len", "60"}, "ovs-appctl: ovs-vswitchd: server returned an error\n", 2},
		{[]string{"netdev-dummy/receive", "p1", "00 11"}, "syntax error at 00 11\novs-appctl: ovs-vswitchd: server returned an error\n", 2},
	} {
		out, rc := r.appctlRC(c.args...)
		out = strings.ReplaceAll(out, r.ctl, "ovs-vswitchd")
		seen[strings.Join(c.args, " ")] = fmt.Sprintf("%d %s", rc, out)
		if out != c.out || rc != c.rc {
			t.Errorf("ovs-appctl %s: exit %d %q, want %d %q", strings.Join(c.args, " "), rc, out, c.rc, c.out)
		}
	}

	// A dummy with an IPv4 address (ip4addr above) answers ARP for it.
	r.receive("p2", "eth(src=50:54:00:00:00:0b,dst=ff:ff:ff:ff:ff:ff),eth_type(0x0806),"+
		"arp(sip=10.0.0.2,tip=10.0.0.1,op=1,sha=50:54:00:00:00:0b,tha=00:00:00:00:00:00)")
	p2 = r.waitFrames("p2.pcap", 6)
	if reply := p2[5]; len(reply) != 42 || reply[12] != 0x08 || reply[13] != 0x06 || reply[21] != 2 {
		t.Errorf("p2 got %x, not an ARP reply", reply)
	}
	// Without the dummy's MAC, numbered in a different order by each.
	reply := slices.Clone(p2[5])
	clear(reply[6:12])
	clear(reply[22:28])
	seen["arp reply"] = fmt.Sprintf("%x", reply)
	return seen
}

// TestVswitchdDummy runs the scenario on govs' ovsdb-server and
// ovs-vswitchd --enable-dummy --disable-system --disable-system-route,
// as OVS's testsuite starts it, without root.
func TestVswitchdDummy(t *testing.T) {
	r := startGovsDummy(t)
	dummyScenario(r)

	// --enable-dummy's argument is checked as OVS's lib/dummy.c does.
	out, err := vswRun(r.bin(), "--enable-dummy=bogus")
	if err == nil || !strings.Contains(out, "ovs-vswitchd: bogus: unknown dummy level") {
		t.Errorf("--enable-dummy=bogus: %v: %s", err, out)
	}
}

func startGovsDummy(t *testing.T) *dummyRig {
	t.Helper()
	for _, p := range []string{vswSchema, vswVsctl, vswAppctl, vswOfctl, "/usr/bin/ovsdb-tool"} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: install openvswitch-switch and openvswitch-common", p)
		}
	}
	e := vswStartEnv(t, true, "--enable-dummy", "--disable-system", "--disable-system-route")
	s := &ofSwitch{t: t, dir: e.dir, vsctl: e.mustVsctl, appctl: func(args ...string) string { return e.mustAppctl(args...) }}
	return &dummyRig{ofSwitch: s, ctl: "ovs-vswitchd"}
}

func (r *dummyRig) bin() string { return vswBinary(r.t) }
