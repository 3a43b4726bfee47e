package datapath

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/packet"
)

// passed counts the non-nil packets.
func passed(pkts []*packet.Packet) int {
	n := 0
	for _, p := range pkts {
		if p != nil {
			n++
		}
	}
	return n
}

func TestMeterRun(t *testing.T) {
	ms := int64(time.Millisecond)
	type step struct {
		at      int64
		n, want int
	}
	for _, tc := range []struct {
		name  string
		cfg   MeterConfig
		size  int
		steps []step
	}{
		// 8000 kbit/s is 1000 bytes per ms; an 8 kbit burst is 1000
		// bytes: frames of 500 bytes (the whole frame counts).
		{"kbps", MeterConfig{Bands: []MeterBand{{Rate: 8000, Burst: 8}}}, 500,
			[]step{{0, 3, 2}, {0, 1, 0}, {ms, 3, 2}, {ms + ms/2, 2, 1}, {100 * ms, 5, 2}}},
		// No burst: a second's worth, 1000 kbit = 250 frames of 500.
		{"default burst", MeterConfig{Bands: []MeterBand{{Rate: 1000}}}, 500,
			[]step{{0, 251, 250}, {0, 1, 0}}},
		// 1000 packets/s with bursts of 10 packets.
		{"pktps", MeterConfig{PktPS: true, Bands: []MeterBand{{Rate: 1000, Burst: 10}}}, 60,
			[]step{{0, 11, 10}, {ms, 3, 1}, {2 * ms, 1, 1}, {1000 * ms, 20, 10}}},
		// Two bands: the tighter drops.
		{"two bands", MeterConfig{PktPS: true, Bands: []MeterBand{{Rate: 1000, Burst: 10}, {Rate: 100, Burst: 2}}}, 60,
			[]step{{0, 5, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := int64(0)
			dp := newDatapath(nil, func() int64 { return now })
			defer dp.Close()
			if err := dp.MeterSet(7, tc.cfg); err != nil {
				t.Fatal(err)
			}
			var in, dropped uint64
			for i, st := range tc.steps {
				now = st.at
				got := 0
				for left := st.n; left > 0; left -= 32 {
					pkts := frames(min(left, 32), tc.size)
					dp.meter(7, pkts, now)
					got += passed(pkts)
				}
				if got != st.want {
					t.Fatalf("step %d: %d of %d passed, want %d", i, got, st.n, st.want)
				}
				in += uint64(st.n)
				dropped += uint64(st.n - st.want)
			}
			s, ok := dp.MeterGet(7)
			if !ok {
				t.Fatal("meter 7 is gone")
			}
			var bandDrops uint64
			for _, b := range s.Bands {
				bandDrops += b.Packets
			}
			if s.Packets != in || s.Bytes != in*uint64(tc.size) || bandDrops != dropped {
				t.Errorf("stats %+v: want %d packets, %d bytes, %d dropped", s, in, in*uint64(tc.size), dropped)
			}
		})
	}
}

func TestMeterSetErrors(t *testing.T) {
	dp := newDatapath(nil, nil)
	defer dp.Close()
	for _, tc := range []struct {
		id   uint32
		cfg  MeterConfig
		want error
	}{
		{MaxMeters, MeterConfig{Bands: []MeterBand{{Rate: 1}}}, ErrMeterID},
		{1, MeterConfig{Bands: make([]MeterBand, MaxMeterBands+1)}, ErrMeterBands},
		{1, MeterConfig{Bands: []MeterBand{{Rate: 0}}}, ErrMeterRate},
	} {
		if err := dp.MeterSet(tc.id, tc.cfg); !errors.Is(err, tc.want) {
			t.Errorf("MeterSet(%d, %+v) = %v, want %v", tc.id, tc.cfg, err, tc.want)
		}
	}
	if _, ok := dp.MeterDel(3); ok {
		t.Error("deleted a meter that never was")
	}
	// A missing meter lets everything through.
	pkts := frames(3, 100)
	dp.meter(3, pkts, 0)
	if passed(pkts) != 3 {
		t.Error("a missing meter dropped packets")
	}
}

// A flow's meter action, through the workers: the meter drops what exceeds
// it, and a change of the meter applies to the installed flow at once.
func TestDatapathMeterAction(t *testing.T) {
	r := newRigClock(t, 2, func() int64 { return 0 }) // no refill
	if err := r.dp.MeterSet(5, MeterConfig{PktPS: true, Bands: []MeterBand{{Rate: 1, Burst: 3}}}); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	r.dp.SetUpcall(static(Actions{Meter(5), Output(2)}, &calls))
	for i := 0; i < 10; i++ {
		r.ports[1].Inject(frame())
	}
	r.rxDone(t, 1, 10)
	dptest.Eventually(t, "3 frames on port 2", func() bool { return r.ports[2].NumSent() == 3 })
	s, _ := r.dp.MeterGet(5)
	if s.Packets != 10 || s.Bands[0].Packets != 7 {
		t.Errorf("meter stats %+v, want 10 in, 7 dropped", s)
	}
	// A new burst of 5 for the same flow.
	if err := r.dp.MeterSet(5, MeterConfig{PktPS: true, Bands: []MeterBand{{Rate: 1, Burst: 5}}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		r.ports[1].Inject(frame())
	}
	r.rxDone(t, 1, 20)
	dptest.Eventually(t, "8 frames on port 2", func() bool { return r.ports[2].NumSent() == 8 })
	// Deleted: nothing is metered any more.
	r.dp.MeterDel(5)
	for i := 0; i < 10; i++ {
		r.ports[1].Inject(frame())
	}
	r.rxDone(t, 1, 30)
	dptest.Eventually(t, "18 frames on port 2", func() bool { return r.ports[2].NumSent() == 18 })
	if calls.Load() != 1 {
		t.Errorf("%d upcalls, want 1: meter changes need no new translation", calls.Load())
	}
	if got := (Actions{Meter(5), Output(2)}).String(); got != "meter(5),2" {
		t.Errorf("actions format as %q", got)
	}
}

// BenchmarkMeter is the meter action's hot path: batches of 32 frames of
// one flow through a kbps meter that lets them all through ("pass"), and
// through a pktps meter that drops most ("drop": the per-packet path).
func BenchmarkMeter(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  MeterConfig
	}{
		{"pass", MeterConfig{Bands: []MeterBand{{Rate: 100_000_000, Burst: 100_000_000}}}},
		{"drop", MeterConfig{PktPS: true, Bands: []MeterBand{{Rate: 1000, Burst: 1}}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			now := int64(0)
			dp := newDatapath(nil, func() int64 { return now })
			defer dp.Close()
			if err := dp.MeterSet(1, bc.cfg); err != nil {
				b.Fatal(err)
			}
			pkts := frames(32, 64)
			batch := make([]*packet.Packet, 32)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				now += int64(time.Microsecond)
				copy(batch, pkts)
				dp.meter(1, batch, now)
			}
			b.ReportMetric(float64(b.N*32)/b.Elapsed().Seconds()/1e6, "Mpps")
		})
	}
}

// userspaceCount is an Upcaller that counts its userspace actions' packets.
type userspaceCount struct {
	Upcaller
	n atomic.Int64
}

func (u *userspaceCount) Userspace(cookie uint32, p *packet.Packet) { u.n.Add(1) }

// A metered userspace action (a controller action with a meter) meters
// only the copy to userspace: every packet goes on to the output.
func TestDatapathMeteredUserspace(t *testing.T) {
	r := newRigClock(t, 2, func() int64 { return 0 }) // no refill
	if err := r.dp.MeterSet(5, MeterConfig{PktPS: true, Bands: []MeterBand{{Rate: 1, Burst: 3}}}); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	acts := Actions{MeteredUserspace(7, 5), Output(2)}
	u := &userspaceCount{Upcaller: static(acts, &calls)}
	r.dp.SetUpcall(u)
	for i := 0; i < 10; i++ {
		r.ports[1].Inject(frame())
	}
	r.rxDone(t, 1, 10)
	dptest.Eventually(t, "10 frames on port 2", func() bool { return r.ports[2].NumSent() == 10 })
	if u.n.Load() != 3 {
		t.Errorf("%d packets to userspace, want the meter's burst of 3", u.n.Load())
	}
	if got, want := acts.String(), "sample(sample=100.0%,actions(meter(5),userspace(pid=0,controller(cookie=7)))),2"; got != want {
		t.Errorf("actions format as %q, want %q", got, want)
	}
}
