package conntrack

import (
	"math/rand/v2"
	"testing"
)

// The table agrees with a map through random puts and deletes, with hashes
// squeezed into a few values so that runs are long, wrap around the end
// and deletes shift entries back.
func TestTableAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tb table
	ref := map[key]*conn{}
	hashOf := func(k *key) uint32 { return uint32(k.sport%61) * 0x4000001 }
	var live []*conn
	for i := 0; i < 4000; i++ {
		if len(live) > 0 && rng.IntN(3) == 0 {
			j := rng.IntN(len(live))
			c := live[j]
			live[j] = live[len(live)-1]
			live = live[:len(live)-1]
			if !tb.del(c, hashOf(&c.orig), false) || !tb.del(c, hashOf(&c.reply), true) {
				t.Fatalf("step %d: connection %v not found to delete", i, c.orig)
			}
			if tb.del(c, hashOf(&c.orig), false) {
				t.Fatalf("step %d: deleted twice", i)
			}
			delete(ref, c.orig)
			delete(ref, c.reply)
		} else {
			c := &conn{}
			c.orig = key{sport: uint16(rng.Uint32()), dport: uint16(i), proto: 17}
			c.reply = c.orig.reverse()
			if ref[c.orig] != nil || ref[c.reply] != nil {
				continue
			}
			tb.put(c, hashOf(&c.orig), false)
			tb.put(c, hashOf(&c.reply), true)
			ref[c.orig], ref[c.reply] = c, c
			live = append(live, c)
		}
		if i%250 == 0 || i > 3990 {
			if tb.n != len(ref) {
				t.Fatalf("step %d: %d entries, want %d", i, tb.n, len(ref))
			}
			for k, c := range ref {
				if got := tb.get(&k, hashOf(&k)); got != c {
					t.Fatalf("step %d: get(%v) = %p, want %p", i, k, got, c)
				}
			}
			miss := key{sport: 1, dport: 65535, proto: 6}
			if tb.get(&miss, hashOf(&miss)) != nil {
				t.Fatalf("step %d: found a key never put", i)
			}
		}
	}
}
