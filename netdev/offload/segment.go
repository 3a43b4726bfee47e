package offload

import (
	"encoding/binary"

	"github.com/govs/govs/datapath/packet"
)

// Segmenter cuts a TCP or UDP super-frame into wire-sized segments, one per
// Next, so that a caller can write them into as many buffers as it has at a
// time. Every segment carries the super-frame's headers fixed up as the
// kernel's tcp_gso_segment and __udp_gso_segment (with inet_gso_segment and
// ipv6_gso_segment) do: IPv4 total length, incrementing ID and header
// checksum, IPv6 payload length, TCP sequence number, FIN and PSH on the
// last segment only, CWR on the first only, UDP length, and a complete L4
// checksum. The zero value is ready for Reset.
type Segmenter struct {
	frame  []byte
	h      headers
	hdrLen int    // all headers, copied into every segment
	mss    int    // payload per segment
	off    int    // offset in frame of the next segment's payload
	seq    uint32 // TCP sequence number of the first payload byte
	id     uint16 // IPv4 ID of the first segment
	pseudo uint64 // pseudo-header sum without the length
	i      int    // segments returned so far
	n      int    // segments in all
}

// Reset prepares s to segment frame according to o, which must have a GSO
// type and size. It checks the frame's headers against o; when NeedsCsum is
// set, CsumStart must be the transport header. The checksums in frame are
// not used: every segment's are computed afresh.
func (s *Segmenter) Reset(frame []byte, o *packet.Offload) error {
	*s = Segmenter{}
	if o.GSO == packet.GSONone || o.GSOSize == 0 {
		return ErrMalformed
	}
	h, err := parse(frame)
	if err != nil {
		return err
	}
	switch o.GSO {
	case packet.GSOTCPv4:
		if !h.v4 || h.proto != protoTCP {
			return ErrMalformed
		}
	case packet.GSOTCPv6:
		if h.v4 || h.proto != protoTCP {
			return ErrMalformed
		}
	case packet.GSOUDPL4:
		if h.proto != protoUDP {
			return ErrMalformed
		}
	default:
		return ErrUnsupported
	}
	if o.Flags&packet.NeedsCsum != 0 && (int(o.CsumStart) != h.l4 || o.CsumOffset != h.csumOffset()) {
		return ErrMalformed
	}
	s.frame, s.h = frame, h
	s.hdrLen = h.l4 + h.l4len
	s.mss = int(o.GSOSize)
	s.off = s.hdrLen
	if s.MaxSegmentLen()-h.l3 > 0xffff { // IPv4 total length, IPv6 payload length
		*s = Segmenter{}
		return ErrMalformed
	}
	s.n = (len(frame) - s.hdrLen + s.mss - 1) / s.mss
	if s.n == 0 {
		s.n = 1
	}
	if h.proto == protoTCP {
		s.seq = binary.BigEndian.Uint32(frame[h.l4+4:])
	}
	if h.v4 {
		s.id = binary.BigEndian.Uint16(frame[h.l3+4:])
	}
	s.pseudo = pseudoSum(frame[h.l3:], h.v4, h.proto)
	return nil
}

// Segments returns how many segments the frame is cut into.
func (s *Segmenter) Segments() int { return s.n }

// MaxSegmentLen returns the length of the longest segment: the buffers
// given to Next must hold it (a packet's Tail always does).
func (s *Segmenter) MaxSegmentLen() int { return min(s.hdrLen+s.mss, len(s.frame)) }

// Next writes the next segment into dst and returns its length, or 0 when
// all have been written. dst must be at least MaxSegmentLen long.
func (s *Segmenter) Next(dst []byte) int {
	if s.i == s.n {
		return 0
	}
	h := &s.h
	payload := min(s.mss, len(s.frame)-s.off)
	n := s.hdrLen + payload
	seg := dst[:n]
	copy(seg, s.frame[:s.hdrLen])
	copy(seg[s.hdrLen:], s.frame[s.off:s.off+payload])

	ip := seg[h.l3:]
	if h.v4 {
		binary.BigEndian.PutUint16(ip[2:], uint16(n-h.l3))
		binary.BigEndian.PutUint16(ip[4:], s.id+uint16(s.i))
		ip[10], ip[11] = 0, 0
		binary.BigEndian.PutUint16(ip[10:], Checksum(ip[:h.l4-h.l3], 0))
	} else {
		binary.BigEndian.PutUint16(ip[4:], uint16(n-h.l3-40))
	}

	l4 := seg[h.l4:]
	l4len := uint64(n - h.l4)
	if h.proto == protoTCP {
		binary.BigEndian.PutUint32(l4[4:], s.seq+uint32(s.off-s.hdrLen))
		if s.i != s.n-1 {
			l4[13] &^= tcpFlagFIN | tcpFlagPSH
		}
		if s.i != 0 {
			l4[13] &^= tcpFlagCWR
		}
		l4[16], l4[17] = 0, 0
		binary.BigEndian.PutUint16(l4[16:], Checksum(l4, s.pseudo+l4len))
	} else {
		binary.BigEndian.PutUint16(l4[4:], uint16(l4len))
		l4[6], l4[7] = 0, 0
		c := Checksum(l4, s.pseudo+l4len)
		if c == 0 {
			c = 0xffff
		}
		binary.BigEndian.PutUint16(l4[6:], c)
	}
	s.off += payload
	s.i++
	return n
}
