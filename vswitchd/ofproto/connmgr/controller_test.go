package connmgr

import (
	"encoding/binary"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// fakeController listens for the switch's active connections, as a
// controller does.
type fakeController struct {
	t  *testing.T
	ln net.Listener
}

func newFakeController(t *testing.T) *fakeController {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &fakeController{t, ln}
}

func (f *fakeController) target() string { return "tcp:" + f.ln.Addr().String() }

// accept takes the switch's next connection and answers its HELLO with
// one of version v.
func (f *fakeController) accept(v ofp.Version) *client {
	f.t.Helper()
	f.ln.(*net.TCPListener).SetDeadline(time.Now().Add(30 * time.Second))
	nc, err := f.ln.Accept()
	if err != nil {
		f.t.Fatalf("switch did not connect: %v", err)
	}
	f.t.Cleanup(func() { nc.Close() })
	c := &client{f.t, nc}
	if h := ofp.ParseHeader(c.recv()); h.Type != ofp.TypeHello {
		f.t.Fatalf("switch's first message %+v", h)
	}
	c.send(msg(v, ofp.TypeHello, 1))
	return c
}

// waitStatus waits until the controller's status satisfies cond.
func waitStatus(t *testing.T, m *Manager, target string, cond func(ControllerStatus) bool) ControllerStatus {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := m.ControllerStatus()[target]
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: status %+v", target, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// expect reads messages until one of type typ arrives (answering echo
// requests on the way).
func (c *client) expect(typ uint8) []byte {
	c.t.Helper()
	for {
		b := c.recv()
		h := ofp.ParseHeader(b)
		if h.Type == typ {
			return b
		}
		if h.Type == ofp.TypeEchoRequest {
			c.send(msg(h.Version, ofp.TypeEchoReply, h.Xid))
		}
	}
}

func TestActiveController(t *testing.T) {
	m := listen(t, fakeSource{})
	fc := newFakeController(t)
	target := fc.target()
	m.SetControllers([]Controller{{Target: target, Primary: true, MaxBackoff: time.Second, Probe: time.Second, EnableAsync: true}})
	c := fc.accept(ofp.V13)
	c.send(msg(ofp.V13, ofp.TypeFeaturesReq, 2))
	if r := c.recv(); ofp.ParseHeader(r).Type != ofp.TypeFeaturesReply || binary.BigEndian.Uint64(r[8:]) != 0x1234 {
		t.Fatalf("features reply %x", r)
	}
	st := waitStatus(t, m, target, func(s ControllerStatus) bool { return s.IsConnected })
	if st.Role != "other" || st.Status["state"] != stateActive || st.Status["sec_since_connect"] == "" {
		t.Errorf("connected: %+v", st)
	}
	// A primary controller starts with miss_send_len 128.
	c.send(msg(ofp.V13, ofp.TypeGetConfigReq, 3))
	if r := c.recv(); binary.BigEndian.Uint16(r[10:]) != defaultMissSendLen {
		t.Errorf("get config %x", r)
	}
	// Silence: the switch probes, and an answer keeps the connection.
	if h := ofp.ParseHeader(c.recv()); h.Type != ofp.TypeEchoRequest {
		t.Fatalf("want an inactivity probe, got %+v", h)
	}
	c.send(msg(ofp.V13, ofp.TypeEchoReply, 0))
	c.send(msg(ofp.V13, 20, 4))
	c.expect(21)
	// No answer to the next probe: the switch disconnects and tries
	// again, with last_error and sec_since_disconnect.
	if h := ofp.ParseHeader(c.recv()); h.Type != ofp.TypeEchoRequest {
		t.Fatalf("want an inactivity probe, got %+v", h)
	}
	c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.nc.Read(make([]byte, 1)); err == nil {
		t.Fatal("connection still open after an unanswered probe")
	}
	st = waitStatus(t, m, target, func(s ControllerStatus) bool { return !s.IsConnected && s.Status["sec_since_disconnect"] != "" })
	if st.Role != "" || st.Status["last_error"] != "Connection timed out" {
		t.Errorf("after timeout: %+v", st)
	}
	c2 := fc.accept(ofp.V15)
	waitStatus(t, m, target, func(s ControllerStatus) bool { return s.IsConnected })
	c2.nc.Close()
	st = waitStatus(t, m, target, func(s ControllerStatus) bool { return !s.IsConnected })
	fc.accept(ofp.V10)
	waitStatus(t, m, target, func(s ControllerStatus) bool { return s.IsConnected })

	m.SetControllers(nil)
	if len(m.ControllerStatus()) != 0 {
		t.Error("controller still reported after removal")
	}
}

func TestControllerTargets(t *testing.T) {
	m := listen(t, fakeSource{})
	m.SetControllers([]Controller{
		{Target: "ssl:127.0.0.1:6653", Primary: true, MaxBackoff: time.Second},
		{Target: "unix:nothere", Primary: true, MaxBackoff: time.Second},
		{Target: "foo:bar", Primary: true, MaxBackoff: time.Second},
		{Target: "ptcp:0:127.0.0.1", MaxBackoff: time.Second},
	})
	for target, errText := range map[string]string{"ssl:127.0.0.1:6653": "Protocol not available", "unix:nothere": "No such file or directory"} {
		st := waitStatus(t, m, target, func(s ControllerStatus) bool { return s.Status["last_error"] != "" })
		if st.Status["last_error"] != errText || st.IsConnected || st.Status["state"] == stateActive {
			t.Errorf("%s: %+v", target, st)
		}
	}
	st := m.ControllerStatus()
	if _, ok := st["foo:bar"]; ok {
		t.Error("an unknown method is kept")
	}
	if p := st["ptcp:0:127.0.0.1"]; p.IsConnected || p.Status != nil || p.Role != "" {
		t.Errorf("passive target reports %+v", p)
	}
}

func TestParseController(t *testing.T) {
	ms := func(n int) *int { return &n }
	no := false
	for _, tc := range []struct {
		target, typ   string
		backoff, prob *int
		async         *bool
		want          Controller
	}{
		{"tcp:1.2.3.4", "", nil, nil, nil, Controller{Target: "tcp:1.2.3.4", Primary: true, MaxBackoff: 8 * time.Second, Probe: 5 * time.Second, EnableAsync: true}},
		{"ptcp:6653", "", ms(2500), ms(0), &no, Controller{Target: "ptcp:6653", MaxBackoff: 2 * time.Second}},
		{"punix:x", "primary", ms(1000), ms(1000), nil, Controller{Target: "punix:x", Primary: true, MaxBackoff: time.Second, Probe: 5 * time.Second, EnableAsync: true}},
		{"tcp:1.2.3.4", "service", ms(60000), ms(30000), nil, Controller{Target: "tcp:1.2.3.4", MaxBackoff: time.Minute, Probe: 30 * time.Second, EnableAsync: true}},
	} {
		if got := ParseController(tc.target, tc.typ, tc.backoff, tc.prob, tc.async); got != tc.want {
			t.Errorf("%s %s: %+v, want %+v", tc.target, tc.typ, got, tc.want)
		}
	}
	for target, want := range map[string]endpoint{
		"tcp:10.0.0.1":         {network: "tcp", addr: "10.0.0.1:6653"},
		"tcp:[::1]:99":         {network: "tcp", addr: "[::1]:99"},
		"ptcp:":                {passive: true, network: "tcp4", addr: "0.0.0.0:6653"},
		"ptcp:7000:127.0.0.1":  {passive: true, network: "tcp", addr: "127.0.0.1:7000"},
		"unix:br0.sock":        {network: "unix", addr: "/run/x/br0.sock"},
		"punix:/run/x/br0.ctl": {passive: true, network: "unix", addr: "/run/x/br0.ctl"},
	} {
		if got, err := parseTarget(target, "/run/x"); err != nil || got != want {
			t.Errorf("%s: %+v %v, want %+v", target, got, err, want)
		}
	}
	for _, bad := range []string{"tcp:", "tcp:1.2.3.4:x", "ptcp:70000", "unix:", "bogus:1"} {
		if _, err := parseTarget(bad, "/run/x"); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestRolesAndAsync checks roles across controller connections and which
// connections SendAsync delivers to.
func TestRolesAndAsync(t *testing.T) {
	src := &portSource{}
	m := listen(t, src)
	fa, fb := newFakeController(t), newFakeController(t)
	cfg := func(target string) Controller {
		return Controller{Target: target, Primary: true, MaxBackoff: time.Second, EnableAsync: true}
	}
	m.SetControllers([]Controller{cfg(fa.target()), cfg(fb.target())})
	a, b := fa.accept(ofp.V14), fb.accept(ofp.V13)
	svc := dial(t, m, msg(ofp.V13, ofp.TypeHello, 1))
	waitStatus(t, m, fa.target(), func(s ControllerStatus) bool { return s.IsConnected })
	waitStatus(t, m, fb.target(), func(s ControllerStatus) bool { return s.IsConnected })
	// The management connection is up once it answers.
	svc.send(msg(ofp.V13, ofp.TypeGetConfigReq, 2))
	svc.expect(ofp.TypeGetConfigReply)

	role := func(c *client, v ofp.Version, xid, r uint32, gen uint64) []byte {
		body := make([]byte, 16)
		binary.BigEndian.PutUint32(body, r)
		binary.BigEndian.PutUint64(body[8:], gen)
		c.send(msg(v, 24, xid, body...))
		return c.expect(25)
	}
	role(a, ofp.V14, 10, ofp.RoleMaster, 1)
	waitStatus(t, m, fa.target(), func(s ControllerStatus) bool { return s.Role == "master" })
	role(b, ofp.V13, 11, ofp.RoleMaster, 2)
	// a (OF1.4) is told it is now a slave.
	if r := a.expect(30); binary.BigEndian.Uint32(r[8:]) != ofp.RoleSlave || r[12] != ofp.RoleReasonMasterRequest || binary.BigEndian.Uint64(r[16:]) != 2 {
		t.Errorf("role status %x", r)
	}
	waitStatus(t, m, fa.target(), func(s ControllerStatus) bool { return s.Role == "slave" })
	waitStatus(t, m, fb.target(), func(s ControllerStatus) bool { return s.Role == "master" })

	// A slave may not change the switch.
	a.send(msg(ofp.V14, ofp.TypeFlowMod, 12, make([]byte, 48)...))
	if typ, code := a.errorOf(a.expect(ofp.TypeError), 12); typ != 1 || code != 10 {
		t.Errorf("slave FLOW_MOD: (%d,%d), want OFPBRC_IS_SLAVE (1,10)", typ, code)
	}

	// Packet-ins go to the master only; port status to both; the
	// service connection gets nothing until it sets miss_send_len.
	var mu sync.Mutex
	got := map[ofp.Version]int{}
	encode := func(tg AsyncTarget) []byte {
		mu.Lock()
		got[tg.Version]++
		mu.Unlock()
		return msg(tg.Version, ofp.TypePacketIn, 0)
	}
	if n := m.SendAsync(ofp.AsyncPacketIn, ofp.PacketInAction, encode); n != 1 || got[ofp.V13] != 1 {
		t.Errorf("packet-in sent to %d (%v), want the master only", n, got)
	}
	b.expect(ofp.TypePacketIn)
	if n := m.SendAsync(ofp.AsyncPacketIn, ofp.PacketInInvalidTTL, encode); n != 0 {
		t.Errorf("invalid-TTL packet-in sent to %d, want none by default", n)
	}
	src.set([]ofp.Port{{No: 1, Name: "p1"}})
	m.SyncPorts() // records
	src.set([]ofp.Port{{No: 1, Name: "p1"}, {No: 2, Name: "p2"}})
	m.SyncPorts()
	for _, c := range []*client{a, b} {
		if r := c.expect(ofp.TypePortStatus); r[8] != ofp.PortAdded {
			t.Errorf("port status %x", r)
		}
	}
	// The slave asks for packet-ins with OFPT_SET_ASYNC (OF1.4
	// properties: PACKET_IN_SLAVE = action).
	a.send(msg(ofp.V14, 28, 13, 0, 0, 0, 8, 0, 0, 0, 1<<ofp.PacketInAction))
	a.send(msg(ofp.V14, 26, 14))
	if r := a.expect(27); binary.BigEndian.Uint32(r[12:]) != 1<<ofp.PacketInAction {
		t.Errorf("get async reply %x", r)
	}
	// The service connection sets miss_send_len: from now on it gets
	// asynchronous messages as a master would.
	svc.send(msg(ofp.V13, ofp.TypeSetConfig, 15, 0, 0, 0xff, 0xff))
	svc.send(msg(ofp.V13, ofp.TypeGetConfigReq, 16))
	svc.expect(ofp.TypeGetConfigReply)
	if n := m.SendAsync(ofp.AsyncPacketIn, ofp.PacketInAction, encode); n != 3 {
		t.Errorf("packet-in sent to %d, want 3", n)
	}
	for _, c := range []*client{a, b, svc} {
		c.expect(ofp.TypePacketIn)
	}
	src.set([]ofp.Port{{No: 2, Name: "p2", Config: ofp.PortConfigDown}})
	m.SyncPorts()
	for _, c := range []*client{a, b, svc} {
		if r := c.expect(ofp.TypePortStatus); r[8] != ofp.PortDeleted {
			t.Errorf("port status %x, want delete", r)
		}
		if r := c.expect(ofp.TypePortStatus); r[8] != ofp.PortModified {
			t.Errorf("port status %x, want modify", r)
		}
	}

	// NXT_ROLE_REQUEST (OF1.0 controllers): slave.
	nx := func(c *client, v ofp.Version, xid, sub uint32, body ...byte) {
		b := binary.BigEndian.AppendUint32(nil, ofp.NiciraVendor)
		b = binary.BigEndian.AppendUint32(b, sub)
		c.send(msg(v, ofp.TypeVendor, xid, append(b, body...)...))
	}
	nx(b, ofp.V13, 20, 10, 0, 0, 0, 2)
	if r := b.expect(ofp.TypeVendor); binary.BigEndian.Uint32(r[12:]) != 11 || binary.BigEndian.Uint32(r[16:]) != 2 {
		t.Errorf("NXT_ROLE_REPLY %x", r)
	}
	waitStatus(t, m, fb.target(), func(s ControllerStatus) bool { return s.Role == "slave" })
}

// portSource is a Source whose ports a test changes.
type portSource struct {
	fakeSource
	mu    sync.Mutex
	ports []ofp.Port
}

func (s *portSource) set(p []ofp.Port) {
	s.mu.Lock()
	s.ports = p
	s.mu.Unlock()
}

func (s *portSource) Ports() []ofp.Port {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ofp.Port(nil), s.ports...)
}

func TestProtocols(t *testing.T) {
	m := listen(t, fakeSource{})
	m.SetVersions(1<<ofp.V13 | 1<<ofp.V15)
	nc, err := net.Dial("unix", m.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &client{t, nc}
	// The switch's HELLO carries a bitmap of the allowed versions.
	if h := c.recv(); h[1] != ofp.TypeHello || h[0] != byte(ofp.V15) || len(h) != 16 || binary.BigEndian.Uint32(h[12:]) != 1<<ofp.V13|1<<ofp.V15 {
		t.Fatalf("hello %x", h)
	}
	c.send(msg(ofp.V12, ofp.TypeHello, 1))
	r := c.recv()
	if typ, code := c.errorOf(r, 1); typ != 0 || code != 0 {
		t.Errorf("(%d,%d), want OFPHFC_INCOMPATIBLE", typ, code)
	}
	if text := string(r[12:]); !strings.Contains(text, "We support OpenFlow13, OpenFlow15, you support OpenFlow10, OpenFlow11, OpenFlow12, no common versions.") {
		t.Errorf("text %q", text)
	}
	if got := formatVersions(1 << ofp.V10); got != "version 0x01" {
		t.Errorf("formatVersions: %q", got)
	}
	if got := formatVersions(1<<ofp.V10 | 1<<ofp.V13); got != "versions 0x01, 0x04" {
		t.Errorf("formatVersions: %q", got)
	}
}

func TestFailOpen(t *testing.T) {
	m := listen(t, fakeSource{})
	if m.FailOpen() || m.HasPrimaryControllers() {
		t.Fatal("fail-open without controllers")
	}
	// Probes disabled: fail-open as soon as no controller is connected.
	m.SetControllers([]Controller{{Target: "tcp:127.0.0.1:1", Primary: true, MaxBackoff: time.Second}})
	if !m.HasPrimaryControllers() || !m.FailOpen() {
		t.Error("standalone, unreachable controller, no probes: fail-open expected")
	}
	m.SetFailMode(false)
	if m.FailOpen() {
		t.Error("fail-open with fail_mode=secure")
	}
	m.SetFailMode(true)
	m.SetControllers([]Controller{{Target: "tcp:127.0.0.1:1", Primary: true, MaxBackoff: time.Second, Probe: time.Hour}})
	if m.FailOpen() {
		t.Error("fail-open before three probe intervals")
	}
	m.SetControllers([]Controller{{Target: "ptcp:0:127.0.0.1", MaxBackoff: time.Second}})
	if m.HasPrimaryControllers() || m.FailOpen() {
		t.Error("a service controller counts as primary")
	}
}
