package tests

// End-to-end tests of ovs-vswitchd's memory and sockets: ports added and
// deleted many times leave nothing behind (memory/show, goroutines, fds),
// and the sockets it serves are 0750 whatever the umask.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gvmcMemory reads memory/show's key:value figures.
func (e *vswEnv) gvmcMemory() map[string]int {
	e.t.Helper()
	out := e.mustAppctl("memory/show")
	m := map[string]int{}
	for _, kv := range regexp.MustCompile(`([A-Za-z][\w -]*?):(\d+)`).FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(kv[2])
		m[kv[1]] = n
	}
	for _, k := range []string{"goroutines", "heap-live-kB", "heap-inuse-kB", "ports"} {
		if _, ok := m[k]; !ok {
			e.t.Fatalf("memory/show has no %s: %q", k, out)
		}
	}
	return m
}

// gvmcPprof fetches path from the switch's pprof socket.
func gvmcPprof(t *testing.T, sock, path string) string {
	t.Helper()
	c := http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	defer c.CloseIdleConnections()
	resp, err := c.Get("http://x" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", path, resp.Status, err)
	}
	return string(b)
}

func gvmcFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// gvmcDelLinks deletes the links named prefix* that a failed test may
// leave (the switch removes the taps it created when it stops).
func gvmcDelLinks(prefix string) {
	out, _ := exec.Command("ip", "-o", "link", "show").Output()
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) > 1 {
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			if strings.HasPrefix(name, prefix) {
				exec.Command("ip", "link", "del", name).Run()
			}
		}
	}
}

// TestVswitchdPortChurnMemory adds 100 internal ports in one transaction and
// deletes them, six rounds: after each, the live heap (after a forced
// collection), goroutines and fds are back near what the first round left.
func TestVswitchdPortChurnMemory(t *testing.T) {
	// Most of its time is the kernel creating and destroying taps; the
	// figures are the switch's own, whatever else runs.
	t.Parallel()
	const nports, rounds = 100, 6
	// Generous: a round's garbage is collected before the heap is read;
	// what is left is caches and pools that do not grow with rounds (the
	// live heap varies by 3 MB between rounds). Half what 200 ports had,
	// so a leak per port shows as soon as it did then: 24 kB over the
	// five rounds after the first.
	const heapSlackKB = 12 << 10
	t.Cleanup(func() { gvmcDelLinks("gvswm") })
	e := vswNewEnv(t, true)
	prof := filepath.Join(e.dir, "pprof.sock")
	pid := e.startSwitch("--pprof=" + prof)
	e.mustVsctl("add-br", "gvswmbr0", "--", "set", "bridge", "gvswmbr0", "datapath_type=netdev")

	add := []string{"--timeout=120"}
	del := []string{"--timeout=120"}
	for i := range nports {
		p := fmt.Sprintf("gvswm%d", i)
		add = append(add, "--", "add-port", "gvswmbr0", p, "--", "set", "interface", p, "type=internal")
		del = append(del, "--", "del-port", "gvswmbr0", p)
	}
	var base map[string]int
	var baseFDs int
	for r := 1; r <= rounds; r++ {
		e.mustVsctl(add...)
		if m := e.gvmcMemory(); m["ports"] != nports+1 {
			t.Fatalf("round %d: memory/show ports:%d, want %d", r, m["ports"], nports+1)
		}
		e.mustVsctl(del...)
		var m map[string]int
		settled := func() bool {
			// Two collections: the first leaves pooled buffers to the second.
			gvmcPprof(t, prof, "/debug/pprof/heap?gc=1")
			gvmcPprof(t, prof, "/debug/pprof/heap?gc=1")
			m = e.gvmcMemory()
			return base == nil && m["ports"] == 1 ||
				m["goroutines"] <= base["goroutines"]+4 && gvmcFDs(t, pid) <= baseFDs+2 &&
					m["heap-live-kB"] <= base["heap-live-kB"]+heapSlackKB
		}
		for deadline := time.Now().Add(vswTimeout); !settled(); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: after deleting the ports: %v, fds %d; after round 1: %v, fds %d",
					r, m, gvmcFDs(t, pid), base, baseFDs)
			}
		}
		t.Logf("round %d: %v fds %d", r, m, gvmcFDs(t, pid))
		if base == nil {
			base, baseFDs = m, gvmcFDs(t, pid)
		}
	}
}

// TestVswitchdSocketModes: under umask 000 the control socket, the pprof
// socket and a dpdkvhostuser port's socket are still 0750, so that no
// other user may attach as the guest or drive the switch.
func TestVswitchdSocketModes(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	e := vswNewEnv(t, true)
	prof := filepath.Join(e.dir, "pprof.sock")
	pid := e.startSwitch("--pprof=" + prof)
	e.mustVsctl("add-br", "gvswmbr1", "--", "set", "bridge", "gvswmbr1", "datapath_type=netdev",
		"--", "add-port", "gvswmbr1", "gvswmvh0", "--", "set", "interface", "gvswmvh0", "type=dpdkvhostuser")
	vhost := filepath.Join(e.dir, "gvswmvh0")
	vswWait(t, vswTimeout, "the vhost-user socket", func() bool {
		_, err := os.Lstat(vhost)
		return err == nil
	})
	ctl := filepath.Join(e.dir, fmt.Sprintf("ovs-vswitchd.%d.ctl", pid))
	for _, p := range []string{ctl, prof, vhost} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o750 {
			t.Errorf("%s: mode %v, want a socket with 0750", p, fi.Mode())
		}
	}
	if out := gvmcPprof(t, prof, "/debug/pprof/goroutine?debug=1"); !strings.Contains(out, "goroutine profile:") {
		t.Errorf("pprof goroutine profile: %.200q", out)
	}
	e.mustVsctl("del-port", "gvswmbr1", "gvswmvh0")
	vswWait(t, vswTimeout, "the vhost-user socket to go", func() bool {
		_, err := os.Lstat(vhost)
		return os.IsNotExist(err)
	})
}
