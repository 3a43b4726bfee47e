package datapath

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/maphash"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev/offload"
	"github.com/govs/govs/netdev/tunnel"
)

// Whole super-frames through a VXLAN or Geneve underlay (TnlPush.GSO).
//
// An AF_PACKET socket takes no UDP-tunnel GSO (virtio_net_hdr_to_skb knows
// no VIRTIO_NET_HDR_GSO_UDP_TUNNEL_*), but it takes UDP GSO
// (VIRTIO_NET_HDR_GSO_UDP_L4, Linux 6.2): one UDP datagram whose payload
// the kernel cuts into gso_size pieces, each under a copy of the outer
// headers with its lengths, IPv4 ID and UDP checksum fixed
// (__udp_gso_segment). So the sending switch cuts a TSO super-frame from
// a VIF into segments as before, but puts each segment's tunnel header
// and inner frame one after the other behind a single outer
// Ethernet/IP/UDP header, every piece as long as the first but the last:
// the kernel's segmentation of that frame yields exactly the tunnel
// packets that one per segment would have been, with a UDP checksum each.
// The frame crosses the underlay as one: segmented on egress by a NIC or
// the kernel (software GSO), by a local kernel stack on receive
// (udp_rcv_segment, a vxlan device's socket), or read whole by a switch
// whose socket has PACKET_VNET_HDR, as govs' do. A reader without
// vnet_hdr (OVS's netdev datapath without userspace-tso-enable) would get
// one oversized frame, which is why this is an option (Interface
// other_config:tunnel-udp-gso on the tunnel, off by default). Where the
// egress port takes no UDP GSO (Linux before 6.2) it is not used: cutting
// the frame there would cost a copy more than segmenting first.
//
// govs receiving such a frame for a tunnel vport (tnlPopGSO) decapsulates
// its first datagram and joins the inner segments of the following ones
// straight into one TSO super-frame while they continue it (same tunnel
// header, consecutive segments of one TCP connection, as gro.go's rules);
// the first that does not starts the next run.

// udpGSOMaxSegs bounds the datagrams of one UDP GSO frame sent: the
// kernel's UDP_MAX_SEGMENTS, past which virtio_net_hdr_to_skb and
// __udp_gso_segment refuse a frame, was 64 (newer kernels raised it to
// 128, which the receive side takes; more is refused as malformed, so
// that one frame cannot make thousands of packets).
const (
	udpGSOMaxSegs   = 64
	udpGSOMaxSegsRx = 128
)

// outputsTakeUSO reports whether every port ops output to takes UDP GSO
// frames (a system or tap port on Linux 6.2 or later): one that does not
// would have to cut each frame in software, a copy more than segmenting
// before encapsulating.
func outputsTakeUSO(ops []op) bool {
	for i := range ops {
		if ops[i].kind == ActionOutput && ops[i].port != nil {
			if o := ops[i].port.dev.Offloads(); !o.Csum || !o.USO {
				return false
			}
		}
	}
	return true
}

// tnlPushGSO encapsulates TSO super-frame p as UDP GSO frames for t,
// appended to out, each at most 64 KiB of IP packet. A frame of one
// segment is an ordinary tunnel packet.
func (w *worker) tnlPushGSO(t *tnlOp, p *packet.Packet, out []*packet.Packet) []*packet.Packet {
	p.Linearize()
	var seg offload.Segmenter
	if seg.Reset(p.Data(), &p.Offload) != nil {
		w.dp.tnlPushErrors.Add(1)
		return out
	}
	outer := t.udpOff + 8
	tun := t.hdr[outer:]
	full := len(tun) + seg.MaxSegmentLen()
	// An IPv4 total length or IPv6 payload length is 16 bits.
	limit := 14 + 65535
	if !t.v4 {
		limit = 14 + 40 + 65535
	}
	limit = min(limit, packet.MaxFrame)
	if outer+full > limit {
		w.dp.tnlPushErrors.Add(1)
		return out
	}
	sport := 32768 + uint16(maphash.Bytes(portSeed, flowBytes(p.Data()))%28232)
	for i, n := 0, seg.Segments(); i < n; {
		q := w.dp.pool.Get()
		w.clones = append(w.clones, q)
		b := q.Tail()
		off := copy(b, t.hdr[:outer])
		k := 0
		for ; i < n && k < udpGSOMaxSegs && off+full <= limit; i, k = i+1, k+1 {
			off += copy(b[off:], tun)
			off += seg.Next(b[off:])
		}
		q.SetLen(off)
		q.InPort = p.InPort
		w.tnlFinishGSO(t, q, sport, k, full)
		out = append(out, q)
	}
	return out
}

// tnlFinishGSO fills in the outer headers of q, k tunnel packets of size
// bytes of UDP payload each (the last maybe shorter) behind t's outer
// headers: lengths, IPv4 ID and checksum, UDP source port, and the UDP
// checksum partial with the UDP GSO offload; one packet is sent as it is,
// its checksum complete if t has one.
func (w *worker) tnlFinishGSO(t *tnlOp, q *packet.Packet, sport uint16, k, size int) {
	frame := q.Data()
	ip := frame[14:t.udpOff]
	if t.v4 {
		binary.BigEndian.PutUint16(ip[2:], uint16(len(frame)-14))
		binary.BigEndian.PutUint16(ip[4:], w.tnlID+1)
		w.tnlID += uint16(k)
		ip[10], ip[11] = 0, 0
		binary.BigEndian.PutUint16(ip[10:], offload.Checksum(ip[:20], 0))
	} else {
		binary.BigEndian.PutUint16(ip[4:], uint16(len(frame)-t.udpOff))
	}
	l4 := frame[t.udpOff:]
	binary.BigEndian.PutUint16(l4[0:], sport)
	binary.BigEndian.PutUint16(l4[4:], uint16(len(l4)))
	l4[6], l4[7] = 0, 0
	ps := tunnel.UDPPseudoSum(ip, t.v4, len(l4))
	if k > 1 {
		// What a partial checksum field holds: the pseudo-header sum,
		// not complemented; __udp_gso_segment adjusts it per segment.
		binary.BigEndian.PutUint16(l4[6:], ^offload.Checksum(nil, ps))
		q.Offload = packet.Offload{Flags: packet.NeedsCsum, GSO: packet.GSOUDPL4, GSOSize: uint16(size),
			HdrLen: uint16(t.udpOff + 8), CsumStart: uint16(t.udpOff), CsumOffset: 6}
		w.dp.tnlGSOFrames.Add(1)
		w.dp.tnlGSOSegs.Add(uint64(k))
		return
	}
	if t.h.Csum {
		c := offload.Checksum(l4, ps)
		if c == 0 {
			c = 0xffff
		}
		binary.BigEndian.PutUint16(l4[6:], c)
	}
	q.Offload = packet.Offload{Flags: packet.CsumValid}
}

// errTnlGSO: a UDP GSO frame that is not one as the kernel makes them.
var errTnlGSO = errors.New("malformed UDP GSO frame")

// tnlGSO is a received UDP GSO frame: untagged IPv4 (not a fragment) or
// IPv6 without extension headers, UDP with a partial checksum, IP and
// UDP lengths the frame's, and n datagrams of size bytes of payload (the
// last maybe shorter) after hdrLen bytes of headers.
type tnlGSO struct {
	frame          []byte
	v4             bool
	l4, hdrLen     int
	size, n        int
	id             uint16 // IPv4 ID of the first datagram
	lastPay, total int
}

func parseTnlGSO(frame []byte, o *packet.Offload) (g tnlGSO, err error) {
	if o.GSO != packet.GSOUDPL4 || o.GSOSize == 0 || o.Flags&packet.NeedsCsum == 0 || len(frame) < 14 {
		return g, errTnlGSO
	}
	ip := frame[14:]
	switch binary.BigEndian.Uint16(frame[12:]) {
	case flow.EthTypeIPv4:
		if len(ip) < 20 || ip[0]>>4 != 4 || ip[9] != flow.IPProtoUDP || binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 ||
			int(binary.BigEndian.Uint16(ip[2:])) != len(ip) {
			return g, errTnlGSO
		}
		g.v4, g.l4, g.id = true, 14+int(ip[0]&0x0f)*4, binary.BigEndian.Uint16(ip[4:])
		if g.l4 < 14+20 {
			return g, errTnlGSO
		}
	case flow.EthTypeIPv6:
		if len(ip) < 40 || ip[0]>>4 != 6 || ip[6] != flow.IPProtoUDP || int(binary.BigEndian.Uint16(ip[4:]))+40 != len(ip) {
			return g, errTnlGSO
		}
		g.l4 = 14 + 40
	default:
		return g, errTnlGSO
	}
	g.hdrLen = g.l4 + 8
	if len(frame) <= g.hdrLen || int(o.CsumStart) != g.l4 || o.CsumOffset != 6 ||
		int(binary.BigEndian.Uint16(frame[g.l4+4:])) != len(frame)-g.l4 {
		return g, errTnlGSO
	}
	g.frame, g.size = frame, int(o.GSOSize)
	pay := len(frame) - g.hdrLen
	g.n = (pay + g.size - 1) / g.size
	if g.n > udpGSOMaxSegsRx {
		return tnlGSO{}, errTnlGSO
	}
	return g, nil
}

// payload returns datagram i's UDP payload.
func (g *tnlGSO) payload(i int) []byte {
	at := g.hdrLen + i*g.size
	return g.frame[at:min(at+g.size, len(g.frame))]
}

// datagram writes datagram i, as the kernel's segmentation would make it
// but for its UDP checksum, 0 (the frame's partial checksum says its
// sender is local, as the kernel takes it: nothing to verify), into dst,
// which holds the frame, and returns its length.
func (g *tnlGSO) datagram(dst []byte, i int) int {
	c := g.payload(i)
	n := copy(dst, g.frame[:g.hdrLen])
	n += copy(dst[n:], c)
	ip := dst[14:g.l4]
	if g.v4 {
		binary.BigEndian.PutUint16(ip[2:], uint16(n-14))
		binary.BigEndian.PutUint16(ip[4:], g.id+uint16(i))
		ip[10], ip[11] = 0, 0
		binary.BigEndian.PutUint16(ip[10:], offload.Checksum(ip, 0))
	} else {
		binary.BigEndian.PutUint16(ip[4:], uint16(n-g.l4))
	}
	l4 := dst[g.l4:n]
	binary.BigEndian.PutUint16(l4[4:], uint16(len(l4)))
	l4[6], l4[7] = 0, 0
	return n
}

// join appends to f, the decapsulated inner frame of datagram from at
// the start of buf, the TCP payload of datagrams from+1, from+2, ... while
// their tunnel header is datagram from's (tunLen bytes) and their inner
// frame continues the run as gro.go joins segments, within buf and
// groMaxLen. It returns how many datagrams the frame holds (1: nothing
// joined) and its length, its offload metadata made a TSO super-frame's
// when more than one.
func (g *tnlGSO) join(buf []byte, f []byte, from, tunLen int) (segs, total int, o packet.Offload) {
	sf, ok := parseGROSeg(f)
	if !ok || tunLen < 0 || tunLen > len(g.payload(from)) {
		return 1, len(f), o
	}
	tun := g.payload(from)[:tunLen]
	sl, total, limit := sf, len(f), min(len(buf), groMaxLen)
	segs = 1
	for ; from+segs < g.n; segs++ {
		c := g.payload(from + segs)
		if len(c) <= tunLen || !bytes.Equal(c[:tunLen], tun) {
			break
		}
		inner := c[tunLen:]
		sn, ok := parseGROSeg(inner)
		if !ok || total+sn.pay > limit || !groFollows(f, sf, sl, inner, sn) {
			break
		}
		total += copy(buf[total:], inner[sn.hdrLen:])
		sl = sn
	}
	if segs == 1 {
		return 1, total, o
	}
	return segs, total, groFinish(buf[:total], sf, sl, total)
}

// tnlPopGSO decapsulates p, a UDP GSO frame received for tunnel vport
// port, without writing to it: each datagram's inner frame, with those of
// the following datagrams that continue it joined in, through the lookup
// again. The outer UDP checksum counts
// as present (tun_flags +csum), as in the datagrams the kernel would have
// cut it into.
func (w *worker) tnlPopGSO(p *packet.Packet, port *dpPort, depth int, table *portTable, now int64) {
	if p.Ext() != nil {
		p = w.clone(p)
		p.Linearize()
	}
	g, err := parseTnlGSO(p.Data(), &p.Offload)
	if err != nil {
		w.tnlPopDrop(port)
		return
	}
	w.dp.tnlGSORx.Add(1)
	for i := 0; i < g.n; {
		q := w.dp.pool.Get()
		w.clones = append(w.clones, q)
		q.SetLen(g.datagram(q.Tail(), i))
		q.InPort = p.InPort
		q.Offload = packet.Offload{Flags: packet.CsumValid}
		h, off, ok := w.tnlDecap(q, port)
		if !ok {
			i++
			continue
		}
		h.Csum = true
		segs, n, o := g.join(q.Tail(), q.Head(), i, off-g.hdrLen)
		if segs > 1 {
			q.SetLen(n)
			q.Offload = o
			w.dp.groSegs.Add(uint64(segs))
			w.dp.groFrames.Add(1)
			// Each datagram's inner frame, as tnlPop counts.
			n += (segs - 1) * int(o.HdrLen)
		}
		i += segs
		port.rxPackets.Add(uint64(segs))
		port.rxBytes.Add(uint64(n))
		w.tnlReenter(q, port, &h, depth, table, now)
	}
}

// TunnelGSO returns how many UDP GSO frames tnl_push sent, how many
// tunnel packets they held, and how many tnl_pop received.
func (dp *Datapath) TunnelGSO() (sent, segs, received uint64) {
	return dp.tnlGSOFrames.Load(), dp.tnlGSOSegs.Load(), dp.tnlGSORx.Load()
}
