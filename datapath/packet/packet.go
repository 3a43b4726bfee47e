// Package packet owns the packet buffer and its offload metadata: the one
// representation that every netdev produces and consumes and that the
// datapath forwards. It is the lowest layer of the packet path and imports
// nothing of govs.
package packet

// Headroom is the space reserved in front of every frame so that VLAN tags,
// tunnel headers and virtio-net headers can be prepended in place without a
// copy. 128 bytes covers a virtio_net_hdr_mrg_rxbuf (12), two VLAN tags (8)
// and a Geneve/VXLAN encapsulation over IPv6 (~70).
const Headroom = 128

// MaxFrame is the largest frame a buffer holds: a 64 KiB GSO super-frame plus
// its Ethernet and VLAN headers.
const MaxFrame = 65536 + 14 + 8

// Offload describes what is still to be done to a frame that a netdev handed
// over with work deferred (checksum, segmentation), in the terms of the
// kernel's virtio_net_hdr (include/uapi/linux/virtio_net.h) but in host
// byte order and independent of any port kind.
type Offload struct {
	// Flags is a set of Flag bits.
	Flags Flag
	// GSO is the kind of segmentation still to be done, GSONone if none.
	GSO GSOType
	// HdrLen is the length of all headers up to the transport payload.
	HdrLen uint16
	// GSOSize is the maximum payload of one segment.
	GSOSize uint16
	// CsumStart is the offset from the start of the frame where
	// checksumming starts; CsumOffset is where, counted from CsumStart,
	// the checksum is stored. Valid when Flags has NeedsCsum.
	CsumStart, CsumOffset uint16
}

// Flag is a bit of Offload.Flags.
type Flag uint8

const (
	// NeedsCsum: the L4 checksum is partial (pseudo-header only) and must
	// be completed at CsumStart/CsumOffset before the frame leaves on a
	// port that does not take partial checksums.
	NeedsCsum Flag = 1 << iota
	// CsumValid: the L4 checksum has been verified (or the frame came from
	// a local stack that does not need it verified).
	CsumValid
	// ECN: a TCP super-frame whose first segment carries CWR, which
	// segmentation must clear in the others (VIRTIO_NET_HDR_GSO_ECN,
	// SKB_GSO_TCP_ECN).
	ECN
)

// GSOType is the segmentation a super-frame still needs.
type GSOType uint8

const (
	GSONone GSOType = iota
	GSOTCPv4
	GSOTCPv6
	GSOUDPL4
)

// Packet is one frame in a buffer with headroom. The zero value is not
// usable; get packets from a Pool or New.
//
// A frame may end outside the buffer: a port that hands frames over
// without copying them (a vhost-user port in dequeue zero-copy mode) puts
// their first bytes, the headers, in the buffer (Head) and leaves the rest
// where it is (Ext), owned by an External that gets it back when the
// packet is reset. Code that reads only headers uses Head; ports that
// send with vectored I/O use Head and Ext; everything else uses Data,
// which copies the rest into the buffer first (Linearize).
type Packet struct {
	buf   []byte // backing array, len(buf) == Headroom+MaxFrame
	start int    // offset of the frame in buf
	end   int    // end of the frame's head in buf
	ext   []byte // the rest of the frame, outside buf; nil if none
	owner External

	// Offload is the deferred work for this frame.
	Offload Offload
	// InPort is the datapath port number the frame arrived on.
	InPort uint32
	// DpHash is the hash a hash action computed, which a recirculation
	// puts in the packet's key (OVS's dp_hash metadata); 0 if none.
	DpHash uint32
	// SkbPriority is the packet's priority, set by a set(skb_priority)
	// action and kept through a recirculation (OVS's md.skb_priority):
	// the queue a port's QoS puts it in. 0 as received.
	SkbPriority uint32
}

// New allocates a packet with an empty frame at the standard headroom.
func New() *Packet {
	return &Packet{buf: make([]byte, Headroom+MaxFrame), start: Headroom, end: Headroom}
}

// External owns the memory of frames' tails kept outside their packets
// (SetExternal).
type External interface {
	// CopyExternal copies the tail src into dst, which is as long. It is
	// how every read of the tail by govs' own code is made, so that the
	// owner can guard it (guest memory may fault).
	CopyExternal(dst, src []byte)
	// ReleaseExternal gives the tail back. It is called exactly once per
	// SetExternal, from the goroutine that owns the packet then.
	ReleaseExternal()
}

// Data returns the whole frame, in the buffer: an external tail is copied
// in (and released) first.
func (p *Packet) Data() []byte {
	if p.ext != nil {
		p.Linearize()
	}
	return p.buf[p.start:p.end]
}

// Head returns the part of the frame in the packet's buffer: all of it,
// or a frame's first bytes when its tail is external.
func (p *Packet) Head() []byte { return p.buf[p.start:p.end] }

// Ext returns the frame's external tail, nil if there is none.
func (p *Packet) Ext() []byte { return p.ext }

// Len returns the frame's length, external tail included.
func (p *Packet) Len() int { return p.end - p.start + len(p.ext) }

// Tail returns the whole space from the frame's start to the end of the
// buffer, for a netdev to receive into; follow with SetLen. The packet must
// have no external tail.
func (p *Packet) Tail() []byte { return p.buf[p.start:] }

// SetLen sets the length of the frame's head after a receive into Tail.
func (p *Packet) SetLen(n int) { p.end = p.start + n }

// SetExternal makes ext the frame's tail, after its head, without copying
// it; o gets it back when the packet is reset or linearized. The frame
// must fit the buffer (Head and ext together at most MaxFrame) and must
// not have an external tail already.
func (p *Packet) SetExternal(ext []byte, o External) {
	if p.ext != nil {
		panic("packet: SetExternal on a packet with an external tail")
	}
	if len(ext) == 0 {
		o.ReleaseExternal()
		return
	}
	p.ext, p.owner = ext, o
}

// Linearize copies an external tail into the buffer after the head and
// releases it; the frame is then all in Data. Without one it does nothing.
func (p *Packet) Linearize() {
	if p.ext == nil {
		return
	}
	n := len(p.ext)
	if len(p.buf)-p.end < n {
		// The head was pulled forward: move it back to make room.
		h := p.end - p.start
		s := len(p.buf) - h - n
		copy(p.buf[s:], p.buf[p.start:p.end])
		p.start, p.end = s, s+h
	}
	p.owner.CopyExternal(p.buf[p.end:p.end+n], p.ext)
	p.end += n
	p.release()
}

// CopyTo copies the whole frame into b, which must be at least Len bytes,
// without linearizing it, and returns Len.
func (p *Packet) CopyTo(b []byte) int {
	n := copy(b, p.buf[p.start:p.end])
	if p.ext != nil {
		p.owner.CopyExternal(b[n:n+len(p.ext)], p.ext)
		n += len(p.ext)
	}
	return n
}

func (p *Packet) release() {
	if p.ext != nil {
		o := p.owner
		p.ext, p.owner = nil, nil
		o.ReleaseExternal()
	}
}

// Headroom returns how many bytes can be pushed in front of the frame.
func (p *Packet) Headroom() int { return p.start }

// Push grows the frame by n bytes at the front and returns them. It panics
// if there is less than n bytes of headroom.
func (p *Packet) Push(n int) []byte {
	p.start -= n
	return p.buf[p.start : p.start+n]
}

// Reserve makes at least n bytes of headroom, moving the frame back in
// its buffer if it must (a Geneve header with long options is more than
// Headroom). It reports false, leaving the packet as it was, if the
// frame has an external tail or would not fit.
func (p *Packet) Reserve(n int) bool {
	if p.start >= n {
		return true
	}
	l := p.end - p.start
	if p.ext != nil || n+l > len(p.buf) {
		return false
	}
	copy(p.buf[n:n+l], p.buf[p.start:p.end])
	p.start, p.end = n, n+l
	return true
}

// Pull removes n bytes from the front of the frame; n is at most the
// length of Head.
func (p *Packet) Pull(n int) { p.start += n }

// SetData sets the frame to a copy of b at the standard headroom, keeping
// the metadata. It panics if b is longer than MaxFrame.
func (p *Packet) SetData(b []byte) {
	if len(b) > MaxFrame {
		panic("packet: SetData of a frame longer than MaxFrame")
	}
	p.release()
	p.start = Headroom
	p.end = Headroom + copy(p.buf[Headroom:], b)
}

// CopyFrom makes p a copy of q: frame, at q's offset (or further forward
// if q's tail is external and would not fit after it), and metadata. An
// external tail of q is copied, not shared.
func (p *Packet) CopyFrom(q *Packet) {
	p.release()
	p.start = min(q.start, len(p.buf)-q.Len())
	p.end = p.start + q.CopyTo(p.buf[p.start:])
	p.Offload = q.Offload
	p.InPort = q.InPort
	p.DpHash = q.DpHash
	p.SkbPriority = q.SkbPriority
}

// InsertVLAN inserts an 802.1Q/802.1ad tag with the given TPID and TCI
// after the frame's MAC addresses, in the headroom, and moves the offsets in
// Offload along. It reports false, leaving the packet as it was, if the
// frame's head is shorter than two MAC addresses or the headroom is
// exhausted.
func (p *Packet) InsertVLAN(tpid, tci uint16) bool {
	if p.end-p.start < 12 || p.start < 4 {
		return false
	}
	p.start -= 4
	b := p.buf[p.start:]
	copy(b[:12], b[4:16])
	b[12], b[13] = byte(tpid>>8), byte(tpid)
	b[14], b[15] = byte(tci>>8), byte(tci)
	if p.Offload.Flags&NeedsCsum != 0 {
		p.Offload.CsumStart += 4
	}
	if p.Offload.HdrLen != 0 {
		p.Offload.HdrLen += 4
	}
	return true
}

// Reset empties the packet, releasing an external tail, and clears its
// metadata for reuse.
func (p *Packet) Reset() {
	p.release()
	p.start, p.end = Headroom, Headroom
	p.Offload = Offload{}
	p.InPort = 0
	p.DpHash = 0
	p.SkbPriority = 0
}
