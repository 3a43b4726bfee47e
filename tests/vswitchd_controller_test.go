package tests

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Controllers (Bridge.controller) of govs' bridges: a Go fake controller,
// Debian's ovs-testcontroller, and the Controller columns compared with
// Debian's ovs-vswitchd.

const vswTestcontroller = "/usr/bin/ovs-testcontroller"

// ctlColumns reads a Controller row's is_connected, role and status.
func ctlColumns(vsctl func(args ...string) string, target string) (connected bool, role string, status map[string]string) {
	out := vsctl("--format=json", "--columns=is_connected,role,status", "find", "controller", fmt.Sprintf("target=%q", target))
	var res struct{ Data [][]any }
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Data) != 1 || len(res.Data[0]) != 3 {
		return false, "", nil
	}
	row := res.Data[0]
	connected, _ = row[0].(bool)
	role, _ = row[1].(string)
	status = map[string]string{}
	if m, ok := row[2].([]any); ok && len(m) == 2 {
		pairs, _ := m[1].([]any)
		for _, p := range pairs {
			if kv, ok := p.([]any); ok && len(kv) == 2 {
				k, _ := kv[0].(string)
				v, _ := kv[1].(string)
				status[k] = v
			}
		}
	}
	return connected, role, status
}

// startTestcontroller runs Debian's ovs-testcontroller listening on
// 127.0.0.1:port and returns its pid.
func startTestcontroller(t *testing.T, dir string, port int) int {
	t.Helper()
	pidfile := filepath.Join(dir, fmt.Sprintf("tc%d.pid", port))
	os.Remove(pidfile)
	if _, err := vswRun(vswTestcontroller, fmt.Sprintf("ptcp:%d:127.0.0.1", port), "--detach", "--pidfile="+pidfile,
		"--no-chdir", "-vconsole:off", "--log-file="+filepath.Join(dir, "testcontroller.log")); err != nil {
		t.Fatal(err)
	}
	pid := vswReadPid(pidfile)
	if pid <= 0 {
		t.Fatal("ovs-testcontroller --detach returned without a pidfile")
	}
	t.Cleanup(func() { vswKill(t, pid) })
	return pid
}

// TestControllerTestcontroller connects a bridge to Debian's
// ovs-testcontroller: the Controller row shows the connection, loses it
// when the controller dies, and gets it back when it returns.
func TestControllerTestcontroller(t *testing.T) {
	if _, err := os.Stat(vswTestcontroller); err != nil {
		t.Fatalf("%s is missing: install openvswitch-testcontroller", vswTestcontroller)
	}
	e := vswNewEnv(t)
	port := ovsdbFreePort(t)
	target := fmt.Sprintf("tcp:127.0.0.1:%d", port)
	pid := startTestcontroller(t, e.dir, port)
	e.mustVsctl("add-br", "goct0", "--", "set-controller", "goct0", target,
		"--", "set", "controller", "goct0", "max_backoff=2000")
	if got := strings.TrimSpace(e.mustVsctl("get-controller", "goct0")); got != target {
		t.Errorf("get-controller: %q", got)
	}
	var status map[string]string
	vswWait(t, vswTimeout, "Controller.is_connected", func() bool {
		connected, role, st := ctlColumns(e.mustVsctl, target)
		status = st
		return connected && role == "other" && st["state"] == "ACTIVE"
	})
	if _, ok := status["sec_since_connect"]; !ok {
		t.Errorf("status %v has no sec_since_connect", status)
	}
	// A standalone bridge with a controller runs no flow of its own.
	if out, _ := (&ofSwitch{t: t, dir: e.dir}).ofctl("dump-flows", "goct0"); strings.Contains(out, "actions=NORMAL") {
		t.Errorf("dump-flows with a controller:\n%s", out)
	}

	vswKill(t, pid)
	vswWait(t, vswTimeout, "Controller.is_connected to drop", func() bool {
		connected, role, st := ctlColumns(e.mustVsctl, target)
		status = st
		return !connected && role == "" && st["sec_since_disconnect"] != "" && st["last_error"] != ""
	})
	t.Logf("after the controller died: %v", status)

	startTestcontroller(t, e.dir, port)
	vswWait(t, vswTimeout, "the switch to reconnect", func() bool {
		connected, _, _ := ctlColumns(e.mustVsctl, target)
		return connected
	})
	// bridge/reconnect drops the connection, which comes back (OVS's
	// rconn_reconnect: "disconnecting", no error).
	connects := func() int {
		log, _ := os.ReadFile(e.logPath())
		return strings.Count(string(log), "|rconn|INFO|goct0<->"+target+": connected")
	}
	before := connects()
	logBefore, _ := os.ReadFile(e.logPath())
	e.mustAppctl("bridge/reconnect", "goct0")
	vswWait(t, vswTimeout, "the switch to reconnect after bridge/reconnect", func() bool {
		connected, _, _ := ctlColumns(e.mustVsctl, target)
		return connected && connects() > before
	})
	log, _ := os.ReadFile(e.logPath())
	if strings.Contains(string(log[len(logBefore):]), ": connection dropped") {
		t.Error("bridge/reconnect logged its disconnection as a dropped connection")
	}
	for _, want := range []string{"|rconn|INFO|goct0<->" + target + ": connected",
		"|rconn|INFO|goct0<->" + target + ": disconnecting",
		"|connmgr|INFO|goct0: added primary controller \"" + target + "\""} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log lacks %q", want)
		}
	}
	// The killed controller's socket closes with a FIN, or with a reset
	// when it dies with the switch's messages unread (the kernel's
	// choice, as under OVS): OVS's rconn logs the one or the other.
	if !strings.Contains(string(logBefore), "|rconn|INFO|goct0<->"+target+": connection closed by peer") &&
		!strings.Contains(string(logBefore), "|rconn|WARN|goct0<->"+target+": connection dropped (Connection reset by peer)") {
		t.Errorf("log lacks the controller's death (closed by peer, or reset)")
	}

	if out := e.mustAppctl("ofproto/list"); out != "goct0\n" {
		t.Errorf("ofproto/list: %q", out)
	}
	// ovs-testcontroller's own table-miss flow, if it was installed yet,
	// is all the bridge runs.
	if out := e.mustAppctl("bridge/dump-flows", "goct0"); out != "" && !regexp.MustCompile(`^duration=\d+s, n_packets=\d+, n_bytes=\d+, priority=0,actions=CONTROLLER:128\n$`).MatchString(out) {
		t.Errorf("bridge/dump-flows with a controller: %q", out)
	}
	if out, err := e.appctl("bridge/dump-flows", "nosuch"); err == nil || !strings.Contains(out+err.Error(), "Unknown bridge") {
		t.Errorf("bridge/dump-flows nosuch: %q %v", out, err)
	}
	e.mustVsctl("del-controller", "goct0")
	if got := strings.TrimSpace(e.mustVsctl("get-controller", "goct0")); got != "" {
		t.Errorf("get-controller after del-controller: %q", got)
	}
	if out, _ := (&ofSwitch{t: t, dir: e.dir}).ofctl("dump-flows", "goct0"); !strings.Contains(out, "priority=0 actions=NORMAL") {
		t.Errorf("dump-flows without a controller:\n%s", out)
	}
	if out := e.mustAppctl("bridge/dump-flows", "goct0"); !regexp.MustCompile(`^duration=\d+s, n_packets=\d+, n_bytes=\d+, priority=0,actions=NORMAL\n$`).MatchString(out) {
		t.Errorf("bridge/dump-flows: %q", out)
	}
}

// ofPeer is the controller side of one OpenFlow connection, for tests.
type ofPeer struct {
	t  *testing.T
	nc net.Conn
}

func ofMsg(v, typ uint8, xid uint32, body ...byte) []byte {
	b := []byte{v, typ, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[4:], xid)
	b = append(b, body...)
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	return b
}

func (p *ofPeer) send(b []byte) {
	p.t.Helper()
	if _, err := p.nc.Write(b); err != nil {
		p.t.Fatal(err)
	}
}

func (p *ofPeer) recv() []byte {
	p.t.Helper()
	p.nc.SetReadDeadline(time.Now().Add(vswTimeout))
	hdr := make([]byte, 8)
	if _, err := io.ReadFull(p.nc, hdr); err != nil {
		p.t.Fatal(err)
	}
	b := make([]byte, binary.BigEndian.Uint16(hdr[2:]))
	copy(b, hdr)
	if _, err := io.ReadFull(p.nc, b[8:]); err != nil {
		p.t.Fatal(err)
	}
	return b
}

// expect reads until a message of type typ, answering echo requests.
func (p *ofPeer) expect(typ uint8) []byte {
	p.t.Helper()
	for {
		b := p.recv()
		if b[1] == typ {
			return b
		}
		if b[1] == 2 {
			p.send(ofMsg(b[0], 3, binary.BigEndian.Uint32(b[4:])))
		}
	}
}

// TestControllerFake drives a bridge from a controller written here: the
// switch connects to it, negotiates OpenFlow 1.4, answers FEATURES,
// probes it when it is silent, takes the master role, and reports ports
// added and deleted with PORT_STATUS.
func TestControllerFake(t *testing.T) {
	e := vswNewEnv(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	target := "tcp:" + ln.Addr().String()
	e.mustVsctl("add-br", "gocf0", "--", "set-controller", "gocf0", target,
		"--", "set", "controller", "gocf0", "inactivity_probe=5000")
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(vswTimeout))
	nc, err := ln.Accept()
	if err != nil {
		t.Fatalf("the switch did not connect: %v", err)
	}
	defer nc.Close()
	p := &ofPeer{t, nc}
	if h := p.recv(); h[1] != 0 || h[0] != 6 {
		t.Fatalf("switch's hello %x", h)
	}
	p.send(ofMsg(5, 0, 1)) // HELLO, OpenFlow 1.4
	p.send(ofMsg(5, 5, 2)) // FEATURES_REQUEST
	f := p.expect(6)
	if f[0] != 5 || binary.BigEndian.Uint32(f[4:]) != 2 {
		t.Fatalf("features reply %x", f)
	}
	dpid := e.mustVsctl("get", "bridge", "gocf0", "datapath_id")
	if got := fmt.Sprintf("%016x", binary.BigEndian.Uint64(f[8:])); !strings.Contains(dpid, got) {
		t.Errorf("features dpid %s, database %s", got, dpid)
	}
	// Silent for an inactivity probe interval: an echo request comes.
	if b := p.recv(); b[1] != 2 {
		t.Fatalf("want an echo request (inactivity probe), got %x", b)
	} else {
		p.send(ofMsg(5, 3, binary.BigEndian.Uint32(b[4:])))
	}
	// Master.
	role := make([]byte, 16)
	binary.BigEndian.PutUint32(role, 2)
	binary.BigEndian.PutUint64(role[8:], 7)
	p.send(ofMsg(5, 24, 3, role...))
	if r := p.expect(25); binary.BigEndian.Uint32(r[8:]) != 2 {
		t.Errorf("role reply %x", r)
	}
	vswWait(t, vswTimeout, "Controller.role=master", func() bool {
		connected, role, _ := ctlColumns(e.mustVsctl, target)
		return connected && role == "master"
	})
	// Ports come and go.
	e.mustVsctl("add-port", "gocf0", "gocfi", "--", "set", "interface", "gocfi", "type=internal", "ofport_request=7")
	r := p.expect(12)
	if r[8] != 0 || binary.BigEndian.Uint32(r[16:]) != 7 || !strings.HasPrefix(string(r[32:48]), "gocfi") {
		t.Errorf("PORT_STATUS add %x", r)
	}
	e.mustVsctl("del-port", "gocf0", "gocfi")
	for {
		r = p.expect(12)
		if r[8] == 1 {
			break
		}
	}
	if binary.BigEndian.Uint32(r[16:]) != 7 {
		t.Errorf("PORT_STATUS delete %x", r)
	}
}

// TestControllerColumnsDifferential configures the same controllers on
// govs and on Debian's ovs-vswitchd and compares `ovs-vsctl list
// controller` (seconds normalised): unreachable, SSL without SSL
// configured, passive, and connected to a shared ovs-testcontroller.
func TestControllerColumnsDifferential(t *testing.T) {
	if _, err := os.Stat(vswTestcontroller); err != nil {
		t.Fatalf("%s is missing: install openvswitch-testcontroller", vswTestcontroller)
	}
	// Debian's netdev bridges need the one "ovs-netdev" device, which
	// another switch may hold: a dummy datapath has no devices at all.
	deb := startDebianSwitch(t, "--enable-dummy")
	e := vswNewEnv(t)
	govs := &ofSwitch{t: t, dir: e.dir, vsctl: e.mustVsctl}
	port := ovsdbFreePort(t)
	startTestcontroller(t, e.dir, port)
	up := fmt.Sprintf("tcp:127.0.0.1:%d", port)
	targets := []string{up, "tcp:127.0.0.1:1", "ssl:127.0.0.1:6653", "ptcp:0:127.0.0.1"}
	for _, s := range []*ofSwitch{deb, govs} {
		s.vsctl(append([]string{"add-br", "gocd0", "--", "set", "bridge", "gocd0", "datapath_type=dummy", "--", "set-controller", "gocd0"}, targets...)...)
	}
	norm := regexp.MustCompile(`(sec_since_\w+)="?\d+"?`)
	list := func(s *ofSwitch) string {
		out := s.vsctl("--columns=target,is_connected,role,status", "list", "controller")
		out = norm.ReplaceAllString(out, `$1=N`)
		// Both switches probe a silent controller every 5 s; the
		// moment an answer is awaited (IDLE) is a matter of timing.
		out = strings.ReplaceAll(out, "state=IDLE", "state=ACTIVE")
		recs := strings.Split(strings.TrimSpace(out), "\n\n")
		slices.Sort(recs)
		return strings.Join(recs, "\n\n")
	}
	settled := func(s *ofSwitch) bool {
		connected, _, _ := ctlColumns(s.vsctl, up)
		_, _, st := ctlColumns(s.vsctl, "tcp:127.0.0.1:1")
		_, _, ssl := ctlColumns(s.vsctl, "ssl:127.0.0.1:6653")
		return connected && st["last_error"] != "" && ssl["last_error"] != ""
	}
	vswWait(t, vswTimeout, "Debian's Controller rows", func() bool { return settled(deb) })
	vswWait(t, vswTimeout, "govs' Controller rows", func() bool { return settled(govs) })
	if g, w := list(govs), list(deb); g != w {
		t.Errorf("ovs-vsctl list controller:\ngovs:\n%s\nDebian:\n%s", g, w)
	} else {
		t.Logf("compared:\n%s", g)
	}
	for _, args := range [][]string{{"get-controller", "gocd0"}, {"get-fail-mode", "gocd0"}} {
		if g, w := strings.TrimSpace(govs.vsctl(args...)), strings.TrimSpace(deb.vsctl(args...)); g != w {
			t.Errorf("%v: govs %q, Debian %q", args, g, w)
		}
	}
	// Bridge.protocols: a version outside them fails the handshake as
	// with Debian's switch, the others work.
	for _, s := range []*ofSwitch{deb, govs} {
		s.vsctl("set", "bridge", "gocd0", "protocols=OpenFlow10,OpenFlow13")
	}
	for _, version := range []string{"OpenFlow12", "OpenFlow13", "OpenFlow10"} {
		var outs [2]string
		var rcs [2]int
		for i, s := range []*ofSwitch{deb, govs} {
			// The bridge may take a moment to apply protocols.
			vswWait(t, vswTimeout, "protocols to apply", func() bool {
				_, rc := s.ofctl("-O", "OpenFlow11", "show", "gocd0")
				return rc != 0
			})
			out, rc := s.ofctl("-O", version, "show", "gocd0")
			// A dummy port has no speed; the bridge's tap has.
			outs[i], rcs[i] = regexp.MustCompile(`dpid:[0-9a-f]{16}|addr:[0-9a-f:]{17}|[^ ]*gocd0.mgmt|\(Broken pipe\)|\(Protocol error\)|\n *(current|speed):[^\n]*`).ReplaceAllString(out, ""), rc
		}
		if outs[0] != outs[1] || rcs[0] != rcs[1] {
			t.Errorf("-O %s show: govs (exit %d):\n%s\nDebian (exit %d):\n%s", version, rcs[1], outs[1], rcs[0], outs[0])
		}
	}
}

// TestModPortDifferential runs `ovs-ofctl mod-port` against govs and
// Debian's ovs-vswitchd and compares the output, exit status and the
// port's config and state in `ovs-ofctl show` after each; on govs the
// effect is checked with pings between namespaces.
func TestModPortDifferential(t *testing.T) {
	deb := startDebianSwitch(t, "--enable-dummy")
	deb.vsctl("add-br", "gocm0", "--", "set", "bridge", "gocm0", "datapath_type=dummy",
		"--", "add-port", "gocm0", "gocmp", "--", "set", "interface", "gocmp", "type=dummy", "ofport_request=1")
	e := vswNewEnv(t)
	govs := &ofSwitch{t: t, dir: e.dir, vsctl: e.mustVsctl}
	a := vswAddPrefixedNS(t, "gocm", "a", "10.74.0.1/24")
	b := vswAddPrefixedNS(t, "gocm", "b", "10.74.0.2/24")
	e.mustVsctl("add-br", "gocm0", "--", "add-port", "gocm0", a.Host, "--", "set", "interface", a.Host, "ofport_request=2",
		"--", "add-port", "gocm0", b.Host, "--", "set", "interface", b.Host, "ofport_request=1")
	a.waitPing("10.74.0.2")
	portLines := regexp.MustCompile(`(?m)^ 1\([^)]*\):.*\n(\s+config:.*)\n(\s+state:.*)`)
	show := func(s *ofSwitch) string {
		out, _ := s.ofctl("show", "gocm0")
		if m := portLines.FindStringSubmatch(out); m != nil {
			return m[1] + "\n" + m[2]
		}
		return out
	}
	for _, tc := range []struct {
		cmd  string
		ping bool // a reaches b afterwards
	}{
		{"down", false}, {"up", true}, {"no-forward", false}, {"forward", true},
		{"no-flood", true}, {"flood", true}, {"no-receive", false}, {"receive", true},
		{"no-packet-in", true}, {"packet-in", true},
	} {
		want, wantRC := deb.ofctl("mod-port", "gocm0", "1", tc.cmd)
		got, gotRC := govs.ofctl("mod-port", "gocm0", "1", tc.cmd)
		if got != want || gotRC != wantRC {
			t.Errorf("mod-port %s: govs (exit %d) %q, Debian (exit %d) %q", tc.cmd, gotRC, got, wantRC, want)
		}
		var g, w string
		vswWait(t, vswTimeout, "the port's state after mod-port "+tc.cmd, func() bool {
			g, w = show(govs), show(deb)
			return g == w
		})
		if tc.ping {
			a.waitPing("10.74.0.2")
		} else {
			a.noPing("10.74.0.2")
		}
	}
	// A port that does not exist: ovs-ofctl itself refuses.
	want, wantRC := deb.ofctl("mod-port", "gocm0", "nosuch", "down")
	got, gotRC := govs.ofctl("mod-port", "gocm0", "nosuch", "down")
	if gotRC != wantRC || strings.ReplaceAll(got, "gocm0", "") != strings.ReplaceAll(want, "gocm0", "") {
		t.Errorf("mod-port nosuch: govs (exit %d) %q, Debian (exit %d) %q", gotRC, got, wantRC, want)
	}
}
