package tests

import (
	"bufio"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestVswitchdBondFailover: namespace bond-a reaches the bridge through a
// plain port, namespace bond-b through an active-backup bond of two veths
// whose far ends are ports of a Linux bridge there (this kernel has no
// bonding module). A ping runs while the active member's peer is set down:
// the bond fails over on carrier loss, the ping loses at most a few
// packets, and bond/show reports the new active member.
func TestVswitchdBondFailover(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	a := vswAddNS(t, "bond-a", "10.95.0.1/24")
	const nsB, m0, m1, bond, br = "gvsw-bond-b", "gvswbondm0", "gvswbondm1", "gvswbond0", "gvswbondbr"
	bondPeerNS(t, nsB, m0, m1, "10.95.0.2/24")
	e.mustVsctl("add-br", br, "--", "add-port", br, a.Host,
		"--", "add-bond", br, bond, m0, m1, "bond_mode=active-backup", "other_config:bond-detect-mode=carrier")
	a.waitPing("10.95.0.2")

	activeRe := regexp.MustCompile(`(?m)^member (\S+): enabled\n  active member$`)
	active := func() string {
		m := activeRe.FindStringSubmatch(e.mustAppctl("bond/show", bond))
		if m == nil {
			return ""
		}
		return m[1]
	}
	if got := active(); got != m0 {
		t.Fatalf("active member %q, want %s:\n%s", got, m0, e.mustAppctl("bond/show", bond))
	}
	if got, want := e.mustAppctl("bond/list"), "bond\ttype\trecircID\tmembers\n"+bond+"\tactive-backup\t0\t"+m0+", "+m1+"\n"; got != want {
		t.Errorf("bond/list:\n%q\nwant\n%q", got, want)
	}

	// A ping of 150 answers; once 20 are in, m0's peer goes down.
	ping := exec.Command("ip", "netns", "exec", a.Name, "ping", "-n", "-c", "150", "-i", "0.02", "-w", "15", "10.95.0.2")
	out, err := ping.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ping.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	replies := 0
	var summary strings.Builder
	for sc.Scan() {
		line := sc.Text()
		summary.WriteString(line + "\n")
		if strings.Contains(line, "bytes from") {
			if replies++; replies == 20 {
				if o, err := vswRun("ip", "-n", nsB, "link", "set", "eth0", "down"); err != nil {
					t.Errorf("setting eth0 down: %v %s", err, o)
				}
			}
		}
	}
	if err := ping.Wait(); err != nil {
		t.Errorf("ping: %v\n%s", err, vswTail(summary.String(), 4))
	}
	m := regexp.MustCompile(`(\d+) packets transmitted, (\d+) received`).FindStringSubmatch(summary.String())
	if m == nil {
		t.Fatalf("no ping summary:\n%s", vswTail(summary.String(), 4))
	}
	t.Logf("ping across the failover: %s", m[0])
	sent, _ := strconv.Atoi(m[1])
	got, _ := strconv.Atoi(m[2])
	if lost := sent - got; lost > 20 {
		t.Errorf("the failover lost %d packets: %s", lost, m[0])
	}
	show := e.mustAppctl("bond/show", bond)
	if got := active(); got != m1 || !strings.Contains(show, "\nmember "+m0+": disabled\n  may_enable: false\n") {
		t.Errorf("after the failover bond/show:\n%s", show)
	}
	mac, _ := vswRun("cat", "/sys/class/net/"+m1+"/address")
	want := `"` + strings.TrimSpace(mac) + `"`
	vswWait(t, vswTimeout, "Port.bond_active_slave to be "+want, func() bool {
		out, _ := e.vsctl("get", "port", bond, "bond_active_slave")
		return strings.TrimSpace(out) == want
	})
	for _, l := range []string{"member " + m0 + ": link state down", "member " + m0 + ": disabled", "bond " + bond + ": active member is now " + m1} {
		if !e.logged(l) {
			t.Errorf("not logged: %q", l)
		}
	}

	// m0 back: enabled, but m1 stays active until told otherwise.
	vswRun("ip", "-n", nsB, "link", "set", "eth0", "up")
	vswWait(t, vswTimeout, m0+" to be enabled again", func() bool {
		return strings.Contains(e.mustAppctl("bond/show", bond), "\nmember "+m0+": enabled\n")
	})
	if got := active(); got != m1 {
		t.Errorf("active member %q after %s came back, want %s", got, m0, m1)
	}
	if got := e.mustAppctl("bond/set-active-member", bond, m0); got != "done\n" {
		t.Errorf("bond/set-active-member printed %q", got)
	}
	if got := active(); got != m0 {
		t.Errorf("active member %q after set-active-member", got)
	}
	if err := a.ping("10.95.0.2", 5); err != nil {
		t.Errorf("ping after set-active-member: %v", err)
	}
}

// bondPeerNS makes namespace ns the far end of bond members m0 and m1:
// their veth peers eth0 and eth1 are ports of a Linux bridge there that
// holds addr (this kernel has no bonding module). Cleanup removes them.
func bondPeerNS(t *testing.T, ns, m0, m1, addr string) {
	t.Helper()
	vswVethNS(t, ns, [2]string{m0, "eth0"}, [2]string{m1, "eth1"})
	vswIP(t,
		[]string{"-n", ns, "link", "add", "lb", "type", "bridge"},
		[]string{"-n", ns, "link", "set", "eth0", "master", "lb"},
		[]string{"-n", ns, "link", "set", "eth1", "master", "lb"},
		[]string{"-n", ns, "link", "set", "lb", "up"},
		[]string{"-n", ns, "addr", "add", addr, "dev", "lb"})
}

// vswVethNS makes namespace ns holding the far ends of veths: each pair
// is a host-side name and its peer's name in ns, both brought up.
// Cleanup removes them.
func vswVethNS(t *testing.T, ns string, pairs ...[2]string) {
	t.Helper()
	del := func() {
		vswRun("ip", "netns", "del", ns)
		for _, p := range pairs {
			vswRun("ip", "link", "del", p[0])
		}
	}
	del()
	t.Cleanup(del)
	cmds := [][]string{{"netns", "add", ns}, {"-n", ns, "link", "set", "lo", "up"}}
	for _, p := range pairs {
		cmds = append(cmds, []string{"link", "add", p[0], "type", "veth", "peer", "name", p[1], "netns", ns},
			[]string{"-n", ns, "link", "set", p[1], "up"}, []string{"link", "set", p[0], "up"})
	}
	vswIP(t, cmds...)
}

// vswIP runs ip with each argument list in turn, failing t on an error.
func vswIP(t *testing.T, cmds ...[]string) {
	t.Helper()
	for _, c := range cmds {
		if out, err := vswRun("ip", c...); err != nil {
			t.Fatalf("ip %s: %v %s", strings.Join(c, " "), err, out)
		}
	}
}

// bondHashes parses bond/show's hash lines: the loaded buckets by member.
func bondHashes(show string) map[string][]string {
	out := map[string][]string{}
	member := ""
	for _, l := range strings.Split(show, "\n") {
		if m := regexp.MustCompile(`^member (\S+): `).FindStringSubmatch(l); m != nil {
			member = m[1]
		} else if m := regexp.MustCompile(`^  hash (\d+): \d+ kB load$`).FindStringSubmatch(l); m != nil {
			out[member] = append(out[member], m[1])
		}
	}
	return out
}

// TestVswitchdBondRebalance: four namespaces ping namespace rbal-b
// through a balance-slb bond, each source MAC in a bucket of its own
// (unless two collide) carrying a few hundred kB/s. bond/show lists the
// buckets' loads; once bond/migrate put every loaded bucket on m0, the
// next rebalancing (bond-rebalance-interval=2000) moves some back to
// m1, logs it as OVS does, and m1 sends again.
func TestVswitchdBondRebalance(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	const nsB, m0, m1, bond, br = "gvsw-rbal-b", "gvswrbalm0", "gvswrbalm1", "gvswrbalbd", "gvswrbalbr"
	bondPeerNS(t, nsB, m0, m1, "10.96.0.100/24")
	args := []string{"add-br", br}
	var srcs []*vswNS
	for i := range 4 {
		a := vswAddNS(t, fmt.Sprintf("rbal%d", i), fmt.Sprintf("10.96.0.%d/24", i+1))
		srcs = append(srcs, a)
		args = append(args, "--", "add-port", br, a.Host)
	}
	e.mustVsctl(append(args, "--", "add-bond", br, bond, m0, m1, "bond_mode=balance-slb",
		"other_config:bond-rebalance-interval=2000")...)
	if e.logged("bond-rebalance-interval " + "is not supported") {
		t.Errorf("bond-rebalance-interval reported as not supported")
	}
	for _, a := range srcs {
		a.waitPing("10.96.0.100")
		ping := exec.Command("ip", "netns", "exec", a.Name, "ping", "-q", "-n", "-s", "1400", "-i", "0.005", "-w", "120", "10.96.0.100")
		if err := ping.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ping.Process.Kill()
			ping.Wait()
		})
	}
	var hashes map[string][]string
	vswWait(t, vswTimeout, "bond/show to list two loaded buckets", func() bool {
		hashes = bondHashes(e.mustAppctl("bond/show", bond))
		return len(hashes[m0])+len(hashes[m1]) >= 2
	})
	// Migrate early in a rebalancing interval, so that all the buckets
	// are on m0 when the next one comes.
	nextRe := regexp.MustCompile(`next rebalance: (-?\d+) ms`)
	vswWait(t, vswTimeout, "a rebalancing to be 1 s away or more", func() bool {
		m := nextRe.FindStringSubmatch(e.mustAppctl("bond/show", bond))
		if m == nil {
			return false
		}
		n, _ := strconv.Atoi(m[1])
		return n >= 1000
	})
	logSize := len(e.readLog())
	// Every bucket loaded by now: the first look may have missed some.
	hashes = bondHashes(e.mustAppctl("bond/show", bond))
	for _, h := range append(hashes[m0], hashes[m1]...) {
		if got := e.mustAppctl("bond/migrate", bond, h, m0); got != "migrated\n" {
			t.Errorf("bond/migrate %s: %q", h, got)
		}
	}
	// Each rebalancing looks at the load since the one before; on a
	// loaded machine the pings' rate, and with it the load, swings, and
	// a rebalancing may find too little to move: wait for one that moves.
	vswWait(t, vswTimeout, "rebalancing to move a bucket from "+m0+" to "+m1, func() bool {
		log := e.readLog()
		return len(log) > logSize && regexp.MustCompile(`bond `+bond+`: shift \d+kB of load \(with hash \d+\) from `+m0+` to `+m1).MatchString(log[logSize:])
	})
	vswWait(t, vswTimeout, "bond/show to list a loaded bucket on "+m1, func() bool {
		return len(bondHashes(e.mustAppctl("bond/show", bond))[m1]) > 0
	})
	t.Logf("after rebalancing:\n%s", e.mustAppctl("bond/show", bond))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"nosuch", "1", m0}, "no such bond"},
		{[]string{bond, "x1", m0}, "bad hash"},
		{[]string{bond, "1", "nosuch"}, "no such member"},
	} {
		if _, err := e.appctl(append([]string{"bond/migrate"}, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("bond/migrate %v: %v, want %q", c.args, err, c.want)
		}
	}
}
