package tests

import (
	"fmt"
	"io"
	"net"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"
)

// vswInNS runs fn on a thread in network namespace name, so that the
// sockets fn creates live there.
func vswInNS(t testing.TB, name string, fn func()) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	if err := netns.Set(ns); err != nil {
		t.Fatal(err)
	}
	defer netns.Set(orig)
	fn()
}

var dumpFlowRE = regexp.MustCompile(`^recirc_id\(0\),in_port\((\d+)\),(.*), packets:(\d+), bytes:(\d+), used:([^,]+), (?:flags:[^,]*, )?actions:(.*)$`)

// TestVswitchdFlows drives the datapath's flow views with Debian's
// ovs-appctl: megaflows that match only what NORMAL read, a burst of short
// TCP connections served by a handful of flows with none failing, the
// flow limit and idle expiry from other_config, and ofproto/trace.
func TestVswitchdFlows(t *testing.T) {
	e := vswNewEnv(t)
	a := vswAddNS(t, "fla", "10.81.0.1/24")
	b := vswAddNS(t, "flb", "10.81.0.2/24")
	e.mustVsctl("add-br", "gvswfl0", "--", "add-port", "gvswfl0", a.Host, "--", "add-port", "gvswfl0", b.Host)
	a.waitPing("10.81.0.2")

	// A TCP server in b, and 200 connections from a, each one request and
	// one response, as in TCP_CRR.
	var ln net.Listener
	vswInNS(t, b.Name, func() {
		var err error
		if ln, err = net.Listen("tcp", "10.81.0.2:0"); err != nil {
			t.Fatal(err)
		}
	})
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4)
				if _, err := io.ReadFull(c, buf); err == nil {
					c.Write([]byte("pong"))
				}
			}()
		}
	}()
	failed := 0
	vswInNS(t, a.Name, func() {
		for i := 0; i < 200; i++ {
			c, err := net.DialTimeout("tcp", ln.Addr().String(), vswTimeout)
			if err != nil {
				failed++
				continue
			}
			c.SetDeadline(time.Now().Add(vswTimeout))
			buf := make([]byte, 4)
			if _, err := c.Write([]byte("ping")); err != nil {
				failed++
			} else if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "pong" {
				failed++
			}
			c.Close()
		}
	})
	if failed > 0 {
		t.Fatalf("%d of 200 connections failed", failed)
	}

	// The flows NORMAL installed match Ethernet fields only: never IP
	// addresses or TCP ports, so the 200 connections needed few of them.
	out := e.mustAppctl("dpctl/dump-flows")
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		// OVS heads each polling thread's flows with this line.
		if !strings.HasPrefix(l, "flow-dump from ") {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 || len(lines) > 12 {
		t.Fatalf("dpctl/dump-flows gave %d flows for one pair of hosts:\n%s", len(lines), out)
	}
	for _, l := range lines {
		m := dumpFlowRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("dpctl/dump-flows line not in OVS's format: %q", l)
		}
		if strings.Contains(m[2], "ipv4(src=") || strings.Contains(m[2], "tcp(") {
			t.Errorf("megaflow matches on IP addresses or ports: %q", l)
		}
	}
	t.Logf("dpctl/dump-flows:\n%s", out)
	// dpctl/get-flow finds each flow by the UFID dump-flows -m shows, and
	// says what Debian's ovs-vswitchd says of an unknown one. IPv6
	// neighbour and MLD packets may add flows meanwhile, and counters and
	// "used" move on: the plain dump is taken after the UFIDs, and the
	// counters are left out of the comparison.
	ufids := regexp.MustCompile(`ufid:[0-9a-f-]{36}`).FindAllString(e.mustAppctl("dpctl/dump-flows", "-m"), -1)
	if len(ufids) == 0 {
		t.Errorf("dpctl/dump-flows -m shows no UFID")
	}
	counters := regexp.MustCompile(`packets:\d+, bytes:\d+, used:(never|[0-9.]+s)(, flags:\S+)?`)
	plain := map[string]bool{}
	for _, l := range strings.Split(e.mustAppctl("dpctl/dump-flows"), "\n") {
		plain[counters.ReplaceAllString(l, "")] = true
	}
	for _, ufid := range ufids {
		got := strings.TrimSpace(e.mustAppctl("dpctl/get-flow", ufid))
		if !plain[counters.ReplaceAllString(got, "")] {
			t.Errorf("dpctl/get-flow %s: %q, not a line of dump-flows:\n%s", ufid, got, out)
		}
	}
	if out, err := e.appctl("dpctl/get-flow", "ufid:00000000-0000-0000-0000-000000000001"); err == nil ||
		!strings.HasPrefix(out, "ovs-vswitchd: getting flow (No such file or directory)\n") {
		t.Errorf("dpctl/get-flow of an unknown UFID: %q %v", out, err)
	}
	if !strings.Contains(e.mustAppctl("dpif-netdev/pmd-stats-show"), "megaflow hits:") {
		t.Errorf("pmd-stats-show lacks megaflow hits")
	}

	// other_config:flow-limit and max-idle reach the datapath.
	e.mustVsctl("set", "Open_vSwitch", ".", "other_config:flow-limit=1234", "other_config:max-idle=500")
	vswWait(t, vswTimeout, "upcall/show to show the flow limit", func() bool {
		out, _ := e.appctl("upcall/show")
		return strings.Contains(out, "(limit 1234)")
	})
	vswWait(t, vswTimeout, "idle flows to expire", func() bool {
		out, _ := e.appctl("dpctl/dump-flows")
		return strings.TrimSpace(out) == ""
	})
	e.mustVsctl("set", "Open_vSwitch", ".", "other_config:flow-limit=abc")
	vswWait(t, vswTimeout, "the bad flow-limit to be logged", func() bool {
		return vswLogHas(e, "flow-limit")
	})
	if out, _ := e.appctl("upcall/show"); !strings.Contains(out, "(limit 1234)") {
		t.Errorf("a bad flow-limit changed the limit:\n%s", out)
	}

	// ofproto/trace follows NORMAL to the learned port.
	macB := strings.TrimSpace(b.mustExec("cat", "/sys/class/net/eth0/address"))
	macA := strings.TrimSpace(a.mustExec("cat", "/sys/class/net/eth0/address"))
	a.waitPing("10.81.0.2")
	trace := e.mustAppctl("ofproto/trace", "gvswfl0", fmt.Sprintf("in_port=%d,dl_src=%s,dl_dst=%s", e.ofport(a.Host), macA, macB))
	if !strings.Contains(trace, "Datapath actions: ") || !strings.Contains(trace, "NORMAL") {
		t.Errorf("ofproto/trace output:\n%s", trace)
	}
}

// vswLogHas reports whether the switch's log mentions s.
func vswLogHas(e *vswEnv, s string) bool {
	out, _ := vswRun("grep", "-c", s, e.logPath())
	return strings.TrimSpace(out) != "" && strings.TrimSpace(out) != "0"
}
