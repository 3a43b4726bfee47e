package connmgr

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestWithRateLimit(t *testing.T) {
	n := func(v int) *int { return &v }
	for _, tc := range []struct {
		rate, burst *int
		want        [2]int
	}{
		{nil, nil, [2]int{0, 0}},
		{nil, n(50), [2]int{0, 0}},
		{n(1000), nil, [2]int{1000, 250}},
		{n(1000), n(40), [2]int{1000, 40}},
		{n(10), nil, [2]int{100, 25}},
		{n(200), n(1), [2]int{200, 25}},
	} {
		c := Controller{}.WithRateLimit(tc.rate, tc.burst)
		if got := [2]int{c.RateLimit, c.BurstLimit}; got != tc.want {
			t.Errorf("rate %v burst %v: %v, want %v", tc.rate, tc.burst, got, tc.want)
		}
	}
}

// TestPinsched: a burst of packet-ins beyond the bucket waits in a queue
// as long as the bucket, the rest is dropped, and the queue drains in
// order as tokens come back (the clock is the test's).
func TestPinsched(t *testing.T) {
	var got []byte
	p := newPinsched(100, 25, func(b []byte) error {
		got = append(got, b[0])
		return nil
	})
	defer p.stop()
	start := p.last
	var clock atomic.Int64 // since start; a drain timer may read it
	p.now = func() time.Time { return start.Add(time.Duration(clock.Load())) }
	for i := range 100 {
		p.submit([]byte{byte(i)})
	}
	p.mu.Lock()
	counts := [3]uint64{p.sent, p.queued, p.dropped}
	p.mu.Unlock()
	if counts != [3]uint64{25, 25, 50} {
		t.Fatalf("sent, queued, dropped: %v, want 25, 25, 50", counts)
	}
	clock.Add(int64(100 * time.Millisecond)) // 10 tokens
	p.drain()
	clock.Add(int64(time.Second))
	p.drain()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) != 0 || len(got) != 50 {
		t.Fatalf("%d sent, %d still queued, want 50 and 0", len(got), len(p.queue))
	}
	for i := 1; i < len(got); i++ {
		if got[i] != got[i-1]+1 {
			t.Fatalf("out of order: %v", got)
		}
	}
}
