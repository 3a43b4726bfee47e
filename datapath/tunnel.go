package datapath

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/maphash"
	"strconv"
	"strings"

	"github.com/govs/govs/datapath/conntrack"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev/offload"
	"github.com/govs/govs/netdev/tunnel"
)

// Tunnel actions (OVS's native tunnelling in lib/dpif-netdev.c and
// lib/netdev-native-tnl.c).
const (
	// ActionTnlPush encapsulates a copy of the packet in Tnl's outer
	// headers and runs Tnl.Nested on it (OVS's
	// clone(tnl_push(...),...)); the packet itself goes on unchanged.
	ActionTnlPush ActionKind = 32 + iota
	// ActionTnlPop decapsulates the packet and sends it back through the
	// lookup as received on the tunnel vport Port, with the outer headers
	// in its key's tunnel metadata. It ends the packet's actions.
	ActionTnlPop
)

// TnlPush is a tnl_push action's arguments.
type TnlPush struct {
	// Port is the tunnel's vport; OutPort the egress bridge port the
	// route chose (both shown in dumps only).
	Port, OutPort uint32
	// Header is the outer headers; SrcPort, ID and lengths are set per
	// packet.
	Header tunnel.Header
	// Nested are the egress bridge's actions for the encapsulated packet.
	Nested Actions
	// GSO sends a TSO super-frame encapsulated as one UDP GSO frame
	// (VXLAN and Geneve only; tnlgso.go) instead of one packet per
	// segment. Not shown in dumps: OVS has no such thing.
	GSO bool
}

// TnlPushAction returns the tnl_push action of t.
func TnlPushAction(t TnlPush) Action { return Action{Kind: ActionTnlPush, Tnl: &t} }

// TnlPop returns the action that decapsulates for tunnel vport port.
func TnlPop(port uint32) Action { return Action{Kind: ActionTnlPop, Port: port} }

func tnlEqual(a, b *TnlPush) bool {
	if a == nil || b == nil {
		return a == b
	}
	ha, hb := a.Header, b.Header
	if !bytes.Equal(ha.Options, hb.Options) {
		return false
	}
	ha.Options, hb.Options = nil, nil
	ba, _ := tunnel.Build(&ha, nil)
	bb, _ := tunnel.Build(&hb, nil)
	return a.Port == b.Port && a.OutPort == b.OutPort && bytes.Equal(ba, bb) && ha.SeqPresent == hb.SeqPresent &&
		a.GSO == b.GSO && a.Nested.Equal(b.Nested)
}

// tnlString formats a tnl_push as OVS's format_odp_tnl_push_action, from
// the header template as OVS keeps it (UDP source port, IP ID and lengths
// 0, set per packet; the UDP checksum 0xffff when one is computed):
// clone(tnl_push(tnl_port(4),header(size=50,type=4,eth(dst=..,src=..,
// dl_type=0x0800),ipv4(src=..,dst=..,proto=17,tos=0,ttl=64,frag=0x4000),
// udp(src=0,dst=4789,csum=0x0),vxlan(flags=0x8000000,vni=0x5)),
// out_port(2)),1). As the last action it is printed without the clone, as
// OVS composes it then (native_tunnel_output's is_last_action):
// tnl_push(...),1. With name (dump-flows --names) the ports are named,
// as OVS's odp_portno_name_format.
func tnlString(t *TnlPush, last bool, name func(uint32) string) string {
	port := func(no uint32) string {
		if name != nil {
			return name(no)
		}
		return strconv.Itoa(int(no))
	}
	h := t.Header
	h.SrcPort, h.ID, h.Seq = 0, 0, 0
	hdr, err := tunnel.Build(&h, nil)
	if err != nil || len(hdr) < 14 {
		return "tnl_push(tnl_port(" + port(t.Port) + "),header(invalid))"
	}
	var b strings.Builder
	if !last {
		b.WriteString("clone(")
	}
	b.WriteString("tnl_push(tnl_port(" + port(t.Port) + "),")
	v4 := h.Dst.Unmap().Is4()
	b.WriteString("header(size=" + strconv.Itoa(len(hdr)) + ",type=" + strconv.Itoa(ovsVportType(h.Kind, v4)))
	b.WriteString(",eth(dst=" + flow.MAC(hdr[0:6]).String() + ",src=" + flow.MAC(hdr[6:12]).String())
	b.WriteString(",dl_type=0x" + strconv.FormatUint(uint64(binary.BigEndian.Uint16(hdr[12:]))|0x10000, 16)[1:] + "),")
	ip := hdr[14:]
	var l4 []byte
	if v4 {
		b.WriteString("ipv4(src=" + h.Src.Unmap().String() + ",dst=" + h.Dst.Unmap().String() +
			",proto=" + strconv.Itoa(int(ip[9])) + ",tos=" + hexAlt(uint64(ip[1])) + ",ttl=" + strconv.Itoa(int(ip[8])) +
			",frag=0x" + strconv.FormatUint(uint64(binary.BigEndian.Uint16(ip[6:])), 16) + "),")
		l4 = ip[20:]
	} else {
		fl := binary.BigEndian.Uint32(ip[0:])
		b.WriteString("ipv6(src=" + h.Src.String() + ",dst=" + h.Dst.String() + ",label=" + strconv.Itoa(int(fl&0xfffff)) +
			",proto=" + strconv.Itoa(int(ip[6])) + ",tclass=0x" + strconv.FormatUint(uint64(fl>>20&0xff), 16) +
			",hlimit=" + strconv.Itoa(int(ip[7])) + "),")
		l4 = ip[40:]
	}
	switch h.Kind {
	case tunnel.KindVXLAN, tunnel.KindGeneve:
		csum := 0
		if tnlUDPCsum(&h) {
			csum = 0xffff
		}
		b.WriteString("udp(src=0,dst=" + strconv.Itoa(int(h.DstPort)) + ",csum=0x" + strconv.FormatUint(uint64(csum), 16) + "),")
		t := l4[8:]
		if h.Kind == tunnel.KindVXLAN {
			b.WriteString("vxlan(flags=0x" + strconv.FormatUint(uint64(binary.BigEndian.Uint32(t[0:])), 16) +
				",vni=0x" + strconv.FormatUint(uint64(binary.BigEndian.Uint32(t[4:])>>8), 16) + ")")
			break
		}
		b.WriteString("geneve(")
		if t[1]&0x80 != 0 {
			b.WriteString("oam,")
		}
		if t[1]&0x40 != 0 {
			b.WriteString("crit,")
		}
		b.WriteString("vni=0x" + strconv.FormatUint(uint64(binary.BigEndian.Uint32(t[4:])>>8), 16))
		if len(h.Options) > 0 {
			b.WriteString(",options(" + flow.FormatGeneveOpts(h.Options) + ")")
		}
		b.WriteString(")")
	case tunnel.KindGRE:
		flags := binary.BigEndian.Uint16(l4[0:])
		b.WriteString("gre((flags=0x" + strconv.FormatUint(uint64(flags), 16) +
			",proto=0x" + strconv.FormatUint(uint64(binary.BigEndian.Uint16(l4[2:])), 16) + ")")
		// The template's checksum and sequence number are 0, as OVS's.
		if flags&0x8000 != 0 {
			b.WriteString(",csum=0x0")
		}
		if flags&0x2000 != 0 {
			b.WriteString(",key=0x" + strconv.FormatUint(uint64(h.Key), 16))
		}
		if flags&0x1000 != 0 {
			b.WriteString(",seq=0x0")
		}
		b.WriteString(")")
	}
	b.WriteString("),out_port(" + port(t.OutPort) + "))")
	if len(t.Nested) > 0 {
		b.WriteString("," + t.Nested.Format(name))
	}
	if !last {
		b.WriteString(")")
	}
	return b.String()
}

// ovsVportType is the tnl_type OVS shows in a tnl_push header: the
// datapath's vport type (include/linux/openvswitch.h).
func ovsVportType(k tunnel.Kind, v4 bool) int {
	switch k {
	case tunnel.KindGRE:
		if v4 {
			return 3 // OVS_VPORT_TYPE_GRE
		}
		return 109 // OVS_VPORT_TYPE_IP6GRE
	case tunnel.KindVXLAN:
		return 4
	case tunnel.KindGeneve:
		return 5
	}
	return 0
}

// tnlUDPCsum reports whether the outer UDP checksum of h is computed: with
// options:csum, and always over IPv6, as OVS's udp_build_header.
func tnlUDPCsum(h *tunnel.Header) bool {
	return h.Kind != tunnel.KindGRE && (h.Csum || !h.Dst.Unmap().Is4())
}

// tnlOp is a resolved tnl_push: the outer headers prebuilt for an empty
// payload, and the nested actions.
type tnlOp struct {
	hdr    []byte
	h      tunnel.Header
	v4     bool
	nested []op
	meta   bool
	// gso: super-frames leave as UDP GSO frames; udpOff is where the
	// outer UDP header is in hdr.
	gso    bool
	udpOff int
}

func resolveTnl(t *TnlPush, table *portTable) *tnlOp {
	h := t.Header
	h.Csum = h.Csum || tnlUDPCsum(&h)
	hdr, err := tunnel.Build(&h, nil)
	if err != nil {
		return nil
	}
	nested := resolveOps(nil, t.Nested, table)
	op := &tnlOp{hdr: hdr, h: h, v4: h.Dst.Unmap().Is4(), nested: nested, meta: usesMeta(nested)}
	if t.GSO && h.Kind != tunnel.KindGRE && outputsTakeUSO(nested) {
		op.gso, op.udpOff = true, 14+40
		if op.v4 {
			op.udpOff = 14 + 20
		}
	}
	return op
}

// portSeed keys the UDP source port hash.
var portSeed = maphash.MakeSeed()

// tnlPush encapsulates copies of pkts (segmented first if they are
// super-frames, since the outer headers must be on every segment; with
// t.gso the segments of a TCP super-frame go in UDP GSO frames,
// tnlgso.go) and runs the nested actions on them.
func (w *worker) tnlPush(t *tnlOp, pkts []*packet.Packet, depth int, table *portTable, now int64) {
	var out []*packet.Packet
	for _, p := range pkts {
		if p == nil {
			continue
		}
		if p.Offload.GSO != packet.GSONone && t.gso && p.Offload.GSO != packet.GSOUDPL4 {
			out = w.tnlPushGSO(t, p, out)
			continue
		}
		if p.Offload.GSO != packet.GSONone {
			var seg offload.Segmenter
			if seg.Reset(p.Data(), &p.Offload) != nil {
				w.dp.tnlPushErrors.Add(1)
				continue
			}
			for {
				q := w.dp.pool.Get()
				n := seg.Next(q.Tail())
				if n == 0 {
					w.dp.pool.Put(q)
					break
				}
				q.SetLen(n)
				q.Offload = packet.Offload{Flags: packet.CsumValid}
				q.InPort = p.InPort
				w.clones = append(w.clones, q)
				if w.encap(t, q) {
					out = append(out, q)
				}
			}
			continue
		}
		q := w.clone(p)
		if q.Offload.Flags&packet.NeedsCsum != 0 {
			// The inner checksum cannot be left to the egress: its
			// offsets would have to survive the outer headers, and the
			// kernel takes no partial inner checksum through AF_PACKET.
			if offload.CompleteChecksum(q.Data(), &q.Offload) != nil {
				w.dp.tnlPushErrors.Add(1)
				continue
			}
		}
		if w.encap(t, q) {
			out = append(out, q)
		}
	}
	if len(out) == 0 {
		return
	}
	var mds []conntrack.Meta
	if t.meta {
		mds = make([]conntrack.Meta, len(out))
	}
	// The encapsulated copies are not the decapsulated packet.
	in := w.inTun
	w.inTun = false
	w.apply(t.nested, out, mds, depth, table, now)
	w.inTun = in
}

// encap puts t's outer headers in front of p and fixes the lengths,
// checksums and UDP source port. For a legacy_l3 GRE tunnel p's Ethernet
// header and VLAN tags go first and the GRE protocol is the Ethernet
// type behind them (OVS's pop_eth before its tnl_push); a frame without
// an Ethernet type (802.3) is dropped and counted.
func (w *worker) encap(t *tnlOp, p *packet.Packet) bool {
	p.Linearize()
	var proto uint16
	if t.h.L3() {
		l3, typ := l3Offset(p.Data())
		if l3 < 0 || typ < 0x600 {
			w.dp.tnlPushErrors.Add(1)
			return false
		}
		p.Pull(l3)
		shiftOffload(&p.Offload, -l3)
		proto = typ
	}
	hl := len(t.hdr)
	if !p.Reserve(hl) {
		w.dp.tnlPushErrors.Add(1)
		return false
	}
	inner := p.Data()
	// The source port spreads flows over the receiver's queues, as the
	// kernel's udp_flow_src_port: a hash of the inner addresses and ports.
	var sport uint16
	if t.h.Kind != tunnel.KindGRE {
		sport = 32768 + uint16(maphash.Bytes(portSeed, flowBytes(inner))%28232)
	}
	b := p.Push(hl)
	copy(b, t.hdr)
	frame := p.Data()
	ip := frame[14:]
	var l4 []byte
	if t.v4 {
		binary.BigEndian.PutUint16(ip[2:], uint16(len(frame)-14))
		w.tnlID++
		binary.BigEndian.PutUint16(ip[4:], w.tnlID)
		ip[10], ip[11] = 0, 0
		binary.BigEndian.PutUint16(ip[10:], offload.Checksum(ip[:20], 0))
		l4 = ip[20:]
	} else {
		binary.BigEndian.PutUint16(ip[4:], uint16(len(frame)-54))
		l4 = ip[40:]
	}
	if t.h.Kind == tunnel.KindGRE {
		if proto != 0 {
			binary.BigEndian.PutUint16(l4[2:], proto)
		}
		if t.h.Csum {
			l4[4], l4[5] = 0, 0
			binary.BigEndian.PutUint16(l4[4:], offload.Checksum(l4, 0))
		}
		return true
	}
	binary.BigEndian.PutUint16(l4[0:], sport)
	binary.BigEndian.PutUint16(l4[4:], uint16(len(l4)))
	l4[6], l4[7] = 0, 0
	if t.h.Csum {
		c := offload.Checksum(l4, tunnel.UDPPseudoSum(ip, t.v4, len(l4)))
		if c == 0 {
			c = 0xffff
		}
		binary.BigEndian.PutUint16(l4[6:], c)
	}
	p.Offload = packet.Offload{Flags: packet.CsumValid}
	return true
}

// flowBytes is what the source port hashes: the inner IPv4 or IPv6
// addresses and the 4 bytes after them (ports), else the MAC addresses.
func flowBytes(f []byte) []byte {
	if len(f) >= 14+20+4 && binary.BigEndian.Uint16(f[12:]) == flow.EthTypeIPv4 && f[14]&0x0f == 5 {
		return f[26:38]
	}
	if len(f) >= 14+40+4 && binary.BigEndian.Uint16(f[12:]) == flow.EthTypeIPv6 {
		return f[22:58]
	}
	return f[:min(len(f), 12)]
}

// tnlPopBatch decapsulates pkts (copies, if they were queued for output)
// for vport port and sends them through the lookup again.
func (w *worker) tnlPopBatch(port *dpPort, pkts []*packet.Packet, queued bool, depth int, table *portTable, now int64) {
	if depth > maxRecircDepth {
		w.dp.recircDrops.Add(uint64(len(pkts)))
		return
	}
	for _, p := range pkts {
		switch {
		case p == nil:
		case p.Offload.GSO == packet.GSOUDPL4:
			// Only read: the datagrams are written elsewhere.
			w.tnlPopGSO(p, port, depth, table, now)
		case queued:
			w.tnlPop(w.clone(p), port, depth, table, now)
		default:
			w.tnlPop(p, port, depth, table, now)
		}
	}
}

// tnlPop decapsulates p, received for tunnel vport port, and sends it
// through the lookup again with the outer headers in its key. A packet
// whose outer headers are not a well-formed tunnel packet of port's kind
// is dropped and counted (datapath_drop_tunnel_pop_error).
func (w *worker) tnlPop(p *packet.Packet, port *dpPort, depth int, table *portTable, now int64) {
	h, _, ok := w.tnlDecap(p, port)
	if !ok {
		return
	}
	port.rxPackets.Add(1)
	port.rxBytes.Add(uint64(p.Len()))
	w.tnlReenter(p, port, &h, depth, table, now)
}

// tnlDecap strips p's outer headers for tunnel vport port, leaving the
// inner frame, and returns them with where the inner frame was in p. A
// packet whose outer headers are not a well-formed tunnel packet of
// port's kind is dropped and counted.
func (w *worker) tnlDecap(p *packet.Packet, port *dpPort) (h tunnel.Header, off int, ok bool) {
	if p.Ext() != nil {
		p.Linearize()
	}
	vp, _ := port.dev.(*tunnel.Vport)
	if vp == nil {
		w.tnlPopDrop(port)
		return h, 0, false
	}
	h, off, n, err := decap(p.Data(), &p.Offload, vp.Kind())
	if err != nil || h.GBP && !vp.GBP() {
		// A Group Policy header on a port without exts=gbp is
		// malformed to it, as to OVS 3.1's ("invalid vxlan flags").
		w.tnlPopDrop(port)
		return h, 0, false
	}
	if _, err := flow.ParseGeneveOpts(h.Options); err != nil {
		// Options that are not whole TLVs, or more than a key holds.
		w.tnlPopDrop(port)
		return h, 0, false
	}
	p.Pull(off)
	p.SetLen(n)
	p.InPort = port.no
	return h, off, true
}

// tnlReenter sends p, decapsulated from outer headers h, through the
// lookup again as received on port.
func (w *worker) tnlReenter(p *packet.Packet, port *dpPort, h *tunnel.Header, depth int, table *portTable, now int64) {
	var k flow.Key
	if !extract(p, port.no, &k) {
		return
	}
	k.TunID = uint64(h.Key)
	k.TunSrc, k.TunDst = h.Src.As16(), h.Dst.As16()
	k.TunTOS, k.TunTTL = h.TOS, h.TTL
	// The options stay in the buffer in front of the inner frame.
	k.TunOptsLen = uint8(copy(k.TunOpts[:], h.Options))
	k.TunGBPFlags, k.TunGBPID = h.GBPFlags, h.GBPID
	if h.Kind != tunnel.KindGRE {
		k.TunTpSrc, k.TunTpDst = h.SrcPort, h.DstPort
	}
	// The outer DF bit is not kept: OVS 3.1's userspace decapsulation
	// (ip_extract_tnl_md) leaves FLOW_TNL_F_DONT_FRAGMENT clear, so its
	// flows show -df and tun_flags=+df never matches.
	if h.Csum {
		k.TunFlags |= flow.TunFlagCsum
	}
	if h.OAM {
		k.TunFlags |= flow.TunFlagOAM
	}
	if h.L3() {
		k.TunFlags |= flow.TunFlagL3
	}
	if h.Kind != tunnel.KindGRE || h.KeyPresent {
		k.TunFlags |= flow.TunFlagKey
	}
	var md conntrack.Meta
	w.reenter(p, &k, &md, depth, table, now)
}

// errTnlKind: the outer headers are another kind of tunnel's.
var errTnlKind = errors.New("tunnel of another kind")

// decap parses frame's outer headers for a tunnel of kind k: the inner
// frame is frame[off:off+n], and o's offsets are moved to it.
//
// A local sender (the kernel's vxlan device, through a veth) leaves the
// inner L4 checksum partial and computes the outer UDP checksum as if it
// were complete (local checksum offload): the checksum is completed first,
// so that the outer one verifies. A super-frame is taken when its
// segmentation is the inner frame's (the kernel's UDP tunnel GSO, which
// AF_PACKET reports as the inner TCP's); its outer UDP checksum is a
// per-segment seed, not verifiable, and is ignored. A partial checksum
// outside the inner frame is refused.
func decap(frame []byte, o *packet.Offload, k tunnel.Kind) (h tunnel.Header, off, n int, err error) {
	partial := o.Flags&packet.NeedsCsum != 0
	if o.GSO != packet.GSONone {
		if !partial || int(o.CsumStart) < tunnelHdrMin(frame) {
			return h, 0, 0, tunnel.ErrMalformed
		}
		clearOuterUDPCsum(frame)
	} else if partial {
		if err := offload.CompleteChecksum(frame, o); err != nil {
			return h, 0, 0, err
		}
		partial = false
	}
	h, inner, err := tunnel.Parse(frame)
	if err != nil {
		return h, 0, 0, err
	}
	if h.Kind != k {
		return h, 0, 0, errTnlKind
	}
	off, n = offsetOf(frame, inner), len(inner)
	if partial && (int(o.CsumStart) < off || int(o.CsumStart)+int(o.CsumOffset)+2 > off+n) {
		return h, 0, 0, tunnel.ErrMalformed
	}
	if o.GSO != packet.GSONone && (int(o.HdrLen) <= off || int(o.HdrLen) > off+n) {
		return h, 0, 0, tunnel.ErrMalformed
	}
	if h.L3() {
		// A legacy_l3 GRE packet: the IP packet behind a dummy
		// Ethernet header, addresses zero and the GRE protocol its
		// type, written over the end of the GRE header (OVS's
		// datapath keeps packet_type(ns=1,id=PROTO) and its
		// translation pushes the same header).
		off, n = off-14, n+14
		clear(frame[off : off+12])
		binary.BigEndian.PutUint16(frame[off+12:], h.Proto)
	}
	shiftOffload(o, -off)
	return h, off, n, nil
}

// clearOuterUDPCsum zeroes the UDP checksum of an IPv4 or IPv6 frame
// carrying UDP right after the IP header.
func clearOuterUDPCsum(frame []byte) {
	at := tunnelHdrMin(frame) - 2
	if at+2 > len(frame) || at < 14+20+6 {
		return
	}
	proto := byte(0)
	if binary.BigEndian.Uint16(frame[12:]) == flow.EthTypeIPv6 {
		proto = frame[14+6]
	} else if binary.BigEndian.Uint16(frame[12:]) == flow.EthTypeIPv4 {
		proto = frame[14+9]
	}
	if proto == flow.IPProtoUDP {
		frame[at], frame[at+1] = 0, 0
	}
}

// offsetOf is where sub, a subslice of b ending at b's end or before,
// starts in b.
func offsetOf(b, sub []byte) int { return cap(b) - cap(sub) }

// tunnelHdrMin is the offset below which a checksum is in the outer
// headers: the end of the outer UDP header.
func tunnelHdrMin(frame []byte) int {
	if len(frame) >= 14 && binary.BigEndian.Uint16(frame[12:]) == flow.EthTypeIPv6 {
		return 14 + 40 + 8
	}
	if len(frame) >= 15 {
		return 14 + int(frame[14]&0x0f)*4 + 8
	}
	return 0
}

func (w *worker) tnlPopDrop(port *dpPort) {
	w.dp.tnlPopErrors.Add(1)
	port.rxErrors.Add(1)
}

// TunnelErrors returns the packets tnl_pop dropped as malformed and those
// tnl_push could not encapsulate.
func (dp *Datapath) TunnelErrors() (pop, push uint64) {
	return dp.tnlPopErrors.Load(), dp.tnlPushErrors.Load()
}
