package datapath

import (
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govs/govs/datapath/classifier"
	"github.com/govs/govs/datapath/conntrack"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev"
)

// emcEntries is the size of each rx goroutine's exact-match cache, OVS's
// EM_FLOW_HASH_ENTRIES: 8192 entries of a key and a pointer (96 bytes),
// 768 KiB for each port that has received traffic. Each key has two
// candidate slots.
const emcEntries = 8192

// emcMinRx is how many frames a port receives before its worker gets an
// exact-match cache. OVS has one cache per pmd thread; govs has one per
// port, and 200 ports that see a few frames each (router solicitations,
// MLD reports) would hold 150 MiB of caches. Until then the classifier
// serves, which at such rates costs nothing.
const emcMinRx = 256

// emcInsertInvProb: once both of a key's slots are taken, a megaflow hit
// replaces one of them only one time in this many, as OVS's default
// other_config:emc-insert-inv-prob, so that a churn of short flows does
// not evict the long ones.
const emcInsertInvProb = 100

// rankInterval is how often a worker re-sorts its classifier's subtables
// by hits (OVS's DPCLS_OPTIMIZATION_INTERVAL).
const rankInterval = int64(time.Second)

// upcall indexes and per-batch flow slots fit in a uint8.
var _ [255 - netdev.BatchSize]struct{}

// maxRecircDepth is how many times a packet may recirculate within one
// pass through the datapath, as OVS's MAX_RECIRC_DEPTH: a translation
// that loops drops the packet instead of the worker's time.
const maxRecircDepth = 6

// actionsCap is the capacity of the action buffer handed to each Upcall:
// a flood to 15 ports fits without the translation allocating.
const actionsCap = 16

// megaflow is one installed datapath flow: a masked match in its worker's
// classifier, the actions for the packets it matches, and statistics.
// Its match includes the input port, so only its port's worker forwards
// with it; the revalidator changes its actions or kills it.
type megaflow struct {
	// The fields a hit touches come first, to share cache lines.

	acts atomic.Pointer[flowActions]
	// dead is set once the flow is removed from its classifier: an
	// exact-match cache entry that still points to it is a miss.
	dead atomic.Bool
	// installed: the flow went into the classifier (unlike the flows a
	// batch executes without installing them, when the table is full).
	installed bool
	// bslot and bno place the flow in the batch being processed; owned
	// by the worker.
	bslot uint8
	bno   uint64

	// Statistics, written only by the owning worker (so Load+Store, not
	// Add), read by dumps and the revalidator. used is the datapath clock
	// of the last packet plus one, 0 if none.
	packets, bytes atomic.Uint64
	used           atomic.Int64
	tcpFlags       atomic.Uint32
	// revalActive: packets grew between the revalidator's last two
	// passes; owned by the revalidator (here, in tcpFlags' padding, to
	// keep the flow in a 1152-byte size class).
	revalActive bool

	// seq is the revalidation sequence number the actions were
	// translated at (see Datapath.RequestRevalidation).
	seq atomic.Uint64
	// rule is the flow's classifier entry, nil once removed; guarded by
	// the worker's flowMu.
	rule *classifier.Rule[*megaflow]
	// revalPackets is packets as the last revalidation pass saw it;
	// owned by the revalidator.
	revalPackets uint64
	// revalBytes is bytes as the last pass saw it; deltaPackets and
	// deltaBytes what the flow forwarded between the last two passes.
	revalBytes               uint64
	deltaPackets, deltaBytes uint64

	// key is the key of the packet that created the flow, unmasked, as
	// the revalidator translates it again; mask is the classifier's copy,
	// shared by the flows of that mask.
	key     flow.Key
	mask    *flow.Mask
	ufid    [16]byte
	created int64 // datapath clock

	// r is the storage of rule, in the same allocation as the flow.
	r classifier.Rule[*megaflow]
}

// flowActions are a flow's actions as translated and as resolved against
// one port table. Immutable.
type flowActions struct {
	gen uint64 // the port table's; 0: not resolved
	ops []op
	// opsBuf holds ops when they fit, in the same allocation.
	opsBuf  [4]op
	actions Actions
	// meta: the ops use the packets' conntrack metadata (ct, ct_clear,
	// recirc).
	meta bool
}

// op is an Action resolved for execution: outputs to ports that do not
// exist and header changes after the last output are left out.
type op struct {
	kind      ActionKind
	tpid, tci uint16
	recirc    uint32
	cookie    uint32
	meter     uint32
	port      *dpPort
	ct        *conntrack.Action
	field     SetField
	val       [16]byte
	setMask   *[16]byte
	tnl       *tnlOp
	maxLen    uint32
	counter   *Counter
	pktLen    *pktLenOp
	hashAlg   uint8
	hashBasis uint32
}

func resolve(acts Actions, table *portTable) *flowActions {
	return resolveInto(new(flowActions), acts, table)
}

// resolveInto is resolve into fa, which must be unused and zero.
func resolveInto(fa *flowActions, acts Actions, table *portTable) *flowActions {
	fa.actions, fa.gen = acts, table.gen
	fa.ops = resolveOps(fa.opsBuf[:0], acts, table)
	fa.meta = usesMeta(fa.ops)
	return fa
}

func usesMeta(ops []op) bool {
	for i := range ops {
		switch ops[i].kind {
		case ActionCT, ActionCTClear, ActionRecirc, ActionTnlPop:
			return true
		case ActionCheckPktLen:
			if usesMeta(ops[i].pktLen.gt) || usesMeta(ops[i].pktLen.le) {
				return true
			}
		}
	}
	return false
}

func resolveOps(ops []op, acts Actions, table *portTable) []op {
	ops = ops[:0]
	for _, a := range acts {
		switch a.Kind {
		case ActionOutput:
			if p := table.byNo[a.Port]; p != nil {
				ops = append(ops, op{kind: ActionOutput, port: p})
			}
		case ActionPushVLAN, ActionPopVLAN:
			ops = append(ops, op{kind: a.Kind, tpid: a.TPID, tci: a.TCI})
		case ActionCT:
			if a.CT != nil {
				ops = append(ops, op{kind: a.Kind, ct: a.CT})
			}
		case ActionCTClear:
			ops = append(ops, op{kind: a.Kind})
		case ActionRecirc:
			ops = append(ops, op{kind: a.Kind, recirc: a.RecircID})
		case ActionHash:
			ops = append(ops, op{kind: a.Kind, hashAlg: a.HashAlg, hashBasis: a.HashBasis})
		case ActionUserspace:
			ops = append(ops, op{kind: a.Kind, cookie: a.Cookie})
		case ActionMeteredUserspace:
			ops = append(ops, op{kind: a.Kind, cookie: a.Cookie, meter: a.MeterID})
		case ActionSet:
			ops = append(ops, op{kind: a.Kind, field: a.Field, val: a.Val, setMask: a.SetMask})
		case ActionMeter:
			ops = append(ops, op{kind: a.Kind, meter: a.MeterID})
		case ActionTnlPush:
			if t := resolveTnl(a.Tnl, table); t != nil {
				ops = append(ops, op{kind: a.Kind, tnl: t})
			}
		case ActionTnlPop:
			if p := table.byNo[a.Port]; p != nil {
				ops = append(ops, op{kind: a.Kind, port: p})
			}
		case ActionTrunc:
			ops = append(ops, op{kind: a.Kind, maxLen: a.MaxLen})
		case ActionCount:
			if a.Counter != nil {
				ops = append(ops, op{kind: a.Kind, counter: a.Counter})
			}
		case ActionCheckPktLen:
			if a.PktLen != nil {
				ops = append(ops, op{kind: a.Kind, pktLen: resolvePktLen(a.PktLen, table)})
			}
		}
	}
	// Header changes after the last output are lost work; a ct (a
	// commit), a recirculation, a meter and a count (their counters) are
	// not.
	for len(ops) > 0 {
		if k := ops[len(ops)-1].kind; k == ActionOutput || k == ActionRecirc || k == ActionCT || k == ActionUserspace || k == ActionMeter ||
			k == ActionMeteredUserspace || k == ActionTnlPush || k == ActionTnlPop || k == ActionCheckPktLen || k == ActionCount {
			break
		}
		ops = ops[:len(ops)-1]
	}
	return ops
}

// actionsFor returns f's actions resolved against table, resolving them
// anew (once per flow per port table change) if they were resolved
// against another.
func (f *megaflow) actionsFor(table *portTable) *flowActions {
	for {
		fa := f.acts.Load()
		if fa.gen == table.gen {
			return fa
		}
		// The revalidator may store new actions meanwhile: keep those.
		if f.acts.CompareAndSwap(fa, resolve(fa.actions, table)) {
			return f.acts.Load()
		}
	}
}

func (f *megaflow) usedAt() (int64, bool) {
	u := f.used.Load()
	return u - 1, u != 0
}

type emcEntry struct {
	key flow.Key
	f   *megaflow
}

type txQueue struct {
	port *dpPort
	pkts []*packet.Packet
}

// counters are one worker's lookup counters, as pmd-stats-show prints
// them. Written by the worker only.
type counters struct {
	rx, emcHits, megaHits, lookups, missed, lost uint64
	recirc                                       uint64 // packets recirculated
	sentPkts, sentBatches                        uint64
	idle, busy                                   uint64 // nanoseconds
}

func (c *counters) add(o *counters) {
	c.rx += o.rx
	c.emcHits += o.emcHits
	c.megaHits += o.megaHits
	c.lookups += o.lookups
	c.missed += o.missed
	c.lost += o.lost
	c.recirc += o.recirc
	c.sentPkts += o.sentPkts
	c.sentBatches += o.sentBatches
	c.idle += o.idle
	c.busy += o.busy
}

func (c *counters) sub(o *counters) {
	c.rx -= o.rx
	c.emcHits -= o.emcHits
	c.megaHits -= o.megaHits
	c.lookups -= o.lookups
	c.missed -= o.missed
	c.lost -= o.lost
	c.recirc -= o.recirc
	c.sentPkts -= o.sentPkts
	c.sentBatches -= o.sentBatches
	c.idle -= o.idle
	c.busy -= o.busy
}

// atomicCounters publishes counters; the worker adds a batch's worth at
// a time.
type atomicCounters struct {
	rx, emcHits, megaHits, lookups, missed, lost atomic.Uint64
	recirc                                       atomic.Uint64
	sentPkts, sentBatches                        atomic.Uint64
	idle, busy                                   atomic.Uint64
}

func (a *atomicCounters) load() counters {
	return counters{
		rx: a.rx.Load(), emcHits: a.emcHits.Load(), megaHits: a.megaHits.Load(), lookups: a.lookups.Load(),
		missed: a.missed.Load(), lost: a.lost.Load(), recirc: a.recirc.Load(), sentPkts: a.sentPkts.Load(), sentBatches: a.sentBatches.Load(),
		idle: a.idle.Load(), busy: a.busy.Load(),
	}
}

// addSingle adds c; only one goroutine may call it, so it needs no
// read-modify-write instructions.
func (a *atomicCounters) addSingle(c *counters) {
	add := func(v *atomic.Uint64, d uint64) {
		if d != 0 {
			v.Store(v.Load() + d)
		}
	}
	add(&a.rx, c.rx)
	add(&a.emcHits, c.emcHits)
	add(&a.megaHits, c.megaHits)
	add(&a.lookups, c.lookups)
	add(&a.missed, c.missed)
	add(&a.lost, c.lost)
	add(&a.recirc, c.recirc)
	add(&a.sentPkts, c.sentPkts)
	add(&a.sentBatches, c.sentBatches)
	add(&a.idle, c.idle)
	add(&a.busy, c.busy)
}

// worker is the rx goroutine of one port and everything it owns: the
// port's exact-match cache and megaflow classifier (every megaflow
// matches the input port, so each port's flows are its own).
type worker struct {
	dp   *Datapath
	port *dpPort
	// rxq is the receive queue the worker reads, queue its number: the
	// port itself (queue 0) unless the port is a netdev.RxQueuer.
	rxq   netdev.Reader
	queue int
	// detached is set by DelPort and Close: the worker forwards nothing
	// more and waits in Read for the netdev to be closed.
	detached atomic.Bool
	// busy is the epoch of the batch being processed, 0 when the worker
	// is not in a batch (see Datapath.synchronize).
	busy atomic.Uint64
	done chan struct{} // closed when the goroutine exits

	flowMu sync.Mutex // guards cls and every flow's rule
	cls    classifier.Classifier[*megaflow]

	stats atomicCounters
	// base is what pmd-stats-clear subtracts; guarded by dp.mu.
	base counters
	// usage is the busy time per interval, for pmd-rxq-show.
	usage rxqUsage
	// pin is the worker's CPU under pmd-cpu-mask (pmd.go).
	pin pmdPin

	// The rest is owned by the goroutine.
	c        counters                         // this batch's
	rx       [netdev.BatchSize]*packet.Packet // rx[:rxN] are held, the rest may be nil
	rxN      int                              // frames the next Read asks for
	keys     [netdev.BatchSize]flow.Key
	hashes   [netdev.BatchSize]uint64
	flows    [netdev.BatchSize]*megaflow
	nocount  [netdev.BatchSize]bool // the packet that was upcalled: OVS leaves it out of flow stats
	misses   [netdev.BatchSize]uint8
	pend     [netdev.BatchSize]uint8 // the upcall of a missed packet
	ups      [netdev.BatchSize]Upcall
	upFirst  [netdev.BatchSize]uint8
	upActs   [netdev.BatchSize]Actions
	upFlows  [netdev.BatchSize]*megaflow
	upNew    [netdev.BatchSize]bool     // upFlows[j] was installed for ups[j]
	tmp      [netdev.BatchSize]megaflow // flows executed but not installed
	tmpActs  [netdev.BatchSize]flowActions
	bflows   [netdev.BatchSize]*megaflow // the batch's distinct flows
	start    [netdev.BatchSize + 1]uint8
	order    [netdev.BatchSize]uint8
	sub      [netdev.BatchSize]*packet.Packet
	mds      [netdev.BatchSize]conntrack.Meta // sub's conntrack metadata
	recActs  Actions                          // the action buffer of recirculation upcalls
	recUp    [1]Upcall                        // recircUpcall's: on its stack, the interface call moved it to the heap
	spare    []spareFlow                      // megaflows allocated ahead of installs (refill)
	tnlID    uint16                           // IPv4 ID of the next encapsulated packet
	bno      uint64
	sink     uint32                // keeps loads made only to start cache misses
	emc      *[emcEntries]emcEntry // allocated on a miss after emcMinRx frames
	rng      uint64
	lastRank int64
	txq      []txQueue // by port slot
	active   []int     // slots of txq with packets in this batch
	clones   []*packet.Packet
	logRL    rateLimit
	// tun is the in_port and tunnel metadata of the decapsulated packet
	// whose actions run, if inTun: a recirculation keeps them, as OVS's
	// keeps the packet's metadata.
	tun   tunMeta
	inTun bool
	// unpolled is closed when the poller (GOVS_PMD_POLL) lets go of
	// the worker; pollT is when its last polled batch ended, pollsIdle
	// how many polls since found nothing (up to pollIdle).
	unpolled  chan struct{}
	pollT     time.Time
	pollsIdle int
}

func newWorker(dp *Datapath, p *dpPort) *worker {
	return newQueueWorker(dp, p, p.dev, 0)
}

// newQueueWorker returns the worker of port p's receive queue i, rx.
func newQueueWorker(dp *Datapath, p *dpPort, rx netdev.Reader, i int) *worker {
	w := &worker{dp: dp, port: p, rxq: rx, queue: i, done: make(chan struct{}),
		rng: (uint64(p.no)+uint64(i)<<32)*0x9e3779b97f4a7c15 | 1}
	w.pin.core.Store(-1)
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

// enter publishes the epoch of the batch about to be processed and
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

// run reads and forwards batches until the netdev is closed. A Read that
// finds frames queued returns at once, so after a wake-up the worker
// keeps draining batch after batch while traffic is there.
//
// A port that is a netdev.ReadWaiter is waited on without receive buffers
// whenever it has been drained, so that an idle port holds none (a batch
// of them is 2 MiB); the buffers go back to the datapath's pool meanwhile.
// After a wait the worker reads one frame, and doubles the batch with each
// Read that fills it: a port woken for a frame or two (200 new ports, all
// sending router solicitations, all waiting for the upcall lock) holds a
// buffer or two, while a loaded one is back at BatchSize within five
// batches.
func (w *worker) run() {
	defer func() {
		w.release()
		close(w.done)
		w.dp.workerExited(w)
	}()
	if w.dp.polled(w) {
		<-w.unpolled
		return
	}
	rw, lazy := w.rxq.(netdev.ReadWaiter)
	w.rxN = len(w.rx)
	if lazy {
		w.rxN = 1
	}
	idle := w.idleRx
	backoff := time.Duration(0)
	t0 := time.Now()
	full := false
	for {
		w.pinSelf()
		var err error
		if lazy && !full {
			err = rw.WaitRead(idle)
			w.pinSelf()
		}
		n := 0
		if err == nil {
			w.holdRx()
			n, err = w.rxq.Read(w.rx[:w.rxN])
		}
		if full = n == w.rxN; full && lazy {
			w.rxN = min(2*w.rxN, len(w.rx))
		}
		n = w.police(n)
		t1 := time.Now()
		if n > 0 {
			w.batch(n)
			t2 := time.Now()
			w.stats.addSingle(&counters{idle: uint64(t1.Sub(t0)), busy: uint64(t2.Sub(t1))})
			t0 = t2
			backoff = 0
		}
		if err == nil {
			continue
		}
		if w.rxFailed(err) {
			return
		}
		// Back off on persistent errors rather than spin.
		backoff = min(max(2*backoff, time.Millisecond), 100*time.Millisecond)
		time.Sleep(backoff)
	}
}

// police applies the port's ingress policing to the n frames read into
// w.rx and returns how many it kept.
func (w *worker) police(n int) int {
	if pol := w.port.policer.Load(); pol != nil && n > 0 {
		kept := pol.police(w.rx[:n], n, w.dp.clock(), true)
		w.port.rxPoliced.Add(uint64(n - kept))
		n = kept
	}
	return n
}

// rxFailed takes a read's error: it reports whether the queue is gone
// (closed, or its device), which it logs unless the port was detached;
// any other error is counted and logged, rate-limited.
func (w *worker) rxFailed(err error) (gone bool) {
	if errors.Is(err, netdev.ErrClosed) || errors.Is(err, netdev.ErrNoDevice) {
		if !w.detached.Load() {
			w.dp.log.Warnf("port %s: %v; no longer receiving", w.port.name, err)
		}
		return true
	}
	w.port.rxErrors.Add(1)
	if ok, sup := w.logRL.allow(); ok {
		w.dp.log.Warnf("port %s: receive failed: %v (%d similar messages suppressed)", w.port.name, err, sup)
	}
	return false
}

// holdRx takes the receive buffers of a w.rxN batch that the worker does
// not hold from the pool.
func (w *worker) holdRx() {
	for i := range w.rx[:w.rxN] {
		if w.rx[i] == nil {
			w.rx[i] = w.dp.pool.Get()
		}
	}
}

// releaseRx returns the receive buffers to the pool.
func (w *worker) releaseRx() { w.dp.pool.PutBatch(w.rx[:]) }

// idleRx returns the receive buffers but the first to the pool, for an
// idle spell, and reads into that one until the port is busy again. The
// first is kept: the pool is a sync.Pool, which a garbage collection
// empties, and a frame's buffer (64 KiB, room for a GSO super-frame)
// allocated afresh costs its 17 pages' faults, about 50 us on these
// machines, to the first packet after the idle spell, every time a
// collection ran during it.
func (w *worker) idleRx() {
	w.dp.pool.PutBatch(w.rx[1:])
	w.rxN = 1
}

// release drops what the exiting worker holds, as dead flows and old
// port tables may keep the worker itself reachable a while.
func (w *worker) release() {
	w.releaseRx()
	w.emc = nil
	w.txq, w.active, w.clones, w.spare = nil, nil, nil, nil
	clear(w.tmp[:])
	clear(w.tmpActs[:])
	clear(w.upActs[:])
	clear(w.ups[:])
}

// batch forwards the n packets in w.rx: exact-match cache, then the
// megaflow classifier, then one upcall for all the batch's misses; then
// the packets, grouped by flow, through their flow's actions.
func (w *worker) batch(n int) {
	w.enter()
	defer w.leave()
	defer w.resetRx(n)
	if w.detached.Load() {
		return
	}
	dp := w.dp
	table := dp.ports.Load() // only after enter: see DelPort
	now := dp.clock()
	w.c = counters{rx: uint64(n)}

	var rxBytes, runts uint64
	var valid [netdev.BatchSize]bool
	var sink uint32
	for i := 0; i < n; i++ {
		p := w.rx[i]
		p.InPort = w.port.no
		rxBytes += uint64(p.Len())
		w.flows[i], w.nocount[i] = nil, false
		k := &w.keys[i]
		if !extract(p, w.port.no, k) {
			runts++
			continue
		}
		valid[i] = true
		h := k.Hash()
		w.hashes[i] = h
		if w.emc != nil {
			// Start loading the cache slots: the lookups below then
			// wait for all the batch's misses at once, not in turn.
			sink += w.emc[h&emcMask].key.InPort + w.emc[h>>32&emcMask].key.InPort
		}
	}
	w.sink = sink
	nmiss := 0
	for i := 0; i < n; i++ {
		if !valid[i] {
			continue
		}
		if f := w.emcLookup(&w.keys[i], w.hashes[i]); f != nil {
			w.flows[i] = f
			w.c.emcHits++
			continue
		}
		w.misses[nmiss] = uint8(i)
		nmiss++
	}
	if nmiss > 0 || now-w.lastRank >= rankInterval {
		nmiss = w.classify(nmiss, now)
	}
	if nmiss > 0 {
		w.upcall(nmiss, table, now)
	}
	w.execute(n, table, now)
	w.flush(table)

	w.stats.addSingle(&w.c)
	if runts > 0 {
		w.port.rxErrors.Add(runts)
	}
	// Counted last, so that a test seeing the count sees the effects.
	w.port.rxBytes.Add(rxBytes)
	w.port.rxPackets.Add(uint64(n))
	if len(w.spare) < spareFlows {
		w.refill()
	}
}

// classify looks the cache misses up in the classifier and returns how
// many are still missing, left first in w.misses.
func (w *worker) classify(nmiss int, now int64) int {
	w.flowMu.Lock()
	defer w.flowMu.Unlock()
	if now-w.lastRank >= rankInterval {
		w.cls.Rank()
		w.lastRank = now
	}
	var keys [netdev.BatchSize]*flow.Key
	var rules [netdev.BatchSize]*classifier.Rule[*megaflow]
	for j, i := range w.misses[:nmiss] {
		keys[j] = &w.keys[i]
	}
	w.c.lookups += uint64(w.cls.LookupBatch(keys[:nmiss], rules[:nmiss]))
	m := 0
	for j, i := range w.misses[:nmiss] {
		r := rules[j]
		if r == nil {
			w.misses[m] = i
			m++
			continue
		}
		w.flows[i] = r.Value
		w.c.megaHits++
		w.emcInsert(keys[j], w.hashes[i], r.Value)
	}
	return m
}

// upcall translates the batch's remaining misses, one upcall per distinct
// key, and installs a megaflow for each unless the flow table is full.
func (w *worker) upcall(nmiss int, table *portTable, now int64) {
	dp := w.dp
	box := dp.upcaller.Load()
	if box == nil {
		w.c.lost += uint64(nmiss)
		return
	}
	seq := dp.revalSeq.Load()
	nup := 0
	for _, i := range w.misses[:nmiss] {
		j := 0
		for j < nup && w.ups[j].Key != w.keys[i] {
			j++
		}
		if j == nup {
			u := &w.ups[j]
			*u = Upcall{Key: w.keys[i], Packet: w.rx[i], Actions: w.upActs[j][:0]}
			w.upFirst[j] = i
			nup++
		}
		w.pend[i] = uint8(j)
	}
	box.u.Upcall(w.ups[:nup])

	exact := !dp.megaflows.Load()
	w.flowMu.Lock()
	for j := 0; j < nup; j++ {
		u := &w.ups[j]
		f, isNew := w.install(u, w.hashes[w.upFirst[j]], exact, table, now, seq)
		if f == nil {
			f = w.tmpFlow(j, u, table)
		}
		w.upFlows[j], w.upNew[j] = f, isNew
		if cap(u.Actions) > cap(w.upActs[j]) {
			w.upActs[j] = u.Actions[:0] // the translation grew it: keep it
		}
		u.Packet, u.Actions = nil, nil
	}
	w.flowMu.Unlock()

	for _, i := range w.misses[:nmiss] {
		j := w.pend[i]
		f := w.upFlows[j]
		w.flows[i] = f
		switch {
		case !f.installed:
			// Not installed: each packet is a miss, as in OVS.
			w.c.missed++
		case w.upFirst[j] == i && w.upNew[j]:
			// The packet whose miss installed the flow: OVS executes it
			// apart, so the flow's statistics leave it out.
			w.nocount[i] = true
			w.c.missed++
		default:
			// A later packet of a flow installed in this batch.
			w.c.megaHits++
		}
	}
}

// install installs the megaflow that the translation u asks for, with
// w.flowMu held, and returns it; isNew says it was not there before. A
// flow installed meanwhile for an earlier key of this batch may cover
// u's key (the same match, other unconsulted fields): as in OVS, whose
// later misses of a batch look the classifier up again, its packets are
// megaflow hits. It returns nil when the flow table is full.
func (w *worker) install(u *Upcall, h uint64, exact bool, table *portTable, now int64, seq uint64) (f *megaflow, isNew bool) {
	dp := w.dp
	if exact {
		u.Mask = flow.Exact()
	}
	u.Mask.InPort = ^uint32(0)
	// A recirculation ID is never wildcarded: a flow for one pass must
	// not serve another.
	u.Mask.RecircID = ^uint32(0)
	if r, probes := w.cls.Lookup(&u.Key); r != nil {
		w.c.lookups += uint64(probes)
		w.emcInsert(&u.Key, h, r.Value)
		return r.Value, false
	}
	if dp.nflows.Load() >= dp.flowLimit.Load() {
		return nil, false
	}
	f, fa := w.takeSpare()
	f.key, f.created, f.installed, f.ufid = u.Key, now, true, ufid(&u.Key, &u.Mask)
	f.acts.Store(resolveInto(fa, slices.Clone(u.Actions), table))
	f.seq.Store(seq)
	f.rule, _ = w.cls.InsertInto(&f.r, &u.Key, &u.Mask, 0, f)
	f.mask = f.rule.Mask
	dp.nflows.Add(1)
	w.emcInsert(&u.Key, h, f)
	return f, true
}

// spareFlows is how many megaflows, each with its actions' storage, a
// worker that installs flows keeps allocated ahead (about 13 KiB).
const spareFlows = 8

// spareFlow is a megaflow and its actions' storage, allocated and zeroed
// by refill, unused.
type spareFlow struct {
	f  *megaflow
	fa *flowActions
}

// takeSpare returns a zero megaflow and flowActions for an install: the
// spares refill allocated if there are any.
func (w *worker) takeSpare() (*megaflow, *flowActions) {
	if n := len(w.spare); n > 0 {
		s := w.spare[n-1]
		w.spare[n-1] = spareFlow{}
		w.spare = w.spare[:n-1]
		return s.f, s.fa
	}
	if w.spare == nil {
		w.spare = make([]spareFlow, 0, spareFlows) // refill from now on
	}
	return new(megaflow), new(flowActions)
}

// refill tops up the spare megaflows of a worker that installed flows,
// once a batch's packets are on their way. The first packet of a flow
// then finds its megaflow allocated, and the heap's pages under it
// touched: a Go heap that grows takes a page fault (2-3 us on these
// virtual machines) on each fresh page, and after a flush of the flows
// the freed ones are not reused before a collection, so each first packet
// through a pipeline with recirculations took several.
func (w *worker) refill() {
	if cap(w.spare) == 0 {
		return // never installed: an idle port holds no spares
	}
	for len(w.spare) < spareFlows {
		s := spareFlow{new(megaflow), new(flowActions)}
		touchSpare(s)
		w.spare = append(w.spare, s)
	}
}

// touchSpare writes a spare's memory, which the compiler would not do
// after new() inline.
//
//go:noinline
func touchSpare(s spareFlow) {
	*s.f = megaflow{}
	*s.fa = flowActions{}
}

// tmpFlow is a flow that is executed for this batch but not installed.
func (w *worker) tmpFlow(j int, u *Upcall, table *portTable) *megaflow {
	f := &w.tmp[j]
	fa := &w.tmpActs[j]
	fa.actions, fa.gen = u.Actions, table.gen
	fa.ops = resolveOps(fa.ops, u.Actions, table)
	fa.meta = usesMeta(fa.ops)
	f.acts.Store(fa)
	return f
}

// execute runs each flow's actions on its packets, as one sub-batch per
// flow in the order of the flow's first packet; each flow's packets keep
// their order.
func (w *worker) execute(n int, table *portTable, now int64) {
	w.bno++
	nf := 0
	var cnt [netdev.BatchSize]uint8
	for i := 0; i < n; i++ {
		f := w.flows[i]
		if f == nil {
			continue
		}
		if f.bno != w.bno {
			f.bno, f.bslot = w.bno, uint8(nf)
			w.bflows[nf] = f
			nf++
		}
		cnt[f.bslot]++
	}
	if nf == 0 {
		return
	}
	w.start[0] = 0
	for j := 0; j < nf; j++ {
		w.start[j+1] = w.start[j] + cnt[j]
	}
	var pos [netdev.BatchSize]uint8
	copy(pos[:nf], w.start[:nf])
	for i := 0; i < n; i++ {
		if f := w.flows[i]; f != nil {
			w.order[pos[f.bslot]] = uint8(i)
			pos[f.bslot]++
		}
	}
	var fas [netdev.BatchSize]*flowActions
	for j := 0; j < nf; j++ {
		fas[j] = w.bflows[j].actionsFor(table)
	}
	for j := 0; j < nf; j++ {
		f := w.bflows[j]
		w.bflows[j] = nil
		idx := w.order[w.start[j]:w.start[j+1]]
		var pkts, bytes uint64
		var flags uint16
		for k, i := range idx {
			p := w.rx[i]
			w.sub[k] = p
			if !w.nocount[i] {
				pkts++
				bytes += uint64(p.Len())
				flags |= w.keys[i].TCPFlags
			}
		}
		if pkts > 0 && f.installed {
			f.packets.Store(f.packets.Load() + pkts)
			f.bytes.Store(f.bytes.Load() + bytes)
			f.used.Store(now + 1)
			if flags != 0 {
				f.tcpFlags.Store(f.tcpFlags.Load() | uint32(flags))
			}
		}
		var mds []conntrack.Meta
		if fas[j].meta {
			mds = w.mds[:len(idx)]
			clear(mds)
		}
		w.apply(fas[j].ops, w.sub[:len(idx)], mds, 0, table, now)
		clear(w.sub[:len(idx)])
	}
}

// apply applies one flow's actions to its packets. An output queues the
// packets as they are; a later change to them is made on copies, so that
// what was queued stays as it was when output (a Write does not change a
// frame's bytes other than completing its checksum, which every copy may
// share).
func (w *worker) apply(ops []op, pkts []*packet.Packet, mds []conntrack.Meta, depth int, table *portTable, now int64) {
	w.applyFrom(ops, pkts, mds, false, depth, table, now)
}

// applyFrom is apply for packets that were output before if queued.
func (w *worker) applyFrom(ops []op, pkts []*packet.Packet, mds []conntrack.Meta, queued bool, depth int, table *portTable, now int64) {
	trunc := 0 // an ActionTrunc's length for the next output
	for i := range ops {
		o := &ops[i]
		switch o.kind {
		case ActionOutput:
			for _, p := range pkts {
				switch {
				case p == nil:
				case trunc > 0 && p.Len() > trunc:
					c := w.dp.pool.Get()
					truncated(c, p, trunc)
					w.clones = append(w.clones, c)
					w.enqueue(o.port, c)
				default:
					w.enqueue(o.port, p)
				}
			}
			queued = true
			trunc = 0
		case ActionTrunc:
			trunc = int(o.maxLen)
		case ActionCount:
			countPackets(o.counter, pkts)
		case ActionPushVLAN, ActionPopVLAN, ActionSet:
			for k, p := range pkts {
				if p == nil {
					continue
				}
				if queued {
					p = w.clone(p)
					pkts[k] = p
				}
				switch {
				case o.kind == ActionSet:
					applySet(p, o.field, &o.val, o.setMask)
				case o.kind == ActionPopVLAN:
					popVLAN(p)
				case !pushVLAN(p, o.tpid, o.tci):
					pkts[k] = nil
				}
			}
			queued = false
		case ActionCT:
			var whole []*packet.Packet // fragments whose datagram this op completed
			var wholeMDs []conntrack.Meta
			family := -1 // the batch's: 1 for IPv6
			for k, p := range pkts {
				if p == nil {
					continue
				}
				if family < 0 {
					family = 0
					if etherIPv6(p.Data()) {
						family = 1
					}
				}
				if data := p.Data(); conntrack.IsFragment(data) {
					// The tracker holds a copy until the datagram is
					// whole; then its fragments go on with its state.
					// A fragment it does not take is tracked as it
					// is: invalid.
					if frags, w2, held := w.dp.ct.Defrag(now, data, o.ct.Zone, p.InPort); held {
						pkts[k] = nil
						if frags == nil {
							continue
						}
						md := mds[k]
						if w.dp.ct.ExecuteAt(now, w2, &md, o.ct, false) != nil {
							continue
						}
						for _, f := range frags {
							w.dp.ct.NATFragment(f, &md, o.ct)
							q := w.dp.pool.Get()
							q.SetLen(copy(q.Tail(), f))
							q.InPort = p.InPort
							w.clones = append(w.clones, q)
							whole, wholeMDs = append(whole, q), append(wholeMDs, md)
						}
						continue
					}
				}
				if queued && o.ct.NAT != nil {
					p = w.clone(p)
					pkts[k] = p
				}
				// The tracker refuses only what translations never
				// emit (unknown helpers): such a packet is dropped. An
				// ALG may resize the frame (an FTP address under NAT).
				d := p.Data()
				if n, err := w.dp.ct.ExecuteSized(now, d, &mds[k], o.ct, p.Offload.Flags&packet.NeedsCsum != 0); err != nil {
					pkts[k] = nil
				} else if n != len(d) {
					p.SetLen(n)
				}
			}
			// As OVS's ipf, the fragments of datagrams that did not
			// arrive whole in time go on with packets of their family,
			// as invalid (and not tracked).
			if family >= 0 && w.dp.ct.HoldsFragments() {
				for _, f := range w.dp.ct.ExpiredFragments(now, family == 1) {
					q := w.dp.pool.Get()
					q.SetLen(copy(q.Tail(), f.Frame))
					q.InPort = f.InPort
					w.clones = append(w.clones, q)
					whole, wholeMDs = append(whole, q), append(wholeMDs, conntrack.Meta{State: conntrack.StateInvalid})
				}
			}
			if len(whole) > 0 {
				w.apply(ops[i+1:], whole, wholeMDs, depth, table, now)
			}
			if o.ct.NAT != nil {
				queued = false
			}
		case ActionCTClear:
			clear(mds)
		case ActionUserspace, ActionMeteredUserspace:
			box := w.dp.upcaller.Load()
			if box == nil {
				break
			}
			h, ok := box.u.(UserspaceHandler)
			if !ok {
				break
			}
			up := pkts
			if o.kind == ActionMeteredUserspace {
				var scratch [64]*packet.Packet
				up = w.dp.metered(o.meter, pkts, scratch[:], now)
			}
			for _, p := range up {
				if p != nil {
					h.Userspace(o.cookie, p)
				}
			}
		case ActionRecirc:
			for k, p := range pkts {
				if p != nil {
					w.recirc(p, &mds[k], o.recirc, depth+1, table, now)
				}
			}
			queued = true
		case ActionHash:
			// Metadata only: a packet already output keeps its frame,
			// and its copy in the queue its dp_hash, unread.
			for _, p := range pkts {
				if p != nil {
					setHash(p, o.hashAlg, o.hashBasis)
				}
			}
		case ActionMeter:
			w.dp.meter(o.meter, pkts, now)
		case ActionTnlPush:
			w.tnlPush(o.tnl, pkts, depth, table, now)
		case ActionTnlPop:
			w.tnlPopBatch(o.port, pkts, queued, depth+1, table, now)
			queued = true
		case ActionCheckPktLen:
			w.checkPktLen(o.pktLen, pkts, mds, queued, depth, table, now)
			return
		}
	}
}

// recirc sends p back through the lookup with recirculation ID id and its
// conntrack metadata md in its key, and executes the flow it finds (or
// the upcall's translation) on it: OVS's recirculation, one packet at a
// time, as the ct actions before it run.
func (w *worker) recirc(p *packet.Packet, md *conntrack.Meta, id uint32, depth int, table *portTable, now int64) {
	if depth > maxRecircDepth {
		w.dp.recircDrops.Add(1)
		return
	}
	w.c.recirc++
	var k flow.Key
	in := w.port.no
	if w.inTun {
		in = w.tun.inPort
	}
	if !extract(p, in, &k) {
		return
	}
	if w.inTun {
		w.tun.restore(&k)
	}
	k.RecircID, k.DpHash, k.SkbPriority = id, p.DpHash, p.SkbPriority
	setCtKey(&k, md)
	w.reenter(p, &k, md, depth, table, now)
}

// tunMeta is what a recirculation keeps of a decapsulated packet's key.
type tunMeta struct {
	inPort             uint32
	id                 uint64
	src, dst           [16]byte
	flags, tpSrc, tpDs uint16
	tos, ttl, optsLen  uint8
	gbpFlags           uint8
	gbpID              uint16
	opts               [flow.TunOptsMax]byte
}

// tunnelMeta returns k's in_port and tunnel metadata, and whether k has
// any (a decapsulated packet's key always has an outer destination).
func tunnelMeta(k *flow.Key) (tunMeta, bool) {
	if k.TunDst == ([16]byte{}) && k.TunFlags == 0 {
		return tunMeta{}, false
	}
	return tunMeta{inPort: k.InPort, id: k.TunID, src: k.TunSrc, dst: k.TunDst, flags: k.TunFlags, tpSrc: k.TunTpSrc,
		tpDs: k.TunTpDst, tos: k.TunTOS, ttl: k.TunTTL, optsLen: k.TunOptsLen, gbpFlags: k.TunGBPFlags, gbpID: k.TunGBPID,
		opts: k.TunOpts}, true
}

func (t *tunMeta) restore(k *flow.Key) {
	k.TunID, k.TunSrc, k.TunDst, k.TunFlags = t.id, t.src, t.dst, t.flags
	k.TunTpSrc, k.TunTpDst, k.TunTOS, k.TunTTL = t.tpSrc, t.tpDs, t.tos, t.ttl
	k.TunOptsLen, k.TunOpts = t.optsLen, t.opts
	k.TunGBPFlags, k.TunGBPID = t.gbpFlags, t.gbpID
}

// reenter looks up (or translates) the flow of key k, of a packet p that
// is recirculated or was decapsulated, and executes it on p.
func (w *worker) reenter(p *packet.Packet, kp *flow.Key, md *conntrack.Meta, depth int, table *portTable, now int64) {
	k := *kp
	h := k.Hash()
	f := w.emcLookup(&k, h)
	if f != nil {
		w.c.emcHits++
	} else {
		w.flowMu.Lock()
		r, probes := w.cls.Lookup(&k)
		w.c.lookups += uint64(probes)
		if r != nil {
			f = r.Value
			w.c.megaHits++
			w.emcInsert(&k, h, f)
		}
		w.flowMu.Unlock()
	}
	if f == nil {
		if f = w.recircUpcall(p, &k, h, table, now); f == nil {
			w.c.lost++
			return
		}
	} else if f.installed {
		f.packets.Store(f.packets.Load() + 1)
		f.bytes.Store(f.bytes.Load() + uint64(p.Len()))
		f.used.Store(now + 1)
		if k.TCPFlags != 0 {
			f.tcpFlags.Store(f.tcpFlags.Load() | uint32(k.TCPFlags))
		}
	}
	pk := [1]*packet.Packet{p}
	mdv := [1]conntrack.Meta{*md}
	if m, ok := tunnelMeta(&k); ok {
		prev, prevIn := w.tun, w.inTun
		w.tun, w.inTun = m, true
		w.apply(f.actionsFor(table).ops, pk[:], mdv[:], depth, table, now)
		w.tun, w.inTun = prev, prevIn
		return
	}
	w.apply(f.actionsFor(table).ops, pk[:], mdv[:], depth, table, now)
}

// recircUpcall translates a recirculated packet's key and installs the
// flow; nil if there is no upcaller.
func (w *worker) recircUpcall(p *packet.Packet, k *flow.Key, h uint64, table *portTable, now int64) *megaflow {
	dp := w.dp
	box := dp.upcaller.Load()
	if box == nil {
		return nil
	}
	if w.recActs == nil {
		w.recActs = make(Actions, 0, actionsCap)
	}
	seq := dp.revalSeq.Load()
	u := &w.recUp[0]
	*u = Upcall{Key: *k, Packet: p, Actions: w.recActs[:0]}
	box.u.Upcall(w.recUp[:])
	w.c.missed++
	w.flowMu.Lock()
	f, _ := w.install(u, h, !dp.megaflows.Load(), table, now, seq)
	w.flowMu.Unlock()
	if f == nil {
		// The table is full: execute without installing.
		f = &megaflow{}
		f.acts.Store(resolve(slices.Clone(u.Actions), table))
	}
	if cap(u.Actions) > cap(w.recActs) {
		w.recActs = u.Actions[:0]
	}
	u.Packet, u.Actions = nil, nil
	return f
}

// setCtKey puts a packet's conntrack metadata into its flow key, as OVS's
// recirculated packets carry it.
func setCtKey(k *flow.Key, md *conntrack.Meta) {
	k.CtState, k.CtZone, k.CtMark, k.CtLabel = md.State, md.Zone, md.Mark, md.Label
	if !md.OrigValid {
		return
	}
	o := &md.Orig
	k.CtNwProto, k.CtNwSrc, k.CtNwDst = o.Proto, o.Src, o.Dst
	if o.Proto == flow.IPProtoICMP || o.Proto == flow.IPProtoICMPv6 {
		// ICMP's type and code, as OVS's ct_tp_src and ct_tp_dst.
		k.CtTpSrc, k.CtTpDst = o.DstPort>>8, o.DstPort&0xff
		return
	}
	k.CtTpSrc, k.CtTpDst = o.SrcPort, o.DstPort
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

const emcMask = emcEntries - 1

func (w *worker) emcLookup(k *flow.Key, h uint64) *megaflow {
	if w.emc == nil {
		return nil
	}
	if e := &w.emc[h&emcMask]; e.f != nil && e.key == *k {
		if !e.f.dead.Load() {
			return e.f
		}
		e.f = nil
		return nil
	}
	if e := &w.emc[h>>32&emcMask]; e.f != nil && e.key == *k {
		if !e.f.dead.Load() {
			return e.f
		}
		e.f = nil
	}
	return nil
}

// emcInsert caches f for k in a free one of k's two slots, or else, one
// time in emcInsertInvProb, in place of one of their entries.
func (w *worker) emcInsert(k *flow.Key, h uint64, f *megaflow) {
	if !f.installed {
		return
	}
	if w.emc == nil {
		if w.stats.rx.Load() < w.dp.emcMinRx {
			return
		}
		w.emc = new([emcEntries]emcEntry)
	}
	a, b := &w.emc[h&emcMask], &w.emc[h>>32&emcMask]
	var e *emcEntry
	// Dead flows' entries are not looked for here (that would touch two
	// more flows on a path where the cache is full): a lookup of their
	// key frees them, or an insert replaces them.
	switch {
	case a.f == nil:
		e = a
	case b.f == nil:
		e = b
	default:
		w.rng ^= w.rng << 13
		w.rng ^= w.rng >> 7
		w.rng ^= w.rng << 17
		if w.rng%emcInsertInvProb != 0 {
			return
		}
		e = a
		if w.rng&(1<<32) != 0 {
			e = b
		}
	}
	e.key, e.f = *k, f
}

// extract fills k with p's flow key from the frame's head alone when the
// frame has an external tail (a zero-copy frame still in a guest's memory)
// and the head holds its headers, as it nearly always does.
func extract(p *packet.Packet, inPort uint32, k *flow.Key) bool {
	if p.Ext() == nil {
		return flow.Extract(p.Head(), inPort, k)
	}
	if ok, complete := flow.ExtractHead(p.Head(), p.Len(), inPort, k); complete {
		return ok
	}
	return flow.Extract(p.Data(), inPort, k)
}

// clone returns a copy of p, external tail included, that the worker
// returns to the pool after the batch.
func (w *worker) clone(p *packet.Packet) *packet.Packet {
	c := w.dp.pool.Get()
	c.CopyFrom(p)
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

// flush writes every port's queued packets, one Write per BatchSize;
// decapsulated TCP segments are coalesced first for a port that takes TSO.
func (w *worker) flush(table *portTable) {
	for _, s := range w.active {
		q := &w.txq[s]
		pkts := q.pkts
		if len(pkts) > 1 {
			if o := q.port.dev.Offloads(); o.Csum && (o.TSO4 || o.TSO6) {
				pkts = w.coalesce(pkts, offloadCaps{tso4: o.TSO4, tso6: o.TSO6}, table)
			}
		}
		for len(pkts) > 0 {
			m := min(len(pkts), netdev.BatchSize)
			w.write(q.port, pkts[:m])
			w.c.sentPkts += uint64(m)
			w.c.sentBatches++
			pkts = pkts[m:]
		}
		clear(q.pkts)
		q.pkts, q.port = q.pkts[:0], nil
	}
	w.active = w.active[:0]
}

func (w *worker) write(port *dpPort, pkts []*packet.Packet) {
	var sizes [netdev.BatchSize]int
	port.txMu.Lock()
	if pol := port.egress; pol != nil {
		// A flooded frame may be queued to other ports too: dropped
		// frames are left as they are.
		kept := pol.police(pkts, len(pkts), w.dp.clock(), false)
		port.txPoliced.Add(uint64(len(pkts) - kept))
		pkts = pkts[:kept]
	}
	for i, p := range pkts {
		sizes[i] = p.Len()
	}
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

// kill marks f removed from its classifier (which the caller did or
// does, holding the worker's flowMu). Its actions let go of the ports they
// were resolved to: an exact-match cache may keep a dead flow for long,
// and with it, otherwise, deleted ports and their workers. A batch that
// found the flow before its death resolves them again.
func (f *megaflow) kill() {
	f.rule = nil
	f.dead.Store(true)
	f.acts.Store(&flowActions{actions: f.acts.Load().actions})
}

// removeAll kills every flow of the worker and returns how many there
// were. w.flowMu must be held.
func (w *worker) removeAll() int {
	n := 0
	w.cls.All(func(r *classifier.Rule[*megaflow]) bool {
		r.Value.kill()
		n++
		return true
	})
	w.cls.Clear()
	return n
}

// etherIPv6 reports whether frame b (with at most one VLAN tag) is IPv6.
func etherIPv6(b []byte) bool {
	if len(b) < 14 {
		return false
	}
	t := binary.BigEndian.Uint16(b[12:])
	if (t == 0x8100 || t == 0x88a8) && len(b) >= 18 {
		t = binary.BigEndian.Uint16(b[16:])
	}
	return t == 0x86dd
}
