package datapath

import (
	"encoding/binary"
	"hash/crc32"
	"net/netip"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
)

// sctpFrame is an IPv4 (or IPv6) SCTP packet, ports 1 and 2, with a right
// CRC32c unless bad, then two bytes of Ethernet padding.
func sctpFrame(v6, bad bool) []byte {
	seg := make([]byte, 28) // common header and a 16-byte chunk
	binary.BigEndian.PutUint16(seg, 1)
	binary.BigEndian.PutUint16(seg[2:], 2)
	for i := 12; i < len(seg); i++ {
		seg[i] = byte(i)
	}
	// The RFC 3309 checksum, least significant byte first.
	binary.LittleEndian.PutUint32(seg[8:], crc32.Checksum(seg, crc32.MakeTable(crc32.Castagnoli)))
	if bad {
		seg[8] ^= 0x5a
	}
	f := dptest.Frame{Src: dptest.MAC("00:00:00:00:00:01"), Dst: dptest.MAC("00:00:00:00:00:02"), Payload: seg}
	if v6 {
		f.IPv6 = &dptest.IPv6{Src: netip.MustParseAddr("2001:db8::1"), Dst: netip.MustParseAddr("2001:db8::2"), TrafficClass: 0xfd}
		b := f.Bytes()
		b[14+6] = flow.IPProtoSCTP
		return append(b, 0xee, 0xee)
	} else {
		f.IPv4 = &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), Proto: flow.IPProtoSCTP, TOS: 0xfd}
	}
	return append(f.Bytes(), 0xee, 0xee)
}

// The TOS byte and traffic class take the masked bits only (IPv4's header
// checksum kept right); an SCTP port change keeps a right CRC32c right
// and a wrong one as wrong; a mark changes no byte.
func TestSetTOSAndSCTP(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		for _, bad := range []bool{false, true} {
			b := sctpFrame(v6, bad)
			p := packetOf(b)
			for _, a := range []Action{
				SetTOS(v6, 0x20, 0xfc), SetTOS(v6, 0x02, 0x03), Set(SetSCTPSrc, []byte{0, 99}), Set(SetSCTPDst, []byte{0x1f, 0x90}),
				SetMark(5, 0xffffffff),
			} {
				setField(p, a.Field, &a.Val)
			}
			d := p.Data()
			l3, _ := l3Offset(d)
			var tos uint8
			var seg []byte
			if v6 {
				tos = d[l3]<<4 | d[l3+1]>>4
				seg = d[l3+40 : len(d)-2]
			} else {
				tos = d[l3+1]
				seg = d[l3+20 : len(d)-2]
				if got := dptest.Checksum(d[l3 : l3+20]); got != 0 {
					t.Errorf("v6=%v: IPv4 header checksum off by %#x", v6, got)
				}
			}
			if tos != 0x22 {
				t.Errorf("v6=%v: TOS %#x, want 0x22", v6, tos)
			}
			if binary.BigEndian.Uint16(seg) != 99 || binary.BigEndian.Uint16(seg[2:]) != 8080 {
				t.Errorf("v6=%v: ports not set: %x", v6, seg[:4])
			}
			right := binary.LittleEndian.Uint32(seg[8:]) == sctpCRC(seg)
			if right == bad {
				t.Errorf("v6=%v bad=%v: checksum right=%v after the port change", v6, bad, right)
			}
			if d[len(d)-1] != 0xee || d[len(d)-2] != 0xee {
				t.Errorf("padding changed")
			}
		}
	}
	if s := (Actions{SetTOS(false, 0x20, 0xfc), SetTOS(true, 0x2, 0x3), Set(SetSCTPSrc, []byte{0, 99}), SetMark(5, 0xffffffff), SetMark(0x10, 0x30)}).String(); s !=
		"set(ipv4(tos=0x20/0xfc)),set(ipv6(tclass=0x2/0x3)),set(sctp(src=99)),set(skb_mark(0x5)),set(skb_mark(0x10/0x30))" {
		t.Errorf("String: %s", s)
	}
}

// Set actions on any frame never panic nor change its length.
func FuzzSetTOSAndSCTP(f *testing.F) {
	f.Add(sctpFrame(false, false), uint8(0), uint8(0x20), uint8(0xfc))
	f.Add(sctpFrame(true, true), uint8(3), uint8(7), uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, which, v0, v1 uint8) {
		if len(b) > 9000 {
			return
		}
		fields := []SetField{SetIPv4TOS, SetIPv6TClass, SetSCTPSrc, SetSCTPDst, SetSkbMark}
		a := Set(fields[int(which)%len(fields)], []byte{v0, v1, v0, v1, 0xff, 0xff, 0xff, 0xff})
		p := packetOf(b)
		setField(p, a.Field, &a.Val)
		if p.Len() != len(b) {
			t.Fatalf("length %d, was %d", p.Len(), len(b))
		}
	})
}
