package ofproto

import (
	"runtime"
	"slices"
	"sync"
	"unsafe"
	"weak"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// A rule keeps its match as OVS's cls_rule does a minimask and miniflow:
// a pointer to its mask, which every rule and subtable of that mask
// shares (an ofp.Flow is 840 bytes), and the flow's bits under the mask's
// words (its key, a word or a few). Rebuilding the whole ofp.Match
// (rule.match) is for what reports or compares it; the packet path reads
// the key.

// ruleMask is a mask some rules have, interned by internMask: one per
// distinct mask while a rule or subtable holds it.
type ruleMask struct {
	mask ofp.Flow
	// mws are the words of mask that have bits, in order: a rule's key
	// has its flow's bits under each.
	mws []maskWord
}

// masks interns ruleMasks; an entry whose ruleMask the GC took is dropped
// by the cleanup internMask registers.
var masks struct {
	sync.RWMutex
	m map[ofp.Flow]weak.Pointer[ruleMask]
}

// internMask returns the ruleMask of mask m.
func internMask(m *ofp.Flow) *ruleMask {
	if rm := findMask(m); rm != nil {
		return rm
	}
	k := *m
	k.TunTab = nil
	masks.Lock()
	defer masks.Unlock()
	if rm := masks.m[k].Value(); rm != nil {
		return rm
	}
	rm := &ruleMask{mask: k, mws: maskWordsOf(&k)}
	if masks.m == nil {
		masks.m = map[ofp.Flow]weak.Pointer[ruleMask]{}
	}
	masks.m[k] = weak.Make(rm)
	runtime.AddCleanup(rm, dropMask, &k)
	return rm
}

// findMask returns the ruleMask of mask m if some rule or subtable has
// it, else nil.
func findMask(m *ofp.Flow) *ruleMask {
	if m.TunTab != nil { // as internMask keys it
		k := *m
		k.TunTab = nil
		m = &k
	}
	masks.RLock()
	defer masks.RUnlock()
	return masks.m[*m].Value()
}

// dropMask forgets the ruleMask of mask k, which the GC took, unless
// another took its place.
func dropMask(k *ofp.Flow) {
	masks.Lock()
	defer masks.Unlock()
	if wp, ok := masks.m[*k]; ok && wp.Value() == nil {
		delete(masks.m, *k)
	}
}

// setMatch makes m r's match. m must be normalized (no flow bits outside
// its mask); r keeps m.TunMD, not m.
func (r *rule) setMatch(m *ofp.Match) {
	r.mask = internMask(&m.Mask)
	r.keyp, r.tunMD = nil, nil
	if n := len(r.mask.mws); n > 0 {
		fw, key := wordsOf(&m.Flow), make([]uint64, n)
		for j, w := range r.mask.mws {
			key[j] = fw[w.i] & w.m
		}
		r.keyp = &key[0]
	}
	if m.TunMD != nil {
		t := m.TunMD // not &m.TunMD: m may be a flow mod's, which its connection reuses
		r.tunMD = &t
	}
}

// key is r's key: its flow's bits under each of its mask's words.
func (r *rule) key() []uint64 { return unsafe.Slice(r.keyp, len(r.mask.mws)) }

// match returns r's match, rebuilt.
func (r *rule) match() ofp.Match {
	m := ofp.Match{Mask: r.mask.mask}
	if r.tunMD != nil {
		m.TunMD = *r.tunMD
	}
	fw, key := wordsOf(&m.Flow), r.key()
	for j, w := range r.mask.mws {
		fw[w.i] = key[j]
	}
	return m
}

// keyIs reports whether f under r's mask is r's key.
func (r *rule) keyIs(f *ofp.Flow) bool {
	fw, key := wordsOf(f), r.key()
	for j, w := range r.mask.mws {
		if fw[w.i]&w.m != key[j] {
			return false
		}
	}
	return true
}

// sameKey reports whether r and o, which have the same mask, have the
// same key.
func (r *rule) sameKey(o *rule) bool { return slices.Equal(r.key(), o.key()) }

// flowWord returns word i of r's match's flow.
func (r *rule) flowWord(i uintptr) uint64 {
	for j, w := range r.mask.mws {
		if uintptr(w.i) >= i {
			if uintptr(w.i) == i {
				return r.key()[j]
			}
			break
		}
	}
	return 0
}

// ruleField returns the field at offset off of r's match's flow (a field
// of T's size and alignment, which no word boundary splits).
func ruleField[T uint16 | uint32](r *rule, off uintptr) T {
	w := r.flowWord(off / 8)
	return *(*T)(unsafe.Add(unsafe.Pointer(&w), off%8))
}

const (
	ethTypeOff = unsafe.Offsetof(ofp.Flow{}.Key) + unsafe.Offsetof(flow.Key{}.EthType)
	inPortOff  = unsafe.Offsetof(ofp.Flow{}.Key) + unsafe.Offsetof(flow.Key{}.InPort)
)

// ethType and inPort are the dl_type and in_port r matches (0 if any).
func (r *rule) ethType() uint16 { return ruleField[uint16](r, ethTypeOff) }
func (r *rule) inPort() uint32  { return ruleField[uint32](r, inPortOff) }

// matchesAll reports whether r matches every packet.
func (r *rule) matchesAll() bool { return len(r.mask.mws) == 0 }

// sameMatch reports whether r has exactly m and priority (strict match).
func (r *rule) sameMatch(m *ofp.Match, prio uint16) bool {
	return r.priority == prio && r.mask.mask == m.Mask && r.keyIs(&m.Flow)
}

// narrower reports whether r's match is at least as specific as m (a
// loose match: every packet r matches, m matches): m's mask is within
// r's and r's flow agrees with m's under it.
func (r *rule) narrower(m *ofp.Match) bool {
	rm, mm, mf := wordsOf(&r.mask.mask), wordsOf(&m.Mask), wordsOf(&m.Flow)
	for i := range mm {
		if mm[i]&^rm[i] != 0 {
			return false
		}
	}
	key := r.key()
	for j, w := range r.mask.mws {
		if key[j]&mm[w.i] != mf[w.i] {
			return false
		}
	}
	return true
}

// overlaps reports whether some packet could match both r and m at the
// same priority (CHECK_OVERLAP): they agree under both masks.
func (r *rule) overlaps(m *ofp.Match, prio uint16) bool {
	if r.priority != prio {
		return false
	}
	mm, mf, key := wordsOf(&m.Mask), wordsOf(&m.Flow), r.key()
	for j, w := range r.mask.mws {
		c := w.m & mm[w.i]
		if key[j]&c != mf[w.i]&c {
			return false
		}
	}
	return true
}

// actionLists interns the action lists of rules by ofp.AppendActionsKey:
// the rules with the same actions, most of a table's as controllers
// program them, share one list (an ofp.Action is 352 bytes). An entry
// goes once the GC took its list.
var actionLists struct {
	sync.Mutex
	m map[string]actionList
}

// actionList is an interned list: its first action and its length.
type actionList struct {
	first weak.Pointer[ofp.Action]
	n     int
}

// internActions returns a list equal to acts, shared with the rules that
// have the same actions; acts itself if it is empty or has actions
// ofp.AppendActionsKey does not key. Neither acts nor the list returned
// may change after.
func internActions(acts []ofp.Action) []ofp.Action {
	if len(acts) == 0 {
		return acts
	}
	var buf [256]byte
	k, ok := ofp.AppendActionsKey(buf[:0], acts)
	if !ok {
		return acts
	}
	actionLists.Lock()
	defer actionLists.Unlock()
	if l, ok := actionLists.m[string(k)]; ok {
		if p := l.first.Value(); p != nil {
			return unsafe.Slice(p, l.n)
		}
	}
	c := slices.Clone(acts)
	c = c[:len(c):len(c)]
	if actionLists.m == nil {
		actionLists.m = map[string]actionList{}
	}
	ks := string(k)
	actionLists.m[ks] = actionList{weak.Make(&c[0]), len(c)}
	runtime.AddCleanup(&c[0], dropActions, ks)
	return c
}

// dropActions forgets the list of key k, which the GC took, unless
// another took its place.
func dropActions(k string) {
	actionLists.Lock()
	defer actionLists.Unlock()
	if l, ok := actionLists.m[k]; ok && l.first.Value() == nil {
		delete(actionLists.m, k)
	}
}

// actions returns r's actions, which must not change.
func (r *rule) actions() []ofp.Action { return unsafe.Slice(r.acts, r.nacts) }

// setActions makes acts r's actions.
func (r *rule) setActions(acts []ofp.Action) {
	r.acts, r.nacts = unsafe.SliceData(acts), uint32(len(acts))
	r.conj = false
	for i := range acts {
		r.conj = r.conj || acts[i].Type == ofp.ActConjunction
	}
}

// A rule in a table is boxed: its key and, unless it shares another
// version's, its counters are in the rule's allocation (ruleBox), so
// that a first packet's hit, which finds the tables out of the cache,
// misses on one allocation rather than three (the rule, its key, its
// counters). A box of a one-word key is 128 bytes, two cache lines.
type ruleBox[K any] struct {
	r rule
	s ruleStats
	k K
}

// ruleBox0 is the box of a rule whose key is none or too long for
// boxRule's boxes (then allocated apart).
type ruleBox0 struct {
	r rule
	s ruleStats
}

// boxRule returns a copy of r boxed with its key, and with new counters
// (zero) in the box if fresh, else r's.
func boxRule(r *rule, fresh bool) *rule {
	var nr *rule
	var s *ruleStats
	var key []uint64
	switch n := len(r.mask.mws); n {
	case 1:
		b := new(ruleBox[[1]uint64])
		nr, s, key = &b.r, &b.s, b.k[:]
	case 2:
		b := new(ruleBox[[2]uint64])
		nr, s, key = &b.r, &b.s, b.k[:]
	case 3:
		b := new(ruleBox[[3]uint64])
		nr, s, key = &b.r, &b.s, b.k[:]
	case 4:
		b := new(ruleBox[[4]uint64])
		nr, s, key = &b.r, &b.s, b.k[:]
	case 5:
		b := new(ruleBox[[5]uint64])
		nr, s, key = &b.r, &b.s, b.k[:]
	case 6:
		b := new(ruleBox[[6]uint64])
		nr, s, key = &b.r, &b.s, b.k[:]
	default:
		b := new(ruleBox0)
		nr, s = &b.r, &b.s
		if n > 0 {
			key = make([]uint64, n)
		}
	}
	*nr = *r
	if len(key) > 0 {
		copy(key, r.key())
		nr.keyp = &key[0]
	}
	if fresh {
		nr.stats = s
	}
	return nr
}
