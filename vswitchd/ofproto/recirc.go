package ofproto

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/conntrack"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// frozen is the translation state a ct(table=N) or a select group's
// hash (freeze.go) freezes under a recirculation ID, and the
// recirculated packet's translation resumes with (OVS's struct
// frozen_state: the bridge, the table, the input port and the pipeline
// metadata, and a freeze's actions; conntracked is always true after a
// ct).
type frozen struct {
	br    *Bridge
	table uint8
	// inPort names the port the packet entered br on; ofInPort is the
	// OpenFlow in_port as the actions left it.
	inPort   string
	ofInPort uint32
	regs     [16]uint32
	metadata uint64
	// stack is the push/pop stack (OVS freezes it too).
	stack string
	// pktMark is the packet's mark (OVS's pkt_mark, metadata that a
	// recirculation keeps).
	pktMark uint32
	// A freeze's actions left (with their unroll_xlates) and action set,
	// encoded, which tell states apart (the node keeps them as they
	// are); acts is "" for a ct's state.
	acts, actset string
}

// recircNode is one allocated recirculation ID.
type recircNode struct {
	id    uint32
	state frozen
	// rules are the rules whose ct action froze this state: the ID lives
	// while one of them is in its bridge's tables.
	rules map[*rule]struct{}
	// frozen is a freeze's actions left and action set.
	frozen *frozenActs
}

// recircs allocates recirculation IDs, one per distinct frozen state
// (OVS's ofproto-dpif-rid.c). IDs only grow, so a datapath flow of a
// freed ID never matches another state's packets.
type recircs struct {
	mu      sync.Mutex // guards the fields below
	byID    map[uint32]*recircNode
	byState map[frozen]*recircNode
	next    uint32
}

// alloc returns the ID of st, referenced by r (none when r is nil).
func (rc *recircs) alloc(st frozen, r *rule) uint32 { return rc.allocFrozen(st, r, nil) }

// allocFrozen is alloc for a freeze's state, whose actions left and
// action set (st.acts and st.actset encoded) a new node keeps.
func (rc *recircs) allocFrozen(st frozen, r *rule, fa *frozenActs) uint32 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.byID == nil {
		rc.byID, rc.byState = map[uint32]*recircNode{}, map[frozen]*recircNode{}
	}
	n := rc.byState[st]
	if n == nil {
		for {
			rc.next++
			if rc.next != 0 && rc.byID[rc.next] == nil {
				break
			}
		}
		n = &recircNode{id: rc.next, state: st, rules: map[*rule]struct{}{}, frozen: fa}
		rc.byID[n.id], rc.byState[st] = n, n
	}
	if r != nil {
		n.rules[r] = struct{}{}
	}
	return n.id
}

// lookup returns the node of id, nil if none: its state and actions are
// never changed.
func (rc *recircs) lookup(id uint32) *recircNode {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.byID[id]
}

// sweep frees the IDs none of whose rules is in its bridge's tables any
// more; live reports whether a rule is. It returns how many it freed.
func (rc *recircs) sweep(live func(*Bridge, *rule) bool) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	freed := 0
	for id, n := range rc.byID {
		for r := range n.rules {
			if !live(n.state.br, r) {
				delete(n.rules, r)
			}
		}
		if len(n.rules) == 0 {
			delete(rc.byID, id)
			delete(rc.byState, n.state)
			freed++
		}
	}
	return freed
}

// len is the number of allocated IDs.
func (rc *recircs) len() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.byID)
}

// ruleLive returns whether a rule is still in its bridge's tables and
// the bridge in idx. It takes no lock: Run, its caller, may run while
// DelBridge holds mu and waits for a revalidation.
func ruleLive(idx *index) func(*Bridge, *rule) bool {
	return func(br *Bridge, r *rule) bool {
		if !slices.Contains(idx.bridges, br) {
			return false
		}
		return br.tables.Load().table(int(r.table)).findSame(r) == r
	}
}

// traceRecirc is a recirculation an ofproto/trace follows after the main
// translation (OVS's oftrace_recirc_node).
type traceRecirc struct {
	id   uint32
	zone uint16
	flow ofp.Flow
	st   frozen
}

// ct is the ct action (OVS's compose_conntrack_action): pending header
// changes are committed, the exec() actions set the mark and label the
// commit stores, the datapath tracks the packet, and with a table the
// packet recirculates there with the translation state frozen. The rest
// of this translation goes on without conntrack fields.
func (x *xlate) ct(a *ofp.Action) {
	f := &x.of.flow
	c := a.CT
	zone := c.ZoneImm
	if c.ZoneSrc.Field != nil {
		zone = uint16(ofp.GetRef(f, c.ZoneSrc))
		ofp.MarkRef(&x.of.wc, c.ZoneSrc)
	}
	x.commitSets()
	x.commitVLAN()

	act := conntrack.Action{Zone: zone, Commit: c.Flags&ofp.CTCommit != 0, Helper: ctHelper(c.Alg)}
	act.Force = act.Commit && c.Flags&ofp.CTForce != 0
	if act.Commit {
		// As OVS's put_ct_timeout: a commit in a zone with a timeout
		// policy gives the connection that policy.
		act.TimeoutPolicy = x.backer.ctTimeoutPolicy(zone)
	}
	var markMask uint32
	var labelMask [16]byte
	if x.trace != nil && len(a.Nested) == 0 {
		x.tt.add(traceAction, "drop") // OVS's do_xlate_actions of none
	}
	for i := range a.Nested {
		n := &a.Nested[i]
		if x.trace != nil {
			x.tt.add(traceAction, ofp.FormatAction(n, 0, x.traceNames()))
		}
		switch n.Type {
		case ofp.ActNAT:
			act.NAT = natRange(n.NAT)
		case ofp.ActSetField:
			n.Field.SetMasked(f, n.Value, n.Mask)
			orMask(n.Field.ID, n.Mask, &markMask, &labelMask)
		case ofp.ActMove:
			ofp.MarkRef(&x.of.wc, n.Src)
			ofp.Move(f, n.Src, n.Dst)
			var m ofp.Flow
			ofp.MarkRef(&m, n.Dst)
			orMask(n.Dst.Field.ID, n.Dst.Field.Get(&m), &markMask, &labelMask)
		}
	}
	if markMask != 0 {
		act.SetMark, act.Mark, act.MarkMask = true, f.CtMark&markMask, markMask
	}
	if labelMask != ([16]byte{}) {
		act.SetLabel, act.LabelMask = true, labelMask
		for i := range labelMask {
			act.Label[i] = f.CtLabel[i] & labelMask[i]
		}
	}
	x.acts = append(x.acts, datapath.CT(act))

	if c.Table != ofp.CTNoTable {
		st := frozen{br: x.of.in.br.br, table: c.Table, inPort: x.of.in.name, ofInPort: f.InPort,
			regs: f.Regs, metadata: f.Metadata, stack: x.of.stack, pktMark: f.PktMark}
		// A trace allocates too (as OVS's): the ID lives with the rule.
		id := x.backer.recircs.alloc(st, x.of.rule)
		x.acts = append(x.acts, datapath.Recirc(id))
		if x.trace != nil {
			x.report("->", "A clone of the packet is forked to recirculate. The forked pipeline will be resumed at table %d.", c.Table)
			tf := *f
			tf.RecircID, tf.CtZone = id, zone
			x.recircTrace = append(x.recircTrace, traceRecirc{id: id, zone: zone, flow: tf, st: st})
		}
	}
	clearCT(f)
	x.report("->", "Sets the packet to an untracked state, and clears all the conntrack fields.")
}

// orMask adds a set-field's mask to the mark or label mask it writes.
func orMask(id ofp.FieldID, mask []byte, mark *uint32, label *[16]byte) {
	switch id {
	case ofp.FieldCtMark:
		*mark |= uint32(mask[0])<<24 | uint32(mask[1])<<16 | uint32(mask[2])<<8 | uint32(mask[3])
	case ofp.FieldCtLabel:
		for i := range label {
			label[i] |= mask[i]
		}
	}
}

// clearCT forgets the flow's conntrack fields (OVS's flow_clear_conntrack).
func clearCT(f *ofp.Flow) {
	f.CtState, f.CtZone, f.CtMark, f.CtLabel = 0, 0, 0, [16]byte{}
	f.CtNwProto, f.CtNwSrc, f.CtNwDst, f.CtTpSrc, f.CtTpDst = 0, [16]byte{}, [16]byte{}, 0, 0
}

// natRange is the datapath NAT of a nat action (OVS's put_ct_nat): a
// range only with src or dst, a maximum only above the minimum.
func natRange(n *ofp.NAT) *conntrack.NATRange {
	r := &conntrack.NATRange{}
	if n.Flags&(ofp.NATSrc|ofp.NATDst) == 0 {
		return r
	}
	r.Src, r.Dst = n.Flags&ofp.NATSrc != 0, n.Flags&ofp.NATDst != 0
	r.Persistent = n.Flags&ofp.NATPersistent != 0
	r.Hash = n.Flags&ofp.NATHash != 0
	r.Random = !r.Hash && n.Flags&ofp.NATRandom != 0
	if n.Family == 0 {
		return r
	}
	r.V6 = n.Family == 6
	r.MinAddr = n.MinAddr
	if strings.Compare(string(n.MaxAddr[:]), string(n.MinAddr[:])) > 0 {
		r.MaxAddr = n.MaxAddr
	}
	if n.MinPort != 0 {
		r.MinPort = n.MinPort
		if n.MaxPort > n.MinPort {
			r.MaxPort = n.MaxPort
		}
	}
	return r
}

// resume translates a recirculated packet: the state frozen under its
// recirc_id, n, is restored and the walk goes on in the frozen table, or
// with a freeze's actions. An unknown ID (freed with its rules) drops.
func (x *xlate) resume(n *recircNode) {
	if n == nil {
		x.report(">>>>", "no recirculation data for recirc_id %#x", x.key.RecircID)
		return
	}
	st := n.state
	in := st.br.snap.Load().byName[st.inPort]
	if in == nil {
		return
	}
	x.visits++
	saved := x.of
	x.of = getOfState()
	defer putOfState(x.of)
	x.of.in, x.of.stack = in, st.stack
	f := &x.of.flow
	f.Key = *x.key
	f.InPort, f.Regs, f.Metadata = st.ofInPort, st.regs, st.metadata
	f.PktMark, x.pktMark = st.pktMark, st.pktMark
	f.VLANTCI, f.VLANTPID = x.cur.tci, x.cur.tpid
	orig := x.key
	x.key = &f.Key
	if x.trace != nil {
		// OVS's xlate_actions of a frozen state.
		x.tt.open(traceBridge, fmt.Sprintf("bridge(\"%s\")", st.br.name))
		restore := x.tt.open(traceThaw, "thaw")
		x.tt.add(traceThaw, fmt.Sprintf("Resuming from table %d", st.table))
		if fa := n.frozen; fa != nil {
			if len(fa.actset) > 0 {
				x.tt.add(traceThaw, "Restoring action set: "+ofp.FormatActions(fa.actset, ofp.V13, nil))
			}
			x.tt.add(traceThaw, "Restoring actions: "+fa.String())
		}
		x.tt.cur = restore
	}
	// The packet's Geneve options are read again through the bridge's
	// option map, which set_field to tun_metadata needs too, as OVS's
	// xlate_actions does for a thawed packet: without it, a packet
	// from a tunnel lost its tun_metadata after ct, and one sent into
	// a tunnel after ct went without its options (OVN's ACLs between
	// two chassis dropped everything).
	if !x.tunMetadataIn(in) {
		x.mergeWC()
		x.key = orig
		x.of = saved
		return
	}
	if x.trace != nil && saved == nil && x.traceStart == nil {
		start := x.of.flow
		if n.frozen != nil {
			// OVS's Final flow: compares with the flow traced,
			// before the frozen metadata.
			start.Regs, start.Metadata = [16]uint32{}, 0
		}
		x.traceStart, x.traceBridge = &start, x.of.in.br
	}
	if n.frozen != nil {
		x.thaw(n.frozen)
	} else {
		x.table(st.table)
	}
	x.finishFreeze()
	if x.trace != nil && saved == nil && x.traceFinal == nil {
		final := x.of.flow
		x.traceFinal = &final
		if n := len(x.inner); n > 0 {
			x.traceFinalInner = x.inner[n-1]
		}
	}
	x.mergeWC()
	x.key = orig
	x.of = saved
}

// ctHelper is the datapath's name of the helper on an alg= port.
func ctHelper(alg uint16) string {
	switch alg {
	case 21:
		return conntrack.HelperFTP
	case 69:
		return conntrack.HelperTFTP
	}
	return ""
}

// checkCT checks a ct action against the match as OVS's check_CT and
// check_NAT: ct needs IP, a commit not +inv, a zone field its
// prerequisites, and a nat range the family matched. A helper other than
// ftp (21) and tftp (69) is refused: OVS accepts the flow but cannot
// translate it ("cannot serialize ct_helper"). A nil m (a group bucket's
// actions, which OVS checks against no match) skips the prerequisites:
// ovn-controller's load balancers put ct(commit,nat(dst=...)) in select
// group buckets.
func checkCT(a *ofp.Action, m *ofp.Match) *ofp.Error {
	c := a.CT
	if m == nil {
		return checkCTHelper(c)
	}
	typ := m.Flow.EthType
	if m.Mask.EthType != 0xffff {
		typ = 0
	}
	ip := typ == flow.EthTypeIPv4 || typ == flow.EthTypeIPv6
	proto := m.Flow.NwProto
	if m.Mask.NwProto != 0xff {
		proto = 0
	}
	inconsistent := &ofp.Error{Errno: ofp.MatchInconsistent, Detail: "ct without its prerequisites"}
	if !ip || m.Flow.CtState&ofp.CtInv != 0 && c.Flags&ofp.CTCommit != 0 ||
		c.Alg == 21 && proto != flow.IPProtoTCP || c.Alg == 69 && proto != flow.IPProtoUDP {
		return inconsistent
	}
	if c.ZoneSrc.Field != nil {
		// OVS's check_CT returns here, leaving the nested actions
		// unchecked.
		if !c.ZoneSrc.Field.Prereqs(m) {
			return inconsistent
		}
	} else {
		for _, n := range a.Nested {
			if n.Type == ofp.ActNAT && (n.NAT.Family == 4 && typ != flow.EthTypeIPv4 || n.NAT.Family == 6 && typ != flow.EthTypeIPv6) {
				return inconsistent
			}
		}
	}
	return checkCTHelper(c)
}

// checkCTHelper refuses a helper govs cannot run.
func checkCTHelper(c *ofp.CT) *ofp.Error {
	if c.Alg != 0 && ctHelper(c.Alg) == "" {
		return &ofp.Error{Errno: ofp.BadActionArgument, Detail: "ct helper (alg) other than ftp and tftp"}
	}
	return nil
}

// FlushConntrackZone forgets every tracked connection of zone
// (NXT_CT_FLUSH_ZONE). The tracker is the datapath's, shared by all
// bridges, as OVS's.
func (br *Bridge) FlushConntrackZone(zone uint16) {
	br.backer.dp.Conntrack().Flush(int(zone))
}

// FlushConntrack carries out NXT_CT_FLUSH as OVS 3.1's ct_dpif_flush:
// with nothing to match, every connection of the zone (of all zones
// without a zone); with a whole original tuple and no reply tuple, that
// connection in the zone (0 by default); otherwise every connection,
// of the zone or of all zones, whose directions match the fields given
// (zero fields match anything; an ICMP tuple's id, type and code always
// compare).
func (br *Bridge) FlushConntrack(m *ofp.CTFlush) {
	ct := br.backer.dp.Conntrack()
	zone := -1
	if m.HasZone {
		zone = int(m.Zone)
	}
	icmp := m.Proto == flow.IPProtoICMP || m.Proto == flow.IPProtoICMPv6
	zero := func(t ofp.CTTuple) bool {
		return t.Src == [16]byte{} && t.Dst == [16]byte{} && (icmp || t.SrcPort == 0 && t.DstPort == 0)
	}
	switch {
	case m.Proto == 0 && zero(m.Orig) && zero(m.Reply):
		ct.Flush(zone)
	case m.Orig.Src != [16]byte{} && m.Orig.Dst != [16]byte{} &&
		(icmp || m.Orig.SrcPort != 0 && m.Orig.DstPort != 0) && zero(m.Reply):
		ct.FlushTuple(m.Zone, ctTuple(m.Proto, m.Orig))
	default:
		ct.FlushMatch(zone, ctMatch(m.Proto, m.Orig, icmp), ctMatch(m.Proto, m.Reply, icmp))
	}
}

// ctMatch is the tracker's partial match for one direction of an
// NXT_CT_FLUSH: the fields given, as OVS 3.1's ct_dpif_entry_cmp.
func ctMatch(proto uint8, t ofp.CTTuple, icmp bool) conntrack.TupleMatch {
	m := conntrack.TupleMatch{Tuple: ctTuple(proto, t)}
	if proto != 0 {
		m.Has |= conntrack.MatchProto
	}
	if t.Src != [16]byte{} {
		m.Has |= conntrack.MatchSrc
	}
	if t.Dst != [16]byte{} {
		m.Has |= conntrack.MatchDst
	}
	switch {
	case icmp:
		m.Has |= conntrack.MatchSrcPort | conntrack.MatchDstPort
	default:
		if t.SrcPort != 0 {
			m.Has |= conntrack.MatchSrcPort
		}
		if t.DstPort != 0 {
			m.Has |= conntrack.MatchDstPort
		}
	}
	return m
}

// ctTuple is the tracker's form of an NXT_CT_FLUSH tuple: IPv4 addresses
// (IPv4-mapped on the wire) in the first 4 bytes, an ICMP connection's
// id as source port and type and code as destination port.
func ctTuple(proto uint8, t ofp.CTTuple) conntrack.Tuple {
	mapped := func(a [16]byte) bool {
		return a == [16]byte{} || a[10] == 0xff && a[11] == 0xff && [10]byte(a[:10]) == [10]byte{}
	}
	tu := conntrack.Tuple{Src: t.Src, Dst: t.Dst, SrcPort: t.SrcPort, DstPort: t.DstPort, Proto: proto}
	if mapped(t.Src) && mapped(t.Dst) {
		tu.Src, tu.Dst = [16]byte{}, [16]byte{}
		copy(tu.Src[:], t.Src[12:])
		copy(tu.Dst[:], t.Dst[12:])
	} else {
		tu.V6 = true
	}
	if proto == flow.IPProtoICMP || proto == flow.IPProtoICMPv6 {
		tu.SrcPort, tu.DstPort = t.ICMPID, uint16(t.ICMPType)<<8|uint16(t.ICMPCode)
	}
	return tu
}
