package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const ovsAppctl = "/usr/bin/ovs-appctl"

func newTestServer(t *testing.T, path string) (*UnixctlServer, *Logger) {
	t.Helper()
	log, _ := newTestLogger()
	log.Module("jsonrpc")
	s, err := ListenUnixctl(path, "testd", "1.2.3", log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.Register("test/echo", "ARG...", 1, math.MaxInt, func(args []string) (string, error) {
		return strings.Join(args, "|"), nil
	})
	s.Register("test/fail", "", 0, 0, func([]string) (string, error) {
		return "", errors.New("it failed")
	})
	s.Register("test/empty", "", 0, 0, func([]string) (string, error) { return "", nil })
	return s, log
}

const wantListCommands = `The available commands are:
  list-commands           
  test/echo               ARG...
  test/empty              
  test/fail               
  version                 
  vlog/close              
  vlog/disable-rate-limit [module]...
  vlog/enable-rate-limit  [module]...
  vlog/list               
  vlog/list-pattern       
  vlog/reopen             
  vlog/set                {spec | PATTERN:destination:pattern}
`

func TestUnixctlCall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.ctl")
	_, log := newTestServer(t, path)
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o750 {
		t.Fatalf("socket mode: %v %v", fi.Mode(), err)
	}
	tests := []struct {
		method string
		args   []string
		want   string
		err    string
	}{
		{"version", nil, "testd (Open vSwitch) 1.2.3\n", ""},
		{"list-commands", nil, wantListCommands, ""},
		{"test/echo", []string{"a", "b c", `"q"`}, "a|b c|\"q\"\n", ""},
		{"test/empty", nil, "", ""},
		{"test/fail", nil, "", "it failed\n"},
		{"foo", nil, "", `"foo" is not a valid command (use "list-commands" to see a list of valid commands)` + "\n"},
		{"version", []string{"x"}, "", `"version" command takes at most 0 arguments` + "\n"},
		{"test/echo", nil, "", `"test/echo" command requires at least 1 arguments` + "\n"},
		{"vlog/set", []string{"jsonrpc:file:dbg", "console:warn"}, "", ""},
		{"vlog/set", []string{"bogus"}, "", `no destination, level, or module "bogus"` + "\n"},
		{"vlog/reopen", nil, "", "Logging to file not configured\n"},
		{"vlog/close", nil, "", ""},
	}
	for _, tc := range tests {
		got, err := UnixctlCall(path, tc.method, tc.args...)
		var ue *UnixctlError
		switch {
		case tc.err != "":
			if !errors.As(err, &ue) || ue.Text != tc.err {
				t.Errorf("%s %q: err = %v, want %q", tc.method, tc.args, err, tc.err)
			}
		case err != nil || got != tc.want:
			t.Errorf("%s %q = %q, %v; want %q", tc.method, tc.args, got, err, tc.want)
		}
	}
	if m := log.Module("jsonrpc"); m.Level(DestFile) != LevelDbg || m.Level(DestConsole) != LevelWarn {
		t.Errorf("vlog/set not applied: %v %v", m.Level(DestFile), m.Level(DestConsole))
	}
}

// rawExchange writes raw to the socket and returns what the server sends back
// until it closes the connection (or 30 s pass).
func rawExchange(t *testing.T, path, raw string) string {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	// Generous, for a loaded machine: every exchange ends with the server
	// closing the connection, so passing never waits for it.
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	var out bytes.Buffer
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			return out.String()
		}
	}
}

func TestUnixctlWire(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.ctl")
	newTestServer(t, path)
	// Several concatenated requests on one connection, ids echoed verbatim,
	// then a non-string argument, then a reply, which closes the connection.
	got := rawExchange(t, path,
		`{"method":"test/echo","params":["x"],"id":7}{"id":"s","method":"test/fail","params":[]}`+
			"\n"+`{"method":"test/echo","params":[1],"id":[1]}{"result":"x","error":null,"id":1}`+
			`{"method":"version","params":[],"id":9}`)
	want := `{"id":7,"result":"x\n","error":null}` + "\n" +
		`{"id":"s","result":null,"error":"it failed\n"}` + "\n" +
		`{"id":[1],"result":null,"error":"command has non-string argument: 1\n"}` + "\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestUnixctlConcurrentAndClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.ctl")
	s, _ := newTestServer(t, path)
	entered, release := make(chan struct{}), make(chan struct{})
	s.Register("test/block", "", 0, 0, func([]string) (string, error) {
		close(entered)
		<-release
		return "released", nil
	})
	var wg sync.WaitGroup
	results := make(chan string, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		r, err := UnixctlCall(path, "test/block")
		results <- fmt.Sprint(r, err)
	}()
	<-entered
	// Another connection is served while test/block is pending.
	if r, err := UnixctlCall(path, "version"); err != nil || r != "testd (Open vSwitch) 1.2.3\n" {
		t.Fatalf("version while blocked: %q %v", r, err)
	}
	// Close waits for the in-flight request's reply.
	// Pacing, not a condition: Close must wait for the reply whenever
	// the request is released.
	time.AfterFunc(100*time.Millisecond, func() { close(release) })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if r := <-results; r != "released\n<nil>" {
		t.Errorf("in-flight reply = %q", r)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("socket not removed: %v", err)
	}
	if _, err := UnixctlCall(path, "version"); err == nil {
		t.Error("call after Close succeeded")
	}
}

// appctl runs Debian's ovs-appctl and returns stdout, stderr, exit code.
func appctl(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	if _, err := os.Stat(ovsAppctl); err != nil {
		t.Skip("ovs-appctl not installed")
	}
	cmd := exec.Command(ovsAppctl, append([]string{"--timeout=10"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

// TestOvsAppctl checks our server against Debian's ovs-appctl 3.1; the
// expected texts and exit codes are those Debian's ovsdb-server gives.
func TestOvsAppctl(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.ctl")
	newTestServer(t, path)
	tests := []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{[]string{"version"}, "testd (Open vSwitch) 1.2.3\n", "", 0},
		{[]string{"list-commands"}, wantListCommands, "", 0},
		{[]string{"test/echo", "a", "b c"}, "a|b c\n", "", 0},
		{[]string{"test/empty"}, "", "", 0},
		{[]string{"foo"}, "",
			`"foo" is not a valid command (use "list-commands" to see a list of valid commands)` + "\n" +
				"ovs-appctl: " + path + ": server returned an error\n", 2},
		{[]string{"version", "extra"}, "",
			`"version" command takes at most 0 arguments` + "\n" +
				"ovs-appctl: " + path + ": server returned an error\n", 2},
		{[]string{"test/fail"}, "", "it failed\novs-appctl: " + path + ": server returned an error\n", 2},
		{[]string{"vlog/set", "bogus"}, "",
			`no destination, level, or module "bogus"` + "\n" +
				"ovs-appctl: " + path + ": server returned an error\n", 2},
		{[]string{"vlog/set", "ANY:file:dbg"}, "", "", 0},
	}
	for _, tc := range tests {
		stdout, stderr, code := appctl(t, nil, append([]string{"-t", path}, tc.args...)...)
		if stdout != tc.stdout || stderr != tc.stderr || code != tc.code {
			t.Errorf("ovs-appctl %q:\nstdout %q\nstderr %q\ncode %d\nwant\nstdout %q\nstderr %q\ncode %d",
				tc.args, stdout, stderr, code, tc.stdout, tc.stderr, tc.code)
		}
	}
	stdout, _, code := appctl(t, nil, "-t", path, "vlog/list")
	if code != 0 || !strings.HasPrefix(stdout, "                 console    syslog    file\n"+
		"                 -------    ------    ------\n") ||
		!strings.Contains(stdout, "\njsonrpc           INFO       INFO        DBG\n") {
		t.Errorf("vlog/list (%d):\n%s", code, stdout)
	}
}

// TestOvsAppctlByProgramName proves that "ovs-appctl -t PROGRAM" accepts our
// pidfile: it reads <rundir>/PROGRAM.pid and trusts the pid only if F_GETLK
// shows that pid holding a write lock on it.
func TestOvsAppctlByProgramName(t *testing.T) {
	rundir := t.TempDir()
	env := []string{"OVS_RUNDIR=" + rundir}
	pidpath := filepath.Join(rundir, "testd.pid")

	// An unlocked pidfile naming a live process is rejected, as for OVS.
	if err := os.WriteFile(pidpath, fmt.Appendf(nil, "%d\n", os.Getpid()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := appctl(t, env, "-t", "testd", "version")
	if code != 1 || !strings.Contains(stderr, `cannot read pidfile "`+pidpath+`" (No such process)`) {
		t.Fatalf("unlocked pidfile: code %d stderr %q", code, stderr)
	}

	p, err := CreatePidfile(pidpath, false)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Remove()
	newTestServer(t, filepath.Join(rundir, fmt.Sprintf("testd.%d.ctl", os.Getpid())))
	stdout, stderr, code := appctl(t, env, "-t", "testd", "version")
	if stdout != "testd (Open vSwitch) 1.2.3\n" || code != 0 {
		t.Fatalf("ovs-appctl -t testd version: %q %q %d", stdout, stderr, code)
	}
}

func TestDecodeRequest(t *testing.T) {
	tests := []struct {
		raw    string
		method string
		params int
		err    string
	}{
		{`{"method":"a","params":[],"id":0}`, "a", 0, ""},
		{`{"id":null,"method":"a","params":[]}`, "", 0, "received unexpected notification"},
		{`{"method":"a","params":[]}`, "", 0, "received unexpected notification"},
		{`{"result":"x","error":null,"id":0}`, "", 0, "received unexpected reply"},
		{`{"method":1,"params":[],"id":0}`, "", 0, `"method" is not a string`},
		{`{"method":"a","params":{},"id":0}`, "", 0, `"params" is not an array`},
		{`{"method":"a","id":0}`, "", 0, `"params" is not an array`},
		{`{"method":"a","params":["x",2],"id":0,"error":null}`, "", 0, `request has "result" or "error" member`},
		{`["a"]`, "", 0, "message is not a JSON object"},
		{`{"method":"a","params":["x",{"y":1}],"id":"q"}`, "a", 2, ""},
	}
	for _, tc := range tests {
		req, err := decodeRequest([]byte(tc.raw))
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: err = %v, want %q", tc.raw, err, tc.err)
			}
			continue
		}
		if err != nil || req.Method != tc.method || len(req.Params) != tc.params {
			t.Errorf("%s: %+v, %v", tc.raw, req, err)
		}
	}
}

// FuzzUnixctlDecode feeds arbitrary streams to the request decoder. Every
// request it accepts must survive a re-encode/decode round trip.
func FuzzUnixctlDecode(f *testing.F) {
	f.Add([]byte(`{"method":"version","params":[],"id":0}`))
	f.Add([]byte(`{"method":"vlog/set","params":["ANY:file:dbg"],"id":1}{"method":"x","params":[1],"id":"a"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := newMessageDecoder(bytes.NewReader(data))
		for range 100 {
			req, err := dec.next()
			if err != nil {
				return
			}
			if isNull(req.ID) || req.Params == nil {
				t.Fatalf("accepted request without id or params: %+v", req)
			}
			enc, err := json.Marshal(map[string]any{"method": req.Method, "params": req.Params, "id": req.ID})
			if err != nil {
				t.Fatalf("re-encode %+v: %v", req, err)
			}
			again, err := decodeRequest(enc)
			if err != nil || again.Method != req.Method || len(again.Params) != len(req.Params) {
				t.Fatalf("round trip of %s: %+v, %v", enc, again, err)
			}
			if args, err := req.stringParams(); err == nil && len(args) != len(req.Params) {
				t.Fatalf("stringParams lost arguments: %q", args)
			}
		}
	})
}
