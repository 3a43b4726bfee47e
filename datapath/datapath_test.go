package datapath

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
)

// rig is a datapath with fake ports 1..n.
type rig struct {
	dp    *Datapath
	ports map[uint32]*dptest.Port
}

func newRig(t *testing.T, n int) *rig { return newRigClock(t, n, nil) }

// newRigClock is newRig with a datapath clock the test drives.
func newRigClock(t *testing.T, n int, clock func() int64) *rig {
	t.Helper()
	r := &rig{dp: newDatapath(nil, clock)}
	r.dp.emcMinRx = 0 // every port caches from its first frame
	r.ports = dptest.AddPorts(t, n, r.dp.AddPort, r.dp.Close)
	return r
}

// flood injects gen(0), gen(1), ... on each of the ports, keeping at most
// 256 frames queued on each, until the returned stop is called.
func (r *rig) flood(ports []uint32, gen func(i int) []byte) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, in := range ports {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				if r.ports[in].Pending() < 256 {
					r.ports[in].Inject(gen(i))
				} else {
					time.Sleep(10 * time.Microsecond) // pacing: the port's queue is full
				}
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}

// rxDone waits until the datapath has processed n frames from port no.
func (r *rig) rxDone(t *testing.T, no uint32, n uint64) {
	t.Helper()
	dptest.Eventually(t, fmt.Sprintf("%d frames processed from port %d", n, no), func() bool {
		for _, pi := range r.dp.Ports() {
			if pi.No == no {
				return pi.Stats.RxPackets >= n
			}
		}
		return false
	})
}

// floodUpcall returns an upcaller that outputs every miss to ports 1..n
// but its input port.
func floodUpcall(n uint32) Upcaller {
	return UpcallFunc(func(batch []Upcall) {
		for i := range batch {
			for no := uint32(1); no <= n; no++ {
				if no != batch[i].Key.InPort {
					batch[i].Actions = append(batch[i].Actions, Output(no))
				}
			}
		}
	})
}

// static returns an upcaller that gives every miss the same actions and
// counts the upcalls and the keys translated.
func static(acts Actions, calls *atomic.Int64) Upcaller {
	return UpcallFunc(func(batch []Upcall) {
		calls.Add(1)
		for i := range batch {
			batch[i].Actions = append(batch[i].Actions, acts...)
			batch[i].Mask = flow.Exact()
		}
	})
}

func frame(vlans ...dptest.Tag) []byte {
	return dptest.Frame{
		Src: dptest.MAC("00:00:00:00:00:01"), Dst: dptest.MAC("00:00:00:00:00:02"), Tags: vlans,
		IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
		UDP:  &dptest.UDP{Src: 1, Dst: 2}, Payload: []byte("payload"),
	}.Bytes()
}

// Outputs between header changes see the packet as it was at that point:
// the datapath copies before changing a packet already queued.
func TestExecuteCopiesBeforeChanging(t *testing.T) {
	r := newRig(t, 4)
	var calls atomic.Int64
	r.dp.SetUpcall(static(Actions{
		Output(3),
		PushVLAN(0, 3<<13|10), Output(2),
		PushVLAN(0x88a8, 100), Output(4),
		PopVLAN(), PopVLAN(), PopVLAN(), // after the last output: ignored
	}, &calls))
	r.ports[1].Inject(frame())
	r.rxDone(t, 1, 1)

	want := map[uint32][]byte{
		3: frame(),
		2: frame(dptest.Tag{VID: 10, PCP: 3}),
		4: frame(dptest.Tag{TPID: 0x88a8, VID: 100}, dptest.Tag{VID: 10, PCP: 3}),
		1: nil,
	}
	for no, w := range want {
		sent := r.ports[no].Sent()
		if w == nil {
			if len(sent) != 0 {
				t.Errorf("port %d: got %d frames, want none", no, len(sent))
			}
			continue
		}
		if len(sent) != 1 || !bytes.Equal(sent[0], w) {
			t.Errorf("port %d:\n got %x\nwant %x", no, sent, w)
		}
	}
}

func TestPopVLAN(t *testing.T) {
	r := newRig(t, 3)
	var calls atomic.Int64
	r.dp.SetUpcall(static(Actions{Output(3), PopVLAN(), Output(2)}, &calls))
	r.ports[1].Inject(frame(dptest.Tag{VID: 7}))
	r.rxDone(t, 1, 1)
	if s := r.ports[3].Sent(); len(s) != 1 || !bytes.Equal(s[0], frame(dptest.Tag{VID: 7})) {
		t.Errorf("port 3: %x", s)
	}
	if s := r.ports[2].Sent(); len(s) != 1 || !bytes.Equal(s[0], frame()) {
		t.Errorf("port 2: %x", s)
	}
}

// One upcall per new flow per batch; later packets hit the cache until
// FlushFlows.
func TestCache(t *testing.T) {
	r := newRig(t, 2)
	var calls atomic.Int64
	r.dp.SetUpcall(static(Actions{Output(2)}, &calls))

	r.ports[1].Inject(frame(), frame(), frame(), frame())
	r.rxDone(t, 1, 4)
	if c := calls.Load(); c != 1 {
		t.Fatalf("%d upcalls for one flow in one batch, want 1", c)
	}
	r.ports[1].Inject(frame(), frame())
	r.rxDone(t, 1, 6)
	if c := calls.Load(); c != 1 {
		t.Fatalf("%d upcalls after a cached flow, want 1", c)
	}
	s := r.dp.Stats()
	if s.Hit != 5 || s.Missed != 1 || s.Lost != 0 || s.Flows != 1 {
		t.Errorf("stats %+v, want hit 5 missed 1 lost 0 flows 1", s)
	}

	r.dp.FlushFlows()
	if s := r.dp.Stats(); s.Flows != 0 {
		t.Errorf("flows after flush: %d", s.Flows)
	}
	r.ports[1].Inject(frame())
	r.rxDone(t, 1, 7)
	if c := calls.Load(); c != 2 {
		t.Fatalf("%d upcalls after FlushFlows, want 2", c)
	}
	if n := r.ports[2].NumSent(); n != 7 {
		t.Errorf("port 2 got %d frames, want 7", n)
	}
	pi := r.dp.Ports()
	if len(pi) != 2 || pi[0].No != 1 || pi[0].Name != "p1" || pi[0].Stats.RxPackets != 7 ||
		pi[1].Stats.TxPackets != 7 || pi[1].Stats.TxBytes != 7*uint64(len(frame())) {
		t.Errorf("ports %+v", pi)
	}
}

func TestLostAndRunts(t *testing.T) {
	r := newRig(t, 2)
	r.ports[1].Inject(frame(), frame(), make([]byte, 13), nil)
	r.rxDone(t, 1, 4)
	if s := r.dp.Stats(); s.Lost != 2 || s.Missed != 0 || s.Hit != 0 {
		t.Errorf("stats %+v, want 2 lost", s)
	}
	if pi := r.dp.Ports(); pi[0].Stats.RxErrors != 2 {
		t.Errorf("rx errors %d, want 2 runts", pi[0].Stats.RxErrors)
	}
	if n := r.ports[2].NumSent(); n != 0 {
		t.Errorf("sent %d", n)
	}
}

func TestAddPortErrors(t *testing.T) {
	r := newRig(t, 1)
	p := dptest.NewPort("x")
	defer p.Close()
	if err := r.dp.AddPort(0, p); !errors.Is(err, ErrPortReserved) {
		t.Errorf("port 0: %v", err)
	}
	if err := r.dp.AddPort(1, p); !errors.Is(err, ErrPortExists) {
		t.Errorf("port 1 again: %v", err)
	}
	if err := r.dp.AddPort(2, r.ports[1]); !errors.Is(err, ErrPortAttached) {
		t.Errorf("same netdev twice: %v", err)
	}
	if err := r.dp.DelPort(9); !errors.Is(err, ErrNoSuchPort) {
		t.Errorf("del 9: %v", err)
	}
	// Detached but not yet closed: its goroutine still reads it.
	if err := r.dp.DelPort(1); err != nil {
		t.Fatal(err)
	}
	if err := r.dp.AddPort(2, r.ports[1]); !errors.Is(err, ErrPortAttached) {
		t.Errorf("re-adding an unclosed detached netdev: %v", err)
	}
	r.dp.Close()
	if err := r.dp.AddPort(3, p); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// Once DelPort returns, nothing more is written to the port, while traffic
// that would flood to it keeps flowing from several input ports.
func TestDelPortUnderTraffic(t *testing.T) {
	r := newRig(t, 4)
	r.dp.SetUpcall(floodUpcall(4))
	defer r.flood([]uint32{1, 2}, func(i int) []byte {
		f := frame()
		f[11] = byte(i) // a few different flows
		return f
	})()

	dptest.Eventually(t, "traffic on port 4", func() bool { return r.ports[4].NumSent() > 100 })
	if err := r.dp.DelPort(4); err != nil {
		t.Fatal(err)
	}
	after := r.ports[4].NumSent()
	base := r.ports[3].NumSent()
	dptest.Eventually(t, "more traffic on port 3", func() bool { return r.ports[3].NumSent() > base+2000 })
	if n := r.ports[4].NumSent(); n != after {
		t.Fatalf("port 4 got %d frames after DelPort returned", n-after)
	}
	// The detached goroutine ends when the netdev closes.
	r.ports[4].Close()
	dptest.Eventually(t, "rx goroutine exit", func() bool {
		r.dp.mu.Lock()
		defer r.dp.mu.Unlock()
		return len(r.dp.workers) == 3
	})
}

// FlushFlows waits for a batch that began before it.
func TestFlushFlowsWaits(t *testing.T) {
	r := newRig(t, 2)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r.dp.SetUpcall(UpcallFunc(func(batch []Upcall) {
		once.Do(func() { close(entered); <-release })
		for i := range batch {
			batch[i].Actions = append(batch[i].Actions, Output(2))
		}
	}))
	r.ports[1].Inject(frame())
	<-entered
	flushed := make(chan struct{})
	go func() { r.dp.FlushFlows(); close(flushed) }()
	select {
	case <-flushed:
		t.Fatal("FlushFlows returned while a batch of the old generation was running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case <-flushed:
	case <-time.After(dptest.Timeout):
		t.Fatal("FlushFlows did not return")
	}
	if n := r.ports[2].NumSent(); n != 1 {
		t.Errorf("sent %d", n)
	}
}

// Many input ports flood into one output: its Writes never overlap.
func TestConcurrentWritesSerialized(t *testing.T) {
	r := newRig(t, 3)
	var calls atomic.Int64
	r.dp.SetUpcall(static(Actions{Output(3)}, &calls))
	var wg sync.WaitGroup
	for _, in := range []uint32{1, 2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				r.ports[in].Inject(frame(), frame(), frame())
			}
		}()
	}
	wg.Wait()
	r.rxDone(t, 1, 600)
	r.rxDone(t, 2, 600)
	if n := r.ports[3].NumSent(); n != 1200 {
		t.Errorf("port 3 got %d, want 1200", n)
	}
}

func TestActionsString(t *testing.T) {
	for _, tt := range []struct {
		a    Actions
		want string
	}{
		{nil, "drop"},
		{Actions{Output(1)}, "1"},
		{Actions{PushVLAN(0, 3<<13|10), Output(1), PopVLAN(), Output(2)}, "push_vlan(vid=10,pcp=3),1,pop_vlan,2"},
		{Actions{PushVLAN(0x88a8, 5)}, "push_vlan(tpid=0x88a8,vid=5,pcp=0)"},
	} {
		if s := tt.a.String(); s != tt.want {
			t.Errorf("got %q, want %q", s, tt.want)
		}
	}
}

// Frames whose tails stay in another device's memory (vhost-user zero
// copy) are classified from their heads, forwarded whole, changed only on
// copies, and their tails released once, after the last output.
func TestExternalTails(t *testing.T) {
	long := func(vlans ...dptest.Tag) []byte {
		return dptest.Frame{
			Src: dptest.MAC("00:00:00:00:00:01"), Dst: dptest.MAC("00:00:00:00:00:02"), Tags: vlans,
			IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
			UDP:  &dptest.UDP{Src: 1, Dst: 2}, Payload: bytes.Repeat([]byte("payload."), 100),
		}.Bytes()
	}
	// 20 bytes: too short a head, the key is taken from the whole frame;
	// 64: the head holds the headers.
	for _, head := range []int{20, 64} {
		t.Run(fmt.Sprint(head), func(t *testing.T) {
			r := newRig(t, 4)
			var keys sync.Map
			r.dp.SetUpcall(UpcallFunc(func(batch []Upcall) {
				for i := range batch {
					keys.Store(batch[i].Key, true)
					batch[i].Actions = Actions{Output(3), PushVLAN(0, 10), Output(2), PopVLAN(), PopVLAN(), Output(4)}
					batch[i].Mask = flow.Exact()
				}
			}))
			r.ports[1].SetZeroCopy(head)
			const n = 100
			for range n {
				r.ports[1].Inject(long(dptest.Tag{VID: 5}))
			}
			r.rxDone(t, 1, n)
			dptest.Eventually(t, "tails released", func() bool {
				out, rel := r.ports[1].Tails()
				return out == 0 && rel == n
			})
			want := map[uint32][]byte{3: long(dptest.Tag{VID: 5}), 2: long(dptest.Tag{VID: 10}, dptest.Tag{VID: 5}), 4: long()}
			for no, w := range want {
				sent := r.ports[no].Sent()
				if len(sent) != n || !bytes.Equal(sent[0], w) || !bytes.Equal(sent[n-1], w) {
					t.Errorf("port %d: %d frames, first\n%x\nwant\n%x", no, len(sent), sent[0], w)
				}
			}
			var k flow.Key
			flow.Extract(long(dptest.Tag{VID: 5}), 1, &k)
			nkeys := 0
			keys.Range(func(key, _ any) bool {
				nkeys++
				if key.(flow.Key) != k {
					t.Errorf("upcall key %v, want %v", key, k)
				}
				return true
			})
			if nkeys != 1 {
				t.Errorf("%d distinct keys", nkeys)
			}
		})
	}
}
