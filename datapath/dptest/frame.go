// Package dptest provides what datapath and ofproto tests share: an
// in-memory netdev.Port (like wireguard-go's tun/tuntest) and a small
// builder of Ethernet, VLAN, ARP, IPv4, IPv6, TCP, UDP and ICMP headers,
// so that tests describe frames rather than spell bytes.
package dptest

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
)

// MAC parses an Ethernet address such as "00:00:00:00:00:01"; it panics
// on a malformed one (a test's typo).
func MAC(s string) [6]byte {
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		panic(fmt.Sprintf("dptest: bad MAC %q", s))
	}
	return [6]byte(hw)
}

// Broadcast is ff:ff:ff:ff:ff:ff.
var Broadcast = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// Tag is one 802.1Q or 802.1ad tag.
type Tag struct {
	TPID uint16 // 0 means 0x8100
	PCP  uint8
	DEI  bool
	VID  uint16
}

// Frame describes an Ethernet frame. Bytes serializes it; at most one of
// ARP, IPv4 and IPv6 is set, and at most one of UDP, TCP and ICMP.
type Frame struct {
	Dst, Src [6]byte
	// Tags are the VLAN tags, outermost first.
	Tags []Tag
	// EtherType is used when no ARP, IPv4 or IPv6 header is set.
	EtherType uint16

	ARP  *ARP
	IPv4 *IPv4
	IPv6 *IPv6

	UDP  *UDP
	TCP  *TCP
	ICMP *ICMP

	// Payload follows the last header.
	Payload []byte
	// Pad is appended after everything, outside any IP length, as
	// link-layer padding.
	Pad int
}

// ARP is an ARP header for Ethernet and IPv4.
type ARP struct {
	Op       uint16
	SHA, THA [6]byte
	SPA, TPA netip.Addr
}

// IPv4 is an IPv4 header; zero fields get sensible defaults (TTL 64,
// protocol from the L4 header, correct lengths and checksum).
type IPv4 struct {
	Src, Dst netip.Addr
	TOS      uint8
	TTL      uint8
	Proto    uint8 // 0: from the L4 header
	ID       uint16
	// MF and FragOff (in 8-byte units) make a fragment.
	MF      bool
	FragOff uint16
	// Options are appended to the 20-byte header (a multiple of 4).
	Options []byte
}

// IPv6 is an IPv6 header with optional extension headers.
type IPv6 struct {
	Src, Dst     netip.Addr
	TrafficClass uint8
	FlowLabel    uint32
	HopLimit     uint8 // 0 means 64
	// Ext are extension headers between the fixed header and L4.
	Ext []IPv6Ext
}

// IPv6Ext is one IPv6 extension header.
type IPv6Ext struct {
	// Proto is the header's own protocol number: 0 (hop-by-hop), 43
	// (routing), 60 (destination options), 44 (fragment) or 51 (AH).
	Proto uint8
	// For a fragment header: offset in 8-byte units and the M flag.
	FragOff uint16
	MF      bool
}

// UDP is a UDP header.
type UDP struct{ Src, Dst uint16 }

// TCP is a TCP header.
type TCP struct {
	Src, Dst uint16
	Flags    uint16 // low 12 bits
	Seq, Ack uint32
}

// ICMP is an ICMP (over IPv4) or ICMPv6 (over IPv6) header; Rest is its
// 32 bits after the checksum (an echo's identifier and sequence number,
// a neighbour advertisement's flags).
type ICMP struct {
	Type, Code uint8
	Rest       uint32
}

// NDOpt returns an IPv6 neighbour discovery link-layer address option
// (type 1 source, 2 target).
func NDOpt(typ uint8, mac [6]byte) []byte { return append([]byte{typ, 1}, mac[:]...) }

// TCP flag bits.
const (
	FIN = 0x01
	SYN = 0x02
	RST = 0x04
	PSH = 0x08
	ACK = 0x10
)

// Bytes serializes f.
func (f Frame) Bytes() []byte {
	b := make([]byte, 0, 128+len(f.Payload)+f.Pad)
	b = append(b, f.Dst[:]...)
	b = append(b, f.Src[:]...)
	for _, t := range f.Tags {
		tpid := t.TPID
		if tpid == 0 {
			tpid = 0x8100
		}
		tci := uint16(t.PCP)<<13 | t.VID&0x0fff
		if t.DEI {
			tci |= 0x1000
		}
		b = binary.BigEndian.AppendUint16(b, tpid)
		b = binary.BigEndian.AppendUint16(b, tci)
	}
	l4, proto := f.l4()
	switch {
	case f.ARP != nil:
		b = binary.BigEndian.AppendUint16(b, 0x0806)
		a := f.ARP
		b = binary.BigEndian.AppendUint16(b, 1)
		b = binary.BigEndian.AppendUint16(b, 0x0800)
		b = append(b, 6, 4)
		b = binary.BigEndian.AppendUint16(b, a.Op)
		b = append(b, a.SHA[:]...)
		b = append(b, addr4(a.SPA)...)
		b = append(b, a.THA[:]...)
		b = append(b, addr4(a.TPA)...)
		b = append(b, f.Payload...)
	case f.IPv4 != nil:
		b = binary.BigEndian.AppendUint16(b, 0x0800)
		b = f.IPv4.append(b, proto, l4)
	case f.IPv6 != nil:
		b = binary.BigEndian.AppendUint16(b, 0x86dd)
		b = f.IPv6.append(b, proto, l4)
	default:
		b = binary.BigEndian.AppendUint16(b, f.EtherType)
		b = append(b, f.Payload...)
	}
	return append(b, make([]byte, f.Pad)...)
}

// Checksummed serializes f with its TCP, UDP, ICMP or ICMPv6 checksum
// filled in (Bytes leaves it zero).
func (f Frame) Checksummed() []byte {
	b := f.Bytes()
	l4, proto := f.l4()
	if proto == 0 || f.IPv4 == nil && f.IPv6 == nil {
		return b
	}
	off := len(b) - f.Pad - len(l4)
	seg := b[off : off+len(l4)]
	var pseudo []byte
	switch {
	case f.IPv6 != nil:
		pseudo = append(addr16(f.IPv6.Src), addr16(f.IPv6.Dst)...)
		pseudo = binary.BigEndian.AppendUint32(pseudo, uint32(len(seg)))
		pseudo = append(pseudo, 0, 0, 0, proto)
	case proto != 1:
		pseudo = append(addr4(f.IPv4.Src), addr4(f.IPv4.Dst)...)
		pseudo = append(pseudo, 0, proto)
		pseudo = binary.BigEndian.AppendUint16(pseudo, uint16(len(seg)))
	}
	at := map[uint8]int{6: 16, 17: 6, 1: 2, 58: 2}[proto]
	if at+2 > len(seg) {
		return b
	}
	seg[at], seg[at+1] = 0, 0
	c := Checksum(append(pseudo, seg...))
	if c == 0 && proto == 17 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(seg[at:], c)
	return b
}

// l4 returns the transport header and payload, and their protocol.
func (f Frame) l4() ([]byte, uint8) {
	var b []byte
	var proto uint8
	switch {
	case f.UDP != nil:
		proto = 17
		b = binary.BigEndian.AppendUint16(b, f.UDP.Src)
		b = binary.BigEndian.AppendUint16(b, f.UDP.Dst)
		b = binary.BigEndian.AppendUint16(b, uint16(8+len(f.Payload)))
		b = append(b, 0, 0) // no checksum
	case f.TCP != nil:
		proto = 6
		b = binary.BigEndian.AppendUint16(b, f.TCP.Src)
		b = binary.BigEndian.AppendUint16(b, f.TCP.Dst)
		b = binary.BigEndian.AppendUint32(b, f.TCP.Seq)
		b = binary.BigEndian.AppendUint32(b, f.TCP.Ack)
		b = binary.BigEndian.AppendUint16(b, 5<<12|f.TCP.Flags&0x0fff)
		b = binary.BigEndian.AppendUint16(b, 65535)
		b = append(b, 0, 0, 0, 0) // checksum, urgent pointer
	case f.ICMP != nil:
		proto = 1
		if f.IPv6 != nil {
			proto = 58
		}
		b = append(b, f.ICMP.Type, f.ICMP.Code, 0, 0)
		b = binary.BigEndian.AppendUint32(b, f.ICMP.Rest)
	}
	return append(b, f.Payload...), proto
}

func (h *IPv4) append(b []byte, proto uint8, l4 []byte) []byte {
	if h.Proto != 0 {
		proto = h.Proto
	}
	ttl := h.TTL
	if ttl == 0 {
		ttl = 64
	}
	hl := 20 + len(h.Options)
	start := len(b)
	b = append(b, byte(0x40|hl/4), h.TOS)
	b = binary.BigEndian.AppendUint16(b, uint16(hl+len(l4)))
	b = binary.BigEndian.AppendUint16(b, h.ID)
	frag := h.FragOff & 0x1fff
	if h.MF {
		frag |= 0x2000
	}
	b = binary.BigEndian.AppendUint16(b, frag)
	b = append(b, ttl, proto, 0, 0)
	b = append(b, addr4(h.Src)...)
	b = append(b, addr4(h.Dst)...)
	b = append(b, h.Options...)
	binary.BigEndian.PutUint16(b[start+10:], Checksum(b[start:]))
	return append(b, l4...)
}

func (h *IPv6) append(b []byte, proto uint8, l4 []byte) []byte {
	hlim := h.HopLimit
	if hlim == 0 {
		hlim = 64
	}
	var ext []byte
	next := proto
	for i := len(h.Ext) - 1; i >= 0; i-- {
		e := h.Ext[i]
		var hdr []byte
		switch e.Proto {
		case 44:
			off := e.FragOff << 3
			if e.MF {
				off |= 1
			}
			hdr = []byte{next, 0, byte(off >> 8), byte(off), 0, 0, 0, 1}
		case 51:
			// AH: length in 4-byte units minus 2; 12 bytes + 4 of ICV.
			hdr = make([]byte, 16)
			hdr[0], hdr[1] = next, 2
		default:
			hdr = make([]byte, 8)
			hdr[0], hdr[1] = next, 0
			hdr[2], hdr[3] = 1, 4 // PadN option filling the header
		}
		ext = append(hdr, ext...)
		next = e.Proto
	}
	b = binary.BigEndian.AppendUint32(b, 6<<28|uint32(h.TrafficClass)<<20|h.FlowLabel&0xfffff)
	b = binary.BigEndian.AppendUint16(b, uint16(len(ext)+len(l4)))
	b = append(b, next, hlim)
	b = append(b, addr16(h.Src)...)
	b = append(b, addr16(h.Dst)...)
	b = append(b, ext...)
	return append(b, l4...)
}

func addr4(a netip.Addr) []byte {
	if !a.IsValid() {
		return make([]byte, 4)
	}
	v := a.As4()
	return v[:]
}

func addr16(a netip.Addr) []byte {
	if !a.IsValid() {
		return make([]byte, 16)
	}
	v := a.As16()
	return v[:]
}

// Checksum is the Internet checksum of b.
func Checksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// UDP4 is a shorthand for an untagged IPv4/UDP frame from src to dst.
func UDP4(src, dst string) []byte {
	return Frame{
		Dst: MAC(dst), Src: MAC(src),
		IPv4:    &IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
		UDP:     &UDP{Src: 1000, Dst: 2000},
		Payload: []byte("govs"),
	}.Bytes()
}

// Fragment4 cuts an untagged IPv4 frame without options into fragments
// whose payloads are size bytes (a multiple of 8), the last shorter.
func Fragment4(b []byte, size int) [][]byte {
	hdr, payload := b[:34], b[34:]
	var out [][]byte
	for off := 0; off < len(payload); off += size {
		end := min(off+size, len(payload))
		f := append(append([]byte(nil), hdr...), payload[off:end]...)
		h := f[14:34]
		binary.BigEndian.PutUint16(h[2:], uint16(20+end-off))
		fo := uint16(off / 8)
		if end < len(payload) {
			fo |= 0x2000
		}
		binary.BigEndian.PutUint16(h[6:], fo)
		h[10], h[11] = 0, 0
		binary.BigEndian.PutUint16(h[10:], Checksum(h))
		out = append(out, f)
	}
	return out
}
