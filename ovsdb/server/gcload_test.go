package server

import (
	"sync"
	"testing"
	"time"
)

// TestGCLoad: a fast run of transactions raises the GC target, and once
// they stop the idle target comes back with the memory released; a slow
// trickle never switches.
func TestGCLoad(t *testing.T) {
	var mu sync.Mutex
	var sets []int
	released := 0
	g := &gcLoad{idlePct: 50, busyPct: 100, every: 8, window: time.Hour, idleAfter: 20 * time.Millisecond,
		setPercent: func(p int) int { mu.Lock(); sets = append(sets, p); mu.Unlock(); return 0 },
		release:    func() { mu.Lock(); released++; mu.Unlock() }}
	for i := 0; i < 8; i++ {
		g.note()
	}
	if g.isBusy() {
		t.Fatal("busy after one window: no rate yet")
	}
	for i := 0; i < 8; i++ {
		g.note()
	}
	if !g.isBusy() {
		t.Fatal("not busy after two fast windows")
	}
	deadline := time.Now().Add(10 * time.Second)
	for g.isBusy() {
		if time.Now().After(deadline) {
			t.Fatal("still busy 10 s after the load stopped")
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	if len(sets) != 2 || sets[0] != 100 || sets[1] != 50 || released != 1 {
		t.Errorf("GC percents set %v, releases %d; want [100 50], 1", sets, released)
	}
	mu.Unlock()

	slow := &gcLoad{idlePct: 50, busyPct: 100, every: 8, window: time.Nanosecond, idleAfter: time.Hour,
		setPercent: func(p int) int { t.Errorf("slow load set GC percent %d", p); return 0 }, release: func() {}}
	for i := 0; i < 64; i++ {
		slow.note()
	}
	if newGCLoad(0) != nil {
		t.Error("a gcLoad for GCPercent 0")
	}
}
