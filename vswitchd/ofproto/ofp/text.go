package ofp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"strconv"
	"strings"

	"github.com/govs/govs/datapath/flow"
)

// The text form of actions as OVS 3.1 prints them (ofpacts_format in
// lib/ofp-actions.c, mf_format and mf_format_subfield in
// lib/meta-flow.c, ofputil_format_port in lib/ofp-port.c): one printer
// for govs' ovs-ofctl, ofproto/trace, bridge/dump-flows and the logs.

// PortNames maps port numbers to names for --names (nil: numbers).
type PortNames map[uint32]string

// reservedPorts are OpenFlow's named ports (ofputil_port_to_string).
var reservedPorts = []struct {
	no   uint32
	name string
}{{PortInPort, "IN_PORT"}, {0xfffffff9, "TABLE"}, {PortNormal, "NORMAL"}, {PortFlood, "FLOOD"},
	{PortAll, "ALL"}, {PortController, "CONTROLLER"}, {PortLocal, "LOCAL"}, {PortAny, "ANY"},
	{0xfffffff7, "UNSET"}}

// Port formats a port number as ofputil_format_port: a reserved name, a
// port's name with --names (quoted when it is not a plain word), else
// the number.
func (pn PortNames) Port(p uint32) string {
	for _, r := range reservedPorts {
		if r.no == p {
			return r.name
		}
	}
	if p >= PortMax && p < 0xfffffff7 {
		// OVS holds ports in 16 bits: OpenFlow 1.1's unassigned
		// reserved numbers are OpenFlow 1.0's (ofputil_port_from_ofp11).
		p -= 0xffff0000
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

// nxmNames are OVS's NXM/OXM names of the fields, as move, load and
// output_reg show them (mf_format_subfield).
var nxmNames = map[string]string{
	"in_port": "NXM_OF_IN_PORT", "eth_dst": "NXM_OF_ETH_DST", "eth_src": "NXM_OF_ETH_SRC", "eth_type": "NXM_OF_ETH_TYPE",
	"vlan_tci": "NXM_OF_VLAN_TCI", "nw_tos": "NXM_OF_IP_TOS", "ip_proto": "NXM_OF_IP_PROTO", "ip_src": "NXM_OF_IP_SRC",
	"ip_dst": "NXM_OF_IP_DST", "tcp_src": "NXM_OF_TCP_SRC", "tcp_dst": "NXM_OF_TCP_DST", "udp_src": "NXM_OF_UDP_SRC",
	"udp_dst": "NXM_OF_UDP_DST", "icmp_type": "NXM_OF_ICMP_TYPE", "icmp_code": "NXM_OF_ICMP_CODE", "arp_op": "NXM_OF_ARP_OP",
	"arp_spa": "NXM_OF_ARP_SPA", "arp_tpa": "NXM_OF_ARP_TPA", "arp_sha": "NXM_NX_ARP_SHA", "arp_tha": "NXM_NX_ARP_THA",
	"ipv6_src": "NXM_NX_IPV6_SRC", "ipv6_dst": "NXM_NX_IPV6_DST", "ipv6_label": "NXM_NX_IPV6_LABEL",
	"nd_target": "NXM_NX_ND_TARGET", "nd_sll": "NXM_NX_ND_SLL", "nd_tll": "NXM_NX_ND_TLL",
	"icmpv6_type": "NXM_NX_ICMPV6_TYPE", "icmpv6_code": "NXM_NX_ICMPV6_CODE", "ip_ecn": "NXM_NX_IP_ECN",
	"nw_ttl": "NXM_NX_IP_TTL", "ip_frag": "NXM_NX_IP_FRAG", "tcp_flags": "NXM_NX_TCP_FLAGS", "tun_id": "NXM_NX_TUN_ID",
	"tun_src": "NXM_NX_TUN_IPV4_SRC", "tun_dst": "NXM_NX_TUN_IPV4_DST", "tun_flags": "NXM_NX_TUN_FLAGS",
	"tun_ipv6_src": "NXM_NX_TUN_IPV6_SRC", "tun_ipv6_dst": "NXM_NX_TUN_IPV6_DST",
	"tun_gbp_id": "NXM_NX_TUN_GBP_ID", "tun_gbp_flags": "NXM_NX_TUN_GBP_FLAGS",
	"pkt_mark": "NXM_NX_PKT_MARK", "dp_hash": "NXM_NX_DP_HASH", "recirc_id": "NXM_NX_RECIRC_ID", "conj_id": "NXM_NX_CONJ_ID", "ct_state": "NXM_NX_CT_STATE", "ct_zone": "NXM_NX_CT_ZONE",
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

// FormatRef formats a field's bit range as mf_format_subfield.
func FormatRef(r FieldRef) string {
	name := nxmNames[r.Field.Name]
	if idx := TunMetadataIndex(r.Field); idx >= 0 {
		name = "NXM_NX_TUN_METADATA" + itoa(idx)
	}
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

// FormatFieldValue formats a field's value (and mask unless full) as mf_format.
func FormatFieldValue(fd *Field, value, mask []byte, pn PortNames) string {
	if mask == nil {
		mask = bytes.Repeat([]byte{0xff}, len(value))
	}
	full := true
	for _, c := range mask {
		full = full && c == 0xff
	}
	switch fd.Name {
	case "eth_src", "eth_dst", "arp_sha", "arp_tha", "nd_sll", "nd_tll":
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
	case "ipv6_src", "ipv6_dst", "ct_ipv6_src", "ct_ipv6_dst", "tun_ipv6_src", "tun_ipv6_dst", "nd_target":
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
		return pn.Port(p)
	case "vlan_vid", "vlan_pcp", "ip_proto", "nw_tos", "ip_dscp", "ip_ecn", "nw_ttl", "tcp_src", "tcp_dst", "udp_src",
		"udp_dst", "sctp_src", "sctp_dst", "icmp_type", "icmp_code", "icmpv6_type", "icmpv6_code", "arp_op", "ct_zone",
		"ct_nw_proto", "ct_tp_src", "ct_tp_dst", "conj_id", "tun_gbp_id":
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

// legacyNames are the OpenFlow 1.0 and 1.1 mod_* actions' names.
var legacyNames = map[string]string{"eth_src": "mod_dl_src", "eth_dst": "mod_dl_dst", "ip_src": "mod_nw_src",
	"ip_dst": "mod_nw_dst", "nw_tos": "mod_nw_tos", "tcp_src": "mod_tp_src", "tcp_dst": "mod_tp_dst",
	"udp_src": "mod_tp_src", "udp_dst": "mod_tp_dst", "nw_ttl": "mod_nw_ttl", "ip_ecn": "mod_nw_ecn"}

// pinReasons are the packet-in reasons' names.
var pinReasons = []string{"no_match", "action", "invalid_ttl", "action_set", "group", "packet_out"}

// FormatActions formats acts as ofpacts_format ("drop" for none).
func FormatActions(acts []Action, v Version, pn PortNames) string {
	if len(acts) == 0 {
		return "drop"
	}
	parts := make([]string, 0, len(acts))
	for i := range acts {
		parts = append(parts, FormatAction(&acts[i], v, pn))
	}
	return strings.Join(parts, ",")
}

// FormatAction formats one action as ofpact_format. v is the version it
// was decoded from (OpenFlow 1.0 shows pop_vlan as strip_vlan); pn names
// ports (nil: numbers).
func FormatAction(a *Action, v Version, pn PortNames) string {
	switch a.Type {
	case ActOutput:
		if a.Port >= PortMax {
			return pn.Port(a.Port)
		}
		return "output:" + pn.Port(a.Port)
	case ActOutputReg:
		return "output:" + FormatRef(a.Src)
	case ActOutputTrunc:
		return "output(port=" + pn.Port(a.Port) + ",max_len=" + strconv.FormatUint(uint64(a.ID), 10) + ")"
	case ActController:
		return formatController(a)
	case ActResubmit:
		// format_RESUBMIT: the short form whenever there is a port and
		// no table, even with "ct", which it then leaves out (sic).
		if a.Port != PortInPort && a.Table == 0xff {
			return "resubmit:" + pn.Port(a.Port)
		}
		port, table, ct := "", "", ""
		if a.Port != PortInPort {
			port = pn.Port(a.Port)
		}
		if a.Table != 0xff {
			table = strconv.Itoa(int(a.Table))
		}
		if a.CTOrig {
			ct = ",ct"
		}
		return "resubmit(" + port + "," + table + ct + ")"
	case ActGotoTable:
		return fmt.Sprintf("goto_table:%d", a.Table)
	case ActSetVLANVID:
		if a.NoPush {
			return fmt.Sprintf("set_vlan_vid:%d", a.VLAN)
		}
		return fmt.Sprintf("mod_vlan_vid:%d", a.VLAN)
	case ActSetVLANPCP:
		if a.NoPush {
			return fmt.Sprintf("set_vlan_pcp:%d", a.VLAN)
		}
		return fmt.Sprintf("mod_vlan_pcp:%d", a.VLAN)
	case ActPushVLAN:
		return fmt.Sprintf("push_vlan:0x%04x", a.VLAN)
	case ActPopVLAN:
		if v == V10 {
			return "strip_vlan"
		}
		return "pop_vlan"
	case ActSetField:
		if id, ok := a.SetTunnelID(); ok {
			// format_SET_TUNNEL
			if id > 0xffffffff || a.raw == rawSetTunnel64 {
				return "set_tunnel64:" + hexC(id)
			}
			return "set_tunnel:" + hexC(id)
		}
		if a.Legacy() {
			if name, ok := legacyNames[a.Field.Name]; ok {
				return name + ":" + FormatFieldValue(a.Field, a.Value, a.Mask, pn)
			}
		}
		if TunMetadataIndex(a.Field) >= 0 && !a.RegLoad() {
			v := hexBytes(a.Value)
			if a.tunMDMasked || !isAllOnes(a.Mask) {
				v += "/" + hexBytes(a.Mask)
			}
			return "set_field:" + v + "->" + a.Field.Name
		}
		if a.RegLoad() {
			if ref, val, ok := a.LoadRange(); ok {
				return "load:" + hexC(val) + "->" + FormatRef(ref)
			}
		}
		return "set_field:" + FormatFieldValue(a.Field, a.Value, a.Mask, pn) + "->" + a.Field.MFName()
	case ActMove:
		return "move:" + FormatRef(a.Src) + "->" + FormatRef(a.Dst)
	case ActStackPush:
		return "push:" + FormatRef(a.Src)
	case ActStackPop:
		return "pop:" + FormatRef(a.Dst)
	case ActWriteMetadata:
		if a.MetadataMask == ^uint64(0) {
			return "write_metadata:" + hexC(a.Metadata)
		}
		return "write_metadata:" + hexC(a.Metadata) + "/" + hexC(a.MetadataMask)
	case ActNote:
		return "note:" + hexDotted(a.Data)
	case ActExit:
		return "exit"
	case ActDecTTL:
		// format_DEC_TTL: the ids only when sent as NXAST_DEC_TTL_CNT_IDS.
		if a.CntIDs == nil {
			return "dec_ttl"
		}
		ids := make([]string, len(a.CntIDs))
		for i, id := range a.CntIDs {
			ids[i] = strconv.Itoa(int(id))
		}
		return "dec_ttl(" + strings.Join(ids, ",") + ")"
	case ActGroup:
		return fmt.Sprintf("group:%d", a.ID)
	case ActSetQueue:
		return fmt.Sprintf("set_queue:%d", a.ID)
	case ActPopQueue:
		return "pop_queue"
	case ActEnqueue:
		return fmt.Sprintf("enqueue:%s:%d", pn.Port(a.Port), a.ID)
	case ActMeter:
		return fmt.Sprintf("meter:%d", a.ID)
	case ActCTClear:
		return "ct_clear"
	case ActClearActions:
		return "clear_actions"
	case ActWriteActions:
		return "write_actions(" + FormatActions(a.Nested, v, pn) + ")"
	case ActClone:
		return "clone(" + FormatActions(a.Nested, v, pn) + ")"
	case ActConjunction:
		return fmt.Sprintf("conjunction(%d,%d/%d)", a.ID, a.Clause+1, a.NClauses)
	case ActCT:
		return formatCT(a, v, pn)
	case ActLearn:
		return a.Learn.Format(FormatRef, func(fd *Field, val []byte) string { return FormatFieldValue(fd, val, nil, pn) })
	case ActFinTimeout:
		return a.Fin.Format()
	case ActCheckPktLarger:
		return fmt.Sprintf("check_pkt_larger(%d)->%s", a.PktLen, FormatRef(a.Dst))
	case ActMultipath:
		return a.Multipath.Format(FormatRef(a.Multipath.Dst))
	case ActBundle:
		dst := ""
		if a.Bundle.Load {
			dst = FormatRef(a.Bundle.Dst)
		}
		return a.Bundle.Format(func(p uint16) string { return pn.Port(MemberPort(p)) }, dst)
	case ActNAT:
		return formatNAT(a.NAT)
	}
	if a.Name != "" {
		return a.Name
	}
	return fmt.Sprintf("<action %d>", a.Type)
}

// formatCT formats ct(...) as format_CT: flags, table, zone, a nat
// first, exec and alg.
func formatCT(a *Action, v Version, pn PortNames) string {
	c := a.CT
	var b strings.Builder
	b.WriteString("ct(")
	if c.Flags&CTCommit != 0 {
		b.WriteString("commit,")
	}
	if c.Flags&CTForce != 0 {
		b.WriteString("force,")
	}
	if c.Table != CTNoTable {
		fmt.Fprintf(&b, "table=%d,", c.Table)
	}
	if c.ZoneSrc.Field != nil {
		fmt.Fprintf(&b, "zone=%s,", FormatRef(c.ZoneSrc))
	} else if c.ZoneImm != 0 {
		fmt.Fprintf(&b, "zone=%d,", c.ZoneImm)
	}
	nested := a.Nested
	if len(nested) > 0 && nested[0].Type == ActNAT {
		b.WriteString(formatNAT(nested[0].NAT) + ",")
		nested = nested[1:]
	}
	if len(nested) > 0 {
		fmt.Fprintf(&b, "exec(%s),", FormatActions(nested, v, pn))
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

// formatNAT formats nat(...) as format_NAT: the direction, then the
// address range, port range and flags when a range is given.
func formatNAT(n *NAT) string {
	if n.Flags&(NATSrc|NATDst) == 0 {
		return "nat"
	}
	var b strings.Builder
	b.WriteString("nat(")
	if n.Flags&NATSrc != 0 {
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
		}{{NATPersistent, "persistent"}, {NATHash, "hash"}, {NATRandom, "random"}} {
			if n.Flags&fl.bit != 0 {
				b.WriteString(fl.name + ",")
			}
		}
	}
	return strings.TrimSuffix(b.String(), ",") + ")"
}

// formatController formats a controller action as format_CONTROLLER:
// CONTROLLER:max_len when all else is default, else the arguments that
// are not.
func formatController(a *Action) string {
	if a.Reason == PacketInAction && a.ControllerID == 0 && len(a.Userdata) == 0 && !a.Pause && a.ID == 0 {
		return fmt.Sprintf("CONTROLLER:%d", a.MaxLen)
	}
	var args []string
	if a.Reason != PacketInAction {
		args = append(args, "reason="+PacketInReasonName(a.Reason))
	}
	if a.MaxLen != 0xffff {
		args = append(args, fmt.Sprintf("max_len=%d", a.MaxLen))
	}
	if a.ControllerID != 0 {
		args = append(args, fmt.Sprintf("id=%d", a.ControllerID))
	}
	if len(a.Userdata) > 0 {
		args = append(args, "userdata="+hexDotted(a.Userdata))
	}
	if a.Pause {
		args = append(args, "pause")
	}
	if a.ID != 0 {
		args = append(args, fmt.Sprintf("meter_id=%d", a.ID))
	}
	return "controller(" + strings.Join(args, ",") + ")"
}

// hexDotted formats bytes as format_hex_arg: "01.02.03".
func hexDotted(b []byte) string {
	h := make([]string, len(b))
	for i, c := range b {
		h[i] = fmt.Sprintf("%02x", c)
	}
	return strings.Join(h, ".")
}

// PacketInReasonName names a packet-in reason as
// ofputil_packet_in_reason_to_string (its number if unknown).
func PacketInReasonName(r uint8) string {
	if int(r) < len(pinReasons) {
		return pinReasons[r]
	}
	return strconv.Itoa(int(r))
}

// PacketInReason is PacketInReasonName's inverse.
func PacketInReason(name string) (uint8, bool) {
	for i, r := range pinReasons {
		if r == name {
			return uint8(i), true
		}
	}
	return 0, false
}

// ReservedPort is the number of OpenFlow's reserved port called name
// (any case; NONE is ANY), as ofputil_port_from_string.
func ReservedPort(name string) (uint32, bool) {
	for _, r := range reservedPorts {
		if strings.EqualFold(r.name, name) || r.name == "ANY" && strings.EqualFold(name, "NONE") {
			return r.no, true
		}
	}
	return 0, false
}

// FieldByNXMName is the field whose NXM or OXM name (as FormatRef
// prints it) is name, in any case; nil if none.
func FieldByNXMName(name string) *Field {
	for f, nxm := range nxmNames {
		if strings.EqualFold(nxm, name) {
			return FieldByName(f)
		}
	}
	return nil
}
