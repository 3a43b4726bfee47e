package ofproto

import (
	"cmp"
	"slices"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// conjunctive reports whether r is a clause of conjunctive matches (its
// actions are conjunction actions, and perhaps notes): such a rule is
// never the result of a lookup, it only counts towards its conjunctions.
func (r *rule) conjunctive() bool { return r.conj }

// conjunctiveMatch resolves a lookup that matched conjunctive clauses
// (soft) besides its best ordinary rule (hard, perhaps nil), as OVS's
// classifier_lookup__ and find_conjunctive_match: among the clauses
// ranking above hard, the highest priority at which every clause of
// some conjunction matched gives its id to conj_id, and the lookup with
// conj_id set (no clause counting) gives the rule; if it finds none,
// lower priorities are tried, and hard is the answer when no conjunction
// is complete. wc gets the masks of every lookup made.
func (t *table) conjunctiveMatch(f, wc *ofp.Flow, hard *rule, soft []*rule) *rule {
	slices.SortFunc(soft, func(a, b *rule) int { return cmp.Compare(b.priority, a.priority) })
	for {
		if hard != nil {
			soft = slices.DeleteFunc(soft, func(r *rule) bool { return r.priority <= hard.priority })
		}
		id, prio, ok := completeConjunction(soft)
		if !ok {
			return hard
		}
		saved := f.ConjID
		f.ConjID = id
		r := t.search(f, wc, false)
		f.ConjID = saved
		if r != nil {
			return r
		}
		soft = slices.DeleteFunc(soft, func(r *rule) bool { return r.priority >= prio })
	}
}

// completeConjunction returns the id and priority of the highest-priority
// conjunction whose clauses all appear in soft (sorted by decreasing
// priority); the smallest id of those complete at that priority.
func completeConjunction(soft []*rule) (id uint32, prio uint16, ok bool) {
	type key struct {
		id uint32
		n  uint8
	}
	for len(soft) > 0 {
		p := soft[0].priority
		n := 1
		for n < len(soft) && soft[n].priority == p {
			n++
		}
		clauses := map[key]uint64{}
		for _, r := range soft[:n] {
			for i := range r.actions() {
				if a := &r.actions()[i]; a.Type == ofp.ActConjunction {
					clauses[key{a.ID, a.NClauses}] |= 1 << a.Clause
				}
			}
		}
		for k, bits := range clauses {
			if bits == ^uint64(0)>>(64-k.n) && (!ok || k.id < id) {
				id, prio, ok = k.id, p, true
			}
		}
		if ok {
			return id, prio, true
		}
		soft = soft[n:]
	}
	return 0, 0, false
}
