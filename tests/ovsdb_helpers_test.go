package tests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Debian's Open vSwitch tools the ovsdb tests run against. They must be
// installed (CI installs openvswitch-switch, openvswitch-common and
// python3-openvswitch): a missing tool fails the test rather than skipping it.
const (
	ovsdbDebianServer = "/usr/sbin/ovsdb-server"
	ovsdbVsctl        = "/usr/bin/ovs-vsctl"
	ovsdbClient       = "/usr/bin/ovsdb-client"
	ovsdbTool         = "/usr/bin/ovsdb-tool"
	ovsdbAppctl       = "/usr/bin/ovs-appctl"
	ovsdbVSwitchSch   = "/usr/share/openvswitch/vswitch.ovsschema"
	ovsdbPython       = "/usr/bin/python3"
)

var (
	ovsdbBuildOnce sync.Once
	ovsdbBuildDir  string
	ovsdbBuildErr  error
)

// ovsdbGovsServer builds govs' ovsdb-server once per test binary and
// returns its path.
func ovsdbGovsServer(t testing.TB) string {
	t.Helper()
	ovsdbBuildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "govs-ovsdb-bin-")
		if err != nil {
			ovsdbBuildErr = err
			return
		}
		ovsdbBuildDir = dir
		args := []string{"build", "-o", filepath.Join(dir, "ovsdb-server")}
		if os.Getenv("GOVS_OVSDB_RACE") != "" {
			// GOVS_OVSDB_RACE=1 runs the end-to-end tests against a server
			// built with the race detector.
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "./ovsdb")...)
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			ovsdbBuildErr = fmt.Errorf("go build ./ovsdb: %v\n%s", err, out)
			return
		}
		for _, tool := range govsUtilities {
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, tool), "./utilities/"+tool)
			cmd.Dir = ".."
			if out, err := cmd.CombinedOutput(); err != nil {
				ovsdbBuildErr = fmt.Errorf("go build ./utilities/%s: %v\n%s", tool, err, out)
				return
			}
		}
	})
	if ovsdbBuildErr != nil {
		t.Fatal(ovsdbBuildErr)
	}
	return filepath.Join(ovsdbBuildDir, "ovsdb-server")
}

// govsUtilities are govs' own command-line tools, built beside the server.
var govsUtilities = []string{"ovs-vsctl", "ovsdb-client", "ovs-ofctl", "ovs-dpctl", "ovs-appctl"}

// govsUtility returns the path of one of govs' own tools, built once.
func govsUtility(t testing.TB, name string) string {
	t.Helper()
	ovsdbGovsServer(t)
	return filepath.Join(ovsdbBuildDir, name)
}

// ovsdbKeptDir makes a temporary directory that is removed when the test
// ends, or kept and named in the log (as what's) when it failed.
func ovsdbKeptDir(t testing.TB, pattern, what string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(dir)
		} else {
			t.Logf("%s directory kept: %s", what, dir)
		}
	})
	return dir
}

func ovsdbNeed(t testing.TB, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is required (install openvswitch-switch, openvswitch-common, python3-openvswitch): %v", p, err)
		}
	}
}

// ovsdbProc is one running ovsdb-server, govs' or Debian's.
type ovsdbProc struct {
	t      testing.TB
	kind   string // "govs" or "debian"
	dir    string
	db     string
	sock   string
	ctl    string
	pidf   string
	log    string
	args   []string
	binary string
}

type ovsdbOpts struct {
	kind    string   // "govs" (default) or "debian"
	remotes []string // extra --remote options
	extra   []string // extra arguments
	dir     string   // reuse a directory (restart); "" makes one
}

// ovsdbStart starts a server in a fresh directory with a pidfile, a unix
// socket and the Manager-table remote, and stops it (by pid) when the test
// ends.
func ovsdbStart(t testing.TB, o ovsdbOpts) *ovsdbProc {
	t.Helper()
	ovsdbNeed(t, ovsdbDebianServer, ovsdbVsctl, ovsdbClient, ovsdbTool, ovsdbVSwitchSch)
	if o.kind == "" {
		o.kind = "govs"
	}
	dir := o.dir
	if dir == "" {
		// Unix socket paths are limited to 108 bytes: keep it short.
		dir = ovsdbKeptDir(t, "ovsdbt-", o.kind+" server")
	}
	p := &ovsdbProc{t: t, kind: o.kind, dir: dir, db: filepath.Join(dir, "conf.db"),
		sock: filepath.Join(dir, "db.sock"), ctl: filepath.Join(dir, "ovsdb-server.ctl"),
		pidf: filepath.Join(dir, "ovsdb-server.pid"), log: filepath.Join(dir, "ovsdb-server.log")}
	switch o.kind {
	case "govs":
		p.binary = ovsdbGovsServer(t)
	case "debian":
		p.binary = ovsdbDebianServer
		if _, err := os.Stat(p.db); err != nil {
			if out, err := exec.Command(ovsdbTool, "create", p.db, ovsdbVSwitchSch).CombinedOutput(); err != nil {
				t.Fatalf("ovsdb-tool create: %v\n%s", err, out)
			}
		}
	default:
		t.Fatalf("unknown server kind %q", o.kind)
	}
	p.args = []string{p.db, "--remote=punix:" + p.sock, "--remote=db:Open_vSwitch,Open_vSwitch,manager_options",
		"--pidfile=" + p.pidf, "--unixctl=" + p.ctl, "--log-file=" + p.log, "--detach", "--no-chdir"}
	for _, r := range o.remotes {
		p.args = append(p.args, "--remote="+r)
	}
	p.args = append(p.args, o.extra...)
	p.start()
	t.Cleanup(p.stop)
	return p
}

func (p *ovsdbProc) start() {
	p.t.Helper()
	cmd := exec.Command(p.binary, p.args...)
	cmd.Env = append(os.Environ(), "OVS_RUNDIR="+p.dir, "OVS_LOGDIR="+p.dir, "OVS_DBDIR="+p.dir,
		"GORACE=log_path="+filepath.Join(p.dir, "race"))
	if out, err := cmd.CombinedOutput(); err != nil {
		p.t.Fatalf("%s ovsdb-server failed to start: %v\n%s\nlog:\n%s", p.kind, err, out, p.readLog())
	}
	ovsdbWait(p.t, vswTimeout, "socket "+p.sock, func() bool {
		c, err := net.Dial("unix", p.sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

func (p *ovsdbProc) readLog() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

func (p *ovsdbProc) pid() int {
	b, err := os.ReadFile(p.pidf)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// stop terminates the server by the pid in its pidfile, and reports any
// data race a -race build logged.
func (p *ovsdbProc) stop() {
	p.signal(syscall.SIGTERM)
	races, _ := filepath.Glob(filepath.Join(p.dir, "race.*"))
	for _, f := range races {
		b, _ := os.ReadFile(f)
		p.t.Errorf("%s ovsdb-server: %s", p.kind, b)
	}
}

// kill9 kills the server abruptly.
func (p *ovsdbProc) kill9() { p.signal(syscall.SIGKILL) }

func (p *ovsdbProc) signal(sig syscall.Signal) {
	pid := p.pid()
	if pid <= 0 {
		return
	}
	if syscall.Kill(pid, sig) != nil {
		return
	}
	// vswAlive, not kill(pid, 0): a detached daemon's zombie lasts until
	// init reaps it, which some inits do only every second or so.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if !vswAlive(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 100 && vswAlive(pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
}

func ovsdbWait(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type ovsdbResult struct {
	stdout, stderr string
	code           int
}

func ovsdbRun(name string, args ...string) ovsdbResult {
	return ovsdbRunCmd(exec.Command(name, args...))
}

// ovsdbRunCmd runs cmd (its stdin set by the caller) as ovsdbRun does.
func ovsdbRunCmd(cmd *exec.Cmd) ovsdbResult {
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
		e.WriteString(err.Error())
	}
	return ovsdbResult{o.String(), ovsdbDropLoadWarnings(e.String()), code}
}

// ovsdbLoadWarningRe matches what OVS's timeval module logs when the process
// itself was kept off the CPU ("Unreasonably long 1381ms poll interval", then
// its faults, disk and context switch counts): the machine's load speaking,
// not the server under test, and absent when the machine is idle.
var ovsdbLoadWarningRe = regexp.MustCompile(`(?m)^.*\|timeval\|WARN\|.*\n?`)

// ovsdbDropLoadWarnings removes those lines from a tool's output.
func ovsdbDropLoadWarnings(s string) string { return ovsdbLoadWarningRe.ReplaceAllString(s, "") }

// vsctl runs Debian's ovs-vsctl against the server.
func (p *ovsdbProc) vsctl(args ...string) ovsdbResult {
	return ovsdbRun(ovsdbVsctl, append([]string{"--db=unix:" + p.sock, "--timeout=10"}, args...)...)
}

// mustVsctl runs ovs-vsctl --no-wait and fails the test on an error.
func (p *ovsdbProc) mustVsctl(args ...string) string {
	p.t.Helper()
	r := p.vsctl(append([]string{"--no-wait"}, args...)...)
	if r.code != 0 {
		p.t.Fatalf("%s: ovs-vsctl %s: exit %d: %s", p.kind, strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

func (p *ovsdbProc) appctl(args ...string) ovsdbResult {
	return ovsdbRun(ovsdbAppctl, append([]string{"-t", p.ctl}, args...)...)
}

func (p *ovsdbProc) client(args ...string) ovsdbResult {
	return ovsdbRun(ovsdbClient, args...)
}

var ovsdbUUIDRe = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// ovsdbNormalize makes two servers' outputs comparable: uuids become
// <uuid>, and records of list/find output (blank-line separated) are sorted,
// since ovs-vsctl prints rows in hash order of their random uuids.
func ovsdbNormalize(s string, sortRecords bool) string {
	s = ovsdbUUIDRe.ReplaceAllString(s, "<uuid>")
	if sortRecords {
		recs := strings.Split(strings.TrimRight(s, "\n"), "\n\n")
		sort.Strings(recs)
		s = strings.Join(recs, "\n\n") + "\n"
		if len(recs) == 1 && recs[0] == "" {
			s = ""
		}
	}
	return s
}

// ovsdbSortTree sorts indented output (ovs-vsctl show) so that siblings
// at every level appear in a fixed order: ovs-vsctl prints ports and
// interfaces in the order of their random uuids.
func ovsdbSortTree(s string) string {
	type node struct {
		line     string
		children []*node
	}
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }
	root := &node{}
	stack := []*node{root}
	depth := []int{-1}
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		n := &node{line: l}
		for indent(l) <= depth[len(depth)-1] {
			stack, depth = stack[:len(stack)-1], depth[:len(depth)-1]
		}
		parent := stack[len(stack)-1]
		parent.children = append(parent.children, n)
		stack, depth = append(stack, n), append(depth, indent(l))
	}
	var render func(n *node) string
	render = func(n *node) string {
		parts := make([]string, 0, len(n.children))
		for _, c := range n.children {
			parts = append(parts, render(c))
		}
		sort.Strings(parts)
		out := ""
		if n != root {
			out = n.line + "\n"
		}
		return out + strings.Join(parts, "")
	}
	return render(root)
}

// ovsdbRawConn is a raw JSON-RPC connection for wire-level tests.
type ovsdbRawConn struct {
	t   testing.TB
	c   net.Conn
	dec *json.Decoder
}

func ovsdbDialRaw(t testing.TB, sock string) *ovsdbRawConn {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &ovsdbRawConn{t: t, c: c, dec: json.NewDecoder(c)}
}

func (r *ovsdbRawConn) send(s string) {
	r.t.Helper()
	if _, err := r.c.Write([]byte(s)); err != nil {
		r.t.Fatal(err)
	}
}

// recv reads one message; nil on EOF/close or after the timeout.
func (r *ovsdbRawConn) recv(timeout time.Duration) map[string]any {
	r.c.SetReadDeadline(time.Now().Add(timeout))
	var m map[string]any
	if err := r.dec.Decode(&m); err != nil {
		return nil
	}
	return m
}

// closed reports whether the server closed the connection (EOF within the
// timeout), skipping any messages before it.
func (r *ovsdbRawConn) closed(timeout time.Duration) bool {
	r.c.SetReadDeadline(time.Now().Add(timeout))
	for {
		var m json.RawMessage
		err := r.dec.Decode(&m)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return false
		}
		return true
	}
}

// call sends a request and returns its reply, skipping notifications.
func (r *ovsdbRawConn) call(method string, params any, id any) map[string]any {
	r.t.Helper()
	b, _ := json.Marshal(map[string]any{"method": method, "params": params, "id": id})
	r.send(string(b))
	for {
		m := r.recv(vswTimeout)
		if m == nil {
			r.t.Fatalf("no reply to %s", b)
		}
		if m["method"] == nil {
			return m
		}
	}
}

func ovsdbFreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func ovsdbPortOpen(port int) bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
