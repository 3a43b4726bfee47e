package ofp

import (
	"encoding/binary"
	"fmt"

	"github.com/govs/govs/datapath/flow"
)

// OpenFlow 1.1's standard match (struct ofp11_match, OFPMT_STANDARD):
// fixed fields, a wildcard bit for each of the exact ones and inverted
// masks (a bit set means "any") for the addresses and metadata.
const (
	matchTypeStandard = 0
	match11Len        = 88
)

// OpenFlow 1.1 wildcard bits (ofp11_flow_wildcards).
const (
	fw11InPort    = 1 << 0
	fw11DLVLAN    = 1 << 1
	fw11DLVLANPCP = 1 << 2
	fw11DLType    = 1 << 3
	fw11NWTOS     = 1 << 4
	fw11NWProto   = 1 << 5
	fw11TPSrc     = 1 << 6
	fw11TPDst     = 1 << 7
	fw11MPLSLabel = 1 << 8
	fw11MPLSTC    = 1 << 9
)

// OpenFlow 1.1's dl_vlan values for "any tag" and "no tag".
const (
	vid11Any  = 0xfffe
	vid11None = 0xffff
)

// decodeMatch11 decodes the match at the start of b of an OpenFlow 1.1+
// flow mod or flow statistics request, returning it and the bytes after
// it: a standard match (in any version, as OVS's
// ofputil_pull_ofp11_match) or an OXM match.
func decodeMatch11(v Version, b []byte) (Match, []byte, *Error) {
	if len(b) < 4 || binary.BigEndian.Uint16(b) != matchTypeStandard {
		return decodeOXMMatch(v, b)
	}
	if binary.BigEndian.Uint16(b[2:]) != match11Len || len(b) < match11Len {
		return Match{}, nil, &Error{Errno: BadMatchLen, Detail: "standard match length"}
	}
	m, err := decodeMatch11Std(b[:match11Len])
	return m, b[match11Len:], err
}

// decodeMatch11Std converts an ofp11_match to a Match as OVS's
// ofputil_match_from_ofp11_match: fields without their prerequisites are
// ignored, out-of-range values refused. govs has no MPLS fields: an MPLS
// label or TC the match constrains is refused (OFPBMC_BAD_FIELD).
func decodeMatch11Std(b []byte) (Match, *Error) {
	var m Match
	f, mk := &m.Flow, &m.Mask
	bad := func(e Errno, format string, args ...any) (Match, *Error) {
		return Match{}, &Error{Errno: e, Detail: fmt.Sprintf(format, args...)}
	}
	w := binary.BigEndian.Uint32(b[8:])
	if w&fw11InPort == 0 {
		p := binary.BigEndian.Uint32(b[4:])
		if p >= 0xff00 && p < PortMax {
			return bad(BadValue, "in_port %d outside 0 through 0xfeff and 0xffffff00 through 0xffffffff", p)
		}
		f.InPort, mk.InPort = p, ^uint32(0)
	}
	var srcMask, dstMask [6]byte
	for i := range 6 {
		srcMask[i], dstMask[i] = ^b[18+i], ^b[30+i]
	}
	if srcMask != ([6]byte{}) || dstMask != ([6]byte{}) {
		for i := range 6 {
			f.EthSrc[i], f.EthDst[i] = b[12+i]&srcMask[i], b[24+i]&dstMask[i]
		}
		mk.EthSrc, mk.EthDst = srcMask, dstMask
	}
	if w&fw11DLVLAN == 0 {
		switch vid := binary.BigEndian.Uint16(b[36:]); {
		case vid == vid11None:
			f.VLANTCI, mk.VLANTCI = 0, 0xffff
		case vid == vid11Any || vid <= flow.VLANVIDMask:
			f.VLANTCI, mk.VLANTCI = flow.VLANPresent, flow.VLANPresent
			if vid != vid11Any {
				f.VLANTCI |= vid
				mk.VLANTCI |= flow.VLANVIDMask
			}
			if w&fw11DLVLANPCP == 0 {
				pcp := b[38]
				if pcp > 7 {
					return bad(BadValue, "dl_vlan_pcp %d", pcp)
				}
				f.VLANTCI |= uint16(pcp) << 13
				mk.VLANTCI |= flow.VLANPCPMask
			}
		default:
			return bad(BadValue, "dl_vlan %d", vid)
		}
	}
	if w&fw11DLType == 0 {
		f.EthType, mk.EthType = binary.BigEndian.Uint16(b[40:]), 0xffff
		if f.EthType < flow.EthTypeMin {
			f.EthType = flow.EthTypeNone
		}
	}
	typed := mk.EthType == 0xffff
	ipv4 := typed && f.EthType == flow.EthTypeIPv4
	arp := typed && (f.EthType == flow.EthTypeARP || f.EthType == flow.EthTypeRARP)
	if ipv4 && w&fw11NWTOS == 0 {
		if tos := b[42]; tos&^0xfc != 0 {
			return bad(BadValue, "nw_tos 0x%02x", tos)
		}
		f.NwTOS, mk.NwTOS = b[42], 0xfc
	}
	if ipv4 || arp {
		if w&fw11NWProto == 0 {
			f.NwProto, mk.NwProto = b[43], 0xff
		}
		for i := range 4 {
			mk.IPv4Src[i], mk.IPv4Dst[i] = ^b[48+i], ^b[56+i]
			f.IPv4Src[i], f.IPv4Dst[i] = b[44+i]&mk.IPv4Src[i], b[52+i]&mk.IPv4Dst[i]
		}
	}
	if ipv4 && mk.NwProto == 0xff {
		src, dst := binary.BigEndian.Uint16(b[60:]), binary.BigEndian.Uint16(b[62:])
		switch f.NwProto {
		case flow.IPProtoICMP:
			if w&fw11TPSrc == 0 {
				if src > 0xff {
					return bad(BadField, "icmp_type %d", src)
				}
				f.TpSrc, mk.TpSrc = src, 0xff
			}
			if w&fw11TPDst == 0 {
				if dst > 0xff {
					return bad(BadField, "icmp_code %d", dst)
				}
				f.TpDst, mk.TpDst = dst, 0xff
			}
		case flow.IPProtoTCP, flow.IPProtoUDP, flow.IPProtoSCTP:
			if w&fw11TPSrc == 0 {
				f.TpSrc, mk.TpSrc = src, 0xffff
			}
			if w&fw11TPDst == 0 {
				f.TpDst, mk.TpDst = dst, 0xffff
			}
		}
	}
	if typed && (f.EthType == 0x8847 || f.EthType == 0x8848) && w&(fw11MPLSLabel|fw11MPLSTC) != fw11MPLSLabel|fw11MPLSTC {
		return bad(BadField, "MPLS fields are not supported")
	}
	mask := ^binary.BigEndian.Uint64(b[80:])
	f.Metadata, mk.Metadata = binary.BigEndian.Uint64(b[72:])&mask, mask
	return m, nil
}

// appendMatch11Std appends m as an ofp11_match (OVS's
// ofputil_match_to_ofp11_match): what the standard match cannot say is
// left out.
func appendMatch11Std(b []byte, m *Match) []byte {
	f, mk := &m.Flow, &m.Mask
	var w uint32
	start := len(b)
	b = put16(b, matchTypeStandard)
	b = put16(b, match11Len)
	if mk.InPort == 0 {
		w |= fw11InPort
		b = put32(b, 0)
	} else {
		b = put32(b, f.InPort)
	}
	b = put32(b, 0) // wildcards, set below
	inv := func(x []byte) []byte {
		for _, c := range x {
			b = append(b, ^c)
		}
		return b
	}
	b = append(b, f.EthSrc[:]...)
	b = inv(mk.EthSrc[:])
	b = append(b, f.EthDst[:]...)
	b = inv(mk.EthDst[:])
	var vid uint16
	var pcp uint8
	switch {
	case mk.VLANTCI == 0:
		w |= fw11DLVLAN | fw11DLVLANPCP
	case mk.VLANTCI&flow.VLANPresent != 0 && f.VLANTCI&flow.VLANPresent == 0:
		vid = vid11None
		w |= fw11DLVLANPCP
	default:
		vid = vid11Any
		if mk.VLANTCI&flow.VLANVIDMask != 0 {
			vid = f.VLANTCI & flow.VLANVIDMask
		}
		if mk.VLANTCI&flow.VLANPCPMask == 0 {
			w |= fw11DLVLANPCP
		} else {
			pcp = uint8(f.VLANTCI >> 13)
		}
	}
	b = put16(b, vid)
	b = put8(b, pcp)
	b = pad(b, 1)
	if mk.EthType == 0 {
		w |= fw11DLType
	}
	b = put16(b, f.EthType&mk.EthType)
	if mk.NwTOS&0xfc == 0 {
		w |= fw11NWTOS
	}
	b = put8(b, f.NwTOS&mk.NwTOS&0xfc)
	if mk.NwProto == 0 {
		w |= fw11NWProto
	}
	b = put8(b, f.NwProto&mk.NwProto)
	b = append(b, f.IPv4Src[:]...)
	b = inv(mk.IPv4Src[:])
	b = append(b, f.IPv4Dst[:]...)
	b = inv(mk.IPv4Dst[:])
	if mk.TpSrc == 0 {
		w |= fw11TPSrc
	}
	b = put16(b, f.TpSrc&mk.TpSrc)
	if mk.TpDst == 0 {
		w |= fw11TPDst
	}
	b = put16(b, f.TpDst&mk.TpDst)
	w |= fw11MPLSLabel | fw11MPLSTC
	b = pad(b, 8) // mpls_label, mpls_tc, pad
	b = put64(b, f.Metadata)
	b = put64(b, ^mk.Metadata)
	binary.BigEndian.PutUint32(b[start+8:], w)
	return b
}
