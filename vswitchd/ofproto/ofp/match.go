package ofp

import (
	"bytes"
	"encoding/binary"
	"strconv"

	"github.com/govs/govs/datapath/flow"
)

var ones = bytes.Repeat([]byte{0xff}, 16)

// DecodeNXMatch decodes a sequence of NXM/OXM entries (OVS's nx_pull_raw):
// every entry known, of the right length, maskable if masked, without
// value bits outside its mask, no field twice, prerequisites met.
func DecodeNXMatch(b []byte) (Match, *Error) {
	m, _, err := decodeNXMatch(b, false)
	return m, err
}

// Cookie is a cookie filter: the cookie under its mask.
type Cookie struct {
	Value, Mask uint64
}

// nxmCookie is NXM_NX_COOKIE, a flow's cookie as a field of the match in
// Nicira flow mods and statistics requests.
var nxmCookie = nxmHeader(classNXM1, 30, 8)

// decodeNXMatch is DecodeNXMatch, also taking NXM_NX_COOKIE if
// withCookie.
func decodeNXMatch(b []byte, withCookie bool) (Match, Cookie, *Error) {
	var m Match
	ck, err := decodeNXMatchInto(&m, b, withCookie)
	return m, ck, err
}

// fieldSet is a set of FieldIDs.
type fieldSet [4]uint64

func (s *fieldSet) has(id FieldID) bool { return s[id>>6]&(1<<(id&63)) != 0 }
func (s *fieldSet) add(id FieldID)      { s[id>>6] |= 1 << (id & 63) }

// decodeNXMatchInto is decodeNXMatch into *m, which must be zero: a
// Match is over a kilobyte (tun_metadata's space twice), and a flow mod's
// decoding fills its own in place rather than copying one up through
// every caller (the most of ovs-ofctl add-flows' cost in the switch).
func decodeNXMatchInto(m *Match, b []byte, withCookie bool) (Cookie, *Error) {
	var ck Cookie
	var seen fieldSet
	for len(b) > 0 {
		if len(b) < 4 {
			return ck, &Error{Errno: BadMatchLen, Detail: "truncated match field"}
		}
		h := binary.BigEndian.Uint32(b)
		n := int(b[3])
		hdr := 4
		if h>>16 == classExp {
			hdr = 8
		}
		if n < hdr-4 || hdr+n-(hdr-4) > len(b) {
			return ck, &Error{Errno: BadMatchLen, Detail: "match field overruns the match"}
		}
		var exp uint32
		if hdr == 8 {
			exp = binary.BigEndian.Uint32(b[4:])
		}
		payload := b[hdr : 4+n]
		b = b[4+n:]
		hasMask := h&0x100 != 0
		if withCookie && h&^0x1ff == nxmCookie&^0x1ff && (n == 8 && !hasMask || n == 16 && hasMask) {
			ck.Value, ck.Mask = binary.BigEndian.Uint64(payload), ^uint64(0)
			if hasMask {
				ck.Mask = binary.BigEndian.Uint64(payload[8:])
			}
			ck.Value &= ck.Mask
			continue
		}
		l := n - (hdr - 4)
		if hasMask {
			l /= 2
		}
		fd := FieldByHeader(h&^0xff | uint32(l))
		if hdr == 8 {
			fd = experimenterField(exp, h, l)
		}
		if idx := tunMetadataIndex(h); idx >= 0 && hdr == 4 {
			if l < 1 || l > TLVMaxOptLen || hasMask && n%2 != 0 {
				return ck, &Error{Errno: BadMatchLen, Detail: "tun_metadata" + strconv.Itoa(idx) + ": bad length"}
			}
			if seen.has(FieldTunMetadata0 + FieldID(idx)) {
				return ck, &Error{Errno: DupField, Detail: "tun_metadata" + strconv.Itoa(idx) + " twice"}
			}
			seen.add(FieldTunMetadata0 + FieldID(idx))
			e := TunMDEntry{Idx: idx, Value: bytes.Clone(payload[:l])}
			if hasMask {
				e.Mask = bytes.Clone(payload[l:])
				for i := range e.Value {
					if e.Value[i]&^e.Mask[i] != 0 {
						return ck, &Error{Errno: BadWildcards, Detail: "tun_metadata" + strconv.Itoa(idx) + ": value bits outside the mask"}
					}
				}
			}
			m.TunMD = append(m.TunMD, e)
			continue
		}
		if fd == nil {
			return ck, &Error{Errno: BadField, Detail: "unknown match field"}
		}
		if (hasMask && len(payload) != 2*fd.Len) || (!hasMask && len(payload) != fd.Len) {
			return ck, &Error{Errno: BadMatchLen, Detail: fd.Name + ": bad length"}
		}
		if hasMask && !fd.Maskable {
			return ck, &Error{Errno: BadMask, Detail: fd.Name + " is not maskable"}
		}
		if seen.has(fd.ID) {
			return ck, &Error{Errno: DupField, Detail: fd.Name + " twice"}
		}
		seen.add(fd.ID)
		value, mask := payload[:fd.Len], ones[:fd.Len]
		if hasMask {
			mask = payload[fd.Len:]
			for i := range value {
				if value[i]&^mask[i] != 0 {
					return ck, &Error{Errno: BadWildcards, Detail: fd.Name + ": value bits outside the mask"}
				}
			}
		}
		if err := checkValue(fd, value, mask); err != nil {
			return ck, err
		}
		if fd.ID == FieldVLANPCP && !prereqOK(preVLAN, m) {
			// vlan_pcp needs a vlan_vid with OFPVID_PRESENT before it.
			return ck, &Error{Errno: BadPrereq, Detail: "vlan_pcp without vlan_vid"}
		}
		fd.SetMasked(&m.Flow, value, mask)
		fd.SetMask(&m.Mask, mask)
		if fd.ID == FieldVLANPCP {
			m.Flow.VLANTCI |= flow.VLANPresent
			m.Mask.VLANTCI |= flow.VLANPresent
		}
	}
	if err := m.CheckPrereqs(); err != nil {
		return ck, err
	}
	// The original direction's addresses share storage between IP
	// versions: OVS refuses the other version's as an inconsistent match.
	v4 := m.Mask.EthType == 0xffff && m.Flow.EthType == flow.EthTypeIPv4
	v6 := m.Mask.EthType == 0xffff && m.Flow.EthType == flow.EthTypeIPv6
	if (seen.has(FieldCtNwSrc) || seen.has(FieldCtNwDst)) && !v4 || (seen.has(FieldCtIPv6Src) || seen.has(FieldCtIPv6Dst)) && !v6 {
		return ck, &Error{Errno: MatchInconsistent, Detail: "conntrack addresses of the other IP version"}
	}
	return ck, nil
}

// checkValue rejects values a field cannot hold (OFPBMC_BAD_VALUE).
func checkValue(fd *Field, value, mask []byte) *Error {
	bad := false
	switch fd.ID {
	case FieldVLANVID:
		bad = binary.BigEndian.Uint16(value)&^0x1fff != 0
	case FieldVLANPCP:
		bad = value[0] > 7
	case FieldIPDSCP:
		bad = value[0] > 63
	case FieldIPECN:
		bad = value[0] > 3
	case FieldIPFrag:
		bad = value[0]&^3 != 0
	case FieldIPv6Label:
		bad = binary.BigEndian.Uint32(value)&^0xfffff != 0
	case FieldTCPFlags:
		bad = binary.BigEndian.Uint16(value)&^0xfff != 0
	case FieldIPTOS:
		bad = value[0]&3 != 0
	case FieldCtState:
		// A state bit OVS's conntrack does not define (mf_is_value_valid);
		// mask bits beyond them are dropped, as OVS's u8 ct_state does.
		bad = binary.BigEndian.Uint32(value)&^0xff != 0
	}
	if bad {
		return &Error{Errno: BadValue, Detail: fd.Name + ": bad value"}
	}
	return nil
}

// AppendNXMatch appends m's entries as NXM (nx, for OpenFlow 1.0's
// Nicira messages) or OXM (OpenFlow 1.2+), in an order that puts every
// field after its prerequisites (as OVS's nx_put_raw).
func AppendNXMatch(b []byte, m *Match, nx bool) []byte {
	put := func(h uint32, n int, value, mask []byte) {
		exact := len(mask) >= n && allOnes(mask[:n])
		if fd := FieldByHeader(h); fd != nil && fd.full != nil && bytes.Equal(mask, fd.full) {
			exact, mask = true, ones
		}
		if !exact {
			h |= 0x100
			h = h&^0xff | uint32(2*n)
		}
		b = put32(b, h)
		for i := 0; i < n; i++ {
			b = append(b, value[i]&mask[i])
		}
		if !exact {
			b = append(b, mask[:n]...)
		}
	}
	field := func(id FieldID) {
		fd := fields[id]
		mask := fd.Get(&m.Mask)
		if bytes.Equal(mask, make([]byte, fd.Len)) {
			return
		}
		put(fd.header(nx), fd.Len, fd.Get(&m.Flow), mask)
	}
	k, mk := &m.Flow.Key, &m.Mask.Key
	// OVS's nx_put_raw: the metadata first.
	field(FieldDpHash)
	field(FieldRecircID)
	if mk.InPort != 0 {
		if nx {
			field(FieldInPort)
		} else {
			put(nxmHeader(classOXM, 0, 4), 4, binary.BigEndian.AppendUint32(nil, k.InPort), ones[:4])
		}
	}
	field(FieldEthDst)
	field(FieldEthSrc)
	field(FieldEthType)
	if nx {
		field(FieldVLANTCI)
	} else {
		if mk.VLANTCI&0x1fff != 0 {
			field(FieldVLANVID)
		}
		// OVS's nx_put_raw: vlan_pcp only with a VID or OFPVID_PRESENT
		// (its prerequisite); an untagged match is vlan_vid=0 alone.
		if mk.VLANTCI&flow.VLANPCPMask != 0 && k.VLANTCI&mk.VLANTCI&0x1fff != 0 {
			put(fields[FieldVLANPCP].OXM, 1, []byte{uint8(k.VLANTCI >> 13)}, ones)
		}
	}
	isARP := mk.EthType == 0xffff && (k.EthType == flow.EthTypeARP || k.EthType == flow.EthTypeRARP)
	isIP := mk.EthType == 0xffff && (k.EthType == flow.EthTypeIPv4 || k.EthType == flow.EthTypeIPv6)
	if isIP {
		if nx {
			field(FieldIPTOS)
		} else if mk.NwTOS&0xfc != 0 {
			put(fields[FieldIPDSCP].OXM, 1, []byte{k.NwTOS >> 2}, ones)
		}
		field(FieldIPECN)
		field(FieldIPTTL)
		field(FieldIPFrag)
		field(FieldIPProto)
		if k.EthType == flow.EthTypeIPv4 {
			field(FieldIPv4Src)
			field(FieldIPv4Dst)
		} else {
			field(FieldIPv6Src)
			field(FieldIPv6Dst)
			field(FieldIPv6Label)
		}
		if mk.NwProto == 0xff {
			switch {
			case k.NwProto == flow.IPProtoTCP:
				field(FieldTCPSrc)
				field(FieldTCPDst)
				field(FieldTCPFlags)
			case k.NwProto == flow.IPProtoUDP:
				field(FieldUDPSrc)
				field(FieldUDPDst)
			case k.NwProto == flow.IPProtoSCTP:
				field(FieldSCTPSrc)
				field(FieldSCTPDst)
			case k.NwProto == flow.IPProtoICMP && k.EthType == flow.EthTypeIPv4:
				field(FieldICMPType)
				field(FieldICMPCode)
			case k.NwProto == flow.IPProtoICMPv6 && k.EthType == flow.EthTypeIPv6:
				field(FieldICMPv6Type)
				field(FieldICMPv6Code)
				// OVS's nx_put_raw: the ND fields of a match on NS or NA.
				if k.TpDst == 0 && (k.TpSrc == flow.ICMPv6NS || k.TpSrc == flow.ICMPv6NA) {
					field(FieldNDReserved)
					field(FieldNDTarget)
					field(FieldNDOptionsType)
					if k.TpSrc == flow.ICMPv6NS {
						field(FieldNDSLL)
					} else {
						field(FieldNDTLL)
					}
				}
			}
		}
	}
	if isARP {
		field(FieldARPOp)
		field(FieldARPSPA)
		field(FieldARPTPA)
		field(FieldARPSHA)
		field(FieldARPTHA)
	}
	field(FieldTunID)
	field(FieldTunFlags)
	// tun_src, tun_dst, tun_ipv6_src, tun_ipv6_dst, as OVS's nx_put_raw:
	// the key's one address each is the IPv4 or the IPv6 field.
	s4, s4m, s6, s6m := TunAddrSplit(k.TunSrc, mk.TunSrc, mk.TunFlags&TunMaskSrc4 != 0, mk.TunFlags&TunMaskSrc6 != 0)
	d4, d4m, d6, d6m := TunAddrSplit(k.TunDst, mk.TunDst, mk.TunFlags&TunMaskDst4 != 0, mk.TunFlags&TunMaskDst6 != 0)
	for _, a := range []struct {
		id   FieldID
		v, m []byte
	}{{FieldTunSrc, s4[:], s4m[:]}, {FieldTunDst, d4[:], d4m[:]}, {FieldTunIPv6Src, s6[:], s6m[:]}, {FieldTunIPv6Dst, d6[:], d6m[:]}} {
		if fd := fields[a.id]; !allZero(a.m) {
			put(fd.header(nx), fd.Len, a.v, a.m)
		}
	}
	field(FieldTunGBPID)
	field(FieldTunGBPFlags)
	// OVS's tun_metadata_to_nx_match: by index, as long as the mapping.
	for _, e := range m.TunMD {
		mask := e.Mask
		if mask == nil {
			mask = bytes.Repeat([]byte{0xff}, len(e.Value))
		}
		put(TunMetadataField(e.Idx, len(e.Value)).NXM, len(e.Value), e.Value, mask)
	}
	field(FieldPktMark)
	field(FieldConjID)
	field(FieldCtState)
	field(FieldCtZone)
	field(FieldCtMark)
	field(FieldCtLabel)
	// OVS's nx_put_raw: the original direction's tuple, for the IP
	// version the match has; then the protocol and ports, only when the
	// protocol is not 0 (ct_nw_proto=0 is left out, as Debian's
	// ovs-ofctl parse-nx-match shows).
	if ctValid(m) {
		if isIP && k.EthType == flow.EthTypeIPv4 {
			field(FieldCtNwSrc)
			field(FieldCtNwDst)
		} else if isIP {
			field(FieldCtIPv6Src)
			field(FieldCtIPv6Dst)
		}
		if k.CtNwProto != 0 {
			field(FieldCtNwProto)
			field(FieldCtTpSrc)
			field(FieldCtTpDst)
		}
	}
	for i := FieldID(0); i < 16; i++ {
		field(FieldReg0 + i)
	}
	field(FieldMetadata)
	return b
}

// OpenFlow 1.0 wildcard bits (ofp10_flow_wildcards).
const (
	fw10InPort    = 1 << 0
	fw10DLVLAN    = 1 << 1
	fw10DLSrc     = 1 << 2
	fw10DLDst     = 1 << 3
	fw10DLType    = 1 << 4
	fw10NWProto   = 1 << 5
	fw10TPSrc     = 1 << 6
	fw10TPDst     = 1 << 7
	fw10NWSrcShft = 8
	fw10NWDstShft = 14
	fw10DLVLANPCP = 1 << 20
	fw10NWTOS     = 1 << 21
	fw10All       = 1<<22 - 1
)

func prefixMask(n uint32) uint32 {
	if n >= 32 {
		return 0
	}
	return ^uint32(0) << n
}

// decodeMatch10 converts an ofp10_match to a Match, as OVS's
// ofputil_match_from_ofp10_match (which ignores what the wildcards do
// not constrain and fields without their prerequisites).
func decodeMatch10(b []byte) Match {
	var m Match
	w := binary.BigEndian.Uint32(b)
	f, mk := &m.Flow, &m.Mask
	if w&fw10InPort == 0 {
		f.InPort, mk.InPort = widenPort10(binary.BigEndian.Uint16(b[4:])), ^uint32(0)
	}
	if w&fw10DLSrc == 0 {
		copy(f.EthSrc[:], b[6:12])
		mk.EthSrc = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	if w&fw10DLDst == 0 {
		copy(f.EthDst[:], b[12:18])
		mk.EthDst = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	vid := binary.BigEndian.Uint16(b[18:])
	pcp := b[20]
	if w&fw10DLVLAN == 0 {
		if vid == 0xffff {
			f.VLANTCI, mk.VLANTCI = 0, 0xffff
		} else {
			f.VLANTCI |= vid&flow.VLANVIDMask | flow.VLANPresent
			mk.VLANTCI |= flow.VLANVIDMask | flow.VLANPresent
		}
	}
	if w&fw10DLVLANPCP == 0 && !(w&fw10DLVLAN == 0 && vid == 0xffff) {
		f.VLANTCI |= uint16(pcp&7)<<13 | flow.VLANPresent
		mk.VLANTCI |= flow.VLANPCPMask | flow.VLANPresent
	}
	if w&fw10DLType == 0 {
		f.EthType, mk.EthType = binary.BigEndian.Uint16(b[22:]), 0xffff
		if f.EthType < flow.EthTypeMin {
			f.EthType = flow.EthTypeNone
		}
	}
	isIP := mk.EthType == 0xffff && f.EthType == flow.EthTypeIPv4
	isARP := mk.EthType == 0xffff && f.EthType == flow.EthTypeARP
	if isIP || isARP {
		if w&fw10NWProto == 0 {
			f.NwProto, mk.NwProto = b[25], 0xff
		}
		src := prefixMask((w >> fw10NWSrcShft) & 0x3f)
		dst := prefixMask((w >> fw10NWDstShft) & 0x3f)
		binary.BigEndian.PutUint32(mk.IPv4Src[:], src)
		binary.BigEndian.PutUint32(mk.IPv4Dst[:], dst)
		binary.BigEndian.PutUint32(f.IPv4Src[:], binary.BigEndian.Uint32(b[28:])&src)
		binary.BigEndian.PutUint32(f.IPv4Dst[:], binary.BigEndian.Uint32(b[32:])&dst)
	}
	if isIP {
		if w&fw10NWTOS == 0 {
			f.NwTOS, mk.NwTOS = b[24]&0xfc, 0xfc
		}
		if mk.NwProto == 0xff {
			switch f.NwProto {
			case flow.IPProtoTCP, flow.IPProtoUDP, flow.IPProtoSCTP, flow.IPProtoICMP:
				if w&fw10TPSrc == 0 {
					f.TpSrc, mk.TpSrc = binary.BigEndian.Uint16(b[36:]), 0xffff
				}
				if w&fw10TPDst == 0 {
					f.TpDst, mk.TpDst = binary.BigEndian.Uint16(b[38:]), 0xffff
				}
				if f.NwProto == flow.IPProtoICMP {
					f.TpSrc &= 0xff
					f.TpDst &= 0xff
					mk.TpSrc &= 0xff
					mk.TpDst &= 0xff
				}
			}
		}
	}
	return m
}

// Representable10 reports whether an ofp10_match can express m.
func (m *Match) Representable10() bool {
	r := appendMatch10(nil, m)
	back := decodeMatch10(r)
	return len(m.TunMD) == 0 && back.Flow == m.Flow && back.Mask == m.Mask
}

// appendMatch10 appends m as an ofp10_match (ofputil_match_to_ofp10_match).
func appendMatch10(b []byte, m *Match) []byte {
	f, mk := &m.Flow, &m.Mask
	w := uint32(fw10All)
	if mk.InPort != 0 {
		w &^= fw10InPort
	}
	if mk.EthSrc != [6]byte{} {
		w &^= fw10DLSrc
	}
	if mk.EthDst != [6]byte{} {
		w &^= fw10DLDst
	}
	vid := uint16(0)
	pcp := uint8(0)
	switch {
	case mk.VLANTCI == 0:
	case mk.VLANTCI == 0xffff && f.VLANTCI == 0:
		w &^= fw10DLVLAN
		vid = 0xffff
	default:
		if mk.VLANTCI&flow.VLANVIDMask != 0 {
			w &^= fw10DLVLAN
			vid = f.VLANTCI & flow.VLANVIDMask
		}
		if mk.VLANTCI&flow.VLANPCPMask != 0 {
			w &^= fw10DLVLANPCP
			pcp = uint8(f.VLANTCI >> 13)
		}
	}
	if mk.EthType != 0 {
		w &^= fw10DLType
	}
	if mk.NwProto != 0 {
		w &^= fw10NWProto
	}
	if mk.NwTOS&0xfc != 0 {
		w &^= fw10NWTOS
	}
	if mk.TpSrc != 0 {
		w &^= fw10TPSrc
	}
	if mk.TpDst != 0 {
		w &^= fw10TPDst
	}
	plen := func(a [4]byte) uint32 {
		v := binary.BigEndian.Uint32(a[:])
		n := uint32(0)
		for v != 0 && v&(1<<31) != 0 {
			v <<= 1
			n++
		}
		return 32 - n
	}
	w = w&^(0x3f<<fw10NWSrcShft|0x3f<<fw10NWDstShft) | plen(mk.IPv4Src)<<fw10NWSrcShft | plen(mk.IPv4Dst)<<fw10NWDstShft
	b = put32(b, w)
	b = put16(b, port10(f.InPort))
	b = append(b, f.EthSrc[:]...)
	b = append(b, f.EthDst[:]...)
	b = put16(b, vid)
	b = put8(b, pcp)
	b = pad(b, 1)
	b = put16(b, f.EthType)
	b = put8(b, f.NwTOS&0xfc)
	b = put8(b, f.NwProto)
	b = pad(b, 2)
	b = append(b, f.IPv4Src[:]...)
	b = append(b, f.IPv4Dst[:]...)
	b = put16(b, f.TpSrc)
	return put16(b, f.TpDst)
}

// decodeOXMMatch decodes a 1.2+ ofp_match (OXM) at the start of b,
// returning it and the bytes after its padding.
func decodeOXMMatch(v Version, b []byte) (Match, []byte, *Error) {
	var m Match
	rest, err := decodeOXMMatchInto(&m, v, b)
	return m, rest, err
}

// decodeOXMMatchInto is decodeOXMMatch into *m, which must be zero.
func decodeOXMMatchInto(m *Match, v Version, b []byte) ([]byte, *Error) {
	if len(b) < 4 {
		return nil, &Error{Errno: BadLen, Detail: "truncated match"}
	}
	typ, n := binary.BigEndian.Uint16(b), int(binary.BigEndian.Uint16(b[2:]))
	if typ != 1 || v < V12 {
		return nil, &Error{Errno: BadMatchType, Detail: "match type not supported"}
	}
	padded := (n + 7) &^ 7
	if n < 4 || padded > len(b) {
		return nil, &Error{Errno: BadMatchLen, Detail: "match length"}
	}
	_, err := decodeNXMatchInto(m, b[4:n], false)
	return b[padded:], err
}

// appendOXMMatch appends m as a 1.2+ ofp_match, padded to 8 bytes.
func appendOXMMatch(b []byte, m *Match) []byte {
	start := len(b)
	b = put16(b, 1)
	b = put16(b, 0)
	b = AppendNXMatch(b, m, false)
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
	return pad(b, (8-(len(b)-start)%8)%8)
}

// oxmTCPFlags is the field number of tcp_flags as OpenFlow 1.5's
// OXM_OF_TCP_FLAGS and as ONF's experimenter field of 1.3 and 1.4
// (ONFOXM_ET_TCP_FLAGS), which OVS's ovs-ofctl sends in those versions.
const oxmTCPFlags = 42

// experimenterField is the field an experimenter OXM header h (of
// experimenter exp, payload of l bytes, a mask's half when masked) names,
// nil for one govs does not know: ONF's tcp_flags only.
func experimenterField(exp, h uint32, l int) *Field {
	if exp == ONFVendor && (h>>9)&0x7f == oxmTCPFlags && l == 2 {
		return fields[FieldTCPFlags]
	}
	return nil
}
