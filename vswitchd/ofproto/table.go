package ofproto

import (
	"hash/maphash"
	"maps"
	"math/bits"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

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
	// What a hit reads comes first (the lookup: conj, priority, keyp;
	// the translation: stats, acts, nacts, table), in the first cache
	// line of the rule's allocation, which boxRule makes one with its
	// key and counters.
	table uint8
	// conj says whether the actions have a conjunction (conjunctive()),
	// so that a lookup need not read them.
	conj     bool
	priority uint16
	idle     uint16
	hard     uint16
	flags    uint16
	imp      uint16
	// acts and nacts are the actions (actions()), often shared with
	// other rules (internActions): an array, not a slice, saves 16 bytes.
	nacts uint32
	acts  *ofp.Action
	// mask and keyp are the match (rulematch.go): the mask, shared, and
	// the flow's bits under each of mask.mws (key, len(mask.mws) words
	// from keyp); tunMD the match's tun_metadata fields as decoded
	// (ofp.Match.TunMD), nil if none.
	keyp  *uint64
	stats *ruleStats
	mask  *ruleMask
	tunMD *[]ofp.TunMDEntry
	// created and modified are bridge clock readings (for duration and
	// the hard timeout, which counts from the last modification).
	created, modified time.Duration
	cookie            uint64
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

// outputsTo reports whether r's actions output to port / group (the
// out_port / out_group filters; ANY passes all).
func (r *rule) outputsTo(port, group uint32) bool {
	if port != ofp.PortAny && !slices.Contains(ofp.Outputs(r.actions()), port) {
		return false
	}
	return group == ofp.GroupAny || slices.Contains(ofp.Groups(r.actions()), group)
}

// flowTables is an immutable set of tables once published; a change
// makes a new one, copying only the parts it changes (see gen), and
// swaps it in, so that the packet path reads a consistent snapshot
// without locks. The tables are in chunks of chunkTables, so that a
// change copies the chunk of the table it changes rather than an array
// of all 255 tables (2 KB).
type flowTables struct {
	chunks [(NumTables + chunkTables - 1) / chunkTables]*tableChunk // nil: all empty
	// groups are the OpenFlow groups by id (group.go), copied whole on
	// change.
	groups map[uint32]*group
	// prefixes are the prefix fields of the tables configured otherwise
	// than OVS's default (Flow_Table prefixes), replaced whole on change.
	prefixes map[uint8]prefixes
}

const chunkTables = 16

// tableChunk holds tables chunkTables*i to chunkTables*i+chunkTables-1;
// gen as a table's.
//
// A lookup reads a table's probes (probe.go) from its chunk, pp[j] and
// pn[j] being t[j].probes' array and length, rather than through the
// table: a first packet after a while finds the tables out of the cache,
// and table then probes were two dependent misses a lookup, where a
// chunk's pn and pp lines serve all its tables. pn[j] is staleProbes
// while a change may be changing t[j] (mutable marks it), then the
// lookup reads the table; publish brings them up to date.
type tableChunk struct {
	gen uint64
	pn  [chunkTables]uint32
	pp  [chunkTables]*probe
	t   [chunkTables]*table // nil: empty
}

const staleProbes = ^uint32(0)

// table returns table id (nil if it is empty).
func (ft *flowTables) table(id int) *table {
	if c := ft.chunks[id/chunkTables]; c != nil {
		return c.t[id%chunkTables]
	}
	return nil
}

// lookup is table(id).lookup, reading the table's probes from its chunk.
func (ft *flowTables) lookup(id int, f, wc *ofp.Flow) *rule {
	t, probes := ft.probes(id)
	return t.searchIn(probes, f, wc, true)
}

// probes returns table id (nil if it is empty) and its probes, as its
// chunk holds them unless stale. Small enough to be inlined: a lookup's
// frames, one set per nested resubmit, are stack lines a first packet
// writes cold.
func (ft *flowTables) probes(id int) (*table, []probe) {
	c := ft.chunks[id/chunkTables]
	if c == nil {
		return nil, nil
	}
	j := id % chunkTables
	if n := c.pn[j]; n != staleProbes {
		return c.t[j], unsafe.Slice(c.pp[j], n)
	}
	return c.t[j], c.t[j].probes
}

// seal brings the probes of ft's chunks up to date (tableChunk), ft
// being about to be published: its chunks with stale entries are this
// change's, which no packet reads yet.
func (ft *flowTables) seal() {
	for _, c := range ft.chunks {
		if c == nil {
			continue
		}
		for j, n := range c.pn {
			if n != staleProbes {
				continue
			}
			c.pn[j], c.pp[j] = 0, nil
			if t := c.t[j]; t != nil && len(t.probes) > 0 {
				c.pn[j], c.pp[j] = uint32(len(t.probes)), &t.probes[0]
			}
		}
	}
}

// publish makes ft, a change's tables, the bridge's.
func (br *Bridge) publish(ft *flowTables) {
	ft.seal()
	br.tables.Store(ft)
}

// A table is a tuple-space classifier, as OVS's: one subtable per
// distinct mask, each a hash on the masked key. Every node (table,
// subtable, hash trie node) carries the generation of the change that
// made it: a change with generation g copies a node of an older
// generation before writing it and writes in place a node of generation
// g (made by this very change, not yet published). Copies are thus
// bounded by the path to what changes: a table's subtable list, a
// subtable, and a path down its trie (a few nodes of trieFan pointers
// and a leaf of at most leafMax hashes), a kilobyte or two whatever the
// table's size.
type table struct {
	gen  uint64
	subs []*subtable // by max priority, highest first
	// probes are the subtables' probes, probes[i] subs[i]'s (probe.go);
	// pgen is the generation of the change that made the array (a
	// table's copies share it until a probe changes, which most flow
	// mods leave alone: see setProbe).
	probes []probe
	pgen   uint64
	n      int
	// timed counts the rules with an idle or hard timeout (expiry
	// visits only tables that have some).
	timed int
	// pfx are the fields the table keeps prefix tries on, tries[j] that
	// of pfx.fs[j] (prefixtrie.go).
	pfx   prefixes
	tries [maxTries]*ptrie
}

type subtable struct {
	// What a lookup reads comes first, in a cache line or two: a
	// first packet after a while finds little of a pipeline's hundred
	// subtables in the cache.

	gen uint64
	// mws are the words of mask that have bits: a lookup masks, hashes
	// and compares those only.
	mws     []maskWord
	maxPrio uint16
	// nfew is how many hashes the subtable's rules have, if at most
	// len(few), which then holds them, and -1 otherwise: most lookups
	// are misses, which few answers without the shards and their maps.
	nfew int8
	few  [4]uint64
	// OVS's staged lookup (see search): inPorts counts the rules by
	// in_port when mask has all of in_port (else nil); l3 says mask has
	// L3 or L4 fields, types counts the rules by Ethernet type
	// (l3Index); metaWs and l2Ws are the words of mask's fields before
	// L2 and up to L2.
	inPorts map[uint32]int32
	l3      bool
	// pfx: the mask has a CIDR prefix on some prefix field (plens).
	pfx          bool
	types        [4]int32
	metaWs, l2Ws []maskWord
	// plens are the lengths of mask's CIDR prefixes on the prefix
	// fields (0: none, or not a prefix).
	plens [numPrefixFields]uint8
	// stageWs, if not nil, are the words of a mask that has fields of
	// the last stage (L4, ND, ARP's hardware addresses) and of L3: the
	// first nUp (upWs) those of the mask but the last stage's fields,
	// hashed for OVS's L3 index, the others (lastWs) the last stage's;
	// rules are then by stagedHash (stage.go). portsLen is the length of
	// the mask's prefix on the ports (tp_src, tp_dst as 32 bits), ports
	// the trie of the rules' ports (OVS's ports trie).
	stageWs       []maskWord
	nUp, portsLen uint8
	ports         *ptrie
	rules         *tnode      // the rule lists by hash
	prios         []prioCount // rules per priority, highest first, for maxPrio
	n             int
	// mask is the subtable's rules', shared with them and with the
	// subtable's versions (a Flow is 840 bytes, which a change would
	// otherwise copy); mws is mask.mws.
	mask *ruleMask
}

// mayHave reports whether st may have rules with hash h.
func (st *subtable) mayHave(h uint64) bool {
	if st.nfew < 0 {
		return true
	}
	for _, f := range st.few[:st.nfew] {
		if f == h {
			return true
		}
	}
	return false
}

// addHash records that st has rules with hash h, which it had none with.
func (st *subtable) addHash(h uint64) {
	switch {
	case st.nfew < 0:
	case int(st.nfew) < len(st.few):
		st.few[st.nfew] = h
		st.nfew++
	default:
		st.nfew = -1
	}
}

// delHash records that st has no more rules with hash h.
func (st *subtable) delHash(h uint64) {
	if st.nfew < 0 {
		return
	}
	for i, f := range st.few[:st.nfew] {
		if f == h {
			st.nfew--
			st.few[i] = st.few[st.nfew]
			st.few[st.nfew] = 0
			return
		}
	}
}

// tnode is a node of a subtable's hash trie: a persistent map from a
// masked key's hash to the rules of that hash, by priority, highest
// first, ties in insertion order. An interior node (kids not nil) has
// trieFan children, chosen by the next trieBits bits of the hash from
// the lowest; a leaf holds the rules of up to leafMax hashes, rs[i] of
// hash hs[i], a hash's rules adjacent and in order, and splits past
// that. A change copies the nodes on the path to what it changes, not a
// shard of the table as the map it replaces did (which at 100 000 flows
// copied some 6 KB per flow mod). A leaf keeps a rule in two words, not
// in a list of its hash's (a slice header, a pointer and the list's
// allocation).
type tnode struct {
	gen  uint64
	kids []*tnode
	hs   []uint64
	rs   []*rule
}

const (
	trieBits = 5
	trieFan  = 1 << trieBits
	leafMax  = 16
)

// get returns the rules of hash h under n, which the caller must not
// change.
func (n *tnode) get(h uint64) []*rule {
	for s := uint(0); n != nil; s += trieBits {
		if n.kids == nil {
			i, j := n.run(h)
			return n.rs[i:j:j]
		}
		n = n.kids[(h>>s)&(trieFan-1)]
	}
	return nil
}

// run returns where the rules of hash h are in leaf n, rs[i:j]: if it
// has none, i == j == len(rs), where they would go.
func (n *tnode) run(h uint64) (i, j int) {
	i = 0
	for i < len(n.hs) && n.hs[i] != h {
		i++
	}
	j = i
	for j < len(n.hs) && n.hs[j] == h {
		j++
	}
	return i, j
}

// edit returns n (a trie at depth s bits) with the rules of hash h as fn
// leaves them: fn gets the leaf of h, private to generation gen, and
// where its rules are in it (run), and changes the leaf's hs and rs
// there. edit copies the nodes on the way that are not of generation gen
// and changes those that are in place.
func (n *tnode) edit(h, gen uint64, s uint, fn func(l *tnode, i, j int)) *tnode {
	if n == nil {
		n = &tnode{gen: gen}
	} else {
		n = n.private(gen)
	}
	if n.kids != nil {
		k := (h >> s) & (trieFan - 1)
		n.kids[k] = n.kids[k].edit(h, gen, s+trieBits, fn)
		if n.kids[k] == nil && !slices.ContainsFunc(n.kids, func(k *tnode) bool { return k != nil }) {
			return nil // no node is empty (hasLow counts on it)
		}
		return n
	}
	i, j := n.run(h)
	fn(n, i, j)
	if len(n.rs) == 0 {
		return nil
	}
	n.splitFull(gen, s)
	return n
}

// set returns n (a trie at depth s bits) with l as the rules of hash h,
// none if l is empty, as edit.
func (n *tnode) set(h uint64, l []*rule, gen uint64, s uint) *tnode {
	return n.edit(h, gen, s, func(n *tnode, i, j int) {
		hs := make([]uint64, len(l))
		for k := range hs {
			hs[k] = h
		}
		n.hs = slices.Replace(n.hs, i, j, hs...)
		n.rs = slices.Replace(n.rs, i, j, l...)
	})
}

// private returns n if it is of generation gen, else a copy that is.
func (n *tnode) private(gen uint64) *tnode {
	if n.gen == gen {
		return n
	}
	c := &tnode{gen: gen}
	if n.kids != nil {
		c.kids = slices.Clone(n.kids)
	} else {
		c.hs = append(make([]uint64, 0, len(n.hs)+1), n.hs...)
		c.rs = append(make([]*rule, 0, len(n.rs)+1), n.rs...)
	}
	return c
}

// splitFull splits n, a leaf of generation gen at depth s bits, if it
// holds the rules of more than leafMax hashes.
func (n *tnode) splitFull(gen uint64, s uint) {
	if len(n.hs) <= leafMax || s+trieBits >= 64 {
		return
	}
	d := 1
	for i := 1; i < len(n.hs); i++ {
		if n.hs[i] != n.hs[i-1] {
			d++
		}
	}
	if d > leafMax {
		n.split(gen, s)
	}
}

// split makes n, a leaf of generation gen at depth s bits, an interior
// node with its rules in new leaves.
func (n *tnode) split(gen uint64, s uint) {
	kids := make([]*tnode, trieFan)
	for i, h := range n.hs {
		k := (h >> s) & (trieFan - 1)
		if kids[k] == nil {
			kids[k] = &tnode{gen: gen}
		}
		kids[k].hs = append(kids[k].hs, h)
		kids[k].rs = append(kids[k].rs, n.rs[i])
	}
	for _, k := range kids {
		if k != nil {
			k.hs, k.rs = slices.Clip(k.hs), slices.Clip(k.rs)
			k.splitFull(gen, s+trieBits)
		}
	}
	n.kids, n.hs, n.rs = kids, nil, nil
}

// each calls fn with the rules of each leaf under n.
func (n *tnode) each(fn func([]*rule)) {
	if n == nil {
		return
	}
	for _, k := range n.kids {
		k.each(fn)
	}
	if len(n.rs) > 0 {
		fn(n.rs)
	}
}

// hashSeed makes the hashes of masked flows differ from process to
// process.
var hashSeed = maphash.Comparable(maphash.MakeSeed(), 0)

// gens numbers changes to flow tables; seqs numbers rules (both across
// bridges: only their order matters).
var gens, seqs atomic.Uint64

// flowWords is how many 64-bit words of an ofp.Flow a match or mask has
// bits in: all but TunTab. The fields before it have no padding (checked
// below), so a flow's bits are those of its words.
const flowWords = unsafe.Offsetof(ofp.Flow{}.TunTab) / 8

var (
	_ [unsafe.Offsetof(ofp.Flow{}.Regs) - flow.KeySize]struct{}
	_ [flow.KeySize - unsafe.Offsetof(ofp.Flow{}.Regs)]struct{}
	_ [unsafe.Offsetof(ofp.Flow{}.Metadata) - unsafe.Offsetof(ofp.Flow{}.Regs) - 64]struct{}
	_ [unsafe.Offsetof(ofp.Flow{}.Regs) + 64 - unsafe.Offsetof(ofp.Flow{}.Metadata)]struct{}
	_ [unsafe.Offsetof(ofp.Flow{}.TunMD) - unsafe.Offsetof(ofp.Flow{}.Metadata) - 16]struct{}
	_ [unsafe.Offsetof(ofp.Flow{}.Metadata) + 16 - unsafe.Offsetof(ofp.Flow{}.TunMD)]struct{}
	_ [unsafe.Offsetof(ofp.Flow{}.TunMDPresent) - unsafe.Offsetof(ofp.Flow{}.TunMD) - ofp.TLVOptionSpace]struct{}
	_ [unsafe.Offsetof(ofp.Flow{}.TunMD) + ofp.TLVOptionSpace - unsafe.Offsetof(ofp.Flow{}.TunMDPresent)]struct{}
	_ [unsafe.Offsetof(ofp.Flow{}.TunTab) - unsafe.Offsetof(ofp.Flow{}.TunMDPresent) - 8]struct{}
	_ [unsafe.Offsetof(ofp.Flow{}.TunMDPresent) + 8 - unsafe.Offsetof(ofp.Flow{}.TunTab)]struct{}
	_ [unsafe.Alignof(ofp.Flow{}) - 8]struct{}
)

// wordsOf views f's bits as native-endian words.
func wordsOf(f *ofp.Flow) *[flowWords]uint64 { return (*[flowWords]uint64)(unsafe.Pointer(f)) }

// maskWord is one word of a subtable's mask that has bits: its index in
// the flow and its bits.
type maskWord struct {
	i uint8
	m uint64
}

var _ [255 - flowWords]struct{} // a word index fits in maskWord.i

// maskWordsOf returns the words of m that have bits, in order.
func maskWordsOf(m *ofp.Flow) []maskWord {
	var mws []maskWord
	for i, w := range wordsOf(m) {
		if w != 0 {
			mws = append(mws, maskWord{uint8(i), w})
		}
	}
	return mws
}

// orWords ors the mask words mws into ww.
func orWords(ww *[flowWords]uint64, mws []maskWord) {
	for _, w := range mws {
		ww[w.i] |= w.m
	}
}

func mulMix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// hashWords hashes the flow of words fw under the mask words mws.
func hashWords(fw *[flowWords]uint64, mws []maskWord) uint64 {
	h := hashSeed ^ uint64(len(mws))
	for _, w := range mws {
		h = mulMix(h^(fw[w.i]&w.m), 0x9e3779b97f4a7c15^uint64(w.i))
	}
	return mulMix(h, 0xe7037ed1a0b428db)
}

// hashKey is the hash in a subtable of mask words mws of a rule's key,
// as hashWords of its flow.
func hashKey(key []uint64, mws []maskWord) uint64 {
	h := hashSeed ^ uint64(len(mws))
	key = key[:len(mws)]
	for j, w := range mws {
		h = mulMix(h^key[j], 0x9e3779b97f4a7c15^uint64(w.i))
	}
	return mulMix(h, 0xe7037ed1a0b428db)
}

// matches reports whether the flow of words fw has r's match, r being a
// rule of st: its key is fw's bits under st's mask words.
func (st *subtable) matches(r *rule, fw *[flowWords]uint64) bool {
	key := unsafe.Slice(r.keyp, len(st.mws))
	for j, w := range st.mws {
		if fw[w.i]&w.m != key[j] {
			return false
		}
	}
	return true
}

// before reports whether a ranks before b: higher priority, then older.
func (a *rule) before(b *rule) bool {
	return a.priority > b.priority || a.priority == b.priority && a.seq < b.seq
}

// lookup returns the best rule matching f, adding to wc the bits of
// every subtable's mask it consulted: all of them, or as OVS's staged
// lookup those of the stages that ruled the subtable out (in_port, the
// fields up to L2 or L3, the prefix tries' bits of the addresses, the
// ports trie's). Subtables are visited by decreasing max priority; the
// search stops, as OVS's classifier_lookup__, at the first whose rules
// all have the match's priority or lower, so a packet agreeing with f on
// wc finds the same. Of overlapping rules of one priority (whose order
// OpenFlow leaves undefined) the lookup thus gives that of the first
// subtable, as OVS gives that of the first in its order, and a
// conjunction of the priority of a rule that matches (which never wins,
// conjunctiveMatch) is not looked for past it.
func (t *table) lookup(f, wc *ofp.Flow) *rule {
	if t == nil {
		return nil
	}
	return t.search(f, wc, true)
}

// search is lookup; conj says whether conjunctive clauses count (they
// do not in the lookup that follows a conjunctive match).
func (t *table) search(f, wc *ofp.Flow, conj bool) *rule {
	return t.searchIn(t.probes, f, wc, conj)
}

// searchIn is search with t's probes, probes (t may be nil if there
// are none).
func (t *table) searchIn(probes []probe, f, wc *ofp.Flow, conj bool) *rule {
	var best *rule
	var soft []*rule // conjunctive clauses that matched (conj.go)
	var tcs [maxTries]trieCtx
	fw, ww := wordsOf(f), wordsOf(wc)
	for i := range probes {
		// The probe (probe.go) answers for a subtable that it rules out;
		// the subtable is read when it may have a match.
		p := &probes[i]
		if best != nil && p.maxPrio <= best.priority {
			break
		}
		// OVS's staged lookup: a subtable none of whose rules has f's
		// in_port adds only its metadata fields to the megaflow; one
		// with L3 fields none of whose rules has f's Ethernet type
		// (every rule there has an IP, IPv6 or ARP type, their fields'
		// prerequisite) adds its fields up to L2.
		if p.flags&probeInPort != 0 && !p.hasInPort(f.InPort, t, i) {
			if p.flags&probeWide != 0 {
				orWords(ww, t.subs[i].metaWs)
			} else {
				p.orSel(ww, &metaSel)
			}
			continue
		}
		if p.flags&probeL3 != 0 {
			if k := l3Index(f.EthType); k < 0 || p.types&(1<<k) == 0 {
				if p.flags&probeWide != 0 {
					orWords(ww, t.subs[i].l2Ws)
				} else {
					p.orSel(ww, &l2Sel)
				}
				continue
			}
		}
		// OVS's check_tries before the L3 stage: the prefix tries may
		// prove that no rule of the subtable can match, on fewer bits
		// of the addresses than its mask has.
		if p.flags&probePfx != 0 && t.trieSkip(&p.plens, f, wc, &tcs) {
			if p.flags&probeWide != 0 {
				orWords(ww, t.subs[i].l2Ws)
			} else {
				p.orSel(ww, &l2Sel)
			}
			continue
		}
		if p.flags&(probeStaged|probeWide) != 0 {
			st := t.subs[i]
			var r *rule
			if st.stageWs != nil {
				r, soft = st.searchStaged(f, wc, conj, soft)
			} else {
				r, soft = st.searchWide(fw, ww, conj, soft)
			}
			if r != nil && (best == nil || r.priority > best.priority) {
				best = r
			}
			continue
		}
		// The mask's words only: wc gets them, and the flow's bits under
		// them are hashed and compared (most masks have a few words of
		// a Flow's eighty).
		h := p.hashOr(fw, ww)
		head, may := p.find(h)
		if !may {
			continue
		}
		if head != nil && !head.conj && p.matches(head, fw) {
			// The first rule of h's, the subtable's best: no need for
			// the subtable.
			if best == nil || head.priority > best.priority {
				best = head
			}
			continue
		}
		for _, r := range t.subs[i].rules.get(h) {
			if !p.matches(r, fw) {
				continue
			}
			if r.conj {
				if conj {
					soft = append(soft, r)
				}
				continue
			}
			if best == nil || r.priority > best.priority {
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

// searchWide is search's hashed probe of st, a subtable whose mask has
// more words than a probe holds: the best rule of st matching the flow
// of words fw, with the conjunctive clauses that match added to soft if
// conj; ww gets st's mask.
func (st *subtable) searchWide(fw, ww *[flowWords]uint64, conj bool, soft []*rule) (*rule, []*rule) {
	h := hashSeed ^ uint64(len(st.mws))
	for _, w := range st.mws {
		ww[w.i] |= w.m
		h = mulMix(h^(fw[w.i]&w.m), 0x9e3779b97f4a7c15^uint64(w.i))
	}
	h = mulMix(h, 0xe7037ed1a0b428db)
	if !st.mayHave(h) {
		return nil, soft
	}
	for _, r := range st.rules.get(h) {
		if !st.matches(r, fw) {
			continue
		}
		if r.conj {
			if conj {
				soft = append(soft, r)
			}
			continue
		}
		return r, soft
	}
	return nil, soft
}

// find returns the rule with exactly m and prio (a strict match).
func (t *table) find(m *ofp.Match, prio uint16) *rule {
	if t == nil {
		return nil
	}
	i := t.subIndex(findMask(&m.Mask))
	if i < 0 {
		return nil
	}
	st := t.subs[i]
	for _, r := range st.rules.get(st.flowHash(wordsOf(&m.Flow))) {
		if r.priority == prio && r.keyIs(&m.Flow) {
			return r
		}
	}
	return nil
}

// findSame returns the rule of t with r's match and priority (r itself
// if it is in t).
func (t *table) findSame(r *rule) *rule {
	if t == nil {
		return nil
	}
	return t.findIn(t.subIndex(r.mask), r)
}

// subIndex returns the index in t.subs of the subtable of mask, -1 if
// there is none (t may be nil). A table's copies (mutable) have its
// subtables at the same indexes.
func (t *table) subIndex(mask *ruleMask) int {
	if t == nil || mask == nil {
		return -1
	}
	return slices.IndexFunc(t.subs, func(st *subtable) bool { return st.mask == mask })
}

// findIn is findSame in subtable i (subIndex of r's mask).
func (t *table) findIn(i int, r *rule) *rule {
	if i < 0 {
		return nil
	}
	st := t.subs[i]
	for _, o := range st.rules.get(st.ruleHash(r)) {
		if o.priority == r.priority && o.sameKey(r) {
			return o
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
		st.rules.each(func(l []*rule) {
			for _, r := range l {
				fn(r)
			}
		})
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
	c := ft.chunks[id/chunkTables]
	if c == nil || c.gen != gen {
		n := &tableChunk{gen: gen}
		if c != nil {
			n.pn, n.pp, n.t = c.pn, c.pp, c.t
		}
		ft.chunks[id/chunkTables], c = n, n
	}
	c.pn[id%chunkTables] = staleProbes
	t := c.t[id%chunkTables]
	if t != nil && t.gen == gen {
		return t
	}
	n := &table{gen: gen, pfx: ft.prefixesOf(id)}
	if t != nil {
		n.subs, n.probes, n.pgen, n.n, n.timed = slices.Clone(t.subs), t.probes, t.pgen, t.n, t.timed
		n.pfx, n.tries = t.pfx, t.tries
	}
	c.t[id%chunkTables] = n
	return n
}

func (st *subtable) mutable(gen uint64) *subtable {
	if st.gen == gen {
		return st
	}
	n := *st
	n.gen, n.prios = gen, slices.Clone(st.prios)
	if st.inPorts != nil {
		n.inPorts = maps.Clone(st.inPorts)
	}
	return &n
}

// put adds r to t (a change of generation gen); old, if not nil, is the
// rule with r's match and priority that r replaces.
func (t *table) put(r, old *rule, gen uint64) {
	t.putIn(t.subIndex(r.mask), r, old, gen)
}

// putIn is put with i the subIndex of r's mask.
func (t *table) putIn(i int, r, old *rule, gen uint64) {
	var st *subtable
	if i < 0 {
		st = &subtable{gen: gen, mask: r.mask, mws: r.mask.mws}
		_, l3 := splitL3(&st.mask.mask)
		st.l3 = l3 != ofp.Flow{}
		l2, meta := stageMasks(&st.mask.mask)
		st.l2Ws = maskWordsOf(&l2)
		st.metaWs = maskWordsOf(&meta)
		if st.mask.mask.InPort == ^uint32(0) {
			st.inPorts = map[uint32]int32{}
		}
		for pf := range numPrefixFields {
			st.plens[pf] = prefixLen(&st.mask.mask, pf)
			st.pfx = st.pfx || st.plens[pf] > 0
		}
		st.initStages()
		t.subs = append(t.subs, st)
		t.ownProbes()
		t.probes = append(t.probes, probe{})
		i = len(t.subs) - 1
	} else {
		st = t.subs[i].mutable(gen)
		t.subs[i] = st
	}
	h := st.ruleHash(r)
	newHash := false
	st.rules = st.rules.edit(h, gen, 0, func(l *tnode, i, j int) {
		if old != nil {
			l.rs[i+slices.Index(l.rs[i:j], old)] = r
			return
		}
		newHash = i == j
		k := i
		for k < j && l.rs[k].before(r) {
			k++
		}
		l.hs = slices.Insert(l.hs, k, h)
		l.rs = slices.Insert(l.rs, k, r)
	})
	if st.stageWs != nil && old == nil {
		st.stageAdd(r, gen)
	}
	t.timed += r.isTimed()
	if old != nil {
		t.timed -= old.isTimed()
		t.setProbe(i)
		return
	}
	if newHash {
		st.addHash(h)
	}
	st.n++
	t.n++
	if st.pfx {
		t.trieAdd(st, r, gen)
	}
	st.prios = addPrio(st.prios, r.priority)
	if i := l3Index(r.ethType()); i >= 0 {
		st.types[i]++
	}
	if st.inPorts != nil {
		st.inPorts[r.inPort()]++
	}
	if st.n == 1 || r.priority > st.maxPrio {
		st.maxPrio = r.priority
		t.resort(i)
		return
	}
	t.setProbe(i)
}

// remove takes r out of t (a change of generation gen).
func (t *table) remove(r *rule, gen uint64) {
	i := t.subIndex(r.mask)
	st := t.subs[i].mutable(gen)
	t.subs[i] = st
	h := st.ruleHash(r)
	last := false
	st.rules = st.rules.edit(h, gen, 0, func(l *tnode, i, j int) {
		k := slices.Index(l.rs[i:j], r)
		if k < 0 {
			return
		}
		k += i
		l.hs = slices.Delete(l.hs, k, k+1)
		l.rs = slices.Delete(l.rs, k, k+1)
		last = j-i == 1
	})
	if last {
		st.delHash(h)
	}
	if st.stageWs != nil {
		st.stageDel(r, gen)
	}
	st.n--
	t.n--
	if st.pfx {
		t.trieDel(st, r, gen)
	}
	t.timed -= r.isTimed()
	if i := l3Index(r.ethType()); i >= 0 {
		st.types[i]--
	}
	if st.inPorts != nil {
		p := r.inPort()
		if st.inPorts[p]--; st.inPorts[p] == 0 {
			delete(st.inPorts, p)
		}
	}
	if st.n == 0 {
		t.subs = slices.Delete(t.subs, i, i+1)
		t.ownProbes()
		t.probes = slices.Delete(t.probes, i, i+1)
		return
	}
	st.prios = delPrio(st.prios, r.priority)
	if r.priority == st.maxPrio && st.prios[0].prio != r.priority {
		st.maxPrio = st.prios[0].prio
		t.resort(i)
		return
	}
	t.setProbe(i)
}

// prioCount is how many rules of a subtable have priority prio.
type prioCount struct {
	prio uint16
	n    int32
}

// addPrio counts one more rule of priority prio in ps (by priority,
// highest first; ps is the caller's to change).
func addPrio(ps []prioCount, prio uint16) []prioCount {
	i, found := slices.BinarySearchFunc(ps, prio, func(pc prioCount, p uint16) int { return int(p) - int(pc.prio) })
	if found {
		ps[i].n++
		return ps
	}
	return slices.Insert(ps, i, prioCount{prio, 1})
}

// delPrio counts one rule of priority prio less in ps.
func delPrio(ps []prioCount, prio uint16) []prioCount {
	i, _ := slices.BinarySearchFunc(ps, prio, func(pc prioCount, p uint16) int { return int(p) - int(pc.prio) })
	if ps[i].n--; ps[i].n == 0 {
		return slices.Delete(ps, i, i+1)
	}
	return ps
}

func (r *rule) isTimed() int {
	if r.idle != 0 || r.hard != 0 {
		return 1
	}
	return 0
}

// resort puts subtable i, whose max priority changed, back in order
// (the others are), moving the probes with it and making i's anew.
func (t *table) resort(i int) {
	st := t.subs[i]
	j := i
	// A stable sort's place: after the subtables of a higher or equal
	// max priority before it, before those of an equal or lower one
	// after it.
	for j > 0 && t.subs[j-1].maxPrio < st.maxPrio {
		j--
	}
	for j < len(t.subs)-1 && t.subs[j+1].maxPrio > st.maxPrio {
		j++
	}
	if j != i {
		t.ownProbes()
	}
	switch {
	case j < i:
		copy(t.subs[j+1:i+1], t.subs[j:i])
		copy(t.probes[j+1:i+1], t.probes[j:i])
	case j > i:
		copy(t.subs[i:j], t.subs[i+1:j+1])
		copy(t.probes[i:j], t.probes[i+1:j+1])
	}
	t.subs[j] = st
	t.setProbe(j)
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
