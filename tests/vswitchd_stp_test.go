package tests

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stpLB is a namespace with a Linux bridge "lb" running STP at OVS's
// shortest timers (hello 1 s, max age 6 s, forward delay 4 s), whose
// ports q0, q1, ... are veths; their other ends, Ends, stay in the root
// namespace for govs.
type stpLB struct {
	t    testing.TB
	ns   string
	Ends []string
}

// stpAddLinuxBridge makes the Linux bridge of n ports with STP priority
// prio; cleanup deletes the namespace and the veths.
func stpAddLinuxBridge(t testing.TB, prefix string, n, prio int) *stpLB {
	t.Helper()
	lb := &stpLB{t: t, ns: prefix + "-lb"}
	for i := range n {
		lb.Ends = append(lb.Ends, fmt.Sprintf("%ss%d", prefix, i))
	}
	vswClaim(t, append([]string{lb.ns}, lb.Ends...)...)
	cleanup := func() {
		vswRun("ip", "netns", "del", lb.ns)
		for _, l := range lb.Ends {
			vswRun("ip", "link", "del", l)
		}
	}
	cleanup()
	t.Cleanup(cleanup)
	if out, err := vswRun("ip", "netns", "add", lb.ns); err != nil {
		t.Fatal(err, out)
	}
	stpLinuxBridge(t, lb.ns, "", prio, lb.Ends)
	return lb
}

// stpLinuxBridge makes bridge "lb" in namespace ns running STP at OVS's
// shortest timers, with priority prio and ports q0, q1, ...: veths whose
// other ends, named ends, are in namespace endNS ("" for the root one).
func stpLinuxBridge(t testing.TB, ns, endNS string, prio int, ends []string) {
	t.Helper()
	ip := []string{"ip"}
	if endNS != "" {
		ip = append(ip, "-n", endNS)
	}
	cmds := [][]string{
		{"ip", "-n", ns, "link", "set", "lo", "up"},
		{"ip", "-n", ns, "link", "add", "lb", "type", "bridge", "stp_state", "1",
			"hello_time", "100", "max_age", "600", "forward_delay", "400", "priority", strconv.Itoa(prio)},
	}
	for i, l := range ends {
		q := fmt.Sprintf("q%d", i)
		cmds = append(cmds,
			append(slices.Clone(ip), "link", "add", l, "type", "veth", "peer", "name", q, "netns", ns),
			[]string{"ip", "-n", ns, "link", "set", q, "master", "lb"},
			[]string{"ip", "-n", ns, "link", "set", q, "up"},
			append(slices.Clone(ip), "link", "set", l, "up"))
	}
	cmds = append(cmds, []string{"ip", "-n", ns, "link", "set", "lb", "up"})
	for _, c := range cmds {
		if out, err := vswRun(c[0], c[1:]...); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
}

// state returns the Linux bridge's STP state of port qi, as `bridge
// link` shows it.
func (lb *stpLB) state(i int) string {
	out, _ := vswRun("ip", "-n", lb.ns, "-d", "link", "show", fmt.Sprintf("q%d", i))
	m := regexp.MustCompile(`bridge_slave state (\S+)`).FindStringSubmatch(out)
	if m == nil {
		return ""
	}
	return m[1]
}

// designatedRoot returns the root bridge port qi has heard of, in ip's
// form ("1000.2:0:0:0:a0:1").
func (lb *stpLB) designatedRoot(i int) string {
	out, _ := vswRun("ip", "-n", lb.ns, "-d", "link", "show", fmt.Sprintf("q%d", i))
	m := regexp.MustCompile(`designated_root (\S+)`).FindStringSubmatch(out)
	if m == nil {
		return ""
	}
	return m[1]
}

// bridgeID returns the Linux bridge's ID as Bridge.status writes IDs
// ("8000.0a1b2c3d4e5f").
func (lb *stpLB) bridgeID(prio int) string {
	out, _ := vswRun("ip", "-n", lb.ns, "link", "show", "lb")
	m := regexp.MustCompile(`link/ether (\S+)`).FindStringSubmatch(out)
	if m == nil {
		return ""
	}
	return fmt.Sprintf("%04x.%s", prio, strings.ReplaceAll(m[1], ":", ""))
}

// stpOtherConfig sets OVS's shortest STP timers on a bridge.
var stpOtherConfig = []string{"other_config:stp-hello-time=1", "other_config:stp-max-age=6", "other_config:stp-forward-delay=4"}

// stpPortRow matches a port's line of stp/show.
func stpPortRow(port, role, state string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(port) + ` +` + role + ` +` + state + ` `)
}

// TestVswitchdSTPLinuxBridge: a govs bridge and a Linux bridge running STP
// over one veth exchange BPDUs and agree on the root, whichever it is:
// govs with the lower priority (stp/show says so, the Linux port hears
// of govs' ID), then the Linux bridge once its priority drops to 0
// (govs' port becomes its root port). Bridge.status, Port.status and
// Port.statistics read as OVS writes them; stp/show and stp/tcn answer as
// Debian's.
func TestVswitchdSTPLinuxBridge(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	p := vswUniq()
	lb := stpAddLinuxBridge(t, p, 1, 32768)
	br, s0 := p+"br", lb.Ends[0]
	e.mustVsctl(append(append([]string{"add-br", br, "--", "set", "bridge", br, "stp_enable=true",
		"other_config:hwaddr=02:00:00:00:a0:01", "other_config:stp-priority=4096"}, stpOtherConfig...),
		"--", "add-port", br, s0)...)

	vswWait(t, 15*time.Second, "govs to be root and both ends to forward", func() bool {
		show, _ := e.appctl("stp/show", br)
		return strings.Contains(show, "  This bridge is the root\n") && stpPortRow(s0, "designated", "forwarding").MatchString(show) &&
			lb.state(0) == "forwarding" && lb.designatedRoot(0) == "1000.2:0:0:0:a0:1"
	})
	show := e.mustAppctl("stp/show")
	want := "---- " + br + " ----\n" +
		"Root ID:\n" +
		"  stp-priority  4096\n" +
		"  stp-system-id   02:00:00:00:a0:01\n" +
		"  stp-hello-time  1s\n" +
		"  stp-max-age     6s\n" +
		"  stp-fwd-delay   4s\n" +
		"  This bridge is the root\n" +
		"\n" +
		"Bridge ID:\n" +
		"  stp-priority  4096\n" +
		"  stp-system-id   02:00:00:00:a0:01\n" +
		"  stp-hello-time  1s\n" +
		"  stp-max-age     6s\n" +
		"  stp-fwd-delay   4s\n" +
		"\n" +
		"  Interface  Role       State      Cost  Pri.Nbr \n" +
		"  ---------- ---------- ---------- ----- -------\n" +
		fmt.Sprintf("  %-10s designated forwarding 2     128.1\n", s0) +
		"\n"
	if show != want {
		t.Errorf("stp/show:\n%s\nwant (as Debian's ovs-vswitchd 3.1):\n%s", show, want)
	}
	vswWait(t, 10*time.Second, "Bridge.status", func() bool {
		out, _ := e.vsctl("get", "bridge", br, "status")
		return strings.TrimSpace(out) == `{stp_bridge_id="1000.02000000a001", stp_designated_root="1000.02000000a001", stp_root_path_cost="0"}`
	})
	vswWait(t, 10*time.Second, "Port.status", func() bool {
		out, _ := e.vsctl("get", "port", s0, "status")
		return regexp.MustCompile(`^\{stp_port_id="32769", stp_role=designated, stp_sec_in_state="\d+", stp_state=forwarding\}$`).MatchString(strings.TrimSpace(out))
	})
	stats, _ := e.vsctl("get", "port", s0, "statistics")
	if !regexp.MustCompile(`^\{stp_error_count=0, stp_rx_count=\d+, stp_tx_count=[1-9]\d*\}$`).MatchString(strings.TrimSpace(stats)) {
		t.Errorf("Port.statistics: %s", stats)
	}

	// The Linux bridge becomes the root: govs hears its BPDUs.
	if out, err := vswRun("ip", "-n", lb.ns, "link", "set", "lb", "type", "bridge", "priority", "0"); err != nil {
		t.Fatal(err, out)
	}
	lbID := lb.bridgeID(0)
	vswWait(t, 15*time.Second, "the Linux bridge to be root, by govs' port "+s0, func() bool {
		show, _ := e.appctl("stp/show", br)
		return strings.Contains(show, "  root-port       "+s0+"\n  root-path-cost  2\n") &&
			stpPortRow(s0, "root", "forwarding").MatchString(show) && lb.state(0) == "forwarding"
	})
	vswWait(t, 10*time.Second, "Bridge.status to name the Linux bridge root", func() bool {
		out, _ := e.vsctl("get", "bridge", br, "status")
		return strings.Contains(out, `stp_designated_root="`+lbID+`"`) && strings.Contains(out, `stp_root_path_cost="2"`)
	})
	stats, _ = e.vsctl("get", "port", s0, "statistics")
	if !regexp.MustCompile(`stp_rx_count=[1-9]`).MatchString(stats) {
		t.Errorf("Port.statistics: %s", stats)
	}

	if _, err := e.appctl("stp/show", "nosuch"); err == nil || !strings.Contains(err.Error(), "no such stp object") {
		t.Errorf("stp/show nosuch: %v", err)
	}
	if _, err := e.appctl("stp/tcn", "nosuch"); err == nil || !strings.Contains(err.Error(), "no such stp object") {
		t.Errorf("stp/tcn nosuch: %v", err)
	}
	if out, err := e.appctl("stp/tcn", br); err != nil || out != "OK\n" {
		t.Errorf("stp/tcn: %q %v", out, err)
	}

	// STP off: the columns go, stp/show has nothing.
	e.mustVsctl("set", "bridge", br, "stp_enable=false")
	vswWait(t, 10*time.Second, "the STP columns to be cleared", func() bool {
		b, _ := e.vsctl("get", "bridge", br, "status")
		s, _ := e.vsctl("get", "port", s0, "status")
		return strings.TrimSpace(b) == "{}" && strings.TrimSpace(s) == "{}"
	})
	if out := e.mustAppctl("stp/show"); out != "" {
		t.Errorf("stp/show without STP: %q", out)
	}
	if b, _ := os.ReadFile(e.logPath()); !strings.Contains(string(b), "|stp|INFO|"+br+": detected topology change.") {
		t.Errorf("no topology change logged")
	}
}

// TestVswitchdSTPLoop: a govs bridge and a Linux bridge joined by two
// veths make a loop; STP (the Linux bridge root) blocks govs' second
// port, a host behind govs reaches the Linux bridge's address, and
// broadcasts do not storm: the loop's ports carry a handful of packets
// while three broadcast pings cross.
func TestVswitchdSTPLoop(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	p := vswUniq()
	lb := stpAddLinuxBridge(t, p, 2, 4096)
	h := vswAddPrefixedNS(t, p, "h", "10.139.0.1/24")
	if out, err := vswRun("ip", "-n", lb.ns, "addr", "add", "10.139.0.2/24", "dev", "lb"); err != nil {
		t.Fatal(err, out)
	}
	br, s0, s1 := p+"br", lb.Ends[0], lb.Ends[1]
	e.mustVsctl(append(append([]string{"add-br", br, "--", "set", "bridge", br, "stp_enable=true",
		"other_config:hwaddr=02:00:00:00:a1:01"}, stpOtherConfig...),
		"--", "add-port", br, s0, "--", "add-port", br, s1, "--", "add-port", br, h.Host)...)

	vswWait(t, 15*time.Second, "the loop to settle with "+s1+" blocking", func() bool {
		show, _ := e.appctl("stp/show", br)
		return stpPortRow(s0, "root", "forwarding").MatchString(show) && stpPortRow(s1, "alternate", "blocking").MatchString(show) &&
			stpPortRow(h.Host, "designated", "forwarding").MatchString(show) &&
			lb.state(0) == "forwarding" && lb.state(1) == "forwarding"
	})
	h.waitPing("10.139.0.2")

	// Each broadcast comes back once on s1 (blocked), plus two BPDUs a
	// second on each port and stray IPv6 traffic; a storm is thousands.
	stpNoStorm(t, h, "10.139.0.255", 60, s0, s1)
	if err := h.ping("10.139.0.2", 5); err != nil {
		t.Errorf("ping after the broadcasts: %v", err)
	}
}

// TestVswitchdSTPDebian: the same loop (two veths to a Linux bridge that
// is root) under govs and under Debian's ovs-vswitchd (netdev datapath,
// its own namespace) settles the same way, and stp/show reads the same
// but for the Linux bridges' addresses.
func TestVswitchdSTPDebian(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	p := vswUniq()
	lb := stpAddLinuxBridge(t, p, 2, 4096)
	s0, s1 := lb.Ends[0], lb.Ends[1]

	// Debian's side: its switch and a Linux bridge in one namespace, the
	// ports named as govs' are.
	nsD := p + "-deb"
	vswClaim(t, nsD)
	vswRun("ip", "netns", "del", nsD)
	t.Cleanup(func() { vswRun("ip", "netns", "del", nsD) })
	if out, err := vswRun("ip", "netns", "add", nsD); err != nil {
		t.Fatal(err, out)
	}
	stpLinuxBridge(t, nsD, nsD, 4096, []string{s0, s1})
	d := startDebSwitch(t, nsD)

	setup := func(br string) []string {
		return append(append([]string{"add-br", br, "--", "set", "bridge", br, "datapath_type=netdev", "stp_enable=true",
			"other_config:hwaddr=02:00:00:00:b0:01"}, stpOtherConfig...),
			"--", "add-port", br, s0, "other_config:stp-port-num=1", "--", "add-port", br, s1, "other_config:stp-port-num=2")
	}
	br := p + "br"
	d.vsctl(setup(br)...)
	e.mustVsctl(setup(br)...)
	settled := func(show string) bool {
		return stpPortRow(s0, "root", "forwarding").MatchString(show) && stpPortRow(s1, "alternate", "blocking").MatchString(show)
	}
	vswWait(t, 15*time.Second, "both loops to settle", func() bool {
		show, _ := e.appctl("stp/show", br)
		return settled(show) && settled(d.appctl("stp/show", br))
	})
	mac := regexp.MustCompile(`([0-9a-f]{2}:){5}[0-9a-f]{2}`)
	got, want := mac.ReplaceAllString(e.mustAppctl("stp/show"), "MAC"), mac.ReplaceAllString(d.appctl("stp/show"), "MAC")
	if got != want {
		t.Errorf("stp/show differs from Debian's\ngovs:\n%s\nDebian:\n%s", got, want)
	}
	status := func(out string) string {
		return regexp.MustCompile(`stp_sec_in_state="\d+"|stp_(rx|tx)_count=\d+|"[0-9a-f]{4}\.[0-9a-f]{12}"`).ReplaceAllString(out, "X")
	}
	for _, port := range []string{s0, s1} {
		g, _ := e.vsctl("get", "port", port, "status")
		if w := d.vsctl("get", "port", port, "status"); status(g) != status(w) {
			t.Errorf("port %s status: govs %s, Debian %s", port, g, w)
		}
	}
}
