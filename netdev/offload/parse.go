package offload

import "encoding/binary"

const (
	etherTypeIPv4  = 0x0800
	etherTypeIPv6  = 0x86dd
	etherTypeVLAN  = 0x8100 // 802.1Q
	etherTypeQinQ  = 0x88a8 // 802.1ad
	etherTypeQinQ1 = 0x9100 // pre-standard 802.1ad

	protoTCP = 6
	protoUDP = 17

	tcpFlagFIN = 0x01
	tcpFlagPSH = 0x08
	tcpFlagCWR = 0x80

	// maxIPv6ExtHdrs bounds the walk of an IPv6 extension header chain.
	maxIPv6ExtHdrs = 8
)

// headers is where a frame's network and transport headers are.
type headers struct {
	l3, l4 int   // offsets of the network and transport headers
	v4     bool  // IPv4, else IPv6
	proto  uint8 // IPPROTO_TCP, IPPROTO_UDP, or 0 if the frame has no L4 header we know (fragment, other protocol)
	l4len  int   // length of the TCP or UDP header
}

// parse finds the IP and TCP/UDP headers of an Ethernet frame, through any
// number of VLAN tags and IPv6 extension headers. It fails only when the
// frame is not IP or its headers are cut short.
func parse(frame []byte) (h headers, err error) {
	off := 12
	var et uint16
	for {
		if off+2 > len(frame) {
			return h, ErrMalformed
		}
		et = binary.BigEndian.Uint16(frame[off:])
		if et != etherTypeVLAN && et != etherTypeQinQ && et != etherTypeQinQ1 {
			break
		}
		off += 4
	}
	h.l3 = off + 2
	ip := frame[h.l3:]
	switch et {
	case etherTypeIPv4:
		if len(ip) < 20 || ip[0]>>4 != 4 {
			return h, ErrMalformed
		}
		ihl := int(ip[0]&0xf) * 4
		if ihl < 20 || len(ip) < ihl {
			return h, ErrMalformed
		}
		h.v4 = true
		h.l4 = h.l3 + ihl
		if binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 { // MF or a fragment offset
			return h, nil
		}
		h.proto = ip[9]
	case etherTypeIPv6:
		if len(ip) < 40 || ip[0]>>4 != 6 {
			return h, ErrMalformed
		}
		next, off := ip[6], 40
		for i := 0; ; i++ {
			if i == maxIPv6ExtHdrs {
				return h, ErrMalformed
			}
			var n int
			switch next {
			case 0, 43, 60: // hop-by-hop, routing, destination options
				if off+2 > len(ip) {
					return h, ErrMalformed
				}
				n = (int(ip[off+1]) + 1) * 8
			case 51: // AH
				if off+2 > len(ip) {
					return h, ErrMalformed
				}
				n = (int(ip[off+1]) + 2) * 4
			default:
				n = -1
			}
			if n < 0 {
				break
			}
			if off+n > len(ip) {
				return h, ErrMalformed
			}
			next, off = ip[off], off+n
		}
		h.l4 = h.l3 + off
		if next == 44 { // fragment
			return h, nil
		}
		h.proto = next
	default:
		return h, ErrMalformed
	}
	switch h.proto {
	case protoTCP:
		if h.l4+20 > len(frame) {
			return h, ErrMalformed
		}
		h.l4len = int(frame[h.l4+12]>>4) * 4
		if h.l4len < 20 || h.l4+h.l4len > len(frame) {
			return h, ErrMalformed
		}
	case protoUDP:
		h.l4len = 8
		if h.l4+8 > len(frame) {
			return h, ErrMalformed
		}
	default:
		h.proto = 0
	}
	return h, nil
}

// csumOffset is where the checksum field is in the transport header.
func (h *headers) csumOffset() uint16 {
	if h.proto == protoTCP {
		return 16
	}
	return 6
}
