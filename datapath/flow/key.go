// Package flow owns the flow key: the fixed-size summary of a frame's
// headers that the datapath's caches and classifier match on and that the
// translation layer reads, with a mask of the same shape saying which bits
// of a key a translation consulted. It follows OVS's struct flow
// (lib/flow.h) for the fields a switch without tunnels needs, with the
// recirculation, conntrack and tunnel metadata.
package flow

import (
	"math/bits"
)

// Key is the flow key of one frame. It is a comparable value of fixed size
// (KeySize bytes) laid out without padding, so that == compiles to one
// memory comparison and the key hashes as a run of words (see Hash).
//
// Fields that a frame does not carry are zero. The field layout is part of
// no wire format and may grow; code outside this package must use field
// names, never positions.
type Key struct {
	// _ aligns keys to 8 bytes, so that they can be read as words.
	_ [0]uint64

	// InPort is the datapath port the frame arrived on.
	InPort uint32
	// IPv6Label is the IPv6 flow label (20 bits).
	IPv6Label uint32

	// EthDst and EthSrc are the Ethernet addresses.
	EthDst, EthSrc [6]byte
	// EthType is the Ethernet type after the outer VLAN tag, if any: for a
	// frame with two tags it is the inner tag's TPID. 802.3 frames with
	// a SNAP header carry the SNAP type; other 802.3 frames carry
	// EthTypeNone.
	EthType uint16
	// VLANTCI is the outer 802.1Q tag's TCI with VLANPresent set, or 0 if
	// the frame is untagged. As in OVS the DEI bit of the frame is not
	// kept: its position means "tag present".
	VLANTCI uint16
	// VLANTPID is the outer tag's TPID (0x8100 or 0x88a8), 0 if untagged.
	VLANTPID uint16

	// TpSrc and TpDst are the TCP, UDP or SCTP ports. For ICMP and ICMPv6
	// they hold the type and code, as in OVS (see ICMPType, ICMPCode).
	// They are zero in later fragments.
	TpSrc, TpDst uint16
	// TCPFlags are the 12 flag bits of the TCP header.
	TCPFlags uint16

	// NwProto is the IP protocol (the last next-header for IPv6), or for
	// ARP the low 8 bits of the opcode (0 if the opcode is larger).
	NwProto uint8
	// NwTOS is the IPv4 TOS byte or the IPv6 traffic class (DSCP and ECN).
	NwTOS uint8
	// NwTTL is the IPv4 TTL or IPv6 hop limit.
	NwTTL uint8
	// NwFrag is a set of Frag bits.
	NwFrag uint8

	// IPv4Src and IPv4Dst are the IPv4 addresses, or ARP's sender and
	// target protocol addresses.
	IPv4Src, IPv4Dst [4]byte
	// IPv6Src and IPv6Dst are the IPv6 addresses.
	IPv6Src, IPv6Dst [16]byte

	// ArpSHA and ArpTHA are ARP's sender and target hardware addresses.
	ArpSHA, ArpTHA [6]byte

	// The fields below are the packet's metadata rather than its
	// headers (OVS's recirc_id, ct_* and dp_hash): zero on a frame's
	// first pass through the datapath, set by the ct(), hash() and
	// recirc() actions for the pass after a recirculation.

	// RecircID is the recirculation ID, 0 on the first pass.
	RecircID uint32
	// CtMark is the connection's mark.
	CtMark uint32
	// CtZone is the zone of the last ct() action.
	CtZone uint16
	// CtState is a set of conntrack state bits (OVS_CS_F_*: new 0x01,
	// est 0x02, rel 0x04, rpl 0x08, inv 0x10, trk 0x20, snat 0x40,
	// dnat 0x80).
	CtState uint8
	// CtNwProto is the IP protocol of the connection's original
	// direction, 0 if the packet is not tracked into a connection; then
	// the other CtNw and CtTp fields are zero too.
	CtNwProto uint8
	// CtTpSrc and CtTpDst are the original direction's ports (for ICMP,
	// its type and code, as OVS's ct_tp_src and ct_tp_dst).
	CtTpSrc, CtTpDst uint16
	// CtLabel is the connection's 128-bit label, most significant byte
	// first.
	CtLabel [16]byte
	// CtNwSrc and CtNwDst are the original direction's addresses: IPv4
	// in the first 4 bytes for an IPv4 packet (OVS's ct_nw_src), IPv6
	// otherwise (ct_ipv6_src).
	CtNwSrc, CtNwDst [16]byte
	// DpHash is the hash a hash() action computed before the packet
	// recirculated (OVS's dp_hash), 0 if none did.
	DpHash uint32
	// SkbPriority is the packet's priority (OVS's skb_priority): 0 as
	// received, what a set(skb_priority) action wrote before the packet
	// recirculated. It selects the packet's queue on output.
	SkbPriority uint32

	// The tunnel metadata of a packet a tnl_pop action decapsulated (OVS's
	// flow_tnl), zero for one that came in on a port: the outer headers
	// it arrived in.

	// TunID is the VNI (VXLAN, Geneve) or GRE key.
	TunID uint64
	// TunSrc and TunDst are the outer source and destination addresses,
	// IPv4 in v4-mapped IPv6 form.
	TunSrc, TunDst [16]byte
	// TunFlags are TunFlag bits.
	TunFlags uint16
	// TunTpSrc and TunTpDst are the outer UDP ports (0 for GRE).
	TunTpSrc, TunTpDst uint16
	// TunTOS and TunTTL are the outer IP TOS and TTL.
	TunTOS, TunTTL uint8
	// TunOptsLen is the length in bytes of the Geneve options in
	// TunOpts, 0 if the packet carried none.
	TunOptsLen uint8
	// TunGBPFlags and TunGBPID are the Group Policy flags (D 0x40, A
	// 0x08) and ID of a VXLAN packet with the Group Based Policy
	// extension (OVS's tun_gbp_flags, tun_gbp_id), 0 for any other.
	TunGBPFlags uint8
	TunGBPID    uint16
	// TunOpts are the Geneve options of a decapsulated packet as they
	// were on the wire, TLVs (OVS's flow_tnl metadata in its "UDPIF"
	// form); bytes past TunOptsLen are zero. Packets with more than
	// TunOptsMax bytes of options are dropped by tnl_pop.
	TunOpts [TunOptsMax]byte

	// The IPv6 neighbour discovery fields of an ICMPv6 neighbour
	// solicitation or advertisement with code 0 (OVS's nd_target,
	// igmp_group_ip4 and tcp_flags as nd_reserved and nd_options_type);
	// the link-layer address options go to ArpSHA (source, nd_sll) and
	// ArpTHA (target, nd_tll). They come last: zero for every other
	// packet, so Hash skips them.

	// NdTarget is the target address.
	NdTarget [16]byte
	// NdReserved is the 32 bits after the ICMPv6 header (the R, S and O
	// flags of an advertisement, and the reserved bits).
	NdReserved uint32
	// NdOptionsType is the type of the first link-layer address option
	// (1 source, 2 target), 0 if none.
	NdOptionsType uint8
	// ndPad makes the key a whole number of words; always zero.
	ndPad [3]byte
}

// Bits of Key.TunFlags (OVS's FLOW_TNL_F_*, as tun_flags matches them).
const (
	TunFlagDontFragment = 1 << 0
	TunFlagCsum         = 1 << 1
	TunFlagOAM          = 1 << 2 // Geneve's O bit: OpenFlow's tun_flags=+oam
	TunFlagKey          = 1 << 3
	// TunFlagL3 marks a packet a legacy_l3 GRE tunnel decapsulated (an
	// IP packet behind a dummy Ethernet header): OVS's packet_type
	// (ns=1,id=PROTO), which sends it to a legacy_l3 tunnel port and
	// an Ethernet frame to a legacy_l2 one. Neither dumps nor OpenFlow's
	// tun_flags show it.
	TunFlagL3 = 1 << 4
	// TunFlagsMaskOnly are bits no key has: ofproto sets them in masks
	// to say which of OpenFlow's IPv4 and IPv6 tunnel address fields a
	// match or a translation consulted (ofp.TunMaskSrc4 and others).
	TunFlagsMaskOnly = 0xf000
)

// TunOptsMax is the most bytes of Geneve options a key holds: all a
// Geneve header can carry (its 6-bit length in 4-byte units), OVS's
// TLV_TOT_OPT_SIZE. The key's hash and the classifier's subtables skip
// the options' words when they are zero.
const TunOptsMax = 252

// Options returns the Geneve options of the key, raw TLVs.
func (k *Key) Options() []byte { return k.TunOpts[:k.TunOptsLen] }

// HasTunnel reports whether the packet was decapsulated.
func (k *Key) HasTunnel() bool { return k.TunDst != [16]byte{} }

// Mask has the shape of a Key: a one bit means the bit of the key was
// consulted and must match.
type Mask Key

// VLANPresent is the bit of Key.VLANTCI that says a tag is present (the
// position of the 802.1Q CFI/DEI bit, as OVS's VLAN_CFI).
const VLANPresent = 0x1000

// VLAN TCI fields.
const (
	VLANVIDMask = 0x0fff
	VLANPCPMask = 0xe000
)

// Frag bits of Key.NwFrag (OVS's FLOW_NW_FRAG_*).
const (
	// FragAny: the packet is a fragment.
	FragAny = 1 << 0
	// FragLater: the packet is a fragment other than the first.
	FragLater = 1 << 1
)

// Ethernet types the extractor knows.
const (
	EthTypeIPv4 = 0x0800
	EthTypeARP  = 0x0806
	EthTypeRARP = 0x8035
	EthTypeVLAN = 0x8100 // 802.1Q
	EthTypeQinQ = 0x88a8 // 802.1ad
	EthTypeIPv6 = 0x86dd
	EthTypeMin  = 0x0600 // smaller values are 802.3 lengths
	// EthTypeNone is the type given to 802.3 frames without SNAP (OVS's
	// FLOW_DL_TYPE_NONE).
	EthTypeNone = 0x05ff
)

// IP protocol numbers the extractor knows.
const (
	IPProtoHopOpts  = 0
	IPProtoICMP     = 1
	IPProtoIGMP     = 2
	IPProtoTCP      = 6
	IPProtoUDP      = 17
	IPProtoRouting  = 43
	IPProtoGRE      = 47
	IPProtoFragment = 44
	IPProtoAH       = 51
	IPProtoICMPv6   = 58
	IPProtoDstOpts  = 60
	IPProtoSCTP     = 132
)

// ICMPv6 types of neighbour discovery whose fields the key holds.
const (
	ICMPv6NS = 135 // neighbour solicitation
	ICMPv6NA = 136 // neighbour advertisement
)

// IsND reports whether the key is of an ICMPv6 neighbour solicitation or
// advertisement (OVS's is_nd).
func (k *Key) IsND() bool {
	return k.EthType == EthTypeIPv6 && k.NwProto == IPProtoICMPv6 && k.TpDst == 0 &&
		(k.TpSrc == ICMPv6NS || k.TpSrc == ICMPv6NA)
}

// IsVLANType reports whether t is a VLAN TPID (802.1Q or 802.1ad).
func IsVLANType(t uint16) bool { return t == EthTypeVLAN || t == EthTypeQinQ }

// HasVLAN reports whether the frame had an outer VLAN tag.
func (k *Key) HasVLAN() bool { return k.VLANTCI&VLANPresent != 0 }

// VID returns the outer tag's VLAN ID, 0 if untagged.
func (k *Key) VID() uint16 { return k.VLANTCI & VLANVIDMask }

// ICMPType returns the ICMP or ICMPv6 type.
func (k *Key) ICMPType() uint8 { return uint8(k.TpSrc) }

// ICMPCode returns the ICMP or ICMPv6 code.
func (k *Key) ICMPCode() uint8 { return uint8(k.TpDst) }

// Masked returns k with every bit that m does not have cleared.
func (k *Key) Masked(m *Mask) Key {
	r := *k
	rw, mw := r.words(), (*Key)(m).words()
	for i := range rw {
		rw[i] &= mw[i]
	}
	return r
}

// Hash returns a hash of k for cache indexing. It is not keyed: use it
// only where collisions cost time, not correctness. The words of the key
// are mixed in independent pairs (wyhash's multiply-fold), so that the
// multiplications overlap instead of forming one long dependency chain.
func (k *Key) Hash() uint64 {
	const (
		s0 = 0xa0761d6478bd642f
		s1 = 0xe7037ed1a0b428db
		s2 = 0x8ebc6af09c88c6e3
		s3 = 0x589965cc75374cc3
	)
	w := k.words()
	h := mix(w[0]^s0, w[1]^s1) ^ mix(w[2]^s2, w[3]^s3) ^ mix(w[4]^s1, w[5]^s0) ^
		mix(w[6]^s3, w[7]^s2) ^ mix(w[8]^s0, w[9]^s2) ^ mix(w[10]^s1, w[11]^s3)
	// The metadata words are zero on a first pass: fold them in only
	// when set, so that the common key hashes as before.
	if m := w[11] | w[12] | w[13] | w[14] | w[15] | w[16] | w[17] | w[18] | w[19]; m != 0 {
		h ^= mix(w[12]^s2, w[13]^s0) ^ mix(w[14]^s3, w[15]^s1) ^ mix(w[16]^s0, w[17]^s3) ^ mix(w[18]^s1, w[19]^s2)
	}
	// So are the tunnel words, but on decapsulated packets, and the
	// Geneve options words, but on packets that carried options.
	if t := w[20] | w[21] | w[22] | w[23] | w[24] | w[25]; t != 0 {
		h ^= mix(w[20]^s1, w[21]^s3) ^ mix(w[22]^s2, w[23]^s0) ^ mix(w[24]^s3, w[25]^s1)
		if w[26] != 0 {
			// Options: the word of TunOptsLen and the GBP fields,
			// then the TLVs up to their length (the rest is zero).
			n := 27 + (int(k.TunOptsLen)+3)/8
			h ^= mix(w[26]^s0, KeySize^s2)
			for i := 27; i < n; i++ {
				h ^= mix(w[i]^s1, uint64(i)^s3)
			}
		}
	}
	// And the neighbour discovery words, but on NS and NA.
	if n := w[58] | w[59] | w[60]; n != 0 {
		h ^= mix(w[58]^s2, w[59]^s1) ^ mix(w[60]^s0, KeySize^s3)
	}
	return mix(h^s0, h^s1)
}

// mix is the 128-bit product of a and b folded to 64 bits.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// Exact is the mask that consults every bit.
func Exact() Mask {
	var m Mask
	b := (*Key)(&m).bytes()
	for i := range b {
		b[i] = 0xff
	}
	return m
}

// KeyWords is the number of 64-bit words in a Key.
const KeyWords = KeySize / 8

// Word returns the i'th 64-bit word of k's memory, in native byte order:
// the unit the classifier hashes and compares masked keys in.
func (k *Key) Word(i int) uint64 { return k.words()[i] }

// Word returns the i'th 64-bit word of m.
func (m *Mask) Word(i int) uint64 { return (*Key)(m).Word(i) }

// IsZero reports whether m consults no bit.
func (m *Mask) IsZero() bool { return *m == Mask{} }

// HasExtra reports whether m consults a bit that o does not.
func (m *Mask) HasExtra(o *Mask) bool {
	mw, ow := (*Key)(m).words(), (*Key)(o).words()
	for i := range mw {
		if mw[i]&^ow[i] != 0 {
			return true
		}
	}
	return false
}

// Or adds o's bits to m.
func (m *Mask) Or(o *Mask) {
	mw, ow := (*Key)(m).words(), (*Key)(o).words()
	for i := range mw {
		mw[i] |= ow[i]
	}
}

// MatchesMasked reports whether k, masked by m, equals the masked key mk.
func (k *Key) MatchesMasked(mk *Key, m *Mask) bool {
	kw, mw, mkw := k.words(), (*Key)(m).words(), mk.words()
	for i := range kw {
		if kw[i]&mw[i] != mkw[i] {
			return false
		}
	}
	return true
}
