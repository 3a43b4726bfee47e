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
