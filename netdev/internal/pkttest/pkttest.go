// Package pkttest builds and checks Ethernet frames for tests: VLAN tags,
// IPv4 or IPv6 (optionally with a hop-by-hop header), TCP or UDP, with
// checksums computed by a plain RFC 1071 loop kept independent of the code
// under test.
package pkttest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/govs/govs/datapath/packet"
)

// TCP flags.
const (
	FIN = 0x01
	SYN = 0x02
	RST = 0x04
	PSH = 0x08
	ACK = 0x10
	ECE = 0x40
	CWR = 0x80
)

// VLAN is one tag; TPID 0 means 802.1Q (0x8100).
type VLAN struct{ TPID, TCI uint16 }

// TCP is a TCP header; Options must be a multiple of 4 bytes long.
type TCP struct {
	SrcPort, DstPort uint16
	Seq, Ack         uint32
	Flags            uint8
	Window           uint16
	Options          []byte
}

// UDP is a UDP header.
type UDP struct{ SrcPort, DstPort uint16 }

// Frame describes an Ethernet frame carrying TCP or UDP over IP; SrcIP and
// DstIP choose IPv4 or IPv6.
type Frame struct {
	Dst, Src     [6]byte
	VLANs        []VLAN
	SrcIP, DstIP netip.Addr
	IPID         uint16
	HopByHop     bool // IPv6: put an empty hop-by-hop options header first
	TCP          *TCP
	UDP          *UDP
	Payload      []byte
}

// Layout is where the headers of a built frame are.
type Layout struct{ L3, L4, HdrLen int }

// Bytes builds the frame with complete checksums.
func (f *Frame) Bytes() []byte {
	b, _ := f.build(false)
	return b
}

// Partial builds the frame as a stack with checksum offload hands it over:
// the L4 checksum field holds the pseudo-header sum, and the Offload says
// NeedsCsum.
func (f *Frame) Partial() ([]byte, packet.Offload) {
	b, l := f.build(true)
	o := packet.Offload{Flags: packet.NeedsCsum, CsumStart: uint16(l.L4), HdrLen: uint16(l.HdrLen)}
	o.CsumOffset = 6
	if f.TCP != nil {
		o.CsumOffset = 16
	}
	return b, o
}

// GSO builds the frame as a super-frame of segments of mss payload bytes, as
// a stack with TSO or USO hands it over.
func (f *Frame) GSO(mss int) ([]byte, packet.Offload) {
	b, o := f.Partial()
	o.GSOSize = uint16(mss)
	switch {
	case f.UDP != nil:
		o.GSO = packet.GSOUDPL4
	case f.SrcIP.Is4():
		o.GSO = packet.GSOTCPv4
	default:
		o.GSO = packet.GSOTCPv6
	}
	return b, o
}

func (f *Frame) build(partial bool) ([]byte, Layout) {
	var b []byte
	b = append(b, f.Dst[:]...)
	b = append(b, f.Src[:]...)
	for _, v := range f.VLANs {
		tpid := v.TPID
		if tpid == 0 {
			tpid = 0x8100
		}
		b = binary.BigEndian.AppendUint16(b, tpid)
		b = binary.BigEndian.AppendUint16(b, v.TCI)
	}
	var l Layout
	proto := uint8(17)
	l4len := 8
	if f.TCP != nil {
		proto = 6
		l4len = 20 + len(f.TCP.Options)
	}
	v4 := f.SrcIP.Is4()
	if v4 {
		b = binary.BigEndian.AppendUint16(b, 0x0800)
		l.L3 = len(b)
		total := 20 + l4len + len(f.Payload)
		b = append(b, 0x45, 0)
		b = binary.BigEndian.AppendUint16(b, uint16(total))
		b = binary.BigEndian.AppendUint16(b, f.IPID)
		b = append(b, 0x40, 0, 64, proto, 0, 0) // DF, TTL 64
		s, d := f.SrcIP.As4(), f.DstIP.As4()
		b = append(b, s[:]...)
		b = append(b, d[:]...)
		binary.BigEndian.PutUint16(b[l.L3+10:], ^Sum(b[l.L3:]))
	} else {
		b = binary.BigEndian.AppendUint16(b, 0x86dd)
		l.L3 = len(b)
		ext := 0
		next := proto
		if f.HopByHop {
			ext, next = 8, 0
		}
		b = append(b, 0x60, 0, 0, 0)
		b = binary.BigEndian.AppendUint16(b, uint16(ext+l4len+len(f.Payload)))
		b = append(b, next, 64)
		s, d := f.SrcIP.As16(), f.DstIP.As16()
		b = append(b, s[:]...)
		b = append(b, d[:]...)
		if f.HopByHop {
			b = append(b, proto, 0, 1, 4, 0, 0, 0, 0) // PadN
		}
	}
	l.L4 = len(b)
	if f.TCP != nil {
		t := f.TCP
		b = binary.BigEndian.AppendUint16(b, t.SrcPort)
		b = binary.BigEndian.AppendUint16(b, t.DstPort)
		b = binary.BigEndian.AppendUint32(b, t.Seq)
		b = binary.BigEndian.AppendUint32(b, t.Ack)
		b = append(b, byte(l4len/4)<<4, t.Flags)
		b = binary.BigEndian.AppendUint16(b, t.Window)
		b = append(b, 0, 0, 0, 0)
		b = append(b, t.Options...)
	} else {
		b = binary.BigEndian.AppendUint16(b, f.UDP.SrcPort)
		b = binary.BigEndian.AppendUint16(b, f.UDP.DstPort)
		b = binary.BigEndian.AppendUint16(b, uint16(l4len+len(f.Payload)))
		b = append(b, 0, 0)
	}
	l.HdrLen = len(b)
	b = append(b, f.Payload...)
	at := l.L4 + 6
	if f.TCP != nil {
		at = l.L4 + 16
	}
	ps := pseudo(b[l.L3:], v4, proto, len(b)-l.L4)
	if partial {
		binary.BigEndian.PutUint16(b[at:], fold(ps))
	} else {
		c := ^fold(ps + uint32(Sum(b[l.L4:])))
		if c == 0 && f.UDP != nil {
			c = 0xffff
		}
		binary.BigEndian.PutUint16(b[at:], c)
	}
	return b, l
}

// Sum is the folded 16-bit ones'-complement sum of b, one word at a time.
func Sum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	return fold(s)
}

func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

func pseudo(ip []byte, v4 bool, proto uint8, l4len int) uint32 {
	var s uint32
	if v4 {
		s = uint32(Sum(ip[12:20]))
	} else {
		s = uint32(Sum(ip[8:40]))
	}
	return s + uint32(proto) + uint32(l4len)
}

// Errors Parse wraps when a frame is well-formed but its lengths or
// checksums are wrong, as opposed to a frame it does not understand.
var (
	ErrLength   = errors.New("bad length field")
	ErrChecksum = errors.New("bad checksum")
)

// Parsed is what Parse found in a frame.
type Parsed struct {
	VLANs            []VLAN
	V4               bool
	L3, L4           int
	IPID             uint16
	Proto            uint8
	SrcPort, DstPort uint16
	Seq              uint32 // TCP
	Flags            uint8  // TCP
	Payload          []byte
}

// Parse decodes a frame built like Frame's and checks every length and
// checksum in it: IPv4 header checksum and total length, IPv6 payload
// length, UDP length, and the L4 checksum against the pseudo-header.
func Parse(b []byte) (Parsed, error) {
	var p Parsed
	off := 12
	for {
		if off+2 > len(b) {
			return p, errors.New("short Ethernet header")
		}
		et := binary.BigEndian.Uint16(b[off:])
		if et == 0x8100 || et == 0x88a8 {
			if off+4 > len(b) {
				return p, errors.New("short VLAN tag")
			}
			p.VLANs = append(p.VLANs, VLAN{et, binary.BigEndian.Uint16(b[off+2:])})
			off += 4
			continue
		}
		off += 2
		p.L3 = off
		switch et {
		case 0x0800:
			p.V4 = true
			if len(b) < off+20 || b[off] != 0x45 {
				return p, errors.New("not a plain IPv4 header")
			}
			if Sum(b[off:off+20]) != 0xffff {
				return p, fmt.Errorf("IPv4 header: %w", ErrChecksum)
			}
			if int(binary.BigEndian.Uint16(b[off+2:])) != len(b)-off {
				return p, fmt.Errorf("IPv4 total length %d, frame has %d: %w", binary.BigEndian.Uint16(b[off+2:]), len(b)-off, ErrLength)
			}
			p.IPID = binary.BigEndian.Uint16(b[off+4:])
			p.Proto = b[off+9]
			p.L4 = off + 20
		case 0x86dd:
			if len(b) < off+40 {
				return p, errors.New("short IPv6 header")
			}
			if int(binary.BigEndian.Uint16(b[off+4:])) != len(b)-off-40 {
				return p, fmt.Errorf("IPv6 payload: %w", ErrLength)
			}
			p.Proto = b[off+6]
			p.L4 = off + 40
			if p.Proto == 0 {
				if len(b) < p.L4+8 {
					return p, errors.New("short hop-by-hop header")
				}
				p.Proto = b[p.L4]
				p.L4 += (int(b[p.L4+1]) + 1) * 8
			}
		default:
			return p, fmt.Errorf("ethertype %#x", et)
		}
		break
	}
	l4 := b[p.L4:]
	var hl int
	switch p.Proto {
	case 6:
		if len(l4) < 20 {
			return p, errors.New("short TCP header")
		}
		hl = int(l4[12]>>4) * 4
		if hl < 20 || len(l4) < hl {
			return p, errors.New("bad TCP data offset")
		}
		p.Seq = binary.BigEndian.Uint32(l4[4:])
		p.Flags = l4[13]
	case 17:
		hl = 8
		if len(l4) < 8 {
			return p, errors.New("short UDP header")
		}
		if int(binary.BigEndian.Uint16(l4[4:])) != len(l4) {
			return p, fmt.Errorf("UDP: %w", ErrLength)
		}
	default:
		return p, fmt.Errorf("protocol %d", p.Proto)
	}
	p.SrcPort = binary.BigEndian.Uint16(l4[0:])
	p.DstPort = binary.BigEndian.Uint16(l4[2:])
	if fold(pseudo(b[p.L3:], p.V4, p.Proto, len(l4))+uint32(Sum(l4))) != 0xffff {
		return p, fmt.Errorf("L4: %w", ErrChecksum)
	}
	p.Payload = l4[hl:]
	return p, nil
}
