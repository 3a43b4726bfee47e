package ofp

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"strconv"
	"sync"

	"github.com/govs/govs/datapath/flow"
)

// Flow is what an OpenFlow match or action can read or write: the
// datapath flow key plus the pipeline's own metadata (OVS's struct flow).
// The conntrack fields (ct_state, ct_zone, ct_mark, ct_label, ct_nw_*,
// ct_ipv6_*, ct_tp_*) are the key's. Fields a packet of govs never
// carries (tunnel, packet mark) are kept so that matches on them decode;
// they are always zero in a packet's flow.
type Flow struct {
	flow.Key
	Regs     [16]uint32
	Metadata uint64
	PktMark  uint32
	// ConjID is the conjunction a conjunctive match found (conj_id),
	// set only for the lookup that follows it.
	ConjID uint32
	// TunMD holds the tun_metadata fields at the places the bridge's
	// TLVTable gives them, TunMDPresent says which are present (bit n:
	// tun_metadata<n>), as OVS's flow_tnl metadata outside the datapath.
	TunMD        [TLVOptionSpace]byte
	TunMDPresent uint64
	// TunTab is the TLVTable the tun_metadata fields of a packet's flow
	// are read and written through; nil in matches and masks.
	TunTab *TLVTable
}

// Match is a flow with a mask: a one bit in Mask is a bit the flow must
// equal; Flow has no bit set outside Mask.
type Match struct {
	Flow Flow
	Mask Flow
	// TunMD are the match's tun_metadata fields, by index, as decoded;
	// ResolveTunMD places them in Flow and Mask through a TLVTable.
	TunMD []TunMDEntry
}

// FieldID names a field govs knows (OVS's enum mf_field_id, a subset).
type FieldID uint8

const (
	FieldNone FieldID = iota
	FieldInPort
	FieldEthDst
	FieldEthSrc
	FieldEthType
	FieldVLANTCI
	FieldVLANVID // OXM: VID plus OFPVID_PRESENT (the CFI bit)
	FieldVLANPCP
	FieldIPDSCP // OXM: DSCP in the low 6 bits
	FieldIPTOS  // NXM_OF_IP_TOS: the DSCP bits in place
	FieldIPECN
	FieldIPProto
	FieldIPTTL
	FieldIPFrag
	FieldIPv4Src
	FieldIPv4Dst
	FieldTCPSrc
	FieldTCPDst
	FieldUDPSrc
	FieldUDPDst
	FieldSCTPSrc
	FieldSCTPDst
	FieldICMPType
	FieldICMPCode
	FieldARPOp
	FieldARPSPA
	FieldARPTPA
	FieldARPSHA
	FieldARPTHA
	FieldIPv6Src
	FieldIPv6Dst
	FieldIPv6Label
	FieldICMPv6Type
	FieldICMPv6Code
	FieldTCPFlags
	FieldNDTarget
	FieldNDSLL
	FieldNDTLL
	FieldNDReserved
	FieldNDOptionsType
	FieldMetadata
	FieldTunID
	FieldTunSrc
	FieldTunDst
	FieldTunIPv6Src
	FieldTunIPv6Dst
	FieldTunFlags
	FieldTunGBPID
	FieldTunGBPFlags
	FieldPktMark
	FieldConjID
	FieldCtState
	FieldCtZone
	FieldCtMark
	FieldCtLabel
	FieldCtNwProto
	FieldCtNwSrc
	FieldCtNwDst
	FieldCtIPv6Src
	FieldCtIPv6Dst
	FieldCtTpSrc
	FieldCtTpDst
	FieldDpHash
	FieldRecircID
	FieldReg0                    // FieldReg0+n is reg<n>, n < 16
	FieldXReg0  = FieldReg0 + 16 // FieldXReg0+n is xreg<n>, n < 8
	FieldXXReg0 = FieldXReg0 + 8 // FieldXXReg0+n is xxreg<n>, n < 4
	fieldEnd    = FieldXXReg0 + 4
)

// prereq is what a field needs the rest of a match to say (OVS's enum
// mf_prereqs).
type prereq uint8

const (
	preNone prereq = iota
	preVLAN        // a VLAN tag present
	preARP         // ARP or RARP
	preIPv4
	preIPv6
	preIP // IPv4 or IPv6
	preTCP
	preUDP
	preSCTP
	preICMPv4
	preICMPv6
	// preND: an ICMPv6 neighbour solicitation or advertisement (type
	// 135 or 136, code 0); preNDSolicit and preNDAdvert one of them.
	preND
	preNDSolicit
	preNDAdvert
	// preCT: ct_state says the packet was tracked into a connection
	// (OVS's MFP_CT_VALID). The IP version the ct_nw_* and ct_ipv6_*
	// fields need is checked after (OFPBAC_MATCH_INCONSISTENT).
	preCT
)

// Field describes one field: its size, where it lives in a Flow, and its
// NXM and OXM headers (class<<16 | field<<9 | length, no mask bit; 0 if
// it has none).
type Field struct {
	ID       FieldID
	Name     string
	Len      int
	Maskable bool
	NXM, OXM uint32
	// Writable: set_field/load may write it.
	Writable bool
	// full is the mask of the bits the field has, if not all of its
	// bytes' (an exact match).
	full []byte
	pre  prereq
	get  func(f *Flow, b []byte)
	set  func(f *Flow, b []byte)
	// cur, if set, reads the field for a write of some of its bits
	// (SetMasked, Move, Pop) where get would not give back what the
	// last write left.
	cur func(f *Flow, b []byte)
}

func nxmHeader(class uint16, field uint8, n int) uint32 {
	return uint32(class)<<16 | uint32(field)<<9 | uint32(n)
}

// OXM/NXM classes.
const (
	classNXM0   = 0x0000
	classNXM1   = 0x0001
	classOXM    = 0x8000
	classPktReg = 0x8001
	classExp    = 0xffff
	// classEricsson holds the ND fields OVS 2.11 added (ERICOXM_OF_*).
	classEricsson = 0x1000
)

var (
	fields     [fieldEnd]*Field
	byHeader   = map[uint32]*Field{} // header without mask bit and with length
	fieldNames = map[string]*Field{}
)

func be16(v uint16) func(b []byte) { return func(b []byte) { binary.BigEndian.PutUint16(b, v) } }

func addField(fd *Field) {
	fields[fd.ID] = fd
	for _, h := range []uint32{fd.NXM, fd.OXM} {
		if h != 0 {
			byHeader[h] = fd
		}
	}
	fieldNames[fd.Name] = fd
}

func u16Field(id FieldID, name string, nxm, oxm uint32, maskable, writable bool, pre prereq, p func(f *Flow) *uint16) {
	addField(&Field{ID: id, Name: name, Len: 2, Maskable: maskable, NXM: nxm, OXM: oxm, Writable: writable, pre: pre,
		get: func(f *Flow, b []byte) { binary.BigEndian.PutUint16(b, *p(f)) },
		set: func(f *Flow, b []byte) { *p(f) = binary.BigEndian.Uint16(b) }})
}

func u32Field(id FieldID, name string, nxm, oxm uint32, maskable, writable bool, pre prereq, p func(f *Flow) *uint32) {
	addField(&Field{ID: id, Name: name, Len: 4, Maskable: maskable, NXM: nxm, OXM: oxm, Writable: writable, pre: pre,
		get: func(f *Flow, b []byte) { binary.BigEndian.PutUint32(b, *p(f)) },
		set: func(f *Flow, b []byte) { *p(f) = binary.BigEndian.Uint32(b) }})
}

func u8Field(id FieldID, name string, nxm, oxm uint32, maskable, writable bool, pre prereq, p func(f *Flow) *uint8) {
	addField(&Field{ID: id, Name: name, Len: 1, Maskable: maskable, NXM: nxm, OXM: oxm, Writable: writable, pre: pre,
		get: func(f *Flow, b []byte) { b[0] = *p(f) },
		set: func(f *Flow, b []byte) { *p(f) = b[0] }})
}

func bytesField(id FieldID, name string, n int, nxm, oxm uint32, maskable, writable bool, pre prereq, p func(f *Flow) []byte) {
	addField(&Field{ID: id, Name: name, Len: n, Maskable: maskable, NXM: nxm, OXM: oxm, Writable: writable, pre: pre,
		get: func(f *Flow, b []byte) { copy(b, p(f)) },
		set: func(f *Flow, b []byte) { copy(p(f), b) }})
}

func init() {
	addField(&Field{ID: FieldInPort, Name: "in_port", Len: 2, NXM: nxmHeader(classNXM0, 0, 2), Writable: true,
		get: func(f *Flow, b []byte) { binary.BigEndian.PutUint16(b, port10(f.InPort)) },
		set: func(f *Flow, b []byte) { f.InPort = widenPort10(binary.BigEndian.Uint16(b)) }})
	// OXM_OF_IN_PORT is 32 bits: a separate field over the same value.
	addField(&Field{ID: FieldInPort, Name: "in_port_oxm", Len: 4, OXM: nxmHeader(classOXM, 0, 4), Writable: true,
		get: func(f *Flow, b []byte) { binary.BigEndian.PutUint32(b, f.InPort) },
		set: func(f *Flow, b []byte) { f.InPort = binary.BigEndian.Uint32(b) }})
	fields[FieldInPort] = fieldNames["in_port"]
	bytesField(FieldEthDst, "eth_dst", 6, nxmHeader(classNXM0, 1, 6), nxmHeader(classOXM, 3, 6), true, true, preNone, func(f *Flow) []byte { return f.EthDst[:] })
	bytesField(FieldEthSrc, "eth_src", 6, nxmHeader(classNXM0, 2, 6), nxmHeader(classOXM, 4, 6), true, true, preNone, func(f *Flow) []byte { return f.EthSrc[:] })
	u16Field(FieldEthType, "eth_type", nxmHeader(classNXM0, 3, 2), nxmHeader(classOXM, 5, 2), false, false, preNone, func(f *Flow) *uint16 { return &f.EthType })
	u16Field(FieldVLANTCI, "vlan_tci", nxmHeader(classNXM0, 4, 2), 0, true, true, preNone, func(f *Flow) *uint16 { return &f.VLANTCI })
	addField(&Field{ID: FieldVLANVID, Name: "vlan_vid", Len: 2, Maskable: true, OXM: nxmHeader(classOXM, 6, 2), Writable: true,
		get: func(f *Flow, b []byte) { binary.BigEndian.PutUint16(b, f.VLANTCI&0x1fff) },
		set: func(f *Flow, b []byte) { f.VLANTCI = f.VLANTCI&^0x1fff | binary.BigEndian.Uint16(b)&0x1fff }})
	addField(&Field{ID: FieldVLANPCP, Name: "vlan_pcp", Len: 1, OXM: nxmHeader(classOXM, 7, 1), Writable: true, pre: preVLAN,
		get: func(f *Flow, b []byte) { b[0] = uint8(f.VLANTCI >> 13) },
		set: func(f *Flow, b []byte) { f.VLANTCI = f.VLANTCI&^flow.VLANPCPMask | uint16(b[0]&7)<<13 }})
	addField(&Field{ID: FieldIPDSCP, Name: "ip_dscp", Len: 1, OXM: nxmHeader(classOXM, 8, 1), Writable: true, pre: preIP,
		get: func(f *Flow, b []byte) { b[0] = f.NwTOS >> 2 },
		set: func(f *Flow, b []byte) { f.NwTOS = f.NwTOS&3 | b[0]<<2 }})
	addField(&Field{ID: FieldIPTOS, Name: "nw_tos", Len: 1, NXM: nxmHeader(classNXM0, 5, 1), Writable: true, pre: preIP,
		get: func(f *Flow, b []byte) { b[0] = f.NwTOS & 0xfc },
		set: func(f *Flow, b []byte) { f.NwTOS = f.NwTOS&3 | b[0]&0xfc }})
	addField(&Field{ID: FieldIPECN, Name: "ip_ecn", Len: 1, NXM: nxmHeader(classNXM1, 28, 1), OXM: nxmHeader(classOXM, 9, 1), Writable: true, pre: preIP,
		get: func(f *Flow, b []byte) { b[0] = f.NwTOS & 3 },
		set: func(f *Flow, b []byte) { f.NwTOS = f.NwTOS&0xfc | b[0]&3 }})
	u8Field(FieldIPProto, "ip_proto", nxmHeader(classNXM0, 6, 1), nxmHeader(classOXM, 10, 1), false, false, preIP, func(f *Flow) *uint8 { return &f.NwProto })
	u8Field(FieldIPTTL, "nw_ttl", nxmHeader(classNXM1, 29, 1), 0, false, true, preIP, func(f *Flow) *uint8 { return &f.NwTTL })
	u8Field(FieldIPFrag, "ip_frag", nxmHeader(classNXM1, 26, 1), 0, true, false, preIP, func(f *Flow) *uint8 { return &f.NwFrag })
	bytesField(FieldIPv4Src, "ip_src", 4, nxmHeader(classNXM0, 7, 4), nxmHeader(classOXM, 11, 4), true, true, preIPv4, func(f *Flow) []byte { return f.IPv4Src[:] })
	bytesField(FieldIPv4Dst, "ip_dst", 4, nxmHeader(classNXM0, 8, 4), nxmHeader(classOXM, 12, 4), true, true, preIPv4, func(f *Flow) []byte { return f.IPv4Dst[:] })
	u16Field(FieldTCPSrc, "tcp_src", nxmHeader(classNXM0, 9, 2), nxmHeader(classOXM, 13, 2), true, true, preTCP, func(f *Flow) *uint16 { return &f.TpSrc })
	u16Field(FieldTCPDst, "tcp_dst", nxmHeader(classNXM0, 10, 2), nxmHeader(classOXM, 14, 2), true, true, preTCP, func(f *Flow) *uint16 { return &f.TpDst })
	u16Field(FieldUDPSrc, "udp_src", nxmHeader(classNXM0, 11, 2), nxmHeader(classOXM, 15, 2), true, true, preUDP, func(f *Flow) *uint16 { return &f.TpSrc })
	u16Field(FieldUDPDst, "udp_dst", nxmHeader(classNXM0, 12, 2), nxmHeader(classOXM, 16, 2), true, true, preUDP, func(f *Flow) *uint16 { return &f.TpDst })
	u16Field(FieldSCTPSrc, "sctp_src", 0, nxmHeader(classOXM, 17, 2), true, true, preSCTP, func(f *Flow) *uint16 { return &f.TpSrc })
	u16Field(FieldSCTPDst, "sctp_dst", 0, nxmHeader(classOXM, 18, 2), true, true, preSCTP, func(f *Flow) *uint16 { return &f.TpDst })
	addField(&Field{ID: FieldICMPType, Name: "icmp_type", Len: 1, NXM: nxmHeader(classNXM0, 13, 1), OXM: nxmHeader(classOXM, 19, 1), pre: preICMPv4, Writable: true,
		get: func(f *Flow, b []byte) { b[0] = uint8(f.TpSrc) }, set: func(f *Flow, b []byte) { f.TpSrc = uint16(b[0]) }})
	addField(&Field{ID: FieldICMPCode, Name: "icmp_code", Len: 1, NXM: nxmHeader(classNXM0, 14, 1), OXM: nxmHeader(classOXM, 20, 1), pre: preICMPv4, Writable: true,
		get: func(f *Flow, b []byte) { b[0] = uint8(f.TpDst) }, set: func(f *Flow, b []byte) { f.TpDst = uint16(b[0]) }})
	addField(&Field{ID: FieldARPOp, Name: "arp_op", Len: 2, NXM: nxmHeader(classNXM0, 15, 2), OXM: nxmHeader(classOXM, 21, 2), pre: preARP, Writable: true,
		get: func(f *Flow, b []byte) { binary.BigEndian.PutUint16(b, uint16(f.NwProto)) },
		set: func(f *Flow, b []byte) { f.NwProto = uint8(binary.BigEndian.Uint16(b)) }})
	bytesField(FieldARPSPA, "arp_spa", 4, nxmHeader(classNXM0, 16, 4), nxmHeader(classOXM, 22, 4), true, true, preARP, func(f *Flow) []byte { return f.IPv4Src[:] })
	bytesField(FieldARPTPA, "arp_tpa", 4, nxmHeader(classNXM0, 17, 4), nxmHeader(classOXM, 23, 4), true, true, preARP, func(f *Flow) []byte { return f.IPv4Dst[:] })
	bytesField(FieldARPSHA, "arp_sha", 6, nxmHeader(classNXM1, 17, 6), nxmHeader(classOXM, 24, 6), true, true, preARP, func(f *Flow) []byte { return f.ArpSHA[:] })
	bytesField(FieldARPTHA, "arp_tha", 6, nxmHeader(classNXM1, 18, 6), nxmHeader(classOXM, 25, 6), true, true, preARP, func(f *Flow) []byte { return f.ArpTHA[:] })
	bytesField(FieldIPv6Src, "ipv6_src", 16, nxmHeader(classNXM1, 19, 16), nxmHeader(classOXM, 26, 16), true, true, preIPv6, func(f *Flow) []byte { return f.IPv6Src[:] })
	bytesField(FieldIPv6Dst, "ipv6_dst", 16, nxmHeader(classNXM1, 20, 16), nxmHeader(classOXM, 27, 16), true, true, preIPv6, func(f *Flow) []byte { return f.IPv6Dst[:] })
	u32Field(FieldIPv6Label, "ipv6_label", nxmHeader(classNXM1, 27, 4), nxmHeader(classOXM, 28, 4), true, true, preIPv6, func(f *Flow) *uint32 { return &f.IPv6Label })
	addField(&Field{ID: FieldICMPv6Type, Name: "icmpv6_type", Len: 1, NXM: nxmHeader(classNXM1, 21, 1), OXM: nxmHeader(classOXM, 29, 1), pre: preICMPv6, Writable: true,
		get: func(f *Flow, b []byte) { b[0] = uint8(f.TpSrc) }, set: func(f *Flow, b []byte) { f.TpSrc = uint16(b[0]) }})
	addField(&Field{ID: FieldICMPv6Code, Name: "icmpv6_code", Len: 1, NXM: nxmHeader(classNXM1, 22, 1), OXM: nxmHeader(classOXM, 30, 1), pre: preICMPv6, Writable: true,
		get: func(f *Flow, b []byte) { b[0] = uint8(f.TpDst) }, set: func(f *Flow, b []byte) { f.TpDst = uint16(b[0]) }})
	bytesField(FieldNDTarget, "nd_target", 16, nxmHeader(classNXM1, 23, 16), nxmHeader(classOXM, 31, 16), true, true, preND, func(f *Flow) []byte { return f.NdTarget[:] })
	bytesField(FieldNDSLL, "nd_sll", 6, nxmHeader(classNXM1, 24, 6), nxmHeader(classOXM, 32, 6), true, true, preNDSolicit, func(f *Flow) []byte { return f.ArpSHA[:] })
	bytesField(FieldNDTLL, "nd_tll", 6, nxmHeader(classNXM1, 25, 6), nxmHeader(classOXM, 33, 6), true, true, preNDAdvert, func(f *Flow) []byte { return f.ArpTHA[:] })
	u32Field(FieldNDReserved, "nd_reserved", 0, nxmHeader(classEricsson, 1, 4), false, true, preND, func(f *Flow) *uint32 { return &f.NdReserved })
	u8Field(FieldNDOptionsType, "nd_options_type", 0, nxmHeader(classEricsson, 2, 1), false, true, preND, func(f *Flow) *uint8 { return &f.NdOptionsType })
	u16Field(FieldTCPFlags, "tcp_flags", nxmHeader(classNXM1, 34, 2), 0, true, false, preTCP, func(f *Flow) *uint16 { return &f.TCPFlags })
	// OpenFlow 1.5's OXM_OF_TCP_FLAGS names it too (matches still carry
	// the NXM header, which every version's decoders take).
	byHeader[nxmHeader(classOXM, oxmTCPFlags, 2)] = fields[FieldTCPFlags]
	addField(&Field{ID: FieldMetadata, Name: "metadata", Len: 8, Maskable: true, OXM: nxmHeader(classOXM, 2, 8), Writable: true,
		get: func(f *Flow, b []byte) { binary.BigEndian.PutUint64(b, f.Metadata) },
		set: func(f *Flow, b []byte) { f.Metadata = binary.BigEndian.Uint64(b) }})
	addField(&Field{ID: FieldTunID, Name: "tun_id", Len: 8, Maskable: true, NXM: nxmHeader(classNXM1, 16, 8), OXM: nxmHeader(classOXM, 38, 8), Writable: true,
		get: func(f *Flow, b []byte) { binary.BigEndian.PutUint64(b, f.TunID) },
		set: func(f *Flow, b []byte) { f.TunID = binary.BigEndian.Uint64(b) }})
	// The key keeps a tunnel's outer addresses in 16 bytes, an IPv4
	// one v4-mapped. As OVS's flow_tnl, tun_src and tun_dst are the IPv4
	// ones (0 for an IPv6 tunnel), tun_ipv6_src and tun_ipv6_dst the IPv6
	// ones (:: for an IPv4 tunnel). A mask of tun_src or tun_dst covers
	// the v4-mapped prefix too (SetMask), so that a match on an IPv4
	// address never matches an IPv6 one ending in the same 4 bytes.
	addField(&Field{ID: FieldTunSrc, Name: "tun_src", Len: 4, Maskable: true, NXM: nxmHeader(classNXM1, 31, 4), Writable: true,
		get: func(f *Flow, b []byte) { getTunAddr4(&f.TunSrc, b) },
		set: func(f *Flow, b []byte) { setTunAddr(&f.TunSrc, b) }})
	addField(&Field{ID: FieldTunDst, Name: "tun_dst", Len: 4, Maskable: true, NXM: nxmHeader(classNXM1, 32, 4), Writable: true,
		get: func(f *Flow, b []byte) { getTunAddr4(&f.TunDst, b) },
		set: func(f *Flow, b []byte) { setTunAddr(&f.TunDst, b) }})
	//
	// A write of some of tun_ipv6_src's bits starts from the key's
	// address as it is: OVS's encoding of a set_field in OpenFlow 1.0 is
	// two loads, [0..63] then [64..127], and the first may leave a
	// v4-mapped address (fd31::ffff:ac1f:2's low half), which get reads
	// as ::.
	addField(&Field{ID: FieldTunIPv6Src, Name: "tun_ipv6_src", Len: 16, Maskable: true, NXM: nxmHeader(classNXM1, 109, 16), Writable: true,
		get: func(f *Flow, b []byte) { getTunAddr6(&f.TunSrc, b) },
		set: func(f *Flow, b []byte) { copy(f.TunSrc[:], b) },
		cur: func(f *Flow, b []byte) { copy(b, f.TunSrc[:]) }})
	addField(&Field{ID: FieldTunIPv6Dst, Name: "tun_ipv6_dst", Len: 16, Maskable: true, NXM: nxmHeader(classNXM1, 110, 16), Writable: true,
		get: func(f *Flow, b []byte) { getTunAddr6(&f.TunDst, b) },
		set: func(f *Flow, b []byte) { copy(f.TunDst[:], b) },
		cur: func(f *Flow, b []byte) { copy(b, f.TunDst[:]) }})
	// tun_flags shows OpenFlow only the OAM flag (OVS's
	// FLOW_TNL_PUB_F_OAM, bit 0), Geneve's O bit; set_field and load
	// write it (the O bit of a Geneve header pushed after).
	addField(&Field{ID: FieldTunFlags, Name: "tun_flags", Len: 2, Maskable: true, NXM: nxmHeader(classNXM1, 104, 2), Writable: true,
		get: func(f *Flow, b []byte) {
			b[0], b[1] = 0, 0
			if f.TunFlags&flow.TunFlagOAM != 0 {
				b[1] = 1
			}
		},
		set: func(f *Flow, b []byte) {
			f.TunFlags &^= flow.TunFlagOAM
			if b[1]&1 != 0 {
				f.TunFlags |= flow.TunFlagOAM
			}
		}})
	// VXLAN's Group Based Policy ID and flags (NXM_NX_TUN_GBP_ID,
	// NXM_NX_TUN_GBP_FLAGS): a tunnel with options:exts=gbp receives
	// and sends them.
	u16Field(FieldTunGBPID, "tun_gbp_id", nxmHeader(classNXM1, 38, 2), 0, true, true, preNone, func(f *Flow) *uint16 { return &f.TunGBPID })
	u8Field(FieldTunGBPFlags, "tun_gbp_flags", nxmHeader(classNXM1, 39, 1), 0, true, true, preNone, func(f *Flow) *uint8 { return &f.TunGBPFlags })
	u32Field(FieldPktMark, "pkt_mark", nxmHeader(classNXM1, 33, 4), 0, true, true, preNone, func(f *Flow) *uint32 { return &f.PktMark })
	// dp_hash and recirc_id are readable, never writable; a flow mod
	// may match them only at their defaults (checked by the switch).
	u32Field(FieldDpHash, "dp_hash", nxmHeader(classNXM1, 35, 4), 0, true, false, preNone, func(f *Flow) *uint32 { return &f.DpHash })
	u32Field(FieldRecircID, "recirc_id", nxmHeader(classNXM1, 36, 4), 0, false, false, preNone, func(f *Flow) *uint32 { return &f.RecircID })
	u32Field(FieldConjID, "conj_id", nxmHeader(classNXM1, 37, 4), 0, false, false, preNone, func(f *Flow) *uint32 { return &f.ConjID })
	// ct_state is 32 bits on the wire; the key keeps the 8 defined ones
	// (checkValue refuses the others).
	addField(&Field{ID: FieldCtState, Name: "ct_state", Len: 4, Maskable: true, NXM: nxmHeader(classNXM1, 105, 4),
		get: func(f *Flow, b []byte) { binary.BigEndian.PutUint32(b, uint32(f.CtState)) },
		set: func(f *Flow, b []byte) { f.CtState = uint8(binary.BigEndian.Uint32(b)) }})
	u16Field(FieldCtZone, "ct_zone", nxmHeader(classNXM1, 106, 2), 0, false, false, preNone, func(f *Flow) *uint16 { return &f.CtZone })
	u32Field(FieldCtMark, "ct_mark", nxmHeader(classNXM1, 107, 4), 0, true, true, preNone, func(f *Flow) *uint32 { return &f.CtMark })
	bytesField(FieldCtLabel, "ct_label", 16, nxmHeader(classNXM1, 108, 16), 0, true, true, preNone, func(f *Flow) []byte { return f.CtLabel[:] })
	u8Field(FieldCtNwProto, "ct_nw_proto", nxmHeader(classNXM1, 119, 1), 0, false, false, preCT, func(f *Flow) *uint8 { return &f.CtNwProto })
	bytesField(FieldCtNwSrc, "ct_nw_src", 4, nxmHeader(classNXM1, 120, 4), 0, true, false, preCT, func(f *Flow) []byte { return f.CtNwSrc[:4] })
	bytesField(FieldCtNwDst, "ct_nw_dst", 4, nxmHeader(classNXM1, 121, 4), 0, true, false, preCT, func(f *Flow) []byte { return f.CtNwDst[:4] })
	bytesField(FieldCtIPv6Src, "ct_ipv6_src", 16, nxmHeader(classNXM1, 122, 16), 0, true, false, preCT, func(f *Flow) []byte { return f.CtNwSrc[:] })
	bytesField(FieldCtIPv6Dst, "ct_ipv6_dst", 16, nxmHeader(classNXM1, 123, 16), 0, true, false, preCT, func(f *Flow) []byte { return f.CtNwDst[:] })
	u16Field(FieldCtTpSrc, "ct_tp_src", nxmHeader(classNXM1, 124, 2), 0, true, false, preCT, func(f *Flow) *uint16 { return &f.CtTpSrc })
	u16Field(FieldCtTpDst, "ct_tp_dst", nxmHeader(classNXM1, 125, 2), 0, true, false, preCT, func(f *Flow) *uint16 { return &f.CtTpDst })
	for id, full := range map[FieldID][]byte{FieldIPTOS: {0xfc}, FieldIPECN: {3}, FieldIPDSCP: {0x3f}, FieldVLANVID: {0x1f, 0xff},
		FieldVLANPCP: {7}, FieldARPOp: {0, 0xff}, FieldIPv6Label: {0, 0x0f, 0xff, 0xff}, FieldTCPFlags: {0x0f, 0xff}, FieldIPFrag: {3}} {
		fields[id].full = full
	}
	for i := 0; i < 16; i++ {
		i := i
		u32Field(FieldReg0+FieldID(i), "reg"+itoa(i), nxmHeader(classNXM1, uint8(i), 4), 0, true, true, preNone, func(f *Flow) *uint32 { return &f.Regs[i] })
	}
	for i := 0; i < 8; i++ {
		i := i
		addField(&Field{ID: FieldXReg0 + FieldID(i), Name: "xreg" + itoa(i), Len: 8, Maskable: true, OXM: nxmHeader(classPktReg, uint8(i), 8), Writable: true,
			get: func(f *Flow, b []byte) {
				binary.BigEndian.PutUint32(b, f.Regs[2*i])
				binary.BigEndian.PutUint32(b[4:], f.Regs[2*i+1])
			},
			set: func(f *Flow, b []byte) {
				f.Regs[2*i] = binary.BigEndian.Uint32(b)
				f.Regs[2*i+1] = binary.BigEndian.Uint32(b[4:])
			}})
	}
	// xxreg<n> is reg<4n>..reg<4n+3>, most significant first; NXM only
	// (NXM_NX_XXREG<n>, OVS 2.6), as ovn-controller writes it.
	for i := 0; i < 4; i++ {
		i := i
		addField(&Field{ID: FieldXXReg0 + FieldID(i), Name: "xxreg" + itoa(i), Len: 16, Maskable: true, NXM: nxmHeader(classNXM1, uint8(111+i), 16), Writable: true,
			get: func(f *Flow, b []byte) {
				for j := 0; j < 4; j++ {
					binary.BigEndian.PutUint32(b[4*j:], f.Regs[4*i+j])
				}
			},
			set: func(f *Flow, b []byte) {
				for j := 0; j < 4; j++ {
					f.Regs[4*i+j] = binary.BigEndian.Uint32(b[4*j:])
				}
			}})
	}
}

// TunAddrV4 reports whether a, a tunnel address or its mask, is an IPv4
// one: v4-mapped, or a tun_src/tun_dst mask (ones over the v4-mapped
// prefix, SetMask). An IPv6 address of that form is none a tunnel has.
func TunAddrV4(a *[16]byte) bool {
	if a[10] != 0xff || a[11] != 0xff || a[0] != 0 && a[0] != 0xff {
		return false
	}
	for _, c := range a[1:10] {
		if c != a[0] {
			return false
		}
	}
	return true
}

// isV4Mapped reports whether a is a v4-mapped address (::ffff:a.b.c.d).
func isV4Mapped(a *[16]byte) bool {
	return *(*[12]byte)(a[:12]) == [12]byte{10: 0xff, 11: 0xff}
}

// getTunAddr4 reads tun_src or tun_dst: the IPv4 address a holds, 0 if
// it holds an IPv6 one.
func getTunAddr4(a *[16]byte, b []byte) {
	if TunAddrV4(a) {
		copy(b, a[12:16])
	} else {
		clear(b[:4])
	}
}

// getTunAddr6 reads tun_ipv6_src or tun_ipv6_dst: the IPv6 address a
// holds, :: if it holds an IPv4 one.
func getTunAddr6(a *[16]byte, b []byte) {
	if isV4Mapped(a) {
		clear(b[:16])
	} else {
		copy(b, a[:])
	}
}

// Mask-only bits of a mask's TunFlags (flow.TunFlagsMaskOnly): which of
// tun_src, tun_dst, tun_ipv6_src, tun_ipv6_dst a match has or a
// translation consulted, OVS's separate masks of flow_tnl's ip_src,
// ip_dst, ipv6_src and ipv6_dst, which the key's one address per
// direction cannot tell apart. A key never has them, so they change no
// match; formats (TunAddrSplit) read them.
const (
	TunMaskSrc4 = 1 << 12
	TunMaskDst4 = 1 << 13
	TunMaskSrc6 = 1 << 14
	TunMaskDst6 = 1 << 15
)

// TunAddrSplit splits a tunnel address's value v and mask m, as a match
// or a megaflow holds them, into the tun_src (or tun_dst) and the
// tun_ipv6_src (or tun_ipv6_dst) OVS would show. is4 and is6 are the
// mask's TunMaskSrc4 and TunMaskSrc6 bits (or the Dst ones): each field
// the mask says was consulted, with the value of its version (0 or ::
// for the other's). A mask without them (a packet-in's metadata) gives
// an IPv4 value to the former and an IPv6 one to the latter, 0 to the
// former if m has IPv4 bits. A zero mask is neither.
//
// One address for both versions has two limits: a tun_ipv6_src match
// that a v4-mapped address meets (::/16, ::102:304/::ffff:ffff) also
// matches an IPv4 tunnel's address that does, and
// tun_src=0 (or tun_ipv6_src=::) does not match the other version's
// tunnels as OVS's does.
func TunAddrSplit(v, m [16]byte, is4, is6 bool) (v4, m4 [4]byte, v6, m6 [16]byte) {
	if m == [16]byte{} {
		return
	}
	if !is4 && !is6 {
		is4 = isV4Mapped(&v) || v == [16]byte{} && [4]byte(m[12:]) != [4]byte{}
		is6 = !is4
	}
	if is4 {
		m4 = [4]byte(m[12:])
		if isV4Mapped(&v) {
			v4 = [4]byte(v[12:])
		}
	}
	if is6 {
		m6 = m
		if !isV4Mapped(&v) {
			v6 = v
		}
	}
	return
}

// SetMask sets to one in mask the bits m of the field (a match's mask,
// or the bits a translation consulted). For tun_src and tun_dst it also
// covers the v4-mapped prefix, which tells IPv4 from IPv6 tunnels; for
// them and tun_ipv6_src, tun_ipv6_dst it sets the field's TunMask bit.
func (fd *Field) SetMask(mask *Flow, m []byte) {
	fd.SetMasked(mask, m, m)
	var a *[16]byte
	var bit uint16
	switch fd.ID {
	case FieldTunSrc:
		a, bit = &mask.TunSrc, TunMaskSrc4
	case FieldTunDst:
		a, bit = &mask.TunDst, TunMaskDst4
	case FieldTunIPv6Src:
		bit = TunMaskSrc6
	case FieldTunIPv6Dst:
		bit = TunMaskDst6
	default:
		return
	}
	if allZero(m) {
		return
	}
	mask.TunFlags |= bit
	if a != nil {
		for i := range 12 {
			a[i] = 0xff
		}
	}
}

// setTunAddr sets a v4-mapped tunnel address from 4 bytes; all zero
// clears it (no tunnel).
func setTunAddr(a *[16]byte, b []byte) {
	if b[0]|b[1]|b[2]|b[3] == 0 {
		*a = [16]byte{}
		return
	}
	*a = [16]byte{10: 0xff, 11: 0xff}
	copy(a[12:], b)
}

func itoa(i int) string { return strconv.Itoa(i) }

// FieldByID returns the field id, nil if unknown.
func FieldByID(id FieldID) *Field {
	if int(id) < len(fields) {
		return fields[id]
	}
	return nil
}

// FieldByHeader returns the field an NXM/OXM header (mask bit clear)
// names, nil if none.
func FieldByHeader(h uint32) *Field { return byHeader[h&^0x100] }

// Get returns the field's value in f, big-endian.
func (fd *Field) Get(f *Flow) []byte {
	b := make([]byte, fd.Len)
	fd.get(f, b)
	return b
}

// getCur reads the field in f for a write of some of its bits.
func (fd *Field) getCur(f *Flow, b []byte) {
	if fd.cur != nil {
		fd.cur(f, b)
	} else {
		fd.get(f, b)
	}
}

// Set sets the field's value in f from big-endian b.
func (fd *Field) Set(f *Flow, b []byte) { fd.set(f, b) }

// SetMasked sets the bits of the field under mask to value's.
func (fd *Field) SetMasked(f *Flow, value, mask []byte) {
	var cur []byte
	if fd.Len <= scratchLen {
		// A translation's set_field and load actions come here, a
		// pipeline's dozens of them per packet: no garbage for each.
		b := scratch.Get().(*[scratchLen]byte)
		defer scratch.Put(b)
		cur = b[:fd.Len]
		fd.getCur(f, cur)
	} else {
		cur = make([]byte, fd.Len)
		fd.getCur(f, cur)
	}
	for i := range cur {
		cur[i] = cur[i]&^mask[i] | value[i]&mask[i]
	}
	fd.set(f, cur)
}

// scratchLen is the length of SetMasked's scratch buffers, enough for
// every field but the longest tun_metadata ones.
const scratchLen = 64

var scratch = sync.Pool{New: func() any { return new([scratchLen]byte) }}

// header returns the field's header for an NXM (nx) or OXM match.
// Bits is the field's width as OVS's meta-flow gives it (mf_field.n_bits):
// the bits up to the highest one the field has, except vlan_vid (12, its
// OFPVID_PRESENT bit not counted) and arp_op (16, though only its low 8
// bits are kept). Loads and moves must stay within it.
func (fd *Field) Bits() int {
	switch fd.ID {
	case FieldVLANVID:
		return 12
	case FieldARPOp:
		return 16
	case FieldTunFlags:
		return 1 // OVS's tun_flags: the OAM flag alone
	}
	for i, c := range fd.full {
		if c != 0 {
			return (len(fd.full)-i-1)*8 + bits.Len8(c)
		}
	}
	return fd.Len * 8
}

func (fd *Field) header(nx bool) uint32 {
	if nx && fd.NXM != 0 || fd.OXM == 0 {
		return fd.NXM
	}
	return fd.OXM
}

// Prereqs reports whether m satisfies fd's prerequisites.
func (fd *Field) Prereqs(m *Match) bool { return prereqOK(fd.pre, m) }

func prereqOK(p prereq, m *Match) bool {
	typeIs := func(ts ...uint16) bool {
		if m.Mask.EthType != 0xffff {
			return false
		}
		for _, t := range ts {
			if m.Flow.EthType == t {
				return true
			}
		}
		return false
	}
	protoIs := func(p uint8) bool { return m.Mask.NwProto == 0xff && m.Flow.NwProto == p }
	switch p {
	case preVLAN:
		return m.Mask.VLANTCI&flow.VLANPresent != 0 && m.Flow.VLANTCI&flow.VLANPresent != 0
	case preARP:
		return typeIs(flow.EthTypeARP, flow.EthTypeRARP)
	case preIPv4:
		return typeIs(flow.EthTypeIPv4)
	case preIPv6:
		return typeIs(flow.EthTypeIPv6)
	case preIP:
		return typeIs(flow.EthTypeIPv4, flow.EthTypeIPv6)
	case preTCP:
		return typeIs(flow.EthTypeIPv4, flow.EthTypeIPv6) && protoIs(flow.IPProtoTCP)
	case preUDP:
		return typeIs(flow.EthTypeIPv4, flow.EthTypeIPv6) && protoIs(flow.IPProtoUDP)
	case preSCTP:
		return typeIs(flow.EthTypeIPv4, flow.EthTypeIPv6) && protoIs(flow.IPProtoSCTP)
	case preICMPv4:
		return typeIs(flow.EthTypeIPv4) && protoIs(flow.IPProtoICMP)
	case preICMPv6:
		return typeIs(flow.EthTypeIPv6) && protoIs(flow.IPProtoICMPv6)
	case preND, preNDSolicit, preNDAdvert:
		// OVS's is_nd on the match's flow: the type's and code's values,
		// whatever their masks.
		want := []uint16{flow.ICMPv6NS, flow.ICMPv6NA}
		if p == preNDSolicit {
			want = want[:1]
		} else if p == preNDAdvert {
			want = want[1:]
		}
		return typeIs(flow.EthTypeIPv6) && protoIs(flow.IPProtoICMPv6) && m.Flow.TpDst == 0 && slices.Contains(want, m.Flow.TpSrc)
	case preCT:
		return ctValid(m)
	}
	return true
}

// Conntrack state bits (OVS's CS_*), as the key's CtState holds them.
const (
	CtNew     = 0x01
	CtEst     = 0x02
	CtRel     = 0x04
	CtRpl     = 0x08
	CtInv     = 0x10
	CtTrk     = 0x20
	CtSrcNAT  = 0x40
	CtDstNAT  = 0x80
	ctAnyConn = CtNew | CtEst | CtRel | CtRpl | CtSrcNAT | CtDstNAT
)

// CTValid says whether m matches only packets tracked into a
// connection, as a resubmit with "ct" requires (ctValid).
func (m *Match) CTValid() bool { return ctValid(m) }

// ctValid is OVS's is_ct_valid for a match: it requires a state that
// implies a connection, or +trk-inv.
func ctValid(m *Match) bool {
	s, mk := m.Flow.CtState, m.Mask.CtState
	return s&mk&ctAnyConn != 0 || s&mk&CtTrk != 0 && mk&CtInv != 0 && s&CtInv == 0
}

// fieldSet reports, for each field, whether a match constrains any bit
// of it (the mask is nonzero).
func (fd *Field) inMask(m *Match) bool { return fd.inMaskBuf(m, nil) }

// inMaskBuf is inMask reading the mask into buf when it is long enough
// (CheckPrereqs asks of every field, once per flow mod decoded).
func (fd *Field) inMaskBuf(m *Match, buf []byte) bool {
	var b []byte
	if fd.Len <= len(buf) {
		b = buf[:fd.Len]
		clear(b)
		fd.get(&m.Mask, b)
	} else {
		b = fd.Get(&m.Mask)
	}
	for _, c := range b {
		if c != 0 {
			return true
		}
	}
	return false
}

// CheckPrereqs checks every constrained field's prerequisites, as OVS's
// match validation: OFPBMC_BAD_PREREQ otherwise.
//
// Fields that share storage (nw_proto and arp_op, the transport ports and
// ICMP type and code, ...) are checked together: one of them must have
// its prerequisites.
func (m *Match) CheckPrereqs() *Error {
	buf := make([]byte, 128)
	for _, group := range aliases {
		fd := fields[group[0]]
		if !fd.inMaskBuf(m, buf) {
			continue
		}
		ok := false
		for _, id := range group {
			if prereqOK(fields[id].pre, m) {
				ok = true
				break
			}
		}
		if !ok {
			return &Error{Errno: BadPrereq, Detail: fd.Name + " without its prerequisites"}
		}
	}
	for _, fd := range prereqFields() {
		if fd.inMaskBuf(m, buf) && !prereqOK(fd.pre, m) {
			return &Error{Errno: BadPrereq, Detail: fd.Name + " without its prerequisites"}
		}
	}
	return nil
}

// prereqFields are the fields CheckPrereqs checks one by one: those with
// prerequisites, but for the aliased ones (checked by group) and
// vlan_pcp.
var prereqFields = sync.OnceValue(func() []*Field {
	var fds []*Field
	for _, fd := range fields {
		if fd != nil && fd.pre != preNone && !aliased[fd.ID] && fd.ID != FieldVLANPCP {
			fds = append(fds, fd)
		}
	}
	return fds
})

// aliases are the groups of fields stored in the same bits of a Flow.
var aliases = [][]FieldID{
	{FieldIPProto, FieldARPOp},
	{FieldIPv4Src, FieldARPSPA},
	{FieldIPv4Dst, FieldARPTPA},
	{FieldARPSHA, FieldNDSLL},
	{FieldARPTHA, FieldNDTLL},
	{FieldTCPSrc, FieldUDPSrc, FieldSCTPSrc, FieldICMPType, FieldICMPv6Type},
	{FieldTCPDst, FieldUDPDst, FieldSCTPDst, FieldICMPCode, FieldICMPv6Code},
	{FieldCtIPv6Src, FieldCtNwSrc},
	{FieldCtIPv6Dst, FieldCtNwDst},
}

var aliased = map[FieldID]bool{}

func init() {
	for _, g := range aliases {
		for _, id := range g {
			aliased[id] = true
		}
	}
}

// HiddenFieldsDefault reports whether m matches the fields only the
// switch's own flows may match at their defaults: recirc_id 0 or any,
// dp_hash any (OVS's match_has_default_hidden_fields; a controller's
// flow mod that adds a flow otherwise fails with OFPBRC_EPERM).
func (m *Match) HiddenFieldsDefault() bool {
	return m.Flow.RecircID == 0 && m.Mask.DpHash == 0
}

// IsAll reports whether m matches every packet.
func (m *Match) IsAll() bool { return m.Mask == Flow{} }

// Normalize clears the bits of Flow outside Mask.
func (m *Match) Normalize() {
	if m.Mask.HasTunMD() {
		m.Flow = m.Flow.masked(&m.Mask)
		return
	}
	// Most matches have no tun_metadata: masked's copy of the whole Flow
	// and its byte loop over 256 bytes of zeros are half of a flow mod's
	// checks.
	f := &m.Flow
	f.MaskHead(&m.Mask, f)
	f.TunMD, f.TunMDPresent, f.TunTab = [TLVOptionSpace]byte{}, 0, nil
}

func (f *Flow) masked(m *Flow) Flow {
	r := *f
	r.Key = f.Key.Masked((*flow.Mask)(&m.Key))
	for i := range r.Regs {
		r.Regs[i] &= m.Regs[i]
	}
	r.Metadata &= m.Metadata
	r.PktMark &= m.PktMark
	r.ConjID &= m.ConjID
	for i := range r.TunMD {
		r.TunMD[i] &= m.TunMD[i]
	}
	r.TunMDPresent &= m.TunMDPresent
	r.TunTab = nil
	return r
}

// Masked returns f with the bits outside m cleared.
func (f *Flow) Masked(m *Flow) Flow { return f.masked(m) }

// HasTunMD reports whether f, a mask, has tun_metadata bits.
func (f *Flow) HasTunMD() bool { return f.TunMDPresent != 0 || f.TunMD != [TLVOptionSpace]byte{} }

// MaskHead sets *r, which must have no tun_metadata, to f masked by m,
// which must have none (!m.HasTunMD()): Masked without tun_metadata's
// 256 bytes.
func (f *Flow) MaskHead(m *Flow, r *Flow) {
	r.Key = f.Key.Masked((*flow.Mask)(&m.Key))
	for i := range r.Regs {
		r.Regs[i] = f.Regs[i] & m.Regs[i]
	}
	r.Metadata = f.Metadata & m.Metadata
	r.PktMark = f.PktMark & m.PktMark
	r.ConjID = f.ConjID & m.ConjID
}

// OrHead is Or without tun_metadata, for an o that has none.
func (f *Flow) OrHead(o *Flow) {
	km := (*flow.Mask)(&f.Key)
	km.Or((*flow.Mask)(&o.Key))
	for i := range f.Regs {
		f.Regs[i] |= o.Regs[i]
	}
	f.Metadata |= o.Metadata
	f.PktMark |= o.PktMark
	f.ConjID |= o.ConjID
}

// Or adds o's bits to f (for masks).
func (f *Flow) Or(o *Flow) {
	f.OrHead(o)
	for i := range f.TunMD {
		f.TunMD[i] |= o.TunMD[i]
	}
	f.TunMDPresent |= o.TunMDPresent
}

// GetRef returns the bits of ref in f as an integer (up to 64 bits).
func GetRef(f *Flow, ref FieldRef) uint64 {
	return rangeValue(ref.Field.Get(f), ref.Ofs, ref.NBits)
}

// MarkRef sets ref's bits in the mask wc.
func MarkRef(wc *Flow, ref FieldRef) {
	_, mask := refValue(ref, 0)
	ref.Field.SetMask(wc, mask)
}

// Move copies the bits of src in f to dst (NXAST_REG_MOVE).
func Move(f *Flow, src, dst FieldRef) {
	sv := src.Field.Get(f)
	dv := make([]byte, dst.Field.Len)
	dst.Field.getCur(f, dv)
	n := len(sv)
	m := len(dv)
	for i := 0; i < src.NBits; i++ {
		sb, db := src.Ofs+i, dst.Ofs+i
		bit := sv[n-1-sb/8] >> (sb % 8) & 1
		dv[m-1-db/8] = dv[m-1-db/8]&^(1<<(db%8)) | bit<<(db%8)
	}
	dst.Field.Set(f, dv)
}

// StackEntry is one value on the translation's stack (push/pop): the
// pushed bits, right-aligned, big-endian.
type StackEntry [16]byte

// Push returns ref's bits in f as a stack entry (NXAST_STACK_PUSH).
func Push(f *Flow, ref FieldRef) StackEntry {
	var e StackEntry
	sv := ref.Field.Get(f)
	n := len(sv)
	for i := 0; i < ref.NBits; i++ {
		sb := ref.Ofs + i
		e[15-i/8] |= (sv[n-1-sb/8] >> (sb % 8) & 1) << (i % 8)
	}
	return e
}

// Pop writes e's low bits to ref in f (NXAST_STACK_POP), as OVS's
// nxm_execute_stack_pop whatever width was pushed.
func Pop(f *Flow, ref FieldRef, e StackEntry) {
	dv := make([]byte, ref.Field.Len)
	ref.Field.getCur(f, dv)
	m := len(dv)
	for i := 0; i < ref.NBits; i++ {
		db := ref.Ofs + i
		bit := e[15-i/8] >> (i % 8) & 1
		dv[m-1-db/8] = dv[m-1-db/8]&^(1<<(db%8)) | bit<<(db%8)
	}
	ref.Field.Set(f, dv)
}

// Includes reports whether every packet r matches, m matches too (r is at
// least as specific: OVS's loose match of flow mods and statistics).
func (m *Match) Includes(r *Match) bool {
	if r.Flow.Masked(&m.Mask) != m.Flow {
		return false
	}
	return r.Mask.Masked(&m.Mask) == m.Mask
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
