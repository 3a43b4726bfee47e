package tests

// Chaos suite: faults (kill -9, torn files, link flaps), load (port churn,
// concurrent clients) and hostile peers (OVSDB clients, a vhost-user
// frontend) against govs' daemons, driven by Debian's tools. Every test
// logs one or more lines starting with "chaos: " holding its figures; make
// chaos prints them as a table. By default each test runs a quick version
// that fits make test's time budget; GOVS_CHAOS=full (make chaos) runs the
// full counts. Kernel objects are named gvch*.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chaosFull reports whether the full counts were asked for (make chaos).
func chaosFull() bool { return os.Getenv("GOVS_CHAOS") == "full" }

// chaosN picks the quick or the full count.
func chaosN(quick, full int) int {
	if chaosFull() {
		return full
	}
	return quick
}

// chaosFigures logs a test's summary line, which make chaos collects.
func chaosFigures(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Logf("chaos: %-28s %s", t.Name(), fmt.Sprintf(format, args...))
}

// chaosProc is what /proc and memory/show tell about a daemon.
type chaosProc struct {
	rssKB int
	fds   int
	extra map[string]int // memory/show keys naming heap or goroutine figures
}

// chaosStat reads pid's resident set (VmRSS) and open descriptors.
func chaosStat(pid int) (chaosProc, error) {
	var s chaosProc
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			s.rssKB, _ = strconv.Atoi(f[1])
		}
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, err
	}
	s.fds = len(ents)
	return s, nil
}

// chaosMemoryShow picks the figures about the Go heap and goroutines from
// memory/show's "key:value" pairs, if the switch reports any.
func chaosMemoryShow(out string) map[string]int {
	m := map[string]int{}
	for _, f := range strings.Fields(out) {
		k, v, ok := strings.Cut(f, ":")
		if !ok {
			continue
		}
		lk := strings.ToLower(k)
		if !strings.Contains(lk, "heap") && !strings.Contains(lk, "goroutine") {
			continue
		}
		if n, err := strconv.Atoi(v); err == nil {
			m[k] = n
		}
	}
	return m
}

// chaosMemBound is how far a figure may grow over a run and still count as
// flat: twice its baseline, or the baseline plus slack, whichever is more.
// A Go daemon keeps some freed heap before returning it to the kernel, and
// a busy one keeps more; a leak of the kind this guards against (RSS 77 ->
// 1932 MB after 6 rounds of 200 ports) grows without bound.
func chaosMemBound(base, slack int) int {
	return max(2*base, base+slack)
}

// chaosSlackKB is the RSS slack of chaosMemBound: 64 MB.
const chaosSlackKB = 64 << 10

// TestChaosHelpers checks the figures the suite computes (no daemons).
func TestChaosHelpers(t *testing.T) {
	for _, tc := range []struct {
		out     string
		gap     time.Duration
		replies int
	}{
		{"", 0, 0},
		{"[100.000000] 64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=0.1 ms\n", 0, 1},
		{"PING 10.0.0.2\n[100.000000] 64 bytes from x\n[100.010000] 64 bytes from x\nno answer yet for icmp_seq=3\n[100.510000] 64 bytes from x\n[100.520000] 64 bytes from x\n", 500 * time.Millisecond, 4},
	} {
		gap, n := chaosPingGap(tc.out)
		if n != tc.replies || (gap-tc.gap).Abs() > time.Millisecond {
			t.Errorf("chaosPingGap(%q) = %v, %d; want %v, %d", tc.out, gap, n, tc.gap, tc.replies)
		}
	}
	got := chaosMemoryShow("bridges:1 go-heap-inuse-kB:2048 goroutines:31 idl-cells-Open_vSwitch:90 ports:3 udpif keys:0\n")
	if len(got) != 2 || got["go-heap-inuse-kB"] != 2048 || got["goroutines"] != 31 {
		t.Errorf("chaosMemoryShow: %v", got)
	}
	if chaosUnit("go-heap-inuse-kB") != 1<<10 || chaosUnit("heap") != 1 {
		t.Error("chaosUnit")
	}
	for _, tc := range [][3]int{{10, 64, 74}, {100, 64, 200}} {
		if b := chaosMemBound(tc[0], tc[1]); b != tc[2] {
			t.Errorf("chaosMemBound(%d, %d) = %d, want %d", tc[0], tc[1], b, tc[2])
		}
	}
}
