package ofproto

import (
	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Reserved OpenFlow ports a packet-out may name besides LOCAL and
// CONTROLLER: TABLE (output: run the tables) and NONE (in_port: none).
const (
	portTable = 0xfffffff9
	portNone  = 0xffffffff
)

// PacketOut executes an OFPT_PACKET_OUT as OVS's handle_packet_out: the
// actions are translated for the frame as received on the in_port (a
// bridge port, LOCAL, CONTROLLER or NONE; output:TABLE runs the tables)
// and the datapath executes the result once. Buffered packets do not
// exist (OFPBRC_BUFFER_UNKNOWN).
func (br *Bridge) PacketOut(po *ofp.PacketOut) *ofp.Error {
	p, err := br.preparePacketOut(po)
	if err != nil {
		return err
	}
	return p.execute()
}

// Resume executes an NXT_RESUME as OVS's nxt_resume: the packet, as the
// controller sent it back, goes on from the actions after the
// controller(pause) that sent it up, with the registers, metadata and
// stack it had there. A continuation not made by this bridge in this
// run is stale (NXR_STALE).
func (br *Bridge) Resume(r *ofp.Resume) *ofp.Error {
	const name = "NXT_RESUME"
	c := r.Continuation
	if c == nil || c.Bridge != br.uuid {
		return &ofp.Error{Errno: ofp.NXRStale, Name: name, Detail: "continuation not from this bridge"}
	}
	if err := r.Metadata.ResolveTunMD(br.tlv.Load()); err != nil {
		err.Name = name
		return err
	}
	p, err := br.preparePacketOut(&ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: r.Metadata.Flow.InPort, Actions: c.Actions, Data: r.Data})
	if err != nil {
		err.Name = name
		return err
	}
	p.resume = r
	return p.execute()
}

// pendingPacketOut is a checked packet-out, ready to execute.
type pendingPacketOut struct {
	br   *Bridge
	po   *ofp.PacketOut
	acts []ofp.Action
	in   *port
	key  flow.Key
	// resume: an NXT_RESUME's metadata and continuation to restore.
	resume *ofp.Resume
}

const packetOutName = "OFPT_PACKET_OUT"

// preparePacketOut checks po and resolves its input port: what OVS's
// ofproto_packet_out_init and _start check before anything executes.
func (br *Bridge) preparePacketOut(po *ofp.PacketOut) (*pendingPacketOut, *ofp.Error) {
	const name = packetOutName
	if po.BufferID != ofp.NoBuffer {
		return nil, &ofp.Error{Errno: ofp.BufferUnknown, Name: name, Detail: "no buffered packets"}
	}
	no := po.InPort
	if no >= ofp.PortMax && no != ofp.PortLocal && no != ofp.PortController && no != portNone {
		return nil, &ofp.Error{Errno: ofp.BadPort, Name: name, Detail: "in_port"}
	}
	acts := make([]ofp.Action, len(po.Actions))
	for i, a := range po.Actions {
		if a.Type == ofp.ActUnsupported && a.Name == "output:TABLE" {
			a = ofp.Action{Type: ofp.ActOutput, Port: portTable}
		}
		acts[i] = a
	}
	if err := br.resolveTunMD(nil, acts); err != nil {
		return nil, err
	}
	s := br.snap.Load()
	var in *port
	switch {
	case no == ofp.PortLocal:
		in = s.byOFPort[LocalOFPort]
	case no < ofp.PortMax:
		in = s.byOFPort[int(no)]
	}
	if in == nil {
		in = &port{br: s, ofport: int(no)}
		if no == ofp.PortLocal {
			in.ofport = LocalOFPort
		}
	}
	var k flow.Key
	flow.Extract(po.Data, in.dpPort, &k)
	m := ofp.Match{Flow: ofp.Flow{Key: k}, Mask: ofp.Flow{Key: flow.Key(flow.Exact())}}
	if err := checkActions(acts, &m, 0); err != nil {
		err.Name = name
		return nil, err
	}
	if err := checkConsistency(po.Version, acts, &k); err != nil {
		err.Name = name
		return nil, err
	}
	if err := br.checkMeters(acts); err != nil {
		err.Name = name
		return nil, err
	}
	return &pendingPacketOut{br: br, po: po, acts: acts, in: in, key: k}, nil
}

// execute translates the packet-out against the tables as they are now
// and has the datapath execute it once.
func (p *pendingPacketOut) execute() *ofp.Error {
	po, acts, in, k := p.po, p.acts, p.in, p.key
	b := p.br.backer
	u := datapath.Upcall{Key: k}
	x := b.newXlate(b.idx.Load(), &u, modePacket, b.dp.Now())
	x.bytes = uint64(len(po.Data))
	// The datapath runs a packet-out's actions without recirculating.
	x.noRecirc = true
	x.of = &ofState{in: in, packetOut: true, missTable: -1}
	x.of.flow.Key = k
	x.of.flow.InPort = ofPortNo(in)
	x.of.flow.VLANTCI, x.of.flow.VLANTPID = x.cur.tci, x.cur.tpid
	x.key = &x.of.flow.Key
	// tun_metadata is read and written through the bridge's option map
	// (set_field, move, learn), as in a packet's translation.
	x.of.flow.TunTab = p.br.tlv.Load()
	x.of.wc.TunTab = x.of.flow.TunTab
	if r := p.resume; r != nil {
		// The pipeline metadata as the packet-in reported it (and the
		// controller may have changed), as OVS's xlate_resume.
		f, md := &x.of.flow, &r.Metadata.Flow
		f.TunID, f.Metadata, f.Regs, f.PktMark = md.TunID, md.Metadata, md.Regs, md.PktMark
		f.CtState, f.CtZone, f.CtMark, f.CtLabel = md.CtState, md.CtZone, md.CtMark, md.CtLabel
		f.TunSrc, f.TunDst = md.TunSrc, md.TunDst
		f.TunGBPID, f.TunGBPFlags = md.TunGBPID, md.TunGBPFlags
		f.TunFlags = f.TunFlags&^flow.TunFlagOAM | md.TunFlags&flow.TunFlagOAM
		f.TunMD, f.TunMDPresent = md.TunMD, md.TunMDPresent
		x.of.packetOut = false
		x.of.stack = string(r.Continuation.Stack)
	} else if in.srcMirrors != 0 {
		x.mirrorPacket(in, in.srcMirrors)
	}
	x.ofActions(acts, 0)
	x.executeActionSet(x.of.lastTable)
	x.finishPause()
	if x.changed {
		b.dp.RequestRevalidation()
	}
	if err := b.dp.Execute(po.Data, in.dpPort, x.withMirrorCounts(x.acts)); err != nil {
		return &ofp.Error{Errno: ofp.BadLen, Name: packetOutName, Detail: err.Error()}
	}
	return nil
}
