package datapath

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govs/govs/netdev"
)

// pmdPoll is GOVS_PMD_POLL=1: one goroutine polls the receive queues of
// every port that can be polled (netdev.Poller) in turn, instead of a
// goroutine per queue waiting to be woken, as OVS's PMD threads poll
// their queues. Between rounds that find nothing it lets the process's
// other goroutines run (runtime.Gosched); it never sleeps, so it takes a
// CPU whether traffic flows or not: it is for a switch confined to CPUs
// of its own (taskset), and pmd-cpu-mask does not place it. Off by
// default: see README's Performance section for what it measured.
var pmdPoll = os.Getenv("GOVS_PMD_POLL") == "1"

// poller is the polling goroutine's state.
type poller struct {
	dp  *Datapath
	mu  sync.Mutex
	ws  []*worker     // guarded by mu; the polling goroutine copies it
	gen atomic.Uint64 // bumped by mu's holders on every change of ws
	// stopped is set, under mu, when the poller has exited.
	stopped bool
	wake    chan struct{}
}

// polled adds w to the datapath's poller (started by the first) if its
// queue can be polled, and reports whether it did. The worker's goroutine
// then waits on w.unpolled.
func (dp *Datapath) polled(w *worker) bool {
	if !dp.pollMode {
		return false
	}
	if _, ok := w.rxq.(netdev.Poller); !ok {
		return false
	}
	dp.pollOnce.Do(func() {
		dp.poll = &poller{dp: dp, wake: make(chan struct{}, 1)}
		go dp.poll.run()
	})
	pl := dp.poll
	w.rxN = 1
	w.unpolled = make(chan struct{})
	pl.mu.Lock()
	if pl.stopped {
		// The datapath closed before this worker started.
		close(w.unpolled)
	} else {
		pl.ws = append(pl.ws, w)
		pl.gen.Add(1)
	}
	pl.mu.Unlock()
	select {
	case pl.wake <- struct{}{}:
	default:
	}
	return true
}

// run polls the workers' queues until the datapath closes.
func (pl *poller) run() {
	var ws []*worker
	gen := ^uint64(0)
	for {
		if pl.gen.Load() != gen {
			pl.mu.Lock()
			clear(ws) // no removed worker kept reachable
			ws, gen = append(ws[:0], pl.ws...), pl.gen.Load()
			pl.mu.Unlock()
		}
		select {
		case <-pl.dp.stop:
			pl.mu.Lock()
			for _, w := range pl.ws {
				close(w.unpolled)
			}
			pl.ws, pl.stopped = nil, true
			pl.mu.Unlock()
			return
		default:
		}
		if len(ws) == 0 {
			select {
			case <-pl.wake:
			case <-pl.dp.stop:
			}
			continue
		}
		any := false
		for _, w := range ws {
			n, done := w.pollRx()
			any = any || n > 0
			if done {
				pl.remove(w)
			}
		}
		if !any {
			runtime.Gosched()
		}
	}
}

// remove takes w off the poller and lets its goroutine exit.
func (pl *poller) remove(w *worker) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	for i, x := range pl.ws {
		if x == w {
			pl.ws = append(pl.ws[:i:i], pl.ws[i+1:]...)
			pl.gen.Add(1)
			close(w.unpolled)
			return
		}
	}
}

// pollIdle is how many polls in a row that find nothing make a worker
// give its receive buffers back (all but one, which the next poll takes).
const pollIdle = 1024

// pollRx is one look at w's queue by the poller: what is there is
// forwarded as one batch. done says the queue is gone (closed). As the
// waiting workers do, it reads into one buffer after an idle spell and
// doubles that with each poll that fills them.
func (w *worker) pollRx() (n int, done bool) {
	w.holdRx()
	n, err := w.rxq.(netdev.Poller).Poll(w.rx[:w.rxN])
	switch {
	case n == w.rxN:
		w.rxN = min(2*w.rxN, len(w.rx))
		w.pollsIdle = 0
	case n > 0:
		w.pollsIdle = 0
	case w.pollsIdle < pollIdle:
		if w.pollsIdle++; w.pollsIdle == pollIdle {
			w.idleRx()
		}
	}
	if n = w.police(n); n > 0 {
		t1 := time.Now()
		w.batch(n)
		t2 := time.Now()
		idle := uint64(0)
		if !w.pollT.IsZero() {
			idle = uint64(t1.Sub(w.pollT))
		}
		w.stats.addSingle(&counters{idle: idle, busy: uint64(t2.Sub(t1))})
		w.pollT = t2
	}
	return n, err != nil && w.rxFailed(err)
}
