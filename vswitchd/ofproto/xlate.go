package ofproto

import (
	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
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

// xlate is one translation in progress.
type xlate struct {
	idx *index
	key *flow.Key
	// acts are the datapath actions so far.
	acts datapath.Actions
	// cur is the flow's VLAN at this point of the translation; pkt is the
	// VLAN the packet has after acts (what commit compares against).
	cur, pkt vlanHdr

	depth, visits int
	// invalidate: the translation changed a MAC table.
	invalidate bool
}

// translate fills u's actions and mask. It reports whether cached flows
// must be invalidated.
func (b *Backer) translate(idx *index, u *datapath.Upcall) bool {
	k := &u.Key
	u.Mask.InPort = ^uint32(0)
	in := idx.byDPPort[k.InPort]
	if in == nil {
		return false // not a port of any bridge: drop
	}
	// NORMAL consults the addresses, the tag and the type.
	u.Mask.EthSrc = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	u.Mask.EthDst = u.Mask.EthSrc
	u.Mask.EthType = 0xffff
	u.Mask.VLANTCI = 0xffff
	u.Mask.VLANTPID = 0xffff

	x := xlate{idx: idx, key: k, acts: u.Actions}
	x.cur = vlanHdr{tpid: k.VLANTPID, tci: k.VLANTCI}
	x.pkt = x.cur
	x.normal(in)
	u.Actions = x.acts
	return x.invalidate
}

// normal is the NORMAL pipeline of the bridge of in, for a packet that
// entered it on in (xlate_normal).
func (x *xlate) normal(in *port) {
	x.visits++
	br := in.br.br
	// A VLAN type without a tag is a truncated tag.
	if flow.IsVLANType(x.key.EthType) && !x.cur.present() {
		return
	}
	inVLAN := x.cur.xvlan()
	if !in.inputVIDValid(inVLAN.vid) {
		return
	}
	v := inputTranslate(in, inVLAN)
	dst, src := flow.MAC(x.key.EthDst), flow.MAC(x.key.EthSrc)
	if !in.br.forwardBPDU && isReservedMAC(dst) {
		return
	}

	ml := br.ml
	now := br.now()
	ml.mu.Lock()
	if ml.run(now) {
		x.invalidate = true
	}
	if ml.learn(src, v.vid, in.name, now) {
		x.invalidate = true
	}
	outName, known := ml.lookup(dst, v.vid)
	ml.mu.Unlock()

	if !known {
		for _, p := range in.br.ports {
			if p != in && p.includesVLAN(v.vid) {
				x.outputNormal(p, v)
			}
		}
		return
	}
	// A learned port that is gone or is the input port: drop.
	if out := in.br.byName[outName]; out != nil && out != in {
		x.outputNormal(out, v)
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
	x.output(out)
	x.cur = saved
}

// output sends the packet, with its flow VLAN, to out: to its datapath
// port, or through a patch port into the peer bridge.
func (x *xlate) output(out *port) {
	if out.patchPeer != "" {
		peer := x.idx.peer[out]
		if peer == nil || x.depth >= maxDepth || x.visits >= maxBridgeVisits {
			return
		}
		x.depth++
		x.normal(peer)
		x.depth--
		return
	}
	if out.dpPort == 0 {
		return
	}
	x.commitVLAN()
	x.acts = append(x.acts, datapath.Output(out.dpPort))
}

// commitVLAN adds the actions that make the packet's tag the flow's.
func (x *xlate) commitVLAN() {
	if x.pkt == x.cur {
		return
	}
	if x.pkt.present() {
		x.acts = append(x.acts, datapath.PopVLAN())
	}
	if x.cur.present() {
		x.acts = append(x.acts, datapath.PushVLAN(x.cur.tpid, x.cur.tci&^flow.VLANPresent))
	}
	x.pkt = x.cur
}
