package ofproto

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

func TestCommitBundle(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}})
	mustMod(t, br, fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll})
	mustMod(t, br, fmSpec{prio: 1, actions: []ofp.Action{output(2)}})
	frame := eth(macA, macB)
	groupAdd := func(id uint32, port uint32) *ofp.GroupMod {
		return &ofp.GroupMod{Command: ofp.GroupAdd, Type: ofp.GroupAll, ID: id,
			Buckets: []ofp.Bucket{{Weight: 1, WatchPort: ofp.PortAny, WatchGroup: ofp.GroupAny, Actions: []ofp.Action{output(port)}}}}
	}
	toGroup := func(prio uint16, g uint32) *ofp.FlowMod {
		return fmSpec{prio: prio, actions: []ofp.Action{{Type: ofp.ActGroup, ID: g}}}.mod()
	}
	before := flowsOf(br)

	t.Run("failing message changes nothing", func(t *testing.T) {
		msgs := []ofp.Message{
			groupAdd(1, 3),
			toGroup(10, 1),
			fmSpec{cmd: ofp.FlowDeleteStrict, prio: 1}.mod(),
			toGroup(20, 9), // no group 9
			fmSpec{prio: 30, actions: []ofp.Action{output(3)}}.mod(),
		}
		i, err := br.CommitBundle(msgs)
		if i != 3 || err == nil || err.Errno != ofp.BadOutGroup {
			t.Fatalf("commit: message %d, %v", i, err)
		}
		if got := flowsOf(br); got != before {
			t.Errorf("flows %s, want %s", got, before)
		}
		if g := br.Groups(); len(g) != 0 {
			t.Errorf("groups %+v", g)
		}
		if acts, _ := tb.xlate(1, frame); acts != "2" {
			t.Errorf("actions %s", acts)
		}
	})
	t.Run("ordered", func(t *testing.T) {
		// The flow comes before its group: refused, as in order.
		if i, err := br.CommitBundle([]ofp.Message{toGroup(10, 1), groupAdd(1, 3)}); i != 0 || err == nil {
			t.Fatalf("flow before its group: message %d, %v", i, err)
		}
		// Added then deleted in one bundle: gone.
		i, err := br.CommitBundle([]ofp.Message{fmSpec{prio: 40, actions: []ofp.Action{output(3)}}.mod(),
			fmSpec{cmd: ofp.FlowDeleteStrict, prio: 40}.mod()})
		if err != nil || flowsOf(br) != before {
			t.Fatalf("add then delete: message %d, %v; flows %s", i, err, flowsOf(br))
		}
	})
	t.Run("all applied", func(t *testing.T) {
		i, err := br.CommitBundle([]ofp.Message{groupAdd(1, 3), toGroup(10, 1), fmSpec{cmd: ofp.FlowDeleteStrict, prio: 1}.mod()})
		if err != nil {
			t.Fatalf("commit: message %d, %v", i, err)
		}
		if acts, _ := tb.xlate(1, frame); acts != "3" {
			t.Errorf("actions %s", acts)
		}
		if n := len(br.Flows()); n != 1 {
			t.Errorf("%d flows: %s", n, flowsOf(br))
		}
		// Deleting the group deletes its flow with it.
		if _, err := br.CommitBundle([]ofp.Message{&ofp.GroupMod{Command: ofp.GroupDelete, ID: ofp.GroupAllGroups}}); err != nil {
			t.Fatal(err)
		}
		if n := len(br.Flows()); n != 0 {
			t.Errorf("%d flows after deleting the group", n)
		}
	})
	t.Run("port mods refused", func(t *testing.T) {
		i, err := br.CommitBundle([]ofp.Message{fmSpec{prio: 1, actions: []ofp.Action{output(2)}}.mod(), &ofp.PortMod{Port: 1}})
		if i != 1 || err == nil || err.Errno != ofp.BundleMsgFailed || len(br.Flows()) != 0 {
			t.Fatalf("port mod: message %d, %v, %d flows", i, err, len(br.Flows()))
		}
	})
}

// TestCommitBundleAtomic watches the tables while a bundle of many flows
// commits: a reader sees none of them or all of them, never part.
func TestCommitBundleAtomic(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2)}})
	mustMod(t, br, fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll})
	const n = 300
	for round := range 5 {
		var msgs []ofp.Message
		for i := range n {
			msgs = append(msgs, fmSpec{table: uint8(i % 5), prio: uint16(i + 1), cookie: uint64(round),
				match: map[ofp.FieldID][2]uint64{ofp.FieldReg0: {uint64(i), 0}}, actions: []ofp.Action{output(2)}}.mod())
		}
		if round > 0 {
			msgs = append([]ofp.Message{fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll}.mod()}, msgs...)
		}
		var stop atomic.Bool
		var wg sync.WaitGroup
		var bad atomic.Int64
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				seen := map[uint64]int{}
				for _, f := range br.Flows() {
					seen[f.Cookie]++
				}
				for _, c := range seen {
					if c != n {
						bad.Add(1)
					}
				}
				if len(seen) > 1 {
					bad.Add(1)
				}
			}
		}()
		if i, err := br.CommitBundle(msgs); err != nil {
			t.Fatalf("round %d: message %d: %v", round, i, err)
		}
		stop.Store(true)
		wg.Wait()
		if bad.Load() != 0 {
			t.Fatalf("round %d: a reader saw part of a bundle %d times", round, bad.Load())
		}
		if got := len(br.Flows()); got != n {
			t.Fatalf("round %d: %d flows", round, got)
		}
	}
}
