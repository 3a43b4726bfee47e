package connmgr

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// bundleSource commits bundles, refusing those with a flow of priority
// 666 (as a missing group would be).
type bundleSource struct {
	fakeSource
	mu        sync.Mutex
	committed [][]ofp.Message
}

func (*bundleSource) CheckBundled(m ofp.Message) (ofp.Message, *ofp.Error) { return m, nil }
func (s *bundleSource) CommitBundle(msgs []ofp.Message) (int, *ofp.Error) {
	for i, m := range msgs {
		if fm, ok := m.(*ofp.FlowMod); ok && fm.Priority == 666 {
			return i, &ofp.Error{Errno: ofp.BadOutGroup}
		}
	}
	s.mu.Lock()
	s.committed = append(s.committed, msgs)
	s.mu.Unlock()
	return -1, nil
}

func TestBundles(t *testing.T) {
	// Short enough that the last bundle below expires, long enough that
	// the others do not. Restored once the connection is gone.
	i := bundleExpiryInterval
	t.Cleanup(func() { SetBundleIdleTimeout(DefaultBundleIdleTimeout); bundleExpiryInterval = i })
	SetBundleIdleTimeout(3 * time.Second)
	bundleExpiryInterval = 100 * time.Millisecond
	src := &bundleSource{}
	m := listen(t, src)
	c := dial(t, m, ofp.EncodeHello(ofp.AllVersions, 1))
	flowMod, err := os.ReadFile(filepath.Join("..", "ofp", "testdata", "requests", "addflow-of14-c2s-v5-t14.bin"))
	if err != nil {
		t.Fatal(err)
	}
	ctrl := func(xid, id uint32, typ, flags uint16) []byte {
		b := binary.BigEndian.AppendUint32(nil, id)
		b = binary.BigEndian.AppendUint16(b, typ)
		return msg(ofp.V15, 33, xid, binary.BigEndian.AppendUint16(b, flags)...)
	}
	add := func(xid, id uint32, flags, prio uint16) []byte {
		inner := append([]byte(nil), flowMod...)
		inner[0] = byte(ofp.V15)
		binary.BigEndian.PutUint32(inner[4:], xid)
		binary.BigEndian.PutUint16(inner[30:], prio) // ofp11_flow_mod.priority
		b := binary.BigEndian.AppendUint32(nil, id)
		b = binary.BigEndian.AppendUint16(b, 0)
		b = binary.BigEndian.AppendUint16(b, flags)
		return msg(ofp.V15, 34, xid, append(b, inner...)...)
	}
	wantReply := func(xid uint32, typ uint16) {
		t.Helper()
		b := c.recv()
		if h := ofp.ParseHeader(b); h.Type != 33 || h.Xid != xid || binary.BigEndian.Uint16(b[12:]) != typ {
			t.Fatalf("want bundle reply %d xid %d, got %x", typ, xid, b)
		}
	}
	wantError := func(xid uint32, code uint16) {
		t.Helper()
		if typ, got := c.errorOf(c.recv(), xid); typ != 17 || got != code {
			t.Fatalf("xid %d: error %d,%d, want 17,%d", xid, typ, got, code)
		}
	}
	const atomicOrdered = ofp.BundleAtomic | ofp.BundleOrdered

	c.send(ctrl(1, 1, ofp.BundleOpenRequest, atomicOrdered))
	wantReply(1, ofp.BundleOpenReply)
	c.send(ctrl(2, 1, ofp.BundleOpenRequest, atomicOrdered))
	wantError(2, 2) // OFPBFC_BAD_ID; the bundle is gone
	// Adding opens the bundle; a refused message fails the commit after
	// its own error.
	c.send(add(10, 1, atomicOrdered, 1))
	c.send(add(11, 1, atomicOrdered, 666))
	c.send(ctrl(12, 1, ofp.BundleCommitRequest, atomicOrdered))
	if typ, code := c.errorOf(c.recv(), 11); typ != 2 || code != 9 {
		t.Fatalf("refused flow mod: %d,%d", typ, code)
	}
	wantError(12, 13) // OFPBFC_MSG_FAILED
	c.send(ctrl(13, 1, ofp.BundleCommitRequest, atomicOrdered))
	wantError(13, 2) // the bundle went with its commit

	c.send(add(20, 2, atomicOrdered, 1))
	c.send(add(21, 2, atomicOrdered, 2))
	c.send(ctrl(22, 2, ofp.BundleCloseRequest, atomicOrdered))
	wantReply(22, ofp.BundleCloseReply)
	c.send(add(23, 2, atomicOrdered, 3))
	wantError(23, 4) // OFPBFC_BUNDLE_CLOSED, discarding it
	c.send(ctrl(24, 2, ofp.BundleCommitRequest, atomicOrdered))
	wantError(24, 2)

	c.send(add(30, 3, atomicOrdered, 1))
	c.send(add(31, 3, atomicOrdered, 2))
	c.send(ctrl(32, 3, ofp.BundleCommitRequest, ofp.BundleAtomic))
	wantError(32, 7) // OFPBFC_BAD_FLAGS
	c.send(add(33, 4, atomicOrdered, 1))
	c.send(add(34, 4, atomicOrdered, 2))
	c.send(ctrl(35, 4, ofp.BundleCommitRequest, atomicOrdered))
	wantReply(35, ofp.BundleCommitReply)
	src.mu.Lock()
	if len(src.committed) != 1 || len(src.committed[0]) != 2 {
		t.Errorf("committed %+v", src.committed)
	}
	src.mu.Unlock()
	c.send(ctrl(36, 5, ofp.BundleDiscardRequest, 0))
	wantError(36, 2)
	c.send(ctrl(37, 5, ofp.BundleOpenReply, 0))
	wantError(37, 6) // OFPBFC_BAD_TYPE

	// An idle bundle expires with OFPBFC_TIMEOUT about the message that
	// opened it.
	c.send(ctrl(40, 6, ofp.BundleOpenRequest, 0))
	wantReply(40, ofp.BundleOpenReply)
	wantError(40, 14)
	c.send(ctrl(41, 6, ofp.BundleCommitRequest, 0))
	wantError(41, 2)
}

// TestBundleKeepsItsBytes adds a packet-out to a bundle, then more flow
// mods than the connection's read buffer holds, and a flow mod the
// commit refuses: the committed packet-out still carries its data and
// the error echoes the refused flow mod, though the buffer they arrived
// in has since taken other messages.
func TestBundleKeepsItsBytes(t *testing.T) {
	src := &bundleSource{}
	m := listen(t, src)
	c := dial(t, m, ofp.EncodeHello(ofp.AllVersions, 1))
	data := bytes.Repeat([]byte{0xab}, 1000)
	po := ofp.EncodePacketOut(ofp.V15, 1, &ofp.PacketOut{BufferID: 0xffffffff, InPort: ofp.PortController,
		Actions: []ofp.Action{{Type: ofp.ActOutput, Port: 1}}, Data: data})
	fm := func(xid uint32, prio uint16) []byte {
		return ofp.EncodeFlowMod(ofp.V15, xid, &ofp.FlowMod{Command: ofp.FlowAdd, Priority: prio, BufferID: 0xffffffff,
			OutPort: ofp.PortAny, OutGroup: ofp.GroupAny, Actions: []ofp.Action{{Type: ofp.ActOutput, Port: 2}}})
	}
	const flows = 3 * 2 * ofp.MaxLen / 64 // well over the buffer, whatever a flow mod's size
	for _, bad := range []bool{false, true} {
		id := uint32(1)
		if bad {
			id = 2
		}
		c.send(ofp.EncodeBundleAdd(ofp.V15, id, ofp.BundleAtomic, po))
		for i := range flows {
			c.send(ofp.EncodeBundleAdd(ofp.V15, id, ofp.BundleAtomic, fm(uint32(2+i), 1)))
		}
		refused := fm(9999, 666)
		if bad {
			c.send(ofp.EncodeBundleAdd(ofp.V15, id, ofp.BundleAtomic, refused))
		}
		for i := range flows { // after it: the buffer moves on
			c.send(ofp.EncodeBundleAdd(ofp.V15, id, ofp.BundleAtomic, fm(uint32(20000+i), 1)))
		}
		c.send(ofp.EncodeBundleControl(ofp.V15, 50000, id, ofp.BundleCommitRequest, ofp.BundleAtomic))
		if !bad {
			b := c.recv()
			if h := ofp.ParseHeader(b); h.Type != 33 || h.Xid != 50000 {
				t.Fatalf("commit: got %x", b[:min(len(b), 16)])
			}
			src.mu.Lock()
			got := src.committed[0][0].(*ofp.PacketOut).Data
			src.mu.Unlock()
			if !bytes.Equal(got, data) {
				t.Fatalf("committed packet-out's data changed: %x...", got[:16])
			}
			continue
		}
		b := c.recv()
		if typ, code := c.errorOf(b, 9999); typ != 2 || code != 9 {
			t.Fatalf("refused flow mod: %d,%d", typ, code)
		}
		if echo := b[12:]; !bytes.Equal(echo, refused) {
			t.Fatalf("error echoes %x, want the refused flow mod %x", echo, refused)
		}
		if typ, code := c.errorOf(c.recv(), 50000); typ != 17 || code != 13 {
			t.Fatalf("commit: error %d,%d, want OFPBFC_MSG_FAILED", typ, code)
		}
	}
}
