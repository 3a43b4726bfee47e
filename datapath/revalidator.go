package datapath

import (
	"cmp"
	"encoding/binary"
	"slices"
	"time"

	"github.com/govs/govs/datapath/flow"
)

// revalidateInterval is how often the revalidator goes through the
// installed flows when nothing asks it to sooner: it ages idle flows out,
// and pushes the flows' use into the upcaller (MAC learning refresh).
// OVS's revalidators dump the flows every 500 ms (other_config:
// max-revalidator).
const revalidateInterval = 500 * time.Millisecond

// revalidateGap is the least time between two passes that changes asked
// for, so that a burst of MAC learning costs a few passes, not one per
// address; a pass that took longer stretches the gap to its duration.
const revalidateGap = 2 * time.Millisecond

// revalBatch is how many flows one Revalidate call translates.
const revalBatch = 64

// overLimitIdle is the idle time after which flows go while the table is
// over its limit (OVS's revalidator uses 100 ms then).
const overLimitIdle = int64(100 * time.Millisecond)

// revalState is the revalidator's scratch, guarded by revalMu.
type revalState struct {
	flows []*megaflow
	todo  []*megaflow
	dead  []*megaflow
	ups   [revalBatch]Upcall
	acts  [revalBatch]Actions
}

// RequestRevalidation tells the datapath that the upcaller's state changed:
// every flow installed so far is translated again by the revalidator, soon
// (within milliseconds), and changed or removed if its translation
// changed. Packets may use the old translations until then. It does not
// block and may be called from an Upcall.
func (dp *Datapath) RequestRevalidation() {
	dp.revalSeq.Add(1)
	select {
	case dp.revalWake <- struct{}{}:
	default:
	}
}

// Revalidate translates every installed flow again now, changes or
// removes those whose translation changed, removes idle ones, and waits
// until no rx goroutine is in a batch begun before: when it returns every
// packet is forwarded by the upcaller's current state. The upcaller calls
// it after a configuration change, having published the new
// configuration. It must not be called from an Upcall, Revalidate or Run.
func (dp *Datapath) Revalidate() {
	dp.revalSeq.Add(1)
	// Batches begun before the bump may install flows translated with
	// the old state, stamped with the old sequence number: wait for them
	// so that the pass sees their flows.
	dp.synchronize(dp.gen.Add(1))
	// A pass may change the upcaller's state itself (flows that forwarded
	// packets refresh MAC learning, which may learn anew): then flows it
	// translated before the change need another. The next pass has no
	// such flows, as none forwarded packets since.
	for range maxSyncPasses {
		seq := dp.revalSeq.Load()
		dp.revalidate()
		if dp.revalSeq.Load() == seq {
			break
		}
	}
	// And wait for the batches that may still use actions the passes
	// replaced.
	dp.synchronize(dp.gen.Add(1))
}

// maxSyncPasses bounds the passes of one Revalidate.
const maxSyncPasses = 4

func (dp *Datapath) revalidator() {
	defer close(dp.revalDone)
	t := time.NewTicker(revalidateInterval)
	defer t.Stop()
	for {
		select {
		case <-dp.stop:
			return
		case <-t.C:
		case <-dp.revalWake:
			// Leave at least as long as the last pass took between
			// passes, so that a stream of changes costs at most half
			// of a core.
			gap := max(revalidateGap, time.Duration(dp.passTime.Load()))
			select {
			case <-dp.stop:
				return
			case <-time.After(gap):
			}
		}
		if box := dp.upcaller.Load(); box != nil {
			if r, ok := box.u.(Revalidator); ok {
				r.Run()
			}
		}
		dp.sampleUsage(time.Now())
		dp.revalidate()
	}
}

// revalidate is one pass over every attached port's flows.
func (dp *Datapath) revalidate() {
	dp.revalMu.Lock()
	defer dp.revalMu.Unlock()
	start := time.Now()
	rs := &dp.reval
	seq := dp.revalSeq.Load()
	now := dp.clock()
	maxIdle := dp.maxIdle.Load()
	if dp.nflows.Load() > dp.flowLimit.Load() {
		maxIdle = min(maxIdle, overLimitIdle)
	}
	box := dp.upcaller.Load()
	exact := !dp.megaflows.Load()

	table := dp.ports.Load()
	ports := make([]*dpPort, 0, len(table.byNo))
	for _, p := range table.byNo {
		ports = append(ports, p)
	}
	slices.SortFunc(ports, func(a, b *dpPort) int { return cmp.Compare(a.no, b.no) })

	var ws []*worker
	for _, p := range ports {
		ws = append(ws, p.ws...)
	}
	total := 0
	for _, w := range ws {
		w.flowMu.Lock()
		rs.flows = rs.flows[:0]
		for r := range w.cls.All {
			rs.flows = append(rs.flows, r.Value)
		}
		w.flowMu.Unlock()
		total += len(rs.flows)

		rs.todo, rs.dead = rs.todo[:0], rs.dead[:0]
		for _, f := range rs.flows {
			last, used := f.usedAt()
			if !used {
				last = f.created
			}
			if now-last >= maxIdle {
				rs.dead = append(rs.dead, f)
				continue
			}
			// Actions resolved against an older port table keep its
			// ports, deleted ones included, alive: resolve them anew
			// (a batch that hits the flow does so too).
			if fa := f.acts.Load(); fa.gen != table.gen {
				f.acts.CompareAndSwap(fa, resolve(fa.actions, table))
			}
			pk, by := f.packets.Load(), f.bytes.Load()
			f.revalActive = pk != f.revalPackets
			f.deltaPackets, f.deltaBytes = pk-f.revalPackets, by-f.revalBytes
			f.revalPackets, f.revalBytes = pk, by
			if box != nil && (f.seq.Load() != seq || f.revalActive) {
				rs.todo = append(rs.todo, f)
			}
		}
		for len(rs.todo) > 0 {
			n := min(len(rs.todo), revalBatch)
			dp.retranslate(box, rs.todo[:n], seq, table, exact)
			rs.todo = rs.todo[n:]
		}
		if len(rs.dead) > 0 {
			w.flowMu.Lock()
			for _, f := range rs.dead {
				if f.rule != nil {
					w.cls.Remove(f.rule)
					f.kill()
					dp.nflows.Add(-1)
				}
			}
			w.flowMu.Unlock()
			clear(rs.dead)
		}
		clear(rs.flows)
	}
	dp.avgFlows.Store((dp.avgFlows.Load() + int64(total)) / 2)
	if int64(total) > dp.maxFlows.Load() {
		dp.maxFlows.Store(int64(total))
	}
	d := time.Since(start)
	dp.passTime.Store(int64(d))
	dp.dumpDuration.Store(int64(d / time.Millisecond))
}

// retranslate translates fs again and updates each: new actions if they
// changed, removal (added to dp.reval.dead) if the translation now
// consults bits the flow does not match.
func (dp *Datapath) retranslate(box *upcallerBox, fs []*megaflow, seq uint64, table *portTable, exact bool) {
	rs := &dp.reval
	ups := rs.ups[:len(fs)]
	for i, f := range fs {
		if rs.acts[i] == nil {
			rs.acts[i] = make(Actions, 0, actionsCap)
		}
		ups[i] = Upcall{Key: f.key, Actions: rs.acts[i][:0]}
		if last, used := f.usedAt(); used && f.revalActive {
			ups[i].Used, ups[i].UsedAt = true, time.Duration(last)
			ups[i].Packets, ups[i].Bytes = f.deltaPackets, f.deltaBytes
		}
	}
	if r, ok := box.u.(Revalidator); ok {
		r.Revalidate(ups)
	} else {
		box.u.Upcall(ups)
	}
	for i, f := range fs {
		u := &ups[i]
		if exact {
			u.Mask = flow.Exact()
		}
		u.Mask.InPort = ^uint32(0)
		switch {
		case u.Mask.HasExtra(f.mask):
			rs.dead = append(rs.dead, f)
		case !u.Actions.Equal(f.acts.Load().actions):
			f.acts.Store(resolve(slices.Clone(u.Actions), table))
		}
		f.seq.Store(seq)
		if cap(u.Actions) > cap(rs.acts[i]) {
			rs.acts[i] = u.Actions[:0]
		}
		*u = Upcall{}
	}
}

// ufid is a flow's unique identifier as dumps show it: a hash of its
// match, formatted like a UUID (OVS hashes the flow key the same way).
func ufid(k *flow.Key, m *flow.Mask) [16]byte {
	mk := k.Masked(m)
	mk2 := flow.Key(*m)
	a, b := mk.Hash(), mk2.Hash()
	var u [16]byte
	binary.BigEndian.PutUint64(u[:8], a^b*0x9e3779b97f4a7c15)
	binary.BigEndian.PutUint64(u[8:], b^a*0xc2b2ae3d27d4eb4f)
	return u
}
