package datapath

import (
	"runtime"
	"sync/atomic"
	"testing"
	"unsafe"
	"weak"

	"github.com/govs/govs/datapath/classifier"
	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev"
)

// waitPort is a dptest.Port that is a netdev.ReadWaiter and records
// whether Read was ever handed missing buffers.
type waitPort struct {
	*dptest.Port
	idles  atomic.Int64
	nilBuf atomic.Bool
}

func (p *waitPort) WaitRead(idle func()) error {
	if p.Pending() > 0 {
		return nil
	}
	p.idles.Add(1)
	idle()
	// Read waits for the frame; it is handed buffers only afterwards.
	return nil
}

func (p *waitPort) Read(pkts []*packet.Packet) (int, error) {
	for _, pk := range pkts {
		if pk == nil {
			p.nilBuf.Store(true)
		}
	}
	return p.Port.Read(pkts)
}

var _ netdev.ReadWaiter = (*waitPort)(nil)

// TestIdlePortHoldsNoBuffers: a ReadWaiter's worker gives its receive
// buffers back while it waits and takes them again to read.
func TestIdlePortHoldsNoBuffers(t *testing.T) {
	dp := New(nil)
	defer dp.Close()
	var calls atomic.Int64
	dp.SetUpcall(static(Actions{Output(2)}, &calls))
	a := &waitPort{Port: dptest.NewPort("a")}
	b := dptest.NewPort("b")
	defer a.Close()
	defer b.Close()
	if err := dp.AddPort(1, a); err != nil {
		t.Fatal(err)
	}
	if err := dp.AddPort(2, b); err != nil {
		t.Fatal(err)
	}
	dptest.Eventually(t, "the idle worker to release its buffers", func() bool { return a.idles.Load() > 0 })
	// Each round waits for the worker to wait again before the next: a
	// round injected while the worker is still draining the last one is
	// read without a wait in between.
	for i := 1; i <= 3; i++ {
		before := a.idles.Load()
		a.Inject(frame(), frame())
		dptest.Eventually(t, "forwarding", func() bool { return b.NumSent() == 2*i })
		dptest.Eventually(t, "the worker to wait again", func() bool { return a.idles.Load() > before })
	}
	if a.nilBuf.Load() {
		t.Error("Read was handed a batch without buffers")
	}
}

// TestDeletedPortsReleased: once a deleted port's netdev is closed,
// nothing keeps its worker (buffers, cache) alive, even though another
// port's flows output to it and its exact-match cache keeps dead flows.
func TestDeletedPortsReleased(t *testing.T) {
	r := newRig(t, 2)
	r.dp.SetUpcall(floodUpcall(8))
	var refs []weak.Pointer[worker]
	for round := range 3 {
		var ps []*dptest.Port
		for no := uint32(3); no <= 8; no++ {
			p := dptest.NewPort("x")
			if err := r.dp.AddPort(no, p); err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
			refs = append(refs, weak.Make(r.dp.ports.Load().byNo[no].w))
		}
		// Flows on port 1 (kept) and on the new ports, all flooding.
		f := frame()
		f[11] = byte(round)
		r.ports[1].Inject(f)
		ps[0].Inject(f)
		dptest.Eventually(t, "flooding", func() bool { return ps[5].NumSent() >= 2 })
		for i, p := range ps {
			if err := r.dp.DelPort(uint32(3 + i)); err != nil {
				t.Fatal(err)
			}
			p.Close()
		}
	}
	dptest.Eventually(t, "workers of deleted ports to exit", func() bool {
		r.dp.mu.Lock()
		defer r.dp.mu.Unlock()
		return len(r.dp.workers) == 2
	})
	dptest.Eventually(t, "deleted ports' workers collected", func() bool {
		runtime.GC()
		for _, w := range refs {
			if w.Value() != nil {
				return false
			}
		}
		return true
	})
}

// TestCacheAfterTraffic: a port gets its exact-match cache only once it
// has received emcMinRx frames.
func TestCacheAfterTraffic(t *testing.T) {
	r := newRig(t, 2)
	r.dp.emcMinRx = emcMinRx
	var calls atomic.Int64
	r.dp.SetUpcall(static(Actions{Output(2)}, &calls))
	w := r.dp.ports.Load().byNo[1].w
	r.ports[1].Inject(frame(), frame())
	r.rxDone(t, 1, 2)
	if w.emc != nil {
		t.Fatal("a cache after 2 frames")
	}
	sent := 2
	for sent < emcMinRx+64 {
		fs := make([][]byte, 32)
		for i := range fs {
			fs[i] = frame()
		}
		r.ports[1].Inject(fs...)
		sent += len(fs)
		r.rxDone(t, 1, uint64(sent)) // counted after the batch's cache insert
	}
	if s := r.dp.Stats(); s.Hit != uint64(sent-1) || s.Missed != 1 {
		t.Errorf("hits %d missed %d, want %d and 1", s.Hit, s.Missed, sent-1)
	}
	if w.emc == nil {
		t.Errorf("no cache after %d frames", sent)
	}
}

// TestMegaflowSize keeps a datapath flow, with its classifier rule in the
// same allocation, in Go's 1152-byte size class: the next is 1280.
func TestMegaflowSize(t *testing.T) {
	if n := unsafe.Sizeof(megaflow{}); n > 1152 {
		t.Errorf("megaflow is %d bytes, more than the 1152-byte size class", n)
	}
}

// TestInstallTakesSpares: a worker that installs flows keeps spareFlows
// megaflows allocated ahead, installs into them, and tops them up after
// the batch, so a flow's first packet does not wait on the allocator.
func TestInstallTakesSpares(t *testing.T) {
	w, sinks := benchWorker(t, 2, exactUpcaller)
	frames := flowFrames(4)
	send := func(fs ...[]byte) {
		for i, f := range fs {
			w.rx[i].SetLen(copy(w.rx[i].Tail(), f))
		}
		w.batch(len(fs))
	}
	send(frames[0])
	if len(w.spare) != spareFlows {
		t.Fatalf("%d spares after the first install, want %d", len(w.spare), spareFlows)
	}
	var spares []*megaflow
	for _, s := range w.spare {
		if s.f.installed || s.fa.ops != nil {
			t.Fatal("a spare is not zero")
		}
		spares = append(spares, s.f)
	}
	send(frames[1:]...)
	if len(w.spare) != spareFlows {
		t.Fatalf("%d spares after installs, want %d", len(w.spare), spareFlows)
	}
	used := map[*megaflow]bool{}
	w.cls.All(func(r *classifier.Rule[*megaflow]) bool {
		used[r.Value] = true
		return true
	})
	if len(used) != 4 {
		t.Fatalf("%d flows installed, want 4", len(used))
	}
	for _, f := range spares[len(spares)-3:] {
		if !used[f] {
			t.Error("an install allocated instead of taking a spare")
		}
	}
	if got := sinks[1].sent; got != 4 {
		t.Errorf("%d frames out of port 2, want 4", got)
	}
}
