package connmgr

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

type fakeSource struct{ flows []ofp.FlowStats }

func (fakeSource) DatapathID() uint64 { return 0x1234 }
func (fakeSource) Ports() []ofp.Port {
	return []ofp.Port{{No: ofp.PortLocal, Name: "br0"}, {No: 1, Name: "p1"}, {No: 2, Name: "p2"}}
}
func (fakeSource) PortStats() []ofp.PortStats {
	return []ofp.PortStats{{No: ofp.PortLocal}, {No: 1, RxPackets: 7}, {No: 2}}
}
func (s fakeSource) Flows() []ofp.FlowStats { return s.flows }
func (fakeSource) FlowMod(*ofp.FlowMod) *ofp.Error {
	return &ofp.Error{Errno: ofp.EPerm}
}
func (fakeSource) Barrier() {}

type testLog struct{ t *testing.T }

func (l testLog) Errorf(f string, a ...any) { l.t.Logf("ERR "+f, a...) }
func (l testLog) Warnf(f string, a ...any)  { l.t.Logf("WARN "+f, a...) }
func (l testLog) Infof(f string, a ...any)  { l.t.Logf("INFO "+f, a...) }
func (l testLog) Debugf(f string, a ...any) { l.t.Logf("DBG "+f, a...) }

var normalFlow = ofp.FlowStats{Actions: []ofp.Action{{Type: ofp.ActOutput, Port: ofp.PortNormal}}}

func listen(t *testing.T, src Source) *Manager {
	t.Helper()
	m, err := Listen("br0", filepath.Join(t.TempDir(), "br0.mgmt"), src, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); m.Wait() })
	return m
}

// client is a test OpenFlow client.
type client struct {
	t  *testing.T
	nc net.Conn
}

func dial(t *testing.T, m *Manager, hello []byte) *client {
	t.Helper()
	nc, err := net.Dial("unix", m.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := &client{t, nc}
	if h := ofp.ParseHeader(c.recv()); h.Type != ofp.TypeHello || h.Version != ofp.V15 {
		t.Fatalf("switch's first message %+v", h)
	}
	c.send(hello)
	return c
}

func (c *client) send(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// recv reads one message, failing the test after a deadline.
func (c *client) recv() []byte {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	hdr := make([]byte, ofp.HeaderLen)
	if _, err := readFull(c.nc, hdr); err != nil {
		c.t.Fatal(err)
	}
	b := make([]byte, binary.BigEndian.Uint16(hdr[2:]))
	copy(b, hdr)
	if _, err := readFull(c.nc, b[ofp.HeaderLen:]); err != nil {
		c.t.Fatal(err)
	}
	return b
}

func readFull(nc net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := nc.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func msg(v ofp.Version, typ uint8, xid uint32, body ...byte) []byte {
	b := []byte{byte(v), typ, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[4:], xid)
	b = append(b, body...)
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	return b
}

// errorOf returns an OFPT_ERROR's type and code, failing if b is not one.
func (c *client) errorOf(b []byte, xid uint32) (uint16, uint16) {
	c.t.Helper()
	h := ofp.ParseHeader(b)
	if h.Type != ofp.TypeError || h.Xid != xid {
		c.t.Fatalf("want OFPT_ERROR xid %d, got %+v", xid, h)
	}
	return binary.BigEndian.Uint16(b[8:]), binary.BigEndian.Uint16(b[10:])
}

func TestSocket(t *testing.T) {
	m := listen(t, fakeSource{})
	fi, err := os.Stat(m.Path())
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != SocketMode {
		t.Fatalf("socket %v %v", fi, err)
	}
	m.Close()
	m.Wait()
	if _, err := os.Stat(m.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind: %v", err)
	}
}

func TestRequestsInOrder(t *testing.T) {
	m := listen(t, fakeSource{flows: []ofp.FlowStats{normalFlow}})
	c := dial(t, m, msg(ofp.V13, ofp.TypeHello, 1, 0, 1, 0, 8, 0, 0, 0, 0x10))
	// Pipelined: a FLOW_MOD (refused: an all-zero match has type 0, an
	// OpenFlow 1.1 standard match, of length 0: OFPBMC_BAD_LEN, as OVS's
	// ofputil_pull_ofp11_match in any version), features, an echo, a
	// barrier.
	var batch []byte
	batch = append(batch, msg(ofp.V13, ofp.TypeFlowMod, 2, make([]byte, 48)...)...)
	batch = append(batch, msg(ofp.V13, ofp.TypeFeaturesReq, 3)...)
	batch = append(batch, msg(ofp.V13, ofp.TypeEchoRequest, 4, 'x')...)
	batch = append(batch, msg(ofp.V13, 20, 5)...) // OFPT_BARRIER_REQUEST
	c.send(batch)
	if typ, code := c.errorOf(c.recv(), 2); typ != 4 || code != 1 {
		t.Errorf("FLOW_MOD: error (%d,%d), want OFPBMC_BAD_LEN", typ, code)
	}
	f := c.recv()
	if h := ofp.ParseHeader(f); h.Type != ofp.TypeFeaturesReply || h.Xid != 3 || binary.BigEndian.Uint64(f[8:]) != 0x1234 || f[20] != NTables {
		t.Errorf("features reply %x", f)
	}
	if e := c.recv(); ofp.ParseHeader(e).Type != ofp.TypeEchoReply || string(e[8:]) != "x" {
		t.Errorf("echo reply %x", e)
	}
	if b := ofp.ParseHeader(c.recv()); b.Type != 21 || b.Xid != 5 {
		t.Errorf("barrier reply %+v", b)
	}
	// Malformed: wrong length for type, and a 1.0 message on 1.3.
	c.send(msg(ofp.V13, ofp.TypeFeaturesReq, 6, 1, 2, 3, 4))
	if typ, code := c.errorOf(c.recv(), 6); typ != 1 || code != 6 {
		t.Errorf("long features request: (%d,%d), want OFPBRC_BAD_LEN", typ, code)
	}
	c.send(msg(ofp.V10, ofp.TypeFeaturesReq, 7))
	if typ, code := c.errorOf(c.recv(), 7); typ != 1 || code != 0 {
		t.Errorf("1.0 request: (%d,%d), want OFPBRC_BAD_VERSION", typ, code)
	}
	// Still up.
	c.send(msg(ofp.V13, ofp.TypeGetConfigReq, 8))
	if r := c.recv(); ofp.ParseHeader(r).Type != ofp.TypeGetConfigReply || binary.BigEndian.Uint16(r[10:]) != 0 {
		t.Errorf("get config %x", r)
	}
}

func TestFlowStats(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flows []ofp.FlowStats
		req   []byte // OF1.3 flow stats body after the multipart header
		want  int
	}{
		{"standalone", []ofp.FlowStats{normalFlow}, flowReq(0xff, ofp.PortAny), 1},
		{"secure", nil, flowReq(0xff, ofp.PortAny), 0},
		{"table 1", []ofp.FlowStats{normalFlow}, flowReq(1, ofp.PortAny), 0},
		{"out_port NORMAL", []ofp.FlowStats{normalFlow}, flowReq(0, ofp.PortNormal), 1},
		{"out_port 1", []ofp.FlowStats{normalFlow}, flowReq(0xff, 1), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := listen(t, fakeSource{flows: tc.flows})
			c := dial(t, m, msg(ofp.V13, ofp.TypeHello, 1))
			c.send(msg(ofp.V13, 18, 2, append([]byte{0, 1, 0, 0, 0, 0, 0, 0}, tc.req...)...))
			r := c.recv()
			if h := ofp.ParseHeader(r); h.Type != 19 || h.Xid != 2 {
				t.Fatalf("reply %x", r)
			}
			if got := (len(r) - 16) / 80; got != tc.want {
				t.Errorf("%d flows, want %d", got, tc.want)
			}
		})
	}
}

func flowReq(table uint8, outPort uint32) []byte {
	b := make([]byte, 32)
	b[0] = table
	binary.BigEndian.PutUint32(b[4:], outPort)
	binary.BigEndian.PutUint32(b[8:], ofp.GroupAny)
	return append(b, 0, 1, 0, 4, 0, 0, 0, 0)
}

func TestVersionNegotiation(t *testing.T) {
	m := listen(t, fakeSource{})
	c := dial(t, m, msg(ofp.V10, ofp.TypeHello, 1))
	c.send(msg(ofp.V10, ofp.TypeFeaturesReq, 2))
	if r := c.recv(); r[0] != byte(ofp.V10) || ofp.ParseHeader(r).Type != ofp.TypeFeaturesReply {
		t.Errorf("1.0 features reply %x", r)
	}

	// A client that only speaks a version govs does not gets
	// OFPHFC_INCOMPATIBLE and is disconnected.
	c = dial(t, m, msg(ofp.Version(9), ofp.TypeHello, 3, 0, 1, 0, 8, 0, 0, 2, 0))
	if typ, code := c.errorOf(c.recv(), 3); typ != 0 || code != 0 {
		t.Errorf("incompatible hello: (%d,%d)", typ, code)
	}
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.nc.Read(make([]byte, 1)); err == nil {
		t.Error("connection still open")
	}
}

func TestRoles(t *testing.T) {
	m := listen(t, fakeSource{})
	a := dial(t, m, msg(ofp.V13, ofp.TypeHello, 1))
	b := dial(t, m, msg(ofp.V13, ofp.TypeHello, 1))
	role := func(c *client, xid, r uint32, gen uint64) []byte {
		body := make([]byte, 16)
		binary.BigEndian.PutUint32(body, r)
		binary.BigEndian.PutUint64(body[8:], gen)
		c.send(msg(ofp.V13, 24, xid, body...))
		return c.recv()
	}
	if r := role(a, 2, ofp.RoleMaster, 10); ofp.ParseHeader(r).Type != 25 || binary.BigEndian.Uint32(r[8:]) != ofp.RoleMaster {
		t.Fatalf("master reply %x", r)
	}
	if r := role(b, 3, ofp.RoleMaster, 9); true {
		if typ, code := b.errorOf(r, 3); typ != 11 || code != 0 {
			t.Errorf("stale generation: (%d,%d), want OFPRRFC_STALE", typ, code)
		}
	}
	role(b, 4, ofp.RoleMaster, 11)
	if r := role(a, 5, ofp.RoleNoChange, 0); binary.BigEndian.Uint32(r[8:]) != ofp.RoleSlave || binary.BigEndian.Uint64(r[16:]) != 11 {
		t.Errorf("old master now %x", r)
	}
}
