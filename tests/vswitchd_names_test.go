package tests

// Kernel object names for end-to-end tests that run in parallel
// (t.Parallel): veths, namespaces and bridges (an internal port is a tap
// named after its bridge) live in the root namespace, so two tests running
// at once must never use the same name. vswAddPrefixedNS claims the names
// it creates and fails a test at once when another running test holds
// one, rather than letting both flake; vswUniq gives a new test a prefix
// of its own.

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

var (
	vswNamesMu   sync.Mutex
	vswNamesHeld = map[string]string{} // kernel object name -> test holding it
	vswUniqSeq   atomic.Int64
)

// vswClaim records that t uses the kernel objects names until it ends,
// and fails it if a test still running holds one of them.
func vswClaim(t testing.TB, names ...string) {
	t.Helper()
	vswNamesMu.Lock()
	defer vswNamesMu.Unlock()
	for _, n := range names {
		if other, ok := vswNamesHeld[n]; ok && other != t.Name() {
			t.Fatalf("%s is in use by %s, which runs at the same time: take names from vswUniq", n, other)
		}
	}
	for _, n := range names {
		if _, ok := vswNamesHeld[n]; ok {
			continue
		}
		vswNamesHeld[n] = t.Name()
		t.Cleanup(func() {
			vswNamesMu.Lock()
			delete(vswNamesHeld, n)
			vswNamesMu.Unlock()
		})
	}
}

// vswUniq returns a prefix for a test's kernel objects that no other test in
// this binary gets: "gvu" and a number, at most 5 characters, which leaves
// 10 for a tag in an interface name. With p := vswUniq(),
// vswAddPrefixedNS(t, p, "a", addr) makes namespace <p>-a and veth <p>a;
// name a bridge p+"br" and claim it with vswClaim(t, p+"br").
func vswUniq() string {
	return "gvu" + strconv.FormatInt(vswUniqSeq.Add(1), 36)
}
