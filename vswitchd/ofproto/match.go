package ofproto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"math/bits"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
	"github.com/govs/govs/vswitchd/ofproto/ofp/ofptext"
)

// formatMatch formats key k under mask m in OpenFlow match syntax, as OVS's
// match_format does (lib/match.c), with inPort for the input port. A
// megaflow starts with "recirc_id=0,eth," as ofproto/trace's "Megaflow:"
// line does. tagged2 adds the empty second VLAN header ("vlan_tci1=0x0000")
// that OVS's flow_format shows after a tag. tunMD is the tun_metadata
// fields' text (see ofp.FormatTunMD), shown after the other tunnel fields.
func formatMatch(k *flow.Key, m *flow.Mask, inPort string, megaflow, tagged2 bool, tunMD string) string {
	return formatMatchOF(k, m, inPort, megaflow, tagged2, tunMD, "", "", "", "")
}

// formatMatchOF is formatMatch with the OpenFlow fields a datapath key
// does not hold, each "name=value," items at its place in match_format:
// mark (pkt_mark) first, dpHash (dp_hash) after recirc_id, regs before the
// tunnel, metadata after it.
func formatMatchOF(k *flow.Key, m *flow.Mask, inPort string, megaflow, tagged2 bool, tunMD, mark, dpHash, regs, metadata string) string {
	var b strings.Builder
	b.WriteString(mark)
	put := func(format string, args ...any) {
		fmt.Fprintf(&b, format, args...)
		b.WriteByte(',')
	}
	// A packet's flow shows its recirc_id when not 0, and then its
	// packet type as a megaflow does (OVS's flow_format, match_format).
	recirc := megaflow || m.RecircID != 0 && k.RecircID != 0
	if recirc {
		if k.RecircID == 0 {
			b.WriteString("recirc_id=0,")
		} else {
			put("recirc_id=%#x", k.RecircID)
		}
	}
	b.WriteString(dpHash)
	formatCtMatch(put, k, m)
	if recirc {
		b.WriteString("eth,")
	}
	skipType, skipProto := false, false
	typ := k.EthType
	if m.EthType != 0 {
		// OVS 3.1's match_format has no igmp (nor igmp_type).
		var name string
		if name, skipProto = ofp.ProtocolName(typ, k.NwProto, m.NwProto != 0); name != "" {
			skipType = true
			put("%s", name)
		}
	}
	b.WriteString(regs)
	formatTunnel(put, k, m)
	b.WriteString(tunMD)
	b.WriteString(metadata)
	if m.InPort != 0 {
		put("in_port=%s", inPort)
	}
	// A megaflow of an untagged packet shows no VLAN: OVS clears the VLAN
	// bits of packets that had no tag (xlate_wc_finish).
	if m.VLANTCI != 0 && !(megaflow && !k.HasVLAN()) {
		vidMask, pcpMask, cfi := m.VLANTCI&flow.VLANVIDMask, m.VLANTCI&flow.VLANPCPMask, m.VLANTCI&flow.VLANPresent
		switch {
		case cfi != 0 && k.HasVLAN() && (vidMask == 0 || vidMask == flow.VLANVIDMask) &&
			(pcpMask == 0 || pcpMask == flow.VLANPCPMask) && (vidMask != 0 || pcpMask != 0):
			if vidMask != 0 {
				put("dl_vlan=%d", k.VID())
			}
			if pcpMask != 0 {
				put("dl_vlan_pcp=%d", k.VLANTCI>>13)
			}
		case m.VLANTCI == 0xffff:
			put("vlan_tci=0x%04x", k.VLANTCI)
		default:
			put("vlan_tci=0x%04x/0x%04x", k.VLANTCI, m.VLANTCI)
		}
		// OVS's flow_wildcards_init_for_packet shows the VLAN header
		// after a TCI that is not zero (a tag, or a trace flow's
		// vlan_vid without OFPVID_PRESENT).
		if tagged2 && k.VLANTCI != 0 {
			put("vlan_tci1=0x0000")
		}
	}
	putMAC := func(name string, v, mk [6]byte) {
		switch mk {
		case [6]byte{}:
		case [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}:
			put("%s=%s", name, flow.MAC(v))
		default:
			put("%s=%s/%s", name, flow.MAC(v), flow.MAC(mk))
		}
	}
	putMAC("dl_src", k.EthSrc, m.EthSrc)
	putMAC("dl_dst", k.EthDst, m.EthDst)
	if !skipType && m.EthType != 0 {
		put("dl_type=0x%04x", typ)
	}
	isARP := typ == flow.EthTypeARP || typ == flow.EthTypeRARP
	switch {
	case typ == flow.EthTypeIPv6:
		putIPv6Net(put, "ipv6_src", k.IPv6Src, m.IPv6Src)
		putIPv6Net(put, "ipv6_dst", k.IPv6Dst, m.IPv6Dst)
		// A megaflow's label mask is all ones (OVS's be32) where a
		// lookup consulted the whole label, 0xfffff where only a set
		// did, shown as OVS's match_format shows it.
		if m.IPv6Label != 0 {
			if m.IPv6Label == ^uint32(0) || m.IPv6Label == 0xfffff && !megaflow {
				put("ipv6_label=0x%05x", k.IPv6Label)
			} else {
				put("ipv6_label=0x%05x/0x%05x", k.IPv6Label&m.IPv6Label, m.IPv6Label)
			}
		}
	case isARP:
		putIPNet(put, "arp_spa", k.IPv4Src, m.IPv4Src)
		putIPNet(put, "arp_tpa", k.IPv4Dst, m.IPv4Dst)
	default:
		putIPNet(put, "nw_src", k.IPv4Src, m.IPv4Src)
		putIPNet(put, "nw_dst", k.IPv4Dst, m.IPv4Dst)
	}
	if !skipProto && m.NwProto != 0 {
		if isARP {
			put("arp_op=%d", k.NwProto)
		} else {
			put("nw_proto=%d", k.NwProto)
		}
	}
	if isARP {
		putMAC("arp_sha", k.ArpSHA, m.ArpSHA)
		putMAC("arp_tha", k.ArpTHA, m.ArpTHA)
	}
	ofp.FormatIPMatch(put, k, (*flow.Key)(m))
	putU16 := func(name string, v, mk uint16) {
		switch mk {
		case 0:
		case 0xffff:
			put("%s=%d", name, v)
		default:
			// OVS's format_be16_masked: hex, the value under the mask.
			put("%s=0x%x/0x%x", name, v&mk, mk)
		}
	}
	switch {
	case typ == flow.EthTypeIPv4 && k.NwProto == flow.IPProtoICMP:
		putU16("icmp_type", k.TpSrc, m.TpSrc)
		putU16("icmp_code", k.TpDst, m.TpDst)
	case typ == flow.EthTypeIPv6 && k.NwProto == flow.IPProtoICMPv6:
		putU16("icmp_type", k.TpSrc, m.TpSrc)
		putU16("icmp_code", k.TpDst, m.TpDst)
		putIPv6Net(put, "nd_target", k.NdTarget, m.NdTarget)
		putMAC("nd_sll", k.ArpSHA, m.ArpSHA)
		putMAC("nd_tll", k.ArpTHA, m.ArpTHA)
		if m.NdReserved != 0 {
			put("nd_reserved=%d", k.NdReserved)
		}
		if m.NdOptionsType != 0 {
			put("nd_options_type=%d", k.NdOptionsType)
		}
	default:
		putU16("tp_src", k.TpSrc, m.TpSrc)
		putU16("tp_dst", k.TpDst, m.TpDst)
	}
	if (typ == flow.EthTypeIPv4 || typ == flow.EthTypeIPv6) && k.NwProto == flow.IPProtoTCP && m.TCPFlags&0x0fff != 0 {
		put("tcp_flags=%s", flow.FormatTCPFlagsMasked(k.TCPFlags, m.TCPFlags))
	}
	return strings.TrimSuffix(b.String(), ",")
}

// parseCtState parses an exact ct_state: a number or flags joined by
// "|" ("trk|est") or given as "+trk+est".
func parseCtState(s string) (uint8, error) {
	if v, err := strconv.ParseUint(s, 0, 8); err == nil {
		return uint8(v), nil
	}
	var st uint8
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == '|' || r == '+' }) {
		i := slices.Index(ofp.CTStateNames[:], f)
		if i < 0 {
			return 0, fmt.Errorf("unknown ct_state flag %s", f)
		}
		st |= 1 << i
	}
	return st, nil
}

// formatCtState formats ct_state as match_format does: "new|trk" for an
// exact match ("0" for none), "+new-est" for a masked one.
func formatCtState(v, m uint8) string {
	return ofp.FlagsMasked(ofp.CTStateNames[:], uint32(v), uint32(m), 0xff)
}

// formatCtMatch formats the conntrack fields of a match in match_format's
// order (they come before the Ethernet fields).
func formatCtMatch(put func(string, ...any), k *flow.Key, m *flow.Mask) {
	if m.CtState != 0 {
		put("ct_state=%s", formatCtState(k.CtState, m.CtState))
	}
	switch m.CtZone {
	case 0:
	case 0xffff:
		put("ct_zone=%d", k.CtZone)
	default:
		put("ct_zone=%#x/%#x", k.CtZone, m.CtZone)
	}
	switch m.CtMark {
	case 0:
	case ^uint32(0):
		put("ct_mark=%s", hex0(uint64(k.CtMark)))
	default:
		put("ct_mark=%s/%s", hex0(uint64(k.CtMark)), hex0(uint64(m.CtMark)))
	}
	if m.CtLabel != [16]byte{} {
		if m.CtLabel == [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff} {
			put("ct_label=%s", hex128(k.CtLabel))
		} else {
			put("ct_label=%s/%s", hex128(k.CtLabel), hex128(m.CtLabel))
		}
	}
	v6 := k.EthType == flow.EthTypeIPv6
	if v6 {
		putIPv6Net(put, "ct_ipv6_src", k.CtNwSrc, m.CtNwSrc)
		putIPv6Net(put, "ct_ipv6_dst", k.CtNwDst, m.CtNwDst)
	} else {
		putIPNet(put, "ct_nw_src", [4]byte(k.CtNwSrc[:4]), [4]byte(m.CtNwSrc[:4]))
		putIPNet(put, "ct_nw_dst", [4]byte(k.CtNwDst[:4]), [4]byte(m.CtNwDst[:4]))
	}
	if m.CtNwProto != 0 {
		put("ct_nw_proto=%d", k.CtNwProto)
	}
	for _, p := range []struct {
		name string
		v, m uint16
	}{{"ct_tp_src", k.CtTpSrc, m.CtTpSrc}, {"ct_tp_dst", k.CtTpDst, m.CtTpDst}} {
		switch p.m {
		case 0:
		case 0xffff:
			put("%s=%d", p.name, p.v)
		default:
			put("%s=%#x/%#x", p.name, p.v, p.m)
		}
	}
}

// hex0 is C's "%#x": 0 without a prefix.
func hex0(v uint64) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%#x", v)
}

// formatTunnel writes the tunnel fields m covers as OVS's
// format_flow_tunnel. A packet's flow (a mask with tun_ttl, which no
// OpenFlow match and no megaflow has) also shows the fields govs' key
// lacks, all zero in OVS's, as flow_format does.
func formatTunnel(put func(string, ...any), k *flow.Key, m *flow.Mask) {
	switch m.TunID {
	case 0:
	case ^uint64(0):
		put("tun_id=%s", hex0(k.TunID))
	default:
		put("tun_id=%s/%s", hex0(k.TunID), hex0(m.TunID))
	}
	s4, s4m, s6, s6m := ofp.TunAddrSplit(k.TunSrc, m.TunSrc, m.TunFlags&ofp.TunMaskSrc4 != 0, m.TunFlags&ofp.TunMaskSrc6 != 0)
	d4, d4m, d6, d6m := ofp.TunAddrSplit(k.TunDst, m.TunDst, m.TunFlags&ofp.TunMaskDst4 != 0, m.TunFlags&ofp.TunMaskDst6 != 0)
	packet := m.TunTTL != 0
	if packet {
		// flow_format: both versions' addresses, the other one 0.
		all4 := [4]byte{0xff, 0xff, 0xff, 0xff}
		all6 := [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		s4m, d4m, s6m, d6m = all4, all4, all6, all6
	}
	putIPNet(put, "tun_src", s4, s4m)
	putIPNet(put, "tun_dst", d4, d4m)
	putIPv6Net(put, "tun_ipv6_src", s6, s6m)
	putIPv6Net(put, "tun_ipv6_dst", d6, d6m)
	switch {
	case packet:
		put("tun_gbp_id=%d,tun_gbp_flags=%s", k.TunGBPID, hex0(uint64(k.TunGBPFlags)))
	case m.TunGBPID == 0xffff:
		put("tun_gbp_id=%d", k.TunGBPID)
	case m.TunGBPID != 0:
		put("tun_gbp_id=0x%x/0x%x", k.TunGBPID, m.TunGBPID)
	}
	if m.TunGBPFlags != 0 && !packet {
		// The value alone, whatever the mask, as OVS 3.1's.
		put("tun_gbp_flags=%s", hex0(uint64(k.TunGBPFlags)))
	}
	if m.TunTOS != 0 {
		put("tun_tos=%x", k.TunTOS)
	}
	if packet {
		put("tun_ttl=%d,tun_erspan_ver=0,gtpu_flags=0,gtpu_msgtype=0", k.TunTTL)
	}
	if m.TunFlags&tunFlagsAll != 0 {
		put("tun_flags=%s", formatTunFlags(k.TunFlags, m.TunFlags&tunFlagsAll))
	}
}

// tunFlagNames are the tunnel flags in the order of OVS's FLOW_TNL_F_*
// bits, which its formats follow.
var tunFlagNames = []struct {
	bit  uint16
	name string
}{{flow.TunFlagOAM, "oam"}, {flow.TunFlagDontFragment, "df"}, {flow.TunFlagCsum, "csum"}, {flow.TunFlagKey, "key"}}

const tunFlagsAll = flow.TunFlagOAM | flow.TunFlagDontFragment | flow.TunFlagCsum | flow.TunFlagKey

// formatTunFlags is OVS's format_flags_masked for tun_flags: "oam|key"
// under the whole mask, "+oam-df" under part of it.
func formatTunFlags(v, m uint16) string {
	var b strings.Builder
	if m == tunFlagsAll {
		for _, f := range tunFlagNames {
			if v&f.bit != 0 {
				if b.Len() > 0 {
					b.WriteByte('|')
				}
				b.WriteString(f.name)
			}
		}
		if b.Len() == 0 {
			return "0"
		}
		return b.String()
	}
	for _, f := range tunFlagNames {
		if m&f.bit != 0 {
			if v&f.bit != 0 {
				b.WriteByte('+')
			} else {
				b.WriteByte('-')
			}
			b.WriteString(f.name)
		}
	}
	return b.String()
}

// hex128 formats a 128-bit big-endian value as OVS's ovs_u128 hex: "0x"
// and the digits without leading zeros.
func hex128(b [16]byte) string {
	s := strings.TrimLeft(fmt.Sprintf("%x", b[:]), "0")
	if s == "" {
		s = "0"
	}
	return "0x" + s
}

// putIPNet is format_ip_netmask: a CIDR prefix when the mask is one.
func putIPNet(put func(string, ...any), name string, v, m [4]byte) {
	mv := binary.BigEndian.Uint32(m[:])
	switch {
	case mv == 0:
	case mv == ^uint32(0):
		put("%s=%s", name, netip.AddrFrom4(v))
	case bits.LeadingZeros32(^mv) == bits.OnesCount32(mv) && bits.TrailingZeros32(mv) == 32-bits.OnesCount32(mv):
		put("%s=%s/%d", name, netip.AddrFrom4(v), bits.OnesCount32(mv))
	default:
		put("%s=%s/%s", name, netip.AddrFrom4(v), netip.AddrFrom4(m))
	}
}

// putIPv6Net is format_ipv6_netmask.
func putIPv6Net(put func(string, ...any), name string, v, m [16]byte) {
	if m == [16]byte{} {
		return
	}
	ones, n := net.IPMask(m[:]).Size()
	switch {
	case ones == 128:
		put("%s=%s", name, netip.AddrFrom16(v))
	case n == 128:
		put("%s=%s/%d", name, netip.AddrFrom16(v), ones)
	default:
		put("%s=%s/%s", name, netip.AddrFrom16(v), netip.AddrFrom16(m))
	}
}

// packetMask is the mask OVS's flow_wildcards_init_for_packet gives a
// packet's flow: every field the packet has. ofproto/trace's "Flow:" line
// formats the flow with it.
func packetMask(k *flow.Key) flow.Mask {
	m := flow.Mask{InPort: ^uint32(0), VLANTCI: 0xffff, EthType: 0xffff,
		EthSrc: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, EthDst: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	if k.RecircID != 0 {
		m.RecircID = ^uint32(0)
	}
	// flow_wildcards_init_for_packet: a tunnel packet's outer header
	// (tun_id only with the key flag, which OpenFlow cannot set), else
	// a tun_id set.
	if k.HasTunnel() {
		m.TunSrc = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		m.TunDst, m.TunTOS, m.TunTTL, m.TunFlags = m.TunSrc, 0xff, 0xff, 0xffff
		m.TunGBPID, m.TunGBPFlags = 0xffff, 0xff
		if k.TunFlags&flow.TunFlagKey != 0 {
			m.TunID = ^uint64(0)
		}
	} else if k.TunID != 0 {
		m.TunID = ^uint64(0)
	}
	all4 := [4]byte{0xff, 0xff, 0xff, 0xff}
	switch k.EthType {
	case flow.EthTypeIPv4, flow.EthTypeIPv6:
		if k.EthType == flow.EthTypeIPv4 {
			m.IPv4Src, m.IPv4Dst = all4, all4
		} else {
			for i := range m.IPv6Src {
				m.IPv6Src[i], m.IPv6Dst[i] = 0xff, 0xff
			}
			m.IPv6Label = 0xfffff
		}
		m.NwProto, m.NwTOS, m.NwTTL, m.NwFrag = 0xff, 0xff, 0xff, flow.FragAny|flow.FragLater
		if k.NwFrag&flow.FragLater != 0 {
			break
		}
		switch k.NwProto {
		case flow.IPProtoTCP:
			m.TCPFlags = 0x0fff
			fallthrough
		case flow.IPProtoUDP, flow.IPProtoSCTP, flow.IPProtoICMP, flow.IPProtoIGMP, flow.IPProtoICMPv6:
			m.TpSrc, m.TpDst = 0xffff, 0xffff
		}
		if k.IsND() {
			m.NdTarget = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
			m.ArpSHA, m.ArpTHA = m.EthSrc, m.EthSrc
		}
	case flow.EthTypeARP, flow.EthTypeRARP:
		m.IPv4Src, m.IPv4Dst, m.NwProto = all4, all4, 0xff
		m.ArpSHA, m.ArpTHA = m.EthSrc, m.EthSrc
	}
	return m
}

// errFlowSyntax is ofproto/trace's error for a flow it cannot parse.
func errFlowSyntax(spec, format string, args ...any) error {
	return fmt.Errorf("Bad openflow flow syntax: %s: %s", spec, fmt.Sprintf(format, args...))
}

// parseFlow parses a flow in OpenFlow match syntax, as ofproto/trace takes
// it: "in_port=1,dl_src=..,dl_dst=..[,dl_vlan=..]" and the other fields
// and protocol shorthands a NORMAL bridge's flows show (ip, tcp, arp,
// nw_src, tp_dst, ...). Fields not given are zero. The input port, a
// number, a name or LOCAL, is returned as port resolves it: the bridge's
// port (nil for a number that is none) and its OpenFlow number. The
// tunnel fields (tun_id, tun_src, tun_dst, tun_tos, tun_ttl, tun_flags
// and tun_metadata0-63, the latter Geneve options through tlv, unmapped
// ones left out as OVS leaves them) are the packet's as received.
func parseFlow(spec string, tlv *ofp.TLVTable, port func(string) (*port, int, error)) (k flow.Key, in *port, ofport int, err error) {
	return parseFlowPrereqs(spec, tlv, port, true)
}

// parseFlowPrereqs is parseFlow, checking each field's prerequisites
// (OpenFlow syntax) or not (a datapath flow's match, whose tp_src may be
// UDP's).
func parseFlowPrereqs(spec string, tlv *ofp.TLVTable, port func(string) (*port, int, error), prereqs bool) (k flow.Key, in *port, ofport int, err error) {
	return parseFlowMeta(spec, tlv, port, prereqs, nil)
}

// flowMeta is the packet metadata an ofproto/trace flow may give beside
// its key: pkt_mark, dp_hash, skb_priority, the registers and metadata
// (the OpenFlow pipeline's, which a trace may start with, as OVS's).
type flowMeta struct {
	pktMark, dpHash uint32
	skbPriority     uint32
	regs            [16]uint32
	metadata        uint64
}

// traceUnsupported are fields OVS's trace takes that govs' datapath has
// no place for (MPLS, NSH, packet types other than Ethernet, ERSPAN,
// GTP-U): a flow that gives one is refused, not
// traced as if the field were absent.
func traceUnsupported(name string) bool {
	switch name {
	case "packet_type",
		"tun_erspan_idx", "tun_erspan_ver", "tun_erspan_dir", "tun_erspan_hwid", "tun_gtpu_flags", "tun_gtpu_msgtype",
		"mpls_label", "mpls_tc", "mpls_bos", "mpls_ttl",
		"nsh_flags", "nsh_mdtype", "nsh_np", "nsh_spi", "nsp", "nsh_si", "nsi", "nsh_ttl":
		return true
	}
	for _, p := range []string{"nsh_c", "nshc"} {
		if d, ok := strings.CutPrefix(name, p); ok && (d == "1" || d == "2" || d == "3" || d == "4") {
			return true
		}
	}
	return false
}

// regIndex returns the register a "reg<N>" (width 1), "xreg<N>" (2) or
// "xxreg<N>" (4) field starts at, and its width in registers.
func regIndex(name string) (first, width int, ok bool) {
	for _, r := range []struct {
		prefix string
		width  int
	}{{"xxreg", 4}, {"xreg", 2}, {"reg", 1}} {
		d, found := strings.CutPrefix(name, r.prefix)
		if !found {
			continue
		}
		n, err := strconv.Atoi(d)
		if err != nil || d == "" || len(d) > 1 && d[0] == '0' || n < 0 || n >= 16/r.width {
			return 0, 0, false
		}
		return n * r.width, r.width, true
	}
	return 0, 0, false
}

// traceMFNames are OVS's names (mf->name) of the fields parseFlowMeta
// knows by another, for its errors.
var traceMFNames = map[string]string{
	"tp_src": "tcp_src", "tp_dst": "tcp_dst", "dl_type": "eth_type", "dl_src": "eth_src", "dl_dst": "eth_dst",
	"nw_src": "ip_src", "nw_dst": "ip_dst", "nw_frag": "ip_frag",
}

// traceFieldSizes are the sizes in bytes of the integer fields (OVS's
// mf->n_bytes), which bound their values.
var traceFieldSizes = map[string]int{
	"dl_type": 2, "dl_vlan": 2, "vlan_vid": 2, "dl_vlan_pcp": 1, "vlan_pcp": 1, "vlan_tci": 2,
	"nw_proto": 1, "arp_op": 2, "nw_tos": 1, "ip_dscp": 1, "nw_ecn": 1, "nw_ttl": 1,
	"tp_src": 2, "tp_dst": 2, "udp_src": 2, "udp_dst": 2, "sctp_src": 2, "sctp_dst": 2,
	"icmp_type": 1, "icmp_code": 1, "icmpv6_type": 1, "icmpv6_code": 1, "nd_reserved": 4, "nd_options_type": 1,
	"ipv6_label": 4, "recirc_id": 4, "ct_zone": 2, "ct_mark": 4, "ct_nw_proto": 1, "ct_tp_src": 2, "ct_tp_dst": 2,
	"conj_id": 4, "metadata": 8, "skb_priority": 4, "pkt_mark": 4, "dp_hash": 4, "ct_label": 16,
}

// parseIntField parses a size-byte integer field's value as OVS's
// parse_int_string does (hexadecimal after 0x, any number of digits
// whose value fits; otherwise C's strtoull, which takes a sign and an
// octal 0), with mf_from_integer_string's errors; mf is the field's
// OVS name.
func parseIntField(mf, val string, size int) (*big.Int, error) {
	tooLarge := fmt.Errorf("value too large for %d-byte field %s", size, mf)
	badSyntax := fmt.Errorf("bad syntax for %s value", mf)
	v := new(big.Int)
	if h, ok := strings.CutPrefix(val, "0x"); ok || strings.HasPrefix(val, "0X") {
		if !ok {
			h = val[2:]
		}
		h = strings.TrimLeft(strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
				return -1
			}
			return r
		}, h), "0")
		if len(h) > 2*size {
			if _, ok := new(big.Int).SetString(h, 16); ok {
				return nil, tooLarge
			}
		}
		if h == "" {
			return v, nil
		}
		if _, ok := v.SetString(h, 16); !ok || strings.ContainsAny(h, "+-") {
			return nil, badSyntax
		}
		return v, nil
	}
	t := strings.TrimLeft(val, " \t\r\n")
	neg := strings.HasPrefix(t, "-")
	t = strings.TrimPrefix(strings.TrimPrefix(t, "-"), "+")
	base := 10
	if len(t) > 1 && t[0] == '0' {
		base = 8
	}
	if t == "" || strings.ContainsAny(t, "_+-") {
		return nil, badSyntax
	}
	u, err := strconv.ParseUint(t, base, 64)
	if errors.Is(err, strconv.ErrRange) {
		return nil, tooLarge
	} else if err != nil {
		return nil, badSyntax
	}
	if neg {
		u = -u // strtoull's negation
	}
	v.SetUint64(u)
	if v.BitLen() > size*8 {
		return nil, tooLarge
	}
	return v, nil
}

// parseUintField is parseIntField for a field of at most 8 bytes, by
// the name given (or its OVS name).
func parseUintField(name, val string, size int) (uint64, error) {
	mf := name
	if n, ok := traceMFNames[name]; ok {
		mf = n
	}
	v, err := parseIntField(mf, val, size)
	if err != nil {
		return 0, err
	}
	return v.Uint64(), nil
}

// traceTCPFlags are the TCP flags' names, bit 0 first.
var traceTCPFlags = []string{"fin", "syn", "rst", "psh", "ack", "urg", "ece", "cwr", "ns"}

// parseFlagNames parses tcp_flags or ct_state as OVS's parse_flags: a
// number or flag names joined by '|', only known flags.
func parseFlagNames(field, val string) (uint16, error) {
	names, all, bad := traceTCPFlags, uint64(0x0fff), fmt.Errorf("unknown TCP flag(s)")
	if field == "ct_state" {
		names, all, bad = ofp.CTStateNames[:], 0xff, fmt.Errorf("unknown ct_state flag(s)")
	}
	if v, err := parseIntField(field, val, 4); err == nil {
		if v.Uint64()&^all != 0 {
			return 0, bad
		}
		return uint16(v.Uint64()), nil
	}
	var f uint16
	for _, n := range strings.Split(val, "|") {
		if n == "" {
			continue
		}
		i := slices.Index(names, n)
		if i < 0 {
			return 0, bad
		}
		f |= 1 << i
	}
	return f, nil
}

// traceExactMask reports whether m is an all-ones mask for an address
// field: a prefix length of the whole address or the address of ones.
func traceExactMask(field, m string) bool {
	switch field {
	case "nw_src", "nw_dst", "arp_spa", "arp_tpa", "ct_nw_src", "ct_nw_dst", "tun_src", "tun_dst":
		return m == "32" || m == "255.255.255.255"
	case "ipv6_src", "ipv6_dst", "nd_target", "ct_ipv6_src", "ct_ipv6_dst", "tun_ipv6_src", "tun_ipv6_dst":
		a, err := netip.ParseAddr(m)
		return m == "128" || err == nil && a.Is6() && a.As16() == [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	case "dl_src", "dl_dst", "arp_sha", "arp_tha", "nd_sll", "nd_tll":
		hw, err := net.ParseMAC(m)
		return err == nil && len(hw) == 6 && [6]byte(hw) == [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	return false
}

// traceMFName is OVS's name of a field parseFlowMeta knows by name.
func traceMFName(name string) string {
	if n, ok := traceMFNames[name]; ok {
		return n
	}
	return name
}

// ofKeyValues splits a flow into its keys and values as OVS's
// ofputil_parse_key_value: pairs separated by commas or white space,
// "key=value", "key:value" or "key(value)" (a value may hold
// parenthesized delimiters), or a key alone with an empty value.
func ofKeyValues(s string) [][2]string {
	var kvs [][2]string
	for {
		s = strings.TrimLeft(s, ", \t\r\n")
		if s == "" {
			return kvs
		}
		n := strings.IndexAny(s, ":=(, \t\r\n")
		if n < 0 {
			return append(kvs, [2]string{s, ""})
		}
		key, delim := s[:n], s[n]
		s = s[n+1:]
		var delims string
		switch delim {
		case ':', '=':
			delims = ", \t\r\n"
		case '(':
			delims = ")"
		default:
			kvs = append(kvs, [2]string{key, ""})
			continue
		}
		i := 0
		for i < len(s) && !strings.ContainsRune(delims, rune(s[i])) {
			if s[i] == '(' {
				level := 0
				for {
					if i == len(s) {
						break
					}
					if s[i] == '(' {
						level++
					} else if s[i] == ')' {
						level--
					}
					i++
					if level <= 0 {
						break
					}
				}
			} else {
				i++
			}
		}
		kvs = append(kvs, [2]string{key, s[:i]})
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
}

// parseFlowMeta is parseFlowPrereqs that takes the packet metadata
// (pkt_mark, dp_hash, skb_priority, reg<N>, xreg<N>, xxreg<N>, metadata)
// into md when md is not nil (unknown fields otherwise). As OVS's
// parse_ofp_exact_flow, a field may be given once, unless it was zero.
func parseFlowMeta(spec string, tlv *ofp.TLVTable, port func(string) (*port, int, error), prereqs bool, md *flowMeta) (k flow.Key, in *port, ofport int, err error) {
	tunSet := map[string]bool{}
	var tunMD map[int][]byte
	// OVS's ct_nw_* and ct_ipv6_* are fields of their own; the key holds
	// those of the packet's IP version, once the flow is parsed.
	ctNw := map[string]netip.Addr{}
	for _, kv := range ofKeyValues(spec) {
		name, val := kv[0], kv[1]
		if sh, ok := ofp.Protocols[name]; ok {
			if k.EthType != 0 {
				return k, nil, 0, errFlowSyntax(spec, "Ethernet type set multiple times")
			}
			if sh.EthType == ofp.EthTypeMPLS || sh.EthType == ofp.EthTypeMPLSMcast {
				return k, nil, 0, errFlowSyntax(spec, "%s: govs does not support MPLS", name)
			}
			k.EthType = sh.EthType
			if sh.NwProto != 0 {
				if k.NwProto != 0 {
					return k, nil, 0, errFlowSyntax(spec, "network protocol set multiple times")
				}
				k.NwProto = sh.NwProto
			}
			continue
		}
		// The name parseFlowMeta knows a field by: OVS's other name of
		// it, if this one is not (ofptext's table of OVS's aliases), and
		// in_port for OXM's in_port.
		canon := name
		if name == "in_port_oxm" {
			canon = "in_port"
		} else if other := ofptext.FieldAlias(name); other != "" && !traceFieldKnown(name, true) {
			canon = other
		}
		if !traceFieldKnown(canon, md != nil) {
			return k, nil, 0, errFlowSyntax(spec, "unknown field %s", name)
		}
		bad := func(err error) error {
			return errFlowSyntax(spec, "bad value for %s (%s: %v)", name, val, err)
		}
		if prereqs && !traceFieldPrereqsOK(canon, &k) {
			return k, nil, 0, errFlowSyntax(spec, "prerequisites not met for setting %s", name)
		}
		if traceUnsupported(canon) {
			return k, nil, 0, errFlowSyntax(spec, "field %s: govs does not support it", name)
		}
		if a, ok := ctNw[canon]; traceFieldIsSet(canon, &k, ofport, md) || ok && !a.IsUnspecified() {
			return k, nil, 0, errFlowSyntax(spec, "field %s set multiple times", name)
		}
		wild := errFlowSyntax(spec, "bad value for %s (%s: wildcards not allowed here)", name, val)
		if size, ok := traceFieldSizes[canon]; ok || strings.Contains(canon, "reg") {
			// An integer and its mask, if any, which must be all ones.
			if _, width, ok := regIndex(canon); ok {
				size = width * 4
			}
			v, m, masked := strings.Cut(val, "/")
			if _, err := parseIntField(traceMFName(canon), v, size); err != nil {
				return k, nil, 0, bad(err)
			}
			if masked {
				mv, err := parseIntField(traceMFName(canon), m, size)
				if err != nil {
					return k, nil, 0, bad(errors.New(strings.Replace(strings.Replace(err.Error(), " value", " mask", 1), "value too", "mask too", 1)))
				}
				if mv.BitLen() != size*8 || mv.TrailingZeroBits() != 0 || mv.Cmp(new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(size*8)), big.NewInt(1))) != 0 {
					return k, nil, 0, wild
				}
				val = v
			}
		} else if v, m, masked := strings.Cut(val, "/"); masked {
			// An address with an exact mask is the address, as OVS's
			// ip_parse_masked, ipv6_parse_masked and the Ethernet
			// parser take it; any other mask is a wildcard.
			if !traceExactMask(canon, m) {
				return k, nil, 0, wild
			}
			val = v
		}
		if canon == "ct_state" || canon == "tcp_flags" {
			// Masked flags: known names after + or -.
			if strings.ContainsAny(val, "+-") {
				// OVS's parse_flags names the flag it does not know.
				for _, f := range strings.FieldsFunc(val, func(r rune) bool { return r == '+' || r == '-' }) {
					if _, err := parseFlagNames(canon, f); err != nil {
						return k, nil, 0, errFlowSyntax(spec, "bad value for %s (%s: %v)", name, f, err)
					}
				}
				return k, nil, 0, wild
			}
		}
		if canon == "nw_frag" && (strings.EqualFold(val, "yes") || strings.EqualFold(val, "not_later")) {
			// mf_from_frag_string's masks for these leave bits out.
			return k, nil, 0, wild
		}
		if first, width, ok := regIndex(canon); ok && md != nil {
			v, err := parseIntField(canon, val, width*4)
			if err != nil {
				return k, nil, 0, bad(err)
			}
			// The first register holds the most significant bits.
			for i := first + width - 1; i >= first; i-- {
				md.regs[i] = uint32(v.Uint64())
				v.Rsh(v, 32)
			}
			continue
		}
		// The integer fields' values, as OVS's mf_from_integer_string.
		var num uint64
		if size, ok := traceFieldSizes[canon]; ok && size <= 8 {
			if num, err = parseUintField(canon, val, size); err != nil {
				return k, nil, 0, bad(err)
			}
		}
		switch canon {
		case "in_port":
			in, ofport, err = port(val)
			if err != nil {
				// OpenFlow 1.0's 16-bit port says so; OXM's 32-bit one
				// as OVS's mf_from_ofp_port_string32.
				if name == "in_port" {
					return k, nil, 0, errFlowSyntax(spec, "bad value for %s (%s: invalid or unknown port for %s)", name, val, name)
				}
				return k, nil, 0, errFlowSyntax(spec, "bad value for %s (%s: port value out of range for %s)", name, val, name)
			}
			if in != nil {
				k.InPort = in.dpPort
			}
		case "actset_output":
			// The action set's output is the pipeline's, empty when a
			// packet enters it: OVS takes the field and drops it.
			if _, _, err = port(val); err != nil {
				return k, nil, 0, errFlowSyntax(spec, "bad value for %s (%s: port value out of range for %s)", name, val, name)
			}
		case "conj_id":
			// As actset_output: a lookup's, not the packet's.
		case "metadata":
			md.metadata = num
		case "skb_priority":
			md.skbPriority = uint32(num)
		case "ct_label":
			var v *big.Int
			if v, err = parseIntField(canon, val, 16); err == nil {
				k.CtLabel = [16]byte{}
				v.FillBytes(k.CtLabel[:])
			}
		case "ct_nw_proto":
			k.CtNwProto = uint8(num)
		case "ct_tp_src":
			k.CtTpSrc = uint16(num)
		case "ct_tp_dst":
			k.CtTpDst = uint16(num)
		case "ct_nw_src", "ct_nw_dst", "ct_ipv6_src", "ct_ipv6_dst":
			var a netip.Addr
			if a, err = netip.ParseAddr(val); err == nil && a.Is6() == strings.HasPrefix(canon, "ct_ipv6") {
				ctNw[canon] = a
			} else if err == nil {
				err = fmt.Errorf("invalid IP address")
			}
		case "dl_src", "dl_dst", "arp_sha", "arp_tha", "nd_sll", "nd_tll":
			var hw net.HardwareAddr
			if hw, err = net.ParseMAC(val); err != nil || len(hw) != 6 {
				err = fmt.Errorf("invalid Ethernet address")
			} else {
				dst := map[string]*[6]byte{"dl_src": &k.EthSrc, "dl_dst": &k.EthDst,
					"arp_sha": &k.ArpSHA, "arp_tha": &k.ArpTHA, "nd_sll": &k.ArpSHA, "nd_tll": &k.ArpTHA}[canon]
				*dst = [6]byte(hw)
			}
		case "dl_type":
			k.EthType = uint16(num)
		case "dl_vlan":
			// OVS's flow_set_dl_vlan: 0xffff is no tag, other values'
			// VID bits a tag's.
			if num == 0xffff {
				k.VLANTCI, k.VLANTPID = 0, 0
			} else {
				k.VLANTCI = k.VLANTCI&^flow.VLANVIDMask | uint16(num)&flow.VLANVIDMask | flow.VLANPresent
				k.VLANTPID = flow.EthTypeVLAN
			}
		case "vlan_vid":
			// OXM's: the VID with OFPVID_PRESENT, the tag's CFI bit.
			k.VLANTCI = k.VLANTCI&^(flow.VLANVIDMask|flow.VLANPresent) | uint16(num)&(flow.VLANVIDMask|flow.VLANPresent)
			k.VLANTPID = 0
			if k.HasVLAN() {
				k.VLANTPID = flow.EthTypeVLAN
			}
		case "dl_vlan_pcp", "vlan_pcp":
			// flow_set_vlan_pcp: the low 3 bits, in a tag.
			k.VLANTCI = k.VLANTCI&^flow.VLANPCPMask | uint16(num&7)<<13 | flow.VLANPresent
			k.VLANTPID = flow.EthTypeVLAN
		case "vlan_tci":
			k.VLANTCI = uint16(num)
			k.VLANTPID = 0
			if k.HasVLAN() {
				k.VLANTPID = flow.EthTypeVLAN
			}
		case "nw_src", "nw_dst", "arp_spa", "arp_tpa":
			var a netip.Addr
			if a, err = netip.ParseAddr(val); err == nil && a.Is4() {
				if canon == "nw_src" || canon == "arp_spa" {
					k.IPv4Src = a.As4()
				} else {
					k.IPv4Dst = a.As4()
				}
			} else {
				err = fmt.Errorf("invalid IP address")
			}
		case "ipv6_src", "ipv6_dst", "nd_target":
			var a netip.Addr
			if a, err = netip.ParseAddr(val); err == nil && a.Is6() {
				switch canon {
				case "ipv6_src":
					k.IPv6Src = a.As16()
				case "ipv6_dst":
					k.IPv6Dst = a.As16()
				default:
					k.NdTarget = a.As16()
				}
			} else {
				err = fmt.Errorf("invalid IPv6 address")
			}
		case "ipv6_label":
			k.IPv6Label = uint32(num) & 0xfffff
		case "nw_proto", "arp_op":
			// arp_op's 16 bits in the flow's 8 (OVS's nw_proto).
			k.NwProto = uint8(num)
		case "nw_tos", "nw_ecn", "nw_ttl", "ip_dscp":
			v := num
			{
				switch canon {
				case "nw_tos":
					k.NwTOS = k.NwTOS&0x03 | uint8(v)&0xfc
				case "ip_dscp":
					// OVS's mf_set_flow_value: the value shifted into
					// place, bits past the byte lost.
					k.NwTOS = k.NwTOS&0x03 | uint8(v<<2)
				case "nw_ecn":
					k.NwTOS = k.NwTOS&0xfc | uint8(v)&0x03
				default:
					k.NwTTL = uint8(v)
				}
			}
		case "nw_frag":
			switch strings.ToLower(val) {
			case "no", "not_later":
				k.NwFrag = 0
			case "yes", "first":
				k.NwFrag = flow.FragAny
			case "later":
				k.NwFrag = flow.FragAny | flow.FragLater
			default:
				err = fmt.Errorf(`unknown fragment type (valid types are "no", "yes", "first", "later", "not_later"`)
			}
		case "tp_src", "tp_dst", "udp_src", "udp_dst", "sctp_src", "sctp_dst", "icmp_type", "icmp_code", "icmpv6_type", "icmpv6_code":
			if strings.HasSuffix(canon, "src") || strings.HasSuffix(canon, "_type") {
				k.TpSrc = uint16(num)
			} else {
				k.TpDst = uint16(num)
			}
		case "nd_reserved":
			k.NdReserved = uint32(num)
		case "nd_options_type":
			k.NdOptionsType = uint8(num)
		case "tcp_flags":
			k.TCPFlags, err = parseFlagNames(canon, val)
		case "recirc_id":
			k.RecircID = uint32(num)
		case "ct_zone":
			k.CtZone = uint16(num)
		case "ct_mark":
			k.CtMark = uint32(num)
		case "ct_state":
			var v uint16
			v, err = parseFlagNames(canon, val)
			k.CtState = uint8(v)
		case "pkt_mark":
			md.pktMark = uint32(num)
		case "dp_hash":
			md.dpHash = uint32(num)
		default:
			if tunSet[canon] {
				return k, nil, 0, errFlowSyntax(spec, "field %s set multiple times", name)
			}
			tunSet[canon] = true
			if idx, ok := tunMDIndex(canon); ok {
				var v []byte
				if v, err = parseTunMDValue(name, val); err == nil {
					if tunMD == nil {
						tunMD = map[int][]byte{}
					}
					tunMD[idx] = v
				}
			} else {
				err = parseTunField(&k, name, val)
			}
		}
		if err != nil {
			return k, nil, 0, bad(err)
		}
	}
	if v6, v4 := k.EthType == flow.EthTypeIPv6, k.EthType == flow.EthTypeIPv4; v4 || v6 {
		src, dst := "ct_nw_src", "ct_nw_dst"
		if v6 {
			src, dst = "ct_ipv6_src", "ct_ipv6_dst"
		}
		for name, to := range map[string]*[16]byte{src: &k.CtNwSrc, dst: &k.CtNwDst} {
			if a, ok := ctNw[name]; ok {
				*to = [16]byte{}
				copy(to[:], a.AsSlice())
			}
		}
	}
	if tunMD != nil {
		opts := ofp.TunMDOptsFromValues(tlv, tunMD)
		if len(opts) > flow.TunOptsMax {
			// The datapath key holds no more (tnl_pop drops such packets).
			return k, nil, 0, errFlowSyntax(spec, "tun_metadata needs %d bytes of Geneve options, more than the %d a packet may carry", len(opts), flow.TunOptsMax)
		}
		k.TunOptsLen = uint8(copy(k.TunOpts[:], opts))
	}
	return k, in, ofport, nil
}

// traceFieldKnown reports whether name (not an alias) is a field OVS's
// mf_from_name knows; the packet metadata only with meta.
func traceFieldKnown(name string, meta bool) bool {
	switch name {
	case "in_port", "actset_output", "conj_id", "dl_src", "dl_dst", "dl_type", "dl_vlan", "vlan_vid", "dl_vlan_pcp",
		"vlan_pcp", "vlan_tci", "nw_src", "nw_dst", "arp_spa", "arp_tpa", "arp_sha", "arp_tha", "arp_op",
		"ipv6_src", "ipv6_dst", "ipv6_label", "nd_target", "nd_sll", "nd_tll", "nd_reserved", "nd_options_type",
		"nw_proto", "nw_tos", "ip_dscp", "nw_ecn", "nw_ttl", "nw_frag", "tp_src", "tp_dst", "tcp_flags",
		"udp_src", "udp_dst", "sctp_src", "sctp_dst", "icmp_type", "icmp_code", "icmpv6_type", "icmpv6_code",
		"recirc_id", "ct_state", "ct_zone", "ct_mark", "ct_label", "ct_nw_proto", "ct_nw_src", "ct_nw_dst",
		"ct_ipv6_src", "ct_ipv6_dst", "ct_tp_src", "ct_tp_dst":
		return true
	case "pkt_mark", "dp_hash", "skb_priority", "metadata":
		return meta
	}
	if _, _, ok := regIndex(name); ok {
		return meta
	}
	return isTunField(name) || traceUnsupported(name)
}

// traceFieldIsSet is OVS's mf_is_set for the flow parsed so far: whether
// field name has a value other than zero.
func traceFieldIsSet(name string, k *flow.Key, ofport int, md *flowMeta) bool {
	if first, width, ok := regIndex(name); ok {
		return md != nil && slices.ContainsFunc(md.regs[first:first+width], func(r uint32) bool { return r != 0 })
	}
	switch name {
	case "in_port":
		return ofport != 0
	case "dl_src":
		return k.EthSrc != [6]byte{}
	case "dl_dst":
		return k.EthDst != [6]byte{}
	case "dl_type":
		return k.EthType != 0
	case "dl_vlan", "vlan_vid":
		return k.VLANTCI&flow.VLANVIDMask != 0 || name == "vlan_vid" && k.VLANTCI&flow.VLANPresent != 0
	case "dl_vlan_pcp", "vlan_pcp":
		return k.VLANTCI&flow.VLANPCPMask != 0
	case "vlan_tci":
		return k.VLANTCI != 0
	case "nw_src", "arp_spa":
		return k.IPv4Src != [4]byte{}
	case "nw_dst", "arp_tpa":
		return k.IPv4Dst != [4]byte{}
	case "arp_sha", "nd_sll":
		return k.ArpSHA != [6]byte{}
	case "arp_tha", "nd_tll":
		return k.ArpTHA != [6]byte{}
	case "nw_proto", "arp_op":
		return k.NwProto != 0
	case "ipv6_src":
		return k.IPv6Src != [16]byte{}
	case "ipv6_dst":
		return k.IPv6Dst != [16]byte{}
	case "nd_target":
		return k.NdTarget != [16]byte{}
	case "ipv6_label":
		return k.IPv6Label != 0
	case "nw_tos", "ip_dscp":
		return k.NwTOS&0xfc != 0
	case "nw_ecn":
		return k.NwTOS&0x03 != 0
	case "nw_ttl":
		return k.NwTTL != 0
	case "nw_frag":
		return k.NwFrag != 0
	case "tp_src", "udp_src", "sctp_src", "icmp_type", "icmpv6_type":
		return k.TpSrc != 0
	case "tp_dst", "udp_dst", "sctp_dst", "icmp_code", "icmpv6_code":
		return k.TpDst != 0
	case "tcp_flags":
		return k.TCPFlags != 0
	case "nd_reserved":
		return k.NdReserved != 0
	case "nd_options_type":
		return k.NdOptionsType != 0
	case "recirc_id":
		return k.RecircID != 0
	case "ct_state":
		return k.CtState != 0
	case "ct_zone":
		return k.CtZone != 0
	case "ct_mark":
		return k.CtMark != 0
	case "ct_label":
		return k.CtLabel != [16]byte{}
	case "ct_nw_proto":
		return k.CtNwProto != 0
	case "ct_tp_src":
		return k.CtTpSrc != 0
	case "ct_tp_dst":
		return k.CtTpDst != 0
	case "pkt_mark":
		return md != nil && md.pktMark != 0
	case "dp_hash":
		return md != nil && md.dpHash != 0
	case "skb_priority":
		return md != nil && md.skbPriority != 0
	case "metadata":
		return md != nil && md.metadata != 0
	}
	return false
}

// traceFieldPrereqsOK reports whether the flow k parsed so far meets the
// prerequisites of field name (OVS's mf_are_prereqs_ok, which
// parse_ofp_exact_flow checks field by field, in the order given): an IP
// field needs an IP type before it, a TCP port tcp (tp_src and tp_dst are
// tcp_src's and tcp_dst's other names), and so on.
func traceFieldPrereqsOK(name string, k *flow.Key) bool {
	ip4, ip6 := k.EthType == flow.EthTypeIPv4, k.EthType == flow.EthTypeIPv6
	ip := ip4 || ip6
	nd := ip6 && k.NwProto == flow.IPProtoICMPv6 && (k.TpSrc == 135 || k.TpSrc == 136)
	switch name {
	case "nw_src", "nw_dst":
		return ip4
	case "arp_spa", "arp_tpa", "arp_sha", "arp_tha", "arp_op":
		return k.EthType == flow.EthTypeARP || k.EthType == flow.EthTypeRARP
	case "ipv6_src", "ipv6_dst", "ipv6_label":
		return ip6
	case "nw_proto", "ip_proto", "nw_tos", "nw_ecn", "nw_ttl", "nw_frag", "ip_frag":
		return ip
	case "tp_src", "tp_dst", "tcp_src", "tcp_dst", "tcp_flags":
		return ip && k.NwProto == flow.IPProtoTCP && k.NwFrag&flow.FragLater == 0
	case "udp_src", "udp_dst":
		return ip && k.NwProto == flow.IPProtoUDP && k.NwFrag&flow.FragLater == 0
	case "sctp_src", "sctp_dst":
		return ip && k.NwProto == flow.IPProtoSCTP && k.NwFrag&flow.FragLater == 0
	case "ip_dscp":
		return ip
	case "dl_vlan_pcp", "vlan_pcp":
		// OpenFlow 1.0's dl_vlan_pcp needs Ethernet; OXM's vlan_pcp a tag.
		return name == "dl_vlan_pcp" || k.VLANTCI&flow.VLANPresent != 0
	case "ct_nw_proto", "ct_tp_src", "ct_tp_dst", "ct_nw_src", "ct_nw_dst", "ct_ipv6_src", "ct_ipv6_dst":
		// OVS's is_ct_valid for a packet: new, est or rpl.
		return k.CtState&(ofp.CtNew|ofp.CtEst|ofp.CtRpl) != 0
	case "mpls_label", "mpls_tc", "mpls_bos", "mpls_ttl":
		return k.EthType == 0x8847 || k.EthType == 0x8848
	case "nsh_flags", "nsh_mdtype", "nsh_np", "nsh_spi", "nsp", "nsh_si", "nsi", "nsh_ttl",
		"nsh_c1", "nsh_c2", "nsh_c3", "nsh_c4", "nshc1", "nshc2", "nshc3", "nshc4":
		return k.EthType == 0x894f
	case "icmp_type", "icmp_code":
		return ip4 && k.NwProto == flow.IPProtoICMP
	case "icmpv6_type", "icmpv6_code":
		return ip6 && k.NwProto == flow.IPProtoICMPv6
	case "nd_target", "nd_reserved", "nd_options_type":
		return nd
	case "nd_sll":
		return nd && k.TpSrc == 135
	case "nd_tll":
		return nd && k.TpSrc == 136
	}
	return true
}

// isTunField reports whether name is one of the tunnel fields parseFlow
// takes.
func isTunField(name string) bool {
	switch name {
	case "tun_id", "tunnel_id", "tun_src", "tun_dst", "tun_ipv6_src", "tun_ipv6_dst", "tun_tos", "tun_ttl", "tun_flags",
		"tun_gbp_id", "tun_gbp_flags":
		return true
	}
	_, ok := tunMDIndex(name)
	return ok
}

// tunMDIndex returns n for "tun_metadata<n>", n in 0-63.
func tunMDIndex(name string) (int, bool) {
	d, ok := strings.CutPrefix(name, "tun_metadata")
	if !ok || d == "" || len(d) > 1 && d[0] == '0' {
		return 0, false
	}
	n, err := strconv.Atoi(d)
	return n, err == nil && n >= 0 && n < ofp.TLVMaxFields
}

// parseTunMDValue parses a tun_metadata value (a number, hexadecimal
// with 0x) into its big-endian bytes, at most 124 of them.
func parseTunMDValue(name, val string) ([]byte, error) {
	v, ok := new(big.Int).SetString(val, 0)
	if !ok || v.Sign() < 0 {
		return nil, fmt.Errorf("bad syntax for %s value", name)
	}
	if v.BitLen() > ofp.TLVMaxOptLen*8 {
		return nil, fmt.Errorf("value too large for %d-byte field %s", ofp.TLVMaxOptLen, name)
	}
	return v.Bytes(), nil
}

// parseTunField sets tunnel field name of k to val. OpenFlow shows only
// the OAM flag of tun_flags. The key has one address for tun_src and
// tun_ipv6_src (and one for the destinations): 0.0.0.0 or :: leaves the
// other version's alone.
func parseTunField(k *flow.Key, name, val string) error {
	switch name {
	case "tun_src", "tun_dst", "tun_ipv6_src", "tun_ipv6_dst":
		a, err := netip.ParseAddr(val)
		v6 := strings.HasPrefix(name, "tun_ipv6_")
		if v6 && (err != nil || !a.Is6()) {
			return fmt.Errorf("invalid IPv6 address")
		} else if !v6 && (err != nil || !a.Is4()) {
			return fmt.Errorf("invalid IP address")
		}
		p := &k.TunSrc
		if strings.HasSuffix(name, "_dst") {
			p = &k.TunDst
		}
		switch {
		case !a.IsUnspecified():
			*p = a.As16()
		case v6 == ofp.TunAddrV4(p):
			// 0.0.0.0 of an IPv6 address, :: of an IPv4 one.
		default:
			*p = [16]byte{}
		}
	case "tun_flags":
		if strings.ContainsAny(val, "+-") {
			return fmt.Errorf("wildcards not allowed here")
		}
		k.TunFlags = 0
		if val == "oam" {
			k.TunFlags = flow.TunFlagOAM
		} else if v, err := strconv.ParseUint(val, 0, 16); err != nil || v > 1 {
			return fmt.Errorf("unknown tunnel flag(s)")
		} else if v == 1 {
			k.TunFlags = flow.TunFlagOAM
		}
	default:
		size := map[string]int{"tun_id": 8, "tunnel_id": 8, "tun_tos": 1, "tun_ttl": 1, "tun_gbp_id": 2, "tun_gbp_flags": 1}[name]
		v, err := strconv.ParseUint(val, 0, size*8)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return fmt.Errorf("value too large for %d-byte field %s", size, name)
			}
			return err
		}
		switch name {
		case "tun_tos":
			k.TunTOS = uint8(v)
		case "tun_ttl":
			k.TunTTL = uint8(v)
		case "tun_gbp_id":
			k.TunGBPID = uint16(v)
		case "tun_gbp_flags":
			k.TunGBPFlags = uint8(v)
		default:
			k.TunID = v
		}
	}
	return nil
}
