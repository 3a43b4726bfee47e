package flow

import (
	"net/netip"
	"strconv"
	"strings"
)

// ODPFormat says how FormatODP prints a datapath flow's match.
type ODPFormat struct {
	// Verbose prints every attribute and field, wildcarded ones as
	// value/0, after the metadata OVS's userspace datapath shows
	// (`ovs-appctl dpctl/dump-flows -m`). Otherwise attributes and fields
	// the mask wildcards entirely are left out.
	Verbose bool
	// PortName, if set, names the in_port; otherwise it is a number.
	PortName func(uint32) string
}

// FormatODP formats the match of a datapath flow, key k under mask m, as
// OVS 3.1's userspace datapath prints it in dpctl/dump-flows
// (lib/odp-util.c odp_flow_format), e.g.
//
//	recirc_id(0),in_port(3),packet_type(ns=0,id=0),eth(src=02:00:00:00:00:01,dst=02:00:00:00:00:02),eth_type(0x0800),ipv4(frag=no)
//
// A field whose mask is partial prints as value/mask. Where OVS matches
// fields that govs's key does not have (ND target and link-layer
// addresses), nothing is printed.
func FormatODP(k *Key, m *Mask, f ODPFormat) string {
	var b strings.Builder
	b.Grow(256)
	// skb_priority, as OVS's: the value alone when matched exactly
	// (after a set_queue), value/mask otherwise, and only verbose when
	// wildcarded.
	if m.SkbPriority != 0 || f.Verbose {
		b.WriteString("skb_priority(")
		b.WriteString(hexAlt(uint64(k.SkbPriority & m.SkbPriority)))
		if m.SkbPriority != ^uint32(0) {
			b.WriteString("/" + hexAlt(uint64(m.SkbPriority)))
		}
		b.WriteString("),")
	}
	k.formatODPTunnel(&b, m, f.Verbose)
	if f.Verbose {
		b.WriteString("skb_mark(0/0),")
	}
	k.formatODPMeta(&b, m, f.Verbose)
	b.WriteString("recirc_id(")
	b.WriteString(hexAlt(uint64(k.RecircID)))
	b.WriteString("),")
	// dp_hash, as OVS's: the first packet's value (not masked, as the
	// netdev datapath keeps it) and the mask, the value alone when
	// exact, left out when wildcarded unless verbose and, as Debian's
	// shows a flow matched exactly (megaflows off), when a packet
	// without one is matched exactly.
	if m.DpHash != 0 && (k.DpHash != 0 || m.DpHash != ^uint32(0)) || f.Verbose {
		b.WriteString("dp_hash(")
		if m.DpHash == 0 {
			b.WriteString("0/0")
		} else {
			b.WriteString(hexAlt(uint64(k.DpHash)))
			if m.DpHash != ^uint32(0) {
				b.WriteString("/" + hexAlt(uint64(m.DpHash)))
			}
		}
		b.WriteString("),")
	}
	b.WriteString("in_port(")
	if f.PortName != nil {
		b.WriteString(f.PortName(k.InPort))
	} else {
		b.WriteString(strconv.FormatUint(uint64(k.InPort), 10))
	}
	b.WriteString("),packet_type(ns=0,id=0)")
	k.formatODPPacket(&odpWriter{b: &b, verbose: f.Verbose}, m)
	return b.String()
}

// FormatODPPacket formats the packet fields of a match only, from eth()
// on, as OVS's odp_flow_format prints a key without metadata attributes
// (tnl/ports/show -v), e.g.
//
//	eth_type(0x0800),ipv4(dst=172.31.0.1,proto=17,frag=no),udp(dst=4789)
func FormatODPPacket(k *Key, m *Mask) string {
	var b strings.Builder
	k.formatODPPacket(&odpWriter{b: &b, first: true}, m)
	return b.String()
}

// formatODPPacket writes the attributes from eth() on.
func (k *Key) formatODPPacket(o *odpWriter, m *Mask) {
	o.attr("eth", func() {
		o.mac("src", k.EthSrc, m.EthSrc)
		o.mac("dst", k.EthDst, m.EthDst)
	}, m.EthSrc != [6]byte{} || m.EthDst != [6]byte{})

	if k.HasVLAN() {
		o.sep()
		o.b.WriteString("eth_type(0x")
		o.b.WriteString(hex16(k.VLANTPID))
		o.b.WriteByte(')')
		o.attr("vlan", func() { o.vlanTCI(k.VLANTCI, m.VLANTCI) }, m.VLANTCI != 0)
		o.b.WriteString(",encap(")
		o.first = true
		k.formatODPInner(o, m)
		o.b.WriteByte(')')
		return
	}
	k.formatODPInner(o, m)
}

// formatODPTunnel writes the tunnel attribute of a decapsulated packet's
// flow as OVS's format_odp_tun_attr, followed by a comma, e.g.
// "tunnel(tun_id=0x5,src=10.0.0.1,dst=10.0.0.2,geneve({class=0x102,type=0x80,len=4,0xa0001}),flags(-df-csum+key)),"
// or, for a VXLAN packet with a Group Policy ID,
// "tunnel(tun_id=0x2a,src=10.0.0.1,dst=10.0.0.2,ttl=64,vxlan(gbp(id=77,flags=0x8)),flags(-df-csum+key)),".
func (k *Key) formatODPTunnel(b *strings.Builder, m *Mask, verbose bool) {
	if !k.HasTunnel() {
		return
	}
	o := odpWriter{b: b, verbose: verbose, first: true}
	o.attr("tunnel", func() {
		if k.TunFlags&TunFlagKey != 0 {
			if o.field("tun_id", m.TunID == 0) {
				b.WriteString(hexAlt(k.TunID))
				if m.TunID != ^uint64(0) {
					b.WriteString("/" + hexAlt(m.TunID))
				}
			}
		}
		src, dst := netip.AddrFrom16(k.TunSrc), netip.AddrFrom16(k.TunDst)
		if src.Is4In6() || dst.Is4In6() {
			o.ipv4("src", src.Unmap().As4(), [4]byte(m.TunSrc[12:]))
			o.ipv4("dst", dst.Unmap().As4(), [4]byte(m.TunDst[12:]))
		} else {
			o.ipv6("ipv6_src", k.TunSrc, m.TunSrc)
			o.ipv6("ipv6_dst", k.TunDst, m.TunDst)
		}
		// OVS leaves a zero TOS out of the key's attributes, so that
		// it prints only a TOS that is set.
		if k.TunTOS != 0 {
			o.u8x("tos", k.TunTOS, m.TunTOS)
		}
		o.u8("ttl", k.TunTTL, m.TunTTL)
		if k.TunTpDst != 0 {
			o.u16("tp_src", k.TunTpSrc, m.TunTpSrc, 0xffff)
			o.u16("tp_dst", k.TunTpDst, m.TunTpDst, 0xffff)
		}
		// VXLAN's Group Policy, when the packet had one: OVS's
		// OVS_TUNNEL_KEY_ATTR_VXLAN_OPTS, whose fields print as the
		// mask has them (format_odp_tun_vxlan_opt), gbp() if none.
		if k.TunGBPID != 0 || k.TunGBPFlags != 0 {
			if !o.firstField {
				b.WriteByte(',')
			}
			b.WriteString("vxlan(gbp(")
			o.firstField = true
			o.u16("id", k.TunGBPID, m.TunGBPID, 0xffff)
			o.u8x("flags", k.TunGBPFlags, m.TunGBPFlags)
			b.WriteString("))")
			o.firstField = false
		}
		// Options matched as absent print as geneve(), as OVS's.
		if k.TunOptsLen > 0 || m.TunOptsLen != 0 {
			if !o.firstField {
				b.WriteByte(',')
			}
			o.firstField = false
			b.WriteString("geneve(")
			formatGeneve(b, k.Options(), m.TunOpts[:k.TunOptsLen], verbose)
			b.WriteByte(')')
		}
		// The flags in OVS's bit order (FLOW_TNL_F_OAM, _DONT_FRAGMENT,
		// _CSUM, _KEY), all four masked printing as format_flags.
		bits := [4]uint16{TunFlagOAM, TunFlagDontFragment, TunFlagCsum, TunFlagKey}
		var v, mk uint64
		for i, f := range bits {
			if k.TunFlags&f != 0 {
				v |= 1 << i
			}
			if m.TunFlags&f != 0 {
				mk |= 1 << i
			}
		}
		if mk != 0 || verbose {
			if !o.firstField {
				b.WriteByte(',')
			}
			o.firstField = false
			b.WriteString("flags(" + formatFlagsMasked(v, mk, 0xf, tunFlagNames[:]) + ")")
		}
	}, true)
	b.WriteByte(',')
}

// tunFlagNames are the tunnel flags' names in OVS's bit order.
var tunFlagNames = [4]string{"oam", "df", "csum", "key"}

// formatODPMeta writes the conntrack attributes that OVS's userspace
// datapath puts before recirc_id (odp_flow_key_from_flow), each followed
// by a comma: ct_state, ct_zone, ct_mark, ct_label and the original
// tuple, those the mask wildcards left out unless verbose.
func (k *Key) formatODPMeta(b *strings.Builder, m *Mask, verbose bool) {
	if m.CtState != 0 || verbose {
		b.WriteString("ct_state(")
		b.WriteString(FormatCtStateMasked(k.CtState, m.CtState))
		b.WriteString("),")
	}
	num := func(name string, v, mk, full uint64) {
		if mk == 0 && !verbose {
			return
		}
		b.WriteString(name)
		b.WriteByte('(')
		if mk == 0 {
			b.WriteString("0/0")
		} else {
			b.WriteString(hexAlt(v))
			if mk != full {
				b.WriteString("/" + hexAlt(mk))
			}
		}
		b.WriteString("),")
	}
	num("ct_zone", uint64(k.CtZone), uint64(m.CtZone), 0xffff)
	num("ct_mark", uint64(k.CtMark), uint64(m.CtMark), 0xffffffff)
	if m.CtLabel != ([16]byte{}) || verbose {
		b.WriteString("ct_label(")
		if m.CtLabel == ([16]byte{}) {
			b.WriteString("0/0")
		} else {
			b.WriteString(hex128(k.CtLabel))
			if m.CtLabel != [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff} {
				b.WriteString("/" + hex128(m.CtLabel))
			}
		}
		b.WriteString("),")
	}
	masked := m.CtNwSrc != [16]byte{} || m.CtNwDst != [16]byte{} || m.CtNwProto != 0 || m.CtTpSrc != 0 || m.CtTpDst != 0
	if k.CtNwProto == 0 || !(masked || verbose) {
		return
	}
	o := odpWriter{b: b, verbose: verbose, first: true}
	name := "ct_tuple4"
	if k.EthType == EthTypeIPv6 {
		name = "ct_tuple6"
	}
	o.attr(name, func() {
		if name == "ct_tuple4" {
			o.ipv4("src", [4]byte(k.CtNwSrc[:4]), [4]byte(m.CtNwSrc[:4]))
			o.ipv4("dst", [4]byte(k.CtNwDst[:4]), [4]byte(m.CtNwDst[:4]))
		} else {
			o.ipv6("src", k.CtNwSrc, m.CtNwSrc)
			o.ipv6("dst", k.CtNwDst, m.CtNwDst)
		}
		o.u8("proto", k.CtNwProto, m.CtNwProto)
		o.u16("tp_src", k.CtTpSrc, m.CtTpSrc, 0xffff)
		o.u16("tp_dst", k.CtTpDst, m.CtTpDst, 0xffff)
	}, true)
	b.WriteByte(',')
}

// ctStateNames are the ct_state bits' names (odp_ct_state_to_string).
var ctStateNames = [8]string{"new", "est", "rel", "rpl", "inv", "trk", "snat", "dnat"}

// FormatCtStateMasked formats ct_state as OVS's format_flags_masked:
// names joined by | when exact ("0" for none), "0/0" when wildcarded,
// +name/-name per masked bit otherwise.
func FormatCtStateMasked(v, m uint8) string {
	return formatFlagsMasked(uint64(v), uint64(m), 0xff, ctStateNames[:])
}

// hex128 is OVS's ds_put_hex of a 128-bit big-endian value: 0x and the
// digits without leading zeros, "0" for zero.
func hex128(v [16]byte) string {
	const digits = "0123456789abcdef"
	var b strings.Builder
	for _, x := range v {
		if b.Len() == 0 {
			if x == 0 {
				continue
			}
			b.WriteString("0x")
			if x>>4 != 0 {
				b.WriteByte(digits[x>>4])
			}
			b.WriteByte(digits[x&15])
			continue
		}
		b.WriteByte(digits[x>>4])
		b.WriteByte(digits[x&15])
	}
	if b.Len() == 0 {
		return "0"
	}
	return b.String()
}

// formatODPInner writes the attributes from eth_type on, the ones inside
// encap() for a tagged frame.
func (k *Key) formatODPInner(o *odpWriter, m *Mask) {
	switch {
	case k.EthType == EthTypeNone:
		// OVS leaves the attribute out for 802.3 frames; its mask then
		// shows as eth_type(0/0xffff), but not inside encap().
		if !o.first {
			o.sep()
			o.b.WriteString("eth_type(0/0x")
			o.b.WriteString(hex16(m.EthType))
			o.b.WriteByte(')')
		}
		return
	case m.EthType == 0xffff:
		o.sep()
		o.b.WriteString("eth_type(0x")
		o.b.WriteString(hex16(k.EthType))
		o.b.WriteByte(')')
	case m.EthType != 0 || o.verbose:
		o.sep()
		o.b.WriteString("eth_type(0x")
		o.b.WriteString(hex16(k.EthType))
		o.b.WriteString("/0x")
		o.b.WriteString(hex16(m.EthType))
		o.b.WriteByte(')')
	}
	switch k.EthType {
	case EthTypeIPv4:
		o.attr("ipv4", func() {
			o.ipv4("src", k.IPv4Src, m.IPv4Src)
			o.ipv4("dst", k.IPv4Dst, m.IPv4Dst)
			o.u8("proto", k.NwProto, m.NwProto)
			o.u8x("tos", k.NwTOS, m.NwTOS)
			o.u8("ttl", k.NwTTL, m.NwTTL)
			o.frag(k.NwFrag, m.NwFrag)
		}, m.IPv4Src != [4]byte{} || m.IPv4Dst != [4]byte{} || m.NwProto != 0 || m.NwTOS != 0 || m.NwTTL != 0 || m.NwFrag != 0)
		k.formatODPL4(o, m, false)
	case EthTypeIPv6:
		o.attr("ipv6", func() {
			o.ipv6("src", k.IPv6Src, m.IPv6Src)
			o.ipv6("dst", k.IPv6Dst, m.IPv6Dst)
			o.hex32("label", k.IPv6Label, m.IPv6Label, 0xfffff)
			o.u8("proto", k.NwProto, m.NwProto)
			o.u8x("tclass", k.NwTOS, m.NwTOS)
			o.u8("hlimit", k.NwTTL, m.NwTTL)
			o.frag(k.NwFrag, m.NwFrag)
		}, m.IPv6Src != [16]byte{} || m.IPv6Dst != [16]byte{} || m.IPv6Label != 0 || m.NwProto != 0 || m.NwTOS != 0 || m.NwTTL != 0 || m.NwFrag != 0)
		k.formatODPL4(o, m, true)
	case EthTypeARP, EthTypeRARP:
		o.attr("arp", func() {
			o.ipv4("sip", k.IPv4Src, m.IPv4Src)
			o.ipv4("tip", k.IPv4Dst, m.IPv4Dst)
			o.u16("op", uint16(k.NwProto), uint16(m.NwProto), 0xff)
			o.mac("sha", k.ArpSHA, m.ArpSHA)
			o.mac("tha", k.ArpTHA, m.ArpTHA)
		}, m.IPv4Src != [4]byte{} || m.IPv4Dst != [4]byte{} || m.NwProto != 0 || m.ArpSHA != [6]byte{} || m.ArpTHA != [6]byte{})
	}
}

func (k *Key) formatODPL4(o *odpWriter, m *Mask, v6 bool) {
	if k.NwFrag&FragLater != 0 {
		return // later fragments carry no L4 attribute
	}
	ports := m.TpSrc != 0 || m.TpDst != 0
	switch {
	case k.NwProto == IPProtoTCP:
		o.attr("tcp", func() { o.u16("src", k.TpSrc, m.TpSrc, 0xffff); o.u16("dst", k.TpDst, m.TpDst, 0xffff) }, ports)
		if m.TCPFlags != 0 || o.verbose {
			o.sep()
			o.b.WriteString("tcp_flags(")
			o.b.WriteString(FormatTCPFlagsMasked(k.TCPFlags, m.TCPFlags))
			o.b.WriteByte(')')
		}
	case k.NwProto == IPProtoUDP:
		o.attr("udp", func() { o.u16("src", k.TpSrc, m.TpSrc, 0xffff); o.u16("dst", k.TpDst, m.TpDst, 0xffff) }, ports)
	case k.NwProto == IPProtoSCTP:
		o.attr("sctp", func() { o.u16("src", k.TpSrc, m.TpSrc, 0xffff); o.u16("dst", k.TpDst, m.TpDst, 0xffff) }, ports)
	case k.NwProto == IPProtoICMP && !v6:
		o.attr("icmp", func() {
			o.u8("type", uint8(k.TpSrc), uint8(m.TpSrc))
			o.u8("code", uint8(k.TpDst), uint8(m.TpDst))
		}, ports)
	case k.NwProto == IPProtoICMPv6 && v6:
		o.attr("icmpv6", func() {
			o.u8("type", uint8(k.TpSrc), uint8(m.TpSrc))
			o.u8("code", uint8(k.TpDst), uint8(m.TpDst))
		}, ports)
		if !k.IsND() {
			break
		}
		// OVS's OVS_KEY_ATTR_ND and OVS_KEY_ATTR_ND_EXTENSIONS.
		o.attr("nd", func() {
			o.ipv6("target", k.NdTarget, m.NdTarget)
			o.mac("sll", k.ArpSHA, m.ArpSHA)
			o.mac("tll", k.ArpTHA, m.ArpTHA)
		}, m.NdTarget != [16]byte{} || m.ArpSHA != [6]byte{} || m.ArpTHA != [6]byte{})
		o.attr("nd_ext", func() {
			o.hex32("nd_reserved", k.NdReserved, m.NdReserved, 0xffffffff)
			o.u8("nd_options_type", k.NdOptionsType, m.NdOptionsType)
		}, m.NdReserved != 0 || m.NdOptionsType != 0)
	}
}

// odpWriter writes attributes and their fields with OVS's separators.
type odpWriter struct {
	b       *strings.Builder
	verbose bool
	// first: no attribute written yet at this nesting level.
	first bool
	// firstField: no field written yet in the current attribute.
	firstField bool
}

func (o *odpWriter) sep() {
	if !o.first {
		o.b.WriteByte(',')
	}
	o.first = false
}

// attr writes name(fields) if the mask consults any of its fields or the
// format is verbose.
func (o *odpWriter) attr(name string, fields func(), masked bool) {
	if !masked && !o.verbose {
		return
	}
	o.sep()
	o.b.WriteString(name)
	o.b.WriteByte('(')
	o.firstField = true
	fields()
	o.b.WriteByte(')')
}

// field starts a field; it reports false if the field is to be left out.
func (o *odpWriter) field(name string, wildcarded bool) bool {
	if wildcarded && !o.verbose {
		return false
	}
	if !o.firstField {
		o.b.WriteByte(',')
	}
	o.firstField = false
	o.b.WriteString(name)
	o.b.WriteByte('=')
	return true
}

func (o *odpWriter) mac(name string, v, m [6]byte) {
	if !o.field(name, m == [6]byte{}) {
		return
	}
	o.b.WriteString(MAC(v).String())
	if m != [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} {
		o.b.WriteByte('/')
		o.b.WriteString(MAC(m).String())
	}
}

func (o *odpWriter) ipv4(name string, v, m [4]byte) {
	if !o.field(name, m == [4]byte{}) {
		return
	}
	o.b.WriteString(netip.AddrFrom4(v).String())
	if m != [4]byte{0xff, 0xff, 0xff, 0xff} {
		o.b.WriteByte('/')
		o.b.WriteString(netip.AddrFrom4(m).String())
	}
}

func (o *odpWriter) ipv6(name string, v, m [16]byte) {
	if !o.field(name, m == [16]byte{}) {
		return
	}
	o.b.WriteString(netip.AddrFrom16(v).String())
	full := true
	for _, c := range m {
		full = full && c == 0xff
	}
	if !full {
		o.b.WriteByte('/')
		o.b.WriteString(netip.AddrFrom16(m).String())
	}
}

// u8 is OVS's format_u8u: decimal, a partial mask in hex.
func (o *odpWriter) u8(name string, v, m uint8) {
	if !o.field(name, m == 0) {
		return
	}
	o.b.WriteString(strconv.Itoa(int(v)))
	if m != 0xff {
		o.b.WriteString("/" + hexAlt(uint64(m)))
	}
}

// u8x is OVS's format_u8x: the value and a partial mask in hex.
func (o *odpWriter) u8x(name string, v, m uint8) {
	if !o.field(name, m == 0) {
		return
	}
	o.b.WriteString(hexAlt(uint64(v)))
	if m != 0xff {
		o.b.WriteString("/" + hexAlt(uint64(m)))
	}
}

// u16 is OVS's format_be16 with full being the field's exact mask.
func (o *odpWriter) u16(name string, v, m, full uint16) {
	if !o.field(name, m == 0) {
		return
	}
	o.b.WriteString(strconv.Itoa(int(v)))
	if m != full {
		o.b.WriteString("/" + hexAlt(uint64(m)))
	}
}

func (o *odpWriter) hex32(name string, v, m, full uint32) {
	if !o.field(name, m == 0) {
		return
	}
	o.b.WriteString(hexAlt(uint64(v)))
	if m != full {
		o.b.WriteString("/" + hexAlt(uint64(m)))
	}
}

// frag is OVS's format_frag: an enumeration, so partial masks are errors;
// a wildcarded one prints nothing even when verbose.
func (o *odpWriter) frag(v, m uint8) {
	m &= FragAny | FragLater
	if m == 0 {
		return
	}
	if !o.firstField {
		o.b.WriteByte(',')
	}
	o.firstField = false
	if m != FragAny|FragLater {
		o.b.WriteString("error: partial mask not supported for frag (" + hexAlt(uint64(m)) + ")")
		return
	}
	o.b.WriteString("frag=")
	o.b.WriteString(fragString(v))
}

// vlanTCI is OVS's format_vlan_tci.
func (o *odpWriter) vlanTCI(tci, m uint16) {
	var parts []string
	vid, vidMask := tci&VLANVIDMask, m&VLANVIDMask
	if o.verbose || vid != 0 || vidMask != 0 {
		s := "vid=" + strconv.Itoa(int(vid))
		if vidMask != VLANVIDMask {
			s += "/0x" + strconv.FormatUint(uint64(vidMask), 16)
		}
		parts = append(parts, s)
	}
	pcp, pcpMask := tci>>13, m>>13
	if o.verbose || pcp != 0 || pcpMask != 0 {
		s := "pcp=" + strconv.Itoa(int(pcp))
		if pcpMask != 7 {
			s += "/0x" + strconv.FormatUint(uint64(pcpMask), 16)
		}
		parts = append(parts, s)
	}
	if tci&VLANPresent == 0 {
		parts = append(parts, "cfi=0")
	}
	o.b.WriteString(strings.Join(parts, ","))
}

// hexAlt formats v as C's "%#x": 0x-prefixed, except 0 prints as "0".
func hexAlt(v uint64) string {
	if v == 0 {
		return "0"
	}
	return "0x" + strconv.FormatUint(v, 16)
}

func hex16(v uint16) string {
	return strconv.FormatUint(uint64(v)|0x10000, 16)[1:]
}

// TCP flag bits, as in the TCP header's low 12 bits.
const (
	TCPFin = 1 << iota
	TCPSyn
	TCPRst
	TCPPsh
	TCPAck
	TCPUrg
	TCPEce
	TCPCwr
	TCPNs
)

var tcpFlagNames = [...]string{"fin", "syn", "rst", "psh", "ack", "urg", "ece", "cwr", "ns", "[200]", "[400]", "[800]"}

// FormatTCPFlagsMasked formats TCP flags as OVS's format_flags_masked
// does for tcp_flags, in datapath flows and OpenFlow matches alike: names
// joined by | when exact ("0" for none), "0/0" when wildcarded,
// +name/-name per masked bit otherwise.
func FormatTCPFlagsMasked(v, m uint16) string {
	return formatFlagsMasked(uint64(v), uint64(m), 0x0fff, tcpFlagNames[:])
}

// formatFlagsMasked is OVS's format_flags_masked for flags whose exact
// mask is all and whose bits are named by names.
func formatFlagsMasked(v, m, all uint64, names []string) string {
	switch m & all {
	case all:
		if v == 0 {
			return "0"
		}
		var set []string
		for i, n := range names {
			if v&(1<<i) != 0 {
				set = append(set, n)
			}
		}
		return strings.Join(set, "|")
	case 0:
		return "0/0"
	}
	var b strings.Builder
	for i, n := range names {
		if m&(1<<i) == 0 {
			continue
		}
		if v&(1<<i) != 0 {
			b.WriteByte('+')
		} else {
			b.WriteByte('-')
		}
		b.WriteString(n)
	}
	return b.String()
}

// FormatTCPFlags formats accumulated TCP flags as OVS's
// packet_format_tcp_flags does for a datapath flow's statistics
// ("flags:S." in dpctl/dump-flows): one letter per flag in the order
// SFPRU. then ECN, "none" for none.
func FormatTCPFlags(f uint16) string {
	if f == 0 {
		return "none"
	}
	var b strings.Builder
	for _, c := range []struct {
		bit uint16
		s   string
	}{
		{TCPSyn, "S"}, {TCPFin, "F"}, {TCPPsh, "P"}, {TCPRst, "R"}, {TCPUrg, "U"}, {TCPAck, "."},
		{TCPEce, "E"}, {TCPCwr, "C"}, {TCPNs, "N"}, {0x200, "[200]"}, {0x400, "[400]"}, {0x800, "[800]"},
	} {
		if f&c.bit != 0 {
			b.WriteString(c.s)
		}
	}
	return b.String()
}
