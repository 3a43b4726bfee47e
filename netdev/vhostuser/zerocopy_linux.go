package vhostuser

import (
	"sync/atomic"
	"time"

	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev"
)

// Dequeue zero copy (options:dq-zero-copy): a frame the guest transmitted
// is handed on without copying its payload. Its first zcHeadLen bytes are
// copied into the Frame's own packet, so that what the datapath classified
// cannot be changed by the guest afterwards; the rest stays in the guest's
// buffer, whose descriptor goes back to the guest only when the Frame is
// released. At most zcInflight(num) descriptors per ring are out at once;
// past that, frames are copied, so a slow or stuck egress never starves the
// guest's transmit ring (the reason OVS dropped DPDK's zero copy).
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

// zcSlot is one descriptor chain out in a zero-copy Frame: state is 0 when
// free, the frame's serial while out, serial|zcDone once released.
type zcSlot struct {
	state atomic.Uint32
	id    uint16
	ndesc uint32 // packed: descriptors of the ring the chain took
}

// zcRing is a tx ring's zero-copy bookkeeping, under the ring's mu except
// for the slots' state and pending, which Release sets from any goroutine.
type zcRing struct {
	slots    [zcMaxInflight]zcSlot // never reallocated: Release may come late
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
		z.slots[i].state.Store(0)
	}
	z.free = z.free[:0]
	for i := z.n - 1; i >= 0; i-- {
		z.free = append(z.free, int32(i))
	}
	z.inflight = 0
	z.pending.Store(0)
}

// Frame is a frame read by ReadFrames: copied whole into its packet, or,
// in zero-copy mode, its first bytes copied and the rest left in the
// guest's memory until Release.
type Frame struct {
	pkt *packet.Packet
	ext []byte // the rest of a zero-copy frame, in guest memory

	q      *vring
	mem    *memTable
	slot   int32
	serial uint32
}

// NewFrame returns an empty frame.
func NewFrame() *Frame { return &Frame{pkt: packet.New()} }

// Packet returns the frame's packet: all of it, or a zero-copy frame's
// first bytes; its Offload describes the whole frame.
func (f *Frame) Packet() *packet.Packet { return f.pkt }

// Len returns the frame's length.
func (f *Frame) Len() int { return f.pkt.Len() + len(f.ext) }

// ZeroCopy reports whether the frame still points into guest memory.
func (f *Frame) ZeroCopy() bool { return f.mem != nil }

// AppendTo appends the whole frame to b.
func (f *Frame) AppendTo(b []byte) []byte { return append(append(b, f.pkt.Data()...), f.ext...) }

// Release gives a zero-copy frame's buffer back to the guest; the frame
// is empty after. It may be called from any goroutine, once per ReadFrames.
func (f *Frame) Release() {
	if f.mem == nil {
		return
	}
	q := f.q
	if s := &q.zc.slots[f.slot]; s.state.CompareAndSwap(f.serial, f.serial|zcDone) {
		q.zc.pending.Add(1)
		if q.p.sleeping.Load() {
			q.p.wakeReader()
		}
	}
	f.mem.unref()
	f.mem, f.q, f.ext = nil, nil, nil
}

// linearize copies a zero-copy frame's rest into its packet and releases
// it, for egress paths that need the frame in one piece.
func (f *Frame) linearize() bool {
	if f.mem == nil {
		return true
	}
	p := f.pkt
	n := p.Len()
	if len(p.Tail()) < n+len(f.ext) {
		return false
	}
	copy(p.Tail()[n:], f.ext)
	p.SetLen(n + len(f.ext))
	f.Release()
	return true
}

// dequeueFrames is dequeue for ReadFrames: zero copy where the ring has a
// free slot and the frame's data is in one piece of guest memory longer
// than zcHeadLen.
func (q *vring) dequeueFrames(fs []*Frame, zc bool, st *batchStats) int {
	var w descWalker
	k := 0
	for tries := 0; tries < len(fs) && q.take(&w); tries++ {
		if q.notifyOn {
			q.disableNotify()
		}
		f := fs[k]
		f.Release()
		f.pkt.Reset()
		var n int
		var err error
		held := false
		if zc && len(q.zc.free) > 0 {
			n, held, err = q.zcChain(&w, f)
		} else {
			n, err = q.copyChain(&w, f.pkt)
		}
		id, ok := q.finish(&w)
		if held {
			if ok {
				s := &q.zc.slots[f.slot]
				s.id, s.ndesc = id, w.ringDescs
			} else {
				// The ring broke: take the frame back.
				q.zc.slots[f.slot].state.Store(0)
				q.zc.free = append(q.zc.free, f.slot)
				q.zc.inflight--
				f.mem.unref()
				f.mem, f.q, f.ext = nil, nil, nil
			}
		} else if ok {
			q.pushUsed(id, 0, w.ringDescs)
		}
		if err != nil || !ok {
			st.rxErrors++
			if q.broken {
				break
			}
			q.p.noteBadChain(q, err)
			continue
		}
		if zc {
			if held {
				st.zcFrames++
			} else {
				st.zcFallback++
			}
		}
		st.rxPackets++
		st.rxBytes += n
		k++
	}
	q.publish()
	return k
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// zcChain takes the chain w is at into f, leaving the data in guest memory
// when it is in one piece; held reports whether the chain is now out, in
// a slot whose id the caller sets once the chain is finished.
func (q *vring) zcChain(w *descWalker, f *Frame) (n int, held bool, err error) {
	w0 := *w
	var hdr [12]byte
	hn := 0
	var data []byte
	pieces := 0
	for {
		addr, l, flags, ok := q.nextDesc(w)
		if !ok {
			break
		}
		if flags&virtqDescFWrite != 0 {
			return 0, false, errDescDir
		}
		for l > 0 {
			b := q.mem.guestPrefix(addr, uint64(l), &q.hint)
			if b == nil {
				return 0, false, errDescAddr
			}
			addr += uint64(len(b))
			l -= uint32(len(b))
			if hn < q.hdrLen {
				c := copy(hdr[hn:q.hdrLen], b)
				hn += c
				b = b[c:]
			}
			if len(b) > 0 {
				data = b
				pieces++
			}
		}
	}
	if w.err != nil {
		return 0, false, w.err
	}
	if pieces != 1 {
		// Not in one piece: copy, walking the chain again.
		*w = w0
		f.pkt.Offload = packet.Offload{}
		n, err = q.copyChain(w, f.pkt)
		return n, false, err
	}
	if hn < q.hdrLen || len(data) < ethHdrLen || len(data) > packet.MaxFrame {
		return 0, false, errFrameLen
	}
	p := f.pkt
	if err := netdev.DecodeVirtioNetHdr(hdr[:], &p.Offload); err != nil {
		return 0, false, err
	}
	if len(data) <= zcHeadLen {
		p.SetLen(copy(p.Tail(), data))
		return len(data), false, nil
	}
	p.SetLen(copy(p.Tail(), data[:zcHeadLen]))
	z := &q.zc
	slot := z.free[len(z.free)-1]
	z.free = z.free[:len(z.free)-1]
	z.inflight++
	z.serial = (z.serial + 1) &^ zcDone
	if z.serial == 0 {
		z.serial = 1
	}
	z.slots[slot].state.Store(z.serial)
	q.mem.ref()
	f.ext, f.q, f.mem, f.slot, f.serial = data[zcHeadLen:], q, q.mem, slot, z.serial
	return len(data), true, nil
}
