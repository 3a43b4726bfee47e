package ofp

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/govs/govs/datapath/flow"
)

// The text form of an OpenFlow match as OVS 3.1's match_format
// (lib/match.c) prints it, for govs' ovs-ofctl.

// matchFormatter accumulates "name=value," items.
type matchFormatter struct {
	b strings.Builder
}

func (f *matchFormatter) put(format string, args ...any) {
	fmt.Fprintf(&f.b, format, args...)
	f.b.WriteByte(',')
}

func (f *matchFormatter) u32(name string, v, m uint32) {
	switch m {
	case 0:
	case ^uint32(0):
		f.put("%s=%s", name, hexC(uint64(v)))
	default:
		f.put("%s=%s/%s", name, hexC(uint64(v)), hexC(uint64(m)))
	}
}

func (f *matchFormatter) u64(name string, v, m uint64) {
	switch m {
	case 0:
	case ^uint64(0):
		f.put("%s=%s", name, hexC(v))
	default:
		f.put("%s=%s/%s", name, hexC(v), hexC(m))
	}
}

func (f *matchFormatter) u16(name string, v, m uint16) {
	switch m {
	case 0:
	case 0xffff:
		f.put("%s=%d", name, v)
	default:
		f.put("%s=0x%x/0x%x", name, v, m)
	}
}

func (f *matchFormatter) mac(name string, v, m [6]byte) {
	switch m {
	case [6]byte{}:
	case [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}:
		f.put("%s=%s", name, flow.MAC(v))
	default:
		f.put("%s=%s/%s", name, flow.MAC(v), flow.MAC(m))
	}
}

func (f *matchFormatter) ip4(name string, v, m [4]byte) {
	if m != [4]byte{} {
		f.put("%s=%s", name, ip4Masked(v, m))
	}
}

func (f *matchFormatter) ip6(name string, v, m [16]byte) {
	if m != [16]byte{} {
		f.put("%s=%s", name, ip6Masked(v, m))
	}
}

// CTStateNames are the ct_state bits, lowest first (ct_state_to_string).
var CTStateNames = [8]string{"new", "est", "rel", "rpl", "inv", "trk", "snat", "dnat"}

// TCPFlagNames are the TCP flags, lowest first (packet_tcp_flag_to_string).
var TCPFlagNames = [12]string{"fin", "syn", "rst", "psh", "ack", "urg", "ece", "cwr", "ns", "[200]", "[400]", "[800]"}

// FlagsMasked formats flags under mask as format_flags_masked: names
// joined by '|' (or "0") for a full mask, else "+name-name".
func FlagsMasked(names []string, v, m, full uint32) string {
	var b strings.Builder
	if m == full {
		for i := range names {
			if v&(1<<i) != 0 {
				if b.Len() > 0 {
					b.WriteByte('|')
				}
				b.WriteString(names[i])
			}
		}
		if b.Len() == 0 {
			return "0"
		}
		return b.String()
	}
	for i := range names {
		if m&(1<<i) != 0 {
			if v&(1<<i) != 0 {
				b.WriteByte('+')
			} else {
				b.WriteByte('-')
			}
			b.WriteString(names[i])
		}
	}
	return b.String()
}

// FormatMatch formats m as match_format, with priority unless it is the
// default (32768).
func FormatMatch(m *Match, priority int, pn PortNames) string {
	f := &matchFormatter{}
	k, mk := &m.Flow, &m.Mask
	if priority != 32768 {
		f.put("priority=%d", priority)
	}
	f.u32("pkt_mark", k.PktMark, mk.PktMark)
	if mk.RecircID != 0 {
		f.u32("recirc_id", k.RecircID, mk.RecircID)
	}
	f.u32("dp_hash", m.Flow.DpHash, m.Mask.DpHash)
	if mk.ConjID != 0 {
		f.put("conj_id=%d", k.ConjID)
	}
	if mk.CtState != 0 {
		f.put("ct_state=%s", FlagsMasked(CTStateNames[:], uint32(k.CtState), uint32(mk.CtState), 0xff))
	}
	if mk.CtZone != 0 {
		f.u16("ct_zone", k.CtZone, mk.CtZone)
	}
	f.u32("ct_mark", k.CtMark, mk.CtMark)
	if mk.CtLabel != [16]byte{} {
		hi, lo := binary.BigEndian.Uint64(k.CtLabel[:8]), binary.BigEndian.Uint64(k.CtLabel[8:])
		mhi, mlo := binary.BigEndian.Uint64(mk.CtLabel[:8]), binary.BigEndian.Uint64(mk.CtLabel[8:])
		if mhi != ^uint64(0) || mlo != ^uint64(0) {
			f.put("ct_label=%s/%s", u128(hi, lo), u128(mhi, mlo))
		} else {
			f.put("ct_label=%s", u128(hi, lo))
		}
	}
	var ctSrc4, ctDst4, ctSrc4m, ctDst4m [4]byte
	copy(ctSrc4[:], k.CtNwSrc[:4])
	copy(ctDst4[:], k.CtNwDst[:4])
	copy(ctSrc4m[:], mk.CtNwSrc[:4])
	copy(ctDst4m[:], mk.CtNwDst[:4])
	ct6 := k.EthType == flow.EthTypeIPv6 && mk.EthType != 0
	if ct6 {
		f.ip6("ct_ipv6_src", k.CtNwSrc, mk.CtNwSrc)
		f.ip6("ct_ipv6_dst", k.CtNwDst, mk.CtNwDst)
	} else {
		f.ip4("ct_nw_src", ctSrc4, ctSrc4m)
		f.ip4("ct_nw_dst", ctDst4, ctDst4m)
	}
	if mk.CtNwProto != 0 {
		f.put("ct_nw_proto=%d", k.CtNwProto)
		f.u16("ct_tp_src", k.CtTpSrc, mk.CtTpSrc)
		f.u16("ct_tp_dst", k.CtTpDst, mk.CtTpDst)
	}
	skipType, skipProto := false, false
	typ := k.EthType
	if mk.EthType != 0 {
		// OVS 3.1's match_format has no igmp (nor igmp_type): an IGMP
		// match is ip,nw_proto=2 with tp_src and tp_dst.
		var name string
		if name, skipProto = ProtocolName(typ, k.NwProto, mk.NwProto != 0); name != "" {
			skipType = true
			f.put("%s", name)
		}
	}
	for i := range k.Regs {
		f.u32("reg"+strconv.Itoa(i), k.Regs[i], mk.Regs[i])
	}
	f.u64("tun_id", k.TunID, mk.TunID)
	ts, tsm, ts6, ts6m := TunAddrSplit(k.TunSrc, mk.TunSrc, mk.TunFlags&TunMaskSrc4 != 0, mk.TunFlags&TunMaskSrc6 != 0)
	td, tdm, td6, td6m := TunAddrSplit(k.TunDst, mk.TunDst, mk.TunFlags&TunMaskDst4 != 0, mk.TunFlags&TunMaskDst6 != 0)
	f.ip4("tun_src", ts, tsm)
	f.ip4("tun_dst", td, tdm)
	f.ip6("tun_ipv6_src", ts6, ts6m)
	f.ip6("tun_ipv6_dst", td6, td6m)
	f.u16("tun_gbp_id", k.TunGBPID, mk.TunGBPID)
	if mk.TunGBPFlags != 0 {
		// The value alone, whatever the mask, as OVS 3.1's.
		f.put("tun_gbp_flags=%s", hexC(uint64(k.TunGBPFlags)))
	}
	if mk.TunFlags&flow.TunFlagOAM != 0 {
		// OVS's format_flags_masked against FLOW_TNL_F_MASK, of which
		// OpenFlow matches only the OAM flag: always "+oam" or "-oam".
		f.put("tun_flags=%s", FlagsMasked([]string{"oam"}, b2u(k.TunFlags&flow.TunFlagOAM != 0), 1, 0xf))
	}
	// tun_metadata as decoded, by index, as ovs-ofctl prints it without
	// a TLV map (tun_metadata_match_format): the mask only if, from its
	// first nonzero byte, it is not all ones.
	md := slices.Clone(m.TunMD)
	slices.SortFunc(md, func(a, b TunMDEntry) int { return a.Idx - b.Idx })
	for _, e := range md {
		mask := e.Mask
		for len(mask) > 1 && mask[0] == 0 {
			mask = mask[1:]
		}
		FormatTunMDEntry(&f.b, e.Idx, e.Value, mask)
	}
	f.u64("metadata", k.Metadata, mk.Metadata)
	if mk.InPort != 0 {
		f.put("in_port=%s", pn.Port(k.InPort))
	}
	if mk.VLANTCI != 0 {
		vidMask, pcpMask, cfi := mk.VLANTCI&flow.VLANVIDMask, mk.VLANTCI&flow.VLANPCPMask, mk.VLANTCI&flow.VLANPresent
		switch {
		case cfi != 0 && k.VLANTCI&flow.VLANPresent != 0 && (vidMask == 0 || vidMask == flow.VLANVIDMask) &&
			(pcpMask == 0 || pcpMask == flow.VLANPCPMask) && (vidMask != 0 || pcpMask != 0):
			if vidMask != 0 {
				f.put("dl_vlan=%d", k.VLANTCI&flow.VLANVIDMask)
			}
			if pcpMask != 0 {
				f.put("dl_vlan_pcp=%d", k.VLANTCI>>13)
			}
		case mk.VLANTCI == 0xffff:
			f.put("vlan_tci=0x%04x", k.VLANTCI)
		default:
			f.put("vlan_tci=0x%04x/0x%04x", k.VLANTCI, mk.VLANTCI)
		}
	}
	f.mac("dl_src", k.EthSrc, mk.EthSrc)
	f.mac("dl_dst", k.EthDst, mk.EthDst)
	if !skipType && mk.EthType != 0 {
		f.put("dl_type=0x%04x", typ)
	}
	isARP := typ == flow.EthTypeARP || typ == flow.EthTypeRARP
	switch {
	case typ == flow.EthTypeIPv6:
		f.ip6("ipv6_src", k.IPv6Src, mk.IPv6Src)
		f.ip6("ipv6_dst", k.IPv6Dst, mk.IPv6Dst)
		switch mk.IPv6Label {
		case 0:
		case 0xfffff, ^uint32(0):
			f.put("ipv6_label=0x%05x", k.IPv6Label)
		default:
			f.put("ipv6_label=0x%05x/0x%05x", k.IPv6Label, mk.IPv6Label)
		}
	case isARP:
		f.ip4("arp_spa", k.IPv4Src, mk.IPv4Src)
		f.ip4("arp_tpa", k.IPv4Dst, mk.IPv4Dst)
	default:
		f.ip4("nw_src", k.IPv4Src, mk.IPv4Src)
		f.ip4("nw_dst", k.IPv4Dst, mk.IPv4Dst)
	}
	if !skipProto && mk.NwProto != 0 {
		if isARP {
			f.put("arp_op=%d", k.NwProto)
		} else {
			f.put("nw_proto=%d", k.NwProto)
		}
	}
	if isARP {
		f.mac("arp_sha", k.ArpSHA, mk.ArpSHA)
		f.mac("arp_tha", k.ArpTHA, mk.ArpTHA)
	}
	FormatIPMatch(f.put, &k.Key, &mk.Key)
	// ICMP type and code are 8-bit fields kept in the 16-bit ports: an
	// exact 8-bit match is an exact match.
	icmp16 := func(m uint16) uint16 {
		if m == 0xff {
			return 0xffff
		}
		return m
	}
	switch {
	case typ == flow.EthTypeIPv4 && k.NwProto == flow.IPProtoICMP:
		f.u16("icmp_type", k.TpSrc, icmp16(mk.TpSrc))
		f.u16("icmp_code", k.TpDst, icmp16(mk.TpDst))
	case typ == flow.EthTypeIPv6 && k.NwProto == flow.IPProtoICMPv6:
		f.u16("icmp_type", k.TpSrc, icmp16(mk.TpSrc))
		f.u16("icmp_code", k.TpDst, icmp16(mk.TpDst))
		// The neighbour discovery fields, where they are matched (a
		// match normalised for its type has them only in a
		// solicitation or an advertisement).
		f.ip6("nd_target", k.NdTarget, mk.NdTarget)
		f.mac("nd_sll", k.ArpSHA, mk.ArpSHA)
		f.mac("nd_tll", k.ArpTHA, mk.ArpTHA)
		// Exact only (not maskable), in decimal, as OVS prints them.
		if mk.NdReserved != 0 {
			f.put("nd_reserved=%d", k.NdReserved)
		}
		if mk.NdOptionsType != 0 {
			f.put("nd_options_type=%d", k.NdOptionsType)
		}
	default:
		f.u16("tp_src", k.TpSrc, mk.TpSrc)
		f.u16("tp_dst", k.TpDst, mk.TpDst)
	}
	if (typ == flow.EthTypeIPv4 || typ == flow.EthTypeIPv6) && k.NwProto == flow.IPProtoTCP && mk.TCPFlags&0x0fff != 0 {
		f.put("tcp_flags=%s", FlagsMasked(TCPFlagNames[:], uint32(k.TCPFlags), uint32(mk.TCPFlags&0x0fff), 0x0fff))
	}
	return strings.TrimSuffix(f.b.String(), ",")
}

// u128 formats a 128-bit value as C's "0x%x" of OVS's u128 printing:
// without leading zeros.
func u128(hi, lo uint64) string {
	if hi == 0 {
		return fmt.Sprintf("%#x", lo)
	}
	return fmt.Sprintf("%#x%016x", hi, lo)
}

// FormatIPMatch puts the nw_tos, nw_ecn, nw_ttl and nw_frag items of
// key k under mask m, as match_format; the switch's own match printer
// shares it.
func FormatIPMatch(put func(string, ...any), k, m *flow.Key) {
	if m.NwTOS&0xfc != 0 {
		put("nw_tos=%d", k.NwTOS&0xfc)
	}
	if m.NwTOS&0x03 != 0 {
		put("nw_ecn=%d", k.NwTOS&0x03)
	}
	if m.NwTTL != 0 {
		put("nw_ttl=%d", k.NwTTL)
	}
	switch m.NwFrag & (flow.FragAny | flow.FragLater) {
	case flow.FragAny | flow.FragLater:
		s := "no"
		switch {
		case k.NwFrag&flow.FragAny != 0 && k.NwFrag&flow.FragLater != 0:
			s = "later"
		case k.NwFrag&flow.FragAny != 0:
			s = "first"
		case k.NwFrag&flow.FragLater != 0:
			s = "<error>"
		}
		put("nw_frag=%s", s)
	case flow.FragAny:
		put("nw_frag=%s", map[bool]string{true: "yes", false: "no"}[k.NwFrag&flow.FragAny != 0])
	case flow.FragLater:
		put("nw_frag=%s", map[bool]string{true: "later", false: "not_later"}[k.NwFrag&flow.FragLater != 0])
	}
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
