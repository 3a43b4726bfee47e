package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
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

// benchClientEnv makes the test binary BenchmarkShortSession's client:
// "PATH N" runs N sessions on the unix socket PATH and exits.
const benchClientEnv = "JSONRPC_BENCH_CLIENT"

func TestMain(m *testing.M) {
	if v := os.Getenv(benchClientEnv); v != "" {
		var path string
		var n int
		fmt.Sscan(v, &path, &n)
		if err := benchClient(path, n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// benchClient runs n sessions of two requests each on the socket path,
// with a pause after each reply.
func benchClient(path string, n int) error {
	req := []byte(`{"id":1,"method":"x","params":["abc"]}`)
	buf := make([]byte, 256)
	for i := 0; i < n; i++ {
		c, err := net.Dial("unix", path)
		if err != nil {
			return err
		}
		for j := 0; j < 2; j++ {
			if _, err := c.Write(req); err != nil {
				return err
			}
			if _, err := c.Read(buf); err != nil {
				return err
			}
			// Think, as a client does between requests: long
			// enough for the server process to go idle.
			time.Sleep(100 * time.Microsecond)
		}
		c.Close()
	}
	return nil
}

// BenchmarkShortSession is short-lived clients' sessions on a unix socket,
// as ovn-nbctl calls are: connect, two requests one after the other's
// reply, close, from another process (the test binary run again). The
// server side runs a Conn on each connection from net's listener ("net")
// or from a PollListener ("poller"), on one P as ovsdb-server does.
// Besides the time it reports the server process's CPU time and context
// switches per session (getrusage), which are what the poller cuts: net's
// accept and close are system calls the runtime counts as blocking, which
// wake its monitor thread.
func BenchmarkShortSession(b *testing.B) {
	for _, kind := range []string{"net", "poller"} {
		b.Run(kind, func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			path := filepath.Join(b.TempDir(), "s")
			ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
			if err != nil {
				b.Fatal(err)
			}
			var ln net.Listener = ul
			if kind == "poller" {
				p, err := DefaultPoller()
				if err != nil {
					b.Fatal(err)
				}
				if ln, err = p.Listen(ul); err != nil {
					b.Fatal(err)
				}
			}
			defer ln.Close()
			go func() {
				for {
					nc, err := ln.Accept()
					if err != nil {
						return
					}
					go func() {
						conn := NewConn(nc, Options{})
						conn.Serve(func(m *Message) { conn.Send(NewReply(m.ID, m.Params)) })
					}()
				}
			}()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d", benchClientEnv, path, b.N))
			cmd.Stderr = os.Stderr
			var before, after syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			b.ResetTimer()
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			cpu := after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()
			b.ReportMetric(float64(cpu)/float64(b.N), "server-cpu-ns/op")
			b.ReportMetric(float64(after.Nvcsw+after.Nivcsw-before.Nvcsw-before.Nivcsw)/float64(b.N), "server-csw/op")
		})
	}
}

// TestSendReply checks that a reply sent in parts reads as Send's of the
// whole.
func TestSendReply(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	conn := NewConn(a, Options{})
	go conn.Serve(func(*Message) {})
	defer conn.Close()
	id := json.RawMessage(`["m",1]`)
	conn.SendReply(id, []byte(`[true,"x",`), []byte(`{"T":{}}`), []byte(`]`))
	conn.Send(NewReply(id, json.RawMessage(`[true,"x",{"T":{}}]`)))
	dec := NewDecoder(b, 0)
	var got []string
	for i := 0; i < 2; i++ {
		raw, err := dec.Next()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(raw))
	}
	if got[0] != got[1] {
		t.Errorf("SendReply wrote %s, Send %s", got[0], got[1])
	}
}
