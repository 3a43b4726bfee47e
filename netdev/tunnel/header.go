package tunnel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/govs/govs/netdev/offload"
)

// Kind is a tunnel encapsulation.
type Kind uint8

const (
	KindVXLAN Kind = iota + 1
	KindGeneve
	KindGRE
)

func (k Kind) String() string {
	switch k {
	case KindVXLAN:
		return "vxlan"
	case KindGeneve:
		return "geneve"
	case KindGRE:
		return "gre"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Header is a tunnel's outer headers (OVS's netdev-native-tnl.c builds
// and parses the same): Ethernet, IPv4 or IPv6, then UDP and VXLAN or
// Geneve, or GRE carrying transparent Ethernet bridging (0x6558) or, for
// a legacy_l3 tunnel, an IP packet (Proto).
type Header struct {
	Kind           Kind
	EthDst, EthSrc [6]byte
	Src, Dst       netip.Addr // both IPv4 or both IPv6
	TOS, TTL       uint8
	DF             bool   // IPv4 don't-fragment
	ID             uint16 // IPv4 identification
	SrcPort        uint16 // UDP source port, from a flow hash
	DstPort        uint16 // UDP destination port (4789, 6081)
	Csum           bool   // UDP checksum, or GRE checksum present
	Key            uint32 // VNI (24 bits) or GRE key
	KeyPresent     bool   // GRE: key field present
	Seq            uint32 // GRE sequence number
	SeqPresent     bool   // GRE: sequence field present
	Options        []byte // Geneve options, TLVs, a multiple of 4 bytes
	OAM            bool   // Geneve: the O (control packet) bit
	// GBP says a VXLAN header had the G bit: the Group Based Policy
	// extension (draft-smith-vxlan-group-policy), whose GBPFlags (D
	// 0x40, A 0x08) and GBPID follow. Build writes the extension when
	// GBPID or GBPFlags is set, as Linux's vxlan_build_gbp_hdr.
	GBP      bool
	GBPFlags uint8
	GBPID    uint16
	// Proto is a GRE packet's protocol when it carries no Ethernet
	// frame (a legacy_l3 tunnel's: IPv4 0x0800, IPv6 0x86dd, any
	// Ethernet type from 0x0600 on, as OVS's parse_gre_header takes);
	// 0 for transparent Ethernet bridging (0x6558).
	Proto uint16
}

// L3 reports whether h is a GRE header whose payload is not an Ethernet
// frame but the packet of Ethernet type h.Proto.
func (h *Header) L3() bool { return h.Kind == KindGRE && h.Proto != 0 && h.Proto != etherTEB }

// ethTypeMin is the least Ethernet type (OVS's ETH_TYPE_MIN): GRE
// protocols below it are refused.
const ethTypeMin = 0x600

// Tunnel protocol constants (RFC 7348, RFC 8926, RFC 2890).
const (
	ethLen       = 14
	ipv4Len      = 20
	ipv6Len      = 40
	udpLen       = 8
	vxlanLen     = 8
	geneveLen    = 8
	geneveMaxOpt = 63 * 4
	greBaseLen   = 4
	etherTEB     = 0x6558
	vxlanFlagVNI = 0x08000000
	// vxlanFlagGBP is the G bit; vxlanGBPFlags are the Group Policy
	// flags the extension defines in the header's second byte: D (don't
	// learn) and A (policy applied). Other bits there are reserved.
	vxlanFlagGBP  = 0x80000000
	vxlanGBPFlags = 0x48

	greCsum = 0x8000
	greKey  = 0x2000
	greSeq  = 0x1000
)

// criticalOpt reports whether the Geneve options opts hold a critical one
// (type bit 0x80): the header's C bit says so (RFC 8926 section 3.4).
func criticalOpt(opts []byte) bool {
	for len(opts) >= 4 {
		if opts[2]&0x80 != 0 {
			return true
		}
		opts = opts[min(len(opts), 4+int(opts[3]&0x1f)*4):]
	}
	return false
}

// Errors Parse reports; the datapath counts them as tunnel pop errors.
var (
	ErrTruncated = errors.New("tunnel header truncated")
	ErrMalformed = errors.New("malformed tunnel header")
	ErrCsum      = errors.New("bad tunnel header checksum")
)

// Len is the length of h's outer headers.
func (h *Header) Len() int {
	n := ethLen + ipv4Len
	if h.Dst.Is6() && !h.Dst.Is4In6() {
		n = ethLen + ipv6Len
	}
	switch h.Kind {
	case KindVXLAN:
		n += udpLen + vxlanLen
	case KindGeneve:
		n += udpLen + geneveLen + len(h.Options)
	case KindGRE:
		n += greBaseLen
		for _, b := range []bool{h.Csum, h.KeyPresent, h.SeqPresent} {
			if b {
				n += 4
			}
		}
	}
	return n
}

// Build returns inner (an Ethernet frame, or for h.L3 the packet of type
// h.Proto) behind h's outer headers.
func Build(h *Header, inner []byte) ([]byte, error) {
	v4 := h.Dst.Unmap().Is4()
	if !h.Src.IsValid() || !h.Dst.IsValid() || h.Src.Unmap().Is4() != v4 {
		return nil, errors.New("tunnel: source and destination must both be IPv4 or both IPv6")
	}
	if h.Kind == KindGeneve && (len(h.Options)%4 != 0 || len(h.Options) > geneveMaxOpt) {
		return nil, errors.New("tunnel: Geneve options must be a multiple of 4 bytes, at most 252")
	}
	if h.Kind != KindVXLAN && h.Kind != KindGeneve && h.Kind != KindGRE {
		return nil, fmt.Errorf("tunnel: unknown kind %v", h.Kind)
	}
	hl := h.Len()
	b := make([]byte, hl+len(inner))
	copy(b[hl:], inner)
	copy(b[0:6], h.EthDst[:])
	copy(b[6:12], h.EthSrc[:])
	ip := b[ethLen:]
	var l4 []byte
	proto := byte(17)
	if h.Kind == KindGRE {
		proto = 47
	}
	if v4 {
		binary.BigEndian.PutUint16(b[12:], 0x0800)
		l4 = ip[ipv4Len:]
		ip[0], ip[1] = 0x45, h.TOS
		binary.BigEndian.PutUint16(ip[2:], uint16(len(b)-ethLen))
		binary.BigEndian.PutUint16(ip[4:], h.ID)
		if h.DF {
			ip[6] = 0x40
		}
		ip[8], ip[9] = h.TTL, proto
		s, d := h.Src.Unmap().As4(), h.Dst.Unmap().As4()
		copy(ip[12:16], s[:])
		copy(ip[16:20], d[:])
		binary.BigEndian.PutUint16(ip[10:], offload.Checksum(ip[:ipv4Len], 0))
	} else {
		binary.BigEndian.PutUint16(b[12:], 0x86dd)
		l4 = ip[ipv6Len:]
		binary.BigEndian.PutUint32(ip[0:], 6<<28|uint32(h.TOS)<<20)
		binary.BigEndian.PutUint16(ip[4:], uint16(len(l4)))
		ip[6], ip[7] = proto, h.TTL
		s, d := h.Src.As16(), h.Dst.As16()
		copy(ip[8:24], s[:])
		copy(ip[24:40], d[:])
	}
	if h.Kind == KindGRE {
		flags := uint16(0)
		off := greBaseLen
		if h.Csum {
			flags |= greCsum
			off += 4
		}
		if h.KeyPresent {
			flags |= greKey
			binary.BigEndian.PutUint32(l4[off:], h.Key)
			off += 4
		}
		if h.SeqPresent {
			flags |= greSeq
			binary.BigEndian.PutUint32(l4[off:], h.Seq)
		}
		binary.BigEndian.PutUint16(l4[0:], flags)
		proto := uint16(etherTEB)
		if h.L3() {
			proto = h.Proto
		}
		binary.BigEndian.PutUint16(l4[2:], proto)
		if h.Csum {
			binary.BigEndian.PutUint16(l4[4:], offload.Checksum(l4, 0))
		}
		return b, nil
	}
	binary.BigEndian.PutUint16(l4[0:], h.SrcPort)
	binary.BigEndian.PutUint16(l4[2:], h.DstPort)
	binary.BigEndian.PutUint16(l4[4:], uint16(len(l4)))
	t := l4[udpLen:]
	if h.Kind == KindVXLAN {
		flags := uint32(vxlanFlagVNI)
		if h.GBPID != 0 || h.GBPFlags != 0 {
			flags |= vxlanFlagGBP | uint32(h.GBPFlags&vxlanGBPFlags)<<16 | uint32(h.GBPID)
		}
		binary.BigEndian.PutUint32(t[0:], flags)
		binary.BigEndian.PutUint32(t[4:], h.Key<<8)
	} else {
		t[0] = byte(len(h.Options) / 4)
		if h.OAM {
			t[1] = 0x80
		}
		if criticalOpt(h.Options) {
			t[1] |= 0x40
		}
		binary.BigEndian.PutUint16(t[2:], etherTEB)
		binary.BigEndian.PutUint32(t[4:], h.Key<<8)
		copy(t[geneveLen:], h.Options)
	}
	if h.Csum {
		c := offload.Checksum(l4, UDPPseudoSum(ip, v4, len(l4)))
		if c == 0 {
			c = 0xffff
		}
		binary.BigEndian.PutUint16(l4[6:], c)
	}
	return b, nil
}

// Parse splits frame into its outer headers and the inner Ethernet frame
// (a subslice of frame; for a GRE packet of another protocol, h.L3, the
// inner packet of that Ethernet type). It checks what OVS's tnl_pop checks: lengths,
// the IPv4 header checksum, a present UDP or GRE checksum, VXLAN's I flag,
// Geneve's version and protocol, GRE's version and protocol. VLAN-tagged
// or fragmented outer packets are refused. A VXLAN header with the G bit
// and no reserved bit set is parsed into h.GBP, h.GBPFlags and h.GBPID;
// whether the port takes the extension is the caller's to check.
func Parse(frame []byte) (Header, []byte, error) {
	var h Header
	if len(frame) < ethLen {
		return h, nil, ErrTruncated
	}
	copy(h.EthDst[:], frame[0:6])
	copy(h.EthSrc[:], frame[6:12])
	ip := frame[ethLen:]
	var l4 []byte
	var proto byte
	v4 := false
	switch binary.BigEndian.Uint16(frame[12:]) {
	case 0x0800:
		v4 = true
		if len(ip) < ipv4Len {
			return h, nil, ErrTruncated
		}
		ihl := int(ip[0]&0x0f) * 4
		tot := int(binary.BigEndian.Uint16(ip[2:]))
		if ip[0]>>4 != 4 || ihl < ipv4Len || tot < ihl {
			return h, nil, ErrMalformed
		}
		if len(ip) < tot {
			return h, nil, ErrTruncated
		}
		if offload.Checksum(ip[:ihl], 0) != 0 {
			return h, nil, ErrCsum
		}
		if binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 {
			return h, nil, ErrMalformed // a fragment
		}
		h.TOS, h.ID, h.DF, h.TTL, proto = ip[1], binary.BigEndian.Uint16(ip[4:]), ip[6]&0x40 != 0, ip[8], ip[9]
		h.Src = netip.AddrFrom4([4]byte(ip[12:16]))
		h.Dst = netip.AddrFrom4([4]byte(ip[16:20]))
		l4 = ip[ihl:tot]
		ip = ip[:ihl]
	case 0x86dd:
		if len(ip) < ipv6Len {
			return h, nil, ErrTruncated
		}
		if ip[0]>>4 != 6 {
			return h, nil, ErrMalformed
		}
		pl := int(binary.BigEndian.Uint16(ip[4:]))
		if len(ip) < ipv6Len+pl {
			return h, nil, ErrTruncated
		}
		h.TOS = byte(binary.BigEndian.Uint32(ip[0:]) >> 20)
		proto, h.TTL = ip[6], ip[7]
		h.Src = netip.AddrFrom16([16]byte(ip[8:24]))
		h.Dst = netip.AddrFrom16([16]byte(ip[24:40]))
		l4 = ip[ipv6Len : ipv6Len+pl]
		ip = ip[:ipv6Len]
	default:
		return h, nil, ErrMalformed
	}
	switch proto {
	case 47:
		return parseGRE(h, l4)
	case 17:
	default:
		return h, nil, ErrMalformed
	}
	if len(l4) < udpLen {
		return h, nil, ErrTruncated
	}
	ulen := int(binary.BigEndian.Uint16(l4[4:]))
	if ulen < udpLen || ulen > len(l4) {
		return h, nil, ErrMalformed
	}
	l4 = l4[:ulen]
	h.SrcPort, h.DstPort = binary.BigEndian.Uint16(l4[0:]), binary.BigEndian.Uint16(l4[2:])
	if binary.BigEndian.Uint16(l4[6:]) != 0 {
		h.Csum = true
		if offload.Checksum(l4, UDPPseudoSum(ip, v4, len(l4))) != 0 {
			return h, nil, ErrCsum
		}
	}
	t := l4[udpLen:]
	// The UDP port says which protocol; OVS knows it from the port the
	// packet arrived for. 6081 is Geneve, anything else VXLAN here.
	if h.DstPort == 6081 {
		h.Kind = KindGeneve
		if len(t) < geneveLen {
			return h, nil, ErrTruncated
		}
		optLen := int(t[0]&0x3f) * 4
		if t[0]>>6 != 0 || binary.BigEndian.Uint16(t[2:]) != etherTEB || t[7] != 0 {
			return h, nil, ErrMalformed
		}
		if len(t) < geneveLen+optLen {
			return h, nil, ErrTruncated
		}
		h.Key = binary.BigEndian.Uint32(t[4:]) >> 8
		h.OAM = t[1]&0x80 != 0
		if optLen > 0 {
			h.Options = t[geneveLen : geneveLen+optLen]
		}
		return h, t[geneveLen+optLen:], nil
	}
	h.Kind = KindVXLAN
	if len(t) < vxlanLen {
		return h, nil, ErrTruncated
	}
	flags := binary.BigEndian.Uint32(t[0:])
	if t[0] == (vxlanFlagGBP|vxlanFlagVNI)>>24 && t[1]&^vxlanGBPFlags == 0 {
		h.GBP, h.GBPFlags, h.GBPID = true, t[1], binary.BigEndian.Uint16(t[2:])
		flags = vxlanFlagVNI
	}
	if flags != vxlanFlagVNI || t[7] != 0 {
		return h, nil, ErrMalformed
	}
	h.Key = binary.BigEndian.Uint32(t[4:]) >> 8
	return h, t[vxlanLen:], nil
}

func parseGRE(h Header, g []byte) (Header, []byte, error) {
	h.Kind = KindGRE
	if len(g) < greBaseLen {
		return h, nil, ErrTruncated
	}
	flags := binary.BigEndian.Uint16(g[0:])
	proto := binary.BigEndian.Uint16(g[2:])
	if flags&^(greCsum|greKey|greSeq) != 0 || proto < ethTypeMin {
		return h, nil, ErrMalformed // version, routing, or not an Ethernet type
	}
	if proto != etherTEB {
		h.Proto = proto
	}
	off := greBaseLen
	for _, f := range []uint16{greCsum, greKey, greSeq} {
		if flags&f == 0 {
			continue
		}
		if len(g) < off+4 {
			return h, nil, ErrTruncated
		}
		v := binary.BigEndian.Uint32(g[off:])
		switch f {
		case greCsum:
			h.Csum = true
			if offload.Checksum(g, 0) != 0 {
				return h, nil, ErrCsum
			}
		case greKey:
			h.Key, h.KeyPresent = v, true
		case greSeq:
			h.Seq, h.SeqPresent = v, true
		}
		off += 4
	}
	return h, g[off:], nil
}

// UDPPseudoSum is the folded UDP pseudo-header sum (addresses, protocol,
// length) for the IP header ip.
func UDPPseudoSum(ip []byte, v4 bool, l4Len int) uint64 {
	var addrs []byte
	if v4 {
		addrs = ip[12:20]
	} else {
		addrs = ip[8:40]
	}
	return uint64(^offload.Checksum(addrs, 0)) + 17 + uint64(l4Len)
}
