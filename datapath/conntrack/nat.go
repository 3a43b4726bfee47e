package conntrack

import (
	"encoding/binary"
	"math/big"
	"math/rand/v2"
)

// Ephemeral ports NAT picks from when the action gives no port range and
// the original port is taken (OVS's NAT_MIN/MAX_EPHEMERAL_PORT).
const (
	natMinEphemeral = 1024
	natMaxEphemeral = 65535
)

// natSelect picks the translated tuple of a new connection c (whose reply
// key is the plain reverse of its original one) within r and inserts c.
// It reports false if every candidate tuple is taken.
//
// As OVS's nat_get_unique_tuple: the first address is chosen by a hash of
// the connection's addresses (or at random), then every address of the
// range is tried in turn from there, and for each address the ports: the
// original port first, then the range (or the ephemeral ports, when the
// action gave no range and the protocol has ports).
func (t *Tracker) natSelect(c *conn, r *NATRange, now int64) bool {
	o := c.orig
	ports := o.proto == protoTCP || o.proto == protoUDP || o.proto == 132
	if r.Src {
		c.nat = StateSrcNAT
	} else {
		c.nat = StateDstNAT
	}
	origPort := o.sport
	if r.Dst {
		origPort = o.dport
	}
	minP, maxP := r.MinPort, r.MaxPort
	explicitPorts := minP != 0
	if !explicitPorts {
		minP, maxP = natMinEphemeral, natMaxEphemeral
	}
	if maxP < minP {
		maxP = minP
	}

	naddrs := addrSpan(r.MinAddr, r.MaxAddr, r.V6)
	var h uint64
	if r.Random {
		h = rand.Uint64()
	} else {
		hk := key{src: o.src, dst: o.dst, zone: o.zone, proto: o.proto}
		if !r.Persistent {
			hk.sport, hk.dport = o.sport, o.dport
		}
		h = hk.hash()
	}
	startAddr := h % naddrs
	nports := uint64(maxP-minP) + 1
	startPort := uint16(uint64(minP) + (h>>20)%nports)

	try := func(addr [16]byte, port uint16) bool {
		rk := o.reverse()
		if r.Src {
			rk.dst = addr
			if ports {
				rk.dport = port
			}
		} else {
			rk.src = addr
			if ports {
				rk.sport = port
			}
		}
		c.reply = rk
		return t.insert(c, now)
	}
	for i := uint64(0); i < naddrs; i++ {
		addr := addrAdd(r.MinAddr, (startAddr+i)%naddrs, r.V6)
		if !ports {
			if try(addr, 0) {
				return true
			}
			continue
		}
		// The original port first, if the range allows it.
		if !explicitPorts || (origPort >= minP && origPort <= maxP) {
			if try(addr, origPort) {
				return true
			}
		}
		if !explicitPorts && r.Dst {
			continue // DNAT without a port range keeps the port
		}
		for j := uint64(0); j < nports; j++ {
			p := minP + uint16((uint64(startPort-minP)+j)%nports)
			if p == origPort {
				continue
			}
			if try(addr, p) {
				return true
			}
		}
	}
	return false
}

// addrSpan is how many addresses lie in [lo, hi] (at least 1), capped.
func addrSpan(lo, hi [16]byte, v6 bool) uint64 {
	if !v6 {
		a, b := binary.BigEndian.Uint32(lo[:]), binary.BigEndian.Uint32(hi[:])
		if b < a {
			return 1
		}
		return uint64(b-a) + 1
	}
	a, b := new(big.Int).SetBytes(lo[:]), new(big.Int).SetBytes(hi[:])
	d := new(big.Int).Sub(b, a)
	if d.Sign() < 0 {
		return 1
	}
	if !d.IsUint64() || d.Uint64() >= 1<<32 {
		return 1 << 32
	}
	return d.Uint64() + 1
}

func addrAdd(a [16]byte, n uint64, v6 bool) [16]byte {
	if !v6 {
		binary.BigEndian.PutUint32(a[:], binary.BigEndian.Uint32(a[:])+uint32(n))
		return a
	}
	lo := binary.BigEndian.Uint64(a[8:])
	hi := binary.BigEndian.Uint64(a[:8])
	nlo := lo + n
	if nlo < lo {
		hi++
	}
	binary.BigEndian.PutUint64(a[:8], hi)
	binary.BigEndian.PutUint64(a[8:], nlo)
	return a
}

// natPacket translates a packet of c: an original-direction packet as
// the connection's NAT says, a reply the other way back.
func (t *Tracker) natPacket(b []byte, p *parsed, c *conn, reply bool, md *Meta, partial bool) {
	ports := !p.key.isICMP() && p.l4Valid
	switch {
	case !reply && c.nat&StateSrcNAT != 0:
		setAddr(b, p, true, c.reply.dst, partial)
		if ports {
			setPort(b, p, true, c.reply.dport, partial)
		}
		md.State |= StateSrcNAT
	case !reply && c.nat&StateDstNAT != 0:
		setAddr(b, p, false, c.reply.src, partial)
		if ports {
			setPort(b, p, false, c.reply.sport, partial)
		}
		md.State |= StateDstNAT
	case reply && c.nat&StateSrcNAT != 0:
		setAddr(b, p, false, c.orig.src, partial)
		if ports {
			setPort(b, p, false, c.orig.sport, partial)
		}
		md.State |= StateDstNAT
	case reply && c.nat&StateDstNAT != 0:
		setAddr(b, p, true, c.orig.dst, partial)
		if ports {
			setPort(b, p, true, c.orig.dport, partial)
		}
		md.State |= StateSrcNAT
	}
}

// natRelated translates an ICMP error related to c: its outer addresses
// as natPacket would, and the quoted packet, which went the other way,
// back to what its sender saw; then it recomputes the ICMP checksum.
func (t *Tracker) natRelated(b []byte, p *parsed, c *conn, reply bool, md *Meta) {
	in := p.inner
	inPorts := !in.key.isICMP() && (in.proto == protoTCP || in.proto == protoUDP)
	switch {
	case reply && c.nat&StateSrcNAT != 0:
		setAddr(b, p, false, c.orig.src, false)
		setAddr(b, in, true, c.orig.src, false)
		if inPorts {
			setPortRaw(b, in, true, c.orig.sport)
		}
		md.State |= StateDstNAT
	case reply && c.nat&StateDstNAT != 0:
		setAddr(b, p, true, c.orig.dst, false)
		setAddr(b, in, false, c.orig.dst, false)
		if inPorts {
			setPortRaw(b, in, false, c.orig.dport)
		}
		md.State |= StateSrcNAT
	case !reply && c.nat&StateSrcNAT != 0:
		setAddr(b, p, true, c.reply.dst, false)
		setAddr(b, in, false, c.reply.dst, false)
		if inPorts {
			setPortRaw(b, in, false, c.reply.dport)
		}
		md.State |= StateSrcNAT
	case !reply && c.nat&StateDstNAT != 0:
		setAddr(b, p, false, c.reply.src, false)
		setAddr(b, in, true, c.reply.src, false)
		if inPorts {
			setPortRaw(b, in, true, c.reply.sport)
		}
		md.State |= StateDstNAT
	default:
		return
	}
	// The quoted header's checksum, then the whole ICMP message's.
	if !in.v6 && in.l3+in.ipv4HdrLen <= len(b) {
		h := b[in.l3 : in.l3+in.ipv4HdrLen]
		h[10], h[11] = 0, 0
		binary.BigEndian.PutUint16(h[10:], ^fold(sum(0, h)))
	}
	msg := b[p.l4:p.end]
	msg[2], msg[3] = 0, 0
	var s uint32
	if p.v6 {
		s = pseudoSum(p, uint32(len(msg)))
	}
	binary.BigEndian.PutUint16(msg[2:], ^fold(sum(s, msg)))
}

// setAddr rewrites the source (src) or destination address of the IP
// packet p in b, updating the IPv4 header checksum and the transport
// checksum that covers it (incrementally; a partial checksum holds only
// the pseudo-header's sum, not complemented).
func setAddr(b []byte, p *parsed, src bool, a [16]byte, partial bool) {
	n := 16
	off := p.l3 + 24
	if !p.v6 {
		n = 4
		off = p.l3 + 16
	}
	if src {
		off -= n
	}
	if off+n > len(b) {
		return
	}
	old := b[off : off+n]
	var diff uint32
	for i := 0; i < n; i += 2 {
		diff += uint32(^binary.BigEndian.Uint16(old[i:])) + uint32(binary.BigEndian.Uint16(a[i:]))
	}
	if !p.v6 {
		adjust(b[p.l3+10:], diff, false)
	}
	if l4 := l4CsumOff(p); l4 >= 0 && l4+2 <= len(b) {
		if !(p.proto == protoUDP && !p.v6 && binary.BigEndian.Uint16(b[l4:]) == 0) {
			adjust(b[l4:], diff, partial)
			if p.proto == protoUDP && binary.BigEndian.Uint16(b[l4:]) == 0 && !partial {
				binary.BigEndian.PutUint16(b[l4:], 0xffff)
			}
		}
	}
	copy(old, a[:n])
	if src {
		p.src = a
	} else {
		p.dst = a
	}
}

// setPort rewrites a transport port and updates the checksum, which a
// partial checksum does not cover.
func setPort(b []byte, p *parsed, src bool, port uint16, partial bool) {
	off := p.l4 + 2
	if src {
		off = p.l4
	}
	if off+2 > len(b) {
		return
	}
	old := binary.BigEndian.Uint16(b[off:])
	if old == port {
		return
	}
	if l4 := l4CsumOff(p); !partial && l4 >= 0 && l4+2 <= len(b) {
		if !(p.proto == protoUDP && binary.BigEndian.Uint16(b[l4:]) == 0) {
			adjust(b[l4:], uint32(^old)+uint32(port), false)
			if p.proto == protoUDP && binary.BigEndian.Uint16(b[l4:]) == 0 {
				binary.BigEndian.PutUint16(b[l4:], 0xffff)
			}
		}
	}
	binary.BigEndian.PutUint16(b[off:], port)
	if src {
		p.sport = port
	} else {
		p.dport = port
	}
}

// setPortRaw rewrites a port of a quoted packet, whose checksum the ICMP
// error's recomputation covers.
func setPortRaw(b []byte, p *parsed, src bool, port uint16) {
	off := p.l4 + 2
	if src {
		off = p.l4
	}
	if off+2 <= len(b) {
		binary.BigEndian.PutUint16(b[off:], port)
	}
}

// l4CsumOff is the offset of the transport checksum whose pseudo-header
// covers the addresses, or -1.
func l4CsumOff(p *parsed) int {
	switch {
	case p.proto == protoTCP && p.l4Valid:
		return p.l4 + 16
	case p.proto == protoUDP && p.l4Valid:
		return p.l4 + 6
	case p.proto == protoICMPv6 && p.v6 && p.l4Valid && p.inner == nil:
		return p.l4 + 2
	}
	return -1
}

// adjust adds diff (a sum of ~old + new words) to the checksum at c[0:2]
// (RFC 1624 eqn. 3); a partial checksum is kept uncomplemented.
func adjust(c []byte, diff uint32, partial bool) {
	v := binary.BigEndian.Uint16(c)
	if partial {
		binary.BigEndian.PutUint16(c, fold(uint32(v)+diff))
		return
	}
	binary.BigEndian.PutUint16(c, ^fold(uint32(^v)+diff))
}

func sum(s uint32, b []byte) uint32 {
	for len(b) >= 2 {
		s += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}

func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// pseudoSum is the IPv6 pseudo-header's sum for p with upper-layer
// length n.
func pseudoSum(p *parsed, n uint32) uint32 {
	s := sum(0, p.src[:])
	s = sum(s, p.dst[:])
	return s + n>>16 + n&0xffff + uint32(p.proto)
}
