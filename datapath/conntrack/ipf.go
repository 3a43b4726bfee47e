package conntrack

import (
	"encoding/binary"
	"slices"
	"sync"
)

// IP fragments are reassembled before tracking, as OVS's lib/ipf.c does:
// the tracker keeps a copy of each fragment until its datagram is whole,
// tracks the reassembled datagram, and the datapath then forwards the
// original fragments with the datagram's conntrack state (and NAT).

// Limits of reassembly, OVS's defaults (ipf.c): fragments other than the
// last must be at least this large, at most maxFrags fragments are held
// in all, a datagram may take fragListTimeout to arrive whole.
const (
	minFragSize4    = 1200
	minFragSize6    = 1280
	maxFrags        = 1000
	maxFragsPerList = 64
	fragListTimeout = 15e9 // ns
	maxDatagram     = 65535
)

type fragKey struct {
	src, dst [16]byte
	id       uint32
	zone     uint16
	proto    uint8
	v6       bool
}

type fragment struct {
	frame      []byte // a copy of the whole frame
	off, n     int    // payload offset in the datagram, payload length
	data       int    // where the payload starts in frame
	last       bool
	hdrEnd     int // end of the headers to keep (first fragment)
	nextHdrOff int // IPv6: the offset of the next-header byte before the fragment header
}

type fragList struct {
	frags   []fragment
	total   int // payload length of the datagram, -1 until the last fragment came
	expires int64
	bad     bool
}

// reassembler holds the fragment lists; one mutex, as fragments are rare
// and never on the path of other packets.
type reassembler struct {
	mu     sync.Mutex // guards lists and n
	lists  map[fragKey]*fragList
	n      int
	reject uint64 // fragments refused (too small, overlapping, over the limits)
}

// fragInfo parses a fragment's IP header: its key, the payload offset in
// the datagram and in the frame, and whether more follow. ok is false for
// a frame that is not an IP fragment.
func fragInfo(b []byte, zone uint16) (k fragKey, f fragment, ok bool) {
	if len(b) < 14 {
		return k, f, false
	}
	off := 12
	typ := binary.BigEndian.Uint16(b[off:])
	if typ == 0x8100 || typ == 0x88a8 {
		if len(b) < 18 {
			return k, f, false
		}
		off += 4
		typ = binary.BigEndian.Uint16(b[off:])
	}
	l3 := off + 2
	k.zone = zone
	switch typ {
	case 0x0800:
		if len(b) < l3+20 || b[l3]>>4 != 4 {
			return k, f, false
		}
		h := b[l3:]
		ihl := int(h[0]&15) * 4
		tot := int(binary.BigEndian.Uint16(h[2:]))
		fo := binary.BigEndian.Uint16(h[6:])
		if fo&0x3fff == 0 || ihl < 20 || tot < ihl || l3+tot > len(b) {
			return k, f, false
		}
		copy(k.src[:4], h[12:16])
		copy(k.dst[:4], h[16:20])
		k.id, k.proto = uint32(binary.BigEndian.Uint16(h[4:])), h[9]
		f = fragment{off: int(fo&0x1fff) * 8, data: l3 + ihl, n: tot - ihl, last: fo&0x2000 == 0, hdrEnd: l3 + ihl}
		return k, f, true
	case 0x86dd:
		// Only a fragment header right after the IPv6 header.
		if len(b) < l3+48 || b[l3]>>4 != 6 || b[l3+6] != IPProtoFragment {
			return k, f, false
		}
		h := b[l3:]
		plen := int(binary.BigEndian.Uint16(h[4:]))
		if plen < 8 || l3+40+plen > len(b) {
			return k, f, false
		}
		k.v6 = true
		copy(k.src[:], h[8:24])
		copy(k.dst[:], h[24:40])
		fh := h[40:48]
		k.proto, k.id = fh[0], binary.BigEndian.Uint32(fh[4:])
		fo := binary.BigEndian.Uint16(fh[2:])
		f = fragment{off: int(fo &^ 7), data: l3 + 48, n: plen - 8, last: fo&1 == 0, hdrEnd: l3 + 40, nextHdrOff: l3 + 6}
		return k, f, true
	}
	return k, f, false
}

// IPProtoFragment is IPv6's fragment header.
const IPProtoFragment = 44

// IsFragment reports whether the frame b is an IPv4 or IPv6 fragment.
func IsFragment(b []byte) bool {
	_, _, ok := fragInfo(b, 0)
	return ok
}

// Defrag takes a fragment frame of zone; the tracker keeps a copy. Until
// its datagram is whole it returns nil; then it returns the datagram's
// fragments in offset order (the copies) and the reassembled frame. A
// fragment it refuses (too small, overlapping, over the limits: OVS's
// rules) makes it return nil as well; the datagram is then lost.
func (t *Tracker) Defrag(now int64, b []byte, zone uint16) (frags [][]byte, whole []byte) {
	k, f, ok := fragInfo(b, zone)
	if !ok {
		return nil, nil
	}
	r := &t.frags
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lists == nil {
		r.lists = map[fragKey]*fragList{}
	}
	min := minFragSize4
	if k.v6 {
		min = minFragSize6
	}
	l := r.lists[k]
	if l == nil || l.expires <= now {
		if l != nil {
			r.drop(k, l)
		}
		l = &fragList{total: -1, expires: now + fragListTimeout}
		r.lists[k] = l
	}
	if (!f.last && f.n+f.data-f.hdrEnd < min) || f.off+f.n > maxDatagram || r.n >= maxFrags ||
		len(l.frags) >= maxFragsPerList || (f.last && l.total >= 0) || (!f.last && f.n%8 != 0) {
		r.reject++
		l.bad = true
	}
	for _, o := range l.frags {
		if f.off < o.off+o.n && o.off < f.off+f.n {
			l.bad = true // overlapping fragments: the datagram is dropped, as OVS does
			r.reject++
		}
	}
	if l.bad {
		r.drop(k, l)
		return nil, nil
	}
	f.frame = slices.Clone(b)
	l.frags = append(l.frags, f)
	r.n++
	if f.last {
		l.total = f.off + f.n
	}
	if l.total < 0 {
		return nil, nil
	}
	have := 0
	for _, o := range l.frags {
		have += o.n
	}
	if have != l.total {
		return nil, nil
	}
	r.drop(k, l)
	slices.SortFunc(l.frags, func(a, b fragment) int { return a.off - b.off })
	first := &l.frags[0]
	if first.off != 0 {
		return nil, nil
	}
	whole = make([]byte, 0, first.hdrEnd+l.total+8)
	whole = append(whole, first.frame[:first.hdrEnd]...)
	for _, o := range l.frags {
		whole = append(whole, o.frame[o.data:o.data+o.n]...)
	}
	l3 := vlanL3(whole)
	if !k.v6 {
		// The first fragment's header with the whole length, no flags.
		h := whole[l3:]
		ihl := int(h[0]&15) * 4
		binary.BigEndian.PutUint16(h[2:], uint16(ihl+l.total))
		binary.BigEndian.PutUint16(h[6:], 0)
		h[10], h[11] = 0, 0
		binary.BigEndian.PutUint16(h[10:], ^fold(sum(0, h[:ihl])))
	} else {
		h := whole[l3:]
		h[6] = k.proto // the fragment header is left out
		binary.BigEndian.PutUint16(h[4:], uint16(l.total))
	}
	for _, o := range l.frags {
		frags = append(frags, o.frame)
	}
	return frags, whole
}

// vlanL3 is the offset of the IP header in an Ethernet frame with at most
// one VLAN tag.
func vlanL3(b []byte) int {
	if t := binary.BigEndian.Uint16(b[12:]); t == 0x8100 || t == 0x88a8 {
		return 18
	}
	return 14
}

func (r *reassembler) drop(k fragKey, l *fragList) {
	r.n -= len(l.frags)
	delete(r.lists, k)
}

// sweep drops the datagrams that did not arrive whole in time.
func (r *reassembler) sweep(now int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, l := range r.lists {
		if l.expires <= now {
			r.drop(k, l)
		}
	}
}

// NATFragment applies to fragment frame b the translation that tracking
// its reassembled datagram with a gave md: addresses to every fragment,
// ports too to the first, whose transport checksum covers the datagram.
func (t *Tracker) NATFragment(b []byte, md *Meta, a *Action) {
	c := md.conn
	if c == nil || a.NAT == nil || c.nat == 0 {
		return
	}
	k, f, ok := fragInfo(b, md.Zone)
	if !ok {
		return
	}
	p := parsed{key: key{src: k.src, dst: k.dst, proto: k.proto, v6: k.v6}, l3: vlanL3(b), l4: f.data, end: f.data + f.n}
	if !k.v6 {
		p.ipv4HdrLen = f.data - p.l3
	}
	if f.off == 0 && (k.proto == protoTCP && f.n >= 20 || k.proto == protoUDP && f.n >= 8 || k.proto == protoICMPv6 && k.v6 && f.n >= 4) {
		p.l4Valid = true
	}
	var dummy Meta
	t.natPacket(b, &p, c, md.State&StateReply != 0, &dummy, false)
}
