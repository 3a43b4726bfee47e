package vhostuser

import (
	"bytes"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govs/govs/datapath/packet"
)

func newFrames(n int) []*Frame {
	fs := make([]*Frame, n)
	for i := range fs {
		fs[i] = NewFrame()
	}
	return fs
}

// readFramesWithin is ReadFrames with a deadline.
func readFramesWithin(t *testing.T, p *Port, fs []*Frame, d time.Duration) int {
	t.Helper()
	ch := make(chan int, 1)
	go func() {
		n, err := p.ReadFrames(fs)
		if err != nil {
			n = -1
		}
		ch <- n
	}()
	select {
	case n := <-ch:
		if n < 0 {
			t.Fatal("ReadFrames failed")
		}
		return n
	case <-time.After(d):
		t.Fatal("ReadFrames: nothing")
	}
	return 0
}

// TestZeroCopyForward forwards vhost -> vhost from the first guest's memory.
func TestZeroCopyForward(t *testing.T) {
	cfg := testConfig(t)
	cfg.ZeroCopy = true
	src, fs := listenPair(t, cfg)
	dst, fd := listenPair(t, testConfig(t))
	fs.negotiate(allFeatures, 1, 64)
	fd.negotiate(allFeatures, 1, 256)
	waitFor(t, "running", time.Second, func() bool { return src.Running() && dst.Running() })
	if st := src.Status(); st["dq-zero-copy"] != "true" || st["dq-zero-copy-active"] != "false" {
		t.Fatalf("status before ReadFrames %v", st)
	}
	tx, rx := fs.rings[1], fd.rings[0]
	rx.postRx(200, 2048, txLayout{})

	var sent [][]byte
	send := func(n, size int, lay txLayout) {
		for i := range n {
			frame := udpFrame(size, uint16(len(sent)+i))
			if !tx.tx(hdrFor(fs, packet.Offload{}, len(frame)), frame, lay) {
				t.Fatal("tx ring full")
			}
			sent = append(sent, frame)
		}
	}
	// 10 full-size frames: held in guest memory, their descriptors out
	// until released.
	send(10, 1500, txLayout{})
	frames := newFrames(32)
	n := readFramesWithin(t, src, frames, time.Second)
	if n != 10 {
		t.Fatalf("read %d", n)
	}
	for _, f := range frames[:n] {
		if !f.ZeroCopy() {
			t.Fatal("a full-size frame was copied")
		}
	}
	if st := src.Status(); st["dq-zero-copy-active"] != "true" {
		t.Fatalf("status %v", st)
	}
	if tx.usedIdx() != 0 {
		t.Fatal("descriptors returned while their frames are out")
	}
	if m, _ := dst.WriteFrames(frames[:n]); m != n {
		t.Fatalf("WriteFrames %d", m)
	}
	for _, f := range frames[:n] {
		f.Release()
	}
	// The released descriptors go back at the next ReadFrames (which then
	// waits for frames).
	go src.ReadFrames(newFrames(1))
	waitFor(t, "descriptors returned", time.Second, func() bool { return tx.usedIdx() == 10 })
	got, err := rx.recv()
	if err != nil || len(got) != 10 {
		t.Fatalf("guest got %d, %v", len(got), err)
	}
	for i, g := range got {
		if !bytes.Equal(g.data, sent[i]) {
			t.Fatalf("frame %d differs", i)
		}
	}
	if c := src.Counters(); c.ZeroCopyFrames != 10 {
		t.Fatalf("counters %+v", c)
	}
}

func TestZeroCopyBoundsAndFallbacks(t *testing.T) {
	cfg := testConfig(t)
	cfg.ZeroCopy = true
	p, f := listenPair(t, cfg)
	f.negotiate(allFeatures, 1, 64) // at most 32 frames out
	waitFor(t, "running", time.Second, p.Running)
	tx := f.rings[1]
	for i := range 40 {
		frame := udpFrame(1500, uint16(i))
		tx.tx(hdrFor(f, packet.Offload{}, len(frame)), frame, txLayout{})
	}
	held := newFrames(32)
	if n := readFramesWithin(t, p, held, time.Second); n != 32 {
		t.Fatalf("read %d", n)
	}
	more := newFrames(32)
	if n := readFramesWithin(t, p, more, time.Second); n != 8 {
		t.Fatalf("read %d", n)
	}
	for _, fr := range more[:8] {
		if fr.ZeroCopy() {
			t.Fatal("zero copy past the bound")
		}
	}
	// The copies went back at once: the guest's ring does not starve.
	if u := tx.usedIdx(); u != 8 {
		t.Fatalf("used %d, want 8", u)
	}
	if c := p.Counters(); c.ZeroCopyFrames != 32 || c.ZeroCopyCopied != 8 {
		t.Fatalf("counters %+v", c)
	}
	for _, fr := range held {
		fr.Release()
		fr.Release() // twice is harmless
	}
	// Short and fragmented frames are copied; so is everything once
	// zero copy is turned off.
	tx.reclaim()
	short := udpFrame(100, 1)
	tx.tx(hdrFor(f, packet.Offload{}, len(short)), short, txLayout{})
	frag := udpFrame(1500, 2)
	tx.tx(hdrFor(f, packet.Offload{}, len(frag)), frag, txLayout{pieces: 3})
	fs := newFrames(2)
	if n := readAllFrames(t, p, fs, 2); n != 2 || fs[0].ZeroCopy() || fs[1].ZeroCopy() ||
		!bytes.Equal(fs[0].AppendTo(nil), short) || !bytes.Equal(fs[1].AppendTo(nil), frag) {
		t.Fatalf("short or fragmented frames: %d", n)
	}
	p.SetZeroCopy(false)
	big := udpFrame(1500, 3)
	tx.tx(hdrFor(f, packet.Offload{}, len(big)), big, txLayout{})
	if n := readFramesWithin(t, p, fs[:1], time.Second); n != 1 || fs[0].ZeroCopy() {
		t.Fatal("zero copy after SetZeroCopy(false)")
	}
	if p.Status()["dq-zero-copy"] != "false" {
		t.Fatal("status")
	}
}

func readAllFrames(t *testing.T, p *Port, fs []*Frame, want int) int {
	n := 0
	for n < want {
		n += readFramesWithin(t, p, fs[n:], time.Second)
	}
	return n
}

// TestZeroCopyOutlivesDevice stops the ring and drops the connection while
// frames are out: GET_VRING_BASE waits, then answers; the frames stay
// readable until released, and releasing them later is harmless.
func TestZeroCopyOutlivesDevice(t *testing.T) {
	cfg := testConfig(t)
	cfg.ZeroCopy = true
	p, f := listenPair(t, cfg)
	f.negotiate(allFeatures, 1, 64)
	waitFor(t, "running", time.Second, p.Running)
	frame := udpFrame(1500, 9)
	f.rings[1].tx(hdrFor(f, packet.Offload{}, len(frame)), frame, txLayout{})
	fs := newFrames(1)
	if readFramesWithin(t, p, fs, time.Second) != 1 || !fs[0].ZeroCopy() {
		t.Fatal("no zero-copy frame")
	}
	start := time.Now()
	r := f.must(reqGetVringBase, vringState(1, 0))
	if d := time.Since(start); d < zcDrainWait/2 {
		t.Fatalf("GET_VRING_BASE answered in %v with a frame out", d)
	}
	if len(r) != 8 || r[4] != 1 {
		t.Fatalf("base %x", r)
	}
	f.c.Close()
	waitFor(t, "disconnected", time.Second, func() bool { return p.Status()["status"] == "disconnected" })
	if !bytes.Equal(fs[0].AppendTo(nil), frame) {
		t.Fatal("frame changed after the device went")
	}
	fs[0].Release()
}

// TestZeroCopySourceFault: a guest truncates its memory under a frame
// still out in zero copy; writing that frame to another guest faults,
// which must not cost the other guest its device.
func TestZeroCopySourceFault(t *testing.T) {
	cfg := testConfig(t)
	cfg.ZeroCopy = true
	src, fs := listenPair(t, cfg)
	dst, fd := listenPair(t, testConfig(t))
	fs.negotiate(allFeatures, 1, 64)
	fd.negotiate(allFeatures, 1, 64)
	waitFor(t, "running", time.Second, func() bool { return src.Running() && dst.Running() })
	fs.dataPos = fakeMemSize - 8192
	frame := udpFrame(1500, 1)
	fs.rings[1].tx(hdrFor(fs, packet.Offload{}, len(frame)), frame, txLayout{})
	frames := newFrames(1)
	if readFramesWithin(t, src, frames, time.Second) != 1 || !frames[0].ZeroCopy() {
		t.Fatal("no zero-copy frame")
	}
	if err := unix.Ftruncate(fs.memfd, fakeRingArea); err != nil {
		t.Fatal(err)
	}
	fd.rings[0].postRx(4, 2048, txLayout{})
	if n, err := dst.WriteFrames(frames); n != 0 || err != nil {
		t.Fatalf("WriteFrames: %d, %v", n, err)
	}
	frames[0].Release()
	if c := dst.Counters(); c.Faults != 1 || !dst.Running() {
		t.Fatalf("destination: %+v, running %v", c, dst.Running())
	}
	// The buffer the faulting frame had started to fill was taken back.
	pkts := newPkts(4)
	for _, pk := range pkts {
		pk.SetData(udpFrame(200, 2))
	}
	if n, _ := dst.Write(pkts); n != 4 {
		t.Fatalf("%d of the guest's 4 buffers left", n)
	}
	if got, err := fd.rings[0].recv(); err != nil || len(got) != 4 {
		t.Fatalf("guest got %d frames, %v", len(got), err)
	}
	checkForwards(t, dst, fd)
}
