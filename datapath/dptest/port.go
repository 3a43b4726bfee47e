package dptest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev"
)

// Port is an in-memory netdev.Port. Frames a test Injects are returned by
// Read in order, in batches; frames the datapath Writes are recorded. It
// checks the netdev contract it can see: Read and Write each from one
// goroutine at a time.
type Port struct {
	name string

	rxq *netdev.FrameQueue

	mu   sync.Mutex // guards sent, sentOffl, offloads, closed, stats
	sent [][]byte

	// rxOffl is InjectOffload's frames' metadata, by their first byte;
	// its own lock, taken under the receive queue's.
	offlMu   sync.Mutex
	rxOffl   map[*byte]packet.Offload
	sentOffl []packet.Offload
	offloads netdev.Offloads
	closed   bool
	stats    netdev.Stats

	reading, writing atomic.Int32
	polls            atomic.Int64
	violations       atomic.Int32

	zcHead      atomic.Int32 // > 0: Read leaves frames' tails external past it
	outstanding atomic.Int64 // external tails not released yet
	released    atomic.Int64
}

var _ netdev.Port = (*Port)(nil)

// NewPort returns an open port.
func NewPort(name string) *Port {
	return &Port{name: name, rxq: netdev.NewFrameQueue()}
}

// Name implements netdev.Port.
func (p *Port) Name() string { return p.name }

// Inject queues frames for Read, as if they arrived on the wire.
func (p *Port) Inject(frames ...[]byte) {
	// One push: the reader sees the frames together, as one batch (the
	// datapath tests count batches).
	copies := make([][]byte, len(frames))
	for i, f := range frames {
		copies[i] = append([]byte(nil), f...)
	}
	p.rxq.Push(0, copies...)
}

// InjectOffload queues frames for Read as Inject does, each with offload
// metadata o, as a port with a virtio_net_hdr receives them.
func (p *Port) InjectOffload(o packet.Offload, frames ...[]byte) {
	copies := make([][]byte, len(frames))
	p.offlMu.Lock()
	if p.rxOffl == nil {
		p.rxOffl = map[*byte]packet.Offload{}
	}
	for i, f := range frames {
		copies[i] = append(make([]byte, 0, len(f)+1), f...)
		p.rxOffl[&copies[i][:1][0]] = o
	}
	p.offlMu.Unlock()
	p.rxq.Push(0, copies...)
}

// Read implements netdev.Port.
func (p *Port) Read(pkts []*packet.Packet) (int, error) {
	if p.reading.Add(1) != 1 {
		p.violations.Add(1)
	}
	defer p.reading.Add(-1)
	var bytes uint64
	n, err := p.rxq.Pop(pkts, func(pk *packet.Packet, f []byte) {
		pk.Reset()
		if h := int(p.zcHead.Load()); h > 0 && len(f) > h {
			pk.SetLen(copy(pk.Tail(), f[:h]))
			p.outstanding.Add(1)
			pk.SetExternal(f[h:], &tail{port: p, b: f[h:]})
		} else {
			pk.SetLen(copy(pk.Tail(), f))
		}
		if cap(f) > 0 {
			p.offlMu.Lock()
			if o, ok := p.rxOffl[&f[:1][0]]; ok {
				pk.Offload = o
				delete(p.rxOffl, &f[:1][0])
			}
			p.offlMu.Unlock()
		}
		bytes += uint64(len(f))
	})
	// Counted after Pop, whose lock Close takes after mu.
	p.mu.Lock()
	p.stats.RxPackets += uint64(n)
	p.stats.RxBytes += bytes
	p.mu.Unlock()
	return n, err
}

// Poll implements netdev.Poller: Read if frames are queued, else none
// (ErrClosed once closed), without waiting. It counts its calls (Polls).
func (p *Port) Poll(pkts []*packet.Packet) (int, error) {
	p.polls.Add(1)
	if p.rxq.Len() == 0 {
		p.mu.Lock()
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return 0, netdev.ErrClosed
		}
		return 0, nil
	}
	return p.Read(pkts)
}

// Polls returns how many times Poll was called.
func (p *Port) Polls() int64 { return p.polls.Load() }

// Write implements netdev.Port: it records a copy of every frame.
func (p *Port) Write(pkts []*packet.Packet) (int, error) {
	if p.writing.Add(1) != 1 {
		p.violations.Add(1)
	}
	defer p.writing.Add(-1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		p.stats.TxDropped += uint64(len(pkts))
		return 0, netdev.ErrClosed
	}
	for _, pk := range pkts {
		b := make([]byte, pk.Len())
		pk.CopyTo(b)
		p.sent = append(p.sent, b)
		p.sentOffl = append(p.sentOffl, pk.Offload)
		p.stats.TxPackets++
		p.stats.TxBytes += uint64(pk.Len())
	}
	return len(pkts), nil
}

// SetZeroCopy makes Read hand over frames longer than head bytes as a
// vhost-user port in zero-copy mode does: their first head bytes in the
// packet, the rest as an external tail, which is overwritten with 0xee
// when the datapath releases it (so a frame sent after its release shows).
// 0 turns it off.
func (p *Port) SetZeroCopy(head int) { p.zcHead.Store(int32(head)) }

// Tails reports how many external tails Read handed over and the datapath
// has not released yet, and how many it has released.
func (p *Port) Tails() (outstanding, released int64) {
	return p.outstanding.Load(), p.released.Load()
}

// tail is an external tail handed over by Read.
type tail struct {
	port *Port
	b    []byte
	done atomic.Bool
}

func (t *tail) CopyExternal(dst, src []byte) { copy(dst, src) }

func (t *tail) ReleaseExternal() {
	if t.done.Swap(true) {
		t.port.violations.Add(1) // released twice
		return
	}
	for i := range t.b {
		t.b[i] = 0xee
	}
	t.port.outstanding.Add(-1)
	t.port.released.Add(1)
}

// Offloads implements netdev.Port: what SetOffloads set, no offload by
// default.
func (p *Port) Offloads() netdev.Offloads {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.offloads
}

// SetOffloads sets what the port reports it takes on transmit; Write
// records frames as they are, offload metadata in SentOffloads.
func (p *Port) SetOffloads(o netdev.Offloads) {
	p.mu.Lock()
	p.offloads = o
	p.mu.Unlock()
}

// SentOffloads returns the offload metadata of the frames Sent returns.
func (p *Port) SentOffloads() []packet.Offload {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]packet.Offload(nil), p.sentOffl...)
}

// Stats implements netdev.Port.
func (p *Port) Stats() netdev.Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close implements netdev.Port; a blocked Read returns ErrClosed.
func (p *Port) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		p.rxq.Close()
	}
	return nil
}

// Sent returns copies of the frames written so far, oldest first.
func (p *Port) Sent() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([][]byte, len(p.sent))
	copy(out, p.sent)
	return out
}

// NumSent returns how many frames were written so far.
func (p *Port) NumSent() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sent)
}

// Pending returns how many injected frames Read has not returned yet.
func (p *Port) Pending() int { return p.rxq.Len() }

// Violations counts the times Read or Write was entered while another
// call of the same method was running.
func (p *Port) Violations() int { return int(p.violations.Load()) }

// Timeout bounds every wait in tests that use this package: generous, for
// a loaded machine and the race detector; passing is unaffected.
const Timeout = 60 * time.Second

// Eventually fails t unless cond becomes true within Timeout, polling it.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for d := 10 * time.Microsecond; !cond(); d = min(2*d, 5*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(d)
	}
}

// AddPorts makes ports p1..pn, attaches each as port number i with add
// (a datapath's AddPort), and once the test ends closes them (after close,
// which stops the datapath) and checks that no Read or Write overlapped.
func AddPorts(t testing.TB, n int, add func(no uint32, p netdev.Port) error, close func()) map[uint32]*Port {
	t.Helper()
	ports := map[uint32]*Port{}
	for i := uint32(1); i <= uint32(n); i++ {
		p := NewPort(fmt.Sprintf("p%d", i))
		if err := add(i, p); err != nil {
			t.Fatal(err)
		}
		ports[i] = p
	}
	t.Cleanup(func() {
		close()
		for _, p := range ports {
			p.Close()
			if v := p.Violations(); v != 0 {
				t.Errorf("port %s: %d concurrent Read or Write calls", p.Name(), v)
			}
		}
	})
	return ports
}
