package server

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govs/govs/ovsdb/jsonrpc"
)

// The server runs with a low garbage-collection target (ovsdb's main sets
// GOGC 50) so that its small heap stays small at rest. Under a sustained
// load of transactions that target made a collection every 250 or so
// transactions (the heap goal's floor is 4 MB scaled by GOGC): 10 clients
// spent a fifth of the server's CPU collecting. While the server commits
// fast, gcLoad raises the target to Go's default, and restores it once
// the load is gone, returning the grown heap to the system (a collection,
// as after a large message). Only a sustained rate switches: ovn-nbctl's
// calls come nowhere near it.
type gcLoad struct {
	idlePct, busyPct int           // GC percents
	every            uint64        // transactions between two looks at the rate
	window           time.Duration // busy if every transactions took less
	idleAfter        time.Duration // idle once fewer than every in this long
	setPercent       func(int) int // debug.SetGCPercent
	release          func()        // jsonrpc.ReleaseMemory

	n atomic.Uint64 // transactions so far

	mu    sync.Mutex
	last  time.Time // guarded by mu: when n last reached a multiple of every
	busy  bool      // guarded by mu
	seen  uint64    // guarded by mu: n when the idle check was armed
	timer *time.Timer
}

// newGCLoad returns a gcLoad for a process whose GC percent is idle, or
// nil (nothing to do) if idle is 0.
func newGCLoad(idle int) *gcLoad {
	if idle <= 0 || idle >= 100 {
		return nil
	}
	return &gcLoad{idlePct: idle, busyPct: 100, every: 1024, window: 100 * time.Millisecond,
		idleAfter: time.Second, setPercent: debug.SetGCPercent, release: jsonrpc.ReleaseMemory}
}

// note counts a transaction; every g.every it looks at the rate.
func (g *gcLoad) note() {
	if g == nil {
		return
	}
	n := g.n.Add(1)
	if n%g.every != 0 {
		return
	}
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	fast := !g.last.IsZero() && now.Sub(g.last) < g.window
	g.last = now
	if fast && !g.busy {
		g.busy = true
		g.setPercent(g.busyPct)
		g.seen = n
		g.timer = time.AfterFunc(g.idleAfter, g.check)
	}
}

// check runs idleAfter after the load began or was last seen: it
// restores the idle target if the load is gone.
func (g *gcLoad) check() {
	n := g.n.Load()
	g.mu.Lock()
	defer g.mu.Unlock()
	if n-g.seen >= g.every {
		g.seen = n
		g.timer.Reset(g.idleAfter)
		return
	}
	g.busy = false
	g.setPercent(g.idlePct)
	g.release()
}

// isBusy reports whether the busy target is in force.
func (g *gcLoad) isBusy() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.busy
}
