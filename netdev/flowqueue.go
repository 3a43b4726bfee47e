package netdev

import (
	"bytes"
	"encoding/binary"
)

// flowQueue returns which of n queues frame (an Ethernet frame) goes to: a
// hash of its IP addresses and, for TCP, UDP and SCTP, its ports, the same
// for both directions of a flow. Non-IP frames, and those too short to
// parse, go to queue 0. Fragments of a datagram, and IPv6 packets with
// extension headers, hash on their addresses alone, so that they stay
// together (and in order) whatever their piece carries.
func flowQueue(frame []byte, n int) int {
	if n <= 1 || len(frame) < 14 {
		return 0
	}
	et, off := binary.BigEndian.Uint16(frame[12:]), 14
	for i := 0; i < 2 && (et == 0x8100 || et == 0x88a8) && len(frame) >= off+4; i++ {
		et, off = binary.BigEndian.Uint16(frame[off+2:]), off+4
	}
	var a, b []byte
	var proto byte
	l4 := -1
	switch ip := frame[off:]; {
	case et == 0x0800 && len(ip) >= 20:
		a, b, proto = ip[12:16], ip[16:20], ip[9]
		ihl := int(ip[0]&0x0f) * 4
		if frag := binary.BigEndian.Uint16(ip[6:]); frag&0x3fff == 0 && ihl >= 20 {
			l4 = off + ihl
		}
	case et == 0x86dd && len(ip) >= 40:
		a, b, proto = ip[8:24], ip[24:40], ip[6]
		l4 = off + 40
	default:
		return 0
	}
	if bytes.Compare(a, b) > 0 {
		a, b = b, a
	}
	h := uint64(14695981039346656037) // FNV-1a
	for _, s := range [][]byte{a, b} {
		for _, c := range s {
			h = (h ^ uint64(c)) * 1099511628211
		}
	}
	if (proto == 6 || proto == 17 || proto == 132) && l4 >= 0 && len(frame) >= l4+4 {
		p, q := binary.BigEndian.Uint16(frame[l4:]), binary.BigEndian.Uint16(frame[l4+2:])
		h = (h ^ uint64(min(p, q))<<16 ^ uint64(max(p, q)) ^ uint64(proto)<<32) * 1099511628211
	}
	// fmix64 (MurmurHash3) spreads every input bit over the top ones.
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return int((h >> 32) * uint64(n) >> 32)
}
