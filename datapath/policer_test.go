package datapath

import (
	"testing"
	"time"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/packet"
)

// frames returns n packets of size bytes each, numbered in their first
// byte.
func frames(n, size int) []*packet.Packet {
	out := make([]*packet.Packet, n)
	for i := range out {
		b := make([]byte, size)
		b[0] = byte(i)
		out[i] = packet.New()
		out[i].SetData(b)
	}
	return out
}

func TestPolicer(t *testing.T) {
	const batch = 32
	ms := int64(time.Millisecond)
	for _, tc := range []struct {
		name string
		cfg  Policing
		size int
		// steps: at clock at, a batch of n frames; want passed.
		steps []struct {
			at      int64
			n, want int
		}
	}{
		// 8000 kbit/s is 1000 bytes per ms; an 8 kbit burst is 1000
		// bytes; frames of 514 bytes count 500.
		{"bytes", Policing{Rate: 8000, Burst: 8}, 514, []struct {
			at      int64
			n, want int
		}{{0, 3, 2}, {0, 1, 0}, {ms, 3, 2}, {ms / 2, 1, 0}, {10 * ms, 5, 2}}},
		// Burst 0: OVS's default 8000 kbit, 1 MB: 2000 frames of 500.
		{"default burst", Policing{Rate: 1000}, 514, []struct {
			at      int64
			n, want int
		}{{0, 2001, 2000}, {0, 1, 0}}},
		// 1 kpps with the default 16 kpkts burst.
		{"kpkts", Policing{KpktsRate: 1}, 60, []struct {
			at      int64
			n, want int
		}{{0, 16001, 16000}, {ms, 2, 1}}},
		// Both: the tighter bucket decides.
		{"both", Policing{Rate: 8000, Burst: 1600, KpktsRate: 1, KpktsBurst: 1}, 114, []struct {
			at      int64
			n, want int
		}{{0, 1001, 1000}, {0, 1, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := newPolicer(tc.cfg, 0)
			pkts := frames(batch, tc.size)
			for i, st := range tc.steps {
				got := 0
				for left := st.n; left > 0; left -= batch {
					n := min(left, batch)
					for j, p := range pkts[:n] {
						b := make([]byte, tc.size)
						b[0] = byte(j)
						p.SetData(b)
					}
					kept := pol.police(pkts, n, st.at, true)
					for j := 1; j < kept; j++ {
						if pkts[j].Data()[0] <= pkts[j-1].Data()[0] {
							t.Fatalf("step %d: frames out of order", i)
						}
					}
					for _, p := range pkts[kept:n] {
						if p.Len() != 0 {
							t.Fatalf("step %d: a dropped frame was not reset", i)
						}
					}
					got += kept
				}
				if got != st.want {
					t.Fatalf("step %d: %d of %d frames passed, want %d", i, got, st.n, st.want)
				}
			}
		})
	}
}

func TestPolicingEnabled(t *testing.T) {
	if (Policing{Burst: 10, KpktsBurst: 3}).Enabled() {
		t.Error("bursts without rates police")
	}
	if !(Policing{KpktsRate: 1}).Enabled() || !(Policing{Rate: 1}).Enabled() {
		t.Error("a rate does not police")
	}
}

// The datapath polices a port's receive and, with an egress-policer, its
// transmit; a frame dropped on one port's egress still reaches the others.
func TestDatapathPolicing(t *testing.T) {
	r := newRigClock(t, 3, func() int64 { return 0 }) // no refill
	r.dp.SetUpcall(floodUpcall(3))
	// 1 kbit is 125 bytes: three frames of 35 bytes after the Ethernet
	// header; 70 bytes of egress burst: two.
	if err := r.dp.SetPolicing(1, Policing{Rate: 1, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	if err := r.dp.SetEgressPolicing(3, 1, 70); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		r.ports[1].Inject(frame())
	}
	dptest.Eventually(t, "7 frames policed", func() bool { return r.dp.PolicingDrops(1) == 7 })
	r.rxDone(t, 1, 3)
	dptest.Eventually(t, "3 frames on port 2", func() bool { return r.ports[2].NumSent() == 3 })
	if n, d := r.ports[3].NumSent(), r.dp.EgressPolicingDrops(3); n != 2 || d != 1 {
		t.Errorf("port 3 sent %d, egress-policer dropped %d; want 2, 1", n, d)
	}
	if err := r.dp.SetPolicing(9, Policing{Rate: 1}); err == nil {
		t.Error("policing a port that does not exist")
	}
}

// Policing changes while frames flow (go test -race).
func TestDatapathPolicingLive(t *testing.T) {
	r := newRig(t, 2)
	r.dp.SetUpcall(floodUpcall(2))
	stop := r.flood([]uint32{1}, func(int) []byte { return frame() })
	defer stop()
	for i := 0; i < 200; i++ {
		r.dp.SetPolicing(1, Policing{Rate: uint32(i % 3), KpktsRate: uint32(i % 2)})
		r.dp.SetEgressPolicing(2, uint64(i%2)*1000, 1000)
	}
	r.dp.SetPolicing(1, Policing{})
	r.dp.SetEgressPolicing(2, 0, 0)
	n := uint64(r.ports[2].NumSent())
	dptest.Eventually(t, "frames forwarded with policing off", func() bool { return uint64(r.ports[2].NumSent()) > n+100 })
}
