package ofproto

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
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

// TestStagedLookupAgainstLinear checks the lookup in subtables with L3
// and L4 stages (the L3 index as stagedHash's low bits, the ports trie)
// against a linear scan, with tens to thousands of rules through adds,
// replacements and removals: the same best rule, and a mask under which
// every flow agreeing on it finds that rule too.
func TestStagedLookupAgainstLinear(t *testing.T) {
	for seed := range int64(3) {
		rng := rand.New(rand.NewSource(seed))
		var live []*rule
		ft := &flowTables{}
		randFlow := func() ofp.Flow {
			var f ofp.Flow
			f.EthType = flow.EthTypeIPv4
			if rng.Intn(10) == 0 {
				f.EthType = flow.EthTypeIPv6
			}
			f.NwProto = []uint8{6, 17, 1}[rng.Intn(3)]
			f.IPv4Dst = [4]byte{10, 0, byte(rng.Intn(4)), byte(rng.Intn(64))}
			f.IPv4Src = [4]byte{10, 1, 0, byte(rng.Intn(4))}
			f.TpDst = uint16(rng.Intn(300))
			f.TpSrc = uint16(rng.Intn(4))
			f.InPort = uint32(1 + rng.Intn(3))
			return f
		}
		nrules := []int{30, 300, 1500}[seed]
		for step := 0; step < nrules*2; step++ {
			gen := gens.Add(1)
			c := *ft
			if len(live) > nrules/2 && rng.Intn(3) == 0 {
				live = removeLive(&c, gen, live, rng.Intn(len(live)))
				ft = &c
				continue
			}
			var m ofp.Match
			m.Flow = randFlow()
			m.Mask.EthType = 0xffff
			m.Mask.NwProto = 0xff
			switch rng.Intn(5) {
			case 4: // many rules to a few L3 parts: deep in the trie
				m.Mask.IPv4Dst = [4]byte{255, 255, 0, 0}
				m.Mask.TpDst = 0xffff
			case 0:
				m.Mask.IPv4Dst = [4]byte{255, 255, 255, 255}
				m.Mask.TpDst = 0xffff
			case 1:
				m.Mask.IPv4Dst = [4]byte{255, 255, 255, 0}
				m.Mask.TpDst = 0xff00
			case 2:
				m.Mask.IPv4Src = [4]byte{255, 255, 255, 255}
				m.Mask.IPv4Dst = [4]byte{255, 255, 0, 0}
				m.Mask.TpDst = 0xffff
				m.Mask.TpSrc = 0xffff
			default:
				m.Mask.InPort = ^uint32(0)
				m.Mask.IPv4Dst = [4]byte{255, 255, 255, 255}
				m.Mask.TpSrc = 0xfffc
			}
			m.Normalize()
			prio := uint16(rng.Intn(8))
			live = putLive(&c, gen, &m, prio, live)
			ft = &c
		}
		if err := checkProbes(ft.table(0)); err != nil {
			t.Fatal(err)
		}
		for range 1000 {
			f := randFlow()
			var wc ofp.Flow
			got, want := ft.table(0).lookup(&f, &wc), linearBest(live, &f)
			if !sameBest(got, want, &f) {
				t.Fatalf("%d rules: flow %v: classifier %v, linear %v", len(live), &f, got, want)
			}
			// A flow that agrees with f on wc finds the same rule.
			g := randFlow()
			fw, gw, ww := wordsOf(&f), wordsOf(&g), wordsOf(&wc)
			for i := range gw {
				gw[i] = gw[i]&^ww[i] | fw[i]&ww[i]
			}
			if other := linearBest(live, &g); !sameBest(got, other, &g) || ft.table(0).lookup(&g, new(ofp.Flow)) != got {
				t.Fatalf("%d rules: flows %v and %v agree on mask %v but match %v and %v", len(live), &f, &g, &wc, got, other)
			}
		}
	}
}
