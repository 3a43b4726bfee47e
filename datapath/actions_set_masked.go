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
// as a whole set writes it (checksums kept right), in the one walk of the
// headers that finds the field.
func applySet(p *packet.Packet, f SetField, val, mask *[16]byte) {
	if mask != nil && !Maskable(f) {
		return
	}
	setFieldMasked(p, f, val, mask)
}

// masked returns val if mask is nil, else in *buf the value of a masked
// set of a field whose bytes are cur: cur's bits outside mask, val's
// inside.
func masked(buf *[16]byte, cur []byte, val, mask *[16]byte) *[16]byte {
	if mask == nil {
		return val
	}
	*buf = *val
	for i := range cur {
		buf[i] = cur[i]&^mask[i] | val[i]&mask[i]
	}
	return buf
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
