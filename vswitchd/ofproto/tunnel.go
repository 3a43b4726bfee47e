package ofproto

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/netdev/tunnel"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// TunnelConfig is a tunnel port's options (type=vxlan|geneve|gre), parsed.
type TunnelConfig struct {
	Kind tunnel.Kind
	// Remote and Local are remote_ip and local_ip; RemoteFlow and
	// LocalFlow say "flow" (the flow's tun_dst / tun_src). An invalid
	// Local means the route's source address.
	Remote, Local         netip.Addr
	RemoteFlow, LocalFlow bool
	// InKey and OutKey are in_key and out_key (key sets both);
	// *KeyFlow say "flow". For GRE, *KeyPresent say whether a key is
	// carried at all.
	InKey, OutKey                uint64
	InKeyFlow, OutKeyFlow        bool
	InKeyPresent, OutKeyPresent  bool
	DstPort                      uint16
	Csum                         bool
	TOS, TTL                     uint8
	TOSInherit, TTLInherit, NoDF bool
	// GBP is a VXLAN tunnel's options:exts=gbp: its packets carry the
	// flow's tun_gbp_id and tun_gbp_flags in the Group Based Policy
	// extension, and its vport takes them from received ones.
	GBP bool
	// UDPGSO is Interface other_config:tunnel-udp-gso (govs only): TSO
	// super-frames leave as one UDP GSO frame each (datapath TnlPush.GSO).
	UDPGSO bool
	// EgressPktMark is options:egress_pkt_mark, when SetEgressPktMark:
	// the pkt_mark of every packet sent through the tunnel (OVS's
	// tnl_port_send), from the output on.
	EgressPktMark    uint32
	SetEgressPktMark bool
	// L3 is a GRE tunnel's options:packet_type=legacy_l3: it carries the
	// packet behind the Ethernet header (GRE protocol its Ethernet
	// type), receives only such packets (with a dummy Ethernet header,
	// addresses zero), and NORMAL does not flood to it.
	L3 bool
}

// TunnelEnv is what tunnel translation reads from the host: govs' route
// table and neighbour cache, and the underlay devices' addresses.
type TunnelEnv interface {
	// Route returns the egress device, source address and next hop
	// (dst itself when on link) for dst.
	Route(dst netip.Addr) (dev string, src, nextHop netip.Addr, ok bool)
	// IsLocal reports whether a is one of the host's addresses.
	IsLocal(a netip.Addr) bool
	// Neigh returns the MAC of ip as learned on bridge.
	Neigh(bridge string, ip netip.Addr) (net.HardwareAddr, bool)
	// LearnNeigh records ip at mac on bridge; it reports whether that
	// is news (no entry, or another MAC).
	LearnNeigh(bridge string, ip netip.Addr, mac net.HardwareAddr) bool
	// DevMAC returns the MAC address of kernel device dev.
	DevMAC(dev string) (net.HardwareAddr, bool)
}

// SetTunnelEnv gives the tunnel translation its environment; without one
// output to a tunnel port drops and nothing is decapsulated.
func (b *Backer) SetTunnelEnv(env TunnelEnv) { b.tnlEnv.Store(&tnlEnvBox{env}) }

type tnlEnvBox struct{ env TunnelEnv }

// retryTunnels reports whether a tunnel output failed for want of a route
// or neighbour since the last call: the revalidator then translates the
// installed flows again, so that those dropping for it recover once the
// route or neighbour is there (OVS revalidates on route and neighbour
// changes).
func (b *Backer) retryTunnels() bool { return b.tnlRetry.Swap(false) }

func (b *Backer) tunnelEnv() TunnelEnv {
	if box := b.tnlEnv.Load(); box != nil {
		return box.env
	}
	return nil
}

// tnlRecv is what a tunnel receives: the vport's kind and UDP port.
type tnlRecv struct {
	proto   uint8 // IP protocol: 17 (UDP) or 47 (GRE)
	dstPort uint16
}

func (c *TunnelConfig) recv() tnlRecv {
	if c.Kind == tunnel.KindGRE {
		return tnlRecv{proto: flow.IPProtoGRE}
	}
	return tnlRecv{proto: flow.IPProtoUDP, dstPort: c.DstPort}
}

// indexTunnel adds tunnel port p to idx.
func (idx *index) indexTunnel(p *port) {
	idx.tunnels[p.dpPort] = append(idx.tunnels[p.dpPort], p)
	idx.tnlVports[p.tnl.recv()] = p.dpPort
}

// tunnelWC is OVS's tnl_wc_init as the datapath flows of a packet from a
// tunnel get it, before and after a recirculation: the fields that tell
// the tunnel port apart.
func tunnelWC(k *flow.Key, m *flow.Mask) {
	m.TunID, m.TunFlags = ^uint64(0), flow.TunFlagDontFragment|flow.TunFlagCsum|flow.TunFlagKey|flow.TunFlagL3
	m.TunSrc = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	m.TunDst = m.TunSrc
	// The addresses of the tunnel's IP version (tun_dst's: a packet's
	// tun_src may be 0).
	if netip.AddrFrom16(k.TunDst).Is4In6() {
		m.TunFlags |= ofp.TunMaskSrc4 | ofp.TunMaskDst4
	} else {
		m.TunFlags |= ofp.TunMaskSrc6 | ofp.TunMaskDst6
	}
	// The outer TOS, and the inner ECN when the outer says CE
	// (tnlProcessECN reads it).
	m.TunTOS = 0xff
	if isIP(k) && k.TunTOS&ipECNMask == ipECNCE {
		m.NwTOS |= ipECNMask
	}
}

// IP ECN codepoints (RFC 3168), as OVS's lib/packets.h.
const (
	ipECNMask   = 0x03
	ipECNNotECT = 0x00
	ipECNECT0   = 0x02
	ipECNCE     = 0x03
)

func isIP(k *flow.Key) bool { return k.EthType == flow.EthTypeIPv4 || k.EthType == flow.EthTypeIPv6 }

// tnlProcessECN is OVS's tnl_process_ecn, at the start of a decapsulated
// packet's translation (RFC 6040's decapsulation): an outer CE is copied
// to an ECN-capable inner packet, and a packet whose inner header is not
// ECN-capable is dropped. It reports whether the packet goes on; a
// dropped one's flow counts it as OVS's drop_action_congestion.
func (x *xlate) tnlProcessECN() bool {
	k := x.key
	if !k.HasTunnel() || !isIP(k) || k.TunTOS&ipECNMask != ipECNCE {
		return true
	}
	x.of.wc.NwTOS |= ipECNMask
	if ecnDrops(k) {
		b := x.backer
		if x.mode == modePacket {
			warnRL(b.tnlLog, b.ecnLog, "dropping tunnel packet marked ECN CE but is not ECN capable")
		}
		if x.trace == nil {
			x.acts = append(x.acts, datapath.Count(&b.ecnDrops))
		}
		return false
	}
	k.NwTOS |= ipECNCE
	return true
}

// ecnDrops reports whether tnlProcessECN drops a packet of k: from a
// tunnel, outer CE, inner IP not ECN-capable.
func ecnDrops(k *flow.Key) bool {
	return k.HasTunnel() && isIP(k) && k.TunTOS&ipECNMask == ipECNCE && k.NwTOS&ipECNMask == ipECNNotECT
}

// CongestionDrops returns the packets dropped as tunnel packets marked CE
// whose inner packet was not ECN-capable.
func (b *Backer) CongestionDrops() uint64 {
	n, _ := b.ecnDrops.Load()
	return n
}

// tunnelIn is the tunnel port a packet decapsulated for vport k.InPort
// belongs to (OVS's tnl_port_receive): one whose key, remote and local
// address match, an exact match preferred to a "flow" one. An IP packet
// from a GRE tunnel goes only to a legacy_l3 port, an Ethernet frame
// only to another (OVS's tnl_port_receive by pt_mode); with none the
// packet is dropped by the flow installed for it, as OVS's "no OpenFlow
// tunnel port for this packet".
func (x *xlate) tunnelIn(k *flow.Key) *port {
	tunnelWC(k, x.mask)
	src, dst := netip.AddrFrom16(k.TunSrc), netip.AddrFrom16(k.TunDst)
	l3 := k.TunFlags&flow.TunFlagL3 != 0
	var best *port
	bestScore := -1
	for _, p := range x.idx.tunnels[k.InPort] {
		c := p.tnl
		if c.L3 != l3 {
			continue
		}
		score := 0
		switch {
		case c.InKeyFlow:
		case c.Kind == tunnel.KindGRE && !c.InKeyPresent && k.TunFlags&flow.TunFlagKey == 0:
			score += 4
		case c.InKey == k.TunID && (c.Kind != tunnel.KindGRE || k.TunFlags&flow.TunFlagKey != 0):
			score += 4
		default:
			continue
		}
		switch {
		case c.RemoteFlow:
		case to16(c.Remote) == src:
			score += 2
		default:
			continue
		}
		switch {
		case c.LocalFlow || !c.Local.IsValid():
		case to16(c.Local) == dst:
			score++
		default:
			continue
		}
		if score > bestScore {
			best, bestScore = p, score
		}
	}
	return best
}

func to16(a netip.Addr) netip.Addr { return netip.AddrFrom16(a.As16()) }

// terminates reports, for a packet output to a bridge's local port,
// whether it is tunnel traffic for this host that a tunnel port receives
// (OVS's terminate_native_tunnel), and that tunnel's vport.
func (x *xlate) terminates(out *port) (uint32, bool) {
	k, m := x.key, x.mask
	if out.ofport != LocalOFPort || len(x.idx.tnlVports) == 0 {
		return 0, false
	}
	env := out.br.br.backer.tunnelEnv()
	if env == nil {
		return 0, false
	}
	var dst netip.Addr
	switch k.EthType {
	case flow.EthTypeIPv4:
		m.IPv4Dst = [4]byte{0xff, 0xff, 0xff, 0xff}
		dst = netip.AddrFrom4(k.IPv4Dst)
	case flow.EthTypeIPv6:
		m.IPv6Dst = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		dst = netip.AddrFrom16(k.IPv6Dst)
	default:
		return 0, false
	}
	m.NwProto = 0xff
	m.NwFrag = flow.FragAny | flow.FragLater
	if k.NwFrag != 0 {
		return 0, false
	}
	r := tnlRecv{proto: k.NwProto}
	if k.NwProto == flow.IPProtoUDP {
		m.TpDst = 0xffff
		r.dstPort = k.TpDst
	}
	vport, ok := x.idx.tnlVports[r]
	if !ok || !env.IsLocal(dst) {
		return 0, false
	}
	return vport, true
}

// TerminateMatch is what terminates asks of a packet output to a bridge's
// local port for the vport of kind k and UDP port dstPort to decapsulate
// it, for the destinations in local (a local route's prefix, as
// ovs/route/show gives it): IP to one of them, the vport's protocol and
// UDP port, not a fragment (OVS's tnl-ports rule, but without its
// Ethernet destination and VLAN: terminates consults neither).
func TerminateMatch(k tunnel.Kind, dstPort uint16, local netip.Prefix) (flow.Key, flow.Mask) {
	r := (&TunnelConfig{Kind: k, DstPort: dstPort}).recv()
	key := flow.Key{NwProto: r.proto, TpDst: r.dstPort}
	m := flow.Mask{EthType: 0xffff, NwProto: 0xff, NwFrag: flow.FragAny | flow.FragLater}
	if r.proto == flow.IPProtoUDP {
		m.TpDst = 0xffff
	}
	a, bits := local.Addr(), local.Bits()
	if a.Is4In6() {
		a, bits = a.Unmap(), bits-96
	}
	pfx, _ := a.Prefix(bits)
	if a.Is4() {
		key.EthType, key.IPv4Dst = flow.EthTypeIPv4, pfx.Addr().As4()
		copy(m.IPv4Dst[:], net.CIDRMask(bits, 32))
	} else {
		key.EthType, key.IPv6Dst = flow.EthTypeIPv6, pfx.Addr().As16()
		copy(m.IPv6Dst[:], net.CIDRMask(bits, 128))
	}
	return key, m
}

// snoopNeigh learns the tunnel next hops from ARP and ND output to a
// bridge's local port (OVS's tnl_neigh_snoop in terminate_native_tunnel):
// an ARP reply, or a gratuitous request, maps the sender's address to its
// MAC; a neighbour advertisement with a target link-layer address maps
// the target to it (tnl_nd_snoop).
func (x *xlate) snoopNeigh(in *port) {
	k, m := x.key, x.mask
	if x.mode != modePacket && x.mode != modeRefresh {
		return
	}
	var ip netip.Addr
	var mac [6]byte
	switch {
	case k.EthType == flow.EthTypeARP:
		m.NwProto = 0xff
		m.IPv4Src = [4]byte{0xff, 0xff, 0xff, 0xff}
		m.IPv4Dst = m.IPv4Src
		m.ArpSHA = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		if (k.NwProto != 2 && (k.NwProto != 1 || k.IPv4Src != k.IPv4Dst)) || k.IPv4Src == ([4]byte{}) {
			return
		}
		ip, mac = netip.AddrFrom4(k.IPv4Src), k.ArpSHA
	case k.EthType == flow.EthTypeIPv6:
		// is_nd's reads, then the NA's.
		m.NwProto = 0xff
		if k.NwProto != flow.IPProtoICMPv6 {
			return
		}
		m.TpSrc, m.TpDst = 0xffff, 0xffff
		if !k.IsND() || k.TpSrc != flow.ICMPv6NA {
			return
		}
		m.ArpTHA = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		if k.ArpTHA == ([6]byte{}) {
			return
		}
		all := [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		m.IPv6Src, m.IPv6Dst, m.NdTarget = all, all, all
		ip, mac = netip.AddrFrom16(k.NdTarget), k.ArpTHA
	default:
		return
	}
	env := in.br.br.backer.tunnelEnv()
	if env == nil {
		return
	}
	if env.LearnNeigh(in.br.br.name, ip, net.HardwareAddr(mac[:])) {
		// Flows that dropped for want of this neighbour translate
		// again.
		x.changed = true
	}
}

// tunnelOutput sends the packet out of tunnel port out: it routes the
// remote address to an underlay bridge's port, builds the outer headers
// with its neighbour's MAC, and translates the encapsulated packet
// through that bridge, all inside one tnl_push (OVS's
// native_tunnel_output). Without a route or neighbour the packet is
// dropped; for a missing neighbour an ARP request goes out instead.
func (x *xlate) tunnelOutput(out *port) {
	c := out.tnl
	env := out.br.br.backer.tunnelEnv()
	if env == nil {
		return
	}
	k, m := x.key, x.mask
	dst := c.Remote
	if c.RemoteFlow {
		m.TunDst = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		dst = netip.AddrFrom16(k.TunDst).Unmap()
		if dst.Is4() {
			m.TunFlags |= ofp.TunMaskDst4
		} else {
			m.TunFlags |= ofp.TunMaskDst6
		}
		if !k.HasTunnel() {
			x.report(">>", "no tunnel destination in the flow, dropping")
			return
		}
	}
	b := out.br.br.backer
	dev, src, nh, ok := env.Route(dst)
	if !ok {
		x.report(">>", "native tunnel routing failed")
		b.tnlRetry.Store(true)
		return
	}
	if c.Local.IsValid() {
		src = c.Local
	}
	// The flow's source of the destination's IP version (tun_src for
	// tun_dst, tun_ipv6_src for tun_ipv6_dst, as OVS's tnl_port_send).
	if fs := netip.AddrFrom16(k.TunSrc).Unmap(); c.LocalFlow && k.TunSrc != ([16]byte{}) && fs.Is4() == dst.Is4() {
		m.TunSrc = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		src = fs
		if fs.Is4() {
			m.TunFlags |= ofp.TunMaskSrc4
		} else {
			m.TunFlags |= ofp.TunMaskSrc6
		}
	}
	egress := x.idx.byName[dev]
	if egress == nil || egress.dpPort == 0 {
		x.report(">>", "native tunnel: egress device %s is not a bridge port, dropping", dev)
		return
	}
	smac, ok := env.DevMAC(dev)
	if !ok {
		b.tnlRetry.Store(true)
		return
	}
	brName := egress.br.br.name
	dmac, ok := env.Neigh(brName, nh)
	if !ok {
		x.report(">>", "native tunnel: no neighbour entry for %s, sending ARP/ND", nh)
		if x.mode == modePacket || x.mode == modeRefresh {
			x.sendNeighRequest(egress, smac, src, nh)
		}
		b.tnlRetry.Store(true)
		return
	}
	h := tunnel.Header{Kind: c.Kind, Src: src.Unmap(), Dst: dst.Unmap(), TOS: c.TOS, TTL: c.TTL, DF: !c.NoDF,
		DstPort: c.DstPort, Csum: c.Csum}
	if c.L3 {
		// The packet behind the Ethernet header and VLAN tags, its
		// Ethernet type the GRE protocol (OVS's pop_eth and
		// packet_type(ns=1,id=dl_type)); the datapath takes the
		// header off. An 802.3 frame has no type to carry.
		m.EthType = 0xffff
		if k.EthType < 0x600 {
			x.report(">>", "native tunnel: legacy_l3 tunnel cannot carry a frame without an Ethernet type, dropping")
			return
		}
		h.Proto = k.EthType
	}
	if h.Src.Is4() != h.Dst.Is4() {
		x.report(">>", "native tunnel: source and destination of different families, dropping")
		return
	}
	copy(h.EthSrc[:], smac)
	copy(h.EthDst[:], dmac)
	if h.TTL == 0 {
		h.TTL = 64
	}
	x.tnlTOSTTL(c, &h)
	key := c.OutKey
	if c.OutKeyFlow {
		m.TunID = ^uint64(0)
		key = k.TunID
	}
	h.Key = uint32(key)
	h.KeyPresent = c.Kind != tunnel.KindGRE || c.OutKeyPresent || c.OutKeyFlow
	if c.Kind != tunnel.KindGRE {
		h.Key &= 0xffffff
	}
	if c.GBP {
		// The flow's policy, sent when either field is set (Linux's
		// vxlan_build_gbp_hdr, as OVS's kernel datapath sends it).
		m.TunGBPID, m.TunGBPFlags = 0xffff, 0xff
		h.GBPID, h.GBPFlags = k.TunGBPID, k.TunGBPFlags
	}
	if c.Kind == tunnel.KindGeneve && x.of != nil {
		// The options are the flow's tun_metadata (OVS's
		// tun_metadata_to_geneve_header): those the packet came with
		// unless actions changed them, so a decapsulated packet's are
		// matched whole.
		h.Options = ofp.TunMDToOpts(&x.of.flow)
		// The O bit is the flow's OAM flag (OVS's
		// netdev_geneve_build_header).
		h.OAM = k.TunFlags&flow.TunFlagOAM != 0
		if k.HasTunnel() {
			m.TunFlags |= flow.TunFlagOAM
		}
		if k.HasTunnel() {
			m.TunOptsLen = 0xff
			for i := range k.TunOptsLen {
				m.TunOpts[i] = 0xff
			}
		}
		if len(h.Options) > 252 {
			x.report(">>", "native tunnel: Geneve options too long, dropping")
			return
		}
	}
	x.commitSets()
	x.commitVLAN()
	nested := x.egress(egress, &h)
	x.acts = append(x.acts, datapath.TnlPushAction(datapath.TnlPush{Port: out.dpPort, OutPort: egress.dpPort, Header: h, Nested: nested,
		GSO: c.UDPGSO}))
}

// tnlTOSTTL sets the outer TOS and TTL of h as OVS's tnl_port_send: the
// configured ones, or with "inherit" the inner IP packet's DSCP or TTL;
// the ECN is always the inner packet's, CE sent as ECT(0) (RFC 6040's
// normal mode).
func (x *xlate) tnlTOSTTL(c *TunnelConfig, h *tunnel.Header) {
	k := x.key
	if !isIP(k) {
		return
	}
	wc := x.mask
	if x.of != nil {
		wc = (*flow.Mask)(&x.of.wc.Key)
	}
	if c.TTLInherit {
		wc.NwTTL = 0xff
		h.TTL = k.NwTTL
	}
	if c.TOSInherit {
		wc.NwTOS |= ^uint8(ipECNMask)
		h.TOS = k.NwTOS &^ ipECNMask
	}
	wc.NwTOS |= ipECNMask
	if ecn := k.NwTOS & ipECNMask; ecn == ipECNCE {
		h.TOS |= ipECNECT0
	} else {
		h.TOS |= ecn
	}
}

// egress translates the packet encapsulated in h as received on the
// underlay bridge port in, and returns its actions. The inner flow's
// mask is not touched: what the outer packet's translation reads depends
// on the configuration, not on the inner packet.
func (x *xlate) egress(in *port, h *tunnel.Header) datapath.Actions {
	outer := flow.Key{InPort: in.dpPort, EthDst: h.EthDst, EthSrc: h.EthSrc, NwTTL: h.TTL, NwTOS: h.TOS}
	if h.Dst.Is4() {
		outer.EthType = flow.EthTypeIPv4
		outer.IPv4Src, outer.IPv4Dst = h.Src.As4(), h.Dst.As4()
	} else {
		outer.EthType = flow.EthTypeIPv6
		outer.IPv6Src, outer.IPv6Dst = h.Src.As16(), h.Dst.As16()
	}
	if h.Kind == tunnel.KindGRE {
		outer.NwProto = flow.IPProtoGRE
	} else {
		outer.NwProto = flow.IPProtoUDP
		outer.TpDst = h.DstPort
	}
	var scratch flow.Mask
	key, mask, acts, cur, pkt, base, inner := x.key, x.mask, x.acts, x.cur, x.pkt, x.base, x.inner
	x.key, x.mask, x.acts, x.cur, x.pkt, x.base, x.inner = &outer, &scratch, nil, vlanHdr{}, vlanHdr{}, outer, nil
	if x.depth < maxDepth && x.visits < maxBridgeVisits {
		x.depth++
		x.pipeline(in)
		x.depth--
	}
	nested := x.acts
	x.key, x.mask, x.acts, x.cur, x.pkt, x.base, x.inner = key, mask, acts, cur, pkt, base, inner
	return nested
}

// sendNeighRequest sends an ARP request (IPv4) or a neighbour
// solicitation (IPv6) for ip from the underlay bridge port in (its
// address src, MAC smac), translated through in's bridge as a packet it
// sent (OVS's tnl_send_arp_request and tnl_send_nd_request).
func (x *xlate) sendNeighRequest(in *port, smac net.HardwareAddr, src, ip netip.Addr) {
	if ip.Is4() != src.Is4() {
		return
	}
	if !ip.Is4() {
		in.br.br.backer.sendFrom(in, tunnel.NeighSolicitation(smac, src, ip))
		return
	}
	f := make([]byte, 42)
	copy(f[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(f[6:12], smac)
	binary.BigEndian.PutUint16(f[12:], flow.EthTypeARP)
	a := f[14:]
	binary.BigEndian.PutUint16(a[0:], 1)
	binary.BigEndian.PutUint16(a[2:], flow.EthTypeIPv4)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:], 1)
	copy(a[8:14], smac)
	s4, d4 := src.As4(), ip.As4()
	copy(a[14:18], s4[:])
	copy(a[24:28], d4[:])
	in.br.br.backer.sendFrom(in, f)
}

// sendFrom translates frame as received on in and executes the actions,
// outside any flow.
func (b *Backer) sendFrom(in *port, frame []byte) {
	var u datapath.Upcall
	if !flow.Extract(frame, in.dpPort, &u.Key) {
		return
	}
	x := b.newXlate(b.idx.Load(), &u, modeCheck, 0)
	x.pipeline(in)
	if len(x.acts) > 0 {
		go b.dp.Execute(frame, in.dpPort, x.acts)
	}
}

// ListTunnels is `ovs-appctl ofproto/list-tunnels`: each tunnel port as
// OVS's tnl_port_format writes it, by datapath port (govs' tunnels of one
// kind and UDP port share their vport) and name.
func (b *Backer) ListTunnels() string {
	idx := b.idx.Load()
	if idx == nil {
		return ""
	}
	var ps []*port
	for _, l := range idx.tunnels {
		ps = append(ps, l...)
	}
	slices.SortFunc(ps, func(x, y *port) int {
		return cmp.Or(cmp.Compare(x.dpPort, y.dpPort), strings.Compare(x.name, y.name))
	})
	var s strings.Builder
	for _, p := range ps {
		c := p.tnl
		fmt.Fprintf(&s, "port %d: %s (%s: ", p.dpPort, p.name, c.Kind)
		// tnl_match_fmt: the addresses, the key, the packet type.
		switch {
		case !c.RemoteFlow:
			s.WriteString(tnlAddr(c.Local) + "->" + tnlAddr(c.Remote))
		case !c.LocalFlow:
			s.WriteString(tnlAddr(c.Local) + "->flow")
		default:
			s.WriteString("flow->flow")
		}
		if c.InKeyFlow {
			s.WriteString(", key=flow")
		} else {
			s.WriteString(", key=" + hexC64(c.InKey))
		}
		pt := "legacy_l2"
		if c.L3 {
			pt = "legacy_l3"
		}
		fmt.Fprintf(&s, ", %s, dp port=%d", pt, p.dpPort)
		if c.OutKey != c.InKey || c.OutKeyPresent != c.InKeyPresent || c.OutKeyFlow != c.InKeyFlow {
			switch {
			case !c.OutKeyPresent:
				s.WriteString(", out_key=none")
			case c.OutKeyFlow:
				s.WriteString(", out_key=flow")
			default:
				s.WriteString(", out_key=" + hexC64(c.OutKey))
			}
		}
		switch {
		case c.TTLInherit:
			s.WriteString(", ttl=inherit")
		case c.TTL == 0:
			s.WriteString(", ttl=64") // the default
		default:
			fmt.Fprintf(&s, ", ttl=%d", c.TTL)
		}
		switch {
		case c.TOSInherit:
			s.WriteString(", tos=inherit")
		case c.TOS != 0:
			fmt.Fprintf(&s, ", tos=%#x", c.TOS)
		}
		if c.NoDF {
			s.WriteString(", df=false")
		}
		if c.Csum {
			s.WriteString(", csum=true")
		}
		s.WriteString(")\n")
	}
	return s.String()
}

// tnlAddr is OVS's ipv6_format_mapped of a tunnel address: IPv4 dotted,
// none as "::".
func tnlAddr(a netip.Addr) string {
	if !a.IsValid() {
		return "::"
	}
	return a.Unmap().String()
}

// hexC64 is C's %#PRIx64: 0 without a prefix.
func hexC64(v uint64) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%#x", v)
}
