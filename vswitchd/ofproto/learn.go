package ofproto

import (
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// The learn action (OVS's learn.c and xlate_learn_action): a packet's
// translation adds a flow made from the packet's fields, or refreshes it
// if it exists with the same actions. Translations of a datapath flow
// that forwarded packets run it again in the revalidator's refresh pass,
// so learned flows stay fresh while traffic flows, as OVS's xlate cache
// does.

// checkLearn refuses at FLOW_MOD time a learn whose sources lack their
// prerequisites in the learning flow's match m (OVS's learn_check) or
// that would make a flow the translation could not carry out.
func checkLearn(l *ofp.Learn, m *ofp.Match) *ofp.Error {
	for _, s := range l.Specs {
		if s.Src.Field != nil && m != nil && !s.Src.Field.Prereqs(m) {
			return &ofp.Error{Errno: ofp.MatchInconsistent, Detail: "learn: " + s.Src.Field.Name + " lacks its prerequisites"}
		}
		if s.Kind == ofp.LearnLoad && !translatable(s.Dst.Field.ID) {
			return &ofp.Error{Errno: ofp.BadSetType, Detail: "learn: setting " + s.Dst.Field.Name + " is not supported"}
		}
	}
	if r := l.ResultDst; r.Field != nil {
		if !translatable(r.Field.ID) {
			return &ofp.Error{Errno: ofp.BadSetType, Detail: "learn: setting " + r.Field.Name + " is not supported"}
		}
		if m != nil && !r.Field.Prereqs(m) {
			return &ofp.Error{Errno: ofp.MatchInconsistent, Detail: "learn: result_dst lacks its prerequisites"}
		}
	}
	if int(l.Table) >= NumTables {
		return &ofp.Error{Errno: ofp.BadActionArgument, Detail: "learn: no such table"}
	}
	return nil
}

// learnFlowMod is OVS's learn_execute: the flow mod l makes for flow f.
func learnFlowMod(l *ofp.Learn, f *ofp.Flow) *ofp.FlowMod {
	fm := &ofp.FlowMod{Command: ofp.FlowModifyStrict, ModifyAdds: true, Table: l.Table, Priority: l.Priority,
		IdleTimeout: l.IdleTimeout, HardTimeout: l.HardTimeout, NewCookie: l.Cookie, HasNewCookie: l.Cookie != ^uint64(0),
		BufferID: 0xffffffff, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny}
	if l.Flags&ofp.LearnSendFlowRem != 0 {
		fm.Flags = ofp.FlagSendFlowRem
	}
	if l.FinIdleTimeout != 0 || l.FinHardTimeout != 0 {
		fm.Actions = append(fm.Actions, ofp.Action{Type: ofp.ActFinTimeout, Fin: &ofp.FinTimeout{Idle: l.FinIdleTimeout, Hard: l.FinHardTimeout}})
	}
	for i := range l.Specs {
		s := &l.Specs[i]
		switch s.Kind {
		case ofp.LearnMatch:
			v, m := s.Value(f)
			if idx := ofp.TunMetadataIndex(s.Dst.Field); idx >= 0 {
				learnTunMD(&fm.Match, idx, v, m)
				break
			}
			s.Dst.Field.SetMasked(&fm.Match.Flow, v, m)
			s.Dst.Field.SetMask(&fm.Match.Mask, m)
		case ofp.LearnLoad:
			v, m := s.Value(f)
			fm.Actions = append(fm.Actions, ofp.LoadAction(s.Dst.Field, v, m))
		case ofp.LearnOutput:
			p, ok := s.Port(f)
			if !ok {
				break
			}
			port := uint32(p)
			if p >= 0xff00 {
				port = 0xffff0000 | uint32(p) // an OpenFlow 1.0 reserved port
			}
			if port < ofp.PortMax || port == ofp.PortInPort || port == ofp.PortFlood || port == ofp.PortLocal || port == ofp.PortAll {
				fm.Actions = append(fm.Actions, ofp.Action{Type: ofp.ActOutput, Port: port})
			}
		}
	}
	fm.Match.Normalize()
	if len(fm.Match.TunMD) > 0 {
		if fm.Match.ResolveTunMD(f.TunTab) != nil {
			return nil // the option map changed under the learning flow
		}
		// OVS keeps a learned tun_metadata match as long as its value
		// and mask need (mf_field_len), which its flow dumps show.
		for i := range fm.Match.TunMD {
			e := &fm.Match.TunMD[i]
			n := max(significantBytes(e.Value), significantBytes(e.Mask))
			e.Value, e.Mask = e.Value[len(e.Value)-n:], e.Mask[len(e.Mask)-n:]
		}
	}
	return fm
}

// significantBytes is the length of b without its leading zero bytes,
// at least 1 (OVS's field_len).
func significantBytes(b []byte) int {
	for i, c := range b {
		if c != 0 {
			return len(b) - i
		}
	}
	return min(1, len(b))
}

// learnTunMD adds value under mask to m's match on tun_metadata<idx>,
// one entry per field whatever bits each spec gives.
func learnTunMD(m *ofp.Match, idx int, value, mask []byte) {
	for i := range m.TunMD {
		e := &m.TunMD[i]
		if e.Idx == idx && len(e.Value) == len(value) {
			for j := range value {
				e.Value[j] = e.Value[j]&^mask[j] | value[j]&mask[j]
				e.Mask[j] |= mask[j]
			}
			return
		}
	}
	m.TunMD = append(m.TunMD, ofp.TunMDEntry{Idx: idx, Value: value, Mask: mask})
}

// learn executes a learn action in the translation: the sources it reads
// are consulted; a packet's or a refresh's translation adds or refreshes
// the flow; ofproto/trace, which has no side effects, says it ignores it.
func (x *xlate) learn(l *ofp.Learn) {
	f := &x.of.flow
	for _, s := range l.Specs {
		if s.Src.Field != nil {
			ofp.MarkRef(&x.of.wc, s.Src)
		}
	}
	if x.mode == modeTrace {
		x.report(">>", "suppressing side effects, so learn action ignored")
		return
	}
	fm := learnFlowMod(l, f)
	if fm == nil {
		return
	}
	br := x.of.in.br.br
	var ok bool
	if x.mode == modePacket || x.mode == modeRefresh {
		ok = br.learnFlow(l, fm)
	} else {
		ok = br.canLearn(l, fm)
	}
	if r := l.ResultDst; r.Field != nil {
		v := uint64(0)
		if ok {
			v = 1
		}
		ofp.MarkRef(&x.of.wc, r)
		val, mask := refBits(r, v)
		r.Field.SetMasked(f, val, mask)
		x.syncVLAN()
	}
}

// refBits returns r's field with r's bits set to v, and their mask.
func refBits(r ofp.FieldRef, v uint64) (value, mask []byte) {
	var e ofp.StackEntry
	for i := range 8 {
		e[15-i] = byte(v >> (8 * i))
	}
	var val, mk ofp.Flow
	ofp.Pop(&val, r, e)
	ofp.MarkRef(&mk, r)
	return r.Field.Get(&val), r.Field.Get(&mk)
}

// canLearn reports whether l would learn fm now (a translation without
// side effects): the flow exists, or the limit leaves room.
func (br *Bridge) canLearn(l *ofp.Learn, fm *ofp.FlowMod) bool {
	ft := br.tables.Load()
	if ft.table(int(fm.Table)).find(&fm.Match, fm.Priority) != nil {
		return true
	}
	return l.Limit == 0 || countCookie(ft, fm.Table, fm.NewCookie) < int(l.Limit)
}

func countCookie(ft *flowTables, t uint8, cookie uint64) int {
	n := 0
	ft.table(int(t)).each(func(r *rule) {
		if r.cookie == cookie {
			n++
		}
	})
	return n
}

// learnFlow installs fm, learned by l (OVS's ofproto_flow_mod_learn): a
// flow with the same match, priority, cookie, timeouts and actions is
// refreshed (its hard timeout restarts, its idle one too); another with
// the same match and priority is replaced, keeping its counters; else the
// flow is added unless l's limit is reached. It reports whether the flow
// is in place.
func (br *Bridge) learnFlow(l *ofp.Learn, fm *ofp.FlowMod) bool {
	now := br.clock()
	if old := br.tables.Load().table(int(fm.Table)).find(&fm.Match, fm.Priority); old != nil && sameLearned(old, fm) {
		old.stats.used.Store(int64(now))
		old.stats.refreshed.Store(int64(now))
		return true
	}
	if checkActions(fm.Actions, &fm.Match, fm.Table) != nil {
		return false
	}
	ofp.CheckVLAN(fm.Actions, fm.Match.Flow.VLANTCI&flow.VLANPresent != 0)
	br.flowMu.Lock()
	defer br.flowMu.Unlock()
	ft := *br.tables.Load()
	gen := gens.Add(1)
	nr := &rule{table: fm.Table, priority: fm.Priority, cookie: fm.NewCookie,
		idle: fm.IdleTimeout, hard: fm.HardTimeout, flags: fm.Flags, created: now, modified: now}
	nr.setMatch(&fm.Match)
	nr.setActions(internActions(fm.Actions))
	nr = boxRule(nr, true)
	old := ft.table(int(fm.Table)).find(&fm.Match, fm.Priority)
	switch {
	case old != nil:
		nr.seq, nr.created, nr.stats = old.seq, old.created, old.stats
		nr.stats.used.Store(int64(now))
	case l.Limit != 0 && countCookie(&ft, fm.Table, fm.NewCookie) >= int(l.Limit):
		return false
	case ft.table(int(fm.Table)).len() >= maxFlowsPerTable:
		return false
	default:
		nr.seq = seqs.Add(1)
	}
	ft.mutable(fm.Table, gen).put(nr, old, gen)
	br.publish(&ft)
	br.flowsChanged()
	return true
}

// sameLearned: r is what fm would make, so learning it again only
// refreshes it.
func sameLearned(r *rule, fm *ofp.FlowMod) bool {
	if r.cookie != fm.NewCookie || r.idle != fm.IdleTimeout || r.hard != fm.HardTimeout || r.flags != fm.Flags ||
		len(r.actions()) != len(fm.Actions) {
		return false
	}
	return ofp.FormatActions(r.actions(), 0, nil) == ofp.FormatActions(fm.Actions, 0, nil)
}

// deleteLearned removes, from ft, the flows learned by the learn actions
// with delete_learned of the removed rules that no remaining flow has:
// every flow of the learned table with the learned cookie (OVS's
// learned_cookies_flush). It returns the flows it removed. flowMu must
// be held.
func deleteLearned(ft *flowTables, removed []*rule, gen uint64) []*rule {
	type key struct {
		table  uint8
		cookie uint64
	}
	gone := map[key]bool{}
	for _, r := range removed {
		eachLearn(r.actions(), func(l *ofp.Learn) {
			if l.Flags&ofp.LearnDeleteLearned != 0 {
				gone[key{l.Table, l.Cookie}] = true
			}
		})
	}
	if len(gone) == 0 {
		return nil
	}
	for t := range NumTables {
		ft.table(t).each(func(r *rule) {
			eachLearn(r.actions(), func(l *ofp.Learn) {
				if l.Flags&ofp.LearnDeleteLearned != 0 {
					delete(gone, key{l.Table, l.Cookie})
				}
			})
		})
	}
	var out []*rule
	for k := range gone {
		var rs []*rule
		ft.table(int(k.table)).each(func(r *rule) {
			if r.cookie == k.cookie {
				rs = append(rs, r)
			}
		})
		for _, r := range rs {
			ft.mutable(k.table, gen).remove(r, gen)
		}
		out = append(out, rs...)
	}
	return out
}

func eachLearn(acts []ofp.Action, fn func(*ofp.Learn)) {
	for i := range acts {
		switch acts[i].Type {
		case ofp.ActLearn:
			fn(acts[i].Learn)
		case ofp.ActClone, ofp.ActWriteActions:
			eachLearn(acts[i].Nested, fn)
		}
	}
}

// finTimeout is NXAST_FIN_TIMEOUT: a TCP FIN or RST through the rule
// shortens its timeouts (OVS's xlate_fin_timeout). The flags are the
// packet's: the datapath flow matches the FIN and RST bits, so that such
// a packet is a miss the translation sees.
func (x *xlate) finTimeout(fin *ofp.FinTimeout) {
	f := &x.of.flow
	if f.NwProto != flow.IPProtoTCP || f.EthType != flow.EthTypeIPv4 && f.EthType != flow.EthTypeIPv6 {
		return
	}
	x.of.wc.EthType, x.of.wc.NwProto = 0xffff, 0xff
	x.of.wc.TCPFlags |= tcpFIN | tcpRST
	if x.of.rule == nil || x.mode != modePacket || f.TCPFlags&(tcpFIN|tcpRST) == 0 {
		return
	}
	x.of.in.br.br.reduceTimeouts(x.of.rule, fin.Idle, fin.Hard)
}

// TCP header flags.
const (
	tcpFIN = 0x001
	tcpRST = 0x004
)

// reduceTimeouts lowers r's idle and hard timeouts to idle and hard (0:
// unchanged) where those are shorter or r had none (OVS's
// ofproto_rule_reduce_timeouts).
func (br *Bridge) reduceTimeouts(r *rule, idle, hard uint16) {
	reduce := func(max uint16, t *uint16) {
		if max != 0 && (*t == 0 || *t > max) {
			*t = max
		}
	}
	br.flowMu.Lock()
	defer br.flowMu.Unlock()
	ft := *br.tables.Load()
	cur := ft.table(int(r.table)).findSame(r)
	if cur == nil || cur.seq != r.seq {
		return
	}
	nr := boxRule(cur, false)
	reduce(idle, &nr.idle)
	reduce(hard, &nr.hard)
	if nr.idle == cur.idle && nr.hard == cur.hard {
		return
	}
	gen := gens.Add(1)
	ft.mutable(r.table, gen).put(nr, cur, gen)
	br.publish(&ft)
}
