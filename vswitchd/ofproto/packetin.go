package ofproto

import (
	"bytes"
	"sync/atomic"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// PacketInSink receives a bridge's packet-ins; an AsyncSink given to
// SetAsync that implements it gets them.
type PacketInSink interface {
	PacketIn(pi *ofp.PacketIn)
}

// maxPinContexts bounds the distinct controller-action contexts (bridge,
// reason, table, cookie, metadata) the datapath's userspace actions
// refer to.
const maxPinContexts = 1 << 16

// pinCtx is what a packet-in reports besides the packet: everything the
// translation knew at the controller action.
type pinCtx struct {
	br           *Bridge
	reason       uint8
	explicitMiss bool
	implicitMiss bool
	maxLen, id   uint16
	table        uint8
	cookie       uint64
	meta         ofp.Flow // the metadata only: the Key is zero
	userdata     string   // the controller action's, for NXPINT_USERDATA
	// paused: the translation stopped here (controller(pause)); rest
	// is the actions left, encoded for OpenFlow 1.3, and stack the
	// push/pop stack: the continuation.
	paused      bool
	rest, stack string
}

// pausing is a translation paused at a controller action: the index of
// its (placeholder) userspace action, the packet-in context, and the
// actions left, gathered as the translation unwinds.
type pausing struct {
	at   int
	ctx  pinCtx
	rest []ofp.Action
}

// pinSinkBox holds a bridge's PacketInSink for atomic swaps.
type pinSinkBox struct{ s PacketInSink }

// setPacketInSink is SetAsync's: s gets packet-ins if it can.
func (br *Bridge) setPacketInSink(s AsyncSink) {
	var box *pinSinkBox
	if ps, ok := s.(PacketInSink); ok {
		box = &pinSinkBox{ps}
	}
	br.pinSink.Store(box)
}

// controller translates output to the controller: a userspace action
// that hands each packet, as the actions so far left it, to the bridge's
// controllers (OVS's execute_controller_action). The metadata reported
// comes from the flow, which may hold values derived from any field of
// the packet, so the datapath flow matches the packet exactly.
func (x *xlate) controller(reason uint8, maxLen, id uint16, userdata []byte, pause bool) {
	s := x.of
	c := pinCtx{br: s.in.br.br, reason: reason, maxLen: maxLen, id: id, meta: s.flow, userdata: string(userdata)}
	c.meta.Key = flow.Key{}
	c.meta.InPort = s.flow.InPort
	c.meta.TunID, c.meta.TunSrc, c.meta.TunDst, c.meta.TunFlags = s.flow.TunID, s.flow.TunSrc, s.flow.TunDst, s.flow.TunFlags
	c.meta.TunGBPID, c.meta.TunGBPFlags = s.flow.TunGBPID, s.flow.TunGBPFlags
	if s.rule == nil && s.packetOut && reason == ofp.PacketInAction {
		c.reason = ofp.PacketInPacketOut
	}
	if r := s.rule; r != nil {
		c.table, c.cookie = r.table, r.cookie
		c.explicitMiss = r.priority == 0 && r.matchesAll()
	}
	if s.missTable >= 0 {
		c.table, c.cookie, c.explicitMiss, c.implicitMiss = uint8(s.missTable), 0, false, true
	}
	if x.mode != modeTrace {
		// (A trace's Megaflow: is what the translation consulted, as
		// OVS's, which slow-paths such a flow.)
		*x.mask = flow.Exact()
	}
	if pause {
		// The context is complete once the translation unwinds
		// (finishPause); nothing after this action is translated.
		c.paused, c.stack = true, s.stack
		x.commitSets()
		x.commitVLAN()
		x.paused = &pausing{at: len(x.acts), ctx: c}
		x.acts = append(x.acts, datapath.Userspace(0))
		x.report("->", "pausing: the actions after this one run on NXT_RESUME")
		return
	}
	cookie, ok := c.br.backer.internPin(c)
	if !ok {
		x.report(">>", "too many controller contexts, dropping")
		return
	}
	x.commitSets()
	x.commitVLAN()
	x.acts = append(x.acts, datapath.Userspace(cookie))
}

// finishPause completes a paused translation: the continuation (the
// actions left) joins the packet-in context, and the placeholder
// userspace action gets its cookie; too many contexts drop the packet.
func (x *xlate) finishPause() {
	p := x.paused
	if p == nil {
		return
	}
	x.paused = nil
	c := p.ctx
	c.rest = string(ofp.AppendActions(nil, ofp.V13, p.rest))
	cookie, ok := c.br.backer.internPin(c)
	if !ok {
		x.report(">>", "too many controller contexts, dropping")
		x.acts = x.acts[:p.at]
		return
	}
	x.acts[p.at] = datapath.Userspace(cookie)
}

// pins interns controller-action contexts: the datapath's userspace
// actions carry an index into them.
type pins struct {
	byCtx map[pinCtx]uint32
	list  atomic.Pointer[[]pinCtx]
}

// internPin returns c's cookie, adding c if new; false when full.
func (b *Backer) internPin(c pinCtx) (uint32, bool) {
	b.pinMu.Lock()
	defer b.pinMu.Unlock()
	if b.pins.byCtx == nil {
		b.pins.byCtx = map[pinCtx]uint32{}
	}
	if id, ok := b.pins.byCtx[c]; ok {
		return id, true
	}
	var old []pinCtx
	if l := b.pins.list.Load(); l != nil {
		old = *l
	}
	if len(old) >= maxPinContexts {
		return 0, false
	}
	id := uint32(len(old))
	l := append(old[:len(old):len(old)], c)
	b.pins.list.Store(&l)
	b.pins.byCtx[c] = id
	return id, true
}

// Userspace implements datapath.UserspaceHandler: a packet that reached
// a controller action goes to the bridge's controllers.
func (b *Backer) Userspace(cookie uint32, p *packet.Packet) {
	if cookie&datapath.CookieSlowPath != 0 {
		b.slowPathPacket(cookie, p)
		return
	}
	l := b.pins.list.Load()
	if l == nil || int(cookie) >= len(*l) {
		return
	}
	c := &(*l)[cookie]
	box := c.br.pinSink.Load()
	if box == nil {
		return
	}
	data := bytes.Clone(p.Data())
	pi := &ofp.PacketIn{Reason: c.reason, ExplicitMiss: c.explicitMiss, ImplicitMiss: c.implicitMiss, TableID: c.table, Cookie: c.cookie,
		Metadata: c.meta, Data: data, TotalLen: len(data), MaxLen: c.maxLen, ControllerID: c.id, Userdata: []byte(c.userdata)}
	if c.paused {
		rest, err := ofp.DecodeActions(ofp.V13, []byte(c.rest))
		if err != nil {
			return // encoded by finishPause: cannot happen
		}
		pi.Cont = &ofp.Continuation{Bridge: c.br.uuid, TableID: c.table, Cookie: c.cookie, Actions: rest, Stack: []byte(c.stack)}
	}
	box.s.PacketIn(pi)
}

// SetPacketInOnMiss turns the miss rule on or off (connmgr.MissSink);
// installed datapath flows are translated again soon.
func (br *Bridge) SetPacketInOnMiss(on bool) {
	if br.missPin.Swap(on) != on {
		br.backer.dp.RequestRevalidation()
	}
}

// miss is a lookup in table id that matched nothing: with the miss rule
// on, the packet goes to the controllers (OVS's rule_dpif_lookup_from_table
// returning the miss rule, for the first lookup and goto_table, not for
// resubmit).
func (x *xlate) miss(id uint8) {
	if !x.missPacketIn(id) {
		return
	}
	x.of.missTable = int(id)
	x.controller(ofp.PacketInNoMatch, 0xffff, 0, nil, false)
	x.of.missTable = -1
}
