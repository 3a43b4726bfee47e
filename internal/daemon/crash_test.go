package daemon

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const crashEnv = "GOVS_DAEMON_CRASH_LOG"

// TestHelperCrash is not a test: run by TestCrashGoesToLogFile in a child
// process, it opens the log file named in the environment and panics.
func TestHelperCrash(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("helper process only")
	}
	l := NewLogger(io.Discard)
	if err := l.SetLogFile(path); err != nil {
		t.Fatal(err)
	}
	panic("govs crash test")
}

// TestCrashGoesToLogFile: a daemon's panic reaches its log file, where a
// detached daemon's stderr (/dev/null) would lose it.
func TestCrashGoesToLogFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crash.log")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCrash$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("the helper did not crash:\n%s", out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "panic: govs crash test") || !strings.Contains(string(b), "goroutine ") {
		t.Errorf("the log file lacks the panic and its stack:\n%s", b)
	}
}
