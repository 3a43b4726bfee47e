package datapath

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/packet"
)

// l4Checksum computes the TCP/UDP checksum of an IPv4 packet at l3.
func l4Checksum(d []byte, l3 int) uint16 {
	ip := d[l3:]
	ihl := int(ip[0]&0xf) * 4
	seg := ip[ihl:binary.BigEndian.Uint16(ip[2:])]
	pseudo := append(append([]byte{}, ip[12:20]...), 0, ip[9])
	pseudo = binary.BigEndian.AppendUint16(pseudo, uint16(len(seg)))
	return dptest.Checksum(append(pseudo, seg...))
}

// TestSetFieldChecksums: rewriting addresses, ports and the TTL keeps the
// IPv4 and TCP/UDP checksums valid, through a VLAN tag too.
func TestSetFieldChecksums(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame dptest.Frame
		csum  int // offset of the L4 checksum in the segment
	}{
		{"tcp", dptest.Frame{IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
			TCP: &dptest.TCP{Src: 40000, Dst: 80}, Payload: []byte("hello")}, 16},
		{"udp tagged", dptest.Frame{Tags: []dptest.Tag{{VID: 5}}, IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"),
			Dst: netip.MustParseAddr("10.0.0.2")}, UDP: &dptest.UDP{Src: 53, Dst: 5353}, Payload: []byte("hello!")}, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.frame.Src, tc.frame.Dst = dptest.MAC("00:00:00:00:00:01"), dptest.MAC("00:00:00:00:00:02")
			b := tc.frame.Bytes()
			l3, _ := l3Offset(b)
			seg := b[l3+20:]
			binary.BigEndian.PutUint16(seg[tc.csum:], l4Checksum(b, l3))
			p := packet.New()
			copy(p.Tail(), b)
			p.SetLen(len(b))
			for _, a := range []Action{
				Set(SetIPv4Dst, []byte{192, 168, 7, 9}), Set(SetIPv4Src, []byte{172, 16, 0, 1}), Set(SetTpDst, []byte{0x1f, 0x90}),
				Set(SetTpSrc, []byte{0, 7}), Set(SetIPv4TTL, []byte{3}), Set(SetEthSrc, []byte{2, 0, 0, 0, 0, 9}),
			} {
				setField(p, a.Field, &a.Val)
			}
			d := p.Data()
			if got := dptest.Checksum(d[l3 : l3+20]); got != 0 {
				t.Errorf("IPv4 header checksum off by %#x", got)
			}
			if got := l4Checksum(d, l3); got != 0 {
				t.Errorf("L4 checksum off by %#x", got)
			}
			if netip.AddrFrom4([4]byte(d[l3+16:l3+20])).String() != "192.168.7.9" || d[l3+8] != 3 ||
				binary.BigEndian.Uint16(d[l3+22:]) != 8080 || d[11] != 9 {
				t.Errorf("fields not set: %x", d)
			}
		})
	}
}
