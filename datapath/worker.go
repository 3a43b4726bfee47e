package datapath

import (
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev"
)

// flowRefresh is how long a cached translation is used before the next
// packet of its flow is translated again. OVS's revalidators push every
// datapath flow's statistics into the MAC learning table about once a
// second so that active senders do not age out; translating each active
// flow again once a second does the same here, and lets time-based state
// (MAC aging) reach cached flows.
const flowRefresh = int64(time.Second)

// emcEntries is the size of each rx goroutine's exact-match cache, OVS's
// EM_FLOW_HASH_ENTRIES: 8192 entries of a key and a pointer (96 bytes),
// 768 KiB for each port that has received traffic. Each key has two
// candidate slots.
const emcEntries = 8192

// pend indexes upcalls with an int8.
var _ [127 - netdev.BatchSize]struct{}

// actionsCap is the capacity of the action buffer handed to each Upcall:
// a flood to 15 ports fits without the translation allocating.
const actionsCap = 16

// cachedFlow is one translation as the datapath caches it. It is
// immutable once built and shared by the cache and in-flight batches.
type cachedFlow struct {
	key     flow.Key
	mask    flow.Mask
	actions Actions // as translated, for dumps
	ops     []op    // actions resolved against the port table
	gen     uint64  // flow generation it was translated in
	born    int64   // clock when translated
}

// op is an Action resolved for execution: outputs to ports that do not
// exist and actions after the last output are left out.
type op struct {
	kind      ActionKind
	tpid, tci uint16
	port      *dpPort
}

type emcEntry struct {
	key flow.Key
	f   *cachedFlow
}

type txQueue struct {
	port *dpPort
	pkts []*packet.Packet
}

// worker is the rx goroutine of one port and everything it owns.
type worker struct {
	dp   *Datapath
	port *dpPort
	// detached is set by DelPort and Close: the worker forwards nothing
	// more and waits in Read for the netdev to be closed.
	detached atomic.Bool
	// busy is the flow generation of the batch being processed, 0 when
	// the worker is not in a batch (see Datapath.synchronize).
	busy atomic.Uint64
	done chan struct{} // closed when the goroutine exits

	// flowGen and nflows count the cache entries of the current
	// generation, for Stats.
	flowGen atomic.Uint64
	nflows  atomic.Int64

	// The rest is owned by the goroutine.
	rx      [netdev.BatchSize]*packet.Packet
	keys    [netdev.BatchSize]flow.Key
	flows   [netdev.BatchSize]*cachedFlow
	pend    [netdev.BatchSize]int8 // the upcall of a missed packet, -1 if none (BatchSize <= 127)
	ups     [netdev.BatchSize]Upcall
	upHash  [netdev.BatchSize]uint64
	upActs  [netdev.BatchSize]Actions
	upFlows [netdev.BatchSize]*cachedFlow
	emc     *[emcEntries]emcEntry // allocated on the first miss
	txq     []txQueue             // by port slot
	active  []int                 // slots of txq with packets in this batch
	clones  []*packet.Packet
	logRL   rateLimit
}

func newWorker(dp *Datapath, p *dpPort) *worker {
	w := &worker{dp: dp, port: p, done: make(chan struct{})}
	for i := range w.upActs {
		w.upActs[i] = make(Actions, 0, actionsCap)
	}
	return w
}

// quiescent reports whether the worker is not in a batch older than g.
func (w *worker) quiescent(g uint64) bool {
	if b := w.busy.Load(); b == 0 || b >= g {
		return true
	}
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// enter publishes the generation of the batch about to be processed and
// returns it. Publishing before re-checking closes the race with a
// concurrent bump: either the bump is seen here, or the bumper sees busy.
func (w *worker) enter() uint64 {
	for {
		g := w.dp.gen.Load()
		w.busy.Store(g)
		if w.dp.gen.Load() == g {
			return g
		}
	}
}

func (w *worker) leave() { w.busy.Store(0) }

func (w *worker) run() {
	defer func() {
		close(w.done)
		w.dp.workerExited(w)
	}()
	for i := range w.rx {
		w.rx[i] = packet.New()
	}
	backoff := time.Duration(0)
	for {
		n, err := w.port.dev.Read(w.rx[:])
		if n > 0 {
			w.batch(n)
			backoff = 0
		}
		if err == nil {
			continue
		}
		if errors.Is(err, netdev.ErrClosed) || errors.Is(err, netdev.ErrNoDevice) {
			if !w.detached.Load() {
				w.dp.log.Warnf("port %s: %v; no longer receiving", w.port.name, err)
			}
			return
		}
		w.port.rxErrors.Add(1)
		if ok, sup := w.logRL.allow(); ok {
			w.dp.log.Warnf("port %s: receive failed: %v (%d similar messages suppressed)", w.port.name, err, sup)
		}
		// Back off on persistent errors rather than spin.
		backoff = min(max(2*backoff, time.Millisecond), 100*time.Millisecond)
		time.Sleep(backoff)
	}
}

// batch forwards the n packets in w.rx.
func (w *worker) batch(n int) {
	gen := w.enter()
	defer w.leave()
	defer w.resetRx(n)
	if w.detached.Load() {
		return
	}
	dp := w.dp
	table := dp.ports.Load() // only after enter: see DelPort
	now := dp.clock()
	if w.flowGen.Load() != gen {
		w.flowGen.Store(gen)
		w.nflows.Store(0)
	}

	var rxBytes, runts uint64
	nup := 0
	for i := 0; i < n; i++ {
		p := w.rx[i]
		p.InPort = w.port.no
		rxBytes += uint64(p.Len())
		w.flows[i], w.pend[i] = nil, -1
		k := &w.keys[i]
		if !flow.Extract(p.Data(), w.port.no, k) {
			runts++
			continue
		}
		h := k.Hash()
		if f := w.lookup(k, h, gen, now); f != nil {
			w.flows[i] = f
			continue
		}
		j := 0
		for j < nup && w.ups[j].Key != *k {
			j++
		}
		if j == nup {
			u := &w.ups[j]
			u.Key, u.Packet, u.Actions, u.Mask = *k, p, w.upActs[j][:0], flow.Mask{}
			w.upHash[j] = h
			nup++
		}
		w.pend[i] = int8(j)
	}

	var hit, missed, lost uint64
	upcalled := false
	if nup > 0 {
		if box := dp.upcaller.Load(); box != nil {
			box.u.Upcall(w.ups[:nup])
			upcalled = true
			for j := 0; j < nup; j++ {
				u := &w.ups[j]
				f := newCachedFlow(u, gen, now, table)
				w.upFlows[j] = f
				w.insert(&u.Key, w.upHash[j], f, gen)
				u.Packet, u.Actions = nil, nil
			}
		}
	}
	var seen [netdev.BatchSize]bool // upcalls whose first packet was counted as a miss
	for i := 0; i < n; i++ {
		f := w.flows[i]
		if f != nil {
			hit++
		} else if j := w.pend[i]; j >= 0 {
			switch {
			case !upcalled:
				lost++
				continue
			case !seen[j]:
				seen[j] = true
				missed++
			default:
				// A later packet of a flow translated in this batch:
				// OVS finds the just-installed flow and counts a hit.
				hit++
			}
			f = w.upFlows[j]
		} else {
			continue
		}
		w.execute(w.rx[i], f)
	}
	w.flush()

	if hit > 0 {
		dp.hit.Add(hit)
	}
	if missed > 0 {
		dp.missed.Add(missed)
	}
	if lost > 0 {
		dp.lost.Add(lost)
	}
	if runts > 0 {
		w.port.rxErrors.Add(runts)
	}
	// Counted last, so that a test seeing the count sees the effects.
	w.port.rxBytes.Add(rxBytes)
	w.port.rxPackets.Add(uint64(n))
}

// resetRx readies the receive buffers for the next Read and returns the
// copies made for this batch to the pool.
func (w *worker) resetRx(n int) {
	for i := 0; i < n; i++ {
		w.rx[i].Reset()
		w.flows[i] = nil
	}
	for i, c := range w.clones {
		w.dp.pool.Put(c)
		w.clones[i] = nil
	}
	w.clones = w.clones[:0]
}

func newCachedFlow(u *Upcall, gen uint64, now int64, table *portTable) *cachedFlow {
	f := &cachedFlow{key: u.Key, mask: u.Mask, gen: gen, born: now}
	if len(u.Actions) == 0 {
		return f
	}
	f.actions = slices.Clone(u.Actions)
	ops := make([]op, 0, len(u.Actions))
	for _, a := range u.Actions {
		switch a.Kind {
		case ActionOutput:
			if p := table.byNo[a.Port]; p != nil {
				ops = append(ops, op{kind: ActionOutput, port: p})
			}
		case ActionPushVLAN, ActionPopVLAN:
			ops = append(ops, op{kind: a.Kind, tpid: a.TPID, tci: a.TCI})
		}
	}
	for len(ops) > 0 && ops[len(ops)-1].kind != ActionOutput {
		ops = ops[:len(ops)-1]
	}
	f.ops = ops
	return f
}

const emcMask = emcEntries - 1

func (w *worker) lookup(k *flow.Key, h uint64, gen uint64, now int64) *cachedFlow {
	if w.emc == nil {
		return nil
	}
	for _, i := range [2]uint64{h & emcMask, h >> 32 & emcMask} {
		e := &w.emc[i]
		if e.f != nil && e.key == *k {
			if e.f.gen == gen && now-e.f.born < flowRefresh {
				return e.f
			}
			return nil
		}
	}
	return nil
}

// insert caches f in one of k's two slots: the one holding k already, else
// an empty or stale one, else the older.
func (w *worker) insert(k *flow.Key, h uint64, f *cachedFlow, gen uint64) {
	if w.emc == nil {
		w.emc = new([emcEntries]emcEntry)
	}
	a, b := &w.emc[h&emcMask], &w.emc[h>>32&emcMask]
	var e *emcEntry
	switch {
	case a.f != nil && a.key == *k:
		e = a
	case b.f != nil && b.key == *k:
		e = b
	case a.f == nil || a.f.gen != gen:
		e = a
	case b.f == nil || b.f.gen != gen:
		e = b
	case a.f.born <= b.f.born:
		e = a
	default:
		e = b
	}
	if e.f == nil || e.f.gen != gen {
		w.nflows.Add(1)
	}
	e.key, e.f = *k, f
}

// execute applies f's actions to p. An output queues p as it is; a later
// change to the packet is made on a copy, so that what was queued stays
// as it was when output (a Write does not change a frame's bytes other
// than completing its checksum, which every copy may share).
func (w *worker) execute(p *packet.Packet, f *cachedFlow) {
	queued := false
	for i := range f.ops {
		o := &f.ops[i]
		switch o.kind {
		case ActionOutput:
			w.enqueue(o.port, p)
			queued = true
		case ActionPushVLAN:
			if queued {
				p, queued = w.clone(p), false
			}
			if !pushVLAN(p, o.tpid, o.tci) {
				return
			}
		case ActionPopVLAN:
			if queued {
				p, queued = w.clone(p), false
			}
			popVLAN(p)
		}
	}
}

func (w *worker) clone(p *packet.Packet) *packet.Packet {
	c := w.dp.pool.Get()
	if extra := p.Len() - len(c.Tail()); extra > 0 {
		c.Push(extra)
	}
	c.SetLen(copy(c.Tail(), p.Data()))
	c.Offload, c.InPort = p.Offload, p.InPort
	w.clones = append(w.clones, c)
	return c
}

func (w *worker) enqueue(port *dpPort, p *packet.Packet) {
	if port.slot >= len(w.txq) {
		w.txq = append(w.txq, make([]txQueue, port.slot+1-len(w.txq))...)
	}
	q := &w.txq[port.slot]
	if len(q.pkts) == 0 {
		if q.pkts == nil {
			q.pkts = make([]*packet.Packet, 0, netdev.BatchSize)
		}
		q.port = port
		w.active = append(w.active, port.slot)
	}
	q.pkts = append(q.pkts, p)
}

// flush writes every port's queued packets, one Write per BatchSize.
func (w *worker) flush() {
	for _, s := range w.active {
		q := &w.txq[s]
		for pkts := q.pkts; len(pkts) > 0; {
			m := min(len(pkts), netdev.BatchSize)
			w.write(q.port, pkts[:m])
			pkts = pkts[m:]
		}
		clear(q.pkts)
		q.pkts, q.port = q.pkts[:0], nil
	}
	w.active = w.active[:0]
}

func (w *worker) write(port *dpPort, pkts []*packet.Packet) {
	var sizes [netdev.BatchSize]int
	for i, p := range pkts {
		sizes[i] = p.Len()
	}
	port.txMu.Lock()
	n, err := port.dev.Write(pkts)
	port.txMu.Unlock()
	n = max(0, min(n, len(pkts)))
	var bytes int
	for _, s := range sizes[:n] {
		bytes += s
	}
	port.txPackets.Add(uint64(n))
	port.txBytes.Add(uint64(bytes))
	if d := len(pkts) - n; d > 0 {
		port.txDropped.Add(uint64(d))
	}
	if err != nil {
		port.txErr.Add(1)
		if ok, sup := port.errLog.allow(); ok {
			w.dp.log.Warnf("port %s: send failed: %v (%d similar messages suppressed)", port.name, err, sup)
		}
	}
}
