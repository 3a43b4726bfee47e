package flow

import "encoding/binary"

// Header lengths.
const (
	ethHeaderLen  = 14
	vlanHeaderLen = 4
	arpEthLen     = 28 // ARP for Ethernet and IPv4
	ipv4HeaderLen = 20
	ipv6HeaderLen = 40
	tcpHeaderLen  = 20
	udpHeaderLen  = 8
	sctpHeaderLen = 12
	icmpHeaderLen = 8
	icmp6HdrLen   = 8 // type, code, checksum and the 32 bits after (OVS's icmp6_data_header)
	igmpHeaderLen = 8
)

// Extract fills k with the flow key of the Ethernet frame data received on
// inPort. It reports false, leaving only InPort set, when data is shorter
// than an Ethernet header: such a runt carries no key and the datapath
// drops it, as OVS's does.
//
// Extract never reads outside data and never fails on a malformed frame:
// it fills the fields it could parse, as OVS's miniflow_extract does. Only
// the outer VLAN tag is parsed (OVS's default vlan-limit of 1). An IPv4
// header that fails its sanity checks (version, IHL, total length) leaves
// every L3 and L4 field zero, like an IPv6 header whose payload length
// overruns the frame; the link-layer padding after an IP packet's length
// is never parsed.
func Extract(data []byte, inPort uint32, k *Key) bool {
	ok, _ := ExtractHead(data, len(data), inPort, k)
	return ok
}

// minHead is the shortest head ExtractHead parses: it covers the Ethernet,
// VLAN and LLC/SNAP headers and an ARP packet after them, so only the IP
// and transport headers can lie past a head.
const minHead = 64

// ExtractHead is Extract for a frame of frameLen bytes of which only the
// first len(head) are at hand (a frame whose tail stayed in another
// device's memory). The key is the one Extract would give for the whole
// frame: lengths are checked against frameLen. It reports complete false,
// with k unspecified, when the key depends on bytes past head; then the
// caller extracts again from the whole frame.
func ExtractHead(head []byte, frameLen int, inPort uint32, k *Key) (ok, complete bool) {
	*k = Key{InPort: inPort}
	data := head
	if len(data) < frameLen && len(data) < minHead {
		return false, false
	}
	// Here data is the whole frame or at least minHead bytes.
	if len(data) < ethHeaderLen {
		return false, true
	}
	copy(k.EthDst[:], data[0:6])
	copy(k.EthSrc[:], data[6:12])
	off := 12

	// Outer VLAN tag: needs the tag and the type after it, else the type
	// stays a TPID with no tag ("partial VLAN tag", dropped by NORMAL).
	if t := be16(data[off:]); IsVLANType(t) && len(data)-off >= vlanHeaderLen+2 {
		k.VLANTPID = t
		k.VLANTCI = be16(data[off+2:]) | VLANPresent
		off += vlanHeaderLen
	}
	typ := be16(data[off:])
	off += 2
	if typ < EthTypeMin {
		// 802.3: only LLC/SNAP with a zero OUI carries an Ethernet type.
		typ = EthTypeNone
		if s := data[off:]; len(s) >= 8 && s[0] == 0xaa && s[1] == 0xaa && s[2] == 0x03 &&
			s[3] == 0 && s[4] == 0 && s[5] == 0 {
			if t := be16(s[6:]); t >= EthTypeMin {
				typ = t
				off += 8
			}
		}
	}
	k.EthType = typ
	l3 := data[off:]

	complete = true
	switch typ {
	case EthTypeIPv4:
		complete = extractIPv4(l3, frameLen-off, k)
	case EthTypeIPv6:
		complete = extractIPv6(l3, frameLen-off, k)
	case EthTypeARP, EthTypeRARP:
		extractARP(l3, k)
	}
	return true, complete
}

func extractARP(b []byte, k *Key) {
	if len(b) < arpEthLen {
		return
	}
	// Ethernet hardware, IPv4 protocol, 6- and 4-byte addresses.
	if be16(b[0:]) != 1 || be16(b[2:]) != EthTypeIPv4 || b[4] != 6 || b[5] != 4 {
		return
	}
	if op := be16(b[6:]); op <= 0xff {
		k.NwProto = uint8(op)
	}
	copy(k.ArpSHA[:], b[8:14])
	copy(k.IPv4Src[:], b[14:18])
	copy(k.ArpTHA[:], b[18:24])
	copy(k.IPv4Dst[:], b[24:28])
}

// The extract functions below parse b, the first bytes of a header of n
// bytes (n >= len(b)): lengths are checked against n, and they report
// false as soon as they would read past b. (Where a header's fixed part
// is checked against len(b) first, the compiler drops the bounds checks
// of the reads after.)

func extractIPv4(b []byte, n int, k *Key) bool {
	if len(b) < ipv4HeaderLen {
		return n < ipv4HeaderLen
	}
	if b[0]>>4 != 4 {
		return true
	}
	ihl := int(b[0]&0x0f) * 4
	tot := int(be16(b[2:]))
	if ihl < ipv4HeaderLen || ihl > tot || tot > n {
		return true
	}
	if ihl > len(b) {
		return false
	}
	b, n = b[:min(tot, len(b))], tot // never parse link-layer padding
	copy(k.IPv4Src[:], b[12:16])
	copy(k.IPv4Dst[:], b[16:20])
	k.NwTOS = b[1]
	k.NwTTL = b[8]
	k.NwProto = b[9]
	// More-fragments flag or a fragment offset makes a fragment.
	if fragOff := be16(b[6:]); fragOff&0x3fff != 0 {
		k.NwFrag = FragAny
		if fragOff&0x1fff != 0 {
			k.NwFrag |= FragLater
		}
	}
	if k.NwFrag&FragLater != 0 {
		return true
	}
	return extractL4(b[ihl:], n-ihl, k, false)
}

func extractIPv6(b []byte, n int, k *Key) bool {
	if len(b) < ipv6HeaderLen {
		return n < ipv6HeaderLen
	}
	plen := int(be16(b[4:]))
	if ipv6HeaderLen+plen > n {
		return true
	}
	vtcfl := binary.BigEndian.Uint32(b[0:])
	copy(k.IPv6Src[:], b[8:24])
	copy(k.IPv6Dst[:], b[24:40])
	k.IPv6Label = vtcfl & 0xfffff
	proto, hlim := b[6], b[7]
	b, n = b[ipv6HeaderLen:min(ipv6HeaderLen+plen, len(b))], plen

	// Walk the extension headers. Each step consumes at least 8 bytes, so
	// the loop ends. On a truncated header the L3 fields other than the
	// addresses and label stay zero, as in OVS.
	var frag uint8
	for {
		switch proto {
		case IPProtoHopOpts, IPProtoRouting, IPProtoDstOpts, IPProtoAH, IPProtoFragment:
		default:
			goto done
		}
		if n < 8 {
			return true
		}
		if len(b) < 8 {
			return false
		}
		switch proto {
		case IPProtoHopOpts, IPProtoRouting, IPProtoDstOpts, IPProtoAH:
			l := (int(b[1]) + 1) * 8
			if proto == IPProtoAH {
				l = (int(b[1]) + 2) * 4
			}
			if l > n {
				return true
			}
			if l > len(b) {
				return false
			}
			proto = b[0]
			b, n = b[l:], n-l
		case IPProtoFragment:
			proto = b[0]
			offlg := be16(b[2:])
			b, n = b[8:], n-8
			if offlg != 0 {
				frag = FragAny
				if offlg&0xfff8 != 0 {
					// Only the first fragment has the L4 header.
					frag |= FragLater
					proto = IPProtoFragment
					goto done
				}
			}
		}
	}
done:
	k.NwTOS = uint8(vtcfl >> 20)
	k.NwTTL = hlim
	k.NwProto = proto
	k.NwFrag = frag
	if frag&FragLater != 0 {
		return true
	}
	return extractL4(b, n, k, true)
}

// extractL4 reads a transport header's ports (or ICMP type and code) and
// TCP's flags, if the header's fixed part fits n.
func extractL4(b []byte, n int, k *Key, v6 bool) bool {
	if len(b) < n && len(b) < tcpHeaderLen {
		// The head ends within the largest fixed header read here:
		// complete only if there is nothing to read.
		return l4HeaderLen(k.NwProto, v6) == 0
	}
	switch k.NwProto {
	case IPProtoTCP:
		if n >= tcpHeaderLen {
			hl := int(b[12]>>4) * 4
			if hl >= tcpHeaderLen && hl <= n {
				k.TpSrc = be16(b[0:])
				k.TpDst = be16(b[2:])
				k.TCPFlags = be16(b[12:]) & 0x0fff
			}
		}
	case IPProtoUDP:
		if n >= udpHeaderLen {
			k.TpSrc = be16(b[0:])
			k.TpDst = be16(b[2:])
		}
	case IPProtoSCTP:
		if n >= sctpHeaderLen {
			k.TpSrc = be16(b[0:])
			k.TpDst = be16(b[2:])
		}
	case IPProtoICMP:
		if !v6 && n >= icmpHeaderLen {
			k.TpSrc = uint16(b[0])
			k.TpDst = uint16(b[1])
		}
	case IPProtoIGMP:
		if !v6 && n >= igmpHeaderLen {
			k.TpSrc = uint16(b[0])
			k.TpDst = uint16(b[1])
		}
	case IPProtoICMPv6:
		if v6 && n >= icmp6HdrLen {
			k.TpSrc = uint16(b[0])
			k.TpDst = uint16(b[1])
			if k.TpDst == 0 && (k.TpSrc == ICMPv6NS || k.TpSrc == ICMPv6NA) {
				if len(b) < n {
					// The options may lie past the head.
					return false
				}
				extractND(b[:n], k)
			}
		}
	}
	return true
}

// ND option types and the length of the link-layer address options.
const (
	ndOptSLL    = 1
	ndOptTLL    = 2
	ndOptLLALen = 8
)

// extractND reads a neighbour solicitation's or advertisement's target
// and link-layer address options (b is the whole ICMPv6 message), as OVS's
// parse_icmpv6: an option of length 0 or past the end stops the walk; a
// second option of a kind clears the target and both addresses (the
// options type stays the first option's).
func extractND(b []byte, k *Key) {
	k.NdReserved = binary.BigEndian.Uint32(b[4:])
	b = b[icmp6HdrLen:]
	if len(b) < 16 {
		return
	}
	copy(k.NdTarget[:], b[:16])
	b = b[16:]
	for len(b) >= ndOptLLALen {
		l := int(b[1]) * 8
		if l == 0 || l > len(b) {
			return
		}
		if l == ndOptLLALen && (b[0] == ndOptSLL || b[0] == ndOptTLL) {
			addr := &k.ArpSHA
			if b[0] == ndOptTLL {
				addr = &k.ArpTHA
			}
			if *addr != [6]byte{} {
				k.NdTarget, k.ArpSHA, k.ArpTHA = [16]byte{}, [6]byte{}, [6]byte{}
				return
			}
			copy(addr[:], b[2:8])
			if k.NdOptionsType == 0 {
				k.NdOptionsType = b[0]
			}
		}
		b = b[l:]
	}
}

// l4HeaderLen is the length of the fixed transport header extractL4 reads
// for proto, 0 if it reads none.
func l4HeaderLen(proto uint8, v6 bool) int {
	switch proto {
	case IPProtoTCP:
		return tcpHeaderLen
	case IPProtoUDP:
		return udpHeaderLen
	case IPProtoSCTP:
		return sctpHeaderLen
	case IPProtoICMP, IPProtoIGMP:
		if !v6 {
			return icmpHeaderLen
		}
	case IPProtoICMPv6:
		if v6 {
			return icmp6HdrLen
		}
	}
	return 0
}

func be16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }
