package tests

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stpVeth makes veth pair x-y in the root namespace, both ends up;
// cleanup deletes it.
func stpVeth(t testing.TB, x, y string) {
	t.Helper()
	vswClaim(t, x, y)
	vswRun("ip", "link", "del", x)
	t.Cleanup(func() { vswRun("ip", "link", "del", x) })
	for _, c := range [][]string{
		{"ip", "link", "add", x, "type", "veth", "peer", "name", y},
		{"ip", "link", "set", x, "up"},
		{"ip", "link", "set", y, "up"},
	} {
		if out, err := vswRun(c[0], c[1:]...); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
}

// stpRx is the packets links received, from sysfs.
func stpRx(links ...string) int {
	n := 0
	for _, l := range links {
		b, _ := os.ReadFile("/sys/class/net/" + l + "/statistics/rx_packets")
		v, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		n += v
	}
	return n
}

// stpNoStorm sends three broadcast pings from h and fails if the links
// received more than max packets meanwhile.
func stpNoStorm(t *testing.T, h *vswNS, bcast string, max int, links ...string) {
	t.Helper()
	before := stpRx(links...)
	// ping waits its deadline out: no one answers a broadcast ping.
	h.exec("ping", "-b", "-n", "-c", "3", "-i", "0.5", "-w", "2", bcast)
	got := stpRx(links...) - before
	t.Logf("the loop's ports received %d packets during 3 broadcasts", got)
	if got > max {
		t.Errorf("the loop's ports received %d packets during 3 broadcasts: a storm", got)
	}
}

// TestVswitchdSTPTriangle: two govs bridges (A, B; one ovs-vswitchd) and a
// Linux bridge running STP, joined pairwise by veths, make a triangle.
// The Linux bridge is root, so A and B each take their link to it as
// root port and the A-B link is blocked at B's end (A's ID is lower):
// exactly one port of the six blocks. A host behind A reaches the Linux
// bridge's address, and broadcasts do not storm.
func TestVswitchdSTPTriangle(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	p := vswUniq()
	lb := stpAddLinuxBridge(t, p, 2, 4096)
	h := vswAddPrefixedNS(t, p, "h", "10.140.0.1/24")
	if out, err := vswRun("ip", "-n", lb.ns, "addr", "add", "10.140.0.2/24", "dev", "lb"); err != nil {
		t.Fatal(err, out)
	}
	ab, ba := p+"ab", p+"ba"
	stpVeth(t, ab, ba)
	a, b := p+"a", p+"b"
	vswClaim(t, a, b)
	stp := func(br, mac string) []string {
		return append([]string{"--", "set", "bridge", br, "stp_enable=true", "other_config:hwaddr=" + mac}, stpOtherConfig...)
	}
	args := append([]string{"add-br", a}, stp(a, "02:00:00:00:a2:01")...)
	args = append(append(args, "--", "add-br", b), stp(b, "02:00:00:00:a2:02")...)
	e.mustVsctl(append(args,
		"--", "add-port", a, lb.Ends[0], "--", "add-port", a, ab, "--", "add-port", a, h.Host,
		"--", "add-port", b, lb.Ends[1], "--", "add-port", b, ba)...)

	var showA, showB string
	vswWait(t, 15*time.Second, "the triangle to settle with "+ba+" alone blocking", func() bool {
		showA, _ = e.appctl("stp/show", a)
		showB, _ = e.appctl("stp/show", b)
		return stpPortRow(lb.Ends[0], "root", "forwarding").MatchString(showA) &&
			stpPortRow(ab, "designated", "forwarding").MatchString(showA) &&
			stpPortRow(h.Host, "designated", "forwarding").MatchString(showA) &&
			stpPortRow(lb.Ends[1], "root", "forwarding").MatchString(showB) &&
			stpPortRow(ba, "alternate", "blocking").MatchString(showB) &&
			lb.state(0) == "forwarding" && lb.state(1) == "forwarding"
	})
	if n := strings.Count(showA+showB, " blocking "); n != 1 {
		t.Errorf("%d govs ports blocking, want 1:\n%s%s", n, showA, showB)
	}
	h.waitPing("10.140.0.2")
	// Each broadcast comes back once on the blocked port, plus a BPDU a
	// second on each port and stray IPv6 traffic; a storm is thousands.
	stpNoStorm(t, h, "10.140.0.255", 80, lb.Ends[0], lb.Ends[1], ab, ba)
	if err := h.ping("10.140.0.2", 5); err != nil {
		t.Errorf("ping after the broadcasts: %v", err)
	}
}

// TestVswitchdRSTPLinuxBridge: a govs RSTP bridge and a Linux bridge
// running 802.1D STP, joined by two veths, make a loop. The Linux bridge
// ignores RST BPDUs, so govs must fall back to configuration BPDUs on
// both ports (protocol migration) for the Linux bridge to hear of govs,
// the root (priority 4096): the Linux bridge then blocks its second
// port, govs forwards both as designated, a host behind govs reaches the
// Linux bridge's address, and broadcasts do not storm.
func TestVswitchdRSTPLinuxBridge(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	p := vswUniq()
	lb := stpAddLinuxBridge(t, p, 2, 32768)
	h := vswAddPrefixedNS(t, p, "h", "10.141.0.1/24")
	if out, err := vswRun("ip", "-n", lb.ns, "addr", "add", "10.141.0.2/24", "dev", "lb"); err != nil {
		t.Fatal(err, out)
	}
	br, s0, s1 := p+"br", lb.Ends[0], lb.Ends[1]
	vswClaim(t, br)
	e.mustVsctl("add-br", br, "--", "set", "bridge", br, "rstp_enable=true",
		"other_config:hwaddr=02:00:00:00:a3:01", "other_config:rstp-priority=4096",
		"other_config:rstp-max-age=6", "other_config:rstp-forward-delay=4",
		"--", "add-port", br, h.Host, "other_config:rstp-port-admin-edge=true",
		"--", "add-port", br, s0, "--", "add-port", br, s1)

	l := &rstpLoop{e: e}
	vswWait(t, 15*time.Second, "the Linux bridge to hear of govs and block one port", func() bool {
		ports := l.ports(br)
		blocked := 0
		for i := range 2 {
			if lb.designatedRoot(i) != "1000.2:0:0:0:a3:1" {
				return false
			}
			switch lb.state(i) {
			case "blocking":
				blocked++
			case "forwarding":
			default:
				return false
			}
		}
		return blocked == 1 && ports[s0] == "Designated Forwarding" && ports[s1] == "Designated Forwarding" &&
			ports[h.Host] == "Designated Forwarding"
	})
	if show := e.mustAppctl("rstp/show", br); !strings.Contains(show, "  This bridge is the root\n") {
		t.Errorf("rstp/show:\n%s", show)
	}
	h.waitPing("10.141.0.2")
	stpNoStorm(t, h, "10.141.0.255", 60, s0, s1)
	if err := h.ping("10.141.0.2", 5); err != nil {
		t.Errorf("ping after the broadcasts: %v", err)
	}
}
