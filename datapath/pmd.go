package datapath

import (
	"cmp"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// Worker placement (Open_vSwitch other_config:pmd-cpu-mask). Without a
// mask the workers are ordinary goroutines, run by whichever thread the Go
// scheduler picks. With one, each worker is given one CPU of the mask: the
// attached ports' receive queues, in port number then queue order, go
// round-robin over the mask's CPUs (OVS's pmd-rxq-assign=roundrobin; OVS
// defaults to "cycles", which balances by measured load). A worker locks
// its goroutine to an OS thread (runtime.LockOSThread) and sets that
// thread's affinity (sched_setaffinity) to its CPU when it next wakes,
// before it forwards anything; a thread already locked is moved at once.
// Removing the mask gives the threads back the affinity the process
// started with and unlocks them.

// pmdPlan is the placement in force.
type pmdPlan struct {
	gen  uint64
	cpus []int // sorted, distinct; nil: no pinning
}

// pmdPin is a worker's share of the placement.
type pmdPin struct {
	core atomic.Int32  // the CPU assigned, -1 for none
	gen  atomic.Uint64 // the plan that assigned it

	mu  sync.Mutex // guards tid, and the thread's affinity while locked
	tid int        // the locked thread's id, 0 while not locked
	// applied is the plan the worker last applied; owned by the worker.
	applied uint64
}

// SetPMDCPUs places the workers on cpus (nil or empty: no pinning),
// keeping only the CPUs the process may run on, and returns those.
func (dp *Datapath) SetPMDCPUs(cpus []int) []int {
	allowed := processCPUs()
	var use []int
	for _, c := range cpus {
		if slices.Contains(allowed, c) && !slices.Contains(use, c) {
			use = append(use, c)
		}
	}
	slices.Sort(use)
	if dp.pollMode && len(use) > 0 {
		dp.log.Warnf("pmd-cpu-mask: GOVS_PMD_POLL's poller is not placed on CPUs %v, only the ports it does not poll are", use)
	}
	dp.mu.Lock()
	defer dp.mu.Unlock()
	old := dp.pmd.Load()
	if slices.Equal(old.cpus, use) {
		return use
	}
	dp.pmd.Store(&pmdPlan{gen: old.gen + 1, cpus: use})
	dp.placeLocked()
	return use
}

// PMDCPUs returns the CPUs the workers are placed on, nil if none.
func (dp *Datapath) PMDCPUs() []int { return slices.Clone(dp.pmd.Load().cpus) }

// placeLocked assigns every attached worker its CPU under the current
// plan and moves the threads of those already locked. dp.mu is held.
func (dp *Datapath) placeLocked() {
	plan := dp.pmd.Load()
	i := 0
	for _, p := range dp.sortedPorts() {
		for _, w := range p.ws {
			core := int32(-1)
			if len(plan.cpus) > 0 {
				core = int32(plan.cpus[i%len(plan.cpus)])
				i++
			}
			w.pin.core.Store(core)
			w.pin.gen.Store(plan.gen)
			w.pin.mu.Lock()
			if w.pin.tid != 0 {
				if err := setThreadCPUs(w.pin.tid, dp.threadCPUs(core)); err != nil {
					dp.log.Warnf("port %s queue %d: moving its thread to CPU %d: %v", p.name, w.queue, core, err)
				}
			}
			w.pin.mu.Unlock()
		}
	}
}

// threadCPUs is the affinity of a worker thread assigned core: that CPU,
// or every CPU the process started with.
func (dp *Datapath) threadCPUs(core int32) []int {
	if core < 0 {
		return processCPUs()
	}
	return []int{int(core)}
}

// pinSelf applies the worker's placement to its own goroutine when it has
// changed since the worker last did; called before each wait and batch.
func (w *worker) pinSelf() {
	if w.pin.gen.Load() == w.pin.applied {
		return
	}
	// The plan is read under mu, which placeLocked holds to move a locked
	// thread after storing a new plan: read outside, a core from before a
	// change could be applied after placeLocked moved the thread, and
	// stay until the worker's next wake-up.
	w.pin.mu.Lock()
	defer w.pin.mu.Unlock()
	w.pin.applied = w.pin.gen.Load()
	core := w.pin.core.Load()
	switch {
	case core >= 0 && w.pin.tid == 0:
		runtime.LockOSThread()
		w.pin.tid = gettid()
		fallthrough
	case core >= 0:
		if err := setThreadCPUs(0, []int{int(core)}); err != nil {
			if ok, sup := w.logRL.allow(); ok {
				w.dp.log.Warnf("port %s queue %d: pinning to CPU %d: %v (%d similar messages suppressed)", w.port.name, w.queue, core, err, sup)
			}
		}
	case w.pin.tid != 0:
		setThreadCPUs(0, processCPUs())
		w.pin.tid = 0
		runtime.UnlockOSThread()
	}
}

// pmdCore is the core pmd-rxq-show and pmd-stats-show show a worker on:
// its CPU under a mask, else its port's number (each port's workers as
// one pmd thread, as before placement existed).
func (w *worker) pmdCore() int {
	if c := w.pin.core.Load(); c >= 0 {
		return int(c)
	}
	return int(w.port.no)
}

// pmdGroup is the workers pmd-rxq-show lists under one core.
type pmdGroup struct {
	core int
	ws   []*worker
}

// pmdGroups groups the attached workers by pmdCore, cores ascending; under
// a mask every CPU of it has a group, empty or not, and a group's queues
// are sorted by port name and queue id, as OVS sorts a pmd's poll list.
func (dp *Datapath) pmdGroups() []pmdGroup {
	by := map[int]*pmdGroup{}
	for _, c := range dp.pmd.Load().cpus {
		by[c] = &pmdGroup{core: c}
	}
	for _, p := range dp.sortedPorts() {
		for _, w := range p.ws {
			c := w.pmdCore()
			g := by[c]
			if g == nil {
				g = &pmdGroup{core: c}
				by[c] = g
			}
			g.ws = append(g.ws, w)
		}
	}
	gs := make([]pmdGroup, 0, len(by))
	for _, g := range by {
		slices.SortStableFunc(g.ws, func(a, b *worker) int {
			return cmp.Or(cmp.Compare(a.port.name, b.port.name), cmp.Compare(a.queue, b.queue))
		})
		gs = append(gs, *g)
	}
	slices.SortFunc(gs, func(a, b pmdGroup) int { return cmp.Compare(a.core, b.core) })
	return gs
}
