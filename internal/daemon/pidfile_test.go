package daemon

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const helperEnv = "GOVS_DAEMON_TEST_READ_PIDFILE"

// TestHelperReadPidfile is not a test: run by the pidfile tests in a child
// process, it prints the pidfile's contents and what ReadPidfile (F_GETLK)
// says about it. A pidfile must not be opened by the process holding it:
// closing any descriptor of the file drops the holder's POSIX lock.
func TestHelperReadPidfile(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("helper process only")
	}
	data, _ := os.ReadFile(path)
	pid, err := ReadPidfile(path)
	fmt.Printf("RESULT data=%q pid=%d err=%v\n", data, pid, err)
}

func readPidfileInChild(t *testing.T, path string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperReadPidfile$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if r, ok := strings.CutPrefix(line, "RESULT "); ok {
			return r
		}
	}
	t.Fatalf("helper printed no result:\n%s", out)
	return ""
}

// procLocks returns the /proc/locks lines for the file at path.
func procLocks(t *testing.T, path string) []string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Skip(err)
	}
	suffix := fmt.Sprintf(":%d", st.Ino)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		// "1: POSIX  ADVISORY  WRITE 3970 fe:00:9978161 0 EOF"
		if len(f) >= 6 && strings.HasSuffix(f[5], suffix) {
			out = append(out, strings.Join(f[1:5], " "))
		}
	}
	return out
}

func TestPidfileLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.pid")
	p, err := CreatePidfile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	me := os.Getpid()
	want := fmt.Sprintf("data=\"%d\\n\" pid=%d err=<nil>", me, me)
	if got := readPidfileInChild(t, path); got != want {
		t.Fatalf("F_GETLK from another process: %s, want %s", got, want)
	}
	// A classic POSIX (F_SETLK) lock, not flock ("FLOCK") or OFD ("OFDLCK").
	if got, want := procLocks(t, path), []string{fmt.Sprintf("POSIX ADVISORY WRITE %d", me)}; strings.Join(got, ";") != want[0] {
		t.Errorf("/proc/locks: %q, want %q", got, want)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("pidfile mode: %v %v", fi.Mode(), err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
	if err := p.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("pidfile not removed: %v", err)
	}
}

func TestReadPidfileStale(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.pid")
	if err := os.WriteFile(path, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPidfile(path); err != syscall.ESRCH {
		t.Fatalf("unlocked pidfile: %v, want ESRCH", err)
	}
	// A stale pidfile does not stop a new daemon.
	p, err := CreatePidfile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Remove()
	if got := readPidfileInChild(t, path); !strings.HasSuffix(got, fmt.Sprintf("pid=%d err=<nil>", os.Getpid())) {
		t.Fatalf("after replacing stale pidfile: %s", got)
	}
}
