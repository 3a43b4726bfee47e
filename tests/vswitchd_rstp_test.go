package tests

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rstpLoop is two govs bridges, b1 (the root: priority 4096) and b2,
// joined by two veth pairs, with a host namespace on each.
type rstpLoop struct {
	e            *vswEnv
	a, b         *vswNS
	b1, b2       string
	links        [2][2]string // links[i] = {b1's end, b2's end}
	addrA, addrB string
}

func newRSTPLoop(t *testing.T) *rstpLoop {
	e := vswNewEnv(t)
	p := vswUniq()
	l := &rstpLoop{e: e, b1: p + "br1", b2: p + "br2", addrA: "10.135.0.1", addrB: "10.135.0.2"}
	l.a = vswAddPrefixedNS(t, p, "a", l.addrA+"/24")
	l.b = vswAddPrefixedNS(t, p, "b", l.addrB+"/24")
	vswClaim(t, l.b1, l.b2)
	for i := range l.links {
		l.links[i] = [2]string{p + "l" + strconv.Itoa(i) + "x", p + "l" + strconv.Itoa(i) + "y"}
		stpVeth(t, l.links[i][0], l.links[i][1])
	}
	// RSTP on from the start: the loop must never forward before it runs.
	// The hosts' ports are edges: they forward at once.
	e.mustVsctl("add-br", l.b1, "--", "set", "bridge", l.b1, "rstp_enable=true",
		"other_config:hwaddr=02:00:00:00:98:01", "other_config:rstp-priority=4096",
		"--", "add-port", l.b1, l.a.Host, "other_config:rstp-port-admin-edge=true",
		"--", "add-port", l.b1, l.links[0][0], "--", "add-port", l.b1, l.links[1][0],
		"--", "add-br", l.b2, "--", "set", "bridge", l.b2, "rstp_enable=true", "other_config:hwaddr=02:00:00:00:98:02",
		"--", "add-port", l.b2, l.b.Host, "other_config:rstp-port-admin-edge=true",
		"--", "add-port", l.b2, l.links[0][1], "--", "add-port", l.b2, l.links[1][1])
	return l
}

// rstpRow is one port line of rstp/show.
var rstpRow = regexp.MustCompile(`(?m)^  (\S+)\s+(Root|Designated|Alternate|Backup|Disabled)\s+(Discarding|Learning|Forwarding)\s+(\d+)\s+(\d+\.\d+)$`)

// ports returns rstp/show's port lines: name -> "Role State".
func (l *rstpLoop) ports(br string) map[string]string {
	m := map[string]string{}
	for _, r := range rstpRow.FindAllStringSubmatch(l.e.mustAppctl("rstp/show", br), -1) {
		m[r[1]] = r[2] + " " + r[3]
	}
	return m
}

// converged waits until b2 has one root port and one alternate on the
// links, and every other port of both bridges forwards as designated.
func (l *rstpLoop) converged(t *testing.T) (root, alt int) {
	t.Helper()
	vswWait(t, 15*time.Second, "RSTP to converge", func() bool {
		p1, p2 := l.ports(l.b1), l.ports(l.b2)
		root, alt = -1, -1
		for i, lk := range l.links {
			switch p2[lk[1]] {
			case "Root Forwarding":
				root = i
			case "Alternate Discarding":
				alt = i
			}
		}
		return root >= 0 && alt >= 0 && p1[l.links[0][0]] == "Designated Forwarding" && p1[l.links[1][0]] == "Designated Forwarding" &&
			p1[l.a.Host] == "Designated Forwarding" && p2[l.b.Host] == "Designated Forwarding"
	})
	return root, alt
}

// linkPackets is the packets the loop's four veth ends sent.
func (l *rstpLoop) linkPackets() int {
	n := 0
	for _, lk := range l.links {
		for _, x := range lk {
			out, _ := vswRun("cat", "/sys/class/net/"+x+"/statistics/tx_packets")
			v, _ := strconv.Atoi(strings.TrimSpace(out))
			n += v
		}
	}
	return n
}

// TestVswitchdRSTPLoop: two govs bridges in a loop of two links converge
// (b2 has a root port and an alternate, discarding), hosts behind them
// ping, a broadcast crosses without a storm, the status columns say what
// rstp/show says (vswitchd_rstp_debian_test.go compares their keys with
// Debian's), and when b2's root link goes down the alternate takes
// over and the ping recovers.
func TestVswitchdRSTPLoop(t *testing.T) {
	t.Parallel()
	l := newRSTPLoop(t)
	start := time.Now()
	root, alt := l.converged(t)
	t.Logf("converged %v after the bridges were added", time.Since(start).Round(time.Millisecond))

	show := l.e.mustAppctl("rstp/show", l.b2)
	for _, want := range []string{
		"---- " + l.b2 + " ----\nRoot ID:\n  stp-priority    4096\n  stp-system-id   02:00:00:00:98:01\n",
		"  root-port       " + l.links[root][1] + "\n",
		"Bridge ID:\n  stp-priority    32768\n  stp-system-id   02:00:00:00:98:02\n  stp-hello-time  2s\n  stp-max-age     20s\n  stp-fwd-delay   15s\n",
		"  Interface  Role       State      Cost     Pri.Nbr \n  ---------- ---------- ---------- -------- -------\n",
	} {
		if !strings.Contains(show, want) {
			t.Errorf("rstp/show %s lacks %q:\n%s", l.b2, want, show)
		}
	}
	if show := l.e.mustAppctl("rstp/show", l.b1); !strings.Contains(show, "  This bridge is the root\n") {
		t.Errorf("rstp/show %s:\n%s", l.b1, show)
	}
	if _, err := l.e.appctl("rstp/show", "nosuch"); err == nil || !strings.Contains(err.Error(), "No such RSTP object") {
		t.Errorf("rstp/show nosuch: %v", err)
	}

	l.a.waitPing(l.addrB)
	t.Logf("ping passed %v after the bridges were added", time.Since(start).Round(time.Millisecond))

	// A broadcast storm would send thousands of frames a second over
	// the loop; without one a few broadcasts cost a few frames each.
	before := l.linkPackets()
	// Nobody answers a broadcast ping: -w ends it (ping waits 10 s for
	// replies otherwise).
	l.a.exec("ping", "-q", "-n", "-b", "-c", "5", "-i", "0.2", "-w", "2", "10.135.0.255")
	if n := l.linkPackets() - before; n > 200 {
		t.Errorf("%d frames crossed the loop for 5 broadcast pings: a storm", n)
	} else {
		t.Logf("%d frames crossed the loop's links for the broadcasts", n)
	}

	vswWait(t, 15*time.Second, "rstp_status to be written", func() bool {
		out, _ := l.e.vsctl("get", "port", l.links[alt][1], "rstp_status")
		return strings.Contains(out, "rstp_port_role=Alternate") && strings.Contains(out, "rstp_port_state=Discarding")
	})
	br, _ := l.e.vsctl("get", "bridge", l.b2, "rstp_status")
	if !strings.Contains(br, "rstp_root_id=\"1000.020000009801\"") || !strings.Contains(br, "rstp_bridge_id=\"8000.020000009802\"") {
		t.Errorf("bridge rstp_status: %s", br)
	}

	// b2's root link goes down: the alternate becomes the root port
	// at once, without waiting for timers.
	if out, err := vswRun("ip", "link", "set", l.links[root][1], "down"); err != nil {
		t.Fatal(err, out)
	}
	down := time.Now()
	vswWait(t, 10*time.Second, "the alternate port to take over", func() bool {
		return l.ports(l.b2)[l.links[alt][1]] == "Root Forwarding"
	})
	l.a.waitPing(l.addrB)
	t.Logf("ping recovered %v after the root link went down", time.Since(down).Round(time.Millisecond))
}
