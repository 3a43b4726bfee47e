package vhostuser

import (
	"encoding/binary"

	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev"
)

// ethHdrLen is the shortest frame taken from a guest.
const ethHdrLen = 14

// dequeue takes up to len(pkts) frames the guest transmitted on q into
// pkts and returns how many it filled. With zc, a frame is held in guest
// memory (zcHold) while the ring has a free slot and readChain finds it in
// one piece; every other frame is copied and its chain returned to the
// guest at once. Malformed chains are returned to the guest, counted and
// dropped.
func (q *vring) dequeue(pkts []*packet.Packet, zc bool, st *batchStats) int {
	var w descWalker
	k := 0
	for tries := 0; tries < len(pkts) && q.take(&w); tries++ {
		if q.notifyOn {
			q.disableNotify()
		}
		p := pkts[k]
		p.Reset()
		n, ext, err := q.readChain(&w, p, zc && len(q.zc.free) > 0)
		id, ok := q.finish(&w)
		switch {
		case ok && ext != nil:
			q.zcHold(p, ext, id, w.ringDescs)
		case ok:
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
			if ext != nil {
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

// readChain copies the frame in the chain w is at into p, with its
// virtio-net header translated into p.Offload, and returns its length.
// With zc, a frame whose data is in one piece of guest memory longer than
// zcHeadLen is not copied whole: its first zcHeadLen bytes go into p and
// the rest is returned as ext, for the caller to hold (zcHold) once the
// chain is finished.
func (q *vring) readChain(w *descWalker, p *packet.Packet, zc bool) (n int, ext []byte, err error) {
	var hdr [12]byte
	hn, dn := 0, 0
	dst := p.Tail()
	var first []byte // with zc, the data's first piece while it is the only one
	for {
		addr, l, flags, ok := q.nextDesc(w)
		if !ok {
			break
		}
		if flags&virtqDescFWrite != 0 {
			return 0, nil, errDescDir
		}
		for l > 0 {
			b := q.mem.guestPrefix(addr, uint64(l), &q.hint)
			if b == nil {
				return 0, nil, errDescAddr
			}
			addr += uint64(len(b))
			l -= uint32(len(b))
			if hn < q.hdrLen {
				c := copy(hdr[hn:q.hdrLen], b)
				hn += c
				b = b[c:]
			}
			if len(b) == 0 {
				continue
			}
			if zc && dn == 0 && first == nil {
				first = b
				continue
			}
			if first != nil {
				// A second piece: the frame is copied after all.
				if len(first) > len(dst) {
					return 0, nil, errFrameLen
				}
				dn = copy(dst, first)
				first = nil
			}
			if len(b) > len(dst)-dn {
				return 0, nil, errFrameLen
			}
			dn += copy(dst[dn:], b)
		}
	}
	if w.err != nil {
		return 0, nil, w.err
	}
	if first != nil {
		if len(first) > packet.MaxFrame {
			return 0, nil, errFrameLen
		}
		if len(first) > zcHeadLen {
			first, ext = first[:zcHeadLen], first[zcHeadLen:]
		}
		dn = copy(dst, first)
	}
	n = dn + len(ext)
	if hn < q.hdrLen || n < ethHdrLen {
		return 0, nil, errFrameLen
	}
	if err := netdev.DecodeVirtioNetHdr(hdr[:], &p.Offload); err != nil {
		return 0, nil, err
	}
	p.SetLen(dn)
	return n, ext, nil
}

// enqResult is what became of one frame offered to a guest receive ring.
type enqResult uint8

const (
	enqOK   enqResult = iota
	enqFull           // not enough buffers now; nothing consumed
	enqDrop           // the frame does not fit the guest's buffers; nothing consumed
	enqFail           // the ring broke
)

// source is a frame being copied into guest buffers: its virtio-net header
// then up to two pieces of data (a packet's head and external tail).
type source struct {
	parts [3][]byte
	i     int
}

func (s *source) done() bool {
	for s.i < len(s.parts) && len(s.parts[s.i]) == 0 {
		s.i++
	}
	return s.i == len(s.parts)
}

// enqueue writes hdr and data into the guest's buffers: one chain, or as
// many as it takes with mergeable buffers, num_buffers set accordingly.
// The used entries are published by the caller.
func (q *vring) enqueue(hdr, data, ext []byte) enqResult {
	q.enq = enqMark{q.lastAvail, q.usedIdx, q.availLeft, q.availWrap, q.usedWrap, len(q.pending), true}
	r := q.enqueueFrame(hdr, data, ext)
	q.enq.active = false // left set by a panic, for unlockRecover
	return r
}

func (q *vring) enqueueFrame(hdr, data, ext []byte) enqResult {
	src := source{parts: [3][]byte{hdr, data, ext}}
	q.hdrN = 0
	nbufs := uint16(0)
	var w descWalker
	for {
		if !q.take(&w) {
			if q.broken {
				return enqFail
			}
			q.rollback()
			return enqFull
		}
		written, err := q.fillChain(&w, &src)
		if err != nil {
			q.failLocked(err)
			return enqFail
		}
		id, ok := q.finish(&w)
		if !ok {
			q.failLocked(errDescIndex)
			return enqFail
		}
		q.pushUsed(id, written, w.ringDescs)
		nbufs++
		if src.done() {
			break
		}
		if !q.mrg {
			q.rollback()
			return enqDrop
		}
	}
	if nbufs > 1 && q.hdrLen == 12 {
		binary.LittleEndian.PutUint16(hdr[10:], nbufs)
		h := hdr
		for _, d := range q.hdrDst[:q.hdrN] {
			h = h[copy(d, h):]
		}
	}
	return enqOK
}

// rollback takes back the buffers the frame being enqueued has taken.
func (q *vring) rollback() {
	e := &q.enq
	q.lastAvail, q.usedIdx, q.availLeft = e.lastAvail, e.usedIdx, e.availLeft
	q.availWrap, q.usedWrap, q.pending = e.availWrap, e.usedWrap, q.pending[:e.pending]
}

// enqMark is where the frame being enqueued started, to take it back if it
// cannot be completed (even by a fault reading another guest's memory).
type enqMark struct {
	lastAvail, usedIdx, availLeft uint16
	availWrap, usedWrap           bool
	pending                       int
	active                        bool
}

// fillChain copies from src into the writable buffers of the chain w is
// at and returns how many bytes it wrote.
func (q *vring) fillChain(w *descWalker, src *source) (uint32, error) {
	written := uint32(0)
	for !src.done() {
		addr, l, flags, ok := q.nextDesc(w)
		if !ok {
			if w.err != nil {
				return 0, w.err
			}
			return written, nil
		}
		if flags&virtqDescFWrite == 0 {
			return 0, errDescDir
		}
		for l > 0 && !src.done() {
			b := q.mem.guestPrefix(addr, uint64(l), &q.hint)
			if b == nil {
				return 0, errDescAddr
			}
			for len(b) > 0 && !src.done() {
				part := src.parts[src.i]
				c := copy(b, part)
				if src.i == 0 && q.hdrN < len(q.hdrDst) {
					q.hdrDst[q.hdrN] = b[:c]
					q.hdrN++
				}
				src.parts[src.i] = part[c:]
				b = b[c:]
				addr += uint64(c)
				l -= uint32(c)
				written += uint32(c)
			}
		}
	}
	return written, nil
}
