package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildDetachTest builds testdata/detachtest into a temporary directory.
func buildDetachTest(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "detachtest")
	out, err := exec.Command("go", "build", "-o", bin, "./testdata/detachtest").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runDaemon runs the test daemon to completion (with --detach: until the
// parent returns) and returns its stdout+stderr and exit code.
func runDaemon(t *testing.T, bin, rundir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "OVS_RUNDIR="+rundir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), 0
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("%s %q did not return", bin, args)
		return "", 0
	}
}

// alive reports whether pid runs. A daemon that exited may stay a zombie
// (its parent, the --detach parent, is gone and pid 1 may not reap it).
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// "PID (comm) STATE ..."; comm may contain spaces.
	s := string(data)
	rest := s[strings.LastIndexByte(s, ')')+1:]
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

func waitGone(t *testing.T, pid int, files ...string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second) // generous, for a loaded machine
	for time.Now().Before(deadline) {
		gone := !alive(pid)
		for _, f := range files {
			if _, err := os.Stat(f); err == nil {
				gone = false
			}
		}
		if gone {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("pid %d or one of %q still there", pid, files)
}

// daemonPid reads the pidfile from another process (ovs-appctl style): a
// test must not open a pidfile its own process holds, but this one is the
// daemon's.
func daemonPid(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("pidfile %q: %v", data, err)
	}
	if held, err := ReadPidfile(path); err != nil || held != pid {
		t.Fatalf("pidfile lock: held by %d, %v; contains %d", held, err, pid)
	}
	return pid
}

func TestDetach(t *testing.T) {
	bin := buildDetachTest(t)
	rundir := t.TempDir()
	logFile := filepath.Join(t.TempDir(), "d.log")
	pidfile := filepath.Join(rundir, "detachtest.pid")

	out, code := runDaemon(t, bin, rundir, "--detach", "--pidfile", "--log-file="+logFile, "pos")
	if code != 0 {
		t.Fatalf("--detach exited %d:\n%s", code, out)
	}
	pid := daemonPid(t, pidfile)
	t.Cleanup(func() {
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if !alive(pid) {
		t.Fatal("daemon not running")
	}
	ctl := filepath.Join(rundir, fmt.Sprintf("detachtest.%d.ctl", pid))
	if r, err := UnixctlCall(ctl, "test/echo", "a"); err != nil || r != "pos a\n" {
		t.Fatalf("test/echo: %q %v", r, err)
	}
	if r, err := UnixctlCall(ctl, "test/cwd"); err != nil || r != "/\n" {
		t.Errorf("detached daemon cwd: %q %v", r, err)
	}
	for fd := 0; fd <= 2; fd++ {
		if target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd)); target != "/dev/null" {
			t.Errorf("fd %d -> %q, want /dev/null", fd, target)
		}
	}
	if sid, _ := syscall.Getpgid(pid); sid != pid {
		t.Errorf("daemon process group %d, want its own (setsid)", sid)
	}
	if _, err := os.Stat(ovsAppctl); err == nil {
		stdout, stderr, code := appctl(t, []string{"OVS_RUNDIR=" + rundir}, "-t", "detachtest", "version")
		if stdout != "detachtest (Open vSwitch) 0.0.1\n" || code != 0 {
			t.Errorf("ovs-appctl -t detachtest version: %q %q %d", stdout, stderr, code)
		}
	}

	// A second instance refuses to start, and its parent reports that.
	out, code = runDaemon(t, bin, rundir, "--detach", "--pidfile")
	wantErr := fmt.Sprintf("detachtest: %s: already running as pid %d, aborting\n", pidfile, pid)
	if code != 1 || out != wantErr {
		t.Errorf("second instance: code %d, output %q; want 1, %q", code, out, wantErr)
	}

	// SIGTERM: clean exit, pidfile and socket removed.
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, pidfile, ctl)
	log, _ := os.ReadFile(logFile)
	if !strings.Contains(string(log), "|fatal_signal|WARN|terminating with signal 15 (Terminated)\n") {
		t.Errorf("log file:\n%s", log)
	}
}

func TestDetachExitCommand(t *testing.T) {
	bin := buildDetachTest(t)
	rundir := t.TempDir()
	pidfile := filepath.Join(rundir, "detachtest.pid")
	ctl := filepath.Join(rundir, "d.ctl")
	if out, code := runDaemon(t, bin, rundir, "--detach", "--no-chdir", "--pidfile", "--unixctl=d.ctl"); code != 0 {
		t.Fatalf("--detach exited %d:\n%s", code, out)
	}
	pid := daemonPid(t, pidfile)
	t.Cleanup(func() {
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	wd, _ := os.Getwd()
	if r, err := UnixctlCall(ctl, "test/cwd"); err != nil || r != wd+"\n" {
		t.Errorf("--no-chdir cwd: %q %v, want %q", r, err, wd)
	}
	// "exit" must get its (empty) reply before the daemon goes away.
	if r, err := UnixctlCall(ctl, "exit"); err != nil || r != "" {
		t.Fatalf("exit: %q %v", r, err)
	}
	waitGone(t, pid, pidfile, ctl)
}

func TestDetachChildFailsBeforeReady(t *testing.T) {
	bin := buildDetachTest(t)
	rundir := t.TempDir()
	out, code := runDaemon(t, bin, rundir, "--detach", "--pidfile", "--fail-before-ready")
	if code != 3 || !strings.Contains(out, "detachtest: failing before ready\n") {
		t.Errorf("code %d output %q; want the child's status 3 and its stderr", code, out)
	}
	if _, err := os.Stat(filepath.Join(rundir, "detachtest.pid")); !os.IsNotExist(err) {
		t.Errorf("pidfile left behind: %v", err)
	}
	out, code = runDaemon(t, bin, rundir, "--detach", "--bogus")
	if code != 1 || out != "detachtest: unrecognized option '--bogus'\n" {
		t.Errorf("bad option: code %d output %q", code, out)
	}
}

// parentPid returns pid's parent, from /proc.
func parentPid(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// TestMonitor: --detach --monitor restarts the daemon after a crash (a Go
// panic, which the monitor turns into SIGABRT) and logs it as OVS does;
// "exit" ends both the daemon and its monitor.
func TestMonitor(t *testing.T) {
	bin := buildDetachTest(t)
	rundir := t.TempDir()
	logFile := filepath.Join(t.TempDir(), "d.log")
	pidfile := filepath.Join(rundir, "detachtest.pid")
	out, code := runDaemon(t, bin, rundir, "--detach", "--monitor", "--pidfile", "--log-file="+logFile)
	if code != 0 {
		t.Fatalf("--detach --monitor exited %d:\n%s", code, out)
	}
	pid := daemonPid(t, pidfile)
	monitor := parentPid(t, pid)
	t.Cleanup(func() {
		for _, p := range []int{monitor, pid} {
			if alive(p) {
				syscall.Kill(p, syscall.SIGKILL)
			}
		}
	})
	if monitor <= 1 || !alive(monitor) {
		t.Fatalf("daemon %d has parent %d, want its monitor", pid, monitor)
	}
	ctl := func(p int) string { return filepath.Join(rundir, fmt.Sprintf("detachtest.%d.ctl", p)) }
	UnixctlCall(ctl(pid), "test/crash") // the reply may or may not come
	deadline := time.Now().Add(60 * time.Second)
	pid2 := pid
	for pid2 == pid {
		if time.Now().After(deadline) {
			t.Fatalf("daemon not restarted; log:\n%s", readFile(logFile))
		}
		time.Sleep(20 * time.Millisecond)
		if data, err := os.ReadFile(pidfile); err == nil {
			if p, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && alive(p) {
				if _, err := UnixctlCall(ctl(p), "version"); err == nil {
					pid2 = p
				}
			}
		}
	}
	if p := parentPid(t, pid2); p != monitor {
		t.Errorf("restarted daemon's parent %d, want the monitor %d", p, monitor)
	}
	// ", core dumped" too if the core size limit allows one.
	want := fmt.Sprintf("|daemon_unix(monitor)|ERR|1 crashes: pid %d died, killed (Aborted)", pid)
	if log := readFile(logFile); !strings.Contains(log, want) || !strings.Contains(log, ", restarting\n") {
		t.Errorf("log lacks %q...:\n%s", want, log)
	}
	pid = pid2
	if r, err := UnixctlCall(ctl(pid), "exit"); err != nil || r != "" {
		t.Fatalf("exit: %q %v", r, err)
	}
	waitGone(t, pid, pidfile)
	waitGone(t, monitor)
	if log := readFile(logFile); !strings.Contains(log, fmt.Sprintf("|daemon_unix(monitor)|INFO|pid %d died, exit status 0, exiting\n", pid)) {
		t.Errorf("log lacks the monitor's exit:\n%s", log)
	}
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
