package datapath

import (
	"encoding/binary"
	"net/netip"
	"strconv"

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
)

// Set returns the action that writes val (big-endian, the field's size)
// to field.
func Set(field SetField, val []byte) Action {
	a := Action{Kind: ActionSet, Field: field}
	copy(a.Val[:], val)
	return a
}

func (a Action) setString() string {
	v := a.Val[:]
	switch a.Field {
	case SetEthSrc:
		return "set(eth(src=" + flow.MAC(v[:6]).String() + "))"
	case SetEthDst:
		return "set(eth(dst=" + flow.MAC(v[:6]).String() + "))"
	case SetIPv4Src:
		return "set(ipv4(src=" + netip.AddrFrom4([4]byte(v[:4])).String() + "))"
	case SetIPv4Dst:
		return "set(ipv4(dst=" + netip.AddrFrom4([4]byte(v[:4])).String() + "))"
	case SetIPv4TTL:
		return "set(ipv4(ttl=" + strconv.Itoa(int(v[0])) + "))"
	case SetIPv6HopLimit:
		return "set(ipv6(hlimit=" + strconv.Itoa(int(v[0])) + "))"
	case SetTpSrc:
		return "set(l4(src=" + strconv.Itoa(int(binary.BigEndian.Uint16(v))) + "))"
	case SetTpDst:
		return "set(l4(dst=" + strconv.Itoa(int(binary.BigEndian.Uint16(v))) + "))"
	}
	return "set(?)"
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
func setField(p *packet.Packet, f SetField, val *[16]byte) {
	d := p.Data()
	switch f {
	case SetEthSrc:
		if len(d) >= 12 {
			copy(d[6:12], val[:6])
		}
		return
	case SetEthDst:
		if len(d) >= 12 {
			copy(d[0:6], val[:6])
		}
		return
	}
	l3, typ := l3Offset(d)
	if l3 < 0 {
		return
	}
	partial := p.Offload.Flags&packet.NeedsCsum != 0
	if typ == flow.EthTypeIPv6 {
		if f == SetIPv6HopLimit && len(d) >= l3+40 {
			d[l3+7] = val[0]
		}
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
	switch f {
	case SetIPv4Src, SetIPv4Dst:
		off := 12
		if f == SetIPv4Dst {
			off = 16
		}
		for i := 0; i < 4; i += 2 {
			old, new := binary.BigEndian.Uint16(ip[off+i:]), binary.BigEndian.Uint16(val[i:])
			csumReplace(ip[10:12], old, new, false)
			if l4csum != nil {
				// The addresses are in the pseudo-header.
				csumReplace(l4csum, old, new, partial)
			}
		}
		copy(ip[off:off+4], val[:4])
	case SetIPv4TTL:
		old := binary.BigEndian.Uint16(ip[8:])
		ip[8] = val[0]
		csumReplace(ip[10:12], old, binary.BigEndian.Uint16(ip[8:]), false)
	case SetTpSrc, SetTpDst:
		if l4 == nil || (ip[9] != flow.IPProtoTCP && ip[9] != flow.IPProtoUDP) || len(l4) < 4 {
			return
		}
		off := 0
		if f == SetTpDst {
			off = 2
		}
		old, new := binary.BigEndian.Uint16(l4[off:]), binary.BigEndian.Uint16(val[:])
		if l4csum != nil && !partial {
			// A partial checksum is completed over the new ports.
			csumReplace(l4csum, old, new, false)
		}
		binary.BigEndian.PutUint16(l4[off:], new)
	}
}
