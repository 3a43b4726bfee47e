package vhostuser

import (
	"bytes"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev"
	"github.com/govs/govs/netdev/internal/pkttest"
)

// wholeFrame returns a copy of pk's frame, external tail included, without
// linearizing it.
func wholeFrame(pk *packet.Packet) []byte {
	b := make([]byte, pk.Len())
	pk.CopyTo(b)
	return b
}

// zcPair opens a server port in zero-copy mode and runs a fake front-end's
// device of one queue pair of num entries on it.
func zcPair(t *testing.T, features uint64, num int) (*Port, *fakeFrontend) {
	t.Helper()
	cfg := testConfig(t)
	cfg.ZeroCopy = true
	p, f := listenPair(t, cfg)
	f.negotiate(features, 1, num)
	waitFor(t, "running", testDeadline, p.Running)
	return p, f
}

// sendUDP has the guest transmit a UDP frame of size bytes and returns it.
func sendUDP(t *testing.T, f *fakeFrontend, size int, sport uint16, lay txLayout) []byte {
	t.Helper()
	frame := udpFrame(size, sport)
	if !f.rings[1].tx(hdrFor(f, packet.Offload{}, len(frame)), frame, lay) {
		t.Fatal("tx ring full")
	}
	return frame
}

// readZeroCopy reads one frame, which must come in zero copy.
func readZeroCopy(t *testing.T, p *Port) *packet.Packet {
	t.Helper()
	pkts := newPkts(1)
	if readWithin(t, p, pkts, testDeadline) != 1 || pkts[0].Ext() == nil {
		t.Fatal("no zero-copy frame")
	}
	return pkts[0]
}

// frameAtMemEnd has the guest transmit a full-size frame from the end of
// its memory, past what truncating its memory file to fakeRingArea
// leaves, and reads it in zero copy.
func frameAtMemEnd(t *testing.T, p *Port, f *fakeFrontend) (*packet.Packet, []byte) {
	t.Helper()
	f.dataPos = fakeMemSize - 8192
	frame := sendUDP(t, f, 1500, 1, txLayout{})
	return readZeroCopy(t, p), frame
}

// ringMem returns the memory table ring i of p uses.
func ringMem(p *Port, i int) *memTable {
	q := &p.rings[i]
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mem
}

// TestZeroCopyForward forwards vhost -> vhost from the first guest's memory:
// its buffers go back to it only once the packets are reset.
func TestZeroCopyForward(t *testing.T) {
	cfg := testConfig(t)
	cfg.ZeroCopy = true
	src, fs := listenPair(t, cfg)
	if st := src.Status(); st["dq-zero-copy"] != "true" || st["dq-zero-copy-active"] == "true" {
		t.Fatalf("status without a running device %v", st)
	}
	fs.negotiate(allFeatures, 1, 64)
	dst, fd := listenPair(t, testConfig(t))
	fd.negotiate(allFeatures, 1, 256)
	waitFor(t, "running", testDeadline, func() bool { return src.Running() && dst.Running() })
	if st := src.Status(); st["dq-zero-copy-active"] != "true" {
		t.Fatalf("status %v", st)
	}
	if st := dst.Status(); st["dq-zero-copy-active"] != "false" {
		t.Fatalf("status of the copying port %v", st)
	}
	tx, rx := fs.rings[1], fd.rings[0]
	rx.postRx(200, 2048, txLayout{})

	var sent [][]byte
	for i := range 10 {
		sent = append(sent, sendUDP(t, fs, 1500, uint16(i), txLayout{}))
	}
	// Full-size frames: their tails stay in guest memory, their
	// descriptors out until the packets are reset.
	pkts := newPkts(32)
	n := readWithin(t, src, pkts, testDeadline)
	if n != 10 {
		t.Fatalf("read %d", n)
	}
	for i, pk := range pkts[:n] {
		if pk.Ext() == nil || len(pk.Head()) != zcHeadLen || pk.Len() != len(sent[i]) {
			t.Fatalf("frame %d: head %d, tail %d", i, len(pk.Head()), len(pk.Ext()))
		}
		if !bytes.Equal(wholeFrame(pk), sent[i]) {
			t.Fatalf("frame %d differs", i)
		}
	}
	if tx.usedIdx() != 0 {
		t.Fatal("descriptors returned while their frames are out")
	}
	if m, _ := dst.Write(pkts[:n]); m != n {
		t.Fatalf("Write %d", m)
	}
	if st := dst.Stats(); st.TxBytes != 10*1500 {
		t.Fatalf("destination stats %+v", st)
	}
	for _, pk := range pkts[:n] {
		if pk.Ext() == nil {
			t.Fatal("Write linearized a frame the guest takes as it is")
		}
	}
	if tx.usedIdx() != 0 || src.rings[1].zc.pending.Load() != 0 {
		t.Fatal("descriptors released by Write")
	}
	// The releases wake the waiting reader, which gives the descriptors
	// back.
	go src.Read(newPkts(1))
	waitFor(t, "the reader waiting", testDeadline, src.sleeping.Load)
	resetAll(pkts[:n])
	waitFor(t, "descriptors returned", testDeadline, func() bool { return tx.usedIdx() == 10 })
	got, err := rx.recv()
	if err != nil || len(got) != 10 {
		t.Fatalf("guest got %d, %v", len(got), err)
	}
	for i, g := range got {
		if !bytes.Equal(g.data, sent[i]) {
			t.Fatalf("frame %d differs", i)
		}
	}
	if c := src.Counters(); c.ZeroCopyFrames != 10 || c.ZeroCopyCopied != 0 {
		t.Fatalf("counters %+v", c)
	}
}

// TestZeroCopyLinearize writes a zero-copy frame with a partial checksum
// to a guest that does not take them: Write makes the frame whole to
// complete the checksum, which releases its tail at once.
func TestZeroCopyLinearize(t *testing.T) {
	src, fs := zcPair(t, allFeatures, 64)
	dst, fd := listenPair(t, testConfig(t))
	fd.negotiate(allFeatures&^(1<<featNetGuestCsum|1<<featNetGuestTSO4|1<<featNetGuestTSO6), 1, 64)
	waitFor(t, "running", testDeadline, dst.Running)
	c := tcpFrame(false, 1400)
	frame, o := c.Partial()
	tx, rx := fs.rings[1], fd.rings[0]
	tx.tx(hdrFor(fs, o, len(frame)), frame, txLayout{})
	pkts := []*packet.Packet{readZeroCopy(t, src)}
	if pkts[0].Offload.Flags&packet.NeedsCsum == 0 {
		t.Fatal("the partial checksum lost")
	}
	rx.postRx(4, 2048, txLayout{})
	if n, _ := dst.Write(pkts); n != 1 {
		t.Fatal("Write failed")
	}
	if pkts[0].Ext() != nil {
		t.Fatal("frame not linearized")
	}
	go src.Read(newPkts(1))
	waitFor(t, "the descriptor returned", testDeadline, func() bool { return tx.usedIdx() == 1 })
	got, err := rx.recv()
	if err != nil || len(got) != 1 {
		t.Fatalf("guest got %d, %v", len(got), err)
	}
	var ho packet.Offload
	if err := netdev.DecodeVirtioNetHdr(got[0].hdr, &ho); err != nil || ho.Flags&packet.NeedsCsum != 0 {
		t.Fatalf("header %+v, %v", ho, err)
	}
	if _, err := pkttest.Parse(got[0].data); err != nil {
		t.Fatalf("completed checksum: %v", err)
	}
}

// heapTail is a packet.External of another kind of port: a tail in the
// Go heap, its releases counted.
type heapTail struct{ releases int }

func (h *heapTail) CopyExternal(dst, src []byte) { copy(dst, src) }
func (h *heapTail) ReleaseExternal()             { h.releases++ }

// TestWriteExternalTail: Write takes a frame whose tail is external
// whatever owns it, and leaves the tail to the packet.
func TestWriteExternalTail(t *testing.T) {
	p, f := listenPair(t, testConfig(t))
	f.negotiate(allFeatures, 1, 64)
	waitFor(t, "running", testDeadline, p.Running)
	frame := udpFrame(1000, 1)
	var h heapTail
	pk := packet.New()
	pk.SetData(frame[:60])
	pk.SetExternal(frame[60:], &h)
	f.rings[0].postRx(1, 2048, txLayout{})
	if n, _ := p.Write([]*packet.Packet{pk}); n != 1 || pk.Ext() == nil || h.releases != 0 {
		t.Fatalf("Write %d, tail %d bytes, %d releases", n, len(pk.Ext()), h.releases)
	}
	if got, err := f.rings[0].recv(); err != nil || len(got) != 1 || !bytes.Equal(got[0].data, frame) {
		t.Fatalf("guest got %v, %v", got, err)
	}
	if st := p.Stats(); st.TxBytes != uint64(len(frame)) {
		t.Fatalf("stats %+v", st)
	}
	pk.Reset()
	if h.releases != 1 {
		t.Fatalf("%d releases", h.releases)
	}
}

func TestZeroCopyBoundsAndFallbacks(t *testing.T) {
	p, f := zcPair(t, allFeatures, 64) // at most 32 frames out
	tx := f.rings[1]
	for i := range 40 {
		sendUDP(t, f, 1500, uint16(i), txLayout{})
	}
	held := newPkts(32)
	if n := readWithin(t, p, held, testDeadline); n != 32 {
		t.Fatalf("read %d", n)
	}
	more := newPkts(32)
	if n := readWithin(t, p, more, testDeadline); n != 8 {
		t.Fatalf("read %d", n)
	}
	for i, pk := range more[:8] {
		if pk.Ext() != nil {
			t.Fatal("zero copy past the bound")
		}
		if !bytes.Equal(pk.Data(), udpFrame(1500, uint16(32+i))) {
			t.Fatalf("copied frame %d differs", i)
		}
	}
	// The copies went back at once: the guest's ring does not starve.
	if u := tx.usedIdx(); u != 8 {
		t.Fatalf("used %d, want 8", u)
	}
	if c := p.Counters(); c.ZeroCopyFrames != 32 || c.ZeroCopyCopied != 8 {
		t.Fatalf("counters %+v", c)
	}
	resetAll(held)
	// Short and fragmented frames are copied; so is everything once
	// zero copy is turned off.
	tx.reclaim()
	short := sendUDP(t, f, 100, 1, txLayout{})
	frag := sendUDP(t, f, 1500, 2, txLayout{pieces: 3})
	pkts := readAll(t, p, 2, testDeadline)
	if pkts[0].Ext() != nil || pkts[1].Ext() != nil ||
		!bytes.Equal(pkts[0].Data(), short) || !bytes.Equal(pkts[1].Data(), frag) {
		t.Fatal("short or fragmented frames")
	}
	p.SetZeroCopy(false)
	sendUDP(t, f, 1500, 3, txLayout{})
	if n := readWithin(t, p, pkts[:1], testDeadline); n != 1 || pkts[0].Ext() != nil {
		t.Fatal("zero copy after SetZeroCopy(false)")
	}
	if st := p.Status(); st["dq-zero-copy"] != "false" || st["dq-zero-copy-active"] != "false" {
		t.Fatalf("status %v", st)
	}
}

// TestZeroCopyReleaseOnce: a packet releases its tail once, at its first
// Reset; resetting it again, after its slot and the slot's owner object
// went on to the next frame, releases nothing more.
func TestZeroCopyReleaseOnce(t *testing.T) {
	p, f := zcPair(t, allFeatures, 64)
	tx := f.rings[1]
	mem := ringMem(p, 1)
	refs := mem.refs.Load()
	sendUDP(t, f, 1500, 1, txLayout{})
	a := readZeroCopy(t, p)
	if r := mem.refs.Load(); r != refs+1 {
		t.Fatalf("%d references to the memory, want %d", r, refs+1)
	}
	a.Reset()
	a.Reset()
	if r, pending := mem.refs.Load(), p.rings[1].zc.pending.Load(); r != refs || pending != 1 {
		t.Fatalf("after two resets: %d references (want %d), %d releases (want 1)", r, refs, pending)
	}
	sendUDP(t, f, 1500, 2, txLayout{})
	b := readZeroCopy(t, p)
	a.Reset()
	if u, r := tx.usedIdx(), mem.refs.Load(); u != 1 || r != refs+1 {
		t.Fatalf("a third Reset released another frame: used %d, %d references", u, r)
	}
	b.Reset()
	go p.Read(newPkts(1))
	waitFor(t, "both descriptors returned", testDeadline, func() bool { return tx.usedIdx() == 2 })
	if r := mem.refs.Load(); r != refs {
		t.Fatalf("%d references to the memory, want %d", r, refs)
	}
}

// TestZeroCopyOutlivesDevice stops the ring and drops the connection while
// a frame is out: GET_VRING_BASE waits, then answers; the frame stays
// readable until its packet is reset, and resetting it later is harmless.
func TestZeroCopyOutlivesDevice(t *testing.T) {
	p, f := zcPair(t, allFeatures, 64)
	frame := sendUDP(t, f, 1500, 9, txLayout{})
	pk := readZeroCopy(t, p)
	mem := ringMem(p, 1)
	start := time.Now()
	r := f.must(reqGetVringBase, vringState(1, 0))
	if d := time.Since(start); d < zcDrainWait/2 {
		t.Fatalf("GET_VRING_BASE answered in %v with a frame out", d)
	}
	if len(r) != 8 || r[4] != 1 {
		t.Fatalf("base %x", r)
	}
	f.c.Close()
	waitFor(t, "disconnected", testDeadline, func() bool { return p.Status()["status"] == "disconnected" })
	if !bytes.Equal(wholeFrame(pk), frame) {
		t.Fatal("frame changed after the device went")
	}
	if r := mem.refs.Load(); r != 1 {
		t.Fatalf("%d references to the dropped memory, want the frame's", r)
	}
	pk.Reset()
	if r := mem.refs.Load(); r != 0 {
		t.Fatalf("%d references to the dropped memory after the release", r)
	}
}

// TestZeroCopySourceFault: a guest truncates its memory under a frame
// still out in zero copy; writing that frame to another guest faults,
// which must not cost the other guest its device.
func TestZeroCopySourceFault(t *testing.T) {
	src, fs := zcPair(t, allFeatures, 64)
	dst, fd := listenPair(t, testConfig(t))
	fd.negotiate(allFeatures, 1, 64)
	waitFor(t, "running", testDeadline, dst.Running)
	pk, _ := frameAtMemEnd(t, src, fs)
	if err := unix.Ftruncate(fs.memfd, fakeRingArea); err != nil {
		t.Fatal(err)
	}
	fd.rings[0].postRx(4, 2048, txLayout{})
	if n, err := dst.Write([]*packet.Packet{pk}); n != 0 || err != nil {
		t.Fatalf("Write: %d, %v", n, err)
	}
	pk.Reset()
	if c := dst.Counters(); c.Faults != 1 || !dst.Running() {
		t.Fatalf("destination: %+v, running %v", c, dst.Running())
	}
	// The buffer the faulting frame had started to fill was taken back.
	out := newPkts(4)
	for _, pk := range out {
		pk.SetData(udpFrame(200, 2))
	}
	if n, _ := dst.Write(out); n != 4 {
		t.Fatalf("%d of the guest's 4 buffers left", n)
	}
	if got, err := fd.rings[0].recv(); err != nil || len(got) != 4 {
		t.Fatalf("guest got %d frames, %v", len(got), err)
	}
	checkForwards(t, dst, fd)
}

// TestZeroCopyCopyFault: a guest truncates its memory file under a frame
// still out in zero copy; copying the frame out (CopyTo, Data) faults,
// which zeroes what could not be read, counts the fault and drops that
// guest's device, without crashing.
func TestZeroCopyCopyFault(t *testing.T) {
	p, f := zcPair(t, allFeatures, 64)
	pk, frame := frameAtMemEnd(t, p, f)
	if err := unix.Ftruncate(f.memfd, fakeRingArea); err != nil {
		t.Fatal(err)
	}
	b := bytes.Repeat([]byte{0xff}, len(frame))
	if n := pk.CopyTo(b); n != len(frame) {
		t.Fatalf("CopyTo %d", n)
	}
	if !bytes.Equal(b[:zcHeadLen], frame[:zcHeadLen]) || !bytes.Equal(b[zcHeadLen:], make([]byte, len(frame)-zcHeadLen)) {
		t.Fatal("the head lost or the unreadable tail not zeroed")
	}
	if c := p.Counters(); c.Faults != 1 {
		t.Fatalf("counters %+v", c)
	}
	waitFor(t, "the device dropped", testDeadline, func() bool { return p.Status()["status"] == "disconnected" })
	if d := pk.Data(); len(d) != len(frame) || pk.Ext() != nil {
		t.Fatalf("Data: %d bytes, tail %d", len(d), len(pk.Ext()))
	}
	if c := p.Counters(); c.Faults != 2 {
		t.Fatalf("counters %+v", c)
	}
	pk.Reset()
	// The port takes a new connection afterwards.
	checkForwards(t, p, reconnectFrontend(t, p))
}

// TestZeroCopyOrphanSlotReuse: a frame still out when its ring stops is
// orphaned; the restarted ring gives its slot to the next frame, and the
// orphan's late release must not return that frame's descriptor.
func TestZeroCopyOrphanSlotReuse(t *testing.T) {
	p, f := zcPair(t, allFeatures, 64)
	sendUDP(t, f, 1500, 1, txLayout{})
	a := readZeroCopy(t, p)
	mem := ringMem(p, 1)
	f.must(reqGetVringBase, vringState(1, 0)) // waits zcDrainWait, then orphans a
	tx := f.setupRing(1, 64)
	frame := sendUDP(t, f, 1500, 2, txLayout{})
	b := readZeroCopy(t, p)
	refs := mem.refs.Load()
	a.Reset()
	if r := mem.refs.Load(); r != refs-1 {
		t.Fatalf("the orphan's release left %d references, want %d", r, refs-1)
	}
	go p.Read(newPkts(1))
	// Something that must not happen has no condition to wait on: the
	// pause gives a wrong release the time to show.
	time.Sleep(50 * time.Millisecond)
	if u := tx.usedIdx(); u != 0 || !bytes.Equal(wholeFrame(b), frame) {
		t.Fatalf("the orphan's release returned a descriptor of the new ring (used %d)", u)
	}
	b.Reset()
	waitFor(t, "the new frame's descriptor returned", testDeadline, func() bool { return tx.usedIdx() == 1 })
}
