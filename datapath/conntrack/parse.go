package conntrack

import "encoding/binary"

// IP protocols the tracker tells apart.
const (
	protoICMP   = 1
	protoTCP    = 6
	protoUDP    = 17
	protoICMPv6 = 58
)

// ICMP types the tracker knows.
const (
	icmp4EchoReply    = 0
	icmp4Unreach      = 3
	icmp4Redirect     = 5
	icmp4Echo         = 8
	icmp4TimeExceeded = 11
	icmp4ParamProb    = 12
	icmp4Timestamp    = 13
	icmp4TimestampRep = 14
	icmp4InfoRequest  = 15
	icmp4InfoReply    = 16

	icmp6Unreach      = 1
	icmp6TooBig       = 2
	icmp6TimeExceeded = 3
	icmp6ParamProb    = 4
	icmp6Echo         = 128
	icmp6EchoReply    = 129
)

// key is one direction of a connection: what a packet of it carries, in a
// zone. For TCP, UDP and other port-carrying protocols sport and dport are
// the ports; for ICMP queries sport is the identifier and dport the type
// and code (type<<8|code), so that a request and its reply have reverse
// keys. Addresses are IPv4 in the first 4 bytes when v6 is false.
type key struct {
	src, dst     [16]byte
	sport, dport uint16
	zone         uint16
	proto        uint8
	v6           bool
}

// reverse is the key of the packets going the other way.
func (k key) reverse() key {
	r := k
	r.src, r.dst = k.dst, k.src
	if k.isICMP() {
		r.dport = uint16(icmpReplyType(uint8(k.dport>>8), k.v6))<<8 | k.dport&0xff
		return r
	}
	r.sport, r.dport = k.dport, k.sport
	return r
}

func (k *key) isICMP() bool {
	return (k.proto == protoICMP && !k.v6) || (k.proto == protoICMPv6 && k.v6)
}

// icmpReplyType maps an ICMP query type to its reply's and back.
func icmpReplyType(t uint8, v6 bool) uint8 {
	if v6 {
		switch t {
		case icmp6Echo:
			return icmp6EchoReply
		case icmp6EchoReply:
			return icmp6Echo
		}
		return t
	}
	switch t {
	case icmp4Echo:
		return icmp4EchoReply
	case icmp4EchoReply:
		return icmp4Echo
	case icmp4Timestamp:
		return icmp4TimestampRep
	case icmp4TimestampRep:
		return icmp4Timestamp
	case icmp4InfoRequest:
		return icmp4InfoReply
	case icmp4InfoReply:
		return icmp4InfoRequest
	}
	return t
}

// parsed is a frame as the tracker sees it: the key of its IP packet and
// where the headers NAT rewrites lie. Offsets count from the frame start.
type parsed struct {
	key
	l3, l4  int // header offsets
	end     int // end of the IP packet (link-layer padding excluded)
	l4Valid bool
	// tcp fields
	seq, ack    uint32
	win         uint16
	tcpFlags    uint16
	tcpHdrLen   int
	payload     int // L4 payload length
	icmpType    uint8
	icmpCode    uint8
	icmpErr     bool    // an ICMP error: inner holds the quoted packet
	inner       *parsed // allocated for ICMP errors only
	frag        bool
	ipv4HdrLen  int
	ipv6NextOff int // offset of the next-header byte that names the L4 protocol
	// resizable: an ALG may change the frame's length.
	resizable bool
}

// TCP flag bits.
const (
	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpRST = 0x04
	tcpPSH = 0x08
	tcpACK = 0x10
	tcpURG = 0x20
)

// parseFrame parses an Ethernet frame (with at most one VLAN tag, as the
// datapath's flow key). It reports false for a frame that is not IP, is
// malformed, or is a fragment: such packets are invalid to the tracker.
func parseFrame(b []byte, p *parsed) bool {
	if len(b) < 14 {
		return false
	}
	off := 12
	typ := binary.BigEndian.Uint16(b[off:])
	if typ == 0x8100 || typ == 0x88a8 {
		if len(b) < 18 {
			return false
		}
		off += 4
		typ = binary.BigEndian.Uint16(b[off:])
	}
	off += 2
	switch typ {
	case 0x0800:
		return parseIPv4(b, off, len(b), p, false)
	case 0x86dd:
		return parseIPv6(b, off, len(b), p, false)
	}
	return false
}

// parseIPv4 parses the IPv4 packet at b[off:end]. Within an ICMP error
// (inner) the packet may be truncated after 8 bytes of its transport
// header and its total length is not checked against what is there.
func parseIPv4(b []byte, off, end int, p *parsed, inner bool) bool {
	if end-off < 20 {
		return false
	}
	h := b[off:end]
	if h[0]>>4 != 4 {
		return false
	}
	ihl := int(h[0]&0x0f) * 4
	tot := int(binary.BigEndian.Uint16(h[2:]))
	if ihl < 20 || ihl > len(h) || tot < ihl {
		return false
	}
	if !inner {
		if tot > len(h) {
			return false
		}
		end = off + tot
	}
	p.v6 = false
	p.l3 = off
	p.ipv4HdrLen = ihl
	p.end = end
	p.proto = h[9]
	p.src, p.dst = [16]byte{}, [16]byte{}
	copy(p.src[:4], h[12:16])
	copy(p.dst[:4], h[16:20])
	if binary.BigEndian.Uint16(h[6:])&0x3fff != 0 {
		p.frag = true
		return false
	}
	return parseL4(b, off+ihl, end, p, inner)
}

func parseIPv6(b []byte, off, end int, p *parsed, inner bool) bool {
	if end-off < 40 {
		return false
	}
	h := b[off:end]
	if h[0]>>4 != 6 {
		return false
	}
	plen := int(binary.BigEndian.Uint16(h[4:]))
	if !inner {
		if 40+plen > len(h) {
			return false
		}
		end = off + 40 + plen
	}
	p.v6 = true
	p.l3 = off
	p.end = end
	copy(p.src[:], h[8:24])
	copy(p.dst[:], h[24:40])
	proto := h[6]
	p.ipv6NextOff = off + 6
	l4 := off + 40
	for {
		switch proto {
		case 0, 43, 60, 51: // hop-by-hop, routing, destination options, AH
			if end-l4 < 8 {
				return false
			}
			l := (int(b[l4+1]) + 1) * 8
			if proto == 51 {
				l = (int(b[l4+1]) + 2) * 4
			}
			if end-l4 < l {
				return false
			}
			p.ipv6NextOff = l4
			proto = b[l4]
			l4 += l
			continue
		case 44:
			p.frag = true
			return false
		}
		break
	}
	p.proto = proto
	return parseL4(b, l4, end, p, inner)
}

// parseL4 parses the transport header at b[off:end].
func parseL4(b []byte, off, end int, p *parsed, inner bool) bool {
	p.l4 = off
	h := b[off:end]
	p.sport, p.dport = 0, 0
	switch p.proto {
	case protoTCP:
		if inner {
			if len(h) < 8 {
				return false
			}
			p.sport = binary.BigEndian.Uint16(h[0:])
			p.dport = binary.BigEndian.Uint16(h[2:])
			return true
		}
		if len(h) < 20 {
			return false
		}
		hl := int(h[12]>>4) * 4
		if hl < 20 || hl > len(h) {
			return false
		}
		p.sport = binary.BigEndian.Uint16(h[0:])
		p.dport = binary.BigEndian.Uint16(h[2:])
		p.seq = binary.BigEndian.Uint32(h[4:])
		p.ack = binary.BigEndian.Uint32(h[8:])
		p.tcpFlags = binary.BigEndian.Uint16(h[12:]) & 0x0fff
		p.win = binary.BigEndian.Uint16(h[14:])
		p.tcpHdrLen = hl
		p.payload = len(h) - hl
	case protoUDP:
		if len(h) < 8 {
			return false
		}
		p.sport = binary.BigEndian.Uint16(h[0:])
		p.dport = binary.BigEndian.Uint16(h[2:])
		if !inner {
			if ul := int(binary.BigEndian.Uint16(h[4:])); ul < 8 || ul > len(h) {
				return false
			}
		}
	case protoICMP, protoICMPv6:
		if (p.proto == protoICMP) == p.v6 {
			return parseOther(p)
		}
		if len(h) < 8 {
			return false
		}
		p.icmpType, p.icmpCode = h[0], h[1]
		if isICMPError(p.icmpType, p.v6) {
			if inner {
				return false // an error about an error
			}
			p.icmpErr = true
			in := &parsed{}
			in.zone = p.zone
			var ok bool
			if p.v6 {
				ok = parseIPv6(b, off+8, end, in, true)
			} else {
				ok = parseIPv4(b, off+8, end, in, true)
			}
			if !ok || in.v6 != p.v6 {
				return false
			}
			// The quoted packet went to the error's sender's side: its
			// source must be the error's destination.
			if in.src != p.dst {
				return false
			}
			p.inner = in
			return true
		}
		if !isICMPQuery(p.icmpType, p.v6) {
			return false
		}
		p.sport = binary.BigEndian.Uint16(h[4:])
		p.dport = uint16(p.icmpType)<<8 | uint16(p.icmpCode)
	default:
		return parseOther(p)
	}
	p.l4Valid = true
	return true
}

func parseOther(p *parsed) bool {
	p.sport, p.dport = 0, 0
	p.l4Valid = false
	return true
}

func isICMPError(t uint8, v6 bool) bool {
	if v6 {
		return t == icmp6Unreach || t == icmp6TooBig || t == icmp6TimeExceeded || t == icmp6ParamProb
	}
	return t == icmp4Unreach || t == icmp4Redirect || t == icmp4TimeExceeded || t == icmp4ParamProb
}

func isICMPQuery(t uint8, v6 bool) bool {
	if v6 {
		return t == icmp6Echo || t == icmp6EchoReply
	}
	switch t {
	case icmp4Echo, icmp4EchoReply, icmp4Timestamp, icmp4TimestampRep, icmp4InfoRequest, icmp4InfoReply:
		return true
	}
	return false
}

// icmpValidNew: only requests open a connection (conntrack-icmp.c).
func icmpValidNew(t uint8, v6 bool) bool {
	if v6 {
		return t == icmp6Echo
	}
	return t == icmp4Echo || t == icmp4InfoRequest || t == icmp4Timestamp
}
