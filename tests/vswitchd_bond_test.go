package tests

import (
	"bufio"
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
	for _, l := range []string{m0, m1} {
		vswRun("ip", "link", "del", l)
	}
	vswRun("ip", "netns", "del", nsB)
	t.Cleanup(func() {
		vswRun("ip", "netns", "del", nsB)
		vswRun("ip", "link", "del", m0)
		vswRun("ip", "link", "del", m1)
	})
	for _, c := range [][]string{
		{"netns", "add", nsB},
		{"-n", nsB, "link", "add", "lb", "type", "bridge"},
		{"link", "add", m0, "type", "veth", "peer", "name", "eth0", "netns", nsB},
		{"link", "add", m1, "type", "veth", "peer", "name", "eth1", "netns", nsB},
		{"-n", nsB, "link", "set", "eth0", "master", "lb", "up"},
		{"-n", nsB, "link", "set", "eth1", "master", "lb", "up"},
		{"-n", nsB, "link", "set", "lb", "up"},
		{"-n", nsB, "addr", "add", "10.95.0.2/24", "dev", "lb"},
		{"link", "set", m0, "up"},
		{"link", "set", m1, "up"},
	} {
		if out, err := vswRun("ip", c...); err != nil {
			t.Fatalf("ip %s: %v %s", strings.Join(c, " "), err, out)
		}
	}
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
