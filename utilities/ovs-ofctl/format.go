package main

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Text as OVS 3.1's ovs-ofctl prints it: match_format (lib/match.c),
// ofpacts_format (lib/ofp-actions.c), ofputil_flow_stats_format
// (lib/ofp-flow.c) and the port and features printers (lib/ofp-print.c,
// lib/ofp-port.c), for what govs' codec decodes.

// portNames maps port numbers to names for --names (nil: numbers).
type portNames map[uint32]string

// reservedPorts are OpenFlow's named ports (ofputil_port_to_string).
var reservedPorts = []struct {
	no   uint32
	name string
}{{ofp.PortInPort, "IN_PORT"}, {0xfffffff9, "TABLE"}, {ofp.PortNormal, "NORMAL"}, {ofp.PortFlood, "FLOOD"},
	{ofp.PortAll, "ALL"}, {ofp.PortController, "CONTROLLER"}, {ofp.PortLocal, "LOCAL"}, {ofp.PortAny, "ANY"},
	{0xfffffff7, "UNSET"}}

// port formats a port number as ofputil_format_port: a reserved name, a
// port's name with --names (quoted when it is not a plain word), else
// the number.
func (pn portNames) port(p uint32) string {
	for _, r := range reservedPorts {
		if r.no == p {
			return r.name
		}
	}
	if name, ok := pn[p]; ok {
		if plainName(name) {
			return name
		}
		return strconv.Quote(name)
	}
	return strconv.FormatUint(uint64(p), 10)
}

// plainName: a name ovs-ofctl prints without quotes (letters, digits,
// '-', '_', '.', not all digits and not a reserved name).
func plainName(s string) bool {
	if s == "" {
		return false
	}
	digits := true
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '-', c == '_', c == '.':
			digits = false
		default:
			return false
		}
	}
	if digits {
		return false
	}
	for _, r := range reservedPorts {
		if strings.EqualFold(r.name, s) {
			return false
		}
	}
	return true
}

// hexC formats v as C's "%#x": "0" for 0.
func hexC(v uint64) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%#x", v)
}

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

// ip4Masked formats an address under a mask as ip_format_masked: the
// address alone, with a prefix length, or with the mask.
func ip4Masked(v, m [4]byte) string {
	a := netip.AddrFrom4(v).String()
	mask := binary.BigEndian.Uint32(m[:])
	switch n := bits.LeadingZeros32(^mask); {
	case mask == ^uint32(0):
		return a
	case mask<<n == 0:
		return fmt.Sprintf("%s/%d", a, n)
	}
	return a + "/" + netip.AddrFrom4(m).String()
}

func ip6Masked(v, m [16]byte) string {
	a := netip.AddrFrom16(v).String()
	n, cidr := 0, true
	for i := 0; i < 128; i++ {
		bit := m[i/8]>>(7-i%8)&1 == 1
		switch {
		case bit && n == i:
			n++
		case bit:
			cidr = false
		}
	}
	switch {
	case n == 128:
		return a
	case cidr:
		return fmt.Sprintf("%s/%d", a, n)
	}
	return a + "/" + netip.AddrFrom16(m).String()
}

// ctStateNames are the ct_state bits, lowest first (ct_state_to_string).
var ctStateNames = [8]string{"new", "est", "rel", "rpl", "inv", "trk", "snat", "dnat"}

// tcpFlagNames are the TCP flags, lowest first (packet_tcp_flag_to_string).
var tcpFlagNames = [12]string{"fin", "syn", "rst", "psh", "ack", "urg", "ece", "cwr", "ns", "[200]", "[400]", "[800]"}

// flagsMasked formats flags under mask as format_flags_masked: names
// joined by '|' (or "0") for a full mask, else "+name-name".
func flagsMasked(names []string, v, m, full uint32) string {
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

// formatMatch formats m as match_format, with priority unless it is the
// default (32768).
func formatMatch(m *ofp.Match, priority int, pn portNames) string {
	f := &matchFormatter{}
	k, mk := &m.Flow, &m.Mask
	if priority != 32768 {
		f.put("priority=%d", priority)
	}
	f.u32("pkt_mark", k.PktMark, mk.PktMark)
	if mk.RecircID != 0 {
		f.u32("recirc_id", k.RecircID, mk.RecircID)
	}
	if mk.ConjID != 0 {
		f.put("conj_id=%d", k.ConjID)
	}
	if mk.CtState != 0 {
		f.put("ct_state=%s", flagsMasked(ctStateNames[:], uint32(k.CtState), uint32(mk.CtState), 0xff))
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
		skipType = true
		switch typ {
		case flow.EthTypeIPv4, flow.EthTypeIPv6:
			v6 := typ == flow.EthTypeIPv6
			names := map[uint8]string{flow.IPProtoICMP: "icmp", flow.IPProtoIGMP: "igmp", flow.IPProtoTCP: "tcp", flow.IPProtoUDP: "udp", flow.IPProtoSCTP: "sctp"}
			base := "ip"
			if v6 {
				names = map[uint8]string{flow.IPProtoICMPv6: "icmp6", flow.IPProtoTCP: "tcp6", flow.IPProtoUDP: "udp6", flow.IPProtoSCTP: "sctp6"}
				base = "ipv6"
			}
			if n := names[k.NwProto]; mk.NwProto != 0 && n != "" {
				skipProto = true
				f.put("%s", n)
			} else {
				f.put("%s", base)
			}
		case flow.EthTypeARP:
			f.put("arp")
		case flow.EthTypeRARP:
			f.put("rarp")
		default:
			skipType = false
		}
	}
	for i := range k.Regs {
		f.u32("reg"+strconv.Itoa(i), k.Regs[i], mk.Regs[i])
	}
	f.u64("tun_id", k.TunID, mk.TunID)
	var ts, td, tsm, tdm [4]byte
	copy(ts[:], k.TunSrc[12:])
	copy(td[:], k.TunDst[12:])
	copy(tsm[:], mk.TunSrc[12:])
	copy(tdm[:], mk.TunDst[12:])
	f.ip4("tun_src", ts, tsm)
	f.ip4("tun_dst", td, tdm)
	f.u64("metadata", k.Metadata, mk.Metadata)
	if mk.InPort != 0 {
		f.put("in_port=%s", pn.port(k.InPort))
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
	if mk.NwTOS&0xfc != 0 {
		f.put("nw_tos=%d", k.NwTOS&0xfc)
	}
	if mk.NwTOS&0x03 != 0 {
		f.put("nw_ecn=%d", k.NwTOS&0x03)
	}
	if mk.NwTTL != 0 {
		f.put("nw_ttl=%d", k.NwTTL)
	}
	switch mk.NwFrag & (flow.FragAny | flow.FragLater) {
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
		f.put("nw_frag=%s", s)
	case flow.FragAny:
		f.put("nw_frag=%s", map[bool]string{true: "yes", false: "no"}[k.NwFrag&flow.FragAny != 0])
	case flow.FragLater:
		f.put("nw_frag=%s", map[bool]string{true: "later", false: "not_later"}[k.NwFrag&flow.FragLater != 0])
	}
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
	case typ == flow.EthTypeIPv4 && k.NwProto == flow.IPProtoIGMP:
		f.u16("igmp_type", k.TpSrc, mk.TpSrc)
		f.u16("igmp_code", k.TpDst, mk.TpDst)
	case typ == flow.EthTypeIPv6 && k.NwProto == flow.IPProtoICMPv6:
		f.u16("icmp_type", k.TpSrc, icmp16(mk.TpSrc))
		f.u16("icmp_code", k.TpDst, icmp16(mk.TpDst))
	default:
		f.u16("tp_src", k.TpSrc, mk.TpSrc)
		f.u16("tp_dst", k.TpDst, mk.TpDst)
	}
	if (typ == flow.EthTypeIPv4 || typ == flow.EthTypeIPv6) && k.NwProto == flow.IPProtoTCP && mk.TCPFlags&0x0fff != 0 {
		f.put("tcp_flags=%s", flagsMasked(tcpFlagNames[:], uint32(k.TCPFlags), uint32(mk.TCPFlags&0x0fff), 0x0fff))
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

// nxmNames are OVS's NXM/OXM names of the fields, as move, load and
// output_reg show them (mf_format_subfield).
var nxmNames = map[string]string{
	"in_port": "NXM_OF_IN_PORT", "eth_dst": "NXM_OF_ETH_DST", "eth_src": "NXM_OF_ETH_SRC", "eth_type": "NXM_OF_ETH_TYPE",
	"vlan_tci": "NXM_OF_VLAN_TCI", "nw_tos": "NXM_OF_IP_TOS", "ip_proto": "NXM_OF_IP_PROTO", "ip_src": "NXM_OF_IP_SRC",
	"ip_dst": "NXM_OF_IP_DST", "tcp_src": "NXM_OF_TCP_SRC", "tcp_dst": "NXM_OF_TCP_DST", "udp_src": "NXM_OF_UDP_SRC",
	"udp_dst": "NXM_OF_UDP_DST", "icmp_type": "NXM_OF_ICMP_TYPE", "icmp_code": "NXM_OF_ICMP_CODE", "arp_op": "NXM_OF_ARP_OP",
	"arp_spa": "NXM_OF_ARP_SPA", "arp_tpa": "NXM_OF_ARP_TPA", "arp_sha": "NXM_NX_ARP_SHA", "arp_tha": "NXM_NX_ARP_THA",
	"ipv6_src": "NXM_NX_IPV6_SRC", "ipv6_dst": "NXM_NX_IPV6_DST", "ipv6_label": "NXM_NX_IPV6_LABEL",
	"icmpv6_type": "NXM_NX_ICMPV6_TYPE", "icmpv6_code": "NXM_NX_ICMPV6_CODE", "ip_ecn": "NXM_NX_IP_ECN",
	"nw_ttl": "NXM_NX_IP_TTL", "ip_frag": "NXM_NX_IP_FRAG", "tcp_flags": "NXM_NX_TCP_FLAGS", "tun_id": "NXM_NX_TUN_ID",
	"tun_src": "NXM_NX_TUN_IPV4_SRC", "tun_dst": "NXM_NX_TUN_IPV4_DST", "tun_flags": "NXM_NX_TUN_FLAGS",
	"pkt_mark": "NXM_NX_PKT_MARK", "conj_id": "NXM_NX_CONJ_ID", "ct_state": "NXM_NX_CT_STATE", "ct_zone": "NXM_NX_CT_ZONE",
	"ct_mark": "NXM_NX_CT_MARK", "ct_label": "NXM_NX_CT_LABEL", "ct_nw_proto": "NXM_NX_CT_NW_PROTO",
	"ct_nw_src": "NXM_NX_CT_NW_SRC", "ct_nw_dst": "NXM_NX_CT_NW_DST", "ct_ipv6_src": "NXM_NX_CT_IPV6_SRC",
	"ct_ipv6_dst": "NXM_NX_CT_IPV6_DST", "ct_tp_src": "NXM_NX_CT_TP_SRC", "ct_tp_dst": "NXM_NX_CT_TP_DST",
	"metadata": "OXM_OF_METADATA", "vlan_vid": "OXM_OF_VLAN_VID", "vlan_pcp": "OXM_OF_VLAN_PCP", "ip_dscp": "OXM_OF_IP_DSCP",
	"sctp_src": "OXM_OF_SCTP_SRC", "sctp_dst": "OXM_OF_SCTP_DST", "in_port_oxm": "OXM_OF_IN_PORT",
}

func init() {
	for i := 0; i < 16; i++ {
		nxmNames["reg"+strconv.Itoa(i)] = "NXM_NX_REG" + strconv.Itoa(i)
	}
	for i := 0; i < 8; i++ {
		nxmNames["xreg"+strconv.Itoa(i)] = "OXM_OF_PKT_REG" + strconv.Itoa(i)
	}
	for i := 0; i < 4; i++ {
		nxmNames["xxreg"+strconv.Itoa(i)] = "NXM_NX_XXREG" + strconv.Itoa(i)
	}
}

// formatRef formats a field's bit range as mf_format_subfield.
func formatRef(r ofp.FieldRef) string {
	name := nxmNames[r.Field.Name]
	if name == "" {
		name = r.Field.Name
	}
	switch {
	case r.Ofs == 0 && r.NBits == r.Field.Bits():
		return name + "[]"
	case r.NBits == 1:
		return fmt.Sprintf("%s[%d]", name, r.Ofs)
	}
	return fmt.Sprintf("%s[%d..%d]", name, r.Ofs, r.Ofs+r.NBits-1)
}

// fieldValue formats a field's value (and mask unless full) as mf_format.
func fieldValue(fd *ofp.Field, value, mask []byte, pn portNames) string {
	full := true
	for _, c := range mask {
		full = full && c == 0xff
	}
	switch fd.Name {
	case "eth_src", "eth_dst", "arp_sha", "arp_tha":
		var v, m [6]byte
		copy(v[:], value)
		copy(m[:], mask)
		if full {
			return flow.MAC(v).String()
		}
		return flow.MAC(v).String() + "/" + flow.MAC(m).String()
	case "ip_src", "ip_dst", "arp_spa", "arp_tpa", "tun_src", "tun_dst", "ct_nw_src", "ct_nw_dst":
		var v, m [4]byte
		copy(v[:], value)
		copy(m[:], mask)
		return ip4Masked(v, m)
	case "ipv6_src", "ipv6_dst", "ct_ipv6_src", "ct_ipv6_dst":
		var v, m [16]byte
		copy(v[:], value)
		copy(m[:], mask)
		return ip6Masked(v, m)
	case "in_port", "in_port_oxm":
		p := uint32(0)
		for _, c := range value {
			p = p<<8 | uint32(c)
		}
		if fd.Len == 2 && p >= 0xff00 {
			p |= 0xffff0000
		}
		return pn.port(p)
	case "vlan_vid", "vlan_pcp", "ip_proto", "nw_tos", "ip_dscp", "ip_ecn", "nw_ttl", "tcp_src", "tcp_dst", "udp_src",
		"udp_dst", "sctp_src", "sctp_dst", "icmp_type", "icmp_code", "icmpv6_type", "icmpv6_code", "arp_op", "ct_zone",
		"ct_nw_proto", "ct_tp_src", "ct_tp_dst", "conj_id":
		v, m := beUint(value), beUint(mask)
		if full {
			return strconv.FormatUint(v, 10)
		}
		return fmt.Sprintf("%d/%s", v, hexC(m))
	}
	if len(value) > 8 {
		v := hexBytes(value)
		if full {
			return v
		}
		return v + "/" + hexBytes(mask)
	}
	v, m := beUint(value), beUint(mask)
	if full {
		return hexC(v)
	}
	return hexC(v) + "/" + hexC(m)
}

func beUint(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// hexBytes formats a big value as "0x..." without leading zeros.
func hexBytes(b []byte) string {
	s := strings.TrimLeft(fmt.Sprintf("%x", b), "0")
	if s == "" {
		return "0"
	}
	return "0x" + s
}

// legacyNames are the OpenFlow 1.0 mod_* actions' names.
var legacyNames = map[string]string{"eth_src": "mod_dl_src", "eth_dst": "mod_dl_dst", "ip_src": "mod_nw_src",
	"ip_dst": "mod_nw_dst", "nw_tos": "mod_nw_tos", "tcp_src": "mod_tp_src", "tcp_dst": "mod_tp_dst",
	"udp_src": "mod_tp_src", "udp_dst": "mod_tp_dst"}

// pinReasons are the packet-in reasons' names.
var pinReasons = []string{"no_match", "action", "invalid_ttl", "action_set", "group", "packet_out"}

// formatActions formats acts as ofpacts_format ("drop" for none).
func formatActions(acts []ofp.Action, v ofp.Version, pn portNames) string {
	if len(acts) == 0 {
		return "drop"
	}
	parts := make([]string, 0, len(acts))
	for i := range acts {
		parts = append(parts, formatAction(&acts[i], v, pn))
	}
	return strings.Join(parts, ",")
}

func formatAction(a *ofp.Action, v ofp.Version, pn portNames) string {
	switch a.Type {
	case ofp.ActOutput:
		if a.Port >= ofp.PortMax {
			return pn.port(a.Port)
		}
		return "output:" + pn.port(a.Port)
	case ofp.ActOutputReg:
		return "output:" + formatRef(a.Src)
	case ofp.ActController:
		if a.Reason == ofp.PacketInAction && a.ControllerID == 0 {
			return fmt.Sprintf("CONTROLLER:%d", a.MaxLen)
		}
		var b strings.Builder
		b.WriteString("controller(")
		if a.Reason != ofp.PacketInAction {
			r := strconv.Itoa(int(a.Reason))
			if int(a.Reason) < len(pinReasons) {
				r = pinReasons[a.Reason]
			}
			fmt.Fprintf(&b, "reason=%s,", r)
		}
		if a.MaxLen != 0xffff {
			fmt.Fprintf(&b, "max_len=%d,", a.MaxLen)
		}
		if a.ControllerID != 0 {
			fmt.Fprintf(&b, "id=%d,", a.ControllerID)
		}
		return strings.TrimSuffix(b.String(), ",") + ")"
	case ofp.ActResubmit:
		if a.Table == 0xff && !a.ResubmitTable() {
			return "resubmit:" + pn.port(a.Port)
		}
		port, table := "", ""
		if a.Port != ofp.PortInPort {
			port = pn.port(a.Port)
		}
		if a.Table != 0xff {
			table = strconv.Itoa(int(a.Table))
		}
		return "resubmit(" + port + "," + table + ")"
	case ofp.ActGotoTable:
		return fmt.Sprintf("goto_table:%d", a.Table)
	case ofp.ActSetVLANVID:
		return fmt.Sprintf("mod_vlan_vid:%d", a.VLAN)
	case ofp.ActSetVLANPCP:
		return fmt.Sprintf("mod_vlan_pcp:%d", a.VLAN)
	case ofp.ActPushVLAN:
		return fmt.Sprintf("push_vlan:0x%04x", a.VLAN)
	case ofp.ActPopVLAN:
		if v == ofp.V10 {
			return "strip_vlan"
		}
		return "pop_vlan"
	case ofp.ActSetField:
		if a.Legacy() {
			if name, ok := legacyNames[a.Field.Name]; ok {
				return name + ":" + fieldValue(a.Field, a.Value, a.Mask, pn)
			}
		}
		if a.RegLoad() {
			if ref, val, ok := a.LoadRange(); ok {
				return "load:" + hexC(val) + "->" + formatRef(ref)
			}
		}
		return "set_field:" + fieldValue(a.Field, a.Value, a.Mask, pn) + "->" + a.Field.Name
	case ofp.ActMove:
		return "move:" + formatRef(a.Src) + "->" + formatRef(a.Dst)
	case ofp.ActStackPush:
		return "push:" + formatRef(a.Src)
	case ofp.ActStackPop:
		return "pop:" + formatRef(a.Dst)
	case ofp.ActWriteMetadata:
		if a.MetadataMask == ^uint64(0) {
			return "write_metadata:" + hexC(a.Metadata)
		}
		return "write_metadata:" + hexC(a.Metadata) + "/" + hexC(a.MetadataMask)
	case ofp.ActNote:
		h := make([]string, len(a.Data))
		for i, c := range a.Data {
			h[i] = fmt.Sprintf("%02x", c)
		}
		return "note:" + strings.Join(h, ".")
	case ofp.ActExit:
		return "exit"
	case ofp.ActDecTTL:
		return "dec_ttl"
	case ofp.ActGroup:
		return fmt.Sprintf("group:%d", a.ID)
	case ofp.ActMeter:
		return fmt.Sprintf("meter:%d", a.ID)
	case ofp.ActCTClear:
		return "ct_clear"
	case ofp.ActClearActions:
		return "clear_actions"
	case ofp.ActWriteActions:
		return "write_actions(" + formatActions(a.Nested, v, pn) + ")"
	case ofp.ActClone:
		return "clone(" + formatActions(a.Nested, v, pn) + ")"
	case ofp.ActConjunction:
		return fmt.Sprintf("conjunction(%d,%d/%d)", a.ID, a.Clause+1, a.NClauses)
	case ofp.ActCT:
		return formatCT(a, v, pn)
	case ofp.ActLearn:
		return a.Learn.Format(formatRef, func(fd *ofp.Field, val []byte) string { return fieldValue(fd, val, nil, pn) })
	case ofp.ActFinTimeout:
		return a.Fin.Format()
	}
	if a.Name != "" {
		return a.Name
	}
	return fmt.Sprintf("<action %d>", a.Type)
}

// formatCT formats ct(...) as format_CT: flags, table, zone, a nat
// first, exec and alg.
func formatCT(a *ofp.Action, v ofp.Version, pn portNames) string {
	c := a.CT
	var b strings.Builder
	b.WriteString("ct(")
	if c.Flags&ofp.CTCommit != 0 {
		b.WriteString("commit,")
	}
	if c.Flags&ofp.CTForce != 0 {
		b.WriteString("force,")
	}
	if c.Table != ofp.CTNoTable {
		fmt.Fprintf(&b, "table=%d,", c.Table)
	}
	if c.ZoneSrc.Field != nil {
		fmt.Fprintf(&b, "zone=%s,", formatRef(c.ZoneSrc))
	} else if c.ZoneImm != 0 {
		fmt.Fprintf(&b, "zone=%d,", c.ZoneImm)
	}
	nested := a.Nested
	if len(nested) > 0 && nested[0].Type == ofp.ActNAT {
		b.WriteString(formatNAT(nested[0].NAT) + ",")
		nested = nested[1:]
	}
	if len(nested) > 0 {
		fmt.Fprintf(&b, "exec(%s),", formatActions(nested, v, pn))
	}
	switch c.Alg {
	case 0:
	case 21:
		b.WriteString("alg=ftp,")
	case 69:
		b.WriteString("alg=tftp,")
	default:
		fmt.Fprintf(&b, "alg=%d,", c.Alg)
	}
	return strings.TrimSuffix(b.String(), ",") + ")"
}

// formatDuration formats seconds as ofp_print_duration: whole seconds,
// then milliseconds or nanoseconds when there is a fraction.
func formatDuration(d time.Duration) string {
	sec, nsec := int64(d/time.Second), int64(d%time.Second)
	s := strconv.FormatInt(sec, 10)
	if nsec > 0 {
		if msec := nsec / 1e6; msec*1e6 == nsec {
			s += fmt.Sprintf(".%03d", msec)
		} else {
			s += fmt.Sprintf(".%09d", nsec)
		}
	}
	return s + "s"
}

// flowFlagNames are the flow mod flags as ofp_print_flow_flags shows them.
var flowFlagNames = []struct {
	bit  uint16
	name string
}{{ofp.FlagSendFlowRem, "send_flow_rem"}, {ofp.FlagCheckOverlap, "check_overlap"}, {ofp.FlagResetCounts, "reset_counts"},
	{ofp.FlagNoPktCounts, "no_packet_counts"}, {ofp.FlagNoBytCounts, "no_byte_counts"}}

// formatFlowStats formats one flow as ofputil_flow_stats_format.
func formatFlowStats(fs *ofp.FlowStats, v ofp.Version, showStats bool, pn portNames) string {
	var b strings.Builder
	if showStats || fs.Cookie != 0 {
		fmt.Fprintf(&b, "cookie=0x%x, ", fs.Cookie)
	}
	if showStats {
		fmt.Fprintf(&b, "duration=%s, ", formatDuration(fs.Duration))
	}
	if showStats || fs.Table != 0 {
		fmt.Fprintf(&b, "table=%d, ", fs.Table)
	}
	if showStats {
		fmt.Fprintf(&b, "n_packets=%d, n_bytes=%d, ", fs.Packets, fs.Bytes)
	}
	if fs.IdleTimeout != 0 {
		fmt.Fprintf(&b, "idle_timeout=%d, ", fs.IdleTimeout)
	}
	if fs.HardTimeout != 0 {
		fmt.Fprintf(&b, "hard_timeout=%d, ", fs.HardTimeout)
	}
	for _, fl := range flowFlagNames {
		if fs.Flags&fl.bit != 0 {
			b.WriteString(fl.name + " ")
		}
	}
	if fs.Importance != 0 {
		fmt.Fprintf(&b, "importance=%d, ", fs.Importance)
	}
	if showStats && fs.IdleAge >= 0 {
		fmt.Fprintf(&b, "idle_age=%d, ", int(fs.IdleAge/time.Second))
	}
	if showStats && fs.HardAge >= 0 && fs.HardAge/time.Second != fs.Duration/time.Second {
		fmt.Fprintf(&b, "hard_age=%d, ", int(fs.HardAge/time.Second))
	}
	if m := formatMatch(&fs.Match, int(fs.Priority), pn); m != "" {
		b.WriteString(m + " ")
	}
	b.WriteString("actions=" + formatActions(fs.Actions, v, pn))
	return b.String()
}

// msgHeader is ofp_to_string's start: the message's name, the version
// unless 1.0, and the xid.
func msgHeader(name string, v ofp.Version, xid uint32) string {
	if v != ofp.V10 {
		name += fmt.Sprintf(" (OF1.%d)", v-1)
	}
	return fmt.Sprintf("%s (xid=0x%x):", name, xid)
}

// Features, capabilities, port config and state names (lib/ofp-port.c,
// lib/netdev.c).
var (
	featureNames = []string{"10MB-HD", "10MB-FD", "100MB-HD", "100MB-FD", "1GB-HD", "1GB-FD", "10GB-FD", "40GB-FD",
		"100GB-FD", "1TB-FD", "OTHER", "COPPER", "FIBER", "AUTO_NEG", "AUTO_PAUSE", "AUTO_PAUSE_ASYM"}
	configNames10 = map[uint32]string{1: "PORT_DOWN", 2: "NO_STP", 4: "NO_RECV", 8: "NO_RECV_STP", 16: "NO_FLOOD", 32: "NO_FWD", 64: "NO_PACKET_IN"}
	configNames11 = map[uint32]string{1: "PORT_DOWN", 4: "NO_RECV", 32: "NO_FWD", 64: "NO_PACKET_IN"}
	stateNames    = map[uint32]string{1: "LINK_DOWN", 2: "BLOCKED", 4: "LIVE"}
	actionNames10 = []struct {
		bit  uint
		name string
	}{{0, "output"}, {11, "enqueue"}, {1, "set_vlan_vid"}, {2, "set_vlan_pcp"}, {3, "strip_vlan"}, {4, "mod_dl_src"},
		{5, "mod_dl_dst"}, {6, "mod_nw_src"}, {7, "mod_nw_dst"}, {8, "mod_nw_tos"}, {9, "mod_tp_src"}, {10, "mod_tp_dst"}}
)

// bitNames formats bits as ofp_print_bit_names with ' ': each bit's name
// (or 0x%x), "0" for none.
func bitNames(bits uint32, name func(uint32) string) string {
	if bits == 0 {
		return "0"
	}
	var parts []string
	for i := 0; i < 32; i++ {
		bit := uint32(1) << i
		if bits&bit == 0 {
			continue
		}
		n := name(bit)
		if n == "" {
			n = fmt.Sprintf("0x%x", bit)
		}
		parts = append(parts, n)
	}
	return strings.Join(parts, " ")
}

// capabilities formats a features reply's capabilities as OVS does:
// mapped to OVS's own bit order (STP and GROUP_STATS share bit 3 on the
// wire, in different versions).
func capabilities(v ofp.Version, c uint32) string {
	type capName struct {
		bit  uint32
		name string
	}
	names := []capName{{1, "FLOW_STATS"}, {2, "TABLE_STATS"}, {4, "PORT_STATS"}}
	if v == ofp.V10 {
		names = append(names, capName{8, "STP"})
	} else {
		names = append(names, capName{8, "GROUP_STATS"})
	}
	names = append(names, capName{0x20, "IP_REASM"}, capName{0x40, "QUEUE_STATS"})
	if v == ofp.V10 {
		names = append(names, capName{0x80, "ARP_MATCH_IP"})
	} else {
		names = append(names, capName{0x100, "PORT_BLOCKED"})
	}
	if v >= ofp.V14 {
		names = append(names, capName{0x200, "BUNDLES"}, capName{0x400, "FLOW_MONITORING"})
	}
	var parts []string
	for _, n := range names {
		if c&n.bit != 0 {
			parts = append(parts, n.name)
			c &^= n.bit
		}
	}
	for i := 0; i < 32; i++ {
		if c&(1<<i) != 0 {
			parts = append(parts, fmt.Sprintf("0x%x", 1<<i))
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " ")
}

// featuresBps is netdev_features_to_bps: the highest speed named.
func featuresBps(f uint32) uint64 {
	switch {
	case f&ofp.Feature1TBFD != 0:
		return 1e12
	case f&ofp.Feature100GBFD != 0:
		return 1e11
	case f&ofp.Feature40GBFD != 0:
		return 4e10
	case f&ofp.Feature10GBFD != 0:
		return 1e10
	case f&(ofp.Feature1GBHD|ofp.Feature1GBFD) != 0:
		return 1e9
	case f&(ofp.Feature100MBHD|ofp.Feature100MBFD) != 0:
		return 1e8
	case f&(ofp.Feature10MBHD|ofp.Feature10MBFD) != 0:
		return 1e7
	}
	return 0
}

// formatPort formats a port as ofp_print_phy_port.
func formatPort(b *strings.Builder, v ofp.Version, p *ofp.Port) {
	fmt.Fprintf(b, " %s(%s): addr:%s\n", portNames(nil).port(p.No), p.Name, flow.MAC(p.HWAddr))
	cfg := configNames11
	if v == ofp.V10 {
		cfg = configNames10
	}
	fmt.Fprintf(b, "     config:     %s\n", bitNames(p.Config, func(bit uint32) string { return cfg[bit] }))
	state := p.State
	if v == ofp.V10 {
		state &= 1 // the STP bits are printed only when set, and govs sets none
	}
	fmt.Fprintf(b, "     state:      %s\n", bitNames(state, func(bit uint32) string { return stateNames[bit] }))
	feat := func(bit uint32) string {
		if i := bits.TrailingZeros32(bit); i < len(featureNames) {
			return featureNames[i]
		}
		return ""
	}
	for _, f := range []struct {
		label string
		v     uint32
	}{{"current:    ", p.Curr}, {"advertised: ", p.Advertised}, {"supported:  ", p.Supported}, {"peer:       ", p.Peer}} {
		if f.v != 0 {
			fmt.Fprintf(b, "     %s%s\n", f.label, bitNames(f.v, feat))
		}
	}
	curr, max := uint64(p.CurrSpeed), uint64(p.MaxSpeed)
	if v == ofp.V10 {
		curr, max = featuresBps(p.Curr)/1000, featuresBps(p.Supported)/1000
	}
	fmt.Fprintf(b, "     speed: %d Mbps now, %d Mbps max\n", curr/1000, max/1000)
}

// formatNAT formats nat(...) as format_NAT: the direction, then the
// address range, port range and flags when a range is given.
func formatNAT(n *ofp.NAT) string {
	if n.Flags&(ofp.NATSrc|ofp.NATDst) == 0 {
		return "nat"
	}
	var b strings.Builder
	b.WriteString("nat(")
	if n.Flags&ofp.NATSrc != 0 {
		b.WriteString("src")
	} else {
		b.WriteString("dst")
	}
	if n.Family != 0 {
		b.WriteString("=")
		switch n.Family {
		case 4:
			min, max := [4]byte(n.MinAddr[:4]), [4]byte(n.MaxAddr[:4])
			b.WriteString(netip.AddrFrom4(min).String())
			if max != [4]byte{} && max != min {
				b.WriteString("-" + netip.AddrFrom4(max).String())
			}
		default:
			addr := func(a [16]byte) string {
				if n.MinPort != 0 {
					return "[" + netip.AddrFrom16(a).String() + "]"
				}
				return netip.AddrFrom16(a).String()
			}
			b.WriteString(addr(n.MinAddr))
			if n.MaxAddr != [16]byte{} && n.MaxAddr != n.MinAddr {
				b.WriteString("-" + addr(n.MaxAddr))
			}
		}
		if n.MinPort != 0 {
			fmt.Fprintf(&b, ":%d", n.MinPort)
			if n.MaxPort != 0 && n.MaxPort != n.MinPort {
				fmt.Fprintf(&b, "-%d", n.MaxPort)
			}
		}
		b.WriteString(",")
		for _, fl := range []struct {
			bit  uint16
			name string
		}{{ofp.NATPersistent, "persistent"}, {ofp.NATHash, "hash"}, {ofp.NATRandom, "random"}} {
			if n.Flags&fl.bit != 0 {
				b.WriteString(fl.name + ",")
			}
		}
	}
	return strings.TrimSuffix(b.String(), ",") + ")"
}
