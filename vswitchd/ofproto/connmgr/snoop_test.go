package connmgr

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// dialSnoop connects to m's snoop socket and says HELLO with hello.
func dialSnoop(t *testing.T, path string, hello []byte) *client {
	t.Helper()
	nc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := &client{t, nc}
	c.send(hello)
	if h := ofp.ParseHeader(c.recv()); h.Type != ofp.TypeHello {
		t.Fatalf("snoop socket's first message %+v", h)
	}
	return c
}

func TestSnoop(t *testing.T) {
	m := listen(t, fakeSource{})
	path := filepath.Join(filepath.Dir(m.Path()), "br0.snoop")
	if err := m.ListenSnoop(path); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != SocketMode {
		t.Fatalf("snoop socket: %v %v", fi, err)
	}

	// No active controller: the client is disconnected, reset as by OVS
	// (its HELLO unread).
	nc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	nc.Write(msg(ofp.V13, ofp.TypeHello, 1))
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Read(make([]byte, 8)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("snoop without a controller: %v, want connection reset", err)
	}
	nc.Close()

	fc := newFakeController(t)
	m.SetControllers([]Controller{{Target: fc.target(), Primary: true, MaxBackoff: time.Second, EnableAsync: true}})
	ctl := fc.accept(ofp.V15)
	waitStatus(t, m, fc.target(), func(s ControllerStatus) bool { return s.IsConnected })

	// The snoop client says OpenFlow 1.0 and still sees the controller's
	// 1.5 messages as they are, both ways, in order.
	sn := dialSnoop(t, path, msg(ofp.V10, ofp.TypeHello, 1))
	// The snoop's HELLO is read asynchronously: echo until a copy of a
	// request arrives (the controller's HELLO, if the switch read it
	// late, or the reply to an echo whose request came before the
	// snoop's HELLO, may come first).
	var req []byte
	for xid := uint32(100); req == nil; xid++ {
		ctl.send(msg(ofp.V15, ofp.TypeEchoRequest, xid, 'h', 'i'))
		ctl.expect(ofp.TypeEchoReply)
		for req == nil {
			sn.nc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			hdr := make([]byte, ofp.HeaderLen)
			if n, err := readFull(sn.nc, hdr); err != nil {
				if ne, ok := err.(net.Error); !ok || !ne.Timeout() || n != 0 {
					t.Fatalf("snoop read: %v (%d bytes)", err, n)
				}
				break
			}
			b := make([]byte, ofp.ParseHeader(hdr).Length)
			copy(b, hdr)
			if _, err := readFull(sn.nc, b[ofp.HeaderLen:]); err != nil {
				t.Fatal(err)
			}
			if h := ofp.ParseHeader(b); h.Type == ofp.TypeEchoRequest {
				req = b
			} else if h.Type != ofp.TypeHello && h.Type != ofp.TypeEchoReply {
				t.Fatalf("copy %x before the first echo request", b)
			}
		}
	}
	xid := ofp.ParseHeader(req).Xid
	if !bytes.Equal(req, msg(ofp.V15, ofp.TypeEchoRequest, xid, 'h', 'i')) {
		t.Fatalf("copy %x, want the controller's echo request", req)
	}
	if b := sn.recv(); !bytes.Equal(b, msg(ofp.V15, ofp.TypeEchoReply, xid, 'h', 'i')) {
		t.Fatalf("copy %x, want the switch's echo reply", b)
	}
	ctl.send(msg(ofp.V15, ofp.TypeFeaturesReq, 7))
	ctl.expect(ofp.TypeFeaturesReply)
	if h := ofp.ParseHeader(sn.recv()); h.Type != ofp.TypeFeaturesReq || h.Xid != 7 {
		t.Fatalf("copy %+v, want the features request", h)
	}
	if h := ofp.ParseHeader(sn.recv()); h.Type != ofp.TypeFeaturesReply || h.Xid != 7 {
		t.Fatalf("copy %+v, want the features reply", h)
	}

	// A client without a common version gets OFPHFC_INCOMPATIBLE.
	m.SetVersions(ofp.Versions(1) << ofp.V13)
	bad := dialSnoop(t, path, msg(ofp.V10, ofp.TypeHello, 9))
	if typ, code := bad.errorOf(bad.recv(), 9); typ != 0 || code != 0 {
		t.Fatalf("error %d/%d, want OFPET_HELLO_FAILED/OFPHFC_INCOMPATIBLE", typ, code)
	}

	// Removing the controller disconnects its snoop clients.
	m.SetControllers(nil)
	sn.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, err := sn.nc.Read(make([]byte, 64)); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("snoop connection still open after the controller's removal")
			}
			break
		}
	}
	m.Close()
	m.Wait()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("snoop socket left after Close: %v", err)
	}
}
