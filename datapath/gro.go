package datapath

import (
	"bytes"
	"encoding/binary"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev/offload"
)

// Userspace GRO for decapsulated TCP. The sending switch cuts each TSO
// super-frame of a VIF into wire-sized segments before encapsulating them
// (AF_PACKET takes no UDP-tunnel GSO), so the receiving switch would write
// ~45 segments per super-frame to the far VIF, each a trip through the
// kernel's stack. Before a port that takes TSO is written, consecutive
// segments of one TCP connection that came out of a tunnel are joined
// again into one super-frame with the offload metadata of a TSO frame
// (gso_size the first segment's payload, checksum partial), as the
// kernel's tcp_gro_receive would: same headers but for IP length, ID and
// checksum and TCP sequence number and checksum, in sequence, every
// segment but the last as long as the first, only ACK set (PSH on the
// last), checksums verified. Flows counted every segment before this;
// the port counts the super-frames it sends.

// groMaxLen is the longest super-frame built: an IPv4 total length or
// IPv6 payload length is 16 bits, and the kernel's GRO stops at 64 KiB.
const groMaxLen = 65535

// groSeg is one segment's headers as coalescing compares them.
type groSeg struct {
	v4     bool
	ipOff  int // network header offset (14)
	tcpOff int // transport header offset
	hdrLen int // headers up to the payload
	seq    uint32
	flags  byte // TCP flags
	pay    int  // payload length
}

// parseGROSeg parses f as a candidate segment: untagged IPv4 without
// options or fragmentation, or IPv6 without extension headers, carrying
// TCP with payload, ACK and at most PSH set, its IP length exactly the
// frame's.
func parseGROSeg(f []byte) (s groSeg, ok bool) {
	if len(f) < 14+20+20 {
		return s, false
	}
	s.ipOff = 14
	ip := f[14:]
	switch binary.BigEndian.Uint16(f[12:]) {
	case flow.EthTypeIPv4:
		if ip[0] != 0x45 || ip[9] != flow.IPProtoTCP || binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 ||
			int(binary.BigEndian.Uint16(ip[2:])) != len(ip) {
			return s, false
		}
		s.v4, s.tcpOff = true, 14+20
	case flow.EthTypeIPv6:
		if len(ip) < 40+20 || ip[0]>>4 != 6 || ip[6] != flow.IPProtoTCP || int(binary.BigEndian.Uint16(ip[4:]))+40 != len(ip) {
			return s, false
		}
		s.tcpOff = 14 + 40
	default:
		return s, false
	}
	tcp := f[s.tcpOff:]
	doff := int(tcp[12]>>4) * 4
	if doff < 20 || doff > len(tcp) || tcp[12]&0x0f != 0 {
		return s, false
	}
	s.flags = tcp[13]
	if s.flags&^0x08 != 0x10 { // ACK, maybe PSH
		return s, false
	}
	s.hdrLen = s.tcpOff + doff
	s.pay = len(f) - s.hdrLen
	s.seq = binary.BigEndian.Uint32(tcp[4:])
	return s, s.pay > 0
}

// groFollows reports whether n, parsed as sn, continues the run whose
// first segment is f (parsed as sf) and whose last is parsed as sl.
func groFollows(f []byte, sf, sl groSeg, n []byte, sn groSeg) bool {
	if sn.v4 != sf.v4 || sn.hdrLen != sf.hdrLen || sn.pay > sf.pay || sl.flags&0x08 != 0 || sl.pay != sf.pay ||
		sn.seq != sl.seq+uint32(sl.pay) {
		return false
	}
	ip, nip := f[sf.ipOff:sf.tcpOff], n[sn.ipOff:sn.tcpOff]
	if sf.v4 {
		// Version to TOS, fragment field, TTL and protocol, addresses.
		if ip[1] != nip[1] || !bytes.Equal(ip[6:10], nip[6:10]) || !bytes.Equal(ip[12:20], nip[12:20]) {
			return false
		}
	} else if !bytes.Equal(ip[0:4], nip[0:4]) || !bytes.Equal(ip[6:40], nip[6:40]) {
		return false
	}
	tcp, ntcp := f[sf.tcpOff:sf.hdrLen], n[sn.tcpOff:sn.hdrLen]
	// Ethernet header; ports; ACK; offset, window (flags checked by the
	// parse); urgent pointer and options.
	return bytes.Equal(f[:14], n[:14]) && bytes.Equal(tcp[0:4], ntcp[0:4]) && bytes.Equal(tcp[8:13], ntcp[8:13]) &&
		bytes.Equal(tcp[14:16], ntcp[14:16]) && bytes.Equal(tcp[18:], ntcp[18:])
}

// groPseudo is the pseudo-header sum of f's TCP segment with l4Len bytes,
// folded but not complemented: what a partial checksum field holds.
func groPseudo(f []byte, s groSeg, l4Len int) uint16 {
	var ph [40]byte
	n := 0
	if s.v4 {
		n = copy(ph[:], f[s.ipOff+12:s.ipOff+20])
	} else {
		n = copy(ph[:], f[s.ipOff+8:s.ipOff+40])
	}
	binary.BigEndian.PutUint16(ph[n:], uint16(l4Len>>16))
	binary.BigEndian.PutUint16(ph[n+2:], uint16(l4Len))
	binary.BigEndian.PutUint16(ph[n+4:], flow.IPProtoTCP)
	return ^offload.Checksum(ph[:n+6], 0)
}

// groChecksumOK reports whether p's TCP checksum is right, or p's
// checksum needs no check (verified, or partial from a local sender).
func groChecksumOK(p *packet.Packet, f []byte, s groSeg) bool {
	if p.Offload.Flags&(packet.CsumValid|packet.NeedsCsum) != 0 {
		return true
	}
	l4 := f[s.tcpOff:]
	return offload.Checksum(l4, uint64(groPseudo(f, s, len(l4)))) == 0
}

// groPort reports whether p came out of a tunnel, keeping the last port
// looked up in *last.
func groPort(table *portTable, p *packet.Packet, last **dpPort) bool {
	if *last == nil || (*last).no != p.InPort {
		*last = table.byNo[p.InPort]
	}
	return *last != nil && (*last).tunnel
}

// coalesce joins runs of decapsulated TCP segments in pkts into
// super-frames for a port that takes off, in place, and returns what is
// left to write. The segments themselves are left as they were: they may
// be queued to other ports too.
func (w *worker) coalesce(pkts []*packet.Packet, off offloadCaps, table *portTable) []*packet.Packet {
	out := pkts[:0]
	var last *dpPort
	for i := 0; i < len(pkts); {
		p := pkts[i]
		i++
		if p.Offload.GSO != packet.GSONone || p.Ext() != nil || !groPort(table, p, &last) {
			out = append(out, p)
			continue
		}
		f := p.Head()
		sf, ok := parseGROSeg(f)
		if !ok || sf.v4 && !off.tso4 || !sf.v4 && !off.tso6 {
			out = append(out, p)
			continue
		}
		sl, total, j := sf, len(f), i
		for ; j < len(pkts); j++ {
			q := pkts[j]
			if q.Offload.GSO != packet.GSONone || q.Ext() != nil || !groPort(table, q, &last) {
				break
			}
			n := q.Head()
			sn, ok := parseGROSeg(n)
			if !ok || total+sn.pay > groMaxLen || !groFollows(f, sf, sl, n, sn) {
				break
			}
			if j == i && !groChecksumOK(p, f, sf) {
				break
			}
			if !groChecksumOK(q, n, sn) {
				break
			}
			sl, total = sn, total+sn.pay
		}
		if j == i {
			out = append(out, p)
			continue
		}
		out = append(out, w.superFrame(pkts[i-1:j], sf, sl, total))
		i = j
	}
	clear(pkts[len(out):])
	return out
}

// superFrame copies the segments segs, whose first is parsed as sf and
// last as sl, into one super-frame of total bytes.
func (w *worker) superFrame(segs []*packet.Packet, sf, sl groSeg, total int) *packet.Packet {
	s := w.dp.pool.Get()
	w.clones = append(w.clones, s)
	b := s.Tail()[:total]
	n := copy(b, segs[0].Head())
	for _, q := range segs[1:] {
		n += copy(b[n:], q.Head()[sf.hdrLen:])
	}
	s.SetLen(n)
	s.InPort = segs[0].InPort
	s.Offload = groFinish(b, sf, sl, total)
	w.dp.groSegs.Add(uint64(len(segs)))
	w.dp.groFrames.Add(1)
	return s
}

// groFinish makes b, total bytes of segments joined whose first was
// parsed as sf and last as sl, a TSO super-frame: IP length and checksum,
// PSH if the last had it, the TCP checksum partial. It returns the
// super-frame's offload metadata.
func groFinish(b []byte, sf, sl groSeg, total int) packet.Offload {
	ip, tcp := b[sf.ipOff:sf.tcpOff], b[sf.tcpOff:total]
	gso := packet.GSOTCPv4
	if sf.v4 {
		binary.BigEndian.PutUint16(ip[2:], uint16(total-sf.ipOff))
		ip[10], ip[11] = 0, 0
		binary.BigEndian.PutUint16(ip[10:], offload.Checksum(ip[:20], 0))
	} else {
		binary.BigEndian.PutUint16(ip[4:], uint16(total-sf.tcpOff))
		gso = packet.GSOTCPv6
	}
	tcp[13] |= sl.flags & 0x08
	binary.BigEndian.PutUint16(tcp[16:], groPseudo(b, sf, len(tcp)))
	return packet.Offload{Flags: packet.NeedsCsum, GSO: gso, HdrLen: uint16(sf.hdrLen), GSOSize: uint16(sf.pay),
		CsumStart: uint16(sf.tcpOff), CsumOffset: 16}
}

// GRO returns how many decapsulated segments were coalesced, into how
// many super-frames.
func (dp *Datapath) GRO() (segs, frames uint64) { return dp.groSegs.Load(), dp.groFrames.Load() }

// offloadCaps is what a port's transmit takes that coalescing makes use of.
type offloadCaps struct{ tso4, tso6 bool }
