package tests

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	opsBuildMu   sync.Mutex
	opsBuildBins = map[string]string{}
)

// opsUtility builds ./utilities/NAME once per test binary, into tests/out,
// and returns its path.
func opsUtility(t testing.TB, name string) string {
	t.Helper()
	opsBuildMu.Lock()
	defer opsBuildMu.Unlock()
	if bin, ok := opsBuildBins[name]; ok {
		return bin
	}
	dir, err := filepath.Abs(filepath.Join("out", "utilities"))
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/govs/govs/utilities/"+name).CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, out)
	}
	opsBuildBins[name] = bin
	return bin
}

// opsRun runs a tool with extra environment, with a deadline, and returns
// its stdout, stderr and exit status (-1 when killed by a signal).
func opsRun(env []string, name string, args ...string) ovsdbResult {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		return ovsdbResult{"", err.Error(), -2}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(vswTimeout):
		cmd.Process.Kill()
		err = <-done
		e.WriteString("[killed after the test's deadline]")
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		code = -2
	}
	return ovsdbResult{o.String(), e.String(), code}
}

// opsLogTimeRe matches vlog timestamps and sequence numbers, which differ
// from run to run; opsPollLoopRe the poll loop's debug lines, which OVS's
// tools log only when they happen to wait.
var (
	opsLogTimeRe  = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z\|\d{5}\|`)
	opsPollLoopRe = regexp.MustCompile(`(?m)^.*\|poll_loop\|DBG\|.*\n`)
)

// opsFakeCtl listens on a unix socket and answers every request with
// reply ("" closes the connection at once; "hang" never answers).
func opsFakeCtl(t *testing.T, path, reply string) {
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				c.Read(buf)
				if reply == "hang" {
					c.SetReadDeadline(time.Now().Add(vswTimeout))
					c.Read(buf) // until the client dies
					return
				}
				c.Write([]byte(reply))
			}()
		}
	}()
}

// TestOpsAppctlDifferential runs the same ovs-appctl command lines with
// Debian's ovs-appctl and govs' against Debian's ovsdb-server and a few
// misbehaving fake daemons, and requires identical stdout, stderr (log
// timestamps aside) and exit statuses.
func TestOpsAppctlDifferential(t *testing.T) {
	ovsdbNeed(t, ovsdbAppctl, ovsdbDebianServer, ovsdbTool, ovsdbVSwitchSch)
	ours := opsUtility(t, "ovs-appctl")
	dir, err := os.MkdirTemp("", "gvsapp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	env := []string{"OVS_RUNDIR=" + dir, "OVS_LOGDIR=" + dir}
	if r := opsRun(nil, ovsdbTool, "create", filepath.Join(dir, "conf.db"), ovsdbVSwitchSch); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := opsRun(env, ovsdbDebianServer, filepath.Join(dir, "conf.db"), "--remote=punix:"+filepath.Join(dir, "db.sock"),
		"--pidfile", "--detach", "--no-chdir", "--log-file", "-vconsole:off"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	pid := vswReadPid(filepath.Join(dir, "ovsdb-server.pid"))
	if pid <= 0 {
		t.Fatal("ovsdb-server left no pidfile")
	}
	t.Cleanup(func() { vswKill(t, pid) })
	ctl := filepath.Join(dir, fmt.Sprintf("ovsdb-server.%d.ctl", pid))

	os.WriteFile(filepath.Join(dir, "stale.pid"), []byte("1\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "notasocket.ctl"), nil, 0o644)
	fakes := map[string]string{
		"hang": "hang", "eof": "", "number": `{"id":0,"result":5,"error":null}`,
		"error": `{"id":0,"result":null,"error":"it failed\n"}`, "errnum": `{"id":0,"result":null,"error":7}`,
		"otherid": `{"id":3,"result":"x","error":null}{"id":0,"result":"mine\n","error":null}`,
	}
	for name, reply := range fakes {
		opsFakeCtl(t, filepath.Join(dir, name+".ctl"), reply)
	}
	cases := [][]string{
		{"-t", "ovsdb-server", "version"},
		{"-tovsdb-server", "version"},
		{"--targ=ovsdb-server", "version"},
		{"--target", "ovsdb-server", "--", "version"},
		{"-t", ctl, "version"},
		{"-T", "5", "-t", ctl, "ovsdb-server/list-dbs"},
		{"--timeout=5", "-t", "ovsdb-server", "vlog/list-pattern"},
		{"-t", "ovsdb-server", "nosuch"},
		{"-t", "ovsdb-server", "version", "extra"},
		{"-t", "ovsdb-server", "version", "-t", "x"},
		{"-t", "ovsdb-server", "vlog/set", "bogus"},
		{"-t", "ovsdb-server", "vlog/set", "ANY:file:dbg"},
		{"-t", "ovsdb-server", "ovsdb-server/add-remote"},
		{"-t", "ovsdb-server", ""},
		{"-e", "-t", "ovsdb-server", "version"},
		{"-t", "ovsdb-server", "-v", "version"},
		{"-t", "ovsdb-server", "-vconsole:dbg", "version"},
		{"-t", "ovsdb-server", "-vnosuchmodule", "version"},
		{},
		{"--bogus"},
		{"-x"},
		{"-t"},
		{"-T", "x", "version"},
		{"-T", "0", "version"},
		{"--timeout=-1", "version"},
		{"--help"},
		{"--option"},
		{"version"}, // no ovs-vswitchd here: no pidfile
		{"-t", "nosuch", "version"},
		{"-t", "stale", "version"},
		{"-t", "ovsdb-server/", "version"},
		{"-t", "/nonexistent/x.ctl", "version"},
		{"-t", filepath.Join(dir, "notasocket.ctl"), "version"},
		{"-T", "1", "-t", filepath.Join(dir, "hang.ctl"), "version"},
		{"-t", filepath.Join(dir, "eof.ctl"), "version"},
		{"-t", filepath.Join(dir, "number.ctl"), "version"},
		{"-t", filepath.Join(dir, "error.ctl"), "version"},
		{"-t", filepath.Join(dir, "errnum.ctl"), "version"},
		{"-t", filepath.Join(dir, "otherid.ctl"), "version"},
	}
	// getopt's messages start with argv[0], the path each was run as.
	norm := func(s, argv0 string) string {
		s = strings.ReplaceAll(s, argv0+": ", "ARGV0: ")
		return opsLogTimeRe.ReplaceAllString(opsPollLoopRe.ReplaceAllString(s, ""), "TIME|N|")
	}
	for _, c := range cases {
		deb := opsRun(env, ovsdbAppctl, c...)
		gov := opsRun(env, ours, c...)
		deb.stdout, deb.stderr = norm(deb.stdout, ovsdbAppctl), norm(ovsdbDropLoadWarnings(deb.stderr), ovsdbAppctl)
		gov.stdout, gov.stderr = norm(gov.stdout, ours), norm(gov.stderr, ours)
		if deb != gov {
			t.Errorf("ovs-appctl %q:\ndebian: exit %d stdout %q stderr %q\ngovs:   exit %d stdout %q stderr %q",
				c, deb.code, deb.stdout, deb.stderr, gov.code, gov.stdout, gov.stderr)
		}
	}
	// --version: OVS's line first, govs' own version after it.
	deb, gov := opsRun(nil, ovsdbAppctl, "--version"), opsRun(nil, ours, "-V")
	if first, _, _ := strings.Cut(gov.stdout, "\n"); first+"\n" != deb.stdout || !strings.Contains(gov.stdout, "\ngovs ") {
		t.Errorf("--version: debian %q, govs %q", deb.stdout, gov.stdout)
	}
}
