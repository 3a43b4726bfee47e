//go:build linux

package netdev

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/govs/govs/datapath/packet"
)

// rxqReaders reads each of a port's queues from a goroutine of its own and
// checks rxqFrames as they come: each flow on one queue and in order.
type rxqReaders struct {
	t       *testing.T
	mu      sync.Mutex
	queueOf map[uint16]int
	next    map[uint16]int
	perQ    []int
	read    atomic.Int64
	probed  atomic.Bool
	wg      sync.WaitGroup
	errs    chan error
}

func readQueues(t *testing.T, qs []Reader) *rxqReaders {
	r := &rxqReaders{t: t, queueOf: map[uint16]int{}, next: map[uint16]int{}, perQ: make([]int, len(qs)), errs: make(chan error, len(qs))}
	for i, q := range qs {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			pkts := newBatch()
			for {
				n, err := q.Read(pkts)
				if err != nil {
					r.errs <- err
					return
				}
				r.mu.Lock()
				for _, pk := range pkts[:n] {
					fl, seq, ok := rxqSeq(pk.Data())
					switch {
					case !ok:
					case seq < 0:
						r.probed.Store(true)
					default:
						if q0, seen := r.queueOf[fl]; seen && q0 != i {
							t.Errorf("flow %d on queues %d and %d", fl, q0, i)
						}
						r.queueOf[fl] = i
						if seq != r.next[fl] {
							t.Errorf("flow %d: frame %d where %d was due", fl, seq, r.next[fl])
						}
						r.next[fl] = seq + 1
						r.perQ[i]++
						r.read.Add(1)
					}
				}
				r.mu.Unlock()
			}
		}()
	}
	return r
}

// closed waits for every reader to end with ErrClosed once the port is closed.
func (r *rxqReaders) closed() {
	r.wg.Wait()
	for range r.perQ {
		if err := <-r.errs; !errors.Is(err, ErrClosed) {
			r.t.Errorf("read after Close: %v", err)
		}
	}
}

// rxqReverse is the frame of flow's other direction.
func rxqReverse(flow uint16) []byte {
	f := rxqFrame(flow, 0)
	var m [6]byte
	copy(m[:], f[0:6])
	copy(f[0:6], f[6:12])
	copy(f[6:12], m[:])
	ip := f[14:]
	var a [4]byte
	copy(a[:], ip[12:16])
	copy(ip[12:16], ip[16:20])
	copy(ip[16:20], a[:])
	ip[20], ip[21], ip[22], ip[23] = ip[22], ip[23], ip[20], ip[21]
	return f
}

// TestTapRxQueues opens a tap with two queues and moves it to a namespace,
// where 64 flows are sent through the device: every frame is read once,
// each flow from one queue and in order, both queues carry some, and a
// flow the port wrote frames of comes back on the queue Write put it on
// (the kernel's automq steering). Reopened with three queues, the device is
// found in its namespace and still carries frames; Close ends every reader.
func TestTapRxQueues(t *testing.T) {
	needRoot(t)
	ns := newNetns(t)
	name := uniqueName("t")
	p, err := OpenTap(name, Config{RxQueues: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { p.Close() }()
	sh(t, "ip", "link", "set", name, "netns", ns)
	// The frames Write sends are addressed to the device, which
	// would drop others (and Write skips them, see rxFilter).
	sh(t, "ip", "-n", ns, "link", "set", name, "address", "02:00:00:00:00:01", "up")
	tx := rawSocket(t, ns, name)
	qs := p.(RxQueuer).RxQueues()
	if len(qs) != 2 {
		t.Fatalf("%d queues, want 2", len(qs))
	}
	r := readQueues(t, qs)
	waitFor(t, "a probe through the tap", linkDeadline, func() bool {
		unix.Send(tx, rxqFrame(1, -1), 0)
		return r.probed.Load()
	})

	// Write skips frames its filter says the device would drop, which
	// it reads from the namespace the tap was opened in until it sees
	// that the tap left it: wait until written frames arrive.
	buf := make([]byte, 2048)
	waitFor(t, "a written frame in the namespace", linkDeadline, func() bool {
		if _, err := p.Write(rxqPackets(rxqReverse(999))); err != nil {
			t.Fatal(err)
		}
		for {
			n, _, err := unix.Recvfrom(tx, buf, unix.MSG_DONTWAIT)
			if err != nil {
				return false
			}
			if fl, _, ok := rxqSeq(buf[:n]); ok && fl == 9 {
				return true
			}
		}
	})

	const flows, perFlow, steered = 64, 40, 16
	const window = 100 // frames the sender runs ahead of the readers
	for seq := range perFlow {
		// Frames written keep the kernel's flow entries fresh (they
		// age out after 3 s).
		for fl := range uint16(steered) {
			if _, err := p.Write(rxqPackets(rxqReverse(1000 + fl))); err != nil {
				t.Fatal(err)
			}
		}
		for fl := range uint16(flows) {
			waitFor(t, "the readers to catch up", linkDeadline, func() bool {
				return int64(seq*flows+int(fl))-r.read.Load() < window
			})
			if err := unix.Send(tx, rxqFrame(1000+fl, seq), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, fmt.Sprintf("%d frames read", flows*perFlow), linkDeadline, func() bool {
		return r.read.Load() == flows*perFlow
	})
	r.mu.Lock()
	if r.perQ[0] == 0 || r.perQ[1] == 0 {
		t.Errorf("frames per queue %v: 64 flows did not spread", r.perQ)
	}
	for fl := range uint16(steered) {
		if want := flowQueue(rxqReverse(1000+fl), 2); r.queueOf[1000+fl] != want {
			t.Errorf("flow %d written on queue %d came back on %d", 1000+fl, want, r.queueOf[1000+fl])
		}
	}
	t.Logf("frames per queue: %v", r.perQ)
	r.mu.Unlock()
	if st := p.Stats(); st.RxPackets < flows*perFlow {
		t.Errorf("stats %+v: want both queues' frames counted", st)
	}

	np, err := p.(Reopener).Reopen(Config{RxQueues: 3})
	if err != nil {
		t.Fatal(err)
	}
	p = np
	r.closed()
	if out := sh(t, "ip", "-n", ns, "-o", "link", "show", name); !strings.Contains(out, "UP") {
		t.Errorf("after the reopen: %s", out)
	}
	qs = p.(RxQueuer).RxQueues()
	if len(qs) != 3 {
		t.Fatalf("reopened: %d queues, want 3", len(qs))
	}
	r = readQueues(t, qs)
	waitFor(t, "a probe through the reopened tap", linkDeadline, func() bool {
		unix.Send(tx, rxqFrame(1, -1), 0)
		return r.probed.Load()
	})
	for fl := range uint16(flows) {
		unix.Send(tx, rxqFrame(2000+fl, 0), 0)
	}
	waitFor(t, "64 frames read from 3 queues", linkDeadline, func() bool { return r.read.Load() == flows })
	p.Close()
	r.closed()
}

// TestTapRxQueuesSingle: a tap someone created without multi_queue takes
// one queue, and refuses more with a clear error.
func TestTapRxQueuesSingle(t *testing.T) {
	needRoot(t)
	name := uniqueName("t")
	sh(t, "ip", "tuntap", "add", "dev", name, "mode", "tap")
	defer sh(t, "ip", "link", "del", name)
	p, err := OpenTap(name, Config{})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if _, err := OpenTap(name, Config{RxQueues: 2}); err == nil || !strings.Contains(err.Error(), "single-queue") {
		t.Errorf("2 queues on a single-queue tap: %v", err)
	}
}

// rxqPackets is frame as a batch of one to Write.
func rxqPackets(frame []byte) []*packet.Packet {
	p := packet.New()
	p.SetData(frame)
	return []*packet.Packet{p}
}
