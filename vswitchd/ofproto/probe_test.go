package ofproto

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// checkProbes reports how t's probes differ from its subtables' (each
// probes[i] is probeOf(subs[i])) or its subtables from their order (by
// max priority, highest first), if they do.
func checkProbes(t *table) error {
	if t == nil {
		return nil
	}
	if len(t.probes) != len(t.subs) {
		return fmt.Errorf("%d probes for %d subtables", len(t.probes), len(t.subs))
	}
	for i, st := range t.subs {
		if got, want := t.probes[i], probeOf(st); got != want {
			return fmt.Errorf("subtable %d: probe %+v, want %+v", i, got, want)
		}
		if i > 0 && t.subs[i-1].maxPrio < st.maxPrio {
			return fmt.Errorf("subtable %d: max priority %d after %d", i, st.maxPrio, t.subs[i-1].maxPrio)
		}
	}
	return nil
}

// checkSealed reports how the probes ft's chunks hold for lookups differ
// from their tables' (ft sealed), if they do.
func checkSealed(ft *flowTables) error {
	for i, c := range ft.chunks {
		if c == nil {
			continue
		}
		for j, t := range c.t {
			n, p := c.pn[j], c.pp[j]
			switch {
			case n == staleProbes:
				return fmt.Errorf("table %d: probes stale", i*chunkTables+j)
			case t == nil || len(t.probes) == 0:
				if n != 0 || p != nil {
					return fmt.Errorf("table %d: %d probes in its chunk, none in the table", i*chunkTables+j, n)
				}
			case int(n) != len(t.probes) || p != &t.probes[0]:
				return fmt.Errorf("table %d: %d probes at %p in its chunk, %d at %p in the table", i*chunkTables+j, n, p, len(t.probes), &t.probes[0])
			}
		}
	}
	return nil
}

// TestProbesAgainstLinear is TestClassifierAgainstLinear with masks on
// in_port (fewer and more in_ports than a probe holds) and on up to
// eight words of a Flow (fewer and more than a probe holds), checking
// after each change that the probes are their subtables', and that old
// snapshots keep theirs.
func TestProbesAgainstLinear(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	// Fields in distinct words, each with its values 0..3.
	set := []func(f *ofp.Flow, v uint32){
		func(f *ofp.Flow, v uint32) { f.InPort = v },
		func(f *ofp.Flow, v uint32) { f.Regs[0] = v },
		func(f *ofp.Flow, v uint32) { f.Regs[4] = v },
		func(f *ofp.Flow, v uint32) { f.Regs[8] = v },
		func(f *ofp.Flow, v uint32) { f.Regs[12] = v },
		func(f *ofp.Flow, v uint32) { f.Metadata = uint64(v) << 40 },
		func(f *ofp.Flow, v uint32) { f.PktMark = v },
		func(f *ofp.Flow, v uint32) { f.EthDst[0] = byte(v) },
	}
	randFlow := func() ofp.Flow {
		var f ofp.Flow
		for _, s := range set {
			s(&f, uint32(rng.Intn(4)))
		}
		return f
	}
	var live []*rule
	ft := &flowTables{}
	var snaps []*flowTables
	words := map[int]bool{}
	for step := 0; step < 3000; step++ {
		gen := gens.Add(1)
		c := *ft
		for range 1 + rng.Intn(3) {
			if len(live) > 0 && rng.Intn(3) == 0 {
				live = removeLive(&c, gen, live, rng.Intn(len(live)))
				continue
			}
			var m ofp.Match
			// Few fields mostly, so that subtables have many rules.
			n := rng.Intn(3)
			if rng.Intn(4) == 0 {
				n = rng.Intn(len(set) + 1)
			}
			for _, j := range rng.Perm(len(set))[:n] {
				set[j](&m.Mask, 3)
				if j == 0 {
					m.Mask.InPort = ^uint32(0) // the in_port stage's
				}
			}
			words[len(maskWordsOf(&m.Mask))] = true
			f := randFlow()
			m.Flow = f.Masked(&m.Mask)
			live = putLive(&c, gen, &m, uint16(rng.Intn(6)), live)
		}
		ft = &c
		ft.seal()
		if err := checkProbes(ft.table(0)); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if err := checkSealed(ft); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if step%100 == 0 {
			snaps = append(snaps, ft)
		}
		for range 5 {
			f := randFlow()
			var wc ofp.Flow
			got, want := ft.lookup(0, &f, &wc), linearBest(live, &f)
			if !sameBest(got, want, &f) {
				t.Fatalf("step %d: flow %+v: classifier %v, linear %v", step, f, got, want)
			}
			g := randFlow()
			gw, fw, ww := wordsOf(&g), wordsOf(&f), wordsOf(&wc)
			for i := range gw {
				gw[i] = gw[i]&^ww[i] | fw[i]&ww[i]
			}
			if other := linearBest(live, &g); !sameBest(got, other, &g) || ft.table(0).lookup(&g, new(ofp.Flow)) != got {
				t.Fatalf("step %d: flows %+v and %+v agree on the megaflow but match %v and %v", step, f, g, got, other)
			}
		}
	}
	for i, s := range snaps {
		if err := checkProbes(s.table(0)); err != nil {
			t.Fatalf("snapshot %d: %v", i, err)
		}
		if err := checkSealed(s); err != nil {
			t.Fatalf("snapshot %d: %v", i, err)
		}
	}
	for _, n := range []int{1, probeWords, probeWords + 1} {
		if !words[n] {
			t.Errorf("no mask of %d words", n)
		}
	}
}

// TestLookupStopsAtMatchPriority checks OVS's stop rule: once a rule
// matches, subtables whose rules all have its priority or lower are not
// consulted, so their fields stay out of the megaflow.
func TestLookupStopsAtMatchPriority(t *testing.T) {
	ft := &flowTables{}
	gen := gens.Add(1)
	var live []*rule
	put := func(prio uint16, reg int, v uint32) *rule {
		var m ofp.Match
		m.Mask.Regs[reg], m.Flow.Regs[reg] = ^uint32(0), v
		live = putLive(ft, gen, &m, prio, live)
		return live[len(live)-1]
	}
	a := put(10, 0, 1)  // the first subtable of priority 10
	put(10, 4, 1)       // another of priority 10, in another word
	low := put(5, 8, 1) // below
	var f, wc ofp.Flow
	f.Regs[0], f.Regs[4], f.Regs[8] = 1, 2, 1
	if got := ft.table(0).lookup(&f, &wc); got != a {
		t.Fatalf("lookup %v, want %v", got, a)
	}
	if wc.Regs[4] != 0 || wc.Regs[8] != 0 {
		t.Errorf("megaflow has reg4 %#x, reg8 %#x: subtables past the match's priority consulted", wc.Regs[4], wc.Regs[8])
	}
	// A flow the first rule does not match looks further, and gets every
	// subtable down to the match.
	f.Regs[0], wc = 2, ofp.Flow{}
	if got := ft.table(0).lookup(&f, &wc); got != low {
		t.Fatalf("lookup %v, want %v", got, low)
	}
	if wc.Regs[0] != ^uint32(0) || wc.Regs[4] != ^uint32(0) || wc.Regs[8] != ^uint32(0) {
		t.Errorf("megaflow reg0 %#x reg4 %#x reg8 %#x, want all three", wc.Regs[0], wc.Regs[4], wc.Regs[8])
	}
}

// TestProbeHeadCollision checks the lookups a probe's heads cannot
// answer: a flow whose hash has the low 16 bits of a rule's but not its
// key, alone and with a rule of its own.
func TestProbeHeadCollision(t *testing.T) {
	var mask ofp.Flow
	mask.Regs[0] = ^uint32(0)
	mws := maskWordsOf(&mask)
	hashOf := func(v uint32) uint64 {
		var f ofp.Flow
		f.Regs[0] = v
		return hashWords(wordsOf(&f), mws)
	}
	// Two values whose hashes share their low 16 bits (a birthday
	// search: some thousand values suffice).
	seen := map[uint16]uint32{}
	var a, b uint32
	for v := uint32(1); ; v++ {
		h := hashOf(v)
		if u, ok := seen[uint16(h)]; ok && hashOf(u) != h {
			a, b = u, v
			break
		}
		seen[uint16(h)] = v
	}
	ft := &flowTables{}
	var live []*rule
	put := func(v uint32) *rule {
		var m ofp.Match
		m.Mask = mask
		m.Flow.Regs[0] = v
		live = putLive(ft, gens.Add(1), &m, 10, live)
		return live[len(live)-1]
	}
	lookup := func(v uint32) *rule {
		var f, wc ofp.Flow
		f.Regs[0] = v
		return ft.table(0).lookup(&f, &wc)
	}
	ra := put(a)
	if got := lookup(b); got != nil {
		t.Errorf("reg0=%d (hash low bits of %d's): %v, want none", b, a, got)
	}
	if got := lookup(a); got != ra {
		t.Errorf("reg0=%d: %v, want %v", a, got, ra)
	}
	rb := put(b)
	if got := lookup(b); got != rb {
		t.Errorf("reg0=%d with both: %v, want %v", b, got, rb)
	}
	if got := lookup(a); got != ra {
		t.Errorf("reg0=%d with both: %v, want %v", a, got, ra)
	}
	if err := checkProbes(ft.table(0)); err != nil {
		t.Fatal(err)
	}
}

// TestBridgeTablesSealed checks that what a bridge publishes holds its
// tables' probes for lookups (tableChunk) through adds, modifies and
// deletes across tables and chunks, and that a translation finds the
// flows they leave.
func TestBridgeTablesSealed(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}})
	frame := eth(macA, macB)
	mods := []fmSpec{
		{prio: 100, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {1, 0}}, actions: []ofp.Action{resubmitTo(20)}},
		{table: 20, prio: 10, actions: []ofp.Action{resubmitTo(40)}},
		{table: 20, prio: 50, match: map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}}, actions: []ofp.Action{resubmitTo(21)}},
		{table: 21, prio: 5, actions: []ofp.Action{output(3)}},
		{table: 40, prio: 5, actions: []ofp.Action{output(2)}},
		{cmd: ofp.FlowModify, table: 21, actions: []ofp.Action{resubmitTo(40)}},
		{cmd: ofp.FlowDeleteStrict, table: 20, prio: 50, match: map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}}},
		{cmd: ofp.FlowDelete, table: 40},
	}
	want := []string{"drop", "drop", "drop", "3", "3", "2", "2", "drop"}
	for i, s := range mods {
		if err := br.FlowMod(s.mod()); err != nil {
			t.Fatalf("mod %d: %v", i, err)
		}
		if err := checkSealed(br.tables.Load()); err != nil {
			t.Fatalf("mod %d: %v", i, err)
		}
		if got, _ := tb.xlate(1, frame); got != want[i] {
			t.Errorf("mod %d: actions %s, want %s", i, got, want[i])
		}
	}
}
