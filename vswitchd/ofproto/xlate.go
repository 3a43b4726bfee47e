package ofproto

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Translation limits, as OVS's MAX_DEPTH and MAX_RESUBMITS: patch ports
// may chain bridges at most maxDepth deep, and one translation enters at
// most maxBridgeVisits bridges in all (a flood through a loop of patch
// ports fans out).
const (
	maxDepth        = 64
	maxBridgeVisits = maxDepth * maxDepth
)

// vlanHdr is the outer VLAN of a flow: TCI with flow.VLANPresent set when
// tagged (0 when not), and its TPID.
type vlanHdr struct {
	tpid, tci uint16
}

func (v vlanHdr) present() bool { return v.tci&flow.VLANPresent != 0 }

// xvlan is a VLAN during bridge processing (ofproto-dpif-xlate.c's struct
// xvlan, one level): VID and PCP (in place, bits 13-15), vid 0 meaning
// none.
type xvlan struct {
	tpid, vid, pcp uint16
}

func (v vlanHdr) xvlan() xvlan {
	if !v.present() {
		return xvlan{}
	}
	return xvlan{tpid: v.tpid, vid: v.tci & flow.VLANVIDMask, pcp: v.tci & flow.VLANPCPMask}
}

// hdr is xvlan_put: a VLAN with neither VID nor PCP is no tag.
func (x xvlan) hdr() vlanHdr {
	tci := x.vid | x.pcp
	if tci == 0 {
		return vlanHdr{}
	}
	tpid := x.tpid
	if tpid == 0 {
		tpid = flow.EthTypeVLAN
	}
	return vlanHdr{tpid: tpid, tci: tci | flow.VLANPresent}
}

// xlateMode says which side effects a translation has.
type xlateMode uint8

const (
	// modePacket translates a miss: the packet's source MAC is learned.
	modePacket xlateMode = iota
	// modeCheck translates an installed flow again, without side effects.
	modeCheck
	// modeRefresh translates an installed flow that forwarded packets
	// since the last revalidation: their source MAC is learned, except
	// that an entry that moved to another port after the flow's last
	// packet stays where it is.
	modeRefresh
	// modeTrace is ofproto/trace: no side effects, a report.
	modeTrace
)

// xlate is one translation in progress.
type xlate struct {
	idx  *index
	key  *flow.Key
	mask *flow.Mask
	mode xlateMode
	// usedAt is, in modeRefresh, the datapath clock of the flow's last
	// packet; in modePacket, the datapath clock now.
	usedAt time.Duration
	// acts are the datapath actions so far.
	acts datapath.Actions
	// packets and bytes are what the translation credits to every rule
	// and table it goes through: the missed packet, or in modeRefresh
	// what the datapath flow forwarded since the last revalidation.
	packets, bytes uint64
	// cur is the flow's VLAN at this point of the translation; pkt is the
	// VLAN the packet has after acts (what commit compares against).
	cur, pkt vlanHdr

	depth, visits int
	// changed: the translation changed a MAC table, so installed flows
	// must be revalidated.
	changed bool
	// trace collects the ofproto/trace report; nil unless tracing.
	trace *strings.Builder
	// tt, in a trace, collects its lines as OVS's tree (tracetree.go).
	tt *traceTree
	// names: the trace names ports (ofproto/trace --names).
	names bool
	// of is the OpenFlow pipeline's state in the current bridge.
	of *ofState
	// base is the packet's header fields as the actions so far leave
	// them (what commitSets compares the flow against).
	base flow.Key
	// inner are the tags below the outer one, pushed over by push_vlan
	// on a tagged packet, innermost first.
	inner []vlanHdr
	// mirrored are the mirrors of the current bridge the packet was sent
	// to (OVS's ctx->mirrors); snaplen is the length the output being
	// made for a mirror truncates to; mirrorCounters count for the
	// mirrors the packet went to, in every bridge (mirror.go).
	mirrored       uint32
	snaplen        int
	mirrorCounters []*datapath.Counter
	// backer allocates recirculation IDs; recircTrace are the
	// recirculations a trace follows.
	backer      *Backer
	recircTrace []traceRecirc
	// paused: a controller(pause) stopped the translation; freezing: a
	// select group did, for a recirculation (freeze.go).
	paused   *pausing
	freezing *freezing
	// noRecirc: the datapath does not recirculate the actions (a
	// packet-out's), so that a select group picks its bucket at once.
	noRecirc bool
	// tunMDWC, in a trace, collects the tun_metadata bits the flow
	// tables consulted (for the Megaflow line).
	tunMDWC *ofp.Flow
	// traceStart and traceFinal, in a trace, are the first bridge's
	// OpenFlow flow before and after its actions (OVS's "Final flow:").
	traceStart, traceFinal *ofp.Flow
	// traceFinalActset: the action set then held an output (OVS's
	// actset_output, which its "Final flow:" compares but never shows).
	traceFinalActset bool
	// traceFinalInner is the tag below the outer one there, if a
	// push_vlan pushed over one (OVS's flow's second VLAN header).
	traceFinalInner vlanHdr
	// traceBridge is that first bridge, for its port names.
	traceBridge *snapshot
	// traceMarkWC, in a trace, is the pkt_mark bits the bridges consulted
	// (the datapath mask holds no mark: every packet enters with 0).
	traceMarkWC uint32
	// traceDpHashWC, in a trace, is the dp_hash bits the bridges
	// consulted; inMeta the trace flow's pkt_mark and dp_hash, the first
	// bridge's packet's as it enters.
	traceDpHashWC uint32
	// traceLabelExact, in a trace, says a lookup found a rule on the
	// whole IPv6 flow label: OVS's megaflow then has all 32 bits of
	// its ipv6_label, where a set (or a lookup that missed such a rule,
	// as Debian's shows) has the label's 20, and shows a mask only for
	// the latter.
	traceLabelExact bool
	// traceActions, in ofproto/trace-packet-out, are the packet-out's
	// actions, which the first bridge runs instead of its tables (OVS's
	// xin.ofpacts); nil otherwise.
	traceActions []ofp.Action
	inMeta       flowMeta
	// pktMark is the packet's mark as the actions so far leave it (the
	// datapath's skb_mark: metadata, see datapath.SetSkbMark).
	pktMark uint32
	// skbPriority is the packet's skb_priority as the datapath actions so
	// far leave it; origSkbPriority the one it arrived with (its key's),
	// which pop_queue restores (OVS's orig_skb_priority).
	skbPriority, origSkbPriority uint32
}

// translate fills u's actions and mask, translating u.Key as received on
// its datapath port. It reports whether a MAC table changed.
func (b *Backer) translate(idx *index, u *datapath.Upcall, mode xlateMode, at time.Duration) bool {
	x := xlates.Get().(*xlate)
	defer xlates.Put(x)
	b.initXlate(x, idx, u, mode, at)
	if u.Key.RecircID != 0 {
		if u.Key.HasTunnel() {
			tunnelWC(&u.Key, &u.Mask)
		}
		x.resume(b.recircs.lookup(u.Key.RecircID))
	} else {
		in := idx.byDPPort[u.Key.InPort]
		if in == nil && u.Key.HasTunnel() {
			in = x.tunnelIn(&u.Key)
		}
		if in != nil {
			x.pipeline(in)
		}
	}
	x.finishPause()
	u.Actions = x.withMirrorCounts(x.acts)
	changed := x.changed
	*x = xlate{} // what it refers to is the caller's, or garbage
	return changed
}

// xlates recycles translate's state, which nothing refers to once it
// returns.
var xlates = sync.Pool{New: func() any { return new(xlate) }}

func (b *Backer) newXlate(idx *index, u *datapath.Upcall, mode xlateMode, at time.Duration) *xlate {
	x := new(xlate)
	b.initXlate(x, idx, u, mode, at)
	return x
}

// initXlate makes x, a zero xlate, the translation of u.
func (b *Backer) initXlate(x *xlate, idx *index, u *datapath.Upcall, mode xlateMode, at time.Duration) {
	k := &u.Key
	*x = xlate{idx: idx, key: k, mask: &u.Mask, mode: mode, usedAt: at, acts: u.Actions, backer: b,
		skbPriority: k.SkbPriority, origSkbPriority: k.SkbPriority}
	switch mode {
	case modePacket:
		x.packets = 1
		if u.Packet != nil {
			x.bytes = uint64(u.Packet.Len())
		}
	case modeRefresh:
		x.packets, x.bytes = u.Packets, u.Bytes
	}
	// What OVS considers always examined (xlate_wc_init): the input port,
	// the Ethernet type, and whether an IP packet is a fragment.
	u.Mask.InPort = ^uint32(0)
	u.Mask.EthType = 0xffff
	if k.EthType == flow.EthTypeIPv4 || k.EthType == flow.EthTypeIPv6 {
		u.Mask.NwFrag = flow.FragAny | flow.FragLater
	}
	x.cur = vlanHdr{tpid: k.VLANTPID, tci: k.VLANTCI}
	x.pkt = x.cur
	x.base = *k
}

// report adds a line to the trace: kind "->" for details, ">>" for
// warnings, ">>>>" for errors (OVS's OFT_DETAIL, OFT_WARN, OFT_ERROR).
func (x *xlate) report(kind, format string, args ...any) {
	if x.trace == nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	k := traceDetail
	switch kind {
	case ">>":
		k = traceWarn
	case ">>>>":
		k, msg = traceError, msg+" <<<<"
	}
	x.tt.add(k, msg)
}

// normal is the NORMAL pipeline of the bridge of in, for a packet that
// entered it on in (xlate_normal). The mask gets the bits each decision
// reads, as OVS's does: both addresses and the VLAN's VID and presence
// always, the rest only where a decision reads them.
func (x *xlate) normal(in *port) {
	x.visits++
	br := in.br.br
	k, m := x.key, x.mask
	m.EthSrc = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	m.EthDst = m.EthSrc
	m.VLANTCI |= flow.VLANVIDMask | flow.VLANPresent

	// A VLAN type without a tag is a truncated tag.
	if flow.IsVLANType(k.EthType) && !x.cur.present() {
		x.report(">>", "partial VLAN tag, dropping")
		return
	}
	inVLAN := x.cur.xvlan()
	if !in.inputVIDValid(inVLAN.vid) {
		if in.mode == modeAccess {
			x.report(">>>>", "dropping VLAN %d tagged packet received on port %s configured as VLAN %d access port", inVLAN.vid, in.name, in.vlan)
		} else {
			x.report(">>>>", "dropping VLAN %d packet received on port %s not configured for trunking VLAN %d", inVLAN.vid, in.name, inVLAN.vid)
		}
		x.report(">>", "disallowed VLAN VID for this input port, dropping")
		return
	}
	v := inputTranslate(in, inVLAN)
	dst, src := flow.MAC(k.EthDst), flow.MAC(k.EthSrc)
	if !in.br.forwardBPDU && isReservedMAC(dst) {
		x.report("->", "packet has reserved destination MAC, dropping")
		return
	}
	x.gratuitousARP()
	if in.bond != nil && !x.bondAdmits(in, src, dst, v.vid) {
		return
	}

	ml := br.ml
	now := br.now()
	ml.mu.Lock()
	if ml.run(now) {
		x.changed = true
	}
	// On a flood VLAN nothing is learned or looked up.
	learning := in.br.flood == nil || !in.br.flood.has(v.vid)
	if learning && (x.mode == modePacket || x.mode == modeRefresh) {
		if x.learnable(in) && ml.learn(src, v.vid, in.learnName(), now, x.usedAt, x.mode == modeRefresh) {
			x.changed = true
		}
	}
	var outName string
	var known bool
	if learning {
		outName, known = ml.lookup(dst, v.vid)
	}
	ml.mu.Unlock()

	if !known {
		x.report("->", "no learned MAC for destination, flooding")
		for _, p := range in.br.ports {
			// A legacy_l3 tunnel's bundle is not floodable (OVS's
			// bundle_update).
			if !p.noFlood && !p.mirrorOut && (p.tnl == nil || !p.tnl.L3) && p.includesVLAN(v.vid) && x.floodsTo(in, p, v.vid) {
				x.outputNormal(p, v)
			}
		}
		return
	}
	switch out, isIn := x.learnedPort(in, outName, v.vid); {
	case isIn:
		x.report("->", "learned port is input port, dropping")
	case out == nil:
		x.report(">>", "learned port is unknown, dropping")
	case out.mirrorOut:
		x.report("->", "learned port is a mirror port, dropping")
	default:
		x.report("->", "forwarding to learned port")
		x.outputNormal(out, v)
	}
}

// learnable reports whether the source MAC may be learned on in: not if
// in's bridge was reconfigured since the translation began so that in is
// gone or carries other VLANs (the reconfiguration forgot in's entries and
// must not see new ones). ml.mu must be held.
func (x *xlate) learnable(in *port) bool {
	if in.name == "" {
		// The controller's pseudo port (OVS's ofpp_none_bundle) learns nothing.
		return false
	}
	cur := in.br.br.snap.Load()
	if cur == in.br {
		return true
	}
	np := cur.byName[in.name]
	return np != nil && sameVLANConfig(np, in) && np.gate.Learns()
}

// gratuitousARP consults what OVS's is_gratuitous_arp reads: for ARP, the
// destination (already consulted), and for a broadcast the opcode, and
// for a broadcast request the addresses.
func (x *xlate) gratuitousARP() {
	k, m := x.key, x.mask
	if k.EthType != flow.EthTypeARP || !flow.MAC(k.EthDst).IsBroadcast() {
		return
	}
	m.NwProto = 0xff
	if k.NwProto == 1 {
		m.IPv4Src = [4]byte{0xff, 0xff, 0xff, 0xff}
		m.IPv4Dst = m.IPv4Src
	}
}

// inputTranslate is xvlan_input_translate: the VLAN of a packet inside the
// bridge, given the one it arrived with on in.
func inputTranslate(in *port, v xvlan) xvlan {
	switch in.mode {
	case modeAccess:
		return xvlan{tpid: v.tpid, vid: in.vlan, pcp: v.pcp}
	case modeNativeTagged, modeNativeUntagged:
		if v.vid == 0 {
			return xvlan{tpid: v.tpid, vid: in.vlan, pcp: v.pcp}
		}
	}
	return v
}

// outputTranslate is xvlan_output_translate: the VLAN a packet leaves out
// with.
func outputTranslate(out *port, v xvlan) xvlan {
	switch out.mode {
	case modeAccess:
		return xvlan{}
	case modeNativeUntagged:
		if v.vid == out.vlan {
			return xvlan{}
		}
	}
	return v
}

// outputNormal outputs to out with out's tagging of VLAN v.
func (x *xlate) outputNormal(out *port, v xvlan) {
	saved := x.cur
	x.cur = outputTranslate(out, v).hdr()
	if out.bond != nil {
		x.bondAccount(out, v.vid)
	}
	x.output(out)
	x.cur = saved
}

// output sends the packet, with its flow VLAN, to out: to its datapath
// port, or through a patch port into the peer bridge.
func (x *xlate) output(out *port) {
	if out.noFwd {
		// OFPPC_NO_FWD (OFPT_PORT_MOD), as compose_output_action__.
		x.report("->", "OFPPC_NO_FWD set, skipping output")
		return
	}
	if !x.gateSends(out) {
		return
	}
	if out.patchPeer != "" {
		peer := x.idx.peer[out]
		if peer == nil || x.depth >= maxDepth || x.visits >= maxBridgeVisits {
			return
		}
		// Mirror bits are the bridge's own.
		mirrored := x.mirrored
		x.mirrored = 0
		x.depth++
		x.pipeline(peer)
		x.depth--
		x.mirrored = mirrored
		return
	}
	if out.dpPort == 0 {
		return
	}
	if d, ok := out.dscp[x.key.SkbPriority]; ok {
		// OVS's compose_output_action__: the DSCP of the packet's queue
		// on out, for this output only; the megaflow matches the
		// DSCP bits.
		tos := x.key.NwTOS
		x.key.NwTOS = tos&^0xfc | d<<2
		if x.of != nil {
			x.of.wc.NwTOS |= 0xfc
		} else {
			x.mask.NwTOS |= 0xfc
		}
		defer func() { x.key.NwTOS = tos }()
	}
	if out.tnl != nil {
		if out.tnl.SetEgressPktMark {
			x.setEgressPktMark(out.tnl.EgressPktMark)
		}
		x.tunnelOutput(out)
		return
	}
	if out.ofport == LocalOFPort {
		x.snoopNeigh(out)
	}
	if vport, ok := x.terminates(out); ok {
		x.commitSets()
		x.commitVLAN()
		x.acts = append(x.acts, datapath.TnlPop(vport))
		return
	}
	x.commitSets()
	x.commitVLAN()
	if x.snaplen > 0 && x.snaplen < 0xffff {
		x.acts = append(x.acts, datapath.Trunc(uint32(x.snaplen)))
	}
	x.acts = append(x.acts, datapath.Output(out.dpPort))
	if out.dstMirrors != 0 {
		x.mirrorPacket(out, out.dstMirrors)
	}
}

// commitVLAN adds the actions that make the packet's tag, then its
// metadata (commitMeta), the flow's: OVS's commit_odp_actions commits
// them in that order, after the header sets (commitSets).
func (x *xlate) commitVLAN() {
	x.commitTags()
	x.commitMeta()
}

// commitTags adds the actions that make the packet's tag the flow's. A pop
// consults the whole tag (OVS's commit_vlan_action un-wildcards the popped
// header), since the packet's tag must be what is popped.
func (x *xlate) commitTags() {
	if x.pkt == x.cur {
		return
	}
	if x.pkt.present() {
		x.acts = append(x.acts, datapath.PopVLAN())
		x.mask.VLANTCI = 0xffff
		x.mask.VLANTPID = 0xffff
	}
	if x.cur.present() {
		x.acts = append(x.acts, datapath.PushVLAN(x.cur.tpid, x.cur.tci&^flow.VLANPresent))
	}
	x.pkt = x.cur
}

// setMaskOf returns the bits of field f (as its set action's value, big
// endian) that the translation examined or wrote so far: the datapath
// flow's mask and the current bridge's OpenFlow wildcards, which OVS's
// commit takes from its one set of wildcards.
func (x *xlate) setMaskOf(f datapath.SetField) []byte {
	m, w := x.mask, (*flow.Mask)(nil)
	if x.of != nil {
		w = (*flow.Mask)(&x.of.wc.Key)
	}
	or := func(a, b []byte) []byte {
		out := slices.Clone(a)
		for i := range out {
			out[i] |= b[i]
		}
		return out
	}
	pick := func(get func(*flow.Mask) []byte) []byte {
		if w == nil {
			return slices.Clone(get(m))
		}
		return or(get(m), get(w))
	}
	switch f {
	case datapath.SetEthSrc:
		return pick(func(m *flow.Mask) []byte { return m.EthSrc[:] })
	case datapath.SetEthDst:
		return pick(func(m *flow.Mask) []byte { return m.EthDst[:] })
	case datapath.SetIPv4Src, datapath.SetARPSPA:
		return pick(func(m *flow.Mask) []byte { return m.IPv4Src[:] })
	case datapath.SetIPv4Dst, datapath.SetARPTPA:
		return pick(func(m *flow.Mask) []byte { return m.IPv4Dst[:] })
	case datapath.SetIPv6Src:
		return pick(func(m *flow.Mask) []byte { return m.IPv6Src[:] })
	case datapath.SetIPv6Dst:
		return pick(func(m *flow.Mask) []byte { return m.IPv6Dst[:] })
	case datapath.SetIPv6Label:
		return pick(func(m *flow.Mask) []byte { return binary.BigEndian.AppendUint32(nil, m.IPv6Label&0xfffff) })
	case datapath.SetIPv4TTL, datapath.SetIPv6HopLimit:
		return pick(func(m *flow.Mask) []byte { return []byte{m.NwTTL} })
	case datapath.SetTpSrc:
		return pick(func(m *flow.Mask) []byte { return binary.BigEndian.AppendUint16(nil, m.TpSrc) })
	case datapath.SetTpDst:
		return pick(func(m *flow.Mask) []byte { return binary.BigEndian.AppendUint16(nil, m.TpDst) })
	case datapath.SetARPOp:
		// OVS's get_arp_key: an exact nw_proto is an exact opcode.
		return pick(func(m *flow.Mask) []byte {
			if m.NwProto == 0xff {
				return []byte{0xff, 0xff}
			}
			return []byte{0, m.NwProto}
		})
	case datapath.SetARPSHA:
		return pick(func(m *flow.Mask) []byte { return m.ArpSHA[:] })
	case datapath.SetARPTHA:
		return pick(func(m *flow.Mask) []byte { return m.ArpTHA[:] })
	}
	return nil
}

// exactField makes the datapath flow match the whole of the field a
// whole-value set writes: it writes the packet's other bits too.
func (x *xlate) exactField(f datapath.SetField) {
	m := x.mask
	ones := func(b []byte) {
		for i := range b {
			b[i] = 0xff
		}
	}
	switch f {
	case datapath.SetEthSrc:
		ones(m.EthSrc[:])
	case datapath.SetEthDst:
		ones(m.EthDst[:])
	case datapath.SetIPv4Src, datapath.SetARPSPA:
		ones(m.IPv4Src[:])
	case datapath.SetIPv4Dst, datapath.SetARPTPA:
		ones(m.IPv4Dst[:])
	case datapath.SetIPv6Src:
		ones(m.IPv6Src[:])
	case datapath.SetIPv6Dst:
		ones(m.IPv6Dst[:])
	case datapath.SetNDTarget:
		ones(m.NdTarget[:])
	case datapath.SetIPv6Label:
		m.IPv6Label = 0xfffff
	case datapath.SetARPSHA, datapath.SetNDSLL:
		ones(m.ArpSHA[:])
	case datapath.SetARPTHA, datapath.SetNDTLL:
		ones(m.ArpTHA[:])
	case datapath.SetIPv4TTL, datapath.SetIPv6HopLimit:
		m.NwTTL = 0xff
	case datapath.SetTpSrc, datapath.SetSCTPSrc:
		m.TpSrc = 0xffff
	case datapath.SetTpDst, datapath.SetSCTPDst:
		m.TpDst = 0xffff
	case datapath.SetICMPType, datapath.SetICMPCode, datapath.SetICMPv6Type, datapath.SetICMPv6Code:
		// OVS sets ICMP's header whole, type and code (no masked set).
		m.TpSrc, m.TpDst = 0xffff, 0xffff
	case datapath.SetNDReserved:
		m.NdReserved = ^uint32(0)
	}
}

// commitSets adds the set actions that make the packet's header fields
// the flow's (OVS's commit_odp_actions for Ethernet, IPv4/IPv6 and
// TCP/UDP). A field's set writes the bits examined or written so far
// (set_masked, as OVS's commit on a datapath with masked sets), or the
// whole field, which the datapath flow then matches whole, when they are
// all of it or the field cannot be masked.
func (x *xlate) commitSets() {
	k, b := x.key, &x.base
	emit := func(a datapath.Action, f datapath.SetField, val []byte) {
		if datapath.Maskable(f) {
			m := x.setMaskOf(f)
			full, empty := true, true
			for i := range m {
				full = full && m[i] == 0xff
				empty = empty && m[i] == 0
			}
			if f == datapath.SetIPv6Label {
				full = binary.BigEndian.Uint32(m) == 0xfffff // 20 bits
			}
			if !full && !empty {
				if a.Kind == 0 {
					a = datapath.SetMasked(f, val, m)
				} else {
					a = datapath.TpSetMasked(f, a.Val[2], binary.BigEndian.Uint16(a.Val[:]), binary.BigEndian.Uint16(m))
				}
				x.acts = append(x.acts, a)
				return
			}
		}
		if a.Kind == 0 {
			a = datapath.Set(f, val)
		}
		x.acts = append(x.acts, a)
		x.exactField(f)
	}
	set := func(changed bool, f datapath.SetField, val []byte) {
		if changed {
			emit(datapath.Action{}, f, val)
		}
	}
	set(k.EthSrc != b.EthSrc, datapath.SetEthSrc, k.EthSrc[:])
	set(k.EthDst != b.EthDst, datapath.SetEthDst, k.EthDst[:])
	ip4 := b.EthType == flow.EthTypeIPv4
	ip6 := b.EthType == flow.EthTypeIPv6
	if k.NwProto == 0 && (ip4 || ip6 || b.EthType == flow.EthTypeARP || b.EthType == flow.EthTypeRARP) &&
		(k.IPv4Src != b.IPv4Src || k.IPv4Dst != b.IPv4Dst || k.IPv6Src != b.IPv6Src || k.IPv6Dst != b.IPv6Dst ||
			k.IPv6Label != b.IPv6Label || k.NwTTL != b.NwTTL || k.NwTOS != b.NwTOS || k.ArpSHA != b.ArpSHA || k.ArpTHA != b.ArpTHA ||
			b.NwProto != 0) {
		// OVS's commit_set_nw_action: a flow without an IP protocol
		// (or ARP opcode) has no L3 header to set; the datapath flow
		// matches that it has none (OVS leaves that out for OXM's
		// ip_dscp alone, whose megaflow then skips the set for a later
		// packet with an IP protocol too; govs does not).
		x.mask.NwProto = 0xff
		ip4, ip6 = false, false
		b = &flow.Key{}
		*b = x.base
		b.EthType = 0 // no ARP set either
	}
	if ip4 {
		set(k.IPv4Src != b.IPv4Src, datapath.SetIPv4Src, k.IPv4Src[:])
		set(k.IPv4Dst != b.IPv4Dst, datapath.SetIPv4Dst, k.IPv4Dst[:])
	}
	if ip6 {
		set(k.IPv6Src != b.IPv6Src, datapath.SetIPv6Src, k.IPv6Src[:])
		set(k.IPv6Dst != b.IPv6Dst, datapath.SetIPv6Dst, k.IPv6Dst[:])
		set(k.IPv6Label != b.IPv6Label, datapath.SetIPv6Label, binary.BigEndian.AppendUint32(nil, k.IPv6Label))
	}
	if b.EthType == flow.EthTypeARP || b.EthType == flow.EthTypeRARP {
		// OVS's commit_set_arp_action.
		set(k.NwProto != b.NwProto, datapath.SetARPOp, []byte{0, k.NwProto})
		set(k.ArpSHA != b.ArpSHA, datapath.SetARPSHA, k.ArpSHA[:])
		set(k.IPv4Src != b.IPv4Src, datapath.SetARPSPA, k.IPv4Src[:])
		set(k.ArpTHA != b.ArpTHA, datapath.SetARPTHA, k.ArpTHA[:])
		set(k.IPv4Dst != b.IPv4Dst, datapath.SetARPTPA, k.IPv4Dst[:])
	}
	if (ip4 || ip6) && k.NwTTL != b.NwTTL {
		f := datapath.SetIPv4TTL
		if ip6 {
			f = datapath.SetIPv6HopLimit
		}
		set(true, f, []byte{k.NwTTL})
	}
	if (ip4 || ip6) && (k.TpSrc != b.TpSrc || k.TpDst != b.TpDst) {
		// Which header the ports are in depends on the protocol.
		x.mask.NwProto = 0xff
		x.mask.NwFrag |= flow.FragLater
		switch {
		case b.NwFrag&flow.FragLater != 0:
		case b.NwProto == flow.IPProtoTCP || b.NwProto == flow.IPProtoUDP:
			if k.TpSrc != b.TpSrc {
				emit(datapath.TpSet(datapath.SetTpSrc, b.NwProto, k.TpSrc), datapath.SetTpSrc, nil)
			}
			if k.TpDst != b.TpDst {
				emit(datapath.TpSet(datapath.SetTpDst, b.NwProto, k.TpDst), datapath.SetTpDst, nil)
			}
		case b.NwProto == flow.IPProtoSCTP:
			set(k.TpSrc != b.TpSrc, datapath.SetSCTPSrc, binary.BigEndian.AppendUint16(nil, k.TpSrc))
			set(k.TpDst != b.TpDst, datapath.SetSCTPDst, binary.BigEndian.AppendUint16(nil, k.TpDst))
		case b.NwProto == flow.IPProtoICMP && ip4:
			set(k.TpSrc != b.TpSrc, datapath.SetICMPType, []byte{uint8(k.TpSrc)})
			set(k.TpDst != b.TpDst, datapath.SetICMPCode, []byte{uint8(k.TpDst)})
		case b.NwProto == flow.IPProtoICMPv6 && ip6:
			set(k.TpSrc != b.TpSrc, datapath.SetICMPv6Type, []byte{uint8(k.TpSrc)})
			set(k.TpDst != b.TpDst, datapath.SetICMPv6Code, []byte{uint8(k.TpDst)})
		}
	}
	if ip6 && b.IsND() && (k.NdReserved != b.NdReserved || k.NdOptionsType != b.NdOptionsType ||
		k.NdTarget != b.NdTarget || k.ArpSHA != b.ArpSHA || k.ArpTHA != b.ArpTHA) {
		// OVS's ND and then ND extensions set actions: the addresses
		// before the options type, so that a solicitation's source option
		// given a new address (nd_sll) and made a target one answers as
		// an advertisement. Whether the packet is an NS or NA decides.
		x.mask.NwProto, x.mask.TpSrc, x.mask.TpDst = 0xff, 0xffff, 0xffff
		x.mask.NwFrag |= flow.FragLater
		set(k.NdTarget != b.NdTarget, datapath.SetNDTarget, k.NdTarget[:])
		set(k.ArpSHA != b.ArpSHA, datapath.SetNDSLL, k.ArpSHA[:])
		set(k.ArpTHA != b.ArpTHA, datapath.SetNDTLL, k.ArpTHA[:])
		set(k.NdReserved != b.NdReserved, datapath.SetNDReserved, binary.BigEndian.AppendUint32(nil, k.NdReserved))
		set(k.NdOptionsType != b.NdOptionsType, datapath.SetNDOptionsType, []byte{k.NdOptionsType})
	}
	x.commitMore()
	fields := *k
	fields.VLANTCI, fields.VLANTPID, fields.InPort = b.VLANTCI, b.VLANTPID, b.InPort
	x.base = fields
}
