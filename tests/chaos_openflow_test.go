package tests

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// OpenFlow 1.4 message types the chaos test sends or expects.
const (
	ofcVersion      = 5 // OpenFlow 1.4
	ofcError        = 1
	ofcEchoRequest  = 2
	ofcEchoReply    = 3
	ofcFlowMod      = 14
	ofcBundleCtrl   = 33
	ofcBundleAdd    = 34
	ofcExperimenter = 4
)

// ofcMsg is an OpenFlow 1.4 message of type typ with body, under
// xid; length, when not 0, is written in the header in place of the
// real one.
func ofcMsg(typ uint8, xid uint32, length int, body []byte) []byte {
	b := make([]byte, 8, 8+len(body))
	b[0], b[1] = ofcVersion, typ
	if length == 0 {
		length = 8 + len(body)
	}
	binary.BigEndian.PutUint16(b[2:], uint16(length))
	binary.BigEndian.PutUint32(b[4:], xid)
	return append(b, body...)
}

// ofcConn is a raw OpenFlow connection to a bridge's mgmt socket.
type ofcConn struct {
	t *testing.T
	c net.Conn
}

// read returns the next message's type, xid and body.
func (o *ofcConn) read() (uint8, uint32, []byte, error) {
	o.c.SetReadDeadline(time.Now().Add(vswTimeout))
	var h [8]byte
	if _, err := io.ReadFull(o.c, h[:]); err != nil {
		return 0, 0, nil, err
	}
	n := int(binary.BigEndian.Uint16(h[2:]))
	if n < 8 {
		return 0, 0, nil, fmt.Errorf("the switch sent a header of length %d", n)
	}
	body := make([]byte, n-8)
	if _, err := io.ReadFull(o.c, body); err != nil {
		return 0, 0, nil, err
	}
	return h[1], binary.BigEndian.Uint32(h[4:]), body, nil
}

// sendThenEcho sends msg, then an echo request, and reads up to the echo
// reply: the connection is still in step. It returns the types of the
// messages that came before the reply.
func (o *ofcConn) sendThenEcho(msg []byte, xid uint32) []uint8 {
	o.t.Helper()
	if _, err := o.c.Write(append(msg, ofcMsg(ofcEchoRequest, xid, 0, []byte("still-there"))...)); err != nil {
		o.t.Fatalf("write: %v", err)
	}
	var before []uint8
	for {
		typ, rx, body, err := o.read()
		if err != nil {
			o.t.Fatalf("waiting for the echo reply %d: %v (got %v before)", xid, err, before)
		}
		if typ == ofcEchoReply && rx == xid {
			if string(body) != "still-there" {
				o.t.Errorf("echo reply %d carries %q", xid, body)
			}
			return before
		}
		before = append(before, typ)
	}
}

// TestChaosVswitchdOpenFlowGarbage: malformed OpenFlow 1.4 messages on a
// bridge's mgmt socket — truncated and unknown bundle controls, a bundle
// add to a bundle never opened, inner messages that lie about their length
// or version, a flow mod whose match overruns it, unknown types and
// experimenters — each get an OFPT_ERROR, and an echo request sent right
// after each is answered on the same connection (no desynchronisation).
// A header shorter than a header ends that connection only; the bridge
// keeps forwarding and Debian's ovs-ofctl still talks to it.
func TestChaosVswitchdOpenFlowGarbage(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	const br = "gvchofbr"
	ns1, _ := chaosBridge(t, e, br, 7, "of")
	sock := filepath.Join(e.dir, br+".mgmt")
	vswWait(t, vswTimeout, sock, func() bool { _, err := net.Dial("unix", sock); return err == nil })
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	o := &ofcConn{t: t, c: c}
	// HELLO with the version bitmap for 1.4 only.
	hello := ofcMsg(0, 1, 0, []byte{0, 1, 0, 8, 0, 0, 0, 1 << ofcVersion})
	if _, err := c.Write(hello); err != nil {
		t.Fatal(err)
	}
	if typ, _, _, err := o.read(); err != nil || typ != 0 {
		t.Fatalf("hello: type %d, %v", typ, err)
	}

	u16 := func(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
	u32 := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	bundleCtrl := func(id uint32, typ, flags uint16) []byte { return cat(u32(id), u16(typ), u16(flags)) }
	bundleAdd := func(id uint32, inner []byte) []byte { return cat(u32(id), u16(0), u16(1), inner) }
	flowModBody := func(match []byte) []byte {
		// cookie, cookie_mask, table, command, idle, hard, priority,
		// buffer_id, out_port, out_group, flags, importance, then the match.
		b := make([]byte, 40)
		binary.BigEndian.PutUint32(b[28:], 0xffffffff)
		return append(b, match...)
	}
	// ok marks what OVS answers without an error: unknown bundle flags
	// are ignored (ofputil_decode_bundle_ctrl), and a bundle whose adds all
	// failed commits empty.
	garbage := []struct {
		what string
		msg  []byte
		ok   bool
	}{
		{"bundle control with a truncated body", ofcMsg(ofcBundleCtrl, 10, 0, u32(1)), false},
		{"bundle control of unknown type", ofcMsg(ofcBundleCtrl, 11, 0, bundleCtrl(1, 99, 0)), false},
		{"bundle control with unknown flags", ofcMsg(ofcBundleCtrl, 12, 0, bundleCtrl(2, 0, 0xfff0)), true},
		{"bundle add to a bundle never opened", ofcMsg(ofcBundleAdd, 13, 0, bundleAdd(77, ofcMsg(ofcFlowMod, 13, 0, flowModBody(cat(u16(1), u16(4)))))), false},
		{"bundle open", ofcMsg(ofcBundleCtrl, 14, 0, bundleCtrl(3, 0, 1)), true},
		{"bundle add whose inner message claims more than it has", ofcMsg(ofcBundleAdd, 15, 0, bundleAdd(3, ofcMsg(ofcFlowMod, 15, 400, flowModBody(cat(u16(1), u16(4)))))), false},
		{"bundle add whose inner message is another version", ofcMsg(ofcBundleAdd, 16, 0, bundleAdd(3, append([]byte{1}, ofcMsg(ofcFlowMod, 16, 0, flowModBody(cat(u16(1), u16(4))))[1:]...))), false},
		{"bundle add whose inner message has another xid", ofcMsg(ofcBundleAdd, 17, 0, bundleAdd(3, ofcMsg(ofcFlowMod, 99, 0, flowModBody(cat(u16(1), u16(4), u32(0)))))), false},
		{"bundle add of a message that cannot be bundled", ofcMsg(ofcBundleAdd, 18, 0, bundleAdd(3, ofcMsg(ofcEchoRequest, 18, 0, nil))), false},
		{"bundle commit after the failures", ofcMsg(ofcBundleCtrl, 19, 0, bundleCtrl(3, 2, 1)), true},
		{"flow mod whose match overruns it", ofcMsg(ofcFlowMod, 20, 0, flowModBody(cat(u16(1), u16(1000), u32(0x80000004), u32(5)))), false},
		{"flow mod with a match field of unknown class", ofcMsg(ofcFlowMod, 21, 0, flowModBody(cat(u16(1), u16(12), u32(0x12340004), u32(5), u32(0)))), false},
		{"message of unknown type", ofcMsg(200, 22, 0, []byte("????")), false},
		{"experimenter of unknown vendor", ofcMsg(ofcExperimenter, 23, 0, cat(u32(0xdeadbeef), u32(1), []byte("xyz"))), false},
		{"Nicira experimenter of unknown subtype", ofcMsg(ofcExperimenter, 24, 0, cat(u32(0x00002320), u32(9999))), false},
	}
	errs := 0
	for i, g := range garbage {
		before := o.sendThenEcho(g.msg, uint32(1000+i))
		gotErr := slices.Contains(before, ofcError)
		switch {
		case g.ok && gotErr:
			t.Errorf("%s: OFPT_ERROR, where OVS answers without one", g.what)
		case g.ok && !slices.Contains(before, ofcBundleCtrl):
			t.Errorf("%s: no bundle control reply (got types %v)", g.what, before)
		case !g.ok && !gotErr:
			t.Errorf("%s: no OFPT_ERROR (got types %v)", g.what, before)
		case gotErr:
			errs++
		}
	}

	// A header shorter than a header: OVS drops the connection; the switch
	// must not read on as if in step, nor die.
	if _, err := c.Write([]byte{ofcVersion, ofcEchoRequest, 0, 4, 0, 0, 0, 9}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, _, _, err := o.read(); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Errorf("a 4-byte header did not end the connection")
			}
			break
		}
	}

	if _, err := vswRunEnv([]string{"OVS_RUNDIR=" + e.dir}, "/usr/bin/ovs-ofctl", "-O", "OpenFlow14", "dump-flows", br); err != nil {
		t.Errorf("Debian's ovs-ofctl after the garbage: %v", err)
	}
	ns1.waitPing("10.79.7.2")
	if pid := vswReadPid(filepath.Join(e.dir, "ovs-vswitchd.pid")); !vswAlive(pid) {
		t.Fatal("ovs-vswitchd died")
	}
	chaosFigures(t, "%d malformed OpenFlow messages on one connection: %d errors, in step after each", len(garbage), errs)
}
