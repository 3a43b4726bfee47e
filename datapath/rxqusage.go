package datapath

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Receive-queue usage for dpif-netdev/pmd-rxq-show, as OVS measures it:
// each worker's busy time in intervals of rxqInterval, the last
// rxqIntervals of them kept (OVS's PMD_INTERVAL_LEN and PMD_INTERVAL_MAX).
// A govs worker is the receive goroutine of one queue of a port, so the
// queue's usage is the worker's: busy time over wall time, and no overhead.
const (
	rxqInterval  = 10 * time.Second
	rxqIntervals = 6
)

type rxqUsage struct {
	mu       sync.Mutex
	start    time.Time // when the current interval began
	busy     uint64    // the worker's busy ns then
	n, next  int       // intervals recorded; where the next goes
	busyNs   [rxqIntervals]uint64
	lengthNs [rxqIntervals]uint64
}

// sample closes the current interval if it is over, given the worker's
// busy time so far.
func (u *rxqUsage) sample(now time.Time, busy uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.start.IsZero() {
		u.start, u.busy = now, busy
		return
	}
	d := now.Sub(u.start)
	if d < rxqInterval {
		return
	}
	u.busyNs[u.next] = busy - min(busy, u.busy)
	u.lengthNs[u.next] = uint64(d)
	u.next = (u.next + 1) % rxqIntervals
	u.n = min(u.n+1, rxqIntervals)
	u.start, u.busy = now, busy
}

// last returns the busy and total time of the latest k intervals, or
// fewer if fewer were recorded.
func (u *rxqUsage) last(k int) (busy, total uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for i := 1; i <= min(k, u.n); i++ {
		j := (u.next - i + rxqIntervals) % rxqIntervals
		busy += u.busyNs[j]
		total += u.lengthNs[j]
	}
	return busy, total
}

// sampleUsage gives every worker's usage sampler the time; called by the
// revalidator every revalidateInterval.
func (dp *Datapath) sampleUsage(now time.Time) {
	for _, p := range dp.sortedPorts() {
		for _, w := range p.ws {
			w.usage.sample(now, w.stats.load().busy)
		}
	}
}

// PMDRxqShowCommand is `ovs-appctl dpif-netdev/pmd-rxq-show [-pmd core]
// [-secs secs] [dp]`: under pmd-cpu-mask one pmd thread per CPU of the
// mask with the queues placed on it (pmd.go), else each port's workers as
// a pmd thread whose core id is the port's number (as in
// PMDStatsShowCommand); one line per receive
// queue (options:n_rxq), each with the share of the last secs seconds
// (rounded up to whole 10 s intervals, 60 at most and by default) its
// worker spent forwarding, "NOT AVAIL" until an interval has passed. Where fewer intervals than asked for have
// passed, the share is over those (OVS counts the missing ones as idle).
// As OVS with one userspace datapath, it takes any datapath name for it.
func (dp *Datapath) PMDRxqShowCommand(args []string) (string, error) {
	core, secs := int64(-1), uint64(0)
	const maxSecs = uint64(rxqIntervals * rxqInterval / time.Second)
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "-pmd" && i+1 < len(args):
			if n, err := strconv.ParseUint(args[i+1], 10, 32); err == nil {
				core = int64(n)
			}
			i++
		case args[i] == "-secs" && i+1 < len(args):
			n, err := strconv.ParseUint(args[i+1], 10, 32)
			if err != nil {
				n = maxSecs
			}
			secs = n
			i++
		}
	}
	step := uint64(rxqInterval / time.Second)
	if secs == 0 || secs > maxSecs {
		secs = maxSecs
	} else {
		secs = (secs + step - 1) / step * step
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Displaying last %d seconds pmd usage %%\n", secs)
	for _, g := range dp.pmdGroups() {
		if core >= 0 && int64(g.core) != core {
			continue
		}
		fmt.Fprintf(&b, "pmd thread numa_id 0 core_id %d:\n  isolated : false\n", g.core)
		overhead := "NOT AVAIL"
		for _, w := range g.ws {
			busy, total := w.usage.last(int(secs / step))
			usage := "NOT AVAIL"
			if total > 0 {
				usage = fmt.Sprintf("%2.0f %%", float64(min(busy, total))*100/float64(total))
				overhead = fmt.Sprintf("%2.0f %%", 0.0)
			}
			fmt.Fprintf(&b, "  port: %-16s  queue-id: %2d (enabled)   pmd usage: %s\n", w.port.name, w.queue, usage)
		}
		if len(g.ws) > 0 {
			// OVS prints no overhead for a pmd without queues.
			fmt.Fprintf(&b, "  overhead: %s\n", overhead)
		}
	}
	return b.String(), nil
}
