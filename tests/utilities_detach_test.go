package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUtilitiesClientDetach runs ovsdb-client monitor-cond with --detach,
// --pidfile and --no-chdir, Debian's and govs', against the same server:
// both return once the initial contents are printed, keep printing to the
// file their stdout was, write the pidfile, answer ovsdb-client/block,
// unblock and cond_change alike and "ovs-appctl exit" on
// <rundir>/ovsdb-client.<pid>.ctl, and then leave neither pidfile nor
// socket behind; a detached monitor that fails exits with the same error, leaving
// nothing behind either.
func TestUtilitiesClientDetach(t *testing.T) {
	ours := govsUtility(t, "ovsdb-client")
	p := ovsdbStart(t, ovsdbOpts{kind: "govs"})
	p.mustVsctl("add-br", "br0")
	db := "unix:" + p.sock
	tools := []string{ovsdbClient, ours}
	var rundirs, outs [2]string
	var pids [2]int
	for j, tool := range tools {
		rundir, err := os.MkdirTemp("", "ovsdbc-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(rundir) })
		rundirs[j] = rundir
		pidfile := filepath.Join(rundir, "monitor.pid")
		t.Cleanup(func() {
			if pid := vswReadPid(pidfile); pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		})
		outs[j] = filepath.Join(rundir, "out")
		run := func(stdout string, args ...string) (int, string) {
			cmd := exec.Command(tool, append([]string{"--detach", "--no-chdir", "--pidfile=" + pidfile}, args...)...)
			cmd.Env = append(os.Environ(), "OVS_RUNDIR="+rundir)
			f, err := os.Create(stdout)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			// stderr is a file too: a detached ovsdb-client keeps its
			// stderr open, so a pipe would never see EOF.
			errPath := stdout + ".err"
			e, err := os.Create(errPath)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			cmd.Stdout, cmd.Stderr = f, e
			err = cmd.Run()
			b, _ := os.ReadFile(errPath)
			if ee, ok := err.(*exec.ExitError); ok {
				return ee.ExitCode(), string(b)
			} else if err != nil {
				t.Fatal(err)
			}
			return 0, string(b)
		}
		// A failure leaves nothing behind.
		code, stderr := run(filepath.Join(rundir, "fail"), "monitor", db, "Nope")
		want := fmt.Sprintf("ovsdb-client: %s: Open_vSwitch does not have a table named \"Nope\"\n", db)
		if code != 1 || stderr != want {
			t.Errorf("%s --detach monitor of a missing table: exit %d, %q; want exit 1, %q", tool, code, stderr, want)
		}
		if left, _ := filepath.Glob(filepath.Join(rundir, "*.[cp][ti][ld]")); len(left) > 0 {
			t.Errorf("%s: a failed detached monitor left %v", tool, left)
		}
		if code, stderr := run(outs[j], "monitor-cond", db, "[]", "Bridge", "name"); code != 0 || stderr != "" {
			t.Fatalf("%s --detach monitor: exit %d: %s", tool, code, stderr)
		}
		pids[j] = vswReadPid(pidfile)
		if pids[j] <= 0 || !vswAlive(pids[j]) {
			t.Fatalf("%s --detach monitor: no live pid in %s", tool, pidfile)
		}
		if b, _ := os.ReadFile(outs[j]); !strings.Contains(string(b), "initial br0") {
			t.Errorf("%s --detach monitor returned before printing the initial rows: %q", tool, b)
		}
	}
	// The unixctl commands of a detached monitor answer alike; after
	// cond_change the monitor sees br2 but not br1.
	var replies [2]string
	for j := range tools {
		ctl := filepath.Join(rundirs[j], fmt.Sprintf("ovsdb-client.%d.ctl", pids[j]))
		for _, cmd := range [][]string{{"ovsdb-client/block"}, {"ovsdb-client/block"}, {"ovsdb-client/unblock"},
			{"ovsdb-client/unblock"}, {"ovsdb-client/cond_change", "Bridge", `[["name","!=","br1"]]`}} {
			r := ovsdbRun(ovsdbAppctl, append([]string{"-t", ctl}, cmd...)...)
			replies[j] += fmt.Sprintf("%s: %d %q %q\n", cmd[0], r.code, r.stdout, r.stderr)
		}
	}
	if replies[0] != replies[1] {
		t.Errorf("unixctl replies differ\ndebian's:\n%s\ngovs':\n%s", replies[0], replies[1])
	}
	p.mustVsctl("add-br", "br1")
	p.mustVsctl("add-br", "br2")
	ovsdbWait(t, 10*time.Second, "both monitors to print br2", func() bool {
		for _, f := range outs {
			if b, _ := os.ReadFile(f); !strings.Contains(string(b), "insert br2") {
				return false
			}
		}
		return true
	})
	var got [2]string
	for j, tool := range tools {
		b, _ := os.ReadFile(outs[j])
		got[j] = ovsdbNormalize(string(b), false)
		ctl := filepath.Join(rundirs[j], fmt.Sprintf("ovsdb-client.%d.ctl", pids[j]))
		if r := ovsdbRun(ovsdbAppctl, "-t", ctl, "exit"); r.code != 0 || r.stdout != "" {
			t.Errorf("%s: ovs-appctl exit: %+v", tool, r)
		}
		ovsdbWait(t, 10*time.Second, tool+" to exit", func() bool { return !vswAlive(pids[j]) })
		if left, _ := filepath.Glob(filepath.Join(rundirs[j], "*.[cp][ti][ld]")); len(left) > 0 {
			t.Errorf("%s: an exited detached monitor left %v", tool, left)
		}
	}
	if strings.Contains(got[1], "br1") {
		t.Errorf("govs' monitor printed br1 after cond_change excluded it:\n%s", got[1])
	}
	if got[0] != got[1] {
		t.Errorf("detached monitors' outputs differ\ndebian's:\n%s\ngovs':\n%s", got[0], got[1])
	}
}
