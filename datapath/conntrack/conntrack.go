// Package conntrack owns the userspace connection tracker: the table of
// connections shared by every datapath worker, their TCP, UDP, ICMP and
// other-protocol state machines, NAT, zones, marks and labels, limits and
// expiry. It follows the behaviour of OVS's userspace conntrack
// (lib/conntrack*.c): the same states, timeouts and NAT semantics, so that
// flows written for OVS (OVN's ACLs and load balancers) behave the same.
//
// The datapath calls Execute for each packet of a ct() action; it imports
// nothing of govs but works on the frame's bytes.
package conntrack

import (
	"errors"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// State bits of ct_state, as OVS's OVS_CS_F_* (and the datapath flow key).
const (
	StateNew         = 0x01
	StateEstablished = 0x02
	StateRelated     = 0x04
	StateReply       = 0x08
	StateInvalid     = 0x10
	StateTracked     = 0x20
	StateSrcNAT      = 0x40
	StateDstNAT      = 0x80
)

// DefaultMaxConns is the default bound of the table, OVS's
// DEFAULT_N_CONN_LIMIT (lib/conntrack.c).
const DefaultMaxConns = 3000000

// Label is a 128-bit ct_label, most significant byte first.
type Label [16]byte

// Tuple is one direction of a connection as the metadata and dumps show
// it: for ICMP, SrcPort is the identifier and DstPort type<<8|code.
type Tuple struct {
	Src, Dst         [16]byte
	SrcPort, DstPort uint16
	Proto            uint8
	V6               bool
}

// Meta is the conntrack metadata of a packet: what a ct action writes and
// later lookups match on (OVS's ct_state, ct_zone, ct_mark, ct_label and
// the ct_nw_*/ct_tp_* original tuple).
type Meta struct {
	State uint8
	Zone  uint16
	Mark  uint32
	Label Label
	// Orig is the connection's original direction, valid if OrigValid.
	Orig      Tuple
	OrigValid bool
	// conn is the connection the packet was last tracked into, so that a
	// second ct() in the same zone does not track it twice (its NATed
	// headers would no longer match).
	conn *conn
}

// Clear is ct_clear: the packet is untracked.
func (m *Meta) Clear() { *m = Meta{} }

// NATRange is a nat() action's argument.
type NATRange struct {
	// Src or Dst says which address to translate; neither is "nat" alone,
	// which translates packets of connections that are already NATed.
	Src, Dst bool
	// MinAddr..MaxAddr is the address range (IPv4 in the first four bytes
	// unless V6); MinPort..MaxPort the port range, 0 if none was given.
	MinAddr, MaxAddr [16]byte
	V6               bool
	MinPort, MaxPort uint16
	// Random, Hash and Persistent choose how the tuple is picked.
	Random, Hash, Persistent bool
}

// Action is one ct() action's arguments.
type Action struct {
	Zone   uint16
	Commit bool
	Force  bool
	// SetMark and SetLabel apply Mark/Label under their masks to the
	// committed connection.
	SetMark          bool
	Mark, MarkMask   uint32
	SetLabel         bool
	Label, LabelMask Label
	NAT              *NATRange
	// Helper is an ALG: "" for none, HelperFTP or HelperTFTP; Execute
	// refuses others.
	Helper string
	// TimeoutPolicy is the ID of the timeout policy a connection this
	// action commits gets (SetTimeoutPolicy); DefaultPolicy for none.
	TimeoutPolicy uint32
}

// ErrUnsupported reports an action the tracker does not implement.
var ErrUnsupported = errors.New("conntrack: unsupported action")

// result of updating a connection with a packet (OVS's ct_update_res).
type result uint8

const (
	resInvalid result = iota
	resValid
	resNew
	resValidNew
)

// timeout is an entry of the timeout policy (OVS's CT_TM_*).
type timeout uint8

const (
	tmTCPFirst timeout = iota
	tmTCPOpening
	tmTCPEstablished
	tmTCPClosing
	tmTCPFinWait
	tmTCPClosed
	tmOtherFirst
	tmOtherMultiple
	tmOtherBidir
	tmICMPFirst
	tmICMPReply
	nTimeouts
	tmKeep = nTimeouts // keep the current expiry
)

// defaultTimeouts is OVS's default timeout policy for the userspace
// datapath (lib/conntrack-tp.c ct_dpif_netdev_tp_def, mapped as its
// tm_to_ct_dpif_tp): UDP and other protocols "first" 60 s, one-way
// "multiple" 60 s, bidirectional 30 s.
var defaultTimeouts = [nTimeouts]time.Duration{
	tmTCPFirst:       30 * time.Second,
	tmTCPOpening:     30 * time.Second,
	tmTCPEstablished: 24 * time.Hour,
	tmTCPClosing:     15 * time.Minute,
	tmTCPFinWait:     45 * time.Second,
	tmTCPClosed:      30 * time.Second,
	tmOtherFirst:     60 * time.Second,
	tmOtherMultiple:  60 * time.Second,
	tmOtherBidir:     30 * time.Second,
	tmICMPFirst:      60 * time.Second,
	tmICMPReply:      30 * time.Second,
}

// other protocols' (UDP's too) states, as conntrack-other.c.
const (
	otherFirst uint8 = iota
	otherMultiple
	otherBidir
)

// ICMP states, as conntrack-icmp.c.
const (
	icmpFirst uint8 = iota
	icmpReply
)

// conn is one tracked connection. Its keys are immutable once inserted;
// the rest is guarded by mu.
type conn struct {
	// orig is the key of the originator's packets; reply the key of the
	// responder's, after NAT.
	orig, reply key
	// nat is the translation applied to original-direction packets:
	// StateSrcNAT and/or StateDstNAT.
	nat uint8
	// expires is the clock value (ns) after which the connection is gone.
	expires atomic.Int64
	// dead: removed from the table (expired, flushed or replaced).
	dead atomic.Bool

	mu    sync.Mutex
	mark  uint32
	label Label
	state uint8 // other and ICMP states
	tcp   tcpConn
	// committed: counted in the table and its zone.
	committed bool
	alg       algConn
	// tp is the ID of the connection's timeout policy.
	tp uint32
}

// shards is how many independently locked parts the table has; a power of
// two. Lookups take one shard's read lock, so concurrent workers collide
// only when their connections hash to the same shard.
const shards = 256

type shard struct {
	mu  sync.RWMutex // guards t
	t   table
	idx int      // position in the table: the order locks are taken in
	_   [32]byte // keeps neighbouring shards' locks off one cache line
}

// Config is a tracker's configuration.
type Config struct {
	// MaxConns bounds the table; 0 means DefaultMaxConns.
	MaxConns uint32
	// Clock returns monotonic nanoseconds; nil means the real clock.
	Clock func() int64
}

// Tracker is the connection table. Its methods are safe for concurrent
// use; Execute takes no lock other than one or two shards' and the
// connection's own.
type Tracker struct {
	shards   [shards]shard
	clock    func() int64
	maxConns atomic.Uint32
	nconns   atomic.Int64
	// liberal disables TCP sequence checks (dpctl/ct-disable-tcp-seq-chk).
	liberal atomic.Bool

	zoneCount [65536]atomic.Int32
	// limits is the per-zone connection limits; replaced whole on change.
	limits atomic.Pointer[zoneLimits]
	limMu  sync.Mutex // serializes limit changes

	// frags holds IP fragments until their datagram is whole.
	frags reassembler
	// exps holds the data connections ALGs expect.
	exps expTable

	// policies are the timeout policies by ID; replaced whole on change.
	policies atomic.Pointer[policyTable]
	polMu    sync.Mutex // serializes policy changes

	// Counters for ct-stats and coverage.
	full, zoneFull, natExhausted atomic.Uint64

	stop     chan struct{}
	stopOnce sync.Once
	swept    sync.WaitGroup
}

// zoneLimits are the per-zone limits: Default applies to zones not in
// Zones; 0 means unlimited.
type zoneLimits struct {
	Default uint32
	Zones   map[uint16]uint32
}

// New returns an empty tracker. Call Start to expire connections in the
// background, Close to stop.
func New(cfg Config) *Tracker {
	t := &Tracker{clock: cfg.Clock, stop: make(chan struct{})}
	if t.clock == nil {
		base := time.Now()
		t.clock = func() int64 { return int64(time.Since(base)) + 1 }
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	t.maxConns.Store(cfg.MaxConns)
	for i := range t.shards {
		t.shards[i].idx = i
	}
	t.limits.Store(&zoneLimits{})
	t.policies.Store(&policyTable{})
	return t
}

// sweepInterval is how often the background sweeper looks for expired
// connections. Expired connections are already invisible to lookups, so
// this bounds only how long they hold memory and count against limits.
const sweepInterval = time.Second

// Start runs the sweeper until Close.
func (t *Tracker) Start() {
	t.swept.Add(1)
	go func() {
		defer t.swept.Done()
		tick := time.NewTicker(sweepInterval)
		defer tick.Stop()
		for {
			select {
			case <-t.stop:
				return
			case <-tick.C:
				t.Sweep()
			}
		}
	}()
}

// Close stops the sweeper.
func (t *Tracker) Close() {
	t.stopOnce.Do(func() { close(t.stop) })
	t.swept.Wait()
}

// SetLiberal turns TCP sequence window checks off (true) or on.
func (t *Tracker) SetLiberal(on bool) { t.liberal.Store(on) }

// Liberal reports whether TCP sequence checks are off.
func (t *Tracker) Liberal() bool { return t.liberal.Load() }

func (k *key) hash() uint64 {
	const m = 0x9e3779b97f4a7c15
	a0 := le64(k.src[0:]) ^ le64(k.dst[0:])<<1
	a1 := le64(k.src[8:]) ^ le64(k.dst[8:])<<1
	b := uint64(k.sport)<<48 | uint64(k.dport)<<32 | uint64(k.zone)<<16 | uint64(k.proto)
	hi, lo := bits.Mul64(a0^m, a1^b^0xe7037ed1a0b428db)
	return hi ^ lo
}

func le64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// shardOf returns k's shard and the hash of k within it.
func (t *Tracker) shardOf(k *key) (*shard, uint32) {
	h := k.hash()
	return &t.shards[h&(shards-1)], uint32(h >> 32)
}

// lookup finds the live connection with k in either direction; reply says
// k is its reply key.
func (t *Tracker) lookup(k *key, now int64) (c *conn, reply bool) {
	s, h := t.shardOf(k)
	s.mu.RLock()
	c = s.t.get(k, h)
	s.mu.RUnlock()
	if c == nil || c.dead.Load() || c.expires.Load() <= now {
		return nil, false
	}
	return c, c.reply == *k && c.orig != *k
}

// insert adds c under both its keys. It fails if either is taken by a
// live connection; an expired one that still holds a key is removed first.
func (t *Tracker) insert(c *conn, now int64) bool {
	s1, h1 := t.shardOf(&c.orig)
	s2, h2 := t.shardOf(&c.reply)
	for {
		var stale [2]*conn
		lock2(s1, s2)
		for i, o := range [2]*conn{s1.t.get(&c.orig, h1), s2.t.get(&c.reply, h2)} {
			if o != nil {
				if !o.dead.Load() && o.expires.Load() > now {
					unlock2(s1, s2)
					return false
				}
				stale[i] = o
			}
		}
		if stale[0] == nil && stale[1] == nil {
			s1.t.put(c, h1, false)
			if c.reply != c.orig {
				s2.t.put(c, h2, true)
			}
			unlock2(s1, s2)
			return true
		}
		unlock2(s1, s2)
		for _, o := range stale {
			if o != nil {
				t.remove(o)
			}
		}
	}
}

func lock2(a, b *shard) {
	switch {
	case a == b:
		a.mu.Lock()
	case a.idx < b.idx:
		a.mu.Lock()
		b.mu.Lock()
	default:
		b.mu.Lock()
		a.mu.Lock()
	}
}

func unlock2(a, b *shard) {
	a.mu.Unlock()
	if a != b {
		b.mu.Unlock()
	}
}

// removeLocked unlinks c from the shards it is in, whose locks the caller
// holds, and uncounts it.
func (t *Tracker) removeLocked(c *conn) {
	if c.dead.Swap(true) {
		return
	}
	for i, k := range [2]*key{&c.orig, &c.reply} {
		s, h := t.shardOf(k)
		s.t.del(c, h, i == 1)
	}
	t.nconns.Add(-1)
	t.zoneCount[c.orig.zone].Add(-1)
}

// remove unlinks c from the table.
func (t *Tracker) remove(c *conn) {
	s1, _ := t.shardOf(&c.orig)
	s2, _ := t.shardOf(&c.reply)
	lock2(s1, s2)
	t.removeLocked(c)
	unlock2(s1, s2)
}

// Sweep removes the expired connections, one shard at a time: a worker
// waits at most for one shard's scan.
func (t *Tracker) Sweep() int {
	now := t.clock()
	t.frags.sweep(now)
	t.exps.sweep(now)
	n := 0
	t.scan(func(c *conn) bool { return c.expires.Load() <= now }, func(c *conn) bool {
		t.remove(c)
		n++
		return true
	})
	return n
}

// Flush removes every connection, or only those of zone if zone >= 0.
func (t *Tracker) Flush(zone int) {
	t.each(func(c *conn) bool {
		if zone < 0 || int(c.orig.zone) == zone {
			t.remove(c)
		}
		return true
	})
}

// FlushTuple removes the connection whose original or reply direction is
// tu in zone; it reports whether there was one.
func (t *Tracker) FlushTuple(zone uint16, tu Tuple) bool {
	k := key{src: tu.Src, dst: tu.Dst, sport: tu.SrcPort, dport: tu.DstPort, proto: tu.Proto, v6: tu.V6, zone: zone}
	c, _ := t.lookup(&k, t.clock())
	if c == nil {
		return false
	}
	t.remove(c)
	return true
}

// each calls f for each live connection once, shard by shard, without
// holding a lock while f runs.
func (t *Tracker) each(f func(c *conn) bool) {
	now := t.clock()
	t.scan(func(c *conn) bool { return !c.dead.Load() && c.expires.Load() > now }, f)
}

// scan calls f, until it returns false, for each connection that sel
// (called under the shard's read lock) selects: one shard at a time,
// without holding a lock while f runs.
func (t *Tracker) scan(sel, f func(c *conn) bool) {
	var cs []*conn
	for i := range t.shards {
		s := &t.shards[i]
		cs = cs[:0]
		s.mu.RLock()
		for j := range s.t.slots {
			if sl := &s.t.slots[j]; sl.c != nil && !sl.reply && sel(sl.c) {
				cs = append(cs, sl.c)
			}
		}
		s.mu.RUnlock()
		for _, c := range cs {
			if !f(c) {
				return
			}
		}
	}
}

// SetMaxConns sets the table's bound. Connections over it stay until they
// expire; new ones are refused meanwhile.
func (t *Tracker) SetMaxConns(n uint32) { t.maxConns.Store(n) }

// MaxConns returns the table's bound.
func (t *Tracker) MaxConns() uint32 { return t.maxConns.Load() }

// NConns returns how many connections the table holds.
func (t *Tracker) NConns() int { return int(t.nconns.Load()) }

// ZoneLimit is one zone's limit and count (ct-get-limits). Zone -1 is the
// default limit.
type ZoneLimit struct {
	Zone  int
	Limit uint32
	Count uint32
}

// SetLimits sets the default limit (if def is not nil) and the given
// zones' limits.
func (t *Tracker) SetLimits(def *uint32, zones map[uint16]uint32) {
	t.limMu.Lock()
	defer t.limMu.Unlock()
	old := t.limits.Load()
	nl := &zoneLimits{Default: old.Default, Zones: make(map[uint16]uint32, len(old.Zones)+len(zones))}
	for z, l := range old.Zones {
		nl.Zones[z] = l
	}
	if def != nil {
		nl.Default = *def
	}
	for z, l := range zones {
		nl.Zones[z] = l
	}
	t.limits.Store(nl)
}

// DelLimits removes the given zones' limits: they fall back to the
// default.
func (t *Tracker) DelLimits(zones []uint16) {
	t.limMu.Lock()
	defer t.limMu.Unlock()
	old := t.limits.Load()
	nl := &zoneLimits{Default: old.Default, Zones: make(map[uint16]uint32, len(old.Zones))}
	for z, l := range old.Zones {
		nl.Zones[z] = l
	}
	for _, z := range zones {
		delete(nl.Zones, z)
	}
	t.limits.Store(nl)
}

// Limits returns the default limit and the zone limits (for zones, or for
// every zone with a limit if zones is empty), sorted by zone.
func (t *Tracker) Limits(zones []uint16) (def uint32, out []ZoneLimit) {
	l := t.limits.Load()
	if len(zones) == 0 {
		for z := range l.Zones {
			zones = append(zones, z)
		}
	}
	sortU16(zones)
	for _, z := range zones {
		// As OVS, a zone without a limit of its own shows the default
		// and no count.
		lim, ok := l.Zones[z]
		zl := ZoneLimit{Zone: int(z), Limit: l.Default}
		if ok {
			zl.Limit, zl.Count = lim, uint32(max(0, t.zoneCount[z].Load()))
		}
		out = append(out, zl)
	}
	return l.Default, out
}

func sortU16(s []uint16) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func (t *Tracker) zoneLimit(z uint16) uint32 {
	l := t.limits.Load()
	if v, ok := l.Zones[z]; ok {
		return v
	}
	return l.Default
}

// Execute runs a ct() action on the Ethernet frame b (which it may
// rewrite, for NAT) and updates md. partialCsum says the frame's L4
// checksum is partial (pseudo-header only, to be completed on output).
func (t *Tracker) Execute(b []byte, md *Meta, a *Action, partialCsum bool) error {
	return t.ExecuteAt(t.clock(), b, md, a, partialCsum)
}

// ExecuteAt is Execute at time now of the tracker's clock, for a caller
// that has read it for a whole batch.
func (t *Tracker) ExecuteAt(now int64, b []byte, md *Meta, a *Action, partialCsum bool) error {
	_, err := t.execute(now, b, md, a, partialCsum, false)
	return err
}

// ExecuteSized is ExecuteAt for a frame an ALG may lengthen or shorten
// (an FTP address rewritten under NAT) within b's capacity: it returns
// the frame's new length. ExecuteAt never changes the length: such a
// rewrite is skipped.
func (t *Tracker) ExecuteSized(now int64, b []byte, md *Meta, a *Action, partialCsum bool) (int, error) {
	return t.execute(now, b, md, a, partialCsum, true)
}

func (t *Tracker) execute(now int64, b []byte, md *Meta, a *Action, partialCsum, resizable bool) (int, error) {
	helper, ok := helperKind(a.Helper)
	if !ok {
		return len(b), ErrUnsupported
	}
	n := len(b)
	var p parsed
	p.zone = a.Zone
	p.resizable = resizable
	if !parseFrame(b, &p) {
		*md = Meta{State: StateInvalid | StateTracked, Zone: a.Zone}
		return n, nil
	}

	// Tracked already in this zone by an earlier ct(): do not track
	// again, only NAT and set mark and label (OVS's process_one_fast).
	if c := md.conn; c != nil && md.State&StateTracked != 0 && md.Zone == a.Zone && !a.Force && !c.dead.Load() {
		reply := md.State&StateReply != 0
		if a.NAT != nil && c.nat != 0 {
			t.natPacket(b, &p, c, reply, md, partialCsum)
		}
		t.setMarkLabel(c, a, md)
		return n, nil
	}

	var c *conn
	var reply, related bool
	if p.icmpErr {
		// The error goes back the way the quoted packet came from: the
		// reverse of the quoted packet's key is the error's direction.
		in := p.inner
		in.zone = a.Zone
		rk := in.key.reverse()
		c, reply = t.lookup(&rk, now)
		if c == nil {
			*md = Meta{State: StateInvalid | StateTracked, Zone: a.Zone}
			return n, nil
		}
		related = true
	} else {
		c, reply = t.lookup(&p.key, now)
	}
	if c != nil && a.Force && reply {
		// force: a packet in the reply direction ends the connection and
		// starts a new one the other way.
		t.remove(c)
		c = nil
	}

	var st uint8
	switch {
	case c != nil && related:
		st = StateRelated
		if reply {
			st |= StateReply
		}
	case c != nil:
		t.algBefore(b, &p, c, reply, a.NAT != nil, partialCsum)
		c.mu.Lock()
		res, tm := t.update(c, b, &p, reply)
		c.mu.Unlock()
		if tm != tmKeep {
			c.expires.Store(now + int64(t.timeoutOf(c.tp, tm)))
		}
		switch res {
		case resValid:
			st = StateEstablished
			if reply {
				st |= StateReply
			}
		case resValidNew:
			st = StateNew
		case resInvalid:
			*md = Meta{State: StateInvalid | StateTracked, Zone: a.Zone}
			return n, nil
		case resNew:
			t.remove(c)
			c = nil
		}
	}
	var exp *expectation
	if c == nil && !related {
		if !validNew(&p) {
			*md = Meta{State: StateInvalid | StateTracked, Zone: a.Zone}
			return n, nil
		}
		st = StateNew
		if exp = t.exps.lookup(p.key); exp != nil {
			st |= StateRelated
		}
		if a.Commit {
			var err error
			c, err = t.create(b, &p, a, exp, helper, now)
			switch {
			case err == errFull:
				// As OVS's conn_not_found: over a limit the packet
				// stays +new, only nothing is committed.
			case err != nil:
				*md = Meta{State: StateInvalid | StateTracked, Zone: a.Zone}
				return n, nil
			}
		}
	}
	*md = Meta{State: st | StateTracked, Zone: a.Zone}
	if c == nil {
		if exp != nil {
			md.Mark, md.Label = exp.mark, exp.label
			md.Orig, md.OrigValid = tupleOf(&exp.parentKey), true
		}
		return n, nil
	}
	md.conn = c
	if a.NAT != nil && c.nat != 0 {
		if related {
			t.natRelated(b, &p, c, reply, md)
		} else {
			t.natPacket(b, &p, c, reply, md, partialCsum)
		}
	}
	if !related {
		var inv bool
		if n, inv = t.algAfter(b, &p, c, reply, a.NAT != nil, partialCsum); inv {
			md.State |= StateInvalid
		}
	}
	if a.Commit {
		t.setMarkLabel(c, a, md)
	} else {
		c.mu.Lock()
		md.Mark, md.Label = c.mark, c.label
		c.mu.Unlock()
	}
	md.Orig = tupleOf(&c.orig)
	if c.alg.related {
		md.Orig = tupleOf(&c.alg.parent)
	}
	md.OrigValid = true
	return n, nil
}

func (t *Tracker) setMarkLabel(c *conn, a *Action, md *Meta) {
	c.mu.Lock()
	if a.SetMark && a.Commit {
		c.mark = c.mark&^a.MarkMask | a.Mark&a.MarkMask
	}
	if a.SetLabel && a.Commit {
		for i := range c.label {
			c.label[i] = c.label[i]&^a.LabelMask[i] | a.Label[i]&a.LabelMask[i]
		}
	}
	md.Mark, md.Label = c.mark, c.label
	c.mu.Unlock()
}

func validNew(p *parsed) bool {
	switch {
	case p.proto == protoTCP && p.l4Valid:
		return tcpValidNew(p)
	case p.key.isICMP():
		return icmpValidNew(p.icmpType, p.v6)
	}
	return true
}

// update applies a packet to c's state; c.mu is held.
func (t *Tracker) update(c *conn, b []byte, p *parsed, reply bool) (result, timeout) {
	switch {
	case p.proto == protoTCP && p.l4Valid:
		return c.tcp.update(b, p, reply, t.liberal.Load())
	case p.key.isICMP():
		res := resValid
		if reply && c.state == icmpFirst {
			c.state = icmpReply
		} else if c.state == icmpFirst {
			res = resValidNew
		}
		if c.state == icmpReply {
			return res, tmICMPReply
		}
		return res, tmICMPFirst
	}
	res := resValid
	if reply && c.state != otherBidir {
		c.state = otherBidir
	} else if c.state == otherFirst {
		c.state = otherMultiple
		res = resValidNew
	}
	return res, tmOtherFirst + timeout(c.state)
}

// errFull and errNAT refuse a commit.
var (
	errFull = errors.New("conntrack: table full")
	errNAT  = errors.New("conntrack: NAT tuple space exhausted")
)

// create commits a new connection for p; exp is the expectation it
// fulfils, if any, helper the ALG it gets.
func (t *Tracker) create(b []byte, p *parsed, a *Action, exp *expectation, helper uint8, now int64) (*conn, error) {
	if lim := t.zoneLimit(a.Zone); lim != 0 && uint32(t.zoneCount[a.Zone].Load()) >= lim {
		t.zoneFull.Add(1)
		return nil, errFull
	}
	if t.nconns.Load() >= int64(t.maxConns.Load()) {
		t.full.Add(1)
		return nil, errFull
	}
	c := &conn{orig: p.key, tp: a.TimeoutPolicy}
	var tm timeout
	switch {
	case p.proto == protoTCP && p.l4Valid:
		tm = c.tcp.init(b, p)
	case p.key.isICMP():
		tm = tmICMPFirst
	default:
		tm = tmOtherFirst
	}
	c.expires.Store(now + int64(t.timeoutOf(c.tp, tm)))
	t.nconns.Add(1)
	t.zoneCount[a.Zone].Add(1)
	c.committed = true
	c.reply = p.key.reverse()
	if helper != algNone && helper == algCtl(p) {
		c.alg.kind = helper
	}
	if exp != nil {
		t.exps.remove(exp)
		if relate(c, exp, a.NAT != nil) {
			if !t.insert(c, now) {
				t.nconns.Add(-1)
				t.zoneCount[a.Zone].Add(-1)
				t.natExhausted.Add(1)
				return nil, errNAT
			}
			return c, nil
		}
	} else if a.NAT != nil && (a.NAT.Src || a.NAT.Dst) {
		if !t.natSelect(c, a.NAT, now) {
			t.nconns.Add(-1)
			t.zoneCount[a.Zone].Add(-1)
			t.natExhausted.Add(1)
			return nil, errNAT
		}
		return c, nil
	}
	if !t.insert(c, now) {
		// Another worker committed the same connection meanwhile: use it.
		t.nconns.Add(-1)
		t.zoneCount[a.Zone].Add(-1)
		if o, _ := t.lookup(&p.key, now); o != nil {
			return o, nil
		}
		return nil, errFull
	}
	return c, nil
}

// Fields of a TupleMatch.
const (
	MatchSrc = 1 << iota
	MatchDst
	MatchProto
	MatchSrcPort
	MatchDstPort
)

// TupleMatch is a partial tuple (OVS 3.1's ofp_ct_tuple): only the
// fields Has names are compared; an address also compares V6.
type TupleMatch struct {
	Tuple
	Has uint8
}

func (m *TupleMatch) matches(k *key) bool {
	switch {
	case m.Has&(MatchSrc|MatchDst) != 0 && m.V6 != k.v6,
		m.Has&MatchSrc != 0 && m.Src != k.src,
		m.Has&MatchDst != 0 && m.Dst != k.dst,
		m.Has&MatchProto != 0 && m.Proto != k.proto,
		m.Has&MatchSrcPort != 0 && m.SrcPort != k.sport,
		m.Has&MatchDstPort != 0 && m.DstPort != k.dport:
		return false
	}
	return true
}

// FlushMatch removes the connections of zone (of every zone if zone < 0)
// whose original direction matches orig and reply direction matches
// reply, and returns how many.
func (t *Tracker) FlushMatch(zone int, orig, reply TupleMatch) int {
	n := 0
	t.each(func(c *conn) bool {
		if (zone < 0 || int(c.orig.zone) == zone) && orig.matches(&c.orig) && reply.matches(&c.reply) {
			t.remove(c)
			n++
		}
		return true
	})
	return n
}
