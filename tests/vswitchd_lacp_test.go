package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// debSwitch is Debian's ovsdb-server and ovs-vswitchd (userspace datapath)
// running in network namespace ns with their own rundir: the LACP partner
// of a govs bond. This kernel has no bonding module, and two netdev
// switches in one namespace collide on their taps.
type debSwitch struct {
	t       testing.TB
	ns, dir string
}

// startDebSwitch starts Debian's daemons in ns; cleanup stops them by the
// pids they wrote.
func startDebSwitch(t testing.TB, ns string) *debSwitch {
	t.Helper()
	dir, err := os.MkdirTemp("", "gvsw-deb")
	if err != nil {
		t.Fatal(err)
	}
	d := &debSwitch{t: t, ns: ns, dir: dir}
	t.Cleanup(func() {
		for _, p := range []string{"ovs-vswitchd", "ovsdb-server"} {
			if pid := vswReadPid(filepath.Join(dir, p+".pid")); pid > 0 {
				vswKill(t, pid)
			}
		}
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(dir, "ovs-vswitchd.log")); err == nil {
				t.Logf("Debian's ovs-vswitchd.log:\n%s", vswTail(string(b), 30))
			}
		}
		os.RemoveAll(dir)
	})
	env := []string{"OVS_RUNDIR=" + dir, "OVS_LOGDIR=" + dir, "OVS_DBDIR=" + dir}
	db := filepath.Join(dir, "conf.db")
	for _, c := range [][]string{
		{"ovsdb-tool", "create", db, vswSchema},
		{"ip", "netns", "exec", ns, "/usr/sbin/ovsdb-server", db, "--remote=punix:" + filepath.Join(dir, "db.sock"),
			"--pidfile=" + filepath.Join(dir, "ovsdb-server.pid"), "--unixctl=" + filepath.Join(dir, "ovsdb-server.ctl"),
			"--log-file=" + filepath.Join(dir, "ovsdb-server.log"), "--detach", "--no-chdir"},
		{vswVsctl, "--db=unix:" + filepath.Join(dir, "db.sock"), "--no-wait", "init"},
		{"ip", "netns", "exec", ns, "/usr/sbin/ovs-vswitchd", "unix:" + filepath.Join(dir, "db.sock"),
			"--pidfile=" + filepath.Join(dir, "ovs-vswitchd.pid"), "--log-file=" + filepath.Join(dir, "ovs-vswitchd.log"),
			"--detach", "--no-chdir", "-vconsole:off"},
	} {
		if out, err := vswRunEnv(env, c[0], c[1:]...); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	return d
}

func (d *debSwitch) vsctl(args ...string) string {
	d.t.Helper()
	out, err := vswRun(vswVsctl, append([]string{"--db=unix:" + filepath.Join(d.dir, "db.sock"), "--timeout=20"}, args...)...)
	if err != nil {
		d.t.Fatal(err)
	}
	return out
}

func (d *debSwitch) appctl(args ...string) string {
	d.t.Helper()
	out, err := vswRunEnv([]string{"OVS_RUNDIR=" + d.dir}, vswAppctl, append([]string{"--timeout=10", "-t", "ovs-vswitchd"}, args...)...)
	if err != nil {
		d.t.Fatal(err)
	}
	return out
}

// lacpNormalize blanks in lacp/show and bond/show what differs between
// two set-ups of the same shape: MAC addresses, port numbers and keys,
// which member is active,
// the times left, per-bucket hash lines, and whether the bond
// recirculates (OVS's balance-tcp does, govs' does not).
func lacpNormalize(s string) string {
	for _, r := range []struct{ re, with string }{
		{`([0-9a-f]{2}:){5}[0-9a-f]{2}`, "MAC"},
		{`(port_id|key|aggregation key): \d+`, "$1: N"},
		{`(?m)^  hash \d+: .*\n`, ""},
		// Which member is active is the order OVS's hash map holds
		// them in; govs takes the first by name.
		{`(?m)^  active member\n`, ""},
		{`(next rebalance|expires in): -?\d+ ms`, "$1: N ms"},
		// govs' balance-tcp hashes without recirculation.
		{`bond may use recirculation: .*`, "bond may use recirculation: R"},
		{`member:? \S+:`, "member M:"},
		{`\((\S+)\)`, "(M)"},
		{`---- \S+ ----`, "---- B ----"},
	} {
		s = regexp.MustCompile(r.re).ReplaceAllString(s, r.with)
	}
	return s
}

// TestVswitchdLACPDebian: a govs bond of two veths negotiates LACP with a
// Debian ovs-vswitchd bond (netdev datapath, its own namespace) over
// them; both lacp/show say negotiated and current, and their lacp/show
// and bond/show read the same but for MACs and numbers. TCP streams from
// namespace a (govs) to namespace c (behind Debian's switch) spread over
// both members (balance-tcp); with one member's peer down the traffic
// carries on; once the partner stops sending, the members are disabled,
// until lacp-fallback-ab makes the bond active-backup.
func TestVswitchdLACPDebian(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	start := time.Now()
	a := vswAddNS(t, "lacp-a", "10.133.0.1/24")
	c := vswAddNS(t, "lacp-c", "10.133.0.2/24")
	const nsD, m0, m1, bond, br = "gvsw-lacp-d", "gvswlacpm0", "gvswlacpm1", "gvswlacp0", "gvswlacpbr"
	vswVethNS(t, nsD, [2]string{m0, "d0"}, [2]string{m1, "d1"})
	// c's veth moves into Debian's namespace.
	vswIP(t, []string{"link", "set", c.Host, "netns", nsD}, []string{"-n", nsD, "link", "set", c.Host, "up"})
	// OVS's userspace datapath passes neither checksum offload nor GSO:
	// TCP through it needs them off where frames enter. (ethtool fails
	// when a feature is fixed; what matters is the traffic below.)
	for _, cmd := range [][]string{
		{"ip", "netns", "exec", a.Name, "ethtool", "-K", "eth0", "tx", "off"},
		{"ip", "netns", "exec", c.Name, "ethtool", "-K", "eth0", "tx", "off"},
		{"ethtool", "-K", m0, "tx", "off", "tso", "off", "gso", "off"},
		{"ethtool", "-K", m1, "tx", "off", "tso", "off", "gso", "off"},
	} {
		vswRun(cmd[0], cmd[1:]...)
	}
	d := startDebSwitch(t, nsD)
	d.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev", "other_config:hwaddr=02:00:00:00:96:02",
		"--", "add-port", "br0", c.Host,
		"--", "add-bond", "br0", "bond0", "d0", "d1", "lacp=active", "bond_mode=balance-tcp", "other_config:lacp-time=fast")
	e.mustVsctl("add-br", br, "--", "set", "bridge", br, "other_config:hwaddr=02:00:00:00:96:01",
		"--", "add-port", br, a.Host,
		"--", "add-bond", br, bond, m0, m1, "lacp=active", "bond_mode=balance-tcp", "other_config:lacp-time=fast")

	negotiated := func(show string) bool {
		return strings.Contains(show, "  status: active negotiated\n") &&
			strings.Count(show, ": current attached\n") == 2 && strings.Count(show, "  may_enable: true\n") == 2
	}
	vswWait(t, 20*time.Second, "LACP to negotiate on both sides", func() bool {
		return negotiated(e.mustAppctl("lacp/show", bond)) && negotiated(d.appctl("lacp/show", "bond0"))
	})
	vswWait(t, 10*time.Second, "both members to be enabled", func() bool {
		return strings.Count(e.mustAppctl("bond/show", bond), ": enabled\n") == 2 && strings.Count(d.appctl("bond/show", "bond0"), ": enabled\n") == 2
	})
	t.Logf("negotiated %v after the switch started", time.Since(start).Round(time.Millisecond))
	show := e.mustAppctl("lacp/show", bond)
	if !strings.Contains(show, "  partner sys_id: 02:00:00:00:96:02\n") || !strings.Contains(show, "  sys_id: 02:00:00:00:96:01\n") {
		t.Errorf("govs lacp/show:\n%s", show)
	}
	// A PDU's state bits reach the other side within one fast interval:
	// the two read alike once the last ones crossed.
	for _, cmd := range []struct{ govs, deb []string }{
		{[]string{"lacp/show", bond}, []string{"lacp/show", "bond0"}},
		{[]string{"bond/show", bond}, []string{"bond/show", "bond0"}},
	} {
		var got, want string
		deadline := time.Now().Add(5 * time.Second)
		for {
			got, want = lacpNormalize(e.mustAppctl(cmd.govs...)), lacpNormalize(d.appctl(cmd.deb...))
			if got == want || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if got != want {
			t.Errorf("%s differs from Debian's (normalised)\ngovs:\n%s\nDebian:\n%s\ngovs' counters:\n%s\nDebian's:\n%s", cmd.govs[0], got, want,
				e.mustAppctl("lacp/show-stats"), d.appctl("lacp/show-stats"))
		}
	}
	stats := e.mustAppctl("lacp/show-stats", bond)
	if !strings.HasPrefix(stats, "---- "+bond+" statistics ----\n\nmember: "+m0+":\n  TX PDUs: ") || strings.Contains(stats, "RX PDUs: 0\n") {
		t.Errorf("lacp/show-stats:\n%s", stats)
	}
	if _, err := e.appctl("lacp/show", "nosuch"); err == nil || !strings.Contains(err.Error(), "no such lacp object") {
		t.Errorf("lacp/show nosuch: %v", err)
	}
	vswWait(t, 10*time.Second, "lacp_current to be true", func() bool {
		out, _ := e.vsctl("get", "interface", m0, "lacp_current")
		return strings.TrimSpace(out) == "true"
	})

	a.waitPing("10.133.0.2")
	// balance-tcp: 16 TCP streams hash onto both members.
	txOf := func(l string) int {
		out, _ := vswRun("cat", "/sys/class/net/"+l+"/statistics/tx_packets")
		n, _ := strconv.Atoi(strings.TrimSpace(out))
		return n
	}
	before := [2]int{txOf(m0), txOf(m1)}
	t.Log(vswIperfSummary(a.iperf(c, "10.133.0.2", "-P", "16", "-t", "1")))
	sent := [2]int{txOf(m0) - before[0], txOf(m1) - before[1]}
	t.Logf("packets sent by member: %s %d, %s %d", m0, sent[0], m1, sent[1])
	for i, n := range sent {
		if n < (sent[0]+sent[1])/20 {
			t.Errorf("member %d carried %d of %d packets: not balanced", i, n, sent[0]+sent[1])
		}
	}

	// One member's peer down: the traffic goes on over the other.
	if out, err := vswRun("ip", "-n", nsD, "link", "set", "d0", "down"); err != nil {
		t.Fatal(err, out)
	}
	vswWait(t, 10*time.Second, m0+" to be disabled", func() bool {
		return strings.Contains(e.mustAppctl("bond/show", bond), "\nmember "+m0+": disabled\n")
	})
	if err := a.ping("10.133.0.2", 10); err != nil {
		t.Errorf("ping with one member down: %v", err)
	}

	// The partner goes silent: after 3 fast intervals the member
	// expires, after 3 more it is defaulted, and LACP no longer lets it
	// carry traffic (no lacp-fallback-ab).
	if pid := vswReadPid(filepath.Join(d.dir, "ovs-vswitchd.pid")); pid > 0 {
		syscall.Kill(pid, syscall.SIGKILL)
		vswWaitGone(t, pid)
	}
	vswWait(t, 15*time.Second, "the members to be disabled without a partner", func() bool {
		s := e.mustAppctl("bond/show", bond)
		return strings.Contains(s, "lacp_status: configured\n") && strings.Count(s, ": disabled\n") == 2
	})
	show = e.mustAppctl("lacp/show", bond)
	if !strings.Contains(show, "  status: active\n") || !strings.Contains(show, "member: "+m1+": defaulted detached\n") {
		t.Errorf("lacp/show without a partner:\n%s", show)
	}
	vswWait(t, 10*time.Second, "lacp_current to be false", func() bool {
		out, _ := e.vsctl("get", "interface", m1, "lacp_current")
		return strings.TrimSpace(out) == "false"
	})
	t.Logf("members disabled without a partner %v after the switch started", time.Since(start).Round(time.Millisecond))
	// With lacp-fallback-ab the bond runs active-backup without a partner.
	e.mustVsctl("set", "port", bond, "other_config:lacp-fallback-ab=true")
	vswWait(t, 10*time.Second, m1+" to be enabled by lacp-fallback-ab", func() bool {
		s := e.mustAppctl("bond/show", bond)
		return strings.Contains(s, "lacp_fallback_ab: true\n") && strings.Contains(s, "\nmember "+m1+": enabled\n  active member\n")
	})
}

// TestVswitchdLACPPassiveDebian: lacp=passive both ways, and LACP on a
// port of one interface, against Debian's ovs-vswitchd in its own
// namespace. A govs bond with lacp=passive negotiates with Debian's
// active one; a govs port of one interface with lacp=active negotiates
// with Debian's passive one (each on a bridge of its own, so the two
// links make no loop). Traffic crosses the passive bond.
func TestVswitchdLACPPassiveDebian(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	a := vswAddNS(t, "lacpp-a", "10.134.0.1/24")
	c := vswAddNS(t, "lacpp-c", "10.134.0.2/24")
	const nsD, m0, m1, m2, bond, br, br2 = "gvsw-lacpp-d", "gvswlacppm0", "gvswlacppm1", "gvswlacppm2", "gvswlacpp0", "gvswlacppbr", "gvswlacppb2"
	vswVethNS(t, nsD, [2]string{m0, "d0"}, [2]string{m1, "d1"}, [2]string{m2, "d2"})
	vswIP(t, []string{"link", "set", c.Host, "netns", nsD}, []string{"-n", nsD, "link", "set", c.Host, "up"})
	d := startDebSwitch(t, nsD)
	d.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev",
		"--", "add-port", "br0", c.Host,
		"--", "add-bond", "br0", "bond0", "d0", "d1", "lacp=active", "bond_mode=balance-slb", "other_config:lacp-time=fast",
		"--", "add-br", "br1", "--", "set", "bridge", "br1", "datapath_type=netdev",
		"--", "add-port", "br1", "d2", "lacp=passive", "other_config:lacp-time=fast")
	e.mustVsctl("add-br", br, "--", "add-port", br, a.Host,
		"--", "add-bond", br, bond, m0, m1, "lacp=passive", "bond_mode=balance-slb", "other_config:lacp-time=fast",
		"--", "add-br", br2, "--", "add-port", br2, m2, "lacp=active", "other_config:lacp-time=fast")

	negotiated := func(show, mode string, members int) bool {
		return strings.Contains(show, "  status: "+mode+" negotiated\n") && strings.Count(show, ": current attached\n") == members
	}
	vswWait(t, 15*time.Second, "LACP to negotiate, govs passive against Debian active", func() bool {
		return negotiated(e.mustAppctl("lacp/show", bond), "passive", 2) && negotiated(d.appctl("lacp/show", "bond0"), "active", 2)
	})
	vswWait(t, 15*time.Second, "LACP to negotiate on one interface, govs active against Debian passive", func() bool {
		return negotiated(e.mustAppctl("lacp/show", m2), "active", 1) && negotiated(d.appctl("lacp/show", "d2"), "passive", 1)
	})
	vswWait(t, 10*time.Second, "both members to be enabled", func() bool {
		return strings.Count(e.mustAppctl("bond/show", bond), ": enabled\n") == 2
	})
	// The port of one interface is no bond, but runs LACP.
	if _, err := e.appctl("bond/show", m2); err == nil || !strings.Contains(err.Error(), "no such bond") {
		t.Errorf("bond/show %s: %v, want no such bond", m2, err)
	}
	if list := e.mustAppctl("bond/list"); strings.Contains(list, m2) {
		t.Errorf("bond/list lists the port of one interface:\n%s", list)
	}
	vswWait(t, 10*time.Second, m2+" lacp_current to be true", func() bool {
		out, _ := e.vsctl("get", "interface", m2, "lacp_current")
		return strings.TrimSpace(out) == "true"
	})
	if e.logged("LACP on a port of one interface") {
		t.Errorf("LACP on a port of one interface reported as not supported")
	}
	// Debian's single port sees govs' system as its partner.
	if show := d.appctl("lacp/show", "d2"); !strings.Contains(show, "  partner sys_priority: 65535\n") {
		t.Errorf("Debian's lacp/show d2 (govs' port of one interface has system priority 65535 as OVS's):\n%s", show)
	}
	a.waitPing("10.134.0.2")
}
