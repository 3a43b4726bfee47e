package datapath

import (
	"encoding/binary"
	"hash/crc32"
	"strconv"

	"github.com/govs/govs/datapath/flow"
)

// More header fields an ActionSet writes.
const (
	// SetIPv4TOS and SetIPv6TClass write the bits of Val[1] of the IPv4
	// TOS byte or the IPv6 traffic class (DSCP and ECN) to Val[0]'s (OVS's
	// masked set, as ip_dscp and ip_ecn write part of the byte).
	SetIPv4TOS SetField = 64 + iota
	SetIPv6TClass
	// SetSCTPSrc and SetSCTPDst write an SCTP port (2 bytes), keeping the
	// CRC32c checksum right if it was.
	SetSCTPSrc
	SetSCTPDst
	// SetSkbMark writes the bits of the packet's mark its mask (the 4
	// bytes after the value's) selects to the value's. A userspace datapath
	// cannot hand a mark to the kernel through AF_PACKET: like OVS's
	// netdev datapath, govs keeps it as metadata of the translation only
	// and the action changes no byte of the packet.
	SetSkbMark
	// SetSkbPriority sets the packet's priority (packet.SkbPriority,
	// the 4 bytes of the value), which selects its queue on output.
	SetSkbPriority
)

// SetTOS returns the action that writes the bits mask of the IPv4 TOS
// byte (the IPv6 traffic class if v6) to val's.
func SetTOS(v6 bool, val, mask uint8) Action {
	f := SetIPv4TOS
	if v6 {
		f = SetIPv6TClass
	}
	return Set(f, []byte{val & mask, mask})
}

// SetMark returns the action that writes the bits mask of the packet's
// mark to val's.
func SetMark(val, mask uint32) Action {
	return Set(SetSkbMark, binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, val&mask), mask))
}

// SetPriority returns the action that sets the packet's priority to v.
func SetPriority(v uint32) Action {
	return Set(SetSkbPriority, binary.BigEndian.AppendUint32(nil, v))
}

// setPartMore is setPart for the set actions of this file.
func (a Action) setPartMore() (hdr string, rank int, kv string) {
	v := a.Val[:]
	masked := func(name string) string {
		s := name + "=" + hexAlt(uint64(v[0]))
		if v[1] != 0xff {
			s += "/" + hexAlt(uint64(v[1]))
		}
		return s
	}
	switch a.Field {
	case SetIPv4TOS:
		return "ipv4", 3, masked("tos")
	case SetIPv6TClass:
		return "ipv6", 4, masked("tclass")
	case SetSCTPSrc:
		return "sctp", 0, "src=" + strconv.Itoa(int(binary.BigEndian.Uint16(v)))
	case SetSCTPDst:
		return "sctp", 1, "dst=" + strconv.Itoa(int(binary.BigEndian.Uint16(v)))
	case SetSkbMark:
		s := hexAlt(uint64(binary.BigEndian.Uint32(v)))
		if m := binary.BigEndian.Uint32(v[4:]); m != 0xffffffff {
			s += "/" + hexAlt(uint64(m))
		}
		return "skb_mark", 0, s
	case SetSkbPriority:
		return "skb_priority", 0, hexAlt(uint64(binary.BigEndian.Uint32(v)))
	}
	return "?", 0, ""
}

// setIPv4TOS writes the masked TOS bits of the IPv4 header ip, keeping
// its checksum right.
func setIPv4TOS(ip []byte, val *[16]byte) {
	old := binary.BigEndian.Uint16(ip)
	ip[1] = ip[1]&^val[1] | val[0]&val[1]
	csumReplace(ip[10:12], old, binary.BigEndian.Uint16(ip), false)
}

// setIPv6TClass writes the masked traffic class bits of the IPv6 header
// ip (bits 4-11 of its first word).
func setIPv6TClass(ip []byte, val *[16]byte) {
	tc := ip[0]<<4 | ip[1]>>4
	tc = tc&^val[1] | val[0]&val[1]
	ip[0] = ip[0]&0xf0 | tc>>4
	ip[1] = ip[1]&0x0f | tc<<4
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sctpCRC is the CRC32c of the SCTP packet l4 with its checksum field
// zero, as the checksum field holds it (little-endian on the wire).
func sctpCRC(l4 []byte) uint32 {
	var zero [4]byte
	c := crc32.Update(0, castagnoli, l4[:8])
	c = crc32.Update(c, castagnoli, zero[:])
	return crc32.Update(c, castagnoli, l4[12:])
}

// setSCTPPort writes the SCTP source (f SetSCTPSrc) or destination port
// of the SCTP packet l4. As OVS's packet_set_sctp_port: the checksum is
// computed again, and a checksum that was wrong stays as wrong.
func setSCTPPort(l4 []byte, f SetField, val *[16]byte) {
	if len(l4) < 12 {
		return
	}
	old := binary.LittleEndian.Uint32(l4[8:])
	before := sctpCRC(l4)
	off := 0
	if f == SetSCTPDst {
		off = 2
	}
	copy(l4[off:off+2], val[:2])
	binary.LittleEndian.PutUint32(l4[8:], old^before^sctpCRC(l4))
}

// setMore applies the set actions of this file to the IPv4 (v6 false) or
// IPv6 packet ip whose transport header, if it is a first fragment, is
// l4 of protocol proto; it reports whether f was one of them.
func setMore(ip, l4 []byte, proto uint8, v6 bool, f SetField, val *[16]byte) bool {
	if !v6 && l4 != nil {
		// Within the IPv4 total length: a checksum over the whole
		// segment must not cover the frame's padding.
		ihl, tl := len(ip)-len(l4), int(binary.BigEndian.Uint16(ip[2:]))
		if tl < ihl || tl > len(ip) {
			l4 = nil
		} else {
			l4 = ip[ihl:tl]
		}
	}
	switch f {
	case SetIPv4TOS:
		if !v6 {
			setIPv4TOS(ip, val)
		}
	case SetIPv6TClass:
		if v6 {
			setIPv6TClass(ip, val)
		}
	case SetSCTPSrc, SetSCTPDst:
		if proto == flow.IPProtoSCTP && l4 != nil {
			setSCTPPort(l4, f, val)
		}
	case SetSkbMark, SetSkbPriority:
	default:
		return false
	}
	return true
}
