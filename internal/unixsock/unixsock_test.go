package unixsock

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestListenMode checks the socket file's mode under umasks more open and
// more closed than the mode asked for, and that only a socket is replaced.
func TestListenMode(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		umask int
		perm  os.FileMode
	}{
		{0o000, 0o750},
		{0o022, 0o750},
		{0o077, 0o750},
		{0o000, 0o700},
	} {
		old := syscall.Umask(tc.umask)
		path := filepath.Join(dir, "s")
		ln, err := Listen(path, tc.perm)
		syscall.Umask(old)
		if err != nil {
			t.Fatalf("umask %03o: %v", tc.umask, err)
		}
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != tc.perm {
			t.Errorf("umask %03o: mode %v, want socket %v", tc.umask, fi.Mode(), tc.perm)
		}
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatalf("umask %03o: dial: %v", tc.umask, err)
		}
		c.Close()
		// A stale socket is replaced.
		ln.SetUnlinkOnClose(false)
		ln.Close()
		ln, err = Listen(path, tc.perm)
		if err != nil {
			t.Fatalf("replacing a stale socket: %v", err)
		}
		ln.Close()
		if _, err := os.Lstat(path); !os.IsNotExist(err) {
			t.Errorf("socket file left after Close: %v", err)
		}
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(file, 0o750); err == nil {
		t.Error("Listen replaced a regular file")
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("regular file gone: %v", err)
	}
}
