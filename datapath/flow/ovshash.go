package flow

import (
	"encoding/binary"
	"math/bits"
)

// OVS's hashes of a packet that its datapath's hash() action computes
// (lib/odp-execute.c: flow_hash_symmetric_l3l4 for sym_l4,
// flow_hash_5tuple for l4), and the primitives they use (lib/hash.h as
// built without SSE 4.2, as Debian's is). OVS hashes fields as they lie
// in memory, in network byte order, read as little-endian words on x86:
// these read the bytes the same way, so that they give OVS's numbers on
// every host.

// HashAdd is OVS's hash_add (mhash_add: a murmur3 step).
func HashAdd(h, d uint32) uint32 {
	if d != 0 {
		d *= 0xcc9e2d51
		d = bits.RotateLeft32(d, 15)
		d *= 0x1b873593
		h ^= d
	}
	h = bits.RotateLeft32(h, 13)
	return h*5 + 0xe6546b64
}

// HashAdd64 is OVS's hash_add64.
func HashAdd64(h uint32, d uint64) uint32 { return HashAdd(HashAdd(h, uint32(d)), uint32(d>>32)) }

// HashFinish is OVS's hash_finish: murmur3's finaliser of h^final.
func HashFinish(h, final uint32) uint32 {
	h ^= final
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	return h ^ h>>16
}

// HashInt is OVS's hash_int.
func HashInt(x, basis uint32) uint32 { return HashFinish(HashAdd(HashAdd(x, 0), basis), 8) }

func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// xorAddrs writes the IP source XOR destination of k to b (4 bytes for
// IPv4, 16 for IPv6, nothing otherwise).
func xorAddrs(k *Key, b []byte) {
	switch k.EthType {
	case EthTypeIPv4:
		for i := range 4 {
			b[i] = k.IPv4Src[i] ^ k.IPv4Dst[i]
		}
	case EthTypeIPv6:
		for i := range 16 {
			b[i] = k.IPv6Src[i] ^ k.IPv6Dst[i]
		}
	}
}

// HashSymmetricL3L4 is OVS's flow_hash_symmetric_l3l4: the addresses,
// the protocol and, but in fragments, the ports of TCP and SCTP (and of
// UDP if udp), each XORed over both directions; a packet that is not IP
// hashes as flow_hash_symmetric_l2. hash(sym_l4(basis)) computes it
// without UDP.
func HashSymmetricL3L4(k *Key, basis uint32, udp bool) uint32 {
	h := basis
	var a [16]byte
	xorAddrs(k, a[:])
	switch k.EthType {
	case EthTypeIPv4:
		h = HashAdd(h, le32(a[:]))
	case EthTypeIPv6:
		h = HashAdd64(h, binary.LittleEndian.Uint64(a[:]))
		h = HashAdd64(h, binary.LittleEndian.Uint64(a[8:]))
	default:
		return hashSymmetricL2(k, basis)
	}
	h = HashAdd(h, uint32(k.NwProto))
	if k.NwFrag&FragAny == 0 && (k.NwProto == IPProtoTCP || k.NwProto == IPProtoSCTP || udp && k.NwProto == IPProtoUDP) {
		var p [2]byte
		binary.BigEndian.PutUint16(p[:], k.TpSrc^k.TpDst)
		h = HashAdd(h, uint32(binary.LittleEndian.Uint16(p[:])))
	}
	return HashFinish(h, basis)
}

// hashSymmetricL2 is flow_hash_symmetric_l2: three words of struct {
// eth_type; vlan_tci; eth_addr; pad; }.
func hashSymmetricL2(k *Key, basis uint32) uint32 {
	var b [12]byte
	binary.BigEndian.PutUint16(b[0:], k.EthType)
	binary.BigEndian.PutUint16(b[2:], k.VLANTCI&VLANVIDMask)
	for i := range 6 {
		b[4+i] = k.EthSrc[i] ^ k.EthDst[i]
	}
	h := basis
	for i := 0; i < 12; i += 4 {
		h = HashAdd(h, le32(b[i:]))
	}
	return HashFinish(h, basis)
}

// Hash5Tuple is OVS's flow_hash_5tuple (and miniflow_hash_5tuple, the
// netdev datapath's RSS hash of a packet that came without one): the
// addresses, the protocol and, for TCP, UDP, SCTP, ICMP and ICMPv6, both
// ports (ICMP's type and code) as one word.
func Hash5Tuple(k *Key, basis uint32) uint32 {
	h := basis
	switch k.EthType {
	case EthTypeIPv6:
		for _, a := range [2]*[16]byte{&k.IPv6Src, &k.IPv6Dst} {
			h = HashAdd64(h, binary.LittleEndian.Uint64(a[:8]))
			h = HashAdd64(h, binary.LittleEndian.Uint64(a[8:]))
		}
	case EthTypeIPv4, EthTypeARP:
		h = HashAdd(h, le32(k.IPv4Src[:]))
		h = HashAdd(h, le32(k.IPv4Dst[:]))
	default:
		return HashFinish(h, 42)
	}
	h = HashAdd(h, uint32(k.NwProto))
	switch k.NwProto {
	case IPProtoTCP, IPProtoUDP, IPProtoSCTP, IPProtoICMP, IPProtoICMPv6:
		var p [4]byte
		binary.BigEndian.PutUint16(p[:], k.TpSrc)
		binary.BigEndian.PutUint16(p[2:], k.TpDst)
		h = HashAdd(h, le32(p[:]))
	}
	return HashFinish(h, 42)
}
