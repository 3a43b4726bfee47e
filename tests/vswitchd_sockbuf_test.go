package tests

// End-to-end test of live userspace-sock-buf-size changes under a flood.
// Kernel objects are named gvsb*.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestVswitchdSockBufLive floods pings between two namespaces through a
// bridge while userspace-sock-buf-size is set, changed, removed and set
// again, each change moving both ports between their receive ring and
// recvmmsg: every ping must be answered once, and the switch must count no
// drop on either port.
func TestVswitchdSockBufLive(t *testing.T) {
	e := vswNewEnv(t)
	a := vswAddPrefixedNS(t, "gvsb", "a", "10.251.78.1/24")
	b := vswAddPrefixedNS(t, "gvsb", "b", "10.251.78.2/24")
	const br = "gvsbbr"
	e.mustVsctl("add-br", br, "--", "set", "bridge", br, "datapath_type=netdev",
		"--", "add-port", br, a.Host, "--", "add-port", br, b.Host)
	a.waitPing("10.251.78.2")

	const count = 10000 // per flood
	flooded := 0        // changes applied while the flood ran
	sizes := []string{"1048576", "4194304", "", "2097152", "", "212992", ""}
	for i, size := range sizes {
		before := map[string]map[string]string{a.Host: gvsbStats(e, a.Host), b.Host: gvsbStats(e, b.Host)}
		ping := exec.Command("ip", "netns", "exec", a.Name, "ping", "-n", "-q", "-f", "-c", fmt.Sprint(count), "-W", "5", "10.251.78.2")
		var out bytes.Buffer
		ping.Stdout, ping.Stderr = &out, &out
		if err := ping.Start(); err != nil {
			t.Fatal(err)
		}
		waited := make(chan error, 1)
		go func() { waited <- ping.Wait() }()
		if size == "" {
			e.mustVsctl("remove", "open_vswitch", ".", "other_config", "userspace-sock-buf-size")
		} else {
			e.mustVsctl("set", "open_vswitch", ".", "other_config:userspace-sock-buf-size="+size)
		}
		// The change is applied once status shows it (2x: the kernel's
		// accounting); removed, the port is back on its ring (gvsbRingRx).
		want := gvsbRingRx
		if size != "" {
			var n int
			fmt.Sscan(size, &n)
			want = fmt.Sprint(2 * n)
		}
		gvofWaitStatus(e, a.Host, "rx_sock_buf", want)
		gvofWaitStatus(e, b.Host, "rx_sock_buf", want)
		select {
		case err := <-waited:
			waited <- err
			t.Logf("change %d (size %q): the flood had ended before the change was applied", i, size)
		default:
			flooded++
		}
		err := <-waited
		t.Logf("change %d (size %q): %s", i, size, regexp.MustCompile(`\d+ packets transmitted.*`).FindString(out.String()))
		if err != nil || !regexp.MustCompile(fmt.Sprintf(`\b%d packets transmitted, %d received,`, count, count)).MatchString(out.String()) ||
			strings.Contains(out.String(), "duplicates") {
			t.Errorf("change %d (size %q): flood ping lost or duplicated replies: %v", i, size, err)
		}
		for _, p := range []string{a.Host, b.Host} {
			after := gvsbStats(e, p)
			for _, k := range []string{"rx_dropped", "tx_dropped", "rx_errors", "tx_errors"} {
				if after[k] != before[p][k] {
					t.Errorf("change %d (size %q): %s %s went from %s to %s", i, size, p, k, before[p][k], after[k])
				}
			}
		}
	}
	t.Logf("%d of %d changes applied during a flood", flooded, len(sizes))
	log, _ := os.ReadFile(e.logPath())
	for _, p := range []string{a.Host, b.Host} {
		if bytes.Contains(log, []byte(p+": reopened")) {
			t.Errorf("%s was reopened rather than moved to a new socket", p)
		}
		if n := bytes.Count(log, []byte(p+": moved to a new socket")); n != 6 {
			t.Errorf("%s moved to a new socket %d times, want 6 (switches between ring and recvmmsg)", p, n)
		}
	}
}

// gvsbStats returns Interface.statistics of name.
func gvsbStats(e *vswEnv, name string) map[string]string {
	e.t.Helper()
	out := e.mustVsctl("--", "get", "interface", name, "statistics")
	m := map[string]string{}
	for _, kv := range regexp.MustCompile(`([a-z_]+)=(\d+)`).FindAllStringSubmatch(out, -1) {
		m[kv[1]] = kv[2]
	}
	return m
}

// gvsbRingRx is a system port's SO_RCVBUF with userspace-sock-buf-size
// unset: its receive ring's socket keeps the frames larger than a slot in
// 16 MiB (netdev's ringCopyBuf), which SO_RCVBUF reads back doubled.
const gvsbRingRx = "33554432"
