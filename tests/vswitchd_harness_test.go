package tests

// Harness for the ovs-vswitchd end-to-end tests: an OVSDB server (govs' own,
// or Debian's with GOVS_TEST_OVSDB=debian) in a temporary directory, govs' ovs-vswitchd against it, network namespaces
// joined to bridges through veths, and the real ovs-vsctl / ovs-appctl.
// Every kernel object a test creates is named gvsw*, as other suites run
// concurrently on the machine.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	vswSchema = "/usr/share/openvswitch/vswitch.ovsschema"
	vswVsctl  = "/usr/bin/ovs-vsctl"
	vswAppctl = "/usr/bin/ovs-appctl"
	// vswTimeout is the default deadline for a polled condition: generous,
	// for a loaded 2-core machine; passing is unaffected.
	vswTimeout = 60 * time.Second
	// vswPingDeadline is ping -w for pings that must all be answered.
	vswPingDeadline = "60"
)

var (
	vswBuildOnce sync.Once
	vswBin       string
	vswBuildErr  error
)

// vswBinary builds ./vswitchd once per test binary, into tests/out (ignored
// by git, reused by the next run), and returns its path.
func vswBinary(t testing.TB) string {
	t.Helper()
	vswBuildOnce.Do(func() {
		dir, err := filepath.Abs(filepath.Join("out", "vswitchd"))
		if err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
		if err != nil {
			vswBuildErr = err
			return
		}
		vswBin = filepath.Join(dir, "ovs-vswitchd")
		out, err := exec.Command("go", "build", "-o", vswBin, "github.com/govs/govs/vswitchd").CombinedOutput()
		if err != nil {
			vswBuildErr = fmt.Errorf("building ovs-vswitchd: %v\n%s", err, out)
		}
	})
	if vswBuildErr != nil {
		t.Fatal(vswBuildErr)
	}
	return vswBin
}

// vswNeedRoot fails (never skips) a test that cannot run here.
func vswNeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the ovs-vswitchd end-to-end tests need root (network namespaces, veths, taps)")
	}
	for _, p := range []string{vswSchema, vswVsctl, vswAppctl, "/usr/sbin/ovsdb-server", "/usr/bin/ovsdb-tool"} {
		if _, err := os.Stat(p); err != nil {
			if _, err := exec.LookPath(filepath.Base(p)); err != nil {
				t.Fatalf("%s is missing: install openvswitch-switch and openvswitch-common", p)
			}
		}
	}
	for _, tool := range []string{"ip", "ping", "iperf3", "ethtool"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing: install iproute2, iputils-ping, iperf3, ethtool", tool)
		}
	}
}

// vswEnv is one test's database and switch.
type vswEnv struct {
	t   testing.TB
	dir string // rundir: db.sock, pidfiles, unixctl sockets, logs
	bin string
}

func vswRun(name string, args ...string) (string, error) {
	return vswRunEnv(nil, name, args...)
}

func vswRunEnv(env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	s := ovsdbDropLoadWarnings(out.String())
	if err != nil {
		err = fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, s)
	}
	return s, err
}

// vswNewEnv starts a fresh ovsdb-server and, unless noSwitch, the switch.
func vswNewEnv(t testing.TB, noSwitch ...bool) *vswEnv {
	t.Helper()
	vswNeedRoot(t)
	return vswStartEnv(t, len(noSwitch) == 0 || !noSwitch[0])
}

// vswStartEnv starts a fresh ovsdb-server and, if withSwitch, the switch
// with extra arguments; it needs root only for what the switch is asked
// to do (a switch with --enable-dummy and dummy bridges needs none).
func vswStartEnv(t testing.TB, withSwitch bool, extra ...string) *vswEnv {
	t.Helper()
	e := &vswEnv{t: t, bin: vswBinary(t)}
	dir, err := os.MkdirTemp("", "gvsw")
	if err != nil {
		t.Fatal(err)
	}
	e.dir = dir
	t.Cleanup(func() {
		if t.Failed() {
			for _, f := range []string{"ovs-vswitchd.log", "ovsdb-server.log"} {
				if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
					t.Logf("%s:\n%s", f, vswTail(string(b), 60))
				}
			}
		}
		os.RemoveAll(dir)
	})
	if _, err := vswRun("ovsdb-tool", "create", filepath.Join(dir, "conf.db"), vswSchema); err != nil {
		t.Fatal(err)
	}
	e.startDB()
	t.Cleanup(e.stopDB)
	if _, err := vswRun(vswVsctl, "--db=unix:"+e.sock(), "--no-wait", "init"); err != nil {
		t.Fatal(err)
	}
	if withSwitch {
		e.startSwitch(extra...)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(e.logPath()); err == nil {
			if m := regexp.MustCompile(`(?m)^.*(\|EMER\||panic:|goroutine \d+ \[).*$`).FindString(string(b)); m != "" {
				t.Errorf("ovs-vswitchd log has %q", m)
			}
		}
	})
	return e
}

func vswTail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (e *vswEnv) sock() string    { return filepath.Join(e.dir, "db.sock") }
func (e *vswEnv) logPath() string { return filepath.Join(e.dir, "ovs-vswitchd.log") }

// vswOvsdbServer is the OVSDB server the switch tests run against: govs'
// own by default, Debian's with GOVS_TEST_OVSDB=debian (make test runs the
// suite both ways).
func vswOvsdbServer(t testing.TB) string {
	t.Helper()
	if os.Getenv("GOVS_TEST_OVSDB") == "debian" {
		return "/usr/sbin/ovsdb-server"
	}
	vswServerOnce.Do(func() {
		dir, err := filepath.Abs(filepath.Join("out", "ovsdb"))
		if err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
		if err != nil {
			vswServerErr = err
			return
		}
		vswServerBin = filepath.Join(dir, "ovsdb-server")
		out, err := exec.Command("go", "build", "-o", vswServerBin, "github.com/govs/govs/ovsdb").CombinedOutput()
		if err != nil {
			vswServerErr = fmt.Errorf("building ovsdb-server: %v\n%s", err, out)
		}
	})
	if vswServerErr != nil {
		t.Fatal(vswServerErr)
	}
	return vswServerBin
}

var (
	vswServerOnce sync.Once
	vswServerBin  string
	vswServerErr  error
)

func (e *vswEnv) startDB() {
	e.t.Helper()
	_, err := vswRun(vswOvsdbServer(e.t), filepath.Join(e.dir, "conf.db"), "--remote=punix:"+e.sock(),
		"--pidfile="+filepath.Join(e.dir, "ovsdb-server.pid"), "--unixctl="+filepath.Join(e.dir, "ovsdb-server.ctl"),
		"--log-file="+filepath.Join(e.dir, "ovsdb-server.log"), "--detach")
	if err != nil {
		e.t.Fatal(err)
	}
}

// stopDB stops ovsdb-server through its control socket, else by its pid.
func (e *vswEnv) stopDB() {
	pid := vswReadPid(filepath.Join(e.dir, "ovsdb-server.pid"))
	if _, err := vswRun(vswAppctl, "-t", filepath.Join(e.dir, "ovsdb-server.ctl"), "exit"); err != nil && pid > 0 {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	vswWaitGone(e.t, pid)
}

// startSwitch runs ovs-vswitchd --detach: it returns once the switch has
// applied the database's configuration.
func (e *vswEnv) startSwitch(extra ...string) int {
	e.t.Helper()
	args := append([]string{"unix:" + e.sock(), "--pidfile", "--detach", "--no-chdir",
		"--log-file=" + e.logPath(), "-vconsole:off"}, extra...)
	if _, err := vswRunEnv([]string{"OVS_RUNDIR=" + e.dir}, e.bin, args...); err != nil {
		e.t.Fatal(err)
	}
	pid := vswReadPid(filepath.Join(e.dir, "ovs-vswitchd.pid"))
	if pid <= 0 {
		e.t.Fatal("ovs-vswitchd --detach returned without a pidfile")
	}
	e.t.Cleanup(func() { vswKill(e.t, pid) })
	return pid
}

// stopSwitch stops the running switch with "ovs-appctl exit" and waits for
// the process to end.
func (e *vswEnv) stopSwitch(cleanup bool) {
	e.t.Helper()
	pid := vswReadPid(filepath.Join(e.dir, "ovs-vswitchd.pid"))
	args := []string{"exit"}
	if cleanup {
		args = append(args, "--cleanup")
	}
	if _, err := e.appctl(args...); err != nil {
		e.t.Fatal(err)
	}
	vswWaitGone(e.t, pid)
}

func vswReadPid(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// vswAlive reports whether pid still runs. A zombie leader whose other
// threads are still exiting counts as alive: they may hold its files (a
// tap device, a pidfile lock) a moment longer.
func vswAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if !strings.Contains(string(b), ") Z ") {
		return true
	}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	return len(tasks) > 1
}

func vswWaitGone(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(vswTimeout)
	for vswAlive(pid) {
		if time.Now().After(deadline) {
			t.Errorf("process %d did not exit", pid)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// vswKill ends pid (a process this test started) if it still runs.
func vswKill(t testing.TB, pid int) {
	if !vswAlive(pid) {
		return
	}
	syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(5 * time.Second)
	for vswAlive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if vswAlive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// vsctl runs Debian's ovs-vsctl against the test's database, waiting for
// the switch (no --no-wait) unless the arguments say otherwise.
func (e *vswEnv) vsctl(args ...string) (string, error) {
	return vswRun(vswVsctl, append([]string{"--db=unix:" + e.sock(), "--timeout=20"}, args...)...)
}

func (e *vswEnv) mustVsctl(args ...string) string {
	e.t.Helper()
	out, err := e.vsctl(args...)
	if err != nil {
		e.t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// appctl runs Debian's ovs-appctl -t ovs-vswitchd with OVS_RUNDIR set to
// the test's rundir, so it finds the switch through its pidfile.
func (e *vswEnv) appctl(args ...string) (string, error) {
	return vswRunEnv([]string{"OVS_RUNDIR=" + e.dir}, vswAppctl, append([]string{"--timeout=10", "-t", "ovs-vswitchd"}, args...)...)
}

func (e *vswEnv) mustAppctl(args ...string) string {
	e.t.Helper()
	out, err := e.appctl(args...)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// ofport returns Interface.ofport of name.
func (e *vswEnv) ofport(name string) int {
	e.t.Helper()
	n, err := strconv.Atoi(e.mustVsctl("get", "interface", name, "ofport"))
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// vswWait polls cond until it holds or d passes; what describes it.
func vswWait(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// vswNS is a network namespace whose eth0 is one end of a veth; the other
// end, Host, stays in the root namespace to be added to a bridge.
type vswNS struct {
	t    testing.TB
	Name string
	Host string
}

// vswAddNS creates namespace gvsw-<tag> with eth0 (at its default
// offloads) holding addr (CIDR), and host-side veth gvsw<tag>.
func vswAddNS(t testing.TB, tag, addr string) *vswNS {
	t.Helper()
	return vswAddPrefixedNS(t, "gvsw", tag, addr)
}

// vswAddPrefixedNS is vswAddNS for a suite with its own prefix: namespace
// <prefix>-<tag>, host side <prefix><tag>.
func vswAddPrefixedNS(t testing.TB, prefix, tag, addr string) *vswNS {
	t.Helper()
	ns := &vswNS{t: t, Name: prefix + "-" + tag, Host: prefix + tag}
	if len(ns.Host) > 15 {
		t.Fatalf("interface name %s is too long", ns.Host)
	}
	vswClaim(t, ns.Name, ns.Host)
	vswRun("ip", "netns", "del", ns.Name)
	vswRun("ip", "link", "del", ns.Host)
	if _, err := vswRun("ip", "netns", "add", ns.Name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		vswRun("ip", "netns", "del", ns.Name)
		vswRun("ip", "link", "del", ns.Host)
	})
	ns.addVeth()
	if addr != "" {
		ns.mustExec("ip", "addr", "add", addr, "dev", "eth0")
	}
	return ns
}

// addVeth (re)creates the veth pair and brings both ends up.
func (ns *vswNS) addVeth() {
	ns.t.Helper()
	for _, c := range [][]string{
		{"ip", "link", "add", ns.Host, "type", "veth", "peer", "name", "eth0", "netns", ns.Name},
		{"ip", "link", "set", ns.Host, "up"},
		{"ip", "-n", ns.Name, "link", "set", "lo", "up"},
		{"ip", "-n", ns.Name, "link", "set", "eth0", "up"},
	} {
		if _, err := vswRun(c[0], c[1:]...); err != nil {
			ns.t.Fatal(err)
		}
	}
}

func (ns *vswNS) exec(args ...string) (string, error) {
	return vswRun("ip", append([]string{"netns", "exec", ns.Name}, args...)...)
}

func (ns *vswNS) mustExec(args ...string) string {
	ns.t.Helper()
	out, err := ns.exec(args...)
	if err != nil {
		ns.t.Fatal(err)
	}
	return out
}

// ping returns an error unless count pings to ip are answered within
// vswPingDeadline: with -w, ping ends once count replies are in, waits
// for late ones (a loaded machine answers late, not never) and sends
// again for lost ones.
func (ns *vswNS) ping(ip string, count int) error {
	_, err := ns.exec("ping", "-q", "-n", "-c", strconv.Itoa(count), "-i", "0.05", "-w", vswPingDeadline, ip)
	return err
}

// waitPing polls until one ping from ns to ip gets an answer, then
// requires a few in a row.
func (ns *vswNS) waitPing(ip string) {
	ns.t.Helper()
	vswWait(ns.t, vswTimeout, fmt.Sprintf("%s to reach %s", ns.Name, ip), func() bool {
		_, err := ns.exec("ping", "-q", "-n", "-c", "1", "-W", "1", ip)
		return err == nil
	})
	if err := ns.ping(ip, 5); err != nil {
		ns.t.Fatalf("%s to %s: %v", ns.Name, ip, err)
	}
}

// noPing asserts that ns cannot reach ip.
func (ns *vswNS) noPing(ip string) {
	ns.t.Helper()
	if _, err := ns.exec("ping", "-q", "-n", "-c", "2", "-i", "0.2", "-W", "1", ip); err == nil {
		ns.t.Fatalf("%s reached %s, which it must not", ns.Name, ip)
	}
}

// iperf runs an iperf3 server in srv and a client in ns towards ip with
// the given client arguments, and returns the client's output.
func (ns *vswNS) iperf(srv *vswNS, ip string, args ...string) string {
	ns.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	server := exec.CommandContext(ctx, "ip", "netns", "exec", srv.Name, "iperf3", "-s", "-1", "--bind", ip)
	var sout bytes.Buffer
	server.Stdout, server.Stderr = &sout, &sout
	if err := server.Start(); err != nil {
		cancel()
		ns.t.Fatal(err)
	}
	defer func() {
		cancel()
		server.Wait()
	}()
	vswWait(ns.t, vswTimeout, "iperf3 server to listen", func() bool {
		out, _ := srv.exec("ss", "-Hltn", "sport = :5201")
		return strings.Contains(out, "5201")
	})
	out, err := ns.exec(append([]string{"timeout", "30", "iperf3", "-c", ip}, args...)...)
	if err != nil {
		ns.t.Fatalf("iperf3 %v: %v\nserver: %s", args, err, sout.String())
	}
	return out
}

// serve runs args in ns until the test ends (stopped through its pid: ip
// netns exec execs the command itself), waits for a TCP listener on port
// in ns, and returns the command's output, to read once the test ends.
func (ns *vswNS) serve(t testing.TB, port string, args ...string) *bytes.Buffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns.Name}, args...)...)
	out := &bytes.Buffer{}
	srv.Stdout, srv.Stderr = out, out
	if err := srv.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		srv.Wait()
	})
	vswWait(t, vswTimeout, args[0]+" to listen on port "+port, func() bool {
		o, _ := ns.exec("ss", "-Hltn", "sport = :"+port)
		return strings.Contains(o, ":"+port)
	})
	return out
}

// vswIperfSummary picks iperf3's receiver line for the test log.
func vswIperfSummary(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "receiver") {
			return strings.Join(strings.Fields(l), " ")
		}
	}
	return vswTail(out, 3)
}
