package jsonrpc

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
)

func pollListen(t *testing.T) (*PollListener, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := DefaultPoller()
	if err != nil {
		t.Fatal(err)
	}
	pl, err := p.Listen(ln)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pl.Close() })
	return pl, path
}

// TestPollConn moves data both ways through a PollConn, more than the
// socket buffers hold so that both sides wait for the poller, and sees the
// peer's close as EOF.
func TestPollConn(t *testing.T) {
	pl, path := pollListen(t)
	cc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	sc, err := pl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if _, ok := sc.(*PollConn); !ok {
		t.Fatalf("Accept returned %T", sc)
	}
	if sc.LocalAddr().String() != path {
		t.Errorf("LocalAddr %q, want %q", sc.LocalAddr(), path)
	}

	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	for _, dir := range []struct {
		name string
		w, r net.Conn
	}{{"server to client", sc, cc}, {"client to server", cc, sc}} {
		errc := make(chan error, 1)
		go func() {
			_, err := dir.w.Write(data)
			errc <- err
		}()
		got := make([]byte, len(data))
		if _, err := io.ReadFull(dir.r, got); err != nil {
			t.Fatalf("%s: read: %v", dir.name, err)
		}
		if err := <-errc; err != nil {
			t.Fatalf("%s: write: %v", dir.name, err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("%s: data differ", dir.name)
		}
	}

	cc.Close()
	if n, err := sc.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("read after the peer's close: %d, %v; want 0, EOF", n, err)
	}
}

// TestPollConnClose closes a PollConn while a Read waits: the Read returns
// net.ErrClosed and the descriptor is closed (the peer sees EOF).
func TestPollConnClose(t *testing.T) {
	pl, path := pollListen(t)
	cc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	sc, err := pl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		raw, _ := sc.(*PollConn).SyscallConn()
		// The first attempt finds nothing to read, as Read's does.
		err := raw.Read(func(uintptr) bool {
			select {
			case <-started:
			default:
				close(started)
			}
			return false
		})
		errc <- err
	}()
	<-started
	if err := sc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("waiting read after Close: %v, want net.ErrClosed", err)
	}
	if n, err := cc.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("peer read after Close: %d, %v; want 0, EOF", n, err)
	}
	if err := sc.Close(); err == nil {
		t.Error("second Close succeeded")
	}
	if _, err := sc.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after Close: %v, want net.ErrClosed", err)
	}
}

// TestPollListenerClose closes a listener while Accept waits: Accept
// returns net.ErrClosed, and the socket no longer takes connections.
func TestPollListenerClose(t *testing.T) {
	pl, path := pollListen(t)
	errc := make(chan error, 1)
	go func() {
		_, err := pl.Accept()
		errc <- err
	}()
	// Whether Accept waits already or not, it must return.
	if err := pl.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket file after Close: %v", err)
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		t.Fatal("dial after Close succeeded")
	}
}

// TestPollConnServe runs a jsonrpc Conn on a PollConn: requests answered
// in order, and Close ends Serve.
func TestPollConnServe(t *testing.T) {
	pl, path := pollListen(t)
	cc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	sc, err := pl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	conn := NewConn(sc, Options{})
	served := make(chan error, 1)
	go func() {
		served <- conn.Serve(func(m *Message) { conn.Send(NewReply(m.ID, m.Params)) })
	}()
	if _, err := cc.Write([]byte(`{"id":1,"method":"x","params":[1]}{"id":2,"method":"x","params":[2]}`)); err != nil {
		t.Fatal(err)
	}
	dec := NewDecoder(cc, 0)
	for i, want := range []string{`{"id":1,"result":[1],"error":null}`, `{"id":2,"result":[2],"error":null}`} {
		raw, err := dec.Next()
		if err != nil {
			t.Fatalf("reply %d: %v", i+1, err)
		}
		if string(raw) != want {
			t.Errorf("reply %d: %s, want %s", i+1, raw, want)
		}
	}
	conn.Close()
	if err := <-served; err != io.EOF {
		t.Errorf("Serve after Close: %v, want EOF", err)
	}
}
