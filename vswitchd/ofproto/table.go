package ofproto

import (
	"hash/maphash"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// NumTables is how many flow tables a bridge has (0..254; OpenFlow's
// table 255 means "all").
const NumTables = 255

// hiddenTable is OVS's last table, which only the switch itself may
// change (OFPBRC_EPERM for controllers).
const hiddenTable = 254

// rule is one OpenFlow flow. Immutable once published, except its
// counters.
type rule struct {
	table    uint8
	match    ofp.Match
	priority uint16
	cookie   uint64
	actions  []ofp.Action
	idle     uint16
	hard     uint16
	flags    uint16
	imp      uint16
	// created and modified are bridge clock readings (for duration and
	// the hard timeout, which counts from the last modification).
	created, modified time.Duration
	stats             *ruleStats
	// seq orders rules of equal priority: insertion order (a replacing
	// add or a modify keeps it).
	seq uint64
}

// ruleStats are a rule's counters, shared by the rule's successive
// versions (a modify keeps them unless RESET_COUNTS).
type ruleStats struct {
	packets, bytes atomic.Uint64
	// used is the bridge clock when a packet last matched, as nanoseconds.
	used atomic.Int64
	// refreshed is the bridge clock when a learn action last learned the
	// flow again unchanged, which restarts its hard timeout.
	refreshed atomic.Int64
}

// tableCounters are a table's packet counters.
type tableCounters struct {
	lookups, matched atomic.Uint64
}

// TableCounts returns table id's lookup and matched packet counts.
func (br *Bridge) TableCounts(id uint8) (lookups, matched uint64) {
	if int(id) >= NumTables {
		return 0, 0
	}
	ts := &br.tableStats[id]
	return ts.lookups.Load(), ts.matched.Load()
}

// sameMatch reports whether r has exactly m and priority (strict match).
func (r *rule) sameMatch(m *ofp.Match, prio uint16) bool {
	return r.priority == prio && r.match.Flow == m.Flow && r.match.Mask == m.Mask
}

// narrower reports whether r's match is at least as specific as m (a
// loose match: every packet r matches, m matches).
func (r *rule) narrower(m *ofp.Match) bool { return m.Includes(&r.match) }

// overlaps reports whether some packet could match both r and m at the
// same priority (CHECK_OVERLAP).
func (r *rule) overlaps(m *ofp.Match, prio uint16) bool {
	if r.priority != prio {
		return false
	}
	common := r.match.Mask.Masked(&m.Mask)
	return r.match.Flow.Masked(&common) == m.Flow.Masked(&common)
}

// outputsTo reports whether r's actions output to port / group (the
// out_port / out_group filters; ANY passes all).
func (r *rule) outputsTo(port, group uint32) bool {
	if port != ofp.PortAny && !slices.Contains(ofp.Outputs(r.actions), port) {
		return false
	}
	return group == ofp.GroupAny || slices.Contains(ofp.Groups(r.actions), group)
}

// flowTables is an immutable set of tables once published; a change
// makes a new one, copying only the parts it changes (see gen), and
// swaps it in, so that the packet path reads a consistent snapshot
// without locks.
type flowTables struct {
	t [NumTables]*table // nil: empty
	// groups are the OpenFlow groups by id (group.go), copied whole on
	// change.
	groups map[uint32]*group
}

// A table is a tuple-space classifier, as OVS's: one subtable per
// distinct mask, each a hash on the masked key. Every node (table,
// subtable, shard) carries the generation of the change that made it:
// a change with generation g copies a node of an older generation
// before writing it and writes in place a node of generation g (made by
// this very change, not yet published). Copies are thus bounded by the
// path to what changes: one shard of at most about sqrt(2n) rules.
type table struct {
	gen  uint64
	subs []*subtable // by max priority, highest first
	n    int
	// timed counts the rules with an idle or hard timeout (expiry
	// visits only tables that have some).
	timed int
}

type subtable struct {
	gen  uint64
	mask ofp.Flow
	// tunmd: mask has tun_metadata bits. Most subtables have none: their
	// lookups leave out tun_metadata's 256 bytes (half of a Flow) when
	// masking, widening the wildcards and hashing.
	tunmd bool
	// l3: mask has L3 or L4 fields; l2 is the rest of mask; types
	// counts the rules by Ethernet type (l3Index). inPorts counts the
	// rules by in_port when mask has in_port (else nil), meta is mask's
	// metadata fields (before L2). See search.
	l3      bool
	l2      ofp.Flow
	types   [4]int32
	inPorts map[uint32]int32
	meta    ofp.Flow
	maxPrio uint16
	prios   map[uint16]int // rules per priority, for maxPrio
	n       int
	shards  []*shard // len is a power of two
}

// shard holds the rules whose masked key hashes to it, by that hash;
// each list by priority, highest first, ties in insertion order.
type shard struct {
	gen   uint64
	rules map[uint64][]*rule
}

var hashSeed = maphash.MakeSeed()

// gens numbers changes to flow tables; seqs numbers rules (both across
// bridges: only their order matters).
var gens, seqs atomic.Uint64

func hashKey(k *ofp.Flow) uint64 { return maphash.Comparable(hashSeed, *k) }

// flowHead is an ofp.Flow up to its tun_metadata.
type flowHead struct {
	flow.Key
	Regs            [16]uint32
	Metadata        uint64
	PktMark, ConjID uint32
}

// hash is the hash of k, a flow masked by st's mask, in st.
func (st *subtable) hash(k *ofp.Flow) uint64 {
	if st.tunmd {
		return hashKey(k)
	}
	return maphash.Comparable(hashSeed, flowHead{k.Key, k.Regs, k.Metadata, k.PktMark, k.ConjID})
}

// before reports whether a ranks before b: higher priority, then older.
func (a *rule) before(b *rule) bool {
	return a.priority > b.priority || a.priority == b.priority && a.seq < b.seq
}

// lookup returns the best rule matching f, adding to wc the mask of
// every subtable it consulted. Subtables are visited by decreasing max
// priority; the search stops at the first whose rules all rank below
// the match found, so a packet agreeing with f on wc finds the same.
func (t *table) lookup(f, wc *ofp.Flow) *rule {
	if t == nil {
		return nil
	}
	return t.search(f, wc, true)
}

// search is lookup; conj says whether conjunctive clauses count (they
// do not in the lookup that follows a conjunctive match).
func (t *table) search(f, wc *ofp.Flow, conj bool) *rule {
	var best *rule
	var soft []*rule // conjunctive clauses that matched (conj.go)
	for _, st := range t.subs {
		if best != nil && st.maxPrio < best.priority {
			break
		}
		// OVS's staged lookup: a subtable none of whose rules has f's
		// in_port adds only its metadata fields to the megaflow; one
		// with L3 fields none of whose rules has f's Ethernet type
		// (every rule there has an IP, IPv6 or ARP type, their fields'
		// prerequisite) adds its fields up to L2.
		if st.inPorts != nil && st.inPorts[f.InPort] == 0 {
			wc.Or(&st.meta)
			continue
		}
		if st.l3 {
			if i := l3Index(f.EthType); i < 0 || st.types[i] == 0 {
				wc.Or(&st.l2)
				continue
			}
		}
		var k ofp.Flow
		if st.tunmd {
			wc.Or(&st.mask)
			k = f.Masked(&st.mask)
		} else {
			wc.OrHead(&st.mask)
			f.MaskHead(&st.mask, &k)
		}
		h := st.hash(&k)
		for _, r := range st.shards[h&uint64(len(st.shards)-1)].rules[h] {
			if r.match.Flow != k {
				continue
			}
			if r.conjunctive() {
				if conj {
					soft = append(soft, r)
				}
				continue
			}
			if best == nil || r.before(best) {
				best = r
			}
			break
		}
	}
	if soft != nil {
		return t.conjunctiveMatch(f, wc, best, soft)
	}
	return best
}

// find returns the rule with exactly m and prio (a strict match).
func (t *table) find(m *ofp.Match, prio uint16) *rule {
	if t == nil {
		return nil
	}
	for _, st := range t.subs {
		if st.mask != m.Mask {
			continue
		}
		h := st.hash(&m.Flow)
		for _, r := range st.shards[h&uint64(len(st.shards)-1)].rules[h] {
			if r.match.Flow == m.Flow && r.priority == prio {
				return r
			}
		}
	}
	return nil
}

// each calls fn with every rule of t, in no particular order.
func (t *table) each(fn func(*rule)) {
	if t == nil {
		return
	}
	for _, st := range t.subs {
		for _, sh := range st.shards {
			for _, l := range sh.rules {
				for _, r := range l {
					fn(r)
				}
			}
		}
	}
}

// sorted returns t's rules by priority, highest first, ties in
// insertion order.
func (t *table) sorted() []*rule {
	var rs []*rule
	t.each(func(r *rule) { rs = append(rs, r) })
	slices.SortFunc(rs, byRank)
	return rs
}

func byRank(a, b *rule) int {
	switch {
	case a.before(b):
		return -1
	case b.before(a):
		return 1
	}
	return 0
}

func (t *table) len() int {
	if t == nil {
		return 0
	}
	return t.n
}

// mutable returns a copy of table id of ft that change gen may write.
func (ft *flowTables) mutable(id uint8, gen uint64) *table {
	t := ft.t[id]
	if t != nil && t.gen == gen {
		return t
	}
	n := &table{gen: gen}
	if t != nil {
		n.subs, n.n, n.timed = slices.Clone(t.subs), t.n, t.timed
	}
	ft.t[id] = n
	return n
}

func (st *subtable) mutable(gen uint64) *subtable {
	if st.gen == gen {
		return st
	}
	n := *st
	n.gen, n.prios, n.shards = gen, maps.Clone(st.prios), slices.Clone(st.shards)
	if st.inPorts != nil {
		n.inPorts = maps.Clone(st.inPorts)
	}
	return &n
}

func (st *subtable) shard(h, gen uint64) *shard {
	i := h & uint64(len(st.shards)-1)
	sh := st.shards[i]
	if sh.gen != gen {
		sh = &shard{gen: gen, rules: maps.Clone(sh.rules)}
		st.shards[i] = sh
	}
	return sh
}

// put adds r to t (a change of generation gen); old, if not nil, is the
// rule with r's match and priority that r replaces.
func (t *table) put(r, old *rule, gen uint64) {
	i := slices.IndexFunc(t.subs, func(st *subtable) bool { return st.mask == r.match.Mask })
	var st *subtable
	if i < 0 {
		st = &subtable{gen: gen, mask: r.match.Mask, tunmd: r.match.Mask.HasTunMD(), prios: map[uint16]int{},
			shards: []*shard{{gen: gen, rules: map[uint64][]*rule{}}}}
		var l3 ofp.Flow
		st.l2, l3 = splitL3(&st.mask)
		st.l3 = l3 != ofp.Flow{}
		st.meta = st.l2
		k := &st.meta.Key
		k.EthDst, k.EthSrc, k.EthType, k.VLANTCI, k.VLANTPID = [6]byte{}, [6]byte{}, 0, 0, 0
		if st.mask.InPort == ^uint32(0) {
			st.inPorts = map[uint32]int32{}
		}
		t.subs = append(t.subs, st)
		i = len(t.subs) - 1
	} else {
		st = t.subs[i].mutable(gen)
		t.subs[i] = st
	}
	h := st.hash(&r.match.Flow)
	sh := st.shard(h, gen)
	l := sh.rules[h]
	t.timed += r.isTimed()
	if old != nil {
		t.timed -= old.isTimed()
		l = slices.Clone(l)
		l[slices.Index(l, old)] = r
		sh.rules[h] = l
		return
	}
	j := 0
	for j < len(l) && l[j].before(r) {
		j++
	}
	sh.rules[h] = slices.Insert(slices.Clip(l), j, r)
	st.n++
	t.n++
	st.prios[r.priority]++
	if i := l3Index(r.match.Flow.EthType); i >= 0 {
		st.types[i]++
	}
	if st.inPorts != nil {
		st.inPorts[r.match.Flow.InPort]++
	}
	if st.n == 1 || r.priority > st.maxPrio {
		st.maxPrio = r.priority
		t.resort()
	}
	if 2*st.n > len(st.shards)*len(st.shards) {
		st.grow(gen)
	}
}

// remove takes r out of t (a change of generation gen).
func (t *table) remove(r *rule, gen uint64) {
	i := slices.IndexFunc(t.subs, func(st *subtable) bool { return st.mask == r.match.Mask })
	st := t.subs[i].mutable(gen)
	t.subs[i] = st
	h := st.hash(&r.match.Flow)
	sh := st.shard(h, gen)
	l := slices.DeleteFunc(slices.Clone(sh.rules[h]), func(o *rule) bool { return o == r })
	if len(l) == 0 {
		delete(sh.rules, h)
	} else {
		sh.rules[h] = l
	}
	st.n--
	t.n--
	t.timed -= r.isTimed()
	if i := l3Index(r.match.Flow.EthType); i >= 0 {
		st.types[i]--
	}
	if st.inPorts != nil {
		if st.inPorts[r.match.Flow.InPort]--; st.inPorts[r.match.Flow.InPort] == 0 {
			delete(st.inPorts, r.match.Flow.InPort)
		}
	}
	if st.n == 0 {
		t.subs = slices.Delete(t.subs, i, i+1)
		return
	}
	if st.prios[r.priority]--; st.prios[r.priority] == 0 {
		delete(st.prios, r.priority)
		if r.priority == st.maxPrio {
			st.maxPrio = 0
			for p := range st.prios {
				st.maxPrio = max(st.maxPrio, p)
			}
			t.resort()
		}
	}
}

func (r *rule) isTimed() int {
	if r.idle != 0 || r.hard != 0 {
		return 1
	}
	return 0
}

func (t *table) resort() {
	slices.SortStableFunc(t.subs, func(a, b *subtable) int { return int(b.maxPrio) - int(a.maxPrio) })
}

// grow doubles st's shards (st is of generation gen).
func (st *subtable) grow(gen uint64) {
	n := make([]*shard, 2*len(st.shards))
	for i := range n {
		n[i] = &shard{gen: gen, rules: map[uint64][]*rule{}}
	}
	for _, sh := range st.shards {
		for h, l := range sh.rules {
			n[h&uint64(len(n)-1)].rules[h] = l
		}
	}
	st.shards = n
}

// l3Index numbers the Ethernet types whose fields past L2 a flow may
// match (IPv4, IPv6, ARP, RARP); -1 for others.
func l3Index(t uint16) int {
	switch t {
	case flow.EthTypeIPv4:
		return 0
	case flow.EthTypeIPv6:
		return 1
	case flow.EthTypeARP:
		return 2
	case flow.EthTypeRARP:
		return 3
	}
	return -1
}

// splitL3 splits mask m into its L3 and L4 fields (IP, IPv6, ARP, ND,
// transport) and the rest (OVS's classifier stages up to L2).
func splitL3(m *ofp.Flow) (l2, l3 ofp.Flow) {
	l2 = *m
	k := &l2.Key
	l3k := &l3.Key
	l3k.IPv6Label, k.IPv6Label = k.IPv6Label, 0
	l3k.TpSrc, l3k.TpDst, l3k.TCPFlags = k.TpSrc, k.TpDst, k.TCPFlags
	k.TpSrc, k.TpDst, k.TCPFlags = 0, 0, 0
	l3k.NwProto, l3k.NwTOS, l3k.NwTTL, l3k.NwFrag = k.NwProto, k.NwTOS, k.NwTTL, k.NwFrag
	k.NwProto, k.NwTOS, k.NwTTL, k.NwFrag = 0, 0, 0, 0
	l3k.IPv4Src, l3k.IPv4Dst, l3k.IPv6Src, l3k.IPv6Dst = k.IPv4Src, k.IPv4Dst, k.IPv6Src, k.IPv6Dst
	k.IPv4Src, k.IPv4Dst, k.IPv6Src, k.IPv6Dst = [4]byte{}, [4]byte{}, [16]byte{}, [16]byte{}
	l3k.ArpSHA, l3k.ArpTHA, k.ArpSHA, k.ArpTHA = k.ArpSHA, k.ArpTHA, [6]byte{}, [6]byte{}
	l3k.NdTarget, l3k.NdReserved, l3k.NdOptionsType = k.NdTarget, k.NdReserved, k.NdOptionsType
	k.NdTarget, k.NdReserved, k.NdOptionsType = [16]byte{}, 0, 0
	return l2, l3
}
