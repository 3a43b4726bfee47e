package tests

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// chaosBridge makes bridge br (netdev datapath) holding the host ends of
// two namespaces at 10.79.<net>.1 and .2, and waits for a ping across.
func chaosBridge(t *testing.T, e *vswEnv, br string, net int, tag string) (*vswNS, *vswNS) {
	t.Helper()
	ns1 := vswAddPrefixedNS(t, "gvch", tag+"1", fmt.Sprintf("10.79.%d.1/24", net))
	ns2 := vswAddPrefixedNS(t, "gvch", tag+"2", fmt.Sprintf("10.79.%d.2/24", net))
	e.mustVsctl("add-br", br, "--", "set", "bridge", br, "datapath_type=netdev",
		"--", "add-port", br, ns1.Host, "--", "add-port", br, ns2.Host)
	ns1.waitPing(fmt.Sprintf("10.79.%d.2", net))
	return ns1, ns2
}

// chaosIperfServer runs iperf3 -s in ns on ip until the test ends.
func chaosIperfServer(t *testing.T, ns *vswNS, ip string) {
	t.Helper()
	ns.serve(t, "5201", "iperf3", "-s", "--bind", ip)
}

// chaosBg is a command running in the background with its output kept.
type chaosBg struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan error
}

func chaosStartBg(t *testing.T, name string, args ...string) *chaosBg {
	t.Helper()
	b := &chaosBg{cmd: exec.Command(name, args...), done: make(chan error, 1)}
	b.cmd.Stdout, b.cmd.Stderr = &b.out, &b.out
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.done <- b.cmd.Wait() }()
	t.Cleanup(func() { b.stop() })
	return b
}

// wait waits for the command to end by itself.
func (b *chaosBg) wait(d time.Duration) error {
	select {
	case err := <-b.done:
		b.done <- err
		return err
	case <-time.After(d):
		return fmt.Errorf("%s still running after %v", b.cmd.Path, d)
	}
}

// stop interrupts the command (the process this test started) and waits.
func (b *chaosBg) stop() {
	b.cmd.Process.Signal(syscall.SIGINT)
	if b.wait(10*time.Second) != nil {
		b.cmd.Process.Kill()
		b.wait(10 * time.Second)
	}
}

var chaosPingTS = regexp.MustCompile(`(?m)^\[(\d+\.\d+)\] \d+ bytes from`)

// chaosPingGap returns the longest time between two replies in the output
// of ping -D, and the number of replies.
func chaosPingGap(out string) (time.Duration, int) {
	var prev float64
	var gap float64
	ms := chaosPingTS.FindAllStringSubmatch(out, -1)
	for i, m := range ms {
		ts, _ := strconv.ParseFloat(m[1], 64)
		if i > 0 && ts-prev > gap {
			gap = ts - prev
		}
		prev = ts
	}
	return time.Duration(gap * float64(time.Second)), len(ms)
}

// TestChaosVswitchdKill9: ovs-vswitchd is killed with SIGKILL while iperf3
// runs through it and ovs-vsctl adds and deletes ports, then restarted.
// Forwarding resumes (the TCP stream completes, pings come back), the
// ofports are those from before, every ovs-vsctl transaction completes, and
// the longest gap between ping replies is the outage.
func TestChaosVswitchdKill9(t *testing.T) {
	rounds := chaosN(1, 3)
	e := vswNewEnv(t)
	ns1, ns2 := chaosBridge(t, e, "gvchbr0", 0, "k")
	e.mustVsctl("add-port", "gvchbr0", "gvchi0", "--", "set", "interface", "gvchi0", "type=internal")
	names := []string{ns1.Host, ns2.Host, "gvchi0"}
	ofports := map[string]int{}
	for _, n := range names {
		ofports[n] = e.ofport(n)
	}
	chaosIperfServer(t, ns2, "10.79.0.2")
	var outages []string
	var worst time.Duration
	txns := 0
	for round := 0; round < rounds; round++ {
		ping := chaosStartBg(t, "ip", "netns", "exec", ns1.Name, "ping", "-n", "-D", "-i", "0.01", "-W", "1", "10.79.0.2")
		iperf := chaosStartBg(t, "ip", "netns", "exec", ns1.Name, "timeout", "120", "iperf3", "-c", "10.79.0.2", "-t", "8")

		var stop atomic.Bool
		var done atomic.Int64
		var wg sync.WaitGroup
		var mu sync.Mutex // guards errs
		var errs []string
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load() && i < 1000; i++ {
				p := fmt.Sprintf("gvcht%d", i%4)
				var err error
				if _, err = e.vsctl("--may-exist", "add-port", "gvchbr0", p, "--", "set", "interface", p, "type=internal"); err == nil {
					done.Add(1)
					_, err = e.vsctl("del-port", "gvchbr0", p)
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err.Error())
					mu.Unlock()
					return
				}
				done.Add(1)
			}
		}()
		vswWait(t, 30*time.Second, "iperf3 to connect and ovs-vsctl to commit", func() bool {
			out, _ := ns1.exec("ss", "-Htn", "state", "established", "dport = :5201")
			return strings.Count(out, "\n") >= 2 && done.Load() >= 2
		})
		pid := vswReadPid(filepath.Join(e.dir, "ovs-vswitchd.pid"))
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		vswWaitGone(t, pid)
		e.startSwitch()
		ns1.waitPing("10.79.0.2")
		n0 := done.Load()
		vswWait(t, 60*time.Second, "ovs-vsctl to commit against the restarted switch", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return done.Load() >= n0+2 || len(errs) > 0
		})
		stop.Store(true)
		wg.Wait()
		txns += int(done.Load())
		if len(errs) > 0 {
			t.Errorf("round %d: ovs-vsctl across the restart: %s", round, errs[0])
		}
		if err := iperf.wait(130 * time.Second); err != nil {
			t.Errorf("round %d: iperf3 across kill -9: %v\n%s", round, err, iperf.out.String())
		}
		ping.stop()
		gap, replies := chaosPingGap(ping.out.String())
		worst = max(worst, gap)
		outages = append(outages, gap.Round(time.Millisecond).String())
		t.Logf("round %d: iperf3 %s; %d ping replies, longest gap %v", round, vswIperfSummary(iperf.out.String()), replies, gap)
		for _, n := range names {
			if of := e.ofport(n); of != ofports[n] {
				t.Errorf("round %d: %s ofport %d after the restart, was %d", round, n, of, ofports[n])
			}
		}
	}
	// The database and the switch agree on what ovs-vsctl left behind.
	vswWait(t, vswTimeout, "every interface to have an ofport", func() bool {
		out, err := e.vsctl("--bare", "--columns=ofport", "list", "interface")
		return err == nil && !strings.Contains(out, "-1") && len(strings.Fields(out)) == len(strings.Fields(e.mustVsctl("--bare", "--columns=name", "list", "interface")))
	})
	chaosFigures(t, "%d kill -9 under iperf3 and %d ovs-vsctl commits: outage %s (longest %v), ofports unchanged",
		rounds, txns, strings.Join(outages, ","), worst.Round(time.Millisecond))
}

// chaosUnit scales a memory/show figure to bytes from its key's unit.
func chaosUnit(key string) int {
	switch k := strings.ToLower(key); {
	case strings.HasSuffix(k, "kb") || strings.HasSuffix(k, "kib"):
		return 1 << 10
	case strings.HasSuffix(k, "mb") || strings.HasSuffix(k, "mib"):
		return 1 << 20
	}
	return 1
}

// TestChaosVswitchdPortChurn adds and deletes internal ports in one
// transaction each, round after round, and requires ovs-vswitchd's RSS,
// descriptors and (when memory/show reports them) Go heap and goroutines
// to come back to about where they started.
func TestChaosVswitchdPortChurn(t *testing.T) {
	rounds, ports := chaosN(2, 5), chaosN(100, 200)
	e := vswNewEnv(t)
	ns1, _ := chaosBridge(t, e, "gvchbr1", 1, "c")
	pid := vswReadPid(filepath.Join(e.dir, "ovs-vswitchd.pid"))
	base, err := chaosStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	baseExtra := chaosMemoryShow(e.mustAppctl("memory/show"))
	// ovs-vsctl's own deadline, for transactions of hundreds of ports on
	// a loaded machine.
	add, del := []string{"--timeout=55"}, []string{"--timeout=55"}
	for i := 0; i < ports; i++ {
		p := fmt.Sprintf("gvchp%d", i)
		add = append(add, "--", "add-port", "gvchbr1", p, "--", "set", "interface", p, "type=internal")
		del = append(del, "--", "del-port", "gvchbr1", p)
	}
	peak := base
	for r := 0; r < rounds; r++ {
		e.mustVsctl(add...)
		if n := strings.Count(e.mustAppctl("dpif/show"), "gvchp"); n != ports {
			t.Fatalf("round %d: dpif/show lists %d of the %d ports", r, n, ports)
		}
		if st, err := chaosStat(pid); err == nil && st.rssKB > peak.rssKB {
			peak = st
		}
		e.mustVsctl(del...)
		st, err := chaosStat(pid)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: RSS %d MB, %d fds after deleting %d ports", r, st.rssKB>>10, st.fds, ports)
	}
	rssBound := chaosMemBound(base.rssKB, chaosSlackKB)
	var now chaosProc
	var extra map[string]int
	over := func() []string {
		var o []string
		if now.rssKB > rssBound {
			o = append(o, fmt.Sprintf("RSS %d MB > %d MB", now.rssKB>>10, rssBound>>10))
		}
		if now.fds > base.fds+8 {
			o = append(o, fmt.Sprintf("fds %d > %d", now.fds, base.fds+8))
		}
		for k, v := range extra {
			b, ok := baseExtra[k]
			if !ok {
				continue
			}
			bound := chaosMemBound(b, (64<<20)/chaosUnit(k))
			if strings.Contains(strings.ToLower(k), "goroutine") {
				bound = b + 16
			}
			if v > bound {
				o = append(o, fmt.Sprintf("%s %d > %d", k, v, bound))
			}
		}
		sort.Strings(o)
		return o
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if now, err = chaosStat(pid); err != nil {
			t.Fatalf("ovs-vswitchd is gone: %v", err)
		}
		extra = chaosMemoryShow(e.mustAppctl("memory/show"))
		if len(over()) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if o := over(); len(o) > 0 {
		t.Errorf("after %d rounds of %d ports: %s (baseline RSS %d MB, %d fds, %v)", rounds, ports, strings.Join(o, ", "), base.rssKB>>10, base.fds, baseExtra)
	}
	ns1.waitPing("10.79.1.2")
	var ex []string
	for k, v := range extra {
		ex = append(ex, fmt.Sprintf("%s %d -> %d", k, baseExtra[k], v))
	}
	sort.Strings(ex)
	if len(ex) == 0 {
		ex = []string{"no heap/goroutine figures in memory/show"}
	}
	chaosFigures(t, "%d ports added and deleted (%d rounds): RSS %d -> peak %d -> %d MB (bound %d), fds %d -> %d, %s",
		rounds*ports, rounds, base.rssKB>>10, peak.rssKB>>10, now.rssKB>>10, rssBound>>10, base.fds, now.fds, strings.Join(ex, ", "))
}

// TestChaosVswitchdConcurrentVsctl: many ovs-vsctl clients at once, each
// waiting for the switch: adding ports, setting keys, reading; then as many
// deleting. Every one succeeds and the switch ends up as the database says.
func TestChaosVswitchdConcurrentVsctl(t *testing.T) {
	clients := chaosN(40, 100)
	e := vswNewEnv(t)
	ns1, _ := chaosBridge(t, e, "gvchbr2", 2, "q")
	run := func(argv func(i int) []string) int {
		var wg sync.WaitGroup
		var failed atomic.Int64
		for i := 0; i < clients; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := vswRun(vswVsctl, append([]string{"--db=unix:" + e.sock(), "--timeout=60"}, argv(i)...)...); err != nil {
					failed.Add(1)
					t.Errorf("client %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		return int(failed.Load())
	}
	port := func(i int) string { return fmt.Sprintf("gvchx%d", i) }
	failed := run(func(i int) []string {
		switch i % 3 {
		case 0:
			return []string{"add-port", "gvchbr2", port(i), "--", "set", "interface", port(i), "type=internal"}
		case 1:
			return []string{"set", "bridge", "gvchbr2", fmt.Sprintf("external_ids:k%d=v%d", i, i)}
		}
		return []string{"show"}
	})
	seen := map[int]string{}
	added := 0
	for i := 0; i < clients; i += 3 {
		of := e.ofport(port(i))
		if of <= 0 || seen[of] != "" {
			t.Errorf("%s: ofport %d (also %s)", port(i), of, seen[of])
		}
		seen[of] = port(i)
		added++
	}
	dpif := e.mustAppctl("dpif/show")
	ids := e.mustVsctl("get", "bridge", "gvchbr2", "external_ids")
	for i := 0; i < clients; i++ {
		if i%3 == 0 && !strings.Contains(dpif, port(i)+" ") {
			t.Errorf("%s is missing from dpif/show", port(i))
		}
		if i%3 == 1 && !strings.Contains(ids, fmt.Sprintf("k%d=v%d", i, i)) {
			t.Errorf("external_ids:k%d is missing: %s", i, ids)
		}
	}
	failed += run(func(i int) []string {
		if i%3 == 0 {
			return []string{"del-port", "gvchbr2", port(i)}
		}
		return []string{"remove", "bridge", "gvchbr2", "external_ids", fmt.Sprintf("k%d", i)}
	})
	if dpif := e.mustAppctl("dpif/show"); strings.Contains(dpif, "gvchx") {
		t.Errorf("deleted ports still in dpif/show:\n%s", dpif)
	}
	ns1.waitPing("10.79.2.2")
	chaosFigures(t, "%d concurrent ovs-vsctl clients twice (%d ports added and deleted): %d failed", clients, added, failed)
}

// chaosOperstate waits for the kernel's operstate of dev.
func chaosOperstate(t *testing.T, dev, want string) {
	t.Helper()
	vswWait(t, vswTimeout, dev+" operstate "+want, func() bool {
		b, _ := os.ReadFile("/sys/class/net/" + dev + "/operstate")
		return strings.TrimSpace(string(b)) == want
	})
}

// TestChaosVswitchdLinkFlapMTU flaps a port's link and changes MTUs (the
// kernel's and mtu_request) while iperf3 runs through the switch; the
// stream completes and the switch forwards full-size frames afterwards.
func TestChaosVswitchdLinkFlapMTU(t *testing.T) {
	flaps := chaosN(10, 60)
	e := vswNewEnv(t)
	ns1, ns2 := chaosBridge(t, e, "gvchbr3", 3, "l")
	chaosIperfServer(t, ns2, "10.79.3.2")
	iperf := chaosStartBg(t, "ip", "netns", "exec", ns1.Name, "timeout", "180", "iperf3", "-c", "10.79.3.2", "-t", strconv.Itoa(chaosN(8, 30)))
	vswWait(t, 30*time.Second, "iperf3 to connect", func() bool {
		out, _ := ns1.exec("ss", "-Htn", "state", "established", "dport = :5201")
		return strings.Count(out, "\n") >= 2
	})
	mtus := []string{"1400", "9000", "1500"}
	changes := 0
	for i := 0; i < flaps; i++ {
		dev := []string{ns1.Host, ns2.Host}[i%2]
		if _, err := vswRun("ip", "link", "set", dev, "down"); err != nil {
			t.Fatal(err)
		}
		chaosOperstate(t, dev, "down")
		if _, err := vswRun("ip", "link", "set", dev, "up"); err != nil {
			t.Fatal(err)
		}
		chaosOperstate(t, dev, "up")
		mtu := mtus[i%len(mtus)]
		if i%2 == 0 {
			e.mustVsctl("set", "interface", dev, "mtu_request="+mtu)
		} else if _, err := vswRun("ip", "link", "set", dev, "mtu", mtu); err != nil {
			t.Fatal(err)
		}
		changes++
	}
	for _, ns := range []*vswNS{ns1, ns2} {
		e.mustVsctl("set", "interface", ns.Host, "mtu_request=1500")
		vswWait(t, vswTimeout, ns.Host+" MTU 1500", func() bool {
			b, _ := os.ReadFile("/sys/class/net/" + ns.Host + "/mtu")
			return strings.TrimSpace(string(b)) == "1500"
		})
	}
	if err := iperf.wait(200 * time.Second); err != nil {
		t.Errorf("iperf3 under link flaps: %v\n%s", err, iperf.out.String())
	}
	during := vswIperfSummary(iperf.out.String())
	ns1.waitPing("10.79.3.2")
	ns2.waitPing("10.79.3.1")
	if _, err := ns1.exec("ping", "-q", "-n", "-c", "3", "-i", "0.1", "-W", "2", "-M", "do", "-s", "1472", "10.79.3.2"); err != nil {
		t.Errorf("full-size frames after the MTU changes: %v", err)
	}
	after := chaosStartBg(t, "ip", "netns", "exec", ns1.Name, "timeout", "60", "iperf3", "-c", "10.79.3.2", "-t", "2")
	if err := after.wait(70 * time.Second); err != nil {
		t.Errorf("iperf3 after the link flaps: %v\n%s", err, after.out.String())
	}
	chaosFigures(t, "%d link flaps and %d MTU changes under iperf3 (%s); after: %s", flaps, changes, during, vswIperfSummary(after.out.String()))
}

// vhost-user message header (QEMU docs/interop/vhost-user.rst).
const (
	chaosVhostGetFeatures = 1
	chaosVhostVersion     = 0x1
	chaosVhostReply       = 0x4
)

func chaosVhostMsg(req, flags uint32, payload []byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, req)
	b = binary.LittleEndian.AppendUint32(b, flags)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...)
}

// TestChaosVswitchdVhostGarbage: a vhost-user frontend connects to a
// dpdkvhostuser port's socket, again and again, and sends garbage; the
// switch keeps forwarding between its other ports, and the socket still
// answers a well-formed frontend afterwards.
func TestChaosVswitchdVhostGarbage(t *testing.T) {
	conns := chaosN(40, 400)
	e := vswNewEnv(t)
	if err := os.Mkdir(filepath.Join(e.dir, "vhs"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.mustVsctl("set", "open_vswitch", ".", "other_config:vhost-sock-dir=vhs")
	ns1, _ := chaosBridge(t, e, "gvchbr4", 4, "v")
	e.mustVsctl("add-port", "gvchbr4", "gvchv0", "--", "set", "interface", "gvchv0", "type=dpdkvhostuser")
	sock := filepath.Join(e.dir, "vhs", "gvchv0")
	gvvhWaitSocket(t, sock)
	rnd := rand.New(rand.NewSource(10))
	blob := func(n int) []byte { b := make([]byte, n); rnd.Read(b); return b }
	u64 := func(vs ...uint64) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
		return b
	}
	kinds := []func() []byte{
		func() []byte { return blob(1 + rnd.Intn(4096)) },
		func() []byte { return chaosVhostMsg(uint32(rnd.Intn(1000)+50), chaosVhostVersion, blob(rnd.Intn(64))) },
		func() []byte { return chaosVhostMsg(uint32(1+rnd.Intn(40)), rnd.Uint32(), blob(rnd.Intn(64))) },
		func() []byte { return chaosVhostMsg(5, chaosVhostVersion, blob(rnd.Intn(300))) }, // SET_MEM_TABLE without fds
		func() []byte { return chaosVhostMsg(8, chaosVhostVersion, u64(0, 0xffffffff)) },  // SET_VRING_NUM huge
		func() []byte { return chaosVhostMsg(9, chaosVhostVersion, u64(0, 0, ^uint64(0), 1<<62, 0, 0)) },
		func() []byte { return chaosVhostMsg(12, chaosVhostVersion, u64(0)) }, // SET_VRING_KICK without fd
		func() []byte { return chaosVhostMsg(uint32(1+rnd.Intn(40)), chaosVhostVersion, nil)[:6] },
		func() []byte { // a size far past what is sent
			b := chaosVhostMsg(2, chaosVhostVersion, u64(rnd.Uint64()))
			binary.LittleEndian.PutUint32(b[8:], 0xfffffff0)
			return b
		},
		func() []byte { // features, then a storm of requests before the memory table
			b := chaosVhostMsg(3, chaosVhostVersion, nil)
			b = append(b, chaosVhostMsg(2, chaosVhostVersion, u64(^uint64(0)))...)
			for q := uint64(0); q < 4; q++ {
				b = append(b, chaosVhostMsg(18, chaosVhostVersion, u64(q, 1))...) // SET_VRING_ENABLE
				b = append(b, chaosVhostMsg(10, chaosVhostVersion, u64(q, 7))...) // SET_VRING_BASE
			}
			return b
		},
	}
	sent := 0
	for i := 0; i < conns; i++ {
		c, err := net.DialTimeout("unix", sock, 10*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		msg := kinds[i%len(kinds)]()
		if _, err := c.Write(msg); err == nil {
			sent++
		}
		// Read whatever comes back until the switch hangs up or is quiet.
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				break
			}
		}
		c.Close()
		if i%10 == 9 {
			vswWait(t, vswTimeout, "a ping across the bridge", func() bool { return ns1.ping("10.79.4.2", 1) == nil })
		}
	}
	// A well-formed frontend is still answered.
	c, err := net.DialTimeout("unix", sock, 10*time.Second)
	if err != nil {
		t.Fatalf("after the garbage: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(vswTimeout))
	if _, err := c.Write(chaosVhostMsg(chaosVhostGetFeatures, chaosVhostVersion, nil)); err != nil {
		t.Fatal(err)
	}
	reply := make([]byte, 20)
	if _, err := io.ReadFull(c, reply); err != nil {
		t.Fatalf("GET_FEATURES after the garbage: %v", err)
	}
	if req, flags := binary.LittleEndian.Uint32(reply), binary.LittleEndian.Uint32(reply[4:]); req != chaosVhostGetFeatures || flags&chaosVhostReply == 0 {
		t.Errorf("GET_FEATURES reply header %x", reply[:12])
	}
	ns1.waitPing("10.79.4.2")
	if pid := vswReadPid(filepath.Join(e.dir, "ovs-vswitchd.pid")); !vswAlive(pid) {
		t.Fatal("ovs-vswitchd died")
	}
	chaosFigures(t, "%d garbage vhost-user connections (%d kinds): forwarding kept, socket still answers", sent, len(kinds))
}
