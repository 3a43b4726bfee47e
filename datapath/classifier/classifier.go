// Package classifier owns the megaflow classifier: a set of rules, each a
// masked flow key with a priority and a value, and the lookup of the
// highest-priority rule that matches a key. It is tuple space search as in
// OVS's lib/classifier.c and lib/dpif-netdev's dpcls: one subtable per
// distinct mask, each a hash table of masked keys, so a lookup costs one
// hash probe per mask rather than one comparison per rule.
//
// The datapath uses it with every priority equal: megaflows do not
// overlap, the first match wins, and subtables are tried in order of how
// often they matched (Rank), so the busiest mask is usually the only one
// probed. OpenFlow tables can use priorities: subtables are then tried in
// order of their highest priority, and the lookup stops as soon as no
// later subtable can hold a better rule.
//
// A subtable that loses its last rule is kept, empty, until a Rank finds
// it still empty after a whole interval: a flush of the datapath's flows
// (dpctl/del-flows, a revalidation that kills them) is usually followed by
// the same masks again, and the first packet after it then installs its
// flow into a subtable that exists instead of allocating one on the packet
// path.
//
// A Classifier is not safe for concurrent use; its owner serializes
// access.
package classifier

import (
	"math/bits"
	"slices"

	"github.com/govs/govs/datapath/flow"
)

// Rule is one entry: it matches the keys k with k&*Mask == Key.
type Rule[T any] struct {
	// Key is the match, already masked: bits outside Mask are zero.
	Key flow.Key
	// Mask is its subtable's, shared by the rules of that mask and never
	// changed (it outlives the rule's removal).
	Mask     *flow.Mask
	Priority int
	Value    T

	st *subtable[T]
	// next is a rule with the same match and a lower priority.
	next *Rule[T]
}

// Classifier is a set of rules. The zero value is empty and ready.
type Classifier[T any] struct {
	// subtables in lookup order: by highest priority, then by hits.
	subtables []*subtable[T]
	byMask    map[flow.Mask]*subtable[T]
	n         int
	// sink keeps the loads LookupBatch makes only to start cache misses.
	sink uint64
}

type subtable[T any] struct {
	mask flow.Mask
	// mw holds the mask's words; words indexes the non-zero ones, the
	// only words hashed and compared.
	mw    [flow.KeyWords]uint64
	words []uint8

	slots []slot[T] // open addressing, linear probing; len a power of two
	n     int       // rules with distinct matches (occupied slots)

	maxPri int
	nMax   int // rules at maxPri
	hits   uint64
	// idle: the subtable was empty at the last Rank and has had no rule
	// since; the next Rank drops it if it still has none.
	idle bool
}

type slot[T any] struct {
	hash uint64
	r    *Rule[T] // highest priority rule of this match; nil if free
}

// Len returns the number of rules.
func (c *Classifier[T]) Len() int { return c.n }

// Subtables returns the number of distinct masks of the rules.
func (c *Classifier[T]) Subtables() int {
	n := 0
	for _, st := range c.subtables {
		if st.n > 0 {
			n++
		}
	}
	return n
}

// Insert adds a rule matching key under mask with priority pri and value
// v, and returns it. If a rule with the same match and priority exists, it
// returns that one and false, adding nothing.
func (c *Classifier[T]) Insert(key *flow.Key, mask *flow.Mask, pri int, v T) (*Rule[T], bool) {
	return c.InsertInto(new(Rule[T]), key, mask, pri, v)
}

// InsertInto is Insert with the rule's storage given by the caller (which
// may embed it in the value, to make one allocation of both): r must be
// unused, and is left so if an equal rule is returned instead.
func (c *Classifier[T]) InsertInto(r *Rule[T], key *flow.Key, mask *flow.Mask, pri int, v T) (*Rule[T], bool) {
	if c.byMask == nil {
		c.byMask = map[flow.Mask]*subtable[T]{}
	}
	st := c.byMask[*mask]
	if st == nil {
		st = newSubtable[T](mask)
		c.byMask[*mask] = st
		c.subtables = append(c.subtables, st)
	}
	st.idle = false
	mk := key.Masked(mask)
	h := st.hash(&mk)
	i, found := st.find(&mk, h)
	if found {
		// Keep the chain in descending priority order.
		pp := &st.slots[i].r
		for *pp != nil && (*pp).Priority > pri {
			pp = &(*pp).next
		}
		if *pp != nil && (*pp).Priority == pri {
			return *pp, false
		}
		*r = Rule[T]{Key: mk, Mask: &st.mask, Priority: pri, Value: v, st: st, next: *pp}
		*pp = r
	} else {
		if (st.n+1)*2 > len(st.slots) {
			st.grow()
			i, _ = st.find(&mk, h)
		}
		*r = Rule[T]{Key: mk, Mask: &st.mask, Priority: pri, Value: v, st: st}
		st.slots[i] = slot[T]{hash: h, r: r}
		st.n++
	}
	c.n++
	switch {
	case st.nMax == 0 || pri > st.maxPri:
		st.maxPri, st.nMax = pri, 1
		c.reorder()
	case pri == st.maxPri:
		st.nMax++
	}
	return r, true
}

// Remove deletes r, which must have been returned by Insert on c. It
// reports false if r is not in c.
func (c *Classifier[T]) Remove(r *Rule[T]) bool {
	st := r.st
	if st == nil || c.byMask[st.mask] != st {
		return false
	}
	h := st.hash(&r.Key)
	i, found := st.find(&r.Key, h)
	if !found {
		return false
	}
	pp := &st.slots[i].r
	for *pp != nil && *pp != r {
		pp = &(*pp).next
	}
	if *pp == nil {
		return false
	}
	*pp = r.next
	r.next, r.st = nil, nil
	if st.slots[i].r == nil {
		st.delete(i)
	}
	c.n--
	if st.n == 0 {
		// Kept for the next rules of its mask, or until Rank.
		st.nMax = 0
		st.shrink()
		return true
	}
	if r.Priority == st.maxPri {
		st.nMax--
		if st.nMax == 0 {
			st.recomputeMax()
			c.reorder()
		}
	}
	return true
}

// Lookup returns the highest-priority rule matching k, or nil, and the
// number of subtables it probed.
func (c *Classifier[T]) Lookup(k *flow.Key) (best *Rule[T], probes int) {
	var bestSt *subtable[T]
	for _, st := range c.subtables {
		if best != nil && st.maxPri <= best.Priority {
			break
		}
		if st.n == 0 {
			continue
		}
		probes++
		if r := st.lookup(k); r != nil && (best == nil || r.Priority > best.Priority) {
			best, bestSt = r, st
		}
	}
	if bestSt != nil {
		bestSt.hits++
	}
	return best, probes
}

// MaxBatch is the most keys LookupBatch takes at once.
const MaxBatch = 64

// LookupBatch looks each of keys up as Lookup does, setting rules[i] to
// the best match of keys[i] or nil, and returns the number of subtable
// probes. Subtable by subtable, it first hashes every key and touches the
// slots and rules they lead to, then compares: the cache misses of
// different keys overlap instead of following each other, which is most of
// the cost once the subtables outgrow the caches.
func (c *Classifier[T]) LookupBatch(keys []*flow.Key, rules []*Rule[T]) (probes int) {
	n := min(len(keys), MaxBatch)
	rules = rules[:n]
	clear(rules)
	var hashes [MaxBatch]uint64
	var skip [MaxBatch]bool
	var sink uint64
	for _, st := range c.subtables {
		if st.n == 0 {
			continue
		}
		m := uint64(len(st.slots) - 1)
		active := false
		for i, k := range keys[:n] {
			if r := rules[i]; r != nil && st.maxPri <= r.Priority {
				skip[i] = true
				continue
			}
			skip[i], active = false, true
			h := st.hash(k)
			hashes[i] = h
			sink += st.slots[h&m].hash
		}
		if !active {
			break // later subtables have no higher priority
		}
		for i := range keys[:n] {
			if s := &st.slots[hashes[i]&m]; !skip[i] && s.r != nil && s.hash == hashes[i] {
				sink += s.r.Key.Word(0)
			}
		}
		for i, k := range keys[:n] {
			if skip[i] {
				continue
			}
			probes++
			if r := st.lookupHash(k, hashes[i]); r != nil && (rules[i] == nil || r.Priority > rules[i].Priority) {
				rules[i] = r
			}
		}
	}
	for _, r := range rules {
		if r != nil {
			r.st.hits++
		}
	}
	c.sink += sink
	return probes
}

// Find returns the rule with exactly this match and priority, or nil.
func (c *Classifier[T]) Find(key *flow.Key, mask *flow.Mask, pri int) *Rule[T] {
	st := c.byMask[*mask]
	if st == nil {
		return nil
	}
	mk := key.Masked(mask)
	i, found := st.find(&mk, st.hash(&mk))
	if !found {
		return nil
	}
	for r := st.slots[i].r; r != nil; r = r.next {
		if r.Priority == pri {
			return r
		}
	}
	return nil
}

// All calls fn for every rule until fn returns false. fn must not change
// the classifier.
func (c *Classifier[T]) All(fn func(*Rule[T]) bool) {
	for _, st := range c.subtables {
		for i := range st.slots {
			for r := st.slots[i].r; r != nil; r = r.next {
				if !fn(r) {
					return
				}
			}
		}
	}
}

// Clear removes every rule. The subtables stay, empty, as after Remove.
func (c *Classifier[T]) Clear() {
	c.All(func(r *Rule[T]) bool { r.st = nil; return true })
	for _, st := range c.subtables {
		st.shrink()
		clear(st.slots)
		st.n, st.nMax = 0, 0
	}
	c.n = 0
}

// Rank re-sorts the subtables of equal highest priority by the hits they
// had since the last Rank, most first, as OVS's dpcls re-sorts its
// subtables once a second, and ages the hit counts. It drops the
// subtables that were empty at the last Rank and still are.
func (c *Classifier[T]) Rank() {
	c.subtables = slices.DeleteFunc(c.subtables, func(st *subtable[T]) bool {
		switch {
		case st.n > 0:
			st.idle = false
		case !st.idle:
			st.idle = true
		default:
			delete(c.byMask, st.mask)
			return true
		}
		return false
	})
	c.reorder()
	for _, st := range c.subtables {
		st.hits /= 2
	}
}

func (c *Classifier[T]) reorder() {
	slices.SortStableFunc(c.subtables, func(a, b *subtable[T]) int {
		if a.maxPri != b.maxPri {
			if a.maxPri > b.maxPri {
				return -1
			}
			return 1
		}
		switch {
		case a.hits > b.hits:
			return -1
		case a.hits < b.hits:
			return 1
		}
		return 0
	})
}

func newSubtable[T any](m *flow.Mask) *subtable[T] {
	st := &subtable[T]{mask: *m, slots: make([]slot[T], 8)}
	for i := 0; i < flow.KeyWords; i++ {
		st.mw[i] = m.Word(i)
		if st.mw[i] != 0 {
			st.words = append(st.words, uint8(i))
		}
	}
	return st
}

// hash hashes k's words under the subtable's mask.
func (st *subtable[T]) hash(k *flow.Key) uint64 {
	h := uint64(len(st.words))
	for _, i := range st.words {
		h = mix(h^(k.Word(int(i))&st.mw[i]), 0x9e3779b97f4a7c15^uint64(i))
	}
	return mix(h, 0xe7037ed1a0b428db)
}

func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// lookup returns the rule whose match k has under the subtable's mask.
func (st *subtable[T]) lookup(k *flow.Key) *Rule[T] { return st.lookupHash(k, st.hash(k)) }

// lookupHash is lookup with k's hash h under the subtable's mask.
func (st *subtable[T]) lookupHash(k *flow.Key, h uint64) *Rule[T] {
	m := uint64(len(st.slots) - 1)
	for i := h & m; ; i = (i + 1) & m {
		s := &st.slots[i]
		if s.r == nil {
			return nil
		}
		if s.hash == h && st.matches(s.r, k) {
			return s.r
		}
	}
}

func (st *subtable[T]) matches(r *Rule[T], k *flow.Key) bool {
	for _, i := range st.words {
		if k.Word(int(i))&st.mw[i] != r.Key.Word(int(i)) {
			return false
		}
	}
	return true
}

// find returns the slot holding the masked key mk, or the free slot where
// it would go.
func (st *subtable[T]) find(mk *flow.Key, h uint64) (int, bool) {
	m := uint64(len(st.slots) - 1)
	for i := h & m; ; i = (i + 1) & m {
		s := &st.slots[i]
		if s.r == nil {
			return int(i), false
		}
		if s.hash == h && s.r.Key == *mk {
			return int(i), true
		}
	}
}

func (st *subtable[T]) grow() {
	old := st.slots
	st.slots = make([]slot[T], 2*len(old))
	m := uint64(len(st.slots) - 1)
	for _, s := range old {
		if s.r == nil {
			continue
		}
		i := s.hash & m
		for st.slots[i].r != nil {
			i = (i + 1) & m
		}
		st.slots[i] = s
	}
}

// shrink gives an empty subtable that grew large a small table again,
// so that a mask that once had many rules holds no memory while it waits.
func (st *subtable[T]) shrink() {
	if len(st.slots) > shrinkSlots {
		st.slots = make([]slot[T], 8)
	}
}

// shrinkSlots is the most slots an empty subtable keeps.
const shrinkSlots = 1024

// delete frees slot i, shifting later slots of its probe run back so that
// lookups need no tombstones.
func (st *subtable[T]) delete(i int) {
	m := len(st.slots) - 1
	st.slots[i] = slot[T]{}
	st.n--
	for j := (i + 1) & m; st.slots[j].r != nil; j = (j + 1) & m {
		home := int(st.slots[j].hash) & m
		// Move j to i if its home is not in (i, j] cyclically.
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			st.slots[i] = st.slots[j]
			st.slots[j] = slot[T]{}
			i = j
		}
	}
}

func (st *subtable[T]) recomputeMax() {
	st.nMax = 0
	for i := range st.slots {
		for r := st.slots[i].r; r != nil; r = r.next {
			switch {
			case st.nMax == 0 || r.Priority > st.maxPri:
				st.maxPri, st.nMax = r.Priority, 1
			case r.Priority == st.maxPri:
				st.nMax++
			}
		}
	}
}
