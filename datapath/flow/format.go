package flow

import (
	"fmt"
	"net/netip"
	"strings"
)

// String formats k in the style of OVS's datapath flow keys
// (lib/odp-util.c), e.g.
//
//	in_port(1),eth(src=00:00:00:00:00:01,dst=ff:ff:ff:ff:ff:ff),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=5000,dst=53)
//
// A VLAN-tagged key shows vlan(vid=V,pcp=P) and wraps the inner headers
// in encap(...).
func (k Key) String() string {
	var b strings.Builder
	k.formatTunnel(&b)
	fmt.Fprintf(&b, "in_port(%d),eth(src=%s,dst=%s)", k.InPort, MAC(k.EthSrc), MAC(k.EthDst))
	sep := ","
	switch {
	case k.HasVLAN():
		fmt.Fprintf(&b, ",eth_type(0x%04x),vlan(vid=%d,pcp=%d),encap(", k.VLANTPID, k.VID(), k.VLANTCI>>13)
		sep = ""
	case IsVLANType(k.EthType):
		// A partial tag: nothing follows the type.
		fmt.Fprintf(&b, ",eth_type(0x%04x)", k.EthType)
		return b.String()
	}
	fmt.Fprintf(&b, "%seth_type(0x%04x)", sep, k.EthType)
	switch k.EthType {
	case EthTypeIPv4:
		fmt.Fprintf(&b, ",ipv4(src=%s,dst=%s,proto=%d,tos=%d,ttl=%d,frag=%s)",
			netip.AddrFrom4(k.IPv4Src), netip.AddrFrom4(k.IPv4Dst), k.NwProto, k.NwTOS, k.NwTTL, fragString(k.NwFrag))
		k.formatL4(&b)
	case EthTypeIPv6:
		fmt.Fprintf(&b, ",ipv6(src=%s,dst=%s,label=%d,proto=%d,tclass=%d,hlimit=%d,frag=%s)",
			netip.AddrFrom16(k.IPv6Src), netip.AddrFrom16(k.IPv6Dst), k.IPv6Label, k.NwProto, k.NwTOS, k.NwTTL, fragString(k.NwFrag))
		k.formatL4(&b)
	case EthTypeARP, EthTypeRARP:
		fmt.Fprintf(&b, ",arp(sip=%s,tip=%s,op=%d,sha=%s,tha=%s)",
			netip.AddrFrom4(k.IPv4Src), netip.AddrFrom4(k.IPv4Dst), k.NwProto, MAC(k.ArpSHA), MAC(k.ArpTHA))
	}
	if k.HasVLAN() {
		b.WriteString(")")
	}
	return b.String()
}

func (k *Key) formatL4(b *strings.Builder) {
	if k.NwFrag&FragLater != 0 {
		return
	}
	v6 := k.EthType == EthTypeIPv6
	switch {
	case k.NwProto == IPProtoTCP:
		fmt.Fprintf(b, ",tcp(src=%d,dst=%d),tcp_flags(0x%03x)", k.TpSrc, k.TpDst, k.TCPFlags)
	case k.NwProto == IPProtoUDP:
		fmt.Fprintf(b, ",udp(src=%d,dst=%d)", k.TpSrc, k.TpDst)
	case k.NwProto == IPProtoSCTP:
		fmt.Fprintf(b, ",sctp(src=%d,dst=%d)", k.TpSrc, k.TpDst)
	case k.NwProto == IPProtoICMP && !v6:
		fmt.Fprintf(b, ",icmp(type=%d,code=%d)", k.ICMPType(), k.ICMPCode())
	case k.NwProto == IPProtoICMPv6 && v6:
		fmt.Fprintf(b, ",icmpv6(type=%d,code=%d)", k.ICMPType(), k.ICMPCode())
		if k.IsND() {
			fmt.Fprintf(b, ",nd(target=%s,sll=%s,tll=%s)", netip.AddrFrom16(k.NdTarget), MAC(k.ArpSHA), MAC(k.ArpTHA))
		}
	}
}

func fragString(f uint8) string {
	switch {
	case f&FragLater != 0:
		return "later"
	case f&FragAny != 0:
		return "first"
	default:
		return "no"
	}
}

// MAC formats an Ethernet address as OVS does (ETH_ADDR_FMT).
type MAC [6]byte

func (m MAC) String() string {
	const hex = "0123456789abcdef"
	var b [17]byte
	for i, c := range m {
		if i > 0 {
			b[i*3-1] = ':'
		}
		b[i*3] = hex[c>>4]
		b[i*3+1] = hex[c&0xf]
	}
	return string(b[:])
}

// IsMulticast reports whether m is a multicast (or broadcast) address.
func (m MAC) IsMulticast() bool { return m[0]&1 != 0 }

// IsBroadcast reports whether m is ff:ff:ff:ff:ff:ff.
func (m MAC) IsBroadcast() bool { return m == MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} }

// formatTunnel writes a decapsulated packet's tunnel metadata as OVS's
// format_odp_tun_attr, e.g.
// "tunnel(tun_id=0x5,src=10.0.0.1,dst=10.0.0.2,ttl=64,tp_src=1,tp_dst=4789,flags(-df-csum+key)),".
func (k *Key) formatTunnel(b *strings.Builder) {
	if !k.HasTunnel() {
		return
	}
	addr := func(a [16]byte) netip.Addr { return netip.AddrFrom16(a).Unmap() }
	fmt.Fprintf(b, "tunnel(tun_id=%#x,src=%s,dst=%s,", k.TunID, addr(k.TunSrc), addr(k.TunDst))
	if k.TunTOS != 0 {
		fmt.Fprintf(b, "tos=%#x,", k.TunTOS)
	}
	fmt.Fprintf(b, "ttl=%d,", k.TunTTL)
	if k.TunTpDst != 0 {
		fmt.Fprintf(b, "tp_src=%d,tp_dst=%d,", k.TunTpSrc, k.TunTpDst)
	}
	if k.TunGBPID != 0 || k.TunGBPFlags != 0 {
		fmt.Fprintf(b, "vxlan(gbp(id=%d,flags=%s)),", k.TunGBPID, hexAlt(uint64(k.TunGBPFlags)))
	}
	if k.TunOptsLen > 0 {
		b.WriteString("geneve(")
		formatGeneve(b, k.Options(), nil, false)
		b.WriteString("),")
	}
	b.WriteString("flags(")
	for _, f := range []struct {
		bit  uint16
		name string
	}{{TunFlagDontFragment, "df"}, {TunFlagCsum, "csum"}, {TunFlagKey, "key"}, {TunFlagOAM, "oam"}} {
		if k.TunFlags&f.bit != 0 {
			b.WriteString("+" + f.name)
		} else {
			b.WriteString("-" + f.name)
		}
	}
	b.WriteString(")),")
}
