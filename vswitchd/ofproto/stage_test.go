package ofproto

import (
	"math/rand"
	"slices"
	"testing"
)

// TestTnodeHasLow: a trie of hashes whose low 32 bits are few (a
// subtable's rules by stagedHash, many to an L3 part) answers hasLow as
// a set does, through splits past bit 32 and as it empties, while older
// versions keep their answers.
func TestTnodeHasLow(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	lows := make([]uint32, 8)
	for i := range lows {
		lows[i] = rng.Uint32()
	}
	lows[1] = lows[0] ^ 1<<31 // differs from lows[0] only in the bits read past 32
	lows[2] = lows[0] ^ 1<<30
	var n *tnode
	var gen uint64
	have := map[uint64]*rule{}
	check := func(n *tnode, have map[uint64]*rule) {
		t.Helper()
		for _, u := range lows {
			want := false
			for h := range have {
				if want = uint32(h) == u; want {
					break
				}
			}
			if got := n.hasLow(u); got != want {
				t.Fatalf("%d hashes: hasLow(%#x) %v, want %v", len(have), u, got, want)
			}
		}
	}
	type version struct {
		n    *tnode
		have map[uint64]*rule
	}
	var old []version
	for i := range 6000 {
		gen++
		var hs []uint64
		for h := range have {
			hs = append(hs, h)
		}
		slices.Sort(hs)
		if i < 3000 || len(hs) == 0 || i < 5000 && rng.Intn(3) == 0 {
			// Lows 0..2 get most hashes: their runs share trie paths.
			u := lows[rng.Intn(3)]
			if rng.Intn(4) == 0 {
				u = lows[3+rng.Intn(len(lows)-3)]
			}
			h := rng.Uint64()&^0xffffffff | uint64(u)
			r := &rule{seq: uint64(i)}
			n = n.edit(h, gen, 0, func(l *tnode, i, j int) {
				l.hs = slices.Insert(l.hs, j, h)
				l.rs = slices.Insert(l.rs, j, r)
			})
			have[h] = r
		} else {
			h := hs[rng.Intn(len(hs))]
			r := have[h]
			n = n.edit(h, gen, 0, func(l *tnode, i, j int) {
				k := i + slices.Index(l.rs[i:j], r)
				l.hs = slices.Delete(l.hs, k, k+1)
				l.rs = slices.Delete(l.rs, k, k+1)
			})
			delete(have, h)
		}
		check(n, have)
		if i%500 == 0 {
			c := map[uint64]*rule{}
			for h, r := range have {
				c[h] = r
			}
			old = append(old, version{n, c})
		}
	}
	for len(have) > 0 {
		gen++
		for h, r := range have {
			n = n.edit(h, gen, 0, func(l *tnode, i, j int) {
				k := i + slices.Index(l.rs[i:j], r)
				l.hs = slices.Delete(l.hs, k, k+1)
				l.rs = slices.Delete(l.rs, k, k+1)
			})
			delete(have, h)
			break
		}
		check(n, have)
	}
	if n != nil {
		t.Errorf("an emptied trie is %+v, want nil", n)
	}
	for _, v := range old {
		check(v.n, v.have)
	}
}
