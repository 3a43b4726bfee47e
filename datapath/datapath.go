// Package datapath owns the userspace packet path shared by all bridges
// (OVS's "netdev@ovs-netdev", lib/dpif-netdev.c): one rx goroutine per
// port reads batches, extracts flow keys, finds each packet's megaflow in
// a per-goroutine exact-match cache, then in the goroutine's megaflow
// classifier, else asks the Upcaller (ofproto) to translate the batch's
// misses and installs one megaflow per distinct key; then it runs each
// flow's actions on that flow's packets and writes every output port's
// share of the batch with one Write. Packets flow through without
// allocation, locks (but one per batch with misses) or logs; the port
// table and the upcaller are read through atomic pointers.
//
// A revalidator goroutine keeps the installed flows right: it removes
// flows idle longer than max-idle, and translates again, with the
// upcaller's current state, every flow installed before the last change
// that the upcaller reported (RequestRevalidation), changing the actions
// of those whose actions changed and removing those that now need a finer
// match. Revalidate does the same synchronously, and like FlushFlows and
// DelPort waits until no rx goroutine is still in a batch begun before it,
// so once they return no packet is forwarded by a stale translation or to
// a removed port.
package datapath

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govs/govs/datapath/conntrack"
	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev"
	"github.com/govs/govs/netdev/tunnel"
)

// Logger is where the datapath reports port trouble, never per packet.
type Logger interface {
	Debugf(format string, args ...any)
	Infof(format string, args ...any)
	Warnf(format string, args ...any)
	Errorf(format string, args ...any)
}

type discard struct{}

func (discard) Debugf(string, ...any) {}
func (discard) Infof(string, ...any)  {}
func (discard) Warnf(string, ...any)  {}
func (discard) Errorf(string, ...any) {}

// Errors of AddPort and DelPort.
var (
	ErrPortReserved = errors.New("datapath: port number 0 is reserved")
	ErrPortExists   = errors.New("datapath: port number in use")
	ErrPortAttached = errors.New("datapath: netdev already attached")
	ErrNoSuchPort   = errors.New("datapath: no such port")
	ErrClosed       = errors.New("datapath: closed")
)

// Datapath is the one userspace datapath shared by all bridges.
type Datapath struct {
	log   Logger
	epoch time.Time
	// clock returns nanoseconds since epoch; set once by newDatapath.
	clock func() int64

	upcaller atomic.Pointer[upcallerBox]
	ports    atomic.Pointer[portTable]
	// gen is the epoch that synchronize waits on: workers publish the
	// epoch of the batch they are in. Starts at 1; workers use 0 to mean
	// "not in a batch".
	gen atomic.Uint64
	// revalSeq counts the upcaller's state changes: a flow translated at
	// an older value is translated again by the next revalidation pass.
	revalSeq atomic.Uint64

	// Configuration (other_config) and the count it limits.
	flowLimit atomic.Int64
	maxIdle   atomic.Int64 // nanoseconds
	megaflows atomic.Bool  // false: every flow matches the whole key
	nflows    atomic.Int64 // installed flows, all workers

	// ct is the connection tracker of the ct actions; set by newDatapath.
	ct *conntrack.Tracker
	// recircDrops counts packets dropped for recirculating too deep.
	recircDrops atomic.Uint64
	// tnlPopErrors and tnlPushErrors count packets the tunnel actions
	// dropped: malformed outer headers, frames they could not encapsulate.
	tnlPopErrors, tnlPushErrors atomic.Uint64
	// groSegs counts the decapsulated segments coalesced into groFrames
	// super-frames (gro.go).
	groSegs, groFrames atomic.Uint64
	// tnlGSOFrames counts the UDP GSO frames tnl_push sent, holding
	// tnlGSOSegs tunnel packets (tnlgso.go).
	tnlGSOFrames, tnlGSOSegs atomic.Uint64
	// tnlGSORx counts the UDP GSO frames tnl_pop received whole.
	tnlGSORx atomic.Uint64

	// meters are the meters of ActionMeter (meter.go); meterMu
	// serializes their replacement.
	meters  atomic.Pointer[meterTable]
	meterMu sync.Mutex

	revalWake chan struct{}
	stop      chan struct{} // closed by Close
	pollMode  bool          // pmdPoll, as the datapath was made
	pollOnce  sync.Once     // starts poll
	poll      *poller
	revalDone chan struct{} // closed when the revalidator exits
	// revalMu serializes revalidation passes and guards their scratch.
	revalMu sync.Mutex
	reval   revalState
	// Upcall statistics for upcall/show, written by passes, and the
	// last pass's duration in nanoseconds.
	avgFlows, maxFlows, dumpDuration, passTime atomic.Int64

	mu sync.Mutex // guards the fields below and serializes port table updates
	// workers holds every rx goroutine still running, attached or not.
	workers map[*worker]struct{}
	// pmd is the worker placement (pmd.go); stored with mu held.
	pmd atomic.Pointer[pmdPlan]
	// retired are the counters of workers that exited.
	retired counters
	// freeSlots are tx-queue slots of deleted ports, for reuse.
	freeSlots []int
	nextSlot  int
	closed    bool

	pool packet.Pool // receive buffers of idle ports, copies of flooded frames
	// emcMinRx is emcMinRx, which tests lower.
	emcMinRx uint64
}

type upcallerBox struct{ u Upcaller }

// portTable is an immutable snapshot of the attached ports.
type portTable struct {
	// gen tells tables apart, so that flows remember which table their
	// actions were resolved against without keeping it, and with it every
	// port it had, alive. Never 0.
	gen  uint64
	byNo map[uint32]*dpPort
}

// tableGens numbers port tables.
var tableGens atomic.Uint64

func newPortTable(byNo map[uint32]*dpPort) *portTable {
	return &portTable{gen: tableGens.Add(1), byNo: byNo}
}

// dpPort is one attached port.
type dpPort struct {
	no   uint32
	name string
	dev  netdev.Port
	// tunnel is set for a tunnel vport: what it receives was decapsulated.
	tunnel bool
	// slot indexes the per-worker tx queues; unique among attached ports.
	slot int
	// ws are the workers of the port's receive queues, one each (the
	// netdev's RxQueues, or the port itself); w is ws[0].
	ws []*worker
	w  *worker

	// txMu serializes dev.Write: a netdev takes one writer at a time and
	// every rx goroutine may output to any port. Held once per batch.
	txMu sync.Mutex

	rxPackets, rxBytes, rxErrors         atomic.Uint64
	txPackets, txBytes, txDropped, txErr atomic.Uint64
	errLog                               rateLimit

	// policer is the ingress policing (SetPolicing), nil for none; only
	// the port's rx goroutine runs it. rxPoliced counts what it dropped.
	policer   atomic.Pointer[policer]
	rxPoliced atomic.Uint64
	// egress is the QoS (SetEgressPolicing, SetTrTCMPolicing), nil for
	// none; guarded by txMu. txPoliced counts what it dropped.
	egress    egressPolicer
	txPoliced atomic.Uint64
}

// New returns a datapath with no ports. log may be nil.
func New(log Logger) *Datapath {
	if log == nil {
		log = discard{}
	}
	return newDatapath(log, nil)
}

// newDatapath is New with a clock (nanoseconds, from 0) that tests drive;
// nil is the real one.
func newDatapath(log Logger, clock func() int64) *Datapath {
	if log == nil {
		log = discard{}
	}
	dp := &Datapath{log: log, epoch: time.Now(), clock: clock, workers: map[*worker]struct{}{}, emcMinRx: emcMinRx, pollMode: pmdPoll,
		revalWake: make(chan struct{}, 1), stop: make(chan struct{}), revalDone: make(chan struct{})}
	if dp.clock == nil {
		dp.clock = func() int64 { return int64(time.Since(dp.epoch)) }
	}
	dp.gen.Store(1)
	dp.pmd.Store(&pmdPlan{})
	processCPUs() // before any worker is pinned
	dp.flowLimit.Store(DefaultFlowLimit)
	dp.maxIdle.Store(int64(DefaultMaxIdle))
	dp.megaflows.Store(true)
	dp.ports.Store(newPortTable(map[uint32]*dpPort{}))
	dp.meters.Store(&meterTable{})
	// The tracker runs on the datapath's clock, so that a batch reads
	// the time once for its lookups and its ct actions.
	dp.ct = conntrack.New(conntrack.Config{Clock: dp.clock})
	dp.ct.Start()
	go dp.revalidator()
	return dp
}

// Conntrack returns the connection tracker that the datapath's ct
// actions use, shared by every port.
func (dp *Datapath) Conntrack() *conntrack.Tracker { return dp.ct }

// Defaults of the Open_vSwitch table's other_config keys the datapath
// takes, as OVS 3.1 has them.
const (
	// DefaultFlowLimit is other_config:flow-limit: at most this many
	// flows are installed; misses beyond it are translated and executed
	// but not installed.
	DefaultFlowLimit = 200000
	// DefaultMaxIdle is other_config:max-idle: a flow unused for this
	// long is removed.
	DefaultMaxIdle = 10 * time.Second
	// MinMaxIdle is the least max-idle OVS accepts (it ignores smaller
	// values).
	MinMaxIdle = 100 * time.Millisecond
)

// SetFlowLimit sets other_config:flow-limit; n <= 0 restores the default.
// Flows above a lowered limit go as the revalidator expires them faster
// (idle 100 ms while the table is over the limit, as OVS does).
func (dp *Datapath) SetFlowLimit(n int) {
	if n <= 0 {
		n = DefaultFlowLimit
	}
	dp.flowLimit.Store(int64(n))
}

// FlowLimit returns the flow limit.
func (dp *Datapath) FlowLimit() int { return int(dp.flowLimit.Load()) }

// SetMaxIdle sets other_config:max-idle; d <= 0 restores the default, and
// values under MinMaxIdle are raised to it.
func (dp *Datapath) SetMaxIdle(d time.Duration) {
	if d <= 0 {
		d = DefaultMaxIdle
	}
	dp.maxIdle.Store(int64(max(d, MinMaxIdle)))
}

// SetMegaflows turns megaflows on (the default) or off: off, every new
// flow matches the packet's whole key, as after `ovs-appctl
// upcall/disable-megaflows`. Installed flows are flushed.
func (dp *Datapath) SetMegaflows(on bool) {
	if dp.megaflows.Swap(on) != on {
		dp.FlushFlows()
	}
}

// Now returns the datapath clock: the time since the datapath was made,
// the base of flow statistics and of Upcall.UsedAt.
func (dp *Datapath) Now() time.Duration { return time.Duration(dp.clock()) }

// SetUpcall sets the translation layer that misses go to. Until it is set
// (or after it is set to nil) missed packets are dropped and counted as
// lost.
func (dp *Datapath) SetUpcall(u Upcaller) {
	if u == nil {
		dp.upcaller.Store(nil)
	} else {
		dp.upcaller.Store(&upcallerBox{u})
	}
	dp.FlushFlows()
}

// AddPort attaches p as datapath port no and starts its rx goroutine.
// Port number 0 is reserved, as OVS reserves it for the datapath's own
// port.
func (dp *Datapath) AddPort(no uint32, p netdev.Port) error {
	if no == 0 {
		return ErrPortReserved
	}
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if dp.closed {
		return ErrClosed
	}
	old := dp.ports.Load()
	if _, ok := old.byNo[no]; ok {
		return fmt.Errorf("%w: %d", ErrPortExists, no)
	}
	for _, q := range old.byNo {
		if q.dev == p {
			return fmt.Errorf("%w: %s is port %d", ErrPortAttached, p.Name(), q.no)
		}
	}
	// A detached worker still blocked in this netdev's Read would share
	// it with the new one, which the netdev contract forbids.
	for w := range dp.workers {
		if w.port.dev == p {
			return fmt.Errorf("%w: %s was detached but is still open", ErrPortAttached, p.Name())
		}
	}
	port := &dpPort{no: no, name: p.Name(), dev: p, slot: dp.allocSlot()}
	_, port.tunnel = p.(*tunnel.Vport)
	queues := []netdev.Reader{p}
	if mq, ok := p.(netdev.RxQueuer); ok {
		queues = mq.RxQueues()
	}
	for i, q := range queues {
		w := newQueueWorker(dp, port, q, i)
		port.ws = append(port.ws, w)
		dp.workers[w] = struct{}{}
	}
	port.w = port.ws[0]
	// Flows translated while the port was missing resolve their outputs
	// to it anew when they see the new table.
	dp.ports.Store(old.with(port))
	dp.placeLocked()
	for _, w := range port.ws {
		go w.run()
	}
	dp.log.Debugf("added port %s as datapath port %d", port.name, no)
	return nil
}

// DelPort detaches port no. When it returns, the datapath forwards nothing
// more from or to the port and will not call its Write again. It closes
// nothing: the caller closes the netdev, which ends the port's rx goroutine
// (blocked in Read until then).
func (dp *Datapath) DelPort(no uint32) error {
	dp.mu.Lock()
	old := dp.ports.Load()
	port, ok := old.byNo[no]
	if !ok {
		dp.mu.Unlock()
		return fmt.Errorf("%w: %d", ErrNoSuchPort, no)
	}
	for _, w := range port.ws {
		w.detached.Store(true)
	}
	dp.ports.Store(old.without(no))
	dp.placeLocked()
	g := dp.gen.Add(1)
	dp.mu.Unlock()

	// Flows of other ports that output to this one resolve their
	// actions against the new table in every batch begun after the bump.
	dp.synchronize(g)

	for _, w := range port.ws {
		w.flowMu.Lock()
		dp.nflows.Add(-int64(w.removeAll()))
		w.flowMu.Unlock()
	}
	dp.mu.Lock()
	dp.freeSlots = append(dp.freeSlots, port.slot)
	dp.mu.Unlock()
	dp.log.Debugf("deleted port %s (datapath port %d)", port.name, no)
	return nil
}

// PortInfo describes one attached port.
type PortInfo struct {
	No   uint32
	Name string
	// Stats are what the datapath counted: frames it received from the
	// port (RxErrors: runts it dropped) and frames it handed to the
	// port's Write (TxDropped: frames Write did not send; TxErrors: Write
	// calls that failed). The netdev's own Stats are the kernel's view.
	Stats netdev.Stats
}

// Ports returns the attached ports in port number order.
func (dp *Datapath) Ports() []PortInfo {
	t := dp.ports.Load()
	out := make([]PortInfo, 0, len(t.byNo))
	for _, p := range t.byNo {
		out = append(out, PortInfo{No: p.no, Name: p.name, Stats: netdev.Stats{
			RxPackets: p.rxPackets.Load(), RxBytes: p.rxBytes.Load(), RxErrors: p.rxErrors.Load(),
			TxPackets: p.txPackets.Load(), TxBytes: p.txBytes.Load(),
			TxDropped: p.txDropped.Load(), TxErrors: p.txErr.Load(),
		}})
	}
	slices.SortFunc(out, func(a, b PortInfo) int { return cmp.Compare(a.No, b.No) })
	return out
}

// Stats are the datapath's lookup counters, as dpif/show prints them.
type Stats struct {
	// Hit counts packets whose flow was found in an exact-match cache or
	// a megaflow classifier.
	Hit uint64
	// Missed counts packets that went to the upcaller.
	Missed uint64
	// Lost counts missed packets dropped without translation (no
	// upcaller set).
	Lost uint64
	// Flows is the number of installed flows.
	Flows uint64
}

// Stats returns the lookup counters since the datapath was made.
func (dp *Datapath) Stats() Stats {
	c := dp.totals()
	return Stats{Hit: c.emcHits + c.megaHits, Missed: c.missed, Lost: c.lost, Flows: uint64(max(dp.nflows.Load(), 0))}
}

func (dp *Datapath) totals() counters {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	c := dp.retired
	for w := range dp.workers {
		wc := w.stats.load()
		c.add(&wc)
	}
	return c
}

// FlushFlows removes every installed flow and waits until no rx goroutine
// is still processing a batch with the old flows: after it returns, every
// packet is translated anew by the upcaller's current configuration. It
// must not be called from an Upcall.
func (dp *Datapath) FlushFlows() {
	// Batches begun before may still install flows they translated
	// before the call: wait for them first.
	dp.synchronize(dp.gen.Add(1))
	dp.mu.Lock()
	ws := make([]*worker, 0, len(dp.workers))
	for w := range dp.workers {
		ws = append(ws, w)
	}
	dp.mu.Unlock()
	for _, w := range ws {
		w.flowMu.Lock()
		dp.nflows.Add(-int64(w.removeAll()))
		w.flowMu.Unlock()
	}
	// And for those that may still use a flow found before its removal.
	dp.synchronize(dp.gen.Add(1))
}

// Close detaches every port, as DelPort does for each. The caller closes
// the netdevs.
func (dp *Datapath) Close() {
	dp.mu.Lock()
	if dp.closed {
		dp.mu.Unlock()
		return
	}
	dp.closed = true
	ports := dp.ports.Load().byNo
	for _, p := range ports {
		for _, w := range p.ws {
			w.detached.Store(true)
		}
	}
	dp.ports.Store(newPortTable(map[uint32]*dpPort{}))
	g := dp.gen.Add(1)
	dp.mu.Unlock()
	close(dp.stop)
	<-dp.revalDone
	dp.synchronize(g)
	dp.ct.Close()
	for _, p := range ports {
		for _, w := range p.ws {
			w.flowMu.Lock()
			dp.nflows.Add(-int64(w.removeAll()))
			w.flowMu.Unlock()
		}
	}
}

// synchronize waits until every rx goroutine is idle or in a batch of
// epoch g or later, like an RCU grace period. Workers publish the
// epoch of their batch before they look at any shared state (see
// worker.enter), so a batch that began before the bump that produced g
// is waited for, and one that begins after sees the new state.
func (dp *Datapath) synchronize(g uint64) {
	dp.mu.Lock()
	ws := make([]*worker, 0, len(dp.workers))
	for w := range dp.workers {
		ws = append(ws, w)
	}
	dp.mu.Unlock()
	for _, w := range ws {
		for spin := 0; !w.quiescent(g); spin++ {
			if spin < 100 {
				runtime.Gosched() // batches take microseconds
			} else {
				time.Sleep(50 * time.Microsecond)
			}
		}
	}
}

func (dp *Datapath) allocSlot() int {
	if n := len(dp.freeSlots); n > 0 {
		s := dp.freeSlots[n-1]
		dp.freeSlots = dp.freeSlots[:n-1]
		return s
	}
	dp.nextSlot++
	return dp.nextSlot - 1
}

func (dp *Datapath) workerExited(w *worker) {
	dp.mu.Lock()
	delete(dp.workers, w)
	c := w.stats.load()
	dp.retired.add(&c)
	dp.mu.Unlock()
}

func (t *portTable) with(p *dpPort) *portTable {
	m := make(map[uint32]*dpPort, len(t.byNo)+1)
	for k, v := range t.byNo {
		m[k] = v
	}
	m[p.no] = p
	return newPortTable(m)
}

func (t *portTable) without(no uint32) *portTable {
	m := make(map[uint32]*dpPort, len(t.byNo))
	for k, v := range t.byNo {
		if k != no {
			m[k] = v
		}
	}
	return newPortTable(m)
}

// rateLimit lets one message through per interval and counts the rest.
type rateLimit struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

const logInterval = 5 * time.Second

// allow reports whether to log now, and how many messages were suppressed
// since the last one that was.
func (r *rateLimit) allow() (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if !r.last.IsZero() && now.Sub(r.last) < logInterval {
		r.suppressed++
		return false, 0
	}
	n := r.suppressed
	r.last, r.suppressed = now, 0
	return true, n
}
