//go:build linux

package netdev

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govs/govs/datapath/packet"
)

// setRingMode forces the ring on or off for one test.
func setRingMode(t *testing.T, mode int) {
	old := rxRingMode
	rxRingMode = mode
	t.Cleanup(func() { rxRingMode = old })
}

var ringMarker = []byte("govs-ring")

// ringFrame is test frame seq: broadcast, EtherType 0x88b5, a marker and
// seq, padded to a size that varies with seq.
func ringTestFrame(seq int) []byte {
	f := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x88, 0xb5}
	f = append(f, ringMarker...)
	f = binary.BigEndian.AppendUint32(f, uint32(seq))
	for len(f) < 60+(seq*37)%1400 {
		f = append(f, byte(seq+len(f)))
	}
	return f
}

// testFrameSeq returns the seq of a ringTestFrame; ok is false for any
// other frame.
func testFrameSeq(d []byte) (seq int, ok bool) {
	if len(d) < 14+len(ringMarker)+4 || !bytes.Equal(d[14:14+len(ringMarker)], ringMarker) {
		return 0, false
	}
	return int(binary.BigEndian.Uint32(d[14+len(ringMarker):])), true
}

// ringProbe is a frame readTestFrames skips (it has no ringMarker): sent
// over and over until one arrives, it shows that the path delivers.
func ringProbe() []byte {
	f := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x88, 0xb5}
	return append(f, "govs-probe-----------------------------------------"...)
}

func isRingProbe(d []byte) bool {
	return len(d) > 14 && bytes.HasPrefix(d[14:], []byte("govs-probe"))
}

// ringQueued counts the frames the kernel has handed over to the ring
// and the port has not read yet.
func ringQueued(s *systemPort) int {
	g := s.ring
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for i := g.head; n < len(g.frames); i = (i + 1) % len(g.frames) {
		if ringLoadStatus(g.frames[i])&unix.TP_STATUS_USER == 0 {
			break
		}
		n++
	}
	return n
}

// readProbe sends a probe on tx every few milliseconds until p reads one,
// then stops: frames sent after it take a path known to deliver. Probes
// still in flight are skipped by readTestFrames. The port is closed
// (failing the test) after linkDeadline.
func readProbe(t *testing.T, p Port, tx int) {
	t.Helper()
	stop := make(chan struct{})
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		tick := time.NewTicker(20 * time.Millisecond) // pacing between probes
		defer tick.Stop()
		for {
			unix.Send(tx, ringProbe(), 0) // one lost on a link still coming up is resent
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	defer func() { close(stop); <-sent }()
	timer := time.AfterFunc(linkDeadline, func() { p.Close() })
	defer timer.Stop()
	pkts := newBatch()
	for {
		n, err := p.Read(pkts)
		if err != nil {
			t.Fatalf("no probe through %s within %v: %v", p.Name(), linkDeadline, err)
		}
		for _, pk := range pkts[:n] {
			if isRingProbe(pk.Data()) {
				return
			}
		}
	}
}

// readTestFrames reads from p until it has the want test frames, checking
// their order and contents from seq on, and returns the largest batch one
// Read returned. The port is closed (failing the test) after linkDeadline.
func readTestFrames(t *testing.T, p Port, seq, want int) (maxBatch int) {
	t.Helper()
	timer := time.AfterFunc(linkDeadline, func() { p.Close() })
	defer timer.Stop()
	pkts := newBatch()
	for got := 0; got < want; {
		n, err := p.Read(pkts)
		if err != nil {
			t.Fatalf("read after %d of %d frames: %v", got, want, err)
		}
		maxBatch = max(maxBatch, n)
		for _, pk := range pkts[:n] {
			d := pk.Data()
			s, ok := testFrameSeq(d)
			if !ok {
				continue // the namespace's own traffic
			}
			if s != seq+got {
				t.Fatalf("frame %d read where %d was due", s, seq+got)
			}
			if !bytes.Equal(d, ringTestFrame(s)) {
				t.Fatalf("frame %d corrupted: % x", s, d)
			}
			got++
		}
	}
	return maxBatch
}

// ringTestPort opens a system port with its ring on a new veth and reads a
// probe through it; it returns the port, the raw socket on the veth's
// peer, and a function sending test frames from..from+n-1 on it.
func ringTestPort(t *testing.T) (Port, *systemPort, int, func(from, n int)) {
	t.Helper()
	needRoot(t)
	setRingMode(t, ringAlways)
	ns := newNetns(t)
	host, peer := addVeth(t, ns)
	p := openSystem(t, host, Config{})
	s := p.(*systemPort)
	if s.ring == nil {
		t.Fatal("no rx ring")
	}
	tx := rawSocket(t, ns, peer)
	readProbe(t, p, tx)
	send := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			if err := unix.Send(tx, ringTestFrame(i), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	return p, s, tx, send
}

// TestSystemRxRing queues more frames than one batch before reading, sends
// enough to wrap the ring several times, then overflows it and checks that
// the drops are counted and the port still works.
func TestSystemRxRing(t *testing.T) {
	p, s, tx, send := ringTestPort(t)
	frames := len(s.ring.frames)
	seq := 0
	// Queued, then read: several full batches in a row, in order.
	per := min(3*BatchSize+5, frames/2)
	for range 3 * frames / per {
		send(seq, per)
		waitFor(t, fmt.Sprintf("%d frames queued in the ring", per), linkDeadline, func() bool { return ringQueued(s) >= per })
		if b := readTestFrames(t, p, seq, per); b != BatchSize {
			t.Errorf("largest batch %d with %d frames queued, want %d", b, per, BatchSize)
		}
		seq += per
	}
	if seq < 2*frames {
		t.Fatalf("%d frames through a ring of %d: no wrap-around", seq, frames)
	}
	st := p.Stats()
	if st.RxDropped != 0 {
		t.Errorf("%d frames dropped with the ring never full", st.RxDropped)
	}
	// Overflow: the ring keeps what it has, the kernel counts the rest.
	over := frames + 100
	send(seq, over)
	waitFor(t, fmt.Sprintf("%d frames queued or dropped", over), linkDeadline, func() bool {
		return ringQueued(s)+int(p.Stats().RxDropped-st.RxDropped) >= over
	})
	before := st.RxPackets
	pkts := []*packet.Packet{packet.New()}
	timer := time.AfterFunc(linkDeadline, func() { p.Close() })
	for got := 0; ; {
		st = p.Stats()
		if int(st.RxPackets-before)+int(st.RxDropped) >= over {
			break
		}
		if _, err := p.Read(pkts); err != nil {
			t.Fatalf("overflow: %v after %d frames, %+v", err, got, st)
		}
		got++
	}
	timer.Stop()
	if st.RxDropped == 0 || st.RxPackets-before > uint64(frames)+8 {
		t.Errorf("overflowing a ring of %d frames with %d: read %d, dropped %d", frames, over, st.RxPackets-before, st.RxDropped)
	}
	// Drain what is left (up to a probe, resent until one finds room in
	// the ring), then the ring must still carry frames in order.
	readProbe(t, p, tx)
	seq = 1 << 20
	send(seq, 10)
	readTestFrames(t, p, seq, 10)
}

// TestSystemRxRingFallback breaks the ring's geometry so that the kernel
// refuses it: the port must fall back to recvmmsg and forward as before.
func TestSystemRxRingFallback(t *testing.T) {
	needRoot(t)
	setRingMode(t, ringAlways)
	old := ringFrameSize
	ringFrameSize = 65536 + 8 // not a multiple of TPACKET_ALIGNMENT: EINVAL
	t.Cleanup(func() { ringFrameSize = old })
	pr := newPair(t)
	a := openSystem(t, pr.hostA, Config{})
	b := openSystem(t, pr.hostB, Config{})
	for _, p := range []Port{a, b} {
		if p.(*systemPort).ring != nil {
			t.Fatalf("%s: a ring with a frame size the kernel refuses", p.Name())
		}
	}
	fw := forward(t, a, b, nil)
	ping(t, pr.nsA, addrB4)
	tcpEcho(t, pr.nsA, pr.nsB, addrB4, transferSize)
	if fw.gso[0].Load() == 0 {
		t.Errorf("no super-frames read from A on the fallback path")
	}
}

// openUnclosedRingPort opens a system port with its ring (rxRingMode
// mode) on a new veth, for a test that closes it itself.
func openUnclosedRingPort(t *testing.T, mode int) (Port, *systemPort) {
	t.Helper()
	needRoot(t)
	setRingMode(t, mode)
	ns := newNetns(t)
	host, _ := addVeth(t, ns)
	p, err := OpenSystem(host, Config{})
	if err != nil {
		t.Fatal(err)
	}
	s := p.(*systemPort)
	if s.ring == nil {
		p.Close()
		t.Fatal("no rx ring")
	}
	return p, s
}

// TestSystemRxRingClose checks that Close unblocks a Read waiting on the
// ring and unmaps it, and that Read then fails without touching it.
func TestSystemRxRingClose(t *testing.T) {
	p, s := openUnclosedRingPort(t, ringAlways)
	done := make(chan error, 1)
	go func() {
		pkts := []*packet.Packet{packet.New()}
		for {
			if _, err := p.Read(pkts); err != nil {
				done <- err
				return
			}
		}
	}()
	// Close must unblock Read whether or not it has blocked yet; the
	// pause (not a condition: nothing shows a Read inside poll) only
	// makes the blocked case the likely one.
	time.Sleep(100 * time.Millisecond)
	p.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Read after Close: %v", err)
		}
	case <-time.After(linkDeadline):
		t.Fatal("Close did not unblock Read")
	}
	if s.ring.mem != nil {
		t.Error("ring still mapped after Close")
	}
	if _, err := p.Read([]*packet.Packet{packet.New()}); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
}

// TestSystemRxRingLinkFlap takes the port's device down and up (the kernel
// sets sk_err, which nothing reading a ring clears) and checks that the
// ring still delivers.
func TestSystemRxRingLinkFlap(t *testing.T) {
	needRoot(t)
	setRingMode(t, ringAlways)
	ns := newNetns(t)
	host, peer := addVeth(t, ns)
	p := openSystem(t, host, Config{})
	if p.(*systemPort).ring == nil {
		t.Fatal("no rx ring")
	}
	tx := rawSocket(t, ns, peer)
	for round := range 3 {
		sh(t, "ip", "link", "set", host, "down")
		sh(t, "ip", "link", "set", host, "up")
		seq := round * 1000
		// Both ends: until the peer's carrier is back and linkwatch
		// has given its queue a qdisc again, the peer drops what it
		// sends. The probe then shows that frames go through.
		waitFor(t, host+" up", linkDeadline, func() bool { return linkUp(host) })
		waitFor(t, peer+" up", linkDeadline, func() bool { return linkUpIn(t, ns, peer) })
		readProbe(t, p, tx)
		for i := range 40 {
			if err := unix.Send(tx, ringTestFrame(seq+i), 0); err != nil {
				t.Fatal(err)
			}
		}
		readTestFrames(t, p, seq, 40)
	}
}

func linkUp(name string) bool {
	li, err := GetLinkInfo(name)
	return err == nil && li.OperUp
}

// setRingGeometry sets the ring's slot size and copy buffer for one test.
func setRingGeometry(t *testing.T, frame, copyBuf int) {
	oldFrame, oldBuf := ringFrameSize, ringCopyBuf
	ringFrameSize, ringCopyBuf = frame, copyBuf
	t.Cleanup(func() { ringFrameSize, ringCopyBuf = oldFrame, oldBuf })
}

// TestSystemRxRingCopy shrinks the ring's slots so that about a third of
// the test frames do not fit one: those must come through the socket's
// queue (TP_STATUS_COPY) whole and in order among the others, queued or
// read as they come. With the copy buffer too small for a long burst, the
// frames that find no room are counted as dropped and the port carries on.
func TestSystemRxRingCopy(t *testing.T) {
	setRingGeometry(t, 1024, 16<<20) // frames over 1024-76 bytes are copied
	p, s, tx, send := ringTestPort(t)
	copied := 0
	for i := range 300 {
		if len(ringTestFrame(i)) > 1024-76 {
			copied++
		}
	}
	if copied < 50 || copied > 250 {
		t.Fatalf("%d of 300 test frames larger than a slot: the test needs a mix", copied)
	}
	send(0, 300)
	waitFor(t, "300 frames queued in the ring", linkDeadline, func() bool { return ringQueued(s) >= 300 })
	readTestFrames(t, p, 0, 300)
	send(300, 300)
	readTestFrames(t, p, 300, 300)
	if st := p.Stats(); st.RxDropped != 0 || st.RxErrors != 0 {
		t.Errorf("dropped %d, errors %d with room for every frame", st.RxDropped, st.RxErrors)
	}

	// A receive buffer of 4 KiB (the kernel's minimum, SOCK_MIN_RCVBUF,
	// about two frames' truesize) holds few copies: a burst of 300 loses
	// most of its large frames, counted as dropped; small ones all arrive.
	s.rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 2048) })
	before := p.Stats()
	send(1000, 300)
	// Then a small frame, which ends the burst's reading.
	last := 1300
	for len(ringTestFrame(last)) > 1024-76 {
		last++
	}
	send(last, 1)
	pkts := newBatch()
	small := 0
	for seen := false; !seen; {
		n, err := p.Read(pkts)
		if err != nil {
			t.Fatal(err)
		}
		for _, pk := range pkts[:n] {
			seq, ok := testFrameSeq(pk.Data())
			if !ok {
				continue
			}
			if !bytes.Equal(pk.Data(), ringTestFrame(seq)) {
				t.Fatalf("frame %d corrupted", seq)
			}
			if seq == last {
				seen = true
			} else if len(pk.Data()) <= 1024-76 {
				small++
			}
		}
	}
	st := p.Stats()
	if dropped := st.RxDropped - before.RxDropped; dropped == 0 || st.RxErrors != 0 {
		t.Errorf("burst with a full copy buffer: dropped %d, errors %d", dropped, st.RxErrors)
	}
	want := 0
	for i := 1000; i < 1300; i++ {
		if len(ringTestFrame(i)) <= 1024-76 {
			want++
		}
	}
	if small != want {
		t.Errorf("read %d small frames of the burst, want %d", small, want)
	}
	// The port still delivers large and small frames in order.
	s.rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20) })
	readProbe(t, p, tx)
	send(2000, 100)
	readTestFrames(t, p, 2000, 100)
}
