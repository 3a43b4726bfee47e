package pprofsock

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestServe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pprof.sock")
	old := syscall.Umask(0)
	s, err := Serve(path)
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o750 {
		t.Fatalf("socket mode under umask 000: %v %v, want 0750", fi.Mode(), err)
	}
	c := http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/heap?debug=1", "/debug/pprof/goroutine?debug=1"} {
		resp, err := c.Get("http://x" + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "goroutine") && !strings.Contains(string(b), "heap") {
			t.Errorf("GET %s: %s\n%.200s", p, resp.Status, b)
		}
	}
	c.CloseIdleConnections()
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("socket left after Close: %v", err)
	}
}
