package unixsock

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
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
		// A stale socket (closed, its file left) is replaced.
		ln.UnixListener.Close()
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

// TestListenNeverRefuses dials the path a listener is being made at: the
// file is either absent or listening, never a socket that refuses. The
// listeners' Close removes their files and no temporary file is left.
func TestListenNeverRefuses(t *testing.T) {
	dir := t.TempDir()
	const n = 300
	var paths [n]string
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("br%d.mgmt", i))
	}
	var cur atomic.Int64
	var stop atomic.Bool
	var refused, dialed atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				c, err := net.Dial("unix", paths[cur.Load()])
				switch {
				case err == nil:
					dialed.Add(1)
					c.Close()
				case errors.Is(err, syscall.ECONNREFUSED):
					refused.Add(1)
				}
			}
		}()
	}
	var lns []*Listener
	for i := range paths {
		cur.Store(int64(i))
		ln, err := Listen(paths[i], 0o750)
		if err != nil {
			t.Error(err)
			break
		}
		lns = append(lns, ln)
	}
	stop.Store(true)
	wg.Wait()
	for _, ln := range lns {
		ln.Close()
	}
	if n := refused.Load(); n > 0 {
		t.Errorf("%d connections refused (of %d made)", n, dialed.Load()+n)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		t.Errorf("left in the directory: %s", e.Name())
	}
}

// TestListenCloseKeepsReplacement checks that closing a listener whose
// file a newer listener has replaced leaves the newer one's file.
func TestListenCloseKeepsReplacement(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	old, err := Listen(path, 0o750)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := Listen(path, 0o750)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	old.Close()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("the newer listener's socket: %v", err)
	}
	c.Close()
	if a := cur.Addr().String(); a != path {
		t.Errorf("Addr %q, want %q", a, path)
	}
}

// TestListenLongPath binds a path too long for a temporary name beside
// it at the path itself.
func TestListenLongPath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, strings.Repeat("x", maxPath-len(dir)-1))
	if len(path) != maxPath {
		t.Skipf("temporary directory %s too long", dir)
	}
	ln, err := Listen(path, 0o750)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	ln.Close()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("socket file left after Close: %v", err)
	}
}
