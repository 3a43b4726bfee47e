package ofproto

import (
	"fmt"
	"strings"
	"sync"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
	"github.com/govs/govs/vswitchd/ofproto/ofp/ofptext"
)

// OpenFlow translation limits, as OVS's: resubmits to the same or an
// earlier table nest at most maxResubmitDepth deep, and one translation
// does at most maxResubmits table lookups in all.
const (
	maxResubmitDepth = 64
	maxResubmits     = 4096
)

// ofState is the OpenFlow side of a translation: the flow as the actions
// so far changed it (OpenFlow port numbers in InPort) and the bits of it
// the lookups consulted.
type ofState struct {
	flow ofp.Flow
	wc   ofp.Flow
	in   *port
	// resubmits counts lookups; depth nests resubmits to the same or an
	// earlier table; exit is set by the exit action.
	resubmits, depth int
	exit             bool
	// endList ends the action list being translated, not the
	// translation (dec_ttl's exception, as OVS's do_xlate_actions
	// returns).
	endList bool
	// rule is the rule whose actions run (nil before the first lookup).
	rule *rule
	// packetOut: the actions are a packet-out's.
	packetOut bool
	// resubmitting: the next lookup is a resubmit's, which never takes
	// the miss rule. missTable is the table whose miss the controller
	// action being translated reports, or -1.
	resubmitting bool
	missTable    int
	// ctOrig: the resubmit's lookup is a resubmit(ct)'s, which sees
	// the connection's original tuple in place of the packet's
	// (swapCTOrig).
	ctOrig bool
	// groupDepth nests group buckets.
	groupDepth int
	// ecnCheck: the first lookup is still to come, after which a
	// tunnel packet's ECN is processed (tnlProcessECN).
	ecnCheck bool
	// stack is what push actions pushed and pops have not popped yet,
	// 16 bytes an entry, the top last (a string: a clone's copy of the
	// state keeps the stack it started with).
	stack string
	// actset is the action set, as written (actionset.go); lastTable
	// the table of the last rule whose actions ran.
	actset []ofp.Action
	// actsetOutput says the action set holds an output and no group
	// (OVS's flow.actset_output is not OFPP_UNSET: its trace then
	// shows a "Final flow:" even if nothing else changed);
	// actsetGroup that a group was written.
	actsetOutput, actsetGroup bool
	lastTable                 uint8
	// inActionSet: the action set's actions run.
	inActionSet bool
}

// ofStates recycles the state of pipeline passes: two kilobyte Flows
// that each pass of each translation would allocate and zero, and that
// stay in the cache when reused.
var ofStates = sync.Pool{New: func() any { return new(ofState) }}

// getOfState returns a zero ofState.
func getOfState() *ofState {
	s := ofStates.Get().(*ofState)
	*s = ofState{}
	return s
}

// putOfState recycles s, a pass's state that nothing refers to anymore
// (a pass's callees copy what they keep of it).
func putOfState(s *ofState) {
	s.in, s.rule, s.actset, s.flow.TunTab, s.wc.TunTab = nil, nil, nil, nil, nil
	ofStates.Put(s)
}

// ofPortNo is the OpenFlow number of p as a match or output sees it.
func ofPortNo(p *port) uint32 {
	if p.ofport == LocalOFPort {
		return ofp.PortLocal
	}
	return uint32(p.ofport)
}

// pipeline runs the packet through the OpenFlow tables of in's bridge,
// from table 0, as received on in.
func (x *xlate) pipeline(in *port) {
	x.visits++
	if x.slowPath(in) || x.spanningTree(in) {
		return
	}
	if in.mirrorOut {
		x.report(">>>>", "dropping packet received on port %s, which is reserved exclusively for mirroring", in.name)
		return
	}
	if in.noRecv {
		// OFPPC_NO_RECV (OFPT_PORT_MOD): the port's input is dropped
		// before any table (OVS's may_receive).
		x.report(">>", "OFPPC_NO_RECV set, dropping")
		return
	}
	saved := x.of
	x.of = getOfState()
	defer putOfState(x.of)
	x.of.in, x.of.missTable = in, -1
	x.of.flow.Key = *x.key
	if saved != nil {
		// Through a patch port the peer bridge sees no conntrack state
		// (OVS's patch_port_output), and the packet's mark.
		clearCT(&x.of.flow)
		x.of.flow.PktMark = saved.flow.PktMark
	} else {
		x.of.flow.PktMark, x.of.flow.DpHash = x.inMeta.pktMark, x.inMeta.dpHash
		// A trace's flow may start with registers and metadata.
		x.of.flow.Regs, x.of.flow.Metadata = x.inMeta.regs, x.inMeta.metadata
	}
	x.of.flow.InPort = ofPortNo(in)
	x.of.flow.VLANTCI, x.of.flow.VLANTPID = x.cur.tci, x.cur.tpid
	orig := x.key
	x.key = &x.of.flow.Key
	if x.trace != nil {
		// A patch port's peer bridge is under the output (OVS's
		// patch_port_output), the rest of its trace under its title.
		restore := x.tt.open(traceBridge, fmt.Sprintf("bridge(\"%s\")", in.br.br.name))
		defer func() { x.tt.cur = restore }()
	}
	if !x.tunMetadataIn(in) {
		x.mergeWC()
		x.key = orig
		x.of = saved
		return
	}
	if !x.gateReceives(in) {
		x.mergeWC()
		x.key = orig
		x.of = saved
		return
	}
	if x.trace != nil && saved == nil && x.traceStart == nil {
		start := x.of.flow // with its tun_metadata, as it enters table 0
		x.traceStart, x.traceBridge = &start, x.of.in.br
	}
	// A tunnel packet's ECN is processed once, after the first lookup
	// (OVS's xlate_actions looks the rule up, then calls
	// tnl_process_ecn).
	x.of.ecnCheck = saved == nil
	mark := x.markGate()
	// A packet the ECN check drops is not mirrored (OVS mirrors only
	// what it goes on to translate).
	if in.srcMirrors != 0 && !(x.of.ecnCheck && ecnDrops(x.key)) {
		x.mirrorPacket(in, in.srcMirrors)
	}
	if saved == nil && x.traceActions != nil {
		// A traced packet-out: its actions where the first lookup would
		// be (OVS's xlate_actions with xin.ofpacts), no fail-open rule.
		x.of.packetOut = true
		x.of.ecnCheck = false
		if !x.tnlProcessECN() {
			x.mergeWC()
			x.key = orig
			x.of = saved
			return
		}
		x.ofActions(x.traceActions, 0)
		x.executeActionSet(x.of.lastTable)
		x.finishFreeze()
	} else if in.br.br.failOpen.Load() {
		// OVS's fail-open rule: priority 0xf0f0f0, above every flow.
		x.report("->", "fail-open: NORMAL")
		x.of.ecnCheck = false
		if saved == nil && !x.tnlProcessECN() {
			x.mergeWC()
			x.key = orig
			x.of = saved
			return
		}
		x.normal(in)
	} else {
		x.table(0)
		x.executeActionSet(x.of.lastTable)
		x.finishFreeze()
	}
	x.cancelGate(in, mark)
	if x.trace != nil && saved == nil && x.traceFinal == nil {
		final := x.of.flow
		x.traceFinal = &final
		x.traceFinalActset = x.of.actsetOutput
		if n := len(x.inner); n > 0 {
			x.traceFinalInner = x.inner[n-1]
		}
	}
	if x.trace != nil {
		x.traceMarkWC |= x.of.wc.PktMark
		x.traceDpHashWC |= x.of.wc.DpHash
	}
	x.mergeWC()
	x.key = orig
	x.of = saved
}

// legacyApplies reports whether OpenFlow 1.0's mod_* of field fd
// changes the packet k, as OVS's do_xlate_actions: mod_nw_src and
// mod_nw_dst an IPv4 one, mod_nw_tos any IP one, mod_tp_* any IP one
// but a later fragment. Others pass unchanged (the action needs no
// prerequisite in a rule).
func legacyApplies(fd *ofp.Field, k *ofp.Flow) bool {
	switch fd.Name {
	case "ip_src", "ip_dst":
		return k.EthType == flow.EthTypeIPv4
	case "nw_tos", "ip_dscp":
		return isIP(&k.Key)
	case "tcp_src", "tcp_dst":
		return isIP(&k.Key) && k.NwFrag&flow.FragLater == 0
	}
	return true
}

// mergeWC adds the consulted bits of the OpenFlow flow to the datapath
// mask: the key's fields are the packet's, its ct_* fields included
// (registers and metadata start at zero in every translation and need no
// bits).
func (x *xlate) mergeWC() {
	wc := x.of.wc.Key
	wc.InPort = 0 // an OpenFlow port number; the datapath port is always matched
	x.mask.Or((*flow.Mask)(&wc))
	if t := x.tunMDWC; t != nil {
		t.TunMDPresent |= x.of.wc.TunMDPresent
		for i, b := range x.of.wc.TunMD {
			t.TunMD[i] |= b
		}
	}
	if x.of.wc.TunMDPresent != 0 || x.of.wc.TunMD != ([ofp.TLVOptionSpace]byte{}) {
		// The tun_metadata bits consulted, on the packet's options:
		// their length too, so that a packet with other options (or
		// none) does not match.
		x.mask.TunOptsLen = 0xff
		k := x.key
		ofp.TunMDOptsMask(&x.of.wc, x.of.flow.TunTab, k.Options(), x.mask.TunOpts[:k.TunOptsLen])
	}
}

// tunMetadataIn gives the OpenFlow flow the tun_metadata fields of the
// packet's Geneve options through in's bridge's option map, as OVS's
// xlate_actions does (tun_metadata_from_geneve_udpif): a mapped option of
// another length, or a critical one the map does not have, drops the
// packet. It reports whether the packet goes on.
func (x *xlate) tunMetadataIn(in *port) bool {
	f := &x.of.flow
	f.TunTab = in.br.br.tlv.Load()
	// The mask's tun_metadata bits are marked through the map too.
	x.of.wc.TunTab = f.TunTab
	if f.TunOptsLen == 0 {
		return true
	}
	opts := f.Options()
	// Every option's header is read.
	x.mask.TunOptsLen = 0xff
	ofp.TunMDOptsMask(nil, f.TunTab, opts, x.mask.TunOpts[:len(opts)])
	if err := ofp.TunMDFromOpts(f, f.TunTab, opts); err != nil {
		x.report(">>>>", "Invalid Geneve tunnel metadata")
		return false
	}
	return true
}

// lookup finds the highest-priority rule of table id matching the flow,
// adding to wc the masks of the subtables it consulted (table.lookup);
// ok is false for a fragment that the fragment handling mode drops.
func (x *xlate) lookup(id uint8) (r *rule, ok bool) {
	if isFragment(&x.of.flow) {
		return x.fragLookup(id)
	}
	return x.lookupTable(id), true
}

// lookupTable is lookup as the flow stands.
func (x *xlate) lookupTable(id uint8) *rule {
	t, probes := x.of.in.br.br.tables.Load().probes(int(id))
	r := t.searchIn(probes, &x.of.flow, &x.of.wc, true)
	if x.trace != nil && r != nil {
		x.traceLabel(r)
	}
	return r
}

// traceLabel notes for a trace whether r matches the IPv6 flow label
// exactly. Apart from lookup, whose stack frame, one per nested resubmit,
// would otherwise hold r's Match (kilobytes).
//
//go:noinline
func (x *xlate) traceLabel(r *rule) {
	if m := r.match(); m.Mask.IPv6Label&0xfffff == 0xfffff {
		x.traceLabelExact = true
	}
}

// table looks the flow up in table id and executes the matching rule's
// actions (xlate_table_action).
func (x *xlate) table(id uint8) {
	honorMiss, ctOrig := !x.of.resubmitting, x.of.ctOrig
	x.of.resubmitting, x.of.ctOrig = false, false
	// In a trace, a table's lines go under it, a goto_table's table
	// under the table that went to it. When the walk ends, a resubmit's
	// lines are done (its table sits among the actions of the rule that
	// resubmitted); after the bridge's first lookup, what follows (the
	// action set) goes under its first table: OVS's xlate_table_action
	// and xlate_actions.
	var first *traceNode
	if x.trace != nil {
		resubmit := !honorMiss
		defer func(cur *[]*traceNode) {
			if resubmit {
				x.tt.cur = cur
			} else if first != nil {
				x.tt.cur = &first.subs
			}
		}(x.tt.cur)
	}
	// A resubmit that ends a rule's actions (OVN's next;) goes on in this
	// loop rather than nesting a table, ofActions, ofAction and resubmit
	// frame per table: a translation through OVN's pipeline otherwise
	// nests some forty deep, and a first packet writes each level's
	// stack lines cold. What the resubmits would restore as they return
	// (in_port, the rule, the depth) is restored when the loop ends, as
	// no action runs between their returns. Not in a trace, whose lines
	// nest as the resubmits do.
	var tail resubmitTail
	for {
		if x.of.resubmits >= maxResubmits {
			x.report(">>>>", "over %d resubmit actions on bridge %s while processing %s", maxResubmits, x.of.in.br.br.name, "the packet")
			x.of.exit = true
			break
		}
		x.of.resubmits++
		var r *rule
		ok := true
		if ctOrig {
			ctOrig = false // the first lookup only, not a goto_table's
			x.swapCTOrig()
			r, ok = x.lookup(id)
			x.swapCTOrig()
		} else {
			r, ok = x.lookup(id)
		}
		if r == nil && ok && honorMiss {
			id, r, ok = x.missContinue(id)
		}
		if !ok {
			// OVS's drop_frags_rule: a match with no actions.
			if x.trace != nil {
				x.traceFragDrop(id, &first)
			}
			if x.packets > 0 {
				x.of.in.br.br.tableStats[id].matched.Add(x.packets)
			}
			break
		}
		if x.trace != nil {
			x.traceTable(r, id, honorMiss, &first)
		}
		if x.packets > 0 {
			// OVS's table stats: every lookup, and those that matched.
			ts := &x.of.in.br.br.tableStats[id]
			ts.lookups.Add(x.packets)
			if r != nil {
				ts.matched.Add(x.packets)
			}
		}
		if x.of.ecnCheck {
			x.of.ecnCheck = false
			if !x.tnlProcessECN() {
				x.of.exit = true
				break
			}
		}
		if r == nil {
			if honorMiss {
				x.miss(id)
			}
			break
		}
		honorMiss = true // a goto_table's lookup
		if x.mode == modePacket || x.mode == modeRefresh {
			r.stats.used.Store(int64(x.of.in.br.br.clock()))
			if x.packets > 0 {
				r.stats.packets.Add(x.packets)
				r.stats.bytes.Add(x.bytes)
			}
		}
		x.of.rule, x.of.lastTable = r, id
		acts := r.actions()
		next, how := x.ofActionList(acts, id, x.trace == nil)
		if how == listEnd || x.of.exit {
			break
		}
		if how == listResubmit {
			var ok bool
			if next, ok = x.tailResubmit(&acts[len(acts)-1], id, &tail); !ok {
				break
			}
			honorMiss = false // a resubmit's lookup
		}
		id = next
	}
	if tail.on {
		x.of.flow.InPort, x.of.rule, x.of.depth = tail.in, tail.rule, x.of.depth-tail.depth
	}
}

// resubmitTail is what the resubmits a table walk made in its loop
// (table) would restore as they return: the first one's in_port and
// rule, and how many counted towards the depth.
type resubmitTail struct {
	on    bool
	in    uint32
	rule  *rule
	depth int
}

// tailResubmit is resubmit for the one that ends the actions of a rule
// of table id, which the table walk goes on with in its loop (t notes
// what to restore when it ends): the table to look up, false if it is
// over the depth limit.
func (x *xlate) tailResubmit(a *ofp.Action, id uint8, t *resubmitTail) (uint8, bool) {
	if !t.on {
		t.on, t.in, t.rule = true, x.of.flow.InPort, x.of.rule
	}
	table, deeper, ok := x.resubmitEnter(a, id)
	if deeper {
		t.depth++
	}
	return table, ok
}

// traceTable opens a trace's node for the lookup in table id that found
// r (nil: none), first being the walk's first such node. Apart from
// table, to keep its stack frame, one per nested resubmit, small.
//
//go:noinline
func (x *xlate) traceTable(r *rule, id uint8, honorMiss bool, first **traceNode) {
	var title string
	if r == nil && honorMiss && x.missPacketIn(id) {
		// OVS's xlate_report_table for its miss rule.
		title = fmt.Sprintf("%2d. No match, and a \"packet-in\" is called for.", id)
	} else if r == nil {
		title = fmt.Sprintf("%2d. No match.", id)
	} else {
		title = fmt.Sprintf("%2d. %s", id, ruleTitle(r, x.traceNames()))
	}
	parent := x.tt.open(traceTable, title)
	if *first == nil {
		*first = (*parent)[len(*parent)-1]
	}
	if r == nil && !(honorMiss && x.missPacketIn(id)) {
		// The miss rule's actions: none (a rule's: ofActions).
		x.tt.add(traceAction, "drop")
	}
}

// ruleTitle is how ofproto/trace names a rule: its match (ports named
// from pn), priority and cookie.
func ruleTitle(r *rule, pn ofp.PortNames) string {
	var b strings.Builder
	m := r.match()
	if m := formatOFMatchNames(&m, pn); m != "" {
		b.WriteString(m)
		b.WriteString(", ")
	}
	fmt.Fprintf(&b, "priority %d", r.priority)
	if r.cookie != 0 {
		fmt.Fprintf(&b, ", cookie %#x", r.cookie)
	}
	return b.String()
}

// ofActions executes actions of a rule of table id; it returns the table
// a goto_table continues with and true, or false when the walk ends.
func (x *xlate) ofActions(acts []ofp.Action, id uint8) (uint8, bool) {
	next, how := x.ofActionList(acts, id, false)
	return next, how == listGoto
}

// How an action list ends (ofActionList): the walk ends, goes on with
// a goto_table, or with the resubmit that ends the list.
const (
	listEnd = iota
	listGoto
	listResubmit
)

// ofActionList is ofActions, but for a resubmit that ends acts, which
// it leaves to the caller (listResubmit) if tail.
func (x *xlate) ofActionList(acts []ofp.Action, id uint8, tail bool) (uint8, int) {
	if x.trace != nil && len(acts) == 0 {
		x.tt.add(traceAction, "drop") // OVS's do_xlate_actions of none
	}
	for i := range acts {
		if x.of.exit || x.paused != nil || x.freezing != nil {
			return 0, listEnd
		}
		a := &acts[i]
		if x.trace != nil {
			x.tt.add(traceAction, ofp.FormatAction(a, 0, x.traceNames()))
		}
		switch a.Type {
		case ofp.ActGotoTable:
			return a.Table, listGoto
		case ofp.ActResubmit:
			if tail && i == len(acts)-1 && !a.CTOrig {
				return a.Table, listResubmit
			}
			x.ofAction(a, id)
		case ofp.ActCheckPktLarger:
			x.checkPktLarger(a, acts[i+1:], id)
			return 0, listEnd
		default:
			x.ofAction(a, id)
		}
		if x.of.endList {
			x.of.endList = false
			return 0, listEnd
		}
		if x.paused != nil {
			x.pauseRest(acts[i+1:])
			return 0, listEnd
		}
		if x.freezing != nil {
			x.unwindFreeze(acts, i, id)
			return 0, listEnd
		}
	}
	return 0, listEnd
}

// pauseRest adds to the continuation of a pause the actions after it
// of a list, the innermost list first; a goto_table there becomes a
// resubmit. Apart from ofActions, to keep its stack frame, one per
// nested resubmit, small.
//
//go:noinline
func (x *xlate) pauseRest(rest []ofp.Action) {
	for _, r := range rest {
		if r.Type == ofp.ActGotoTable {
			r = ofp.Action{Type: ofp.ActResubmit, Port: ofp.PortInPort, Table: r.Table}
		}
		x.paused.rest = append(x.paused.rest, r)
	}
}

func (x *xlate) ofAction(a *ofp.Action, id uint8) {
	f := &x.of.flow
	switch a.Type {
	case ofp.ActOutput:
		x.ofOutput(a.Port)
	case ofp.ActOutputReg:
		v := ofp.GetRef(f, a.Src)
		ofp.MarkRef(&x.of.wc, a.Src)
		// OVS's xlate_output_reg_action.
		if v > 0xffff {
			x.report(">>", "output port %d is out of range", v)
			break
		}
		x.report("->", "output port is %d", v)
		x.ofOutput(uint32(v))
	case ofp.ActResubmit:
		x.resubmit(a, id)
	case ofp.ActOutputTrunc:
		x.outputTrunc(a)
	case ofp.ActSetField:
		if x.of.inActionSet && !x.hasPrereqs(a.Field) || a.Legacy() && !legacyApplies(a.Field, f) {
			break
		}
		// The bits set are consulted: the datapath flow sets them only
		// for packets that do not already hold the value (OVS's
		// mf_mask_field_masked in xlate's set_field).
		x.maskL3Prereqs(a.Field)
		a.Field.SetMask(&x.of.wc, a.Mask)
		a.Field.SetMasked(f, a.Value, a.Mask)
		x.syncVLAN()
	case ofp.ActMove:
		if x.of.inActionSet && !x.hasPrereqs(a.Src.Field, a.Dst.Field) {
			break
		}
		ofp.MarkRef(&x.of.wc, a.Src)
		ofp.MarkRef(&x.of.wc, a.Dst)
		ofp.Move(f, a.Src, a.Dst)
		x.syncVLAN()
		x.reportRef(a.Dst)
	case ofp.ActStackPush:
		ofp.MarkRef(&x.of.wc, a.Src)
		e := ofp.Push(f, a.Src)
		x.of.stack += string(e[:])
	case ofp.ActStackPop:
		n := len(x.of.stack)
		if n == 0 {
			// OVS warns and leaves the field as it is.
			x.report(">>", "Failed to pop from an empty stack.")
			break
		}
		var e ofp.StackEntry
		copy(e[:], x.of.stack[n-len(e):])
		x.of.stack = x.of.stack[:n-len(e)]
		ofp.MarkRef(&x.of.wc, a.Dst)
		ofp.Pop(f, a.Dst, e)
		x.syncVLAN()
	case ofp.ActWriteMetadata:
		f.Metadata = f.Metadata&^a.MetadataMask | a.Metadata&a.MetadataMask
	case ofp.ActPushVLAN:
		x.of.wc.VLANTCI = 0xffff
		if f.VLANTCI&flow.VLANPresent != 0 {
			// A second tag: the packet gets the current one, which
			// goes below the new one (OVS's flow_push_vlan_uninit).
			x.commitTags()
			x.inner = append(x.inner, x.cur)
			x.pkt = vlanHdr{}
		}
		// The new tag has VID and PCP 0 (OVS's xlate of push_vlan; not
		// the OpenFlow 1.1 specification's copy of the outer tag's).
		f.VLANTPID, f.VLANTCI = a.VLAN, flow.VLANPresent
		x.syncVLAN()
	case ofp.ActPopVLAN:
		x.of.wc.VLANTCI = 0xffff
		if n := len(x.inner); n > 0 {
			// The tag pushed over another goes; the one below shows.
			if x.pkt.present() {
				x.acts = append(x.acts, datapath.PopVLAN())
			}
			in := x.inner[n-1]
			x.inner = x.inner[:n-1]
			x.pkt, x.cur = in, in
			f.VLANTPID, f.VLANTCI = in.tpid, in.tci
			break
		}
		f.VLANTPID, f.VLANTCI = 0, 0
		x.syncVLAN()
	case ofp.ActSetVLANVID:
		if f.VLANTCI&flow.VLANPresent == 0 {
			if a.NoPush {
				// OpenFlow 1.1's set_vlan_vid: a tag the packet has.
				x.of.wc.VLANTCI |= flow.VLANVIDMask | flow.VLANPresent
				break
			}
			f.VLANTPID = flow.EthTypeVLAN
		}
		f.VLANTCI = f.VLANTCI&^flow.VLANVIDMask | a.VLAN | flow.VLANPresent
		x.syncVLAN()
	case ofp.ActSetVLANPCP:
		if f.VLANTCI&flow.VLANPresent == 0 {
			if a.NoPush {
				x.of.wc.VLANTCI |= flow.VLANPCPMask | flow.VLANPresent
				break
			}
			f.VLANTPID = flow.EthTypeVLAN
		}
		f.VLANTCI = f.VLANTCI&^flow.VLANPCPMask | a.VLAN<<13 | flow.VLANPresent
		x.syncVLAN()
	case ofp.ActClone:
		x.clone(a, id)
	case ofp.ActDecTTL:
		if f.EthType != flow.EthTypeIPv4 && f.EthType != flow.EthTypeIPv6 {
			break
		}
		x.of.wc.NwTTL, x.of.wc.NwProto = 0xff, 0xff
		if f.NwTTL <= 1 {
			// As OVS's compose_dec_ttl: a packet-in (reason
			// invalid_ttl, which a connection receives only if it
			// asked) to each controller id, and the rest of this
			// action list is skipped; the resubmit that led here
			// goes on.
			ids := a.CntIDs
			if ids == nil {
				ids = []uint16{0}
			}
			for _, cid := range ids {
				x.controller(ofp.PacketInInvalidTTL, 0xffff, cid, nil, false)
			}
			v := 4
			if f.EthType == flow.EthTypeIPv6 {
				v = 6
			}
			x.report(">>", "IPv%d decrement TTL exception", v)
			x.of.endList = true
			break
		}
		f.NwTTL--
	case ofp.ActController:
		n := len(x.acts)
		x.controller(a.Reason, a.MaxLen, a.ControllerID, a.Userdata, a.Pause)
		if a.ID != 0 && !a.Pause && len(x.acts) > n {
			// A pause is not metered, as in OVS (finish_freezing__).
			x.meterController(a.ID)
		}
	case ofp.ActExit:
		x.of.exit = true
	case ofp.ActGroup:
		x.group(a.ID, id)
	case ofp.ActCTClear:
		// OVS's OFPACT_CT_CLEAR: the flow forgets its conntrack fields,
		// and the datapath the packet's if it was tracked (OVS's
		// ctx->conntracked, which consults no bit of the flow: a tracked
		// packet is a recirculated one, and recirc_id is matched).
		if f.CtState&ofp.CtTrk != 0 {
			x.acts = append(x.acts, datapath.CTClear())
		}
		clearCT(f)
	case ofp.ActCT:
		x.ct(a)
	case ofp.ActLearn:
		x.learn(a.Learn)
	case ofp.ActMultipath:
		x.multipath(a.Multipath)
	case ofp.ActBundle:
		x.bundle(a.Bundle)
	case ofp.ActSetQueue:
		// OVS's xlate_set_queue_action: the netdev datapath's queue id
		// is the priority; the megaflow matches the packet's.
		x.of.wc.SkbPriority = ^uint32(0)
		f.SkbPriority = a.ID
	case ofp.ActPopQueue:
		x.of.wc.SkbPriority = ^uint32(0)
		if f.SkbPriority != x.origSkbPriority {
			f.SkbPriority = x.origSkbPriority
			x.report("->", "queue = %s", hexC(f.SkbPriority))
		}
	case ofp.ActEnqueue:
		x.of.wc.SkbPriority = ^uint32(0)
		x.enqueue(a.Port, a.ID)
	case ofp.ActFinTimeout:
		x.finTimeout(a.Fin)
	case ofp.ActMeter:
		x.ofMeter(a.ID)
	case ofp.ActWriteActions:
		x.writeActions(a.Nested)
	case ofp.ActClearActions:
		x.clearActions()
	case ofp.ActNote, ofp.ActConjunction:
	}
}

// clone executes clone(actions): the clone's changes to the flow and an
// exit in it end with it; what its lookups consulted stays consulted.
// Apart from ofAction, whose stack frame, one per nested resubmit, would
// otherwise hold the saved state (kilobytes).
//
//go:noinline
func (x *xlate) clone(a *ofp.Action, id uint8) {
	saved := *x.of
	x.ofActions(a.Nested, id)
	x.finishFreeze()
	saved.wc, saved.resubmits = x.of.wc, x.of.resubmits
	*x.of = saved
	x.syncVLAN()
}

// syncVLAN makes the NORMAL pipeline's view of the VLAN the flow's.
func (x *xlate) syncVLAN() {
	f := &x.of.flow
	if f.VLANTCI&flow.VLANPresent == 0 {
		f.VLANTCI, f.VLANTPID = 0, 0
	} else if f.VLANTPID == 0 {
		f.VLANTPID = flow.EthTypeVLAN
	}
	x.cur = vlanHdr{tpid: f.VLANTPID, tci: f.VLANTCI}
}

// resubmit is resubmit(port,table): a lookup with in_port replaced, in a
// table, then back to the rest of the actions. Resubmits to the same or
// an earlier table count towards the depth limit.
func (x *xlate) resubmit(a *ofp.Action, id uint8) {
	savedIn, savedRule := x.of.flow.InPort, x.of.rule
	table, deeper, ok := x.resubmitEnter(a, id)
	if !ok {
		return
	}
	x.of.resubmitting = true
	if a.CTOrig {
		// OVS's xlate_table_action with_ct_orig: a packet with no
		// connection's tuple (or not IP) is not looked up.
		f := &x.of.flow
		if f.CtNwProto == 0 || f.EthType != flow.EthTypeIPv4 && f.EthType != flow.EthTypeIPv6 {
			x.report(">>>>", "resubmit(ct) with non-tracked or non-IP packet!")
			x.of.resubmitting = false
			if deeper {
				x.of.depth--
			}
			f.InPort = savedIn
			return
		}
		x.of.ctOrig = true
	}
	x.table(table)
	x.of.rule = savedRule
	if deeper {
		x.of.depth--
	}
	x.of.flow.InPort = savedIn
}

// swapCTOrig swaps the packet's addresses, IP protocol and ports with
// its connection's original ones (ct_nw_src etc.), in the flow and in
// the bits consulted (OVS's tuple_swap): around a resubmit(ct)'s
// lookup, whose consulted nw_src is then ct_nw_src's.
func (x *xlate) swapCTOrig() {
	for _, k := range [...]*flow.Key{&x.of.flow.Key, &x.of.wc.Key} {
		k.NwProto, k.CtNwProto = k.CtNwProto, k.NwProto
		if x.of.flow.EthType == flow.EthTypeIPv4 {
			src, dst := k.IPv4Src, k.IPv4Dst
			k.IPv4Src, k.IPv4Dst = [4]byte(k.CtNwSrc[:4]), [4]byte(k.CtNwDst[:4])
			copy(k.CtNwSrc[:4], src[:])
			copy(k.CtNwDst[:4], dst[:])
		} else {
			k.IPv6Src, k.CtNwSrc = k.CtNwSrc, k.IPv6Src
			k.IPv6Dst, k.CtNwDst = k.CtNwDst, k.IPv6Dst
		}
		k.TpSrc, k.CtTpSrc = k.CtTpSrc, k.TpSrc
		k.TpDst, k.CtTpDst = k.CtTpDst, k.TpDst
	}
}

// resubmitEnter starts resubmit a of a rule of table id: it returns the
// table to look up (id for none) and whether it is the same or an
// earlier one (deeper), which counts towards the depth limit; over the
// limit it ends the walk and returns false. Else in_port is replaced if
// a names a port and a deeper resubmit's depth is counted.
func (x *xlate) resubmitEnter(a *ofp.Action, id uint8) (table uint8, deeper, ok bool) {
	table = a.Table
	if table == 0xff {
		table = id
	}
	deeper = table <= id
	if deeper && x.of.depth >= maxResubmitDepth {
		x.report(">>>>", "over max translation depth %d", maxResubmitDepth)
		x.of.exit = true
		return 0, false, false
	}
	if a.Port != ofp.PortInPort {
		x.of.flow.InPort = a.Port
	}
	if deeper {
		x.of.depth++
	}
	return table, deeper, true
}

// ofPort is the port of the current bridge numbered no (OpenFlow), or nil.
func (x *xlate) ofPort(no uint32) *port {
	s := x.of.in.br
	if no == ofp.PortLocal {
		return s.byOFPort[LocalOFPort]
	}
	if no < ofp.PortMax {
		return s.byOFPort[int(no)]
	}
	return nil
}

// ofOutput outputs to OpenFlow port no of the current bridge. The input
// port it skips, and the one IN_PORT names, are the flow's in_port as the
// actions left it, as OVS's xlate_output_action: ovn-controller sets
// in_port to OFPP_NONE (push, load, pop) to send a packet back out of the
// port it came in on.
func (x *xlate) ofOutput(no uint32) {
	s := x.of.in.br
	cur := x.of.flow.InPort
	switch no {
	case ofp.PortNormal:
		in := x.of.in
		if cur != ofPortNo(in) {
			// lookup_input_bundle: NORMAL starts from the in_port the
			// actions loaded; OFPP_NONE and OFPP_CONTROLLER are the
			// controller's own trunk, anything else unknown drops.
			in = x.ofPort(cur)
			if in == nil && (cur == portNone || cur == ofp.PortController) {
				in = &port{br: s, ofport: int(cur)}
			}
			if in == nil {
				x.report(">>", "no input bundle, dropping")
				return
			}
		}
		x.normal(in)
	case ofp.PortInPort:
		if p := x.ofPort(cur); p != nil {
			x.output(p)
		} else {
			x.report(">>", "Nonexistent output port")
		}
	case ofp.PortController:
		x.controller(ofp.PacketInAction, 0xffff, 0, nil, false)
	case portTable:
		if x.of.packetOut {
			x.table(0)
		}
	case ofp.PortFlood, ofp.PortAll:
		for _, p := range s.ports {
			// OFPPC_NO_FLOOD leaves a port out of FLOOD, not ALL.
			if ofPortNo(p) != cur && !(no == ofp.PortFlood && p.noFlood) {
				x.output(p)
			}
		}
	default:
		p := x.ofPort(no)
		if p == nil {
			x.report(">>", "Nonexistent output port")
			return
		}
		if no == cur {
			x.report(">>", "skipping output to input port")
			return
		}
		x.output(p)
	}
}

// outputTrunc is OVS's xlate_output_trunc_action: the datapath's trunc,
// then the output, to a port of this bridge's datapath only (not a
// patch port, nor IN_PORT, which OVS looks up as a port number).
func (x *xlate) outputTrunc(a *ofp.Action) {
	name := ofp.PortNames(nil).Port(a.Port)
	switch a.Port {
	case portTable, ofp.PortNormal, ofp.PortFlood, ofp.PortAll, ofp.PortController, portNone:
		x.report(">>", "output_trunc does not support port: %s", name)
		return
	}
	if a.Port == x.of.flow.InPort {
		x.report(">>", "skipping output to input port")
		return
	}
	if p := x.ofPort(a.Port); p == nil || p.patchPeer != "" || p.dpPort == 0 {
		x.report(">>>>", "output_trunc does not support patch port %s", name)
		return
	}
	x.acts = append(x.acts, datapath.Trunc(a.ID))
	x.ofOutput(a.Port)
}

// enqueue outputs to OpenFlow port no in queue q, as OVS's
// xlate_enqueue_action: IN_PORT is the flow's in_port, any other port
// is an output to that port only (no reserved port's meaning), and not
// to the input port; the queue is the packet's for this output only.
func (x *xlate) enqueue(no, q uint32) {
	f := &x.of.flow
	if no == ofp.PortInPort {
		no = f.InPort
	} else if no == f.InPort {
		return
	}
	p := x.ofPort(no)
	if p == nil {
		x.report(">>", "Nonexistent output port")
		return
	}
	saved := f.SkbPriority
	f.SkbPriority = q
	x.output(p)
	f.SkbPriority = saved
}

// checkConsistency is OVS's ofpacts_check_consistency for a message of
// version v: an action that works on a header the match (k, its values)
// does not guarantee leaves only OpenFlow 1.0 usable (inconsistent_match:
// OpenFlow 1.0's mod_nw_* and mod_tp_*, dec_ttl of a non-IP flow,
// strip_vlan of an untagged one, ...), so from OpenFlow 1.1 on such a flow
// mod or packet-out is refused.
func checkConsistency(v ofp.Version, acts []ofp.Action, k *flow.Key) *ofp.Error {
	if v >= ofp.V11 && ofptext.Inconsistent(acts, *k) {
		return &ofp.Error{Errno: ofp.MatchInconsistent, Detail: "an action the match does not give the header of (OpenFlow 1.0 only)"}
	}
	return nil
}

// checkActions refuses, at FLOW_MOD time, what the translation would not
// carry out, with the error OVS gives for it, and actions whose fields'
// prerequisites the match does not guarantee (none for a group's bucket,
// m nil, which has no match: OVS checks no prerequisites there).
func checkActions(acts []ofp.Action, m *ofp.Match, table uint8) *ofp.Error {
	if err := ofp.CheckConjunction(acts); err != nil {
		return err
	}
	for i := range acts {
		a := &acts[i]
		switch a.Type {
		case ofp.ActUnsupported:
			return &ofp.Error{Errno: a.Errno, Detail: a.Name + " is not supported"}
		case ofp.ActWriteActions:
			if err := checkActionSet(a.Nested); err != nil {
				return err
			}
			if err := checkActions(a.Nested, m, table); err != nil {
				return err
			}
		case ofp.ActResubmit:
			// OVS's check_RESUBMIT: the connection's tuple is there
			// only for a packet the match says is tracked.
			if a.CTOrig && m != nil && !m.CTValid() {
				return &ofp.Error{Errno: ofp.MatchInconsistent, Detail: "resubmit(ct) without a tracked connection in the match"}
			}
		case ofp.ActGotoTable:
			if a.Table <= table || int(a.Table) >= NumTables {
				return &ofp.Error{Errno: ofp.InstBadTableID, Detail: "goto_table must go forward"}
			}
		case ofp.ActSetField:
			if !translatable(a.Field.ID) {
				return &ofp.Error{Errno: ofp.BadSetType, Detail: "setting " + a.Field.Name + " is not supported"}
			}
			if m != nil && !a.Field.Prereqs(m) && !a.Legacy() {
				// OpenFlow 1.0's mod_* actions apply to the packets that
				// have the field, and need no prerequisite.
				return &ofp.Error{Errno: ofp.MatchInconsistent, Detail: a.Field.Name + " without its prerequisites"}
			}
		case ofp.ActMove:
			if !translatable(a.Dst.Field.ID) {
				return &ofp.Error{Errno: ofp.BadSetType, Detail: "setting " + a.Dst.Field.Name + " is not supported"}
			}
			if m != nil && (!a.Src.Field.Prereqs(m) || !a.Dst.Field.Prereqs(m)) {
				return &ofp.Error{Errno: ofp.MatchInconsistent, Detail: "move without its fields' prerequisites"}
			}
		case ofp.ActStackPush:
			if m != nil && !a.Src.Field.Prereqs(m) {
				return &ofp.Error{Errno: ofp.MatchInconsistent, Detail: "push without its field's prerequisites"}
			}
		case ofp.ActStackPop:
			if !translatable(a.Dst.Field.ID) {
				return &ofp.Error{Errno: ofp.BadSetType, Detail: "setting " + a.Dst.Field.Name + " is not supported"}
			}
			if m != nil && !a.Dst.Field.Prereqs(m) {
				return &ofp.Error{Errno: ofp.MatchInconsistent, Detail: "pop without its field's prerequisites"}
			}
		case ofp.ActCheckPktLarger:
			// No prerequisites (OVS's check_CHECK_PKT_LARGER).
			if !translatable(a.Dst.Field.ID) {
				return &ofp.Error{Errno: ofp.BadSetType, Detail: "setting " + a.Dst.Field.Name + " is not supported"}
			}
		case ofp.ActMultipath:
			if err := checkDst(a.Multipath.Dst, m, "multipath"); err != nil {
				return err
			}
		case ofp.ActBundle:
			if a.Bundle.Load {
				if err := checkDst(a.Bundle.Dst, m, "bundle_load"); err != nil {
					return err
				}
			}
		case ofp.ActOutputReg:
			if m != nil && !a.Src.Field.Prereqs(m) {
				return &ofp.Error{Errno: ofp.MatchInconsistent, Detail: "output_reg without its field's prerequisites"}
			}
		case ofp.ActClone:
			if err := checkActions(a.Nested, m, table); err != nil {
				return err
			}
		case ofp.ActCT:
			if err := checkCT(a, m); err != nil {
				return err
			}
		case ofp.ActLearn:
			if err := checkLearn(a.Learn, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// translatable reports whether the translation can set field id: the
// pipeline's registers and metadata, the input port, the VLAN, the
// Ethernet, IPv4 and IPv6 addresses, the IPv6 label, the TTL, the
// TCP/UDP ports, ICMP and ICMPv6 types and codes, ARP's fields,
// neighbour discovery's, the TOS byte's DSCP and ECN bits, SCTP ports,
// the packet mark and tun_metadata.
func translatable(id ofp.FieldID) bool {
	switch {
	case id >= ofp.FieldReg0 && id < ofp.FieldXXReg0+4:
		return true
	case id >= ofp.FieldTunMetadata0 && id < ofp.FieldTunMetadata0+ofp.TLVMaxFields:
		return true
	}
	switch id {
	case ofp.FieldMetadata, ofp.FieldInPort, ofp.FieldVLANTCI, ofp.FieldVLANVID, ofp.FieldVLANPCP,
		ofp.FieldEthSrc, ofp.FieldEthDst, ofp.FieldIPv4Src, ofp.FieldIPv4Dst, ofp.FieldIPTTL,
		ofp.FieldTCPSrc, ofp.FieldTCPDst, ofp.FieldUDPSrc, ofp.FieldUDPDst,
		ofp.FieldTunID, ofp.FieldTunSrc, ofp.FieldTunDst, ofp.FieldTunIPv6Src, ofp.FieldTunIPv6Dst, ofp.FieldTunFlags,
		ofp.FieldTunGBPID, ofp.FieldTunGBPFlags,
		ofp.FieldARPOp, ofp.FieldARPSPA, ofp.FieldARPTPA, ofp.FieldARPSHA, ofp.FieldARPTHA,
		ofp.FieldIPv6Src, ofp.FieldIPv6Dst, ofp.FieldIPv6Label,
		ofp.FieldICMPType, ofp.FieldICMPCode, ofp.FieldICMPv6Type, ofp.FieldICMPv6Code,
		ofp.FieldNDTarget, ofp.FieldNDSLL, ofp.FieldNDTLL, ofp.FieldNDReserved, ofp.FieldNDOptionsType,
		ofp.FieldIPDSCP, ofp.FieldIPTOS, ofp.FieldIPECN, ofp.FieldSCTPSrc, ofp.FieldSCTPDst, ofp.FieldPktMark:
		return true
	}
	return false
}

// maskL3Prereqs is OVS's mf_set_mask_l3_prereqs: a set of an IP header
// field (but OXM's ip_dscp) in an IP packet, or of an ARP field in an ARP
// packet, consults nw_proto, since the datapath writes the header only
// when the packet has one (commitSets): a megaflow for a packet with an
// IP protocol would otherwise also set the field in a packet without.
func (x *xlate) maskL3Prereqs(fd *ofp.Field) {
	switch et := x.of.flow.EthType; {
	case et == flow.EthTypeIPv4 || et == flow.EthTypeIPv6:
		switch fd.ID {
		case ofp.FieldIPv4Src, ofp.FieldIPv4Dst, ofp.FieldIPv6Src, ofp.FieldIPv6Dst, ofp.FieldIPv6Label,
			ofp.FieldIPTOS, ofp.FieldIPECN, ofp.FieldIPTTL:
			x.of.wc.NwProto = 0xff
		}
	case et == flow.EthTypeARP:
		switch fd.ID {
		case ofp.FieldARPOp, ofp.FieldARPSHA, ofp.FieldARPTHA, ofp.FieldARPSPA, ofp.FieldARPTPA:
			x.of.wc.NwProto = 0xff
		}
	}
}
