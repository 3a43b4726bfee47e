package connmgr

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
)

// socketPair returns the two ends of a connected unix stream socket pair.
func socketPair(t *testing.T) (a, b net.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) net.Conn {
		f := os.NewFile(uintptr(fd), "socketpair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	return conn(fds[0]), conn(fds[1])
}

// TestReadSpin: readSpin returns what is there at once, what comes while
// it polls or after it has gone back to waiting (whichever happens), and
// io.EOF once the peer has closed.
func TestReadSpin(t *testing.T) {
	a, b := socketPair(t)
	r := newRawIO(a)
	if r == nil {
		t.Fatal("no rawIO for a unix socket")
	}
	buf := make([]byte, 64)
	if _, err := b.Write([]byte("now")); err != nil {
		t.Fatal(err)
	}
	if n, err := r.readSpin(buf); err != nil || string(buf[:n]) != "now" {
		t.Fatalf("readSpin: %q, %v", buf[:n], err)
	}
	for i := 0; i < 50; i++ {
		got := make(chan string, 1)
		go func() {
			n, err := r.readSpin(buf)
			if err != nil {
				got <- err.Error()
				return
			}
			got <- string(buf[:n])
		}()
		if _, err := b.Write([]byte("later")); err != nil {
			t.Fatal(err)
		}
		if s := <-got; s != "later" {
			t.Fatalf("round %d: readSpin: %q", i, s)
		}
	}
	b.Close()
	if n, err := r.readSpin(buf); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("after the peer closed: %d, %v", n, err)
	}
}
