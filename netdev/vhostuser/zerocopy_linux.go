package vhostuser

import (
	"runtime/debug"

	"sync/atomic"
	"time"

	"github.com/govs/govs/datapath/packet"
)

// Dequeue zero copy (options:dq-zero-copy): a frame the guest transmitted
// is handed on without copying its payload. Read copies its first
// zcHeadLen bytes into the packet, so that what the datapath classified
// cannot be changed by the guest afterwards, and leaves the rest in the
// guest's buffer as the packet's external tail (packet.Packet.SetExternal);
// the buffer's descriptor goes back to the guest only once the packet is
// reset or linearized. At most zcInflight(num) descriptors per ring are
// out at once; past that, frames are copied, so a slow or stuck egress
// never starves the guest's transmit ring (the reason OVS dropped DPDK's
// zero copy).
const (
	// zcHeadLen covers Ethernet, two VLAN tags, IPv6 with a hop-by-hop
	// header and TCP with options; frames no longer than it are copied.
	zcHeadLen = 192
	// zcMaxInflight caps the descriptors out per ring: OVS found guest
	// rings starving with more than 128 descriptors held by a NIC.
	zcMaxInflight = 128
	zcDone        = 1 << 31
	// zcDrainWait is how long stopping a ring waits for frames still out.
	zcDrainWait = 200 * time.Millisecond
)

func zcInflight(num int) int { return max(1, min(num/2, zcMaxInflight)) }

// zcSlot is one descriptor chain out in a zero-copy packet: state is 0 when
// free, the frame's serial while out, serial|zcDone once released.
type zcSlot struct {
	state atomic.Uint32
	id    uint16
	ndesc uint32 // packed: descriptors of the ring the chain took
}

// zcRing is a tx ring's zero-copy bookkeeping, under the ring's mu except
// for the slots' state and pending, which ReleaseExternal sets from any
// goroutine.
type zcRing struct {
	slots    [zcMaxInflight]zcSlot // never reallocated: a release may come late
	refs     [zcMaxInflight]*zcRef // each slot's owner object, reused once released
	n        int                   // slots in use for this ring size
	free     []int32
	inflight int
	serial   uint32
	pending  atomic.Int32 // releases not yet reclaimed
}

func (z *zcRing) init(num int) {
	z.n = zcInflight(num)
	if z.free == nil {
		z.free = make([]int32, 0, zcMaxInflight)
	}
	z.free = z.free[:0]
	n := z.n
	for i := n - 1; i >= 0; i-- {
		z.slots[i].state.Store(0)
		z.free = append(z.free, int32(i))
	}
	z.inflight = 0
	z.pending.Store(0)
}

// reclaimLocked returns the released chains to the guest.
func (q *vring) reclaimLocked() {
	z := &q.zc
	if z.pending.Load() == 0 {
		return
	}
	z.pending.Store(0)
	for i := range z.slots {
		s := &z.slots[i]
		if st := s.state.Load(); st&zcDone != 0 && s.state.CompareAndSwap(st, 0) {
			if q.used != nil {
				q.pushUsed(s.id, 0, s.ndesc)
			}
			z.free = append(z.free, int32(i))
			z.inflight--
		}
	}
	if q.used != nil {
		q.publish()
	}
}

// zcDrainLocked waits up to zcDrainWait for the frames still out, then
// orphans them: their release only drops their memory reference, and the
// guest gets their descriptors back through the base it is told.
func (q *vring) zcDrainLocked() {
	z := &q.zc
	deadline := time.Now().Add(zcDrainWait)
	for {
		q.reclaimLocked()
		if z.inflight == 0 || time.Now().After(deadline) {
			break
		}
		q.mu.Unlock()
		time.Sleep(time.Millisecond)
		q.mu.Lock()
	}
	if z.inflight > 0 {
		q.p.logf("vring %d: %d zero-copy frames still out when stopped", q.index, z.inflight)
	}
	for i := range z.slots {
		if z.slots[i].state.Swap(0) != 0 {
			// Out, or released but not reclaimed: its owner object
			// may still be in use, so the slot gets a new one.
			z.refs[i] = nil
		}
	}
	z.free = z.free[:0]
	for i := z.n - 1; i >= 0; i-- {
		z.free = append(z.free, int32(i))
	}
	z.inflight = 0
	z.pending.Store(0)
}

// zcRef owns the tail of one zero-copy packet, in guest memory: the
// packet.External of the packet, which calls ReleaseExternal exactly once,
// so the ref is the packet's alone until then. Each slot keeps its ref for
// the next frame; the reader rewrites it only once the slot has been
// reclaimed, which the release's CAS orders after the release's reads.
type zcRef struct {
	q      *vring
	mem    *memTable // referenced until the release
	slot   int32
	serial uint32
}

// ReleaseExternal marks the chain released for the reader to return to
// the guest (at its next Read, woken if it sleeps) and drops the memory
// reference, also when the ring was stopped and the chain orphaned
// meanwhile. It may be called from any goroutine.
func (r *zcRef) ReleaseExternal() {
	// Read everything first: once the CAS succeeds the slot, and r with
	// it, may be reused.
	q, mem, slot, serial := r.q, r.mem, r.slot, r.serial
	if s := &q.zc.slots[slot]; s.state.CompareAndSwap(serial, serial|zcDone) {
		q.zc.pending.Add(1)
		if q.p.sleeping.Load() {
			q.p.wakeReader()
		}
	}
	mem.unref()
}

// CopyExternal copies src, the tail in guest memory, into dst. A fault
// there (a front-end that truncated its memory file under the frame)
// leaves the rest of dst zeroed, is counted, and drops the connection the
// memory came with; it never reaches the caller.
func (r *zcRef) CopyExternal(dst, src []byte) {
	n, fault := copyGuarded(dst, src)
	if fault == nil {
		return
	}
	clear(dst[n:])
	p := r.q.p
	p.ctr.faults.Add(1)
	p.logf("vring %d: fault reading a zero-copy frame: %v: dropping the device", r.q.index, fault)
	if c := r.mem.conn; c != nil {
		c.Close()
	}
}

// zcCopyChunk is how much copyGuarded copies at a time: a page, so that a
// fault loses at most the page it hit.
const zcCopyChunk = 4096

// copyGuarded copies src into dst with faults on either turned into a
// return: how much was copied before the chunk that faulted, and the
// fault. Any other panic goes on.
func copyGuarded(dst, src []byte) (n int, fault any) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			if _, ok := r.(interface{ Addr() uintptr }); !ok {
				panic(r)
			}
			fault = r
		}
	}()
	src = src[:min(len(src), len(dst))]
	for n < len(src) {
		n += copy(dst[n:], src[n:min(len(src), n+zcCopyChunk)])
	}
	return n, nil
}

// zcHold leaves ext, the rest of p's frame, in guest memory: the chain
// (id, ndesc descriptors of a packed ring) stays out in a free slot until
// p releases ext. The caller checked that a slot is free.
func (q *vring) zcHold(p *packet.Packet, ext []byte, id uint16, ndesc uint32) {
	z := &q.zc
	slot := z.free[len(z.free)-1]
	z.free = z.free[:len(z.free)-1]
	z.inflight++
	z.serial = (z.serial + 1) &^ zcDone
	if z.serial == 0 {
		z.serial = 1
	}
	s := &z.slots[slot]
	s.id, s.ndesc = id, ndesc
	s.state.Store(z.serial)
	q.mem.ref()
	r := z.refs[slot]
	if r == nil {
		r = new(zcRef)
		z.refs[slot] = r
	}
	*r = zcRef{q: q, mem: q.mem, slot: slot, serial: z.serial}
	p.SetExternal(ext, r)
}
