package datapath

import (
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
func benchWorker(b *testing.B, n int, u Upcaller) (*worker, []*sinkPort) {
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
	port := dp.ports.Load().byNo[1]
	w := newWorker(dp, port)
	for i := range w.rx {
		w.rx[i] = packet.New()
	}
	return w, sinks
}

// BenchmarkForward is the cached path: a batch of 32 frames of 8 flows,
// key extraction, cache lookup, and one Write.
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
