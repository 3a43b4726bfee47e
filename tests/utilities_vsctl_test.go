package tests

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestUtilitiesOwnVsctl configures a switch with govs' own tools only:
// ovs-vswitchd with its embedded database and govs' ovs-vsctl, run with a
// PATH that holds nothing but them (no /usr/bin/ovs-*). Our ovs-vsctl
// waits for cur_cfg as OVS's does, so ofports are there when it returns;
// its wait-until blocks until the condition holds, its --timeout ends it
// as OVS's does, and a port that cannot be set up is reported with OVS's
// words.
func TestUtilitiesOwnVsctl(t *testing.T) {
	vswNeedRoot(t)
	dir, err := os.MkdirTemp("", "gvswutil")
	if err != nil {
		t.Fatal(err)
	}
	e := &vswEnv{t: t, dir: dir, bin: vswBinary(t)}
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(e.logPath()); err == nil {
				t.Logf("ovs-vswitchd.log:\n%s", vswTail(string(b), 60))
			}
		}
		os.RemoveAll(dir)
	})
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{"ovs-vswitchd": e.bin, "ovs-vsctl": govsUtility(t, "ovs-vsctl")} {
		if err := os.Symlink(src, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"PATH=" + bin, "OVS_RUNDIR=" + dir, "OVS_DBDIR=" + dir, "OVS_LOGDIR=" + dir}
	if _, err := vswRunEnv(env, filepath.Join(bin, "ovs-vswitchd"), "--embedded-db", "--pidfile", "--detach", "--no-chdir",
		"--log-file="+e.logPath(), "-vconsole:off"); err != nil {
		t.Fatal(err)
	}
	pid := vswReadPid(filepath.Join(dir, "ovs-vswitchd.pid"))
	if pid <= 0 {
		t.Fatal("ovs-vswitchd --detach returned without a pidfile")
	}
	t.Cleanup(func() { vswKill(t, pid) })

	// vsctl runs our ovs-vsctl with the restricted PATH and the default
	// database (OVS_RUNDIR/db.sock), waiting for the switch.
	vsctl := func(args ...string) ovsdbResult {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "ovs-vsctl"), append([]string{"--timeout=30"}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		var o, se bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &se
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("ovs-vsctl %v: %v", args, err)
		}
		return ovsdbResult{o.String(), se.String(), code}
	}
	mustVsctl := func(args ...string) string {
		t.Helper()
		r := vsctl(args...)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("ovs-vsctl %s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
		}
		return r.stdout
	}

	a := vswAddNS(t, "uta", "10.81.0.1/24")
	b := vswAddNS(t, "utb", "10.81.0.2/24")
	mustVsctl("add-br", "gvswut0", "--", "add-port", "gvswut0", a.Host, "--", "add-port", "gvswut0", b.Host)
	// Returned after cur_cfg caught up: the ports have their ofports now.
	for _, p := range []string{a.Host, b.Host} {
		if out := strings.TrimSpace(mustVsctl("get", "Interface", p, "ofport")); out == "[]" || out == "-1" {
			t.Fatalf("ofport of %s right after add-port: %s", p, out)
		}
	}
	a.waitPing("10.81.0.2")
	if out := mustVsctl("list-ports", "gvswut0"); out != a.Host+"\n"+b.Host+"\n" && out != b.Host+"\n"+a.Host+"\n" {
		t.Fatalf("list-ports: %q", out)
	}

	// A port the switch cannot open: OVS's report, exit status 0.
	r := vsctl("add-port", "gvswut0", "gvswutnodev")
	want := regexp.MustCompile(`^ovs-vsctl: Error detected while setting up 'gvswutnodev': .+\.  See ovs-vswitchd log for details\.\n` +
		`ovs-vsctl: The default log directory is "` + regexp.QuoteMeta(dir) + `"\.\n$`)
	if r.code != 0 || !want.MatchString(r.stderr) {
		t.Fatalf("add-port of a missing device: exit %d, stderr %q", r.code, r.stderr)
	}

	// wait-until blocks until another client makes the condition true.
	done := make(chan ovsdbResult, 1)
	go func() { done <- vsctl("wait-until", "Bridge", "gvswut1", "fail_mode=secure") }()
	mustVsctl("add-br", "gvswut1")
	mustVsctl("set-fail-mode", "gvswut1", "secure")
	select {
	case r := <-done:
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("wait-until: exit %d: %s", r.code, r.stderr)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("wait-until did not return within 60 s of its condition holding")
	}

	// --timeout ends a wait that never ends with SIGALRM, as OVS's does.
	r = vsctl("--timeout=1", "wait-until", "Bridge", "nosuchbridge")
	if r.code != -1 || !strings.HasSuffix(r.stderr, "|fatal_signal|WARN|terminating with signal 14 (Alarm clock)\n") {
		t.Fatalf("--timeout: exit %d, stderr %q", r.code, r.stderr)
	}
	// Concurrent clients lose nothing: setting different keys of one map
	// column is a mutation, so none conflict; whole-column writes
	// (br-set-external-id, add-port rewriting Bridge.ports) verify what
	// they read, and the losers of a race run their commands again.
	parallel := func(n int, args func(i int) []string) {
		t.Helper()
		res := make(chan ovsdbResult, n)
		for i := 0; i < n; i++ {
			go func(i int) { res <- vsctl(append([]string{"--no-wait"}, args(i)...)...) }(i)
		}
		for i := 0; i < n; i++ {
			if r := <-res; r.code != 0 || r.stderr != "" {
				t.Fatalf("concurrent ovs-vsctl %v: exit %d: %s", args(i), r.code, r.stderr)
			}
		}
	}
	var keys []string
	for i := 0; i < 20; i++ {
		keys = append(keys, fmt.Sprintf("k%02d=v%d", i, i))
	}
	parallel(20, func(i int) []string { return []string{"set", "Bridge", "gvswut1", "external_ids:" + keys[i]} })
	if got := mustVsctl("get", "Bridge", "gvswut1", "external_ids"); got != "{"+strings.Join(keys, ", ")+"}\n" {
		t.Fatalf("20 concurrent set external_ids:KEY=VALUE left %q", got)
	}
	parallel(10, func(i int) []string { return []string{"br-set-external-id", "gvswut1", fmt.Sprintf("b%d", i), "x"} })
	if got := mustVsctl("br-get-external-id", "gvswut1"); strings.Count(got, "=x\n") != 10 {
		t.Fatalf("10 concurrent br-set-external-id left %q", got)
	}
	parallel(10, func(i int) []string { return []string{"add-port", "gvswut1", fmt.Sprintf("gvswutc%d", i)} })
	if got := strings.Fields(mustVsctl("list-ports", "gvswut1")); len(got) != 10 {
		t.Fatalf("10 concurrent add-port left ports %q", got)
	}

	mustVsctl("del-br", "gvswut1", "--", "del-br", "gvswut0")
	if out := mustVsctl("list-br"); out != "" {
		t.Fatalf("list-br after del-br: %q", out)
	}
}
