package tests

// End-to-end test of options:n_rxq on system ports (PACKET_FANOUT_HASH
// receive queues). Kernel objects are named gvrq*.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestVswitchdRxQueues runs two system ports with n_rxq=2: each has two
// packet sockets and pmd-rxq-show lists two queues, 4 iperf3 streams pass;
// n_rxq changes live (the OpenFlow port stays), a value above 16 is
// refused in Interface.error as OVS refuses it for AF_XDP ports, and a
// socket buffer change reopens a multi-queue port.
func TestVswitchdRxQueues(t *testing.T) {
	e := vswNewEnv(t)
	a := vswAddPrefixedNS(t, "gvrq", "a", "10.251.79.1/24")
	b := vswAddPrefixedNS(t, "gvrq", "b", "10.251.79.2/24")
	const br = "gvrqbr"
	e.mustVsctl("add-br", br, "--", "set", "bridge", br, "datapath_type=netdev",
		"--", "add-port", br, a.Host, "--", "set", "interface", a.Host, "options:n_rxq=2",
		"--", "add-port", br, b.Host, "--", "set", "interface", b.Host, "options:n_rxq=2")
	a.waitPing("10.251.79.2")
	for _, ns := range []*vswNS{a, b} {
		if n := gvrqQueues(e, ns.Host); n != 2 {
			t.Errorf("%s: pmd-rxq-show lists %d queues, want 2:\n%s", ns.Host, n, e.mustAppctl("dpif-netdev/pmd-rxq-show"))
		}
		if n := gvrqSockets(t, ns.Host); n != 2 {
			t.Errorf("%s: %d packet sockets bound, want 2", ns.Host, n)
		}
	}
	out := a.iperf(b, "10.251.79.2", "-P", "4", "-t", "2")
	if !strings.Contains(out, "[SUM]") {
		t.Errorf("iperf3 -P 4: no sum:\n%s", out)
	}
	t.Logf("iperf3 -P 4 through n_rxq=2: %s", vswIperfSummary(out))

	ofport := e.ofport(a.Host)
	for _, n := range []int{1, 3} {
		e.mustVsctl("set", "interface", a.Host, fmt.Sprintf("options:n_rxq=%d", n))
		vswWait(t, vswTimeout, fmt.Sprintf("%d queues on %s", n, a.Host), func() bool { return gvrqQueues(e, a.Host) == n })
		a.waitPing("10.251.79.2")
		if got := e.ofport(a.Host); got != ofport {
			t.Errorf("n_rxq=%d: ofport %d, was %d", n, got, ofport)
		}
	}

	e.mustVsctl("set", "interface", a.Host, "options:n_rxq=17")
	want := fmt.Sprintf("%q", a.Host+": Too big 'n_rxq' (17 > 16).")
	vswWait(t, vswTimeout, "n_rxq=17 refused", func() bool {
		return strings.TrimSpace(e.mustVsctl("get", "interface", a.Host, "error")) == want
	})
	if got := e.ofport(a.Host); got != -1 {
		t.Errorf("n_rxq=17: ofport %d, want -1", got)
	}
	e.mustVsctl("set", "interface", a.Host, "options:n_rxq=2")
	vswWait(t, vswTimeout, "2 queues again", func() bool { return gvrqQueues(e, a.Host) == 2 })
	a.waitPing("10.251.79.2")
	if got := e.ofport(a.Host); got != ofport {
		t.Errorf("after the refused n_rxq: ofport %d, was %d", got, ofport)
	}

	e.mustVsctl("set", "open_vswitch", ".", "other_config:userspace-sock-buf-size=1048576")
	gvofWaitStatus(e, a.Host, "rx_sock_buf", "2097152")
	gvofWaitStatus(e, b.Host, "rx_sock_buf", "2097152")
	a.waitPing("10.251.79.2")
	log, _ := os.ReadFile(e.logPath())
	if !strings.Contains(string(log), b.Host+": reopening its 2 receive queues") {
		t.Errorf("%s was not reopened for its new socket buffers", b.Host)
	}
	if n := gvrqSockets(t, b.Host); n != 2 {
		t.Errorf("%s: %d packet sockets bound after the reopen, want 2", b.Host, n)
	}
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, "|WARN|") || strings.Contains(l, "|ERR|") {
			if !strings.Contains(l, "Too big 'n_rxq'") {
				t.Errorf("log: %s", l)
			}
		}
	}
}

// gvrqQueues counts the receive queues pmd-rxq-show lists for port.
func gvrqQueues(e *vswEnv, port string) int {
	return strings.Count(e.mustAppctl("dpif-netdev/pmd-rxq-show"), fmt.Sprintf("  port: %-16s  queue-id:", port))
}

// gvrqSockets counts the packet sockets bound to dev, from this thread's
// namespace's /proc/net/packet. Not /proc/self/net: that is the main
// thread's namespace, and a test that locked a goroutine to a thread and
// entered another namespace (gvofInNS) leaves the main thread there when
// that goroutine ran on it.
func gvrqSockets(t *testing.T, dev string) int {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ifi, err := net.InterfaceByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/thread-self/net/packet")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sk RefCnt Type Proto Iface R Rmem User Inode
		if fs := strings.Fields(sc.Text()); len(fs) >= 5 && fs[4] == fmt.Sprint(ifi.Index) {
			n++
		}
	}
	return n
}

// TestVswitchdTapRxQueues: an internal port with n_rxq=2 attaches two
// files to its multi-queue tap and pmd-rxq-show lists two queues; 4 iperf3
// streams pass; n_rxq changes live (same ofport, still reachable).
// (govs does not follow an internal port moved to another namespace, so
// it stays in the root namespace here; netdev's TestTapRxQueues reopens a
// tap in one.) Kernel objects are named gvtq*.
func TestVswitchdTapRxQueues(t *testing.T) {
	e := vswNewEnv(t)
	b := vswAddPrefixedNS(t, "gvtq", "b", "10.251.81.2/24")
	const br, in, ip = "gvtqbr", "gvtqin", "10.251.81.1"
	vswClaim(t, in)
	t.Cleanup(func() { vswRun("ip", "link", "del", in) })
	e.mustVsctl("add-br", br, "--", "set", "bridge", br, "datapath_type=netdev",
		"--", "add-port", br, b.Host,
		"--", "add-port", br, in, "--", "set", "interface", in, "type=internal", "options:n_rxq=2")
	for _, c := range [][]string{
		{"ip", "addr", "add", ip + "/24", "dev", in},
		{"ip", "link", "set", in, "up"},
	} {
		if _, err := vswRun(c[0], c[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	b.waitPing(ip)
	pid := vswReadPid(filepath.Join(e.dir, "ovs-vswitchd.pid"))
	if n := gvrqQueues(e, in); n != 2 {
		t.Errorf("pmd-rxq-show lists %d queues, want 2:\n%s", n, e.mustAppctl("dpif-netdev/pmd-rxq-show"))
	}
	if n := gvtqFiles(t, pid, in); n != 2 {
		t.Errorf("%d tap files attached to %s, want 2", n, in)
	}
	out := gvtqIperf(t, b, ip, "-P", "4", "-t", "1")
	if !strings.Contains(out, "[SUM]") {
		t.Errorf("iperf3 -P 4: no sum:\n%s", out)
	}
	t.Logf("iperf3 -P 4 to an internal port with n_rxq=2: %s", vswIperfSummary(out))

	ofport := e.ofport(in)
	for _, n := range []int{3, 1} {
		e.mustVsctl("set", "interface", in, fmt.Sprintf("options:n_rxq=%d", n))
		vswWait(t, vswTimeout, fmt.Sprintf("%d queues on %s", n, in), func() bool {
			return gvrqQueues(e, in) == n && gvtqFiles(t, pid, in) == n
		})
		b.waitPing(ip)
		if got := e.ofport(in); got != ofport {
			t.Errorf("n_rxq=%d: ofport %d, was %d", n, got, ofport)
		}
	}
	log, _ := os.ReadFile(e.logPath())
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, "|WARN|") || strings.Contains(l, "|ERR|") {
			t.Errorf("log: %s", l)
		}
	}
}

// gvtqIperf runs an iperf3 server on ip in the root namespace, on a port
// free there, and a client in ns with args; it returns the client's output.
func gvtqIperf(t *testing.T, ns *vswNS, ip string, args ...string) string {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	srv := exec.CommandContext(ctx, "iperf3", "-s", "-1", "--bind", ip, "-p", port)
	var sout bytes.Buffer
	srv.Stdout, srv.Stderr = &sout, &sout
	if err := srv.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	defer func() {
		cancel()
		srv.Wait()
	}()
	vswWait(t, vswTimeout, "iperf3 server to listen", func() bool {
		out, _ := exec.Command("ss", "-Hltn", "src "+ip+":"+port).Output()
		return strings.Contains(string(out), port)
	})
	out, err := ns.exec(append([]string{"timeout", "30", "iperf3", "-c", ip, "-p", port}, args...)...)
	if err != nil {
		t.Fatalf("iperf3 %v: %v\nserver: %s", args, err, sout.String())
	}
	return out
}

// gvtqFiles counts the files of process pid attached to tap device dev
// (tun_chr_show_fdinfo's "iff:" line).
func gvtqFiles(t *testing.T, pid int, dev string) int {
	t.Helper()
	fds, err := filepath.Glob(fmt.Sprintf("/proc/%d/fdinfo/*", pid))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range fds {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), "iff:\t"+dev+"\n") {
			n++
		}
	}
	return n
}
