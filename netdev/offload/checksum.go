package offload

import (
	"encoding/binary"
	"math/bits"

	"github.com/govs/govs/datapath/packet"
)

// sum returns the 16-bit ones'-complement sum (RFC 1071) of b added to
// initial, not yet folded. The words are loaded little-endian, eight bytes at
// a time, which yields the byte-swapped sum (RFC 1071 §2(B)); swapping
// the folded result back gives the big-endian one.
func sum(b []byte, initial uint64) uint64 {
	var ac, carry uint64
	for len(b) >= 32 {
		ac, carry = bits.Add64(ac, binary.LittleEndian.Uint64(b[0:8]), carry)
		ac, carry = bits.Add64(ac, binary.LittleEndian.Uint64(b[8:16]), carry)
		ac, carry = bits.Add64(ac, binary.LittleEndian.Uint64(b[16:24]), carry)
		ac, carry = bits.Add64(ac, binary.LittleEndian.Uint64(b[24:32]), carry)
		b = b[32:]
	}
	for len(b) >= 8 {
		ac, carry = bits.Add64(ac, binary.LittleEndian.Uint64(b), carry)
		b = b[8:]
	}
	if len(b) >= 4 {
		ac, carry = bits.Add64(ac, uint64(binary.LittleEndian.Uint32(b)), carry)
		b = b[4:]
	}
	if len(b) >= 2 {
		ac, carry = bits.Add64(ac, uint64(binary.LittleEndian.Uint16(b)), carry)
		b = b[2:]
	}
	if len(b) == 1 {
		ac, carry = bits.Add64(ac, uint64(b[0]), carry)
	}
	ac, carry = bits.Add64(ac, 0, carry)
	ac += carry
	return uint64(bits.ReverseBytes16(fold(ac))) + initial
}

// fold reduces a ones'-complement sum to 16 bits.
func fold(ac uint64) uint16 {
	ac = (ac >> 32) + (ac & 0xffffffff)
	ac = (ac >> 32) + (ac & 0xffffffff)
	ac = (ac >> 16) + (ac & 0xffff)
	ac = (ac >> 16) + (ac & 0xffff)
	return uint16(ac)
}

// Checksum returns the Internet checksum of b: the complement of the
// ones'-complement sum of b and initial (a pseudo-header sum, say).
func Checksum(b []byte, initial uint64) uint16 {
	return ^fold(sum(b, initial))
}

// pseudoSum is the sum of an IPv4 or IPv6 pseudo-header (RFC 793, RFC 8200
// §8.1) without the length: the addresses and the protocol. ip is the
// network header.
func pseudoSum(ip []byte, v4 bool, proto uint8) uint64 {
	if v4 {
		return sum(ip[12:20], uint64(proto))
	}
	return sum(ip[8:40], uint64(proto))
}

// CompleteChecksum finishes the partial checksum of frame described by o
// (NeedsCsum, CsumStart, CsumOffset), as skb_checksum_help does: the sum
// from CsumStart to the end, seeded by the pseudo-header sum the sender
// left in the checksum field, is stored complemented, 0 as 0xffff. It then
// marks o CsumValid instead of NeedsCsum, with no checksum offsets. It does nothing if o does not
// have NeedsCsum.
func CompleteChecksum(frame []byte, o *packet.Offload) error {
	if o.Flags&packet.NeedsCsum == 0 {
		return nil
	}
	start, at := int(o.CsumStart), int(o.CsumStart)+int(o.CsumOffset)
	if start >= len(frame) || at+2 > len(frame) {
		return ErrMalformed
	}
	c := Checksum(frame[start:], 0)
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(frame[at:], c)
	o.Flags = o.Flags&^packet.NeedsCsum | packet.CsumValid
	o.CsumStart, o.CsumOffset = 0, 0
	return nil
}
