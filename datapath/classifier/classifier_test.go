package classifier

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/govs/govs/datapath/flow"
)

func key(in uint32, src, dst byte, tp uint16) flow.Key {
	return flow.Key{InPort: in, EthSrc: [6]byte{5: src}, EthDst: [6]byte{5: dst}, EthType: flow.EthTypeIPv4, TpDst: tp}
}

var (
	macMask = flow.Mask{InPort: ^uint32(0), EthSrc: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		EthDst: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, EthType: 0xffff}
	portMask = flow.Mask{InPort: ^uint32(0), TpDst: 0xffff}
	inMask   = flow.Mask{InPort: ^uint32(0)}
)

func TestPriorities(t *testing.T) {
	var c Classifier[string]
	k := key(1, 0xa, 0xb, 80)
	c.Insert(&k, &inMask, 0, "in_port=1,priority=0")
	c.Insert(&k, &portMask, 10, "tp_dst=80,priority=10")
	c.Insert(&k, &macMask, 5, "macs,priority=5")
	if _, added := c.Insert(&k, &macMask, 5, "dup"); added {
		t.Error("a second rule with the same match and priority was added")
	}
	// Same match, two priorities: the higher one wins, the lower stays.
	low, _ := c.Insert(&k, &portMask, 1, "tp_dst=80,priority=1")
	if c.Len() != 4 || c.Subtables() != 3 {
		t.Fatalf("len %d subtables %d", c.Len(), c.Subtables())
	}
	for _, tt := range []struct {
		k    flow.Key
		want string
	}{
		{key(1, 0xa, 0xb, 80), "tp_dst=80,priority=10"},
		{key(1, 0xa, 0xb, 81), "macs,priority=5"},
		{key(1, 0xa, 0xc, 81), "in_port=1,priority=0"},
		{key(2, 0xa, 0xb, 81), ""},
	} {
		r, _ := c.Lookup(&tt.k)
		got := ""
		if r != nil {
			got = r.Value
		}
		if got != tt.want {
			t.Errorf("%v: got %q, want %q", tt.k, got, tt.want)
		}
	}
	hi := c.Find(&k, &portMask, 10)
	if hi == nil || !c.Remove(hi) || c.Remove(hi) {
		t.Fatal("remove of the priority 10 rule")
	}
	if r, _ := c.Lookup(&k); r == nil || r.Value != "macs,priority=5" {
		t.Errorf("after removing priority 10: %v", r)
	}
	c.Remove(c.Find(&k, &macMask, 5))
	if r, _ := c.Lookup(&k); r != low {
		t.Errorf("after removing priority 5: %v", r)
	}
	c.Clear()
	if r, _ := c.Lookup(&k); r != nil || c.Len() != 0 || c.Remove(low) {
		t.Error("not empty after Clear")
	}
}

// With equal priorities the first subtable that matches ends the lookup,
// and Rank puts the busiest subtable first.
func TestRank(t *testing.T) {
	var c Classifier[int]
	masks := []flow.Mask{inMask, macMask, portMask}
	for i, m := range masks {
		k := key(uint32(i+1), 0xa, 0xb, 80)
		c.Insert(&k, &m, 0, i)
	}
	k := key(3, 0xa, 0xb, 80) // only portMask's rule matches
	for range 10 {
		if r, _ := c.Lookup(&k); r == nil || r.Value != 2 {
			t.Fatal("lookup failed")
		}
	}
	if _, probes := c.Lookup(&k); probes != 3 {
		t.Errorf("%d probes before Rank, want 3", probes)
	}
	c.Rank()
	if _, probes := c.Lookup(&k); probes != 1 {
		t.Errorf("%d probes after Rank, want 1", probes)
	}
}

// Many rules in one subtable: the table grows, and deletions keep every
// remaining rule reachable.
func TestGrowAndDelete(t *testing.T) {
	var c Classifier[int]
	rules := map[int]*Rule[int]{}
	kf := func(i int) flow.Key {
		k := flow.Key{InPort: 1}
		binary.BigEndian.PutUint32(k.IPv4Src[:], uint32(i))
		return k
	}
	m := flow.Mask{InPort: ^uint32(0), IPv4Src: [4]byte{0xff, 0xff, 0xff, 0xff}}
	for i := range 5000 {
		k := kf(i)
		rules[i], _ = c.Insert(&k, &m, 0, i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, i := range rng.Perm(5000)[:2500] {
		if !c.Remove(rules[i]) {
			t.Fatalf("remove %d", i)
		}
		delete(rules, i)
	}
	for i := range 5000 {
		k := kf(i)
		r, _ := c.Lookup(&k)
		if want := rules[i]; r != want {
			t.Fatalf("rule %d: got %v, want %v", i, r, want)
		}
	}
	n := 0
	c.All(func(*Rule[int]) bool { n++; return true })
	if n != 2500 || c.Len() != 2500 {
		t.Errorf("All saw %d, Len %d", n, c.Len())
	}
}

// FuzzClassifier checks inserts, removals and lookups against a linear
// scan of the same rules.
func FuzzClassifier(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte("\x00\x00\x00\x00\xff\xff\xff\xff\x01\x01\x01\x01"))
	f.Fuzz(func(t *testing.T, ops []byte) {
		var c Classifier[int]
		var live []*Rule[int]
		// A tiny space of keys and masks so that rules collide and
		// overlap: each byte picks an operation and its operands.
		masks := []flow.Mask{{}, inMask, macMask, portMask, {TpDst: 0xff00}, {EthSrc: [6]byte{5: 0x0f}}}
		mk := func(b byte) flow.Key { return key(uint32(b&1), b>>1&3, b>>3&1, uint16(b>>4)<<6) }
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], ops[i+1]
			switch op % 3 {
			case 0, 1:
				k, m, pri := mk(arg), masks[int(op/3)%len(masks)], int(op/16)%4
				r, added := c.Insert(&k, &m, pri, i)
				if added {
					live = append(live, r)
				} else if r.Priority != pri || *r.Mask != m || r.Key != k.Masked(&m) {
					t.Fatalf("Insert returned a different rule %+v", r)
				}
			case 2:
				if len(live) > 0 {
					j := int(arg) % len(live)
					if !c.Remove(live[j]) {
						t.Fatal("Remove of a live rule failed")
					}
					live = append(live[:j], live[j+1:]...)
				}
			}
			if c.Len() != len(live) {
				t.Fatalf("Len %d, %d live", c.Len(), len(live))
			}
		}
		var batchKeys []*flow.Key
		for b := 0; b < 256; b++ {
			k := mk(byte(b))
			k.TpDst |= uint16(b & 0x3f)
			batchKeys = append(batchKeys, &k)
		}
		for i := 0; i < len(batchKeys); i += MaxBatch {
			ks := batchKeys[i:min(i+MaxBatch, len(batchKeys))]
			rs := make([]*Rule[int], len(ks))
			c.LookupBatch(ks, rs)
			for j, k := range ks {
				if r, _ := c.Lookup(k); r != rs[j] && (r == nil || rs[j] == nil || r.Priority != rs[j].Priority) {
					t.Fatalf("%v: LookupBatch %+v, Lookup %+v", k, rs[j], r)
				}
			}
		}
		for b := 0; b < 256; b++ {
			k := mk(byte(b))
			k.TpDst |= uint16(b & 0x3f)
			got, _ := c.Lookup(&k)
			best := -1
			for _, r := range live {
				if k.MatchesMasked(&r.Key, r.Mask) && r.Priority > best {
					best = r.Priority
				}
			}
			switch {
			case best < 0 && got != nil:
				t.Fatalf("%v: got %+v, want no match", k, got)
			case best >= 0 && (got == nil || got.Priority != best || !k.MatchesMasked(&got.Key, got.Mask)):
				t.Fatalf("%v: got %+v, want a match of priority %d", k, got, best)
			}
		}
	})
}

// BenchmarkLookup is the megaflow classifier's cost per packet once the
// exact-match cache missed: the packet's subtable is ranked first or,
// with 20 subtables of which the right one is ranked last, found after 19
// probes that miss.
func BenchmarkLookup(b *testing.B) {
	for _, n := range []int{1, 20} {
		b.Run(fmt.Sprintf("subtables=%d", n), func(b *testing.B) {
			var c Classifier[int]
			// n masks: the MAC mask plus IPv4 source prefixes.
			for s := 0; s < n; s++ {
				m := macMask
				if s > 0 {
					binary.BigEndian.PutUint32(m.IPv4Src[:], ^uint32(0)<<(32-s))
				}
				for f := 0; f < 1000; f++ {
					k := key(1, byte(f), byte(f>>8), 0)
					k.IPv4Src = [4]byte{10, 0, byte(s), 1}
					c.Insert(&k, &m, 0, f)
				}
			}
			// Packets match only the MAC-mask subtable.
			keys := make([]flow.Key, 1024)
			for i := range keys {
				keys[i] = key(1, byte(i%1000), byte(i%1000>>8), uint16(i))
				keys[i].IPv4Src = [4]byte{192, 168, 0, 1}
			}
			if n > 1 {
				// Rank the target subtable last.
				for _, st := range c.subtables {
					st.hits = 1000
				}
				c.byMask[macMask].hits = 0
				c.reorder()
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if r, _ := c.Lookup(&keys[i&1023]); r == nil {
					b.Fatal("miss")
				}
				i++
			}
		})
	}
}

// TestEmptySubtableKept: a subtable that loses its rules, by Remove or
// Clear, is kept for the next rule of its mask until a Rank finds it
// empty a second time; lookups skip it meanwhile.
func TestEmptySubtableKept(t *testing.T) {
	var c Classifier[int]
	k := key(1, 0xa, 0xb, 80)
	r, _ := c.Insert(&k, &macMask, 0, 1)
	st := c.subtables[0]
	if !c.Remove(r) || c.Len() != 0 || c.Subtables() != 0 {
		t.Fatalf("after remove: len %d, subtables %d", c.Len(), c.Subtables())
	}
	if got, probes := c.Lookup(&k); got != nil || probes != 0 {
		t.Fatalf("lookup in an empty subtable: %v, %d probes", got, probes)
	}
	var rules [1]*Rule[int]
	if probes := c.LookupBatch([]*flow.Key{&k}, rules[:]); rules[0] != nil || probes != 0 {
		t.Fatalf("batch lookup in an empty subtable: %v, %d probes", rules[0], probes)
	}
	c.Rank() // empty once: kept
	r, _ = c.Insert(&k, &macMask, 0, 2)
	if len(c.subtables) != 1 || c.subtables[0] != st {
		t.Fatal("the rule did not go into the kept subtable")
	}
	if got, _ := c.Lookup(&k); got != r {
		t.Fatalf("lookup: %v", got)
	}
	c.Remove(r)
	c.Rank() // the insert made it busy again: kept
	if len(c.subtables) != 1 {
		t.Fatal("a subtable with a rule since the last Rank was dropped")
	}
	c.Rank()
	if len(c.subtables) != 0 || len(c.byMask) != 0 {
		t.Fatalf("still %d subtables after two Ranks empty", len(c.subtables))
	}

	// Clear keeps the subtables, empty and small; its rules are gone.
	for i := 0; i < 2000; i++ {
		k := key(1, byte(i), byte(i>>8), 80)
		c.Insert(&k, &macMask, 0, i)
	}
	k2 := key(2, 1, 2, 443)
	r2, _ := c.Insert(&k2, &portMask, 0, -1)
	c.Clear()
	if c.Len() != 0 || c.Subtables() != 0 || len(c.subtables) != 2 {
		t.Fatalf("after clear: len %d, subtables %d of %d", c.Len(), c.Subtables(), len(c.subtables))
	}
	if c.Remove(r2) {
		t.Error("a cleared rule was removed again")
	}
	for _, st := range c.subtables {
		if len(st.slots) > shrinkSlots {
			t.Errorf("an empty subtable keeps %d slots", len(st.slots))
		}
	}
	k3 := key(1, 7, 0, 80)
	if got, _ := c.Lookup(&k3); got != nil {
		t.Fatalf("lookup after clear: %v", got)
	}
	r3, _ := c.Insert(&k3, &macMask, 0, 3)
	if got, _ := c.Lookup(&k3); got != r3 || c.Subtables() != 1 {
		t.Fatalf("after clear and insert: %v, %d subtables", got, c.Subtables())
	}
}
