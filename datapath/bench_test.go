package datapath

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev"
)

// sinkPort is a netdev.Port whose Read blocks until Close and whose Write
// discards.
type sinkPort struct {
	done chan struct{}
	sent int
}

func (p *sinkPort) Name() string { return "sink" }
func (p *sinkPort) Read([]*packet.Packet) (int, error) {
	<-p.done
	return 0, netdev.ErrClosed
}
func (p *sinkPort) Write(pkts []*packet.Packet) (int, error) {
	p.sent += len(pkts)
	return len(pkts), nil
}
func (p *sinkPort) Offloads() netdev.Offloads { return netdev.Offloads{} }
func (p *sinkPort) Stats() netdev.Stats       { return netdev.Stats{} }
func (p *sinkPort) Close() error              { close(p.done); return nil }

// benchWorker returns a datapath with sink ports 1..n and a worker for
// port 1 that the benchmark drives by hand.
func benchWorker(b testing.TB, n int, u Upcaller) (*worker, []*sinkPort) {
	dp := New(nil)
	b.Cleanup(dp.Close)
	dp.SetUpcall(u)
	var sinks []*sinkPort
	for i := 1; i <= n; i++ {
		s := &sinkPort{done: make(chan struct{})}
		b.Cleanup(func() { s.Close() })
		if err := dp.AddPort(uint32(i), s); err != nil {
			b.Fatal(err)
		}
		sinks = append(sinks, s)
	}
	// The benchmark's worker stands in for port 1's, whose goroutine
	// stays blocked in the sink's Read: flushes, dumps and the
	// revalidator see its flows.
	dp.mu.Lock()
	old := dp.ports.Load()
	p1 := old.byNo[1]
	port := &dpPort{no: 1, name: p1.name, dev: p1.dev, slot: p1.slot}
	w := newWorker(dp, port)
	port.w = w
	for i := range w.rx {
		w.rx[i] = packet.New()
	}
	dp.workers[w] = struct{}{}
	dp.ports.Store(old.with(port))
	dp.mu.Unlock()
	return w, sinks
}

// BenchmarkForward is the exact-match cache hit path: a batch of 32
// frames of 8 flows, key extraction, cache lookup, actions on per-flow
// sub-batches, and one Write per output port.
func BenchmarkForward(b *testing.B) {
	for _, bc := range []struct {
		name string
		acts Actions
	}{
		{"output", Actions{Output(2)}},
		{"push-vlan", Actions{PushVLAN(0, 10), Output(2)}},
		{"flood-4", Actions{Output(2), Output(3), PushVLAN(0, 10), Output(4), Output(5)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			w, _ := benchWorker(b, 5, UpcallFunc(func(batch []Upcall) {
				for i := range batch {
					batch[i].Actions = append(batch[i].Actions, bc.acts...)
					batch[i].Mask = flow.Exact()
				}
			}))
			var frames [netdev.BatchSize][]byte
			for i := range frames {
				f := dptest.UDP4("00:00:00:00:00:01", "00:00:00:00:00:02")
				f[11] = byte(i % 8)
				frames[i] = f
			}
			fill := func() {
				for i, f := range frames {
					w.rx[i].SetLen(copy(w.rx[i].Tail(), f))
				}
			}
			fill()
			w.batch(netdev.BatchSize) // translate and cache
			b.ReportAllocs()
			b.SetBytes(int64(netdev.BatchSize * len(frames[0])))
			for b.Loop() {
				fill()
				w.batch(netdev.BatchSize)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*netdev.BatchSize), "ns/pkt")
		})
	}
}

// exactUpcaller outputs every flow to port 2 with an exact-match mask, so
// that each distinct key is a flow of its own.
var exactUpcaller = UpcallFunc(func(batch []Upcall) {
	for i := range batch {
		batch[i].Actions = append(batch[i].Actions, Output(2))
		batch[i].Mask = flow.Exact()
	}
})

// flowFrames returns n frames of n distinct flows: UDP source and
// destination ports count up.
func flowFrames(n int) [][]byte {
	frames := make([][]byte, n)
	base := dptest.UDP4("00:00:00:00:00:01", "00:00:00:00:00:02")
	for i := range frames {
		f := slices.Clone(base)
		binary.BigEndian.PutUint16(f[34:], uint16(i))     // UDP source port
		binary.BigEndian.PutUint16(f[36:], uint16(i>>16)) // and destination port
		frames[i] = f
	}
	return frames
}

// BenchmarkActiveFlows is the packet rate through one port's rx path
// (extraction, exact-match cache, megaflow classifier, actions, Write to
// a sink port) while packets cycle through n installed flows: with 1 and
// 1000 flows every packet hits the exact-match cache; with 100000 most
// miss it (8192 entries, 1-in-100 replacement) and hit the classifier.
func BenchmarkActiveFlows(b *testing.B) {
	for _, n := range []int{1, 1000, 100000} {
		b.Run(fmt.Sprintf("flows=%d", n), func(b *testing.B) {
			w, _ := benchWorker(b, 2, exactUpcaller)
			frames := flowFrames(n)
			next := 0
			fill := func() {
				for i := range w.rx {
					f := frames[next]
					next = (next + 1) % n
					w.rx[i].SetLen(copy(w.rx[i].Tail(), f))
				}
			}
			for range (n + netdev.BatchSize - 1) / netdev.BatchSize {
				fill()
				w.batch(netdev.BatchSize) // install
			}
			if got := w.dp.Stats().Flows; got != uint64(n) {
				b.Fatalf("%d flows installed, want %d", got, n)
			}
			b.ReportAllocs()
			for b.Loop() {
				fill()
				w.batch(netdev.BatchSize)
			}
			pkts := float64(b.N * netdev.BatchSize)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/pkts, "ns/pkt")
			b.ReportMetric(pkts/b.Elapsed().Seconds()/1e6, "Mpps")
		})
	}
}

// BenchmarkFlowSetup is the flow setup rate: every packet is a new flow
// (UDP source ports never repeat), translated by one upcall per batch and
// installed, until the flow limit (200000); then the flows are flushed
// outside the timer and setup goes on.
func BenchmarkFlowSetup(b *testing.B) {
	w, _ := benchWorker(b, 2, exactUpcaller)
	limit := w.dp.FlowLimit()
	frames := flowFrames(limit)
	next := 0
	b.ReportAllocs()
	for b.Loop() {
		if next+netdev.BatchSize > limit {
			b.StopTimer()
			w.dp.FlushFlows()
			next = 0
			b.StartTimer()
		}
		for i := range w.rx {
			w.rx[i].SetLen(copy(w.rx[i].Tail(), frames[next]))
			next++
		}
		w.batch(netdev.BatchSize)
	}
	flows := float64(b.N * netdev.BatchSize)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/flows, "ns/flow")
	b.ReportMetric(flows/b.Elapsed().Seconds(), "flows/s")
}
