package datapath

import (
	"encoding/binary"
	"net/netip"
	"strconv"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/datapath/packet"
)

// SetMasked returns the action that writes the bits of field that mask
// selects to val's, leaving the others as the packet has them (OVS's
// set_masked: a translation that examined and wrote only some bits of a
// field writes only those, and its megaflow need not match the rest).
// Only the fields maskable reports can be written this way.
func SetMasked(field SetField, val, mask []byte) Action {
	a := Set(field, val)
	m := new([16]byte)
	copy(m[:], mask)
	for i := range a.Val {
		a.Val[i] &= m[i]
	}
	a.SetMask = m
	return a
}

// TpSetMasked is TpSet writing only the bits of port that mask selects.
func TpSetMasked(field SetField, proto uint8, port, mask uint16) Action {
	a := TpSet(field, proto, port&mask)
	m := new([16]byte)
	binary.BigEndian.PutUint16(m[:], mask)
	a.SetMask = m
	return a
}

// Maskable reports whether a set of field can be masked (SetMasked).
// OVS masks every header's set but ICMP's; govs does not mask SCTP ports
// nor the neighbour discovery fields either, which it sets whole.
func Maskable(field SetField) bool {
	switch field {
	case SetEthSrc, SetEthDst, SetIPv4Src, SetIPv4Dst, SetIPv4TTL, SetTpSrc, SetTpDst,
		SetIPv6Src, SetIPv6Dst, SetIPv6Label, SetIPv6HopLimit,
		SetARPOp, SetARPSHA, SetARPSPA, SetARPTHA, SetARPTPA:
		return true
	}
	return false
}

// applySet applies a set action to p, masked if mask is not nil: the
// field's new value is its bits outside the mask and val's inside, written
// as a whole set writes it (checksums kept right).
func applySet(p *packet.Packet, f SetField, val, mask *[16]byte) {
	if mask == nil {
		setField(p, f, val)
		return
	}
	cur := fieldBytes(p.Data(), f)
	if cur == nil {
		return // the packet lacks the field
	}
	nv := *val
	for i := range cur {
		nv[i] = cur[i]&^mask[i] | val[i]&mask[i]
	}
	setField(p, f, &nv)
}

// fieldBytes returns the bytes of a maskable field in frame d, as setField
// finds them, or nil if the packet has no such field. IPv6's flow label is
// the first 4 bytes of the header (the label their low 20 bits).
func fieldBytes(d []byte, f SetField) []byte {
	switch f {
	case SetEthSrc:
		if len(d) >= 12 {
			return d[6:12]
		}
		return nil
	case SetEthDst:
		if len(d) >= 12 {
			return d[0:6]
		}
		return nil
	}
	l3, typ := l3Offset(d)
	if l3 < 0 {
		return nil
	}
	ip := d[l3:]
	ports := func(proto uint8, l4 []byte) []byte {
		if (proto != flow.IPProtoTCP && proto != flow.IPProtoUDP) || len(l4) < 4 {
			return nil
		}
		if f == SetTpSrc {
			return l4[0:2]
		}
		return l4[2:4]
	}
	switch typ {
	case flow.EthTypeIPv4:
		if len(ip) < 20 {
			return nil
		}
		ihl := int(ip[0]&0x0f) * 4
		if ihl < 20 || len(ip) < ihl {
			return nil
		}
		switch f {
		case SetIPv4Src:
			return ip[12:16]
		case SetIPv4Dst:
			return ip[16:20]
		case SetIPv4TTL:
			return ip[8:9]
		case SetTpSrc, SetTpDst:
			if binary.BigEndian.Uint16(ip[6:])&0x1fff != 0 {
				return nil // a later fragment has no ports
			}
			return ports(ip[9], ip[ihl:])
		}
	case flow.EthTypeIPv6:
		if len(ip) < 40 {
			return nil
		}
		switch f {
		case SetIPv6Src:
			return ip[8:24]
		case SetIPv6Dst:
			return ip[24:40]
		case SetIPv6HopLimit:
			return ip[7:8]
		case SetIPv6Label:
			return ip[0:4]
		case SetTpSrc, SetTpDst:
			proto, l4 := ipv6L4(ip)
			return ports(proto, l4)
		}
	case flow.EthTypeARP, flow.EthTypeRARP:
		if len(ip) < 28 || binary.BigEndian.Uint16(ip) != 1 || binary.BigEndian.Uint16(ip[2:]) != flow.EthTypeIPv4 ||
			ip[4] != 6 || ip[5] != 4 {
			return nil
		}
		switch f {
		case SetARPOp:
			return ip[6:8]
		case SetARPSHA:
			return ip[8:14]
		case SetARPSPA:
			return ip[14:18]
		case SetARPTHA:
			return ip[18:24]
		case SetARPTPA:
			return ip[24:28]
		}
	}
	return nil
}

// maskSuffix is how OVS's odp-util shows a set_masked field's mask after
// its value: "/MASK" in the value's own notation (addresses), or in hex
// (numbers).
func maskSuffix(f SetField, m *[16]byte) string {
	switch f {
	case SetEthSrc, SetEthDst, SetARPSHA, SetARPTHA:
		return "/" + flow.MAC(m[:6]).String()
	case SetIPv4Src, SetIPv4Dst, SetARPSPA, SetARPTPA:
		return "/" + netip.AddrFrom4([4]byte(m[:4])).String()
	case SetIPv6Src, SetIPv6Dst:
		return "/" + netip.AddrFrom16(*m).String()
	case SetIPv4TTL, SetIPv6HopLimit:
		return "/0x" + strconv.FormatUint(uint64(m[0]), 16)
	case SetTpSrc, SetTpDst, SetARPOp:
		return "/0x" + strconv.FormatUint(uint64(binary.BigEndian.Uint16(m[:])), 16)
	case SetIPv6Label:
		return "/0x" + strconv.FormatUint(uint64(binary.BigEndian.Uint32(m[:])), 16)
	}
	return ""
}
