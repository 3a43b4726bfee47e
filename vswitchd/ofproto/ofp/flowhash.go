package ofp

import (
	"encoding/binary"
	"math/bits"

	"github.com/govs/govs/datapath/flow"
)

// OVS's hashes of a flow for multipath and bundle (lib/flow.c
// flow_hash_fields) and the primitives they use (lib/hash.h as built
// without SSE 4.2, as Debian's is; lib/jhash.c). OVS hashes fields as
// they lie in memory, in network byte order, read as little-endian
// words on x86: the hashes here read the bytes the same way, so that they
// give OVS's numbers on every host.

// HashAdd is OVS's hash_add.
func HashAdd(h, d uint32) uint32 { return flow.HashAdd(h, d) }

// HashFinish is OVS's hash_finish.
func HashFinish(h, final uint32) uint32 { return flow.HashFinish(h, final) }

func hashAdd64(h uint32, d uint64) uint32 { return flow.HashAdd64(h, d) }

func hash2Words(x, y uint32) uint32 { return HashFinish(HashAdd(HashAdd(x, 0), y), 8) }

// HashInt is OVS's hash_int.
func HashInt(x, basis uint32) uint32 { return hash2Words(x, basis) }

// HashUint64 is OVS's hash_uint64.
func HashUint64(x uint64) uint32 { return HashFinish(hashAdd64(0, x), 8) }

// HashBytes is OVS's hash_bytes: p's bytes as little-endian words (the
// last one zero-padded).
func HashBytes(p []byte, basis uint32) uint32 {
	n := len(p)
	h := basis
	for ; len(p) >= 4; p = p[4:] {
		h = HashAdd(h, le32(p))
	}
	if len(p) > 0 {
		var t [4]byte
		copy(t[:], p)
		h = HashAdd(h, le32(t[:]))
	}
	return HashFinish(h, uint32(n))
}

func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// jhashBytes is OVS's jhash_bytes (Bob Jenkins' lookup3).
func jhashBytes(p []byte, basis uint32) uint32 {
	a := 0xdeadbeef + uint32(len(p)) + basis
	b, c := a, a
	for len(p) > 12 || len(p) == 12 {
		a += le32(p)
		b += le32(p[4:])
		c += le32(p[8:])
		a, b, c = jhashMix(a, b, c)
		p = p[12:]
	}
	if len(p) > 0 {
		var tmp [12]byte
		copy(tmp[:], p)
		a += le32(tmp[:])
		b += le32(tmp[4:])
		c += le32(tmp[8:])
		a, b, c = jhashFinal(a, b, c)
	}
	return c
}

// jhashMix and jhashFinal are lookup3's mix() and final(): each step
// updates one of a, b and c (in turn) from the other two.
func jhashMix(a, b, c uint32) (uint32, uint32, uint32) {
	v := [3]uint32{a, b, c}
	for i, k := range [6]int{4, 6, 8, 16, 19, 4} {
		x, y, z := i%3, (i+1)%3, (i+2)%3
		v[x] -= v[z]
		v[x] ^= bits.RotateLeft32(v[z], k)
		v[z] += v[y]
	}
	return v[0], v[1], v[2]
}

func jhashFinal(a, b, c uint32) (uint32, uint32, uint32) {
	v := [3]uint32{a, b, c}
	for i, k := range [7]int{14, 11, 25, 16, 4, 14, 24} {
		x, y := (i+2)%3, (i+1)%3
		v[x] ^= v[y]
		v[x] -= bits.RotateLeft32(v[y], k)
	}
	return v[0], v[1], v[2]
}

func isIP(k *flow.Key) bool { return k.EthType == flow.EthTypeIPv4 || k.EthType == flow.EthTypeIPv6 }

func isFrag(k *flow.Key) bool { return k.NwFrag&flow.FragAny != 0 }

// HashFlow is OVS's flow_hash_fields: the hash of fields of k with basis.
func HashFlow(k *flow.Key, fields HashFields, basis uint16) uint32 {
	switch fields {
	case HashEthSrc:
		return jhashBytes(k.EthSrc[:], uint32(basis))
	case HashSymmetricL4:
		return hashSymmetricL4(k, uint32(basis))
	case HashSymmetricL3L4, HashSymmetricL3L4UDP:
		return hashSymmetricL3L4(k, uint32(basis), fields == HashSymmetricL3L4UDP)
	case HashNwSrc, HashNwDst:
		switch {
		case k.EthType == flow.EthTypeIPv4 && fields == HashNwSrc:
			return jhashBytes(k.IPv4Src[:], uint32(basis))
		case k.EthType == flow.EthTypeIPv4:
			return jhashBytes(k.IPv4Dst[:], uint32(basis))
		case k.EthType == flow.EthTypeIPv6 && fields == HashNwSrc:
			return jhashBytes(k.IPv6Src[:], uint32(basis))
		case k.EthType == flow.EthTypeIPv6:
			return jhashBytes(k.IPv6Dst[:], uint32(basis))
		}
		return uint32(basis)
	case HashSymmetricL3:
		// struct { union { ipv4; in6_addr }; eth_type; }: 20 bytes.
		var b [20]byte
		xorAddrs(k, b[:16])
		binary.BigEndian.PutUint16(b[16:], k.EthType)
		return jhashBytes(b[:], uint32(basis))
	}
	return 0
}

// xorAddrs writes the IP source XOR destination of k to b (4 bytes for
// IPv4, 16 for IPv6, nothing otherwise).
func xorAddrs(k *flow.Key, b []byte) {
	switch k.EthType {
	case flow.EthTypeIPv4:
		for i := range 4 {
			b[i] = k.IPv4Src[i] ^ k.IPv4Dst[i]
		}
	case flow.EthTypeIPv6:
		for i := range 16 {
			b[i] = k.IPv6Src[i] ^ k.IPv6Dst[i]
		}
	}
}

// hashSymmetricL4 is flow_hash_symmetric_l4: jhash of struct { union {
// ipv4; in6_addr }; eth_type; vlan_tci; tp_port; eth_addr; ip_proto; },
// 32 bytes with padding, each field the XOR of both directions'.
func hashSymmetricL4(k *flow.Key, basis uint32) uint32 {
	var b [32]byte
	for i := range 6 {
		b[22+i] = k.EthSrc[i] ^ k.EthDst[i]
	}
	binary.BigEndian.PutUint16(b[18:], k.VLANTCI&flow.VLANVIDMask)
	binary.BigEndian.PutUint16(b[16:], k.EthType)
	if isIP(k) {
		xorAddrs(k, b[:16])
		b[28] = k.NwProto
		if k.NwProto == flow.IPProtoTCP || k.NwProto == flow.IPProtoSCTP {
			binary.BigEndian.PutUint16(b[20:], k.TpSrc^k.TpDst)
		}
	}
	return jhashBytes(b[:], basis)
}

// hashSymmetricL3L4 is flow_hash_symmetric_l3l4 (the datapath's, which
// its hash(sym_l4) action computes).
func hashSymmetricL3L4(k *flow.Key, basis uint32, udp bool) uint32 {
	return flow.HashSymmetricL3L4(k, basis, udp)
}

// MaskHashFlow adds to the mask wc the fields HashFlow(k, fields) reads
// (OVS's flow_mask_hash_fields).
func MaskHashFlow(k *flow.Key, wc *flow.Key, fields HashFields) {
	all4 := [4]byte{0xff, 0xff, 0xff, 0xff}
	var all16 [16]byte
	for i := range all16 {
		all16[i] = 0xff
	}
	addrs := func(src, dst bool) {
		switch k.EthType {
		case flow.EthTypeIPv4:
			if src {
				wc.IPv4Src = all4
			}
			if dst {
				wc.IPv4Dst = all4
			}
		case flow.EthTypeIPv6:
			if src {
				wc.IPv6Src = all16
			}
			if dst {
				wc.IPv6Dst = all16
			}
		}
	}
	ports := func() { wc.TpSrc, wc.TpDst = 0xffff, 0xffff }
	switch fields {
	case HashEthSrc:
		wc.EthSrc = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	case HashSymmetricL4:
		wc.EthSrc = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		wc.EthDst = wc.EthSrc
		addrs(true, true)
		if isIP(k) {
			wc.NwProto = 0xff
			// flow_unwildcard_tp_ports, but not for UDP, whose ports
			// are not hashed.
			switch {
			case k.NwProto == flow.IPProtoUDP:
			case k.NwProto == flow.IPProtoICMP:
				wc.TpSrc |= 0xff
				wc.TpDst |= 0xff
			default:
				ports()
			}
		}
		wc.VLANTCI |= flow.VLANVIDMask | flow.VLANPresent
	case HashSymmetricL3L4, HashSymmetricL3L4UDP:
		if !isIP(k) {
			break
		}
		if fields == HashSymmetricL3L4UDP && k.NwProto == flow.IPProtoUDP && !isFrag(k) {
			ports()
		}
		addrs(true, true)
		wc.NwProto = 0xff
		if (k.NwProto == flow.IPProtoTCP || k.NwProto == flow.IPProtoSCTP) && !isFrag(k) {
			ports()
		}
	case HashNwSrc:
		addrs(true, false)
	case HashNwDst:
		addrs(false, true)
	case HashSymmetricL3:
		addrs(true, true)
	}
}
