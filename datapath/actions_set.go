package datapath

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/datapath/packet"
)

// ActionSet rewrites one header field (Action.Field) to Action.Val,
// keeping the IPv4 header checksum and the TCP/UDP checksum right (OVS's
// set/set_masked ODP actions). A packet without the field is left alone.
const ActionSet ActionKind = 16

// SetField is the header field an ActionSet writes.
type SetField uint8

const (
	SetEthSrc SetField = iota + 1
	SetEthDst
	SetIPv4Src
	SetIPv4Dst
	SetIPv4TTL
	SetIPv6HopLimit
	SetTpSrc // TCP or UDP source port
	SetTpDst
	SetARPOp // 2 bytes
	SetARPSHA
	SetARPSPA
	SetARPTHA
	SetARPTPA
	SetIPv6Src
	SetIPv6Dst
	SetIPv6Label // 4 bytes, the low 20 bits
	SetICMPType
	SetICMPCode
	SetICMPv6Type
	SetICMPv6Code
	SetNDTarget
	SetNDSLL // the first link-layer address option, if a source one
	SetNDTLL // the first link-layer address option, if a target one
	SetNDReserved
	SetNDOptionsType // the first option's type
)

// TpSet returns the action that writes port (SetTpSrc or SetTpDst) of a
// packet of IP protocol proto (TCP or UDP), which it shows as OVS's
// set(tcp(...)) or set(udp(...)).
func TpSet(field SetField, proto uint8, port uint16) Action {
	a := Action{Kind: ActionSet, Field: field}
	binary.BigEndian.PutUint16(a.Val[:], port)
	a.Val[2] = proto
	return a
}

// Set returns the action that writes val (big-endian, the field's size)
// to field.
func Set(field SetField, val []byte) Action {
	a := Action{Kind: ActionSet, Field: field}
	copy(a.Val[:], val)
	return a
}

func (a Action) setString() string {
	hdr, _, kv := a.setPart()
	return "set(" + hdr + "(" + kv + "))"
}

// setPart is what an ActionSet shows in OVS's set(HEADER(FIELD=VALUE,...))
// format: its header, its field's place among the header's fields as OVS
// prints them (lib/odp-util.c's key formats), and FIELD=VALUE.
func (a Action) setPart() (hdr string, rank int, kv string) {
	hdr, rank, kv = a.setPartValue()
	if a.SetMask != nil {
		kv += maskSuffix(a.Field, a.SetMask)
	}
	return hdr, rank, kv
}

func (a Action) setPartValue() (hdr string, rank int, kv string) {
	v := a.Val[:]
	mac := func() string { return flow.MAC(v[:6]).String() }
	ip4 := func() string { return netip.AddrFrom4([4]byte(v[:4])).String() }
	ip6 := func() string { return netip.AddrFrom16(a.Val).String() }
	u8 := func() string { return strconv.Itoa(int(v[0])) }
	u16 := func() string { return strconv.Itoa(int(binary.BigEndian.Uint16(v))) }
	switch a.Field {
	case SetEthSrc:
		return "eth", 0, "src=" + mac()
	case SetEthDst:
		return "eth", 1, "dst=" + mac()
	case SetIPv4Src:
		return "ipv4", 0, "src=" + ip4()
	case SetIPv4Dst:
		return "ipv4", 1, "dst=" + ip4()
	case SetIPv4TTL:
		return "ipv4", 4, "ttl=" + u8()
	case SetIPv6Src:
		return "ipv6", 0, "src=" + ip6()
	case SetIPv6Dst:
		return "ipv6", 1, "dst=" + ip6()
	case SetIPv6Label:
		return "ipv6", 2, "label=" + hexAlt(uint64(binary.BigEndian.Uint32(v)))
	case SetIPv6HopLimit:
		return "ipv6", 5, "hlimit=" + u8()
	case SetTpSrc, SetTpDst:
		// Val[2] is the IP protocol the translation set the port for
		// (TpSet); it names the header as OVS's tcp(...) and udp(...).
		hdr = map[byte]string{flow.IPProtoTCP: "tcp", flow.IPProtoUDP: "udp"}[v[2]]
		if hdr == "" {
			hdr = "l4"
		}
		if a.Field == SetTpSrc {
			return hdr, 0, "src=" + u16()
		}
		return hdr, 1, "dst=" + u16()
	case SetARPSPA:
		return "arp", 0, "sip=" + ip4()
	case SetARPTPA:
		return "arp", 1, "tip=" + ip4()
	case SetARPOp:
		return "arp", 2, "op=" + u16()
	case SetARPSHA:
		return "arp", 3, "sha=" + mac()
	case SetARPTHA:
		return "arp", 4, "tha=" + mac()
	case SetICMPType:
		return "icmp", 0, "type=" + u8()
	case SetICMPCode:
		return "icmp", 1, "code=" + u8()
	case SetICMPv6Type:
		return "icmpv6", 0, "type=" + u8()
	case SetICMPv6Code:
		return "icmpv6", 1, "code=" + u8()
	case SetNDTarget:
		return "nd", 0, "target=" + ip6()
	case SetNDSLL:
		return "nd", 1, "sll=" + mac()
	case SetNDTLL:
		return "nd", 2, "tll=" + mac()
	case SetNDReserved:
		return "nd_ext", 0, "nd_reserved=" + hexAlt(uint64(binary.BigEndian.Uint32(v)))
	case SetNDOptionsType:
		return "nd_ext", 1, "nd_options_type=" + u8()
	}
	return a.setPartMore()
}

// formatSets writes a run of ActionSets as OVS shows the one masked set
// it commits per header: set(eth(src=...,dst=...)), fields in OVS's order.
// It returns how many of sets it consumed (those of the first's header).
func formatSets(b *strings.Builder, sets []Action) int {
	hdr, _, _ := sets[0].setPart()
	type part struct {
		rank int
		kv   string
	}
	var parts []part
	n := 0
	for ; n < len(sets) && sets[n].Kind == ActionSet; n++ {
		h, r, kv := sets[n].setPart()
		if h != hdr || (n > 0 && !strings.Contains(kv, "=")) {
			// Another header, or a header of one value (skb_mark).
			break
		}
		parts = append(parts, part{r, kv})
	}
	slices.SortStableFunc(parts, func(x, y part) int { return x.rank - y.rank })
	b.WriteString("set(" + hdr + "(")
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p.kv)
	}
	b.WriteString("))")
	return n
}

// l3Offset returns the offset of the network header and its Ethernet
// type, after any VLAN tags.
func l3Offset(d []byte) (int, uint16) {
	off := 12
	for off+2 <= len(d) {
		t := binary.BigEndian.Uint16(d[off:])
		if !flow.IsVLANType(t) {
			return off + 2, t
		}
		off += 4
	}
	return -1, 0
}

// onesAdd is one's complement addition folded to 16 bits.
func onesAdd(a, b uint32) uint16 {
	s := a + b
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// csumReplace updates a checksum field for a 16-bit word changing from
// old to new (RFC 1624); partial is a pseudo-header sum left for the
// device to complete (not complemented).
func csumReplace(field []byte, old, new uint16, partial bool) {
	c := binary.BigEndian.Uint16(field)
	if partial {
		c = onesAdd(uint32(c)+uint32(^old), uint32(new))
	} else {
		c = ^onesAdd(uint32(^c)+uint32(^old), uint32(new))
	}
	binary.BigEndian.PutUint16(field, c)
}

// setField applies a set action to p.
func setField(p *packet.Packet, f SetField, val *[16]byte) { setFieldMasked(p, f, val, nil) }

// setFieldMasked applies a set action to p, masked if mask is not nil
// (applySet; only for the fields Maskable reports).
func setFieldMasked(p *packet.Packet, f SetField, val, mask *[16]byte) {
	d := p.Data()
	var buf [16]byte // a masked set's value
	switch f {
	case SetEthSrc:
		if len(d) >= 12 {
			copy(d[6:12], masked(&buf, d[6:12], val, mask)[:6])
		}
		return
	case SetEthDst:
		if len(d) >= 12 {
			copy(d[0:6], masked(&buf, d[0:6], val, mask)[:6])
		}
		return
	}
	switch f {
	case SetSkbMark:
		return // metadata only: see SetSkbMark
	case SetSkbPriority:
		p.SkbPriority = binary.BigEndian.Uint32(val[:4])
		return
	}
	l3, typ := l3Offset(d)
	if l3 < 0 {
		return
	}
	partial := p.Offload.Flags&packet.NeedsCsum != 0
	if typ == flow.EthTypeIPv6 {
		setIPv6(d[l3:], f, val, mask, partial)
		return
	}
	if typ == flow.EthTypeARP || typ == flow.EthTypeRARP {
		setARP(d[l3:], f, val, mask)
		return
	}
	if typ != flow.EthTypeIPv4 || len(d) < l3+20 {
		return
	}
	ip := d[l3:]
	ihl := int(ip[0]&0x0f) * 4
	if ihl < 20 || len(ip) < ihl {
		return
	}
	// The L4 checksum field, if the packet has one govs updates.
	var l4csum []byte
	var l4 []byte
	first := binary.BigEndian.Uint16(ip[6:])&0x1fff == 0
	if first {
		l4 = ip[ihl:]
		switch ip[9] {
		case flow.IPProtoTCP:
			if len(l4) >= 18 {
				l4csum = l4[16:18]
			}
		case flow.IPProtoUDP:
			if len(l4) >= 8 && (l4[6] != 0 || l4[7] != 0 || partial) {
				l4csum = l4[6:8]
			}
		}
	}
	if setMore(ip, l4, ip[9], false, f, val) {
		return
	}
	switch f {
	case SetIPv4Src, SetIPv4Dst:
		off := 12
		if f == SetIPv4Dst {
			off = 16
		}
		val = masked(&buf, ip[off:off+4], val, mask)
		for i := 0; i < 4; i += 2 {
			old, new := binary.BigEndian.Uint16(ip[off+i:]), binary.BigEndian.Uint16(val[i:])
			csumReplace(ip[10:12], old, new, false)
			if l4csum != nil {
				// The addresses are in the pseudo-header.
				csumReplace(l4csum, old, new, partial)
			}
		}
		copy(ip[off:off+4], val[:4])
	case SetICMPType, SetICMPCode:
		if l4 == nil || ip[9] != flow.IPProtoICMP || len(l4) < 4 {
			return
		}
		old := binary.BigEndian.Uint16(l4)
		if f == SetICMPType {
			l4[0] = val[0]
		} else {
			l4[1] = val[0]
		}
		csumReplace(l4[2:4], old, binary.BigEndian.Uint16(l4), false)
	case SetIPv4TTL:
		val = masked(&buf, ip[8:9], val, mask)
		old := binary.BigEndian.Uint16(ip[8:])
		ip[8] = val[0]
		csumReplace(ip[10:12], old, binary.BigEndian.Uint16(ip[8:]), false)
	case SetTpSrc, SetTpDst:
		if l4 == nil || (ip[9] != flow.IPProtoTCP && ip[9] != flow.IPProtoUDP) || len(l4) < 4 {
			return
		}
		setPort(l4, f, val, mask, l4csum, partial)
	}
}

// setPort writes a TCP or UDP port (SetTpSrc or SetTpDst) to segment l4,
// masked if mask is not nil, keeping its checksum l4csum (nil: none)
// right.
func setPort(l4 []byte, f SetField, val, mask *[16]byte, l4csum []byte, partial bool) {
	off := 0
	if f == SetTpDst {
		off = 2
	}
	var buf [16]byte
	val = masked(&buf, l4[off:off+2], val, mask)
	old, new := binary.BigEndian.Uint16(l4[off:]), binary.BigEndian.Uint16(val[:])
	if l4csum != nil && !partial {
		// A partial checksum is completed over the new ports.
		csumReplace(l4csum, old, new, false)
	}
	binary.BigEndian.PutUint16(l4[off:], new)
}

// setARP applies a set action to an Ethernet/IPv4 ARP packet (OVS's
// packet_set_arp), masked if mask is not nil; other ARP packets are left
// alone.
func setARP(arp []byte, f SetField, val, mask *[16]byte) {
	if len(arp) < 28 || binary.BigEndian.Uint16(arp) != 1 || binary.BigEndian.Uint16(arp[2:]) != flow.EthTypeIPv4 ||
		arp[4] != 6 || arp[5] != 4 {
		return
	}
	var field []byte
	switch f {
	case SetARPOp:
		field = arp[6:8]
	case SetARPSHA:
		field = arp[8:14]
	case SetARPSPA:
		field = arp[14:18]
	case SetARPTHA:
		field = arp[18:24]
	case SetARPTPA:
		field = arp[24:28]
	default:
		return
	}
	var buf [16]byte
	copy(field, masked(&buf, field, val, mask)[:len(field)])
}

// ipv6L4 returns the transport protocol and header of the IPv6 packet ip
// (the payload after the extension headers, within the payload length),
// or nil for a later fragment or a malformed packet.
func ipv6L4(ip []byte) (uint8, []byte) {
	if len(ip) < 40 {
		return 0, nil
	}
	end := 40 + int(binary.BigEndian.Uint16(ip[4:]))
	if end > len(ip) {
		return 0, nil
	}
	proto, b := ip[6], ip[40:end]
	for {
		switch proto {
		case flow.IPProtoHopOpts, flow.IPProtoRouting, flow.IPProtoDstOpts, flow.IPProtoAH, flow.IPProtoFragment:
		default:
			return proto, b
		}
		if len(b) < 8 {
			return 0, nil
		}
		l := (int(b[1]) + 1) * 8
		switch proto {
		case flow.IPProtoAH:
			l = (int(b[1]) + 2) * 4
		case flow.IPProtoFragment:
			if binary.BigEndian.Uint16(b[2:])&0xfff8 != 0 {
				return 0, nil // only the first fragment has the header
			}
			l = 8
		}
		if l > len(b) {
			return 0, nil
		}
		proto, b = b[0], b[l:]
	}
}

// icmp6Checksum sets the ICMPv6 checksum of msg, the whole message of the
// IPv6 packet ip.
func icmp6Checksum(ip, msg []byte) {
	msg[2], msg[3] = 0, 0
	var s uint32
	add := func(b []byte) {
		for ; len(b) >= 2; b = b[2:] {
			s += uint32(binary.BigEndian.Uint16(b))
		}
		if len(b) == 1 {
			s += uint32(b[0]) << 8
		}
	}
	add(ip[8:40])
	s += uint32(len(msg)>>16) + uint32(len(msg)&0xffff) + flow.IPProtoICMPv6
	add(msg)
	binary.BigEndian.PutUint16(msg[2:], ^onesAdd(s, 0))
}

// setIPv6 applies a set action to the IPv6 packet ip (OVS's
// packet_set_ipv6, packet_set_icmp and packet_set_nd): the TCP and UDP
// checksums are updated for the addresses' change, an ICMPv6 message's
// checksum is computed again.
func setIPv6(ip []byte, f SetField, val, mask *[16]byte, partial bool) {
	if len(ip) < 40 {
		return
	}
	var buf [16]byte // a masked set's value
	proto, l4 := ipv6L4(ip)
	if setMore(ip, l4, proto, true, f, val) {
		return
	}
	icmp := proto == flow.IPProtoICMPv6 && len(l4) >= 4
	// The TCP or UDP checksum, if the packet has one govs updates.
	var l4csum []byte
	switch {
	case proto == flow.IPProtoTCP && len(l4) >= 18:
		l4csum = l4[16:18]
	case proto == flow.IPProtoUDP && len(l4) >= 8 && (l4[6] != 0 || l4[7] != 0 || partial):
		l4csum = l4[6:8]
	}
	switch f {
	case SetTpSrc, SetTpDst:
		if (proto != flow.IPProtoTCP && proto != flow.IPProtoUDP) || len(l4) < 8 {
			return
		}
		setPort(l4, f, val, mask, l4csum, partial)
		return
	case SetIPv6HopLimit:
		ip[7] = masked(&buf, ip[7:8], val, mask)[0]
		return
	case SetIPv6Label:
		val = masked(&buf, ip[0:4], val, mask)
		binary.BigEndian.PutUint32(ip, binary.BigEndian.Uint32(ip)&^0xfffff|binary.BigEndian.Uint32(val[:])&0xfffff)
		return
	case SetIPv6Src, SetIPv6Dst:
		off := 8
		if f == SetIPv6Dst {
			off = 24
		}
		val = masked(&buf, ip[off:off+16], val, mask)
		if l4csum != nil {
			for i := 0; i < 16; i += 2 {
				csumReplace(l4csum, binary.BigEndian.Uint16(ip[off+i:]), binary.BigEndian.Uint16(val[i:]), partial)
			}
		}
		copy(ip[off:off+16], val[:])
		if icmp {
			icmp6Checksum(ip, l4)
		}
		return
	}
	if !icmp {
		return
	}
	switch f {
	case SetICMPv6Type:
		l4[0] = val[0]
	case SetICMPv6Code:
		l4[1] = val[0]
	default:
		// The neighbour discovery fields, of an NS or NA only.
		if len(l4) < 8 || l4[1] != 0 || l4[0] != flow.ICMPv6NS && l4[0] != flow.ICMPv6NA {
			return
		}
		switch f {
		case SetNDReserved:
			copy(l4[4:8], val[:4])
		case SetNDTarget:
			if len(l4) < 24 {
				return
			}
			copy(l4[8:24], val[:])
		case SetNDOptionsType:
			if len(l4) < 25 {
				return
			}
			l4[24] = val[0]
		case SetNDSLL, SetNDTLL:
			want := byte(1)
			if f == SetNDTLL {
				want = 2
			}
			// The first link-layer address option, as OVS's
			// packet_set_nd: a packet has one.
			for o := l4[min(24, len(l4)):]; len(o) >= 8 && o[1] != 0; {
				l := int(o[1]) * 8
				if o[1] == 1 && (o[0] == 1 || o[0] == 2) {
					if o[0] == want {
						copy(o[2:8], val[:6])
					}
					break
				}
				if l > len(o) {
					break
				}
				o = o[l:]
			}
		default:
			return
		}
	}
	icmp6Checksum(ip, l4)
}
