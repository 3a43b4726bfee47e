package ofproto

import (
	"maps"
	"math/rand"
	"slices"
	"testing"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// TestClassifierAgainstLinear checks the tuple-space classifier against
// the linear scan it replaced, through random adds, replacements and
// removals (some within one generation, some published): the same best
// rule for random flows, and a mask under which every flow agreeing on
// it finds that rule too. Old snapshots must not change.
func TestClassifierAgainstLinear(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	randFlow := func() ofp.Flow {
		var f ofp.Flow
		f.Regs[0], f.Regs[1], f.Regs[2] = uint32(rng.Intn(4)), uint32(rng.Intn(4)), uint32(rng.Intn(4))
		return f
	}
	var live []*rule
	ft := &flowTables{}
	type snap struct {
		ft    *flowTables
		rules []*rule
	}
	var snaps []snap
	for step := 0; step < 3000; step++ {
		gen := gens.Add(1)
		c := *ft
		for range 1 + rng.Intn(3) {
			if len(live) > 0 && rng.Intn(3) == 0 {
				live = removeLive(&c, gen, live, rng.Intn(len(live)))
				continue
			}
			var m ofp.Match
			for j := range 3 {
				if rng.Intn(2) == 0 {
					m.Mask.Regs[j] = 3
				}
			}
			m.Flow = randFlow()
			m.Normalize()
			prio := uint16(rng.Intn(4))
			live = putLive(&c, gen, &m, prio, live)
		}
		ft = &c
		ft.seal()
		if err := checkProbes(ft.table(0)); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if err := checkSealed(ft); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if c.table(0).len() != len(live) {
			t.Fatalf("step %d: %d rules, want %d", step, c.table(0).len(), len(live))
		}
		if step%100 == 0 {
			snaps = append(snaps, snap{ft, append([]*rule(nil), live...)})
		}
		for range 5 {
			f := randFlow()
			var wc ofp.Flow
			got, want := ft.lookup(0, &f, &wc), linearBest(live, &f)
			if !sameBest(got, want, &f) {
				t.Fatalf("step %d: flow %v: classifier %v, linear %v", step, f.Regs[:3], got, want)
			}
			g := randFlow()
			for j := range 3 {
				g.Regs[j] = g.Regs[j]&^wc.Regs[j] | f.Regs[j]&wc.Regs[j]
			}
			if other := linearBest(live, &g); !sameBest(got, other, &g) || ft.table(0).lookup(&g, new(ofp.Flow)) != got {
				t.Fatalf("step %d: flows %v and %v agree on mask %v but match %v and %v", step, f.Regs[:3], g.Regs[:3], wc.Regs[:3], got, other)
			}
		}
	}
	for _, s := range snaps {
		for range 20 {
			f := randFlow()
			var wc ofp.Flow
			if got, want := s.ft.table(0).lookup(&f, &wc), linearBest(s.rules, &f); !sameBest(got, want, &f) {
				t.Fatalf("an old snapshot changed: flow %v: %v, want %v", f.Regs[:3], got, want)
			}
		}
	}
}

// TestHashTrie checks a subtable's hash trie against a map through
// random sets (set or slot) and deletes, some in one generation and some published,
// with hashes that share their low bits (deep splits) as well as random
// ones: every hash finds its list, and older versions do not change.
func TestHashTrie(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	hashes := make([]uint64, 3000)
	for i := range hashes {
		hashes[i] = rng.Uint64()
		if i%3 == 0 {
			hashes[i] = hashes[i]<<40 | 0x12345 // the same 40 low bits
		}
	}
	type version struct {
		root *tnode
		want map[uint64][]*rule
	}
	var root *tnode
	want := map[uint64][]*rule{}
	var versions []version
	check := func(root *tnode, want map[uint64][]*rule) {
		t.Helper()
		n := 0
		root.each(func(l []*rule) { n += len(l) })
		total := 0
		for _, h := range hashes {
			got, w := root.get(h), want[h]
			if !slices.Equal(got, w) {
				t.Fatalf("hash %#x: %v, want %v", h, got, w)
			}
			total += len(w)
		}
		if n != total {
			t.Fatalf("each visits %d rules, want %d", n, total)
		}
	}
	for step := range 400 {
		gen := gens.Add(1)
		for range 1 + rng.Intn(40) {
			h := hashes[rng.Intn(len(hashes))]
			var l []*rule
			if rng.Intn(4) != 0 {
				for range 1 + rng.Intn(3) {
					l = append(l, &rule{seq: uint64(step)})
				}
			}
			root = root.set(h, l, gen, 0)
			if l == nil {
				delete(want, h)
			} else {
				want[h] = l
			}
		}
		check(root, want)
		if step%50 == 0 {
			versions = append(versions, version{root, maps.Clone(want)})
		}
	}
	for _, v := range versions {
		check(v.root, v.want)
	}
}

// TestHashTrieOneHash checks that a leaf holding many rules of one hash
// (one match at many priorities) does not split, and that a split keeps
// each hash's rules together and in order.
func TestHashTrieOneHash(t *testing.T) {
	gen := gens.Add(1)
	var root *tnode
	var same []*rule
	for i := range 3 * leafMax {
		same = append(same, &rule{seq: uint64(i)})
	}
	root = root.set(7, same, gen, 0)
	if root.kids != nil || !slices.Equal(root.get(7), same) {
		t.Fatalf("one hash's %d rules: split %v, get %d rules", len(same), root.kids != nil, len(root.get(7)))
	}
	for h := uint64(8); h < 8+2*leafMax; h++ {
		root = root.set(h<<trieBits|7, []*rule{{seq: h}, {seq: h + 100}}, gen, 0)
	}
	if root.kids == nil {
		t.Fatal("a leaf of more than leafMax hashes did not split")
	}
	if !slices.Equal(root.get(7), same) {
		t.Fatal("a split lost the order of a hash's rules")
	}
	for h := uint64(8); h < 8+2*leafMax; h++ {
		if l := root.get(h<<trieBits | 7); len(l) != 2 || l[0].seq != h || l[1].seq != h+100 {
			t.Fatalf("hash %d after the split: %v", h, l)
		}
	}
}

// linearBest is the reference lookup the classifier tests compare with:
// the best rule of rs (by rank) matching f, found by trying every one.
func linearBest(rs []*rule, f *ofp.Flow) *rule {
	var best *rule
	for _, r := range rs {
		if m := r.match(); f.Masked(&m.Mask) == m.Flow && (best == nil || r.before(best)) {
			best = r
		}
	}
	return best
}

// removeLive takes live[i] out of table 0 of c (a change of generation
// gen) and returns live without it.
func removeLive(c *flowTables, gen uint64, live []*rule, i int) []*rule {
	c.mutable(0, gen).remove(live[i], gen)
	return append(live[:i], live[i+1:]...)
}

// putLive puts a rule of match m and priority prio into table 0 of c at
// gen as a flow add does (one of the same match and priority is
// replaced, the new one keeping its place) and returns live, the rules
// the table should hold, kept in step.
// sameBest reports whether got, a lookup's answer for f, is a best rule
// for f as want, a linear search's (the oldest of the highest priority
// that match), is: a rule of want's priority that matches f (of
// overlapping rules of one priority a lookup gives the first it finds,
// as OVS does; OpenFlow leaves which undefined).
func sameBest(got, want *rule, f *ofp.Flow) bool {
	if got == nil || want == nil {
		return got == want
	}
	m := got.match()
	return got.priority == want.priority && f.Masked(&m.Mask) == m.Flow
}

func putLive(c *flowTables, gen uint64, m *ofp.Match, prio uint16, live []*rule) []*rule {
	r := &rule{priority: prio, stats: &ruleStats{}}
	r.setMatch(m)
	old := c.table(0).find(m, prio)
	if old != nil {
		r.seq = old.seq
		for i := range live {
			if live[i] == old {
				live[i] = r
			}
		}
	} else {
		r.seq = seqs.Add(1)
		live = append(live, r)
	}
	c.mutable(0, gen).put(r, old, gen)
	return live
}
