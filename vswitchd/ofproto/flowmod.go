package ofproto

import (
	"fmt"
	"slices"
	"time"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// AsyncSink receives a bridge's asynchronous OpenFlow messages (its
// management channel).
type AsyncSink interface {
	FlowRemoved(f *ofp.FlowRemoved)
}

// SetAsync makes s receive the bridge's FLOW_REMOVED messages, and its
// packet-ins if s is a PacketInSink; nil stops.
func (br *Bridge) SetAsync(s AsyncSink) {
	br.flowMu.Lock()
	br.async = s
	br.monitor, _ = s.(FlowMonitorSink)
	br.setPacketInSink(s)
	br.flowMu.Unlock()
}

// normalRule is the flow a standalone bridge without controllers starts
// with, as OVS's connmgr adds it: priority=0 actions=NORMAL.
func (br *Bridge) normalRule(now time.Duration) *rule {
	r := &rule{created: now, modified: now}
	r.setActions([]ofp.Action{{Type: ofp.ActOutput, Port: ofp.PortNormal}})
	r.setMatch(&ofp.Match{})
	return boxRule(r, true)
}

// resetFlows empties every table and, unless secure, adds the NORMAL
// flow (OVS flushes the tables when fail_mode changes). flowMu must be
// held.
func (br *Bridge) resetFlows(secure bool) {
	ft := &flowTables{}
	if old := br.tables.Load(); old != nil {
		ft.prefixes = old.prefixes // the tables' configuration stays
	}
	if !secure {
		r := br.normalRule(br.clock())
		r.seq = seqs.Add(1)
		gen := gens.Add(1)
		ft.mutable(0, gen).put(r, nil, gen)
	}
	br.publish(ft)
	br.failSecure = secure
}

// FlowMod applies a flow mod (add, modify, delete, strict or not) as OVS's
// ofproto handle_flow_mod does, or returns the error to refuse it with,
// changing nothing. Installed datapath flows are revalidated before the
// next Barrier returns. It keeps no reference to fm (its connection
// reuses it), only to its actions.
func (br *Bridge) FlowMod(fm *ofp.FlowMod) *ofp.Error {
	if err := checkFlowMod(fm); err != nil {
		return err
	}
	var changes []ofp.FlowChange
	defer func() { br.reportChanges(changes) }()
	br.flowMu.Lock()
	defer br.flowMu.Unlock()
	br.startChanges()
	ft := *br.tables.Load()
	now := br.clock()
	removed, err := br.flowModLocked(&ft, fm, now, gens.Add(1))
	if err != nil {
		br.takeChanges() // nothing changed
		return err
	}
	br.publish(&ft)
	br.flowsChanged()
	for _, r := range removed {
		br.sendRemoved(r, ofp.RemovedDelete, now)
		br.flowGone(r, ofp.RemovedDelete, originOf(fm))
	}
	changes = br.takeChanges()
	return nil
}

// checkFlowMod checks (and normalises) what of fm does not depend on the
// tables: what OVS checks as it decodes a flow mod, also one added to a
// bundle.
func checkFlowMod(fm *ofp.FlowMod) *ofp.Error {
	if fm.Table == hiddenTable {
		return &ofp.Error{Errno: ofp.EPerm, Detail: "table 254 is read-only"}
	}
	if fm.Table == ofp.TableAll && fm.Command == ofp.FlowAdd {
		fm.Table = 0 // an OpenFlow 1.0 add without a table goes to table 0
	}
	if fm.Command > ofp.FlowDeleteStrict {
		return &ofp.Error{Errno: ofp.FlowModBadCommand, Detail: "unknown command"}
	}
	if fm.Flags&^(ofp.FlagSendFlowRem|ofp.FlagCheckOverlap|ofp.FlagResetCounts|ofp.FlagNoPktCounts|ofp.FlagNoBytCounts) != 0 {
		return &ofp.Error{Errno: ofp.FlowModBadFlags, Detail: "unknown flags"}
	}
	if fm.BufferID != 0xffffffff && fm.Command < ofp.FlowDelete {
		// govs buffers no packets: OVS's error for an unknown buffer.
		return &ofp.Error{Errno: ofp.BadActionArgument, Detail: "no buffered packet"}
	}
	if err := fm.Match.CheckPrereqs(); err != nil {
		return err
	}
	fm.Match.Normalize()
	if fm.Command < ofp.FlowDelete {
		ofp.RetargetLegacyPorts(fm.Actions, &fm.Match)
		if err := checkActions(fm.Actions, &fm.Match, fm.Table); err != nil {
			return err
		}
		if err := checkConsistency(fm.Version, fm.Actions, &fm.Match.Flow.Key); err != nil {
			return err
		}
		ofp.CheckVLAN(fm.Actions, fm.Match.Flow.VLANTCI&flow.VLANPresent != 0)
		if (fm.Command == ofp.FlowAdd || fm.ModifyAdds) && !fm.Match.HiddenFieldsDefault() {
			return &ofp.Error{Errno: ofp.EPerm, Detail: "only internal flows can set non-default values to hidden fields"}
		}
	}
	return nil
}

// flowModLocked applies a checked fm to ft, a private copy of the tables
// whose new nodes carry generation gen, and returns the flows it deleted.
// On error ft may be half changed: the caller drops it. flowMu must be
// held.
func (br *Bridge) flowModLocked(ft *flowTables, fm *ofp.FlowMod, now time.Duration, gen uint64) ([]*rule, *ofp.Error) {
	if fm.Command == ofp.FlowAdd {
		nr := new(rule)
		initRule(nr, fm)
		return br.addLocked(ft, nr, &fm.Match, fm.Flags&ofp.FlagCheckOverlap != 0, now, gen, originOf(fm))
	}
	if err := br.resolveTunMD(&fm.Match, fm.Actions); err != nil {
		return nil, err
	}
	if fm.Command < ofp.FlowDelete {
		if err := br.checkActionRefs(ft, fm.Actions); err != nil {
			return nil, err
		}
	}
	// A flow whose actions a modify replaced may have been the last to
	// learn with delete_learned.
	switch fm.Command {
	case ofp.FlowModify, ofp.FlowModifyStrict:
		replaced := br.modify(ft, fm, now, gen)
		if len(replaced) == 0 && fm.ModifyAdds {
			if fm.Table == ofp.TableAll {
				// OVS's add_flow_init: "all tables" adds to table 0.
				add := *fm
				add.Table = 0
				return nil, br.add(ft, &add, now, gen)
			}
			return nil, br.add(ft, fm, now, gen)
		}
		return deleteLearned(ft, replaced, gen), nil
	}
	removed := br.delete(ft, fm, gen)
	return append(removed, deleteLearned(ft, removed, gen)...), nil
}

// addLocked adds nr (from initRule) as flowModLocked an add: the
// bridge's tun_metadata map, meters and groups are checked, and a flow
// it replaces may have been the last to learn with delete_learned. m is
// nr's match, which addLocked resolves (tun_metadata) and sets, or nil
// if nr has its match already (one without tun_metadata fields).
func (br *Bridge) addLocked(ft *flowTables, nr *rule, m *ofp.Match, overlap bool, now time.Duration, gen uint64, o origin) ([]*rule, *ofp.Error) {
	if err := br.resolveTunMD(m, nr.actions()); err != nil {
		return nil, err
	}
	if m != nil {
		nr.setMatch(m)
	}
	nr.setActions(internActions(nr.actions()))
	if err := br.checkActionRefs(ft, nr.actions()); err != nil {
		return nil, err
	}
	old, err := br.insert(ft, nr, overlap, now, gen, o)
	if err != nil || old == nil {
		return nil, err
	}
	return deleteLearned(ft, []*rule{old}, gen), nil
}

// checkActionRefs checks that the meters and groups acts use exist.
func (br *Bridge) checkActionRefs(ft *flowTables, acts []ofp.Action) *ofp.Error {
	if err := br.checkMeters(acts); err != nil {
		return err
	}
	if g, missing := ft.missingGroup(acts); missing {
		return &ofp.Error{Errno: ofp.BadOutGroup, Detail: fmt.Sprintf("group %d does not exist", g)}
	}
	return nil
}

// flowsChanged has installed datapath flows revalidated: soon, and for
// sure before the next Barrier returns.
func (br *Bridge) flowsChanged() {
	br.dirty.Store(true)
	br.backer.dp.RequestRevalidation()
}

// SetFailOpen turns fail-open on or off; installed datapath flows are
// revalidated when it changes.
func (br *Bridge) SetFailOpen(open bool) {
	if br.failOpen.Swap(open) != open {
		br.flowsChanged()
	}
}

// Barrier returns once no datapath flow translated with the tables as
// they were before the latest change remains (OVS answers a BARRIER after
// its revalidators caught up).
func (br *Bridge) Barrier() {
	if br.dirty.Swap(false) {
		br.backer.dp.Revalidate()
	}
}

func (br *Bridge) add(ft *flowTables, fm *ofp.FlowMod, now time.Duration, gen uint64) *ofp.Error {
	_, err := br.insert(ft, newRule(fm), fm.Flags&ofp.FlagCheckOverlap != 0, now, gen, originOf(fm))
	return err
}

// newRule is the flow an add fm, its tun_metadata fields resolved,
// makes, but for what the change that inserts it gives it (insert:
// times, counters, seq).
func newRule(fm *ofp.FlowMod) *rule {
	r := new(rule)
	initRule(r, fm)
	r.setMatch(&fm.Match)
	r.setActions(internActions(r.actions()))
	return r
}

// initRule sets *r, a zero rule, as newRule but for its match.
func initRule(r *rule, fm *ofp.FlowMod) {
	r.table, r.priority, r.cookie = fm.Table, fm.Priority, fm.NewCookie
	r.setActions(fm.Actions)
	r.idle, r.hard, r.flags, r.imp = fm.IdleTimeout, fm.HardTimeout, fm.Flags&ruleFlags, fm.Importance
}

// insert adds nr (from newRule, not yet published) to its table in ft, as
// an add does: refused if overlap (CHECK_OVERLAP) and another flow of its
// priority overlaps it, replacing old, the flow of the same match and
// priority, if any.
func (br *Bridge) insert(ft *flowTables, nr *rule, overlap bool, now time.Duration, gen uint64, o origin) (old *rule, err *ofp.Error) {
	tbl := ft.table(int(nr.table))
	if overlap {
		overlap = false
		m := nr.match()
		tbl.each(func(r *rule) {
			overlap = overlap || !r.sameMatch(&m, nr.priority) && r.overlaps(&m, nr.priority)
		})
		if overlap {
			return nil, &ofp.Error{Errno: ofp.FlowModOverlap, Detail: "overlapping flow"}
		}
	}
	// The table holds a boxed copy (boxRule): nr, the caller's, may
	// stay on its stack.
	b := boxRule(nr, true)
	b.created, b.modified = now, now
	// An add replaces an identical flow in its place; OVS keeps none of
	// the old flow's counters.
	si := tbl.subIndex(b.mask)
	old = tbl.findIn(si, b)
	if old != nil {
		b.seq = old.seq
	} else if tbl.len() >= maxFlowsPerTable {
		return nil, &ofp.Error{Errno: ofp.FlowModTableFull, Detail: "table full"}
	} else {
		b.seq = seqs.Add(1)
	}
	ft.mutable(b.table, gen).putIn(si, b, old, gen)
	br.noteChange(ofp.UpdateAdded, b, 0, nil, o)
	return old, nil
}

// ruleFlags are the flow mod flags a flow keeps and reports, CHECK_OVERLAP
// too (OVS's OFPUTIL_FF_STATE: its dump-flows shows check_overlap).
const ruleFlags = ofp.FlagSendFlowRem | ofp.FlagCheckOverlap | ofp.FlagResetCounts | ofp.FlagNoPktCounts | ofp.FlagNoBytCounts

// maxFlowsPerTable is a table's capacity (OVS's default, 1000000 flows
// as table statistics report).
const maxFlowsPerTable = 1000000

// selected applies a modify or delete's filters to r.
func selected(r *rule, fm *ofp.FlowMod, strict bool) bool {
	if strict {
		if !r.sameMatch(&fm.Match, fm.Priority) {
			return false
		}
	} else if !r.narrower(&fm.Match) {
		return false
	}
	if (r.cookie^fm.Cookie.Value)&fm.Cookie.Mask != 0 {
		return false
	}
	if fm.Command >= ofp.FlowDelete {
		return r.outputsTo(fm.OutPort, fm.OutGroup)
	}
	return true
}

func tablesOf(table uint8) (lo, hi int) {
	if table == ofp.TableAll {
		return 0, NumTables - 1
	}
	return int(table), int(table)
}

// matching returns the rules of table t that fm selects; a strict one
// is found by its hash.
func matching(ft *flowTables, t int, fm *ofp.FlowMod, strict bool) []*rule {
	var rs []*rule
	if strict {
		if r := ft.table(t).find(&fm.Match, fm.Priority); r != nil && selected(r, fm, true) {
			rs = append(rs, r)
		}
		return rs
	}
	ft.table(t).each(func(r *rule) {
		if selected(r, fm, false) {
			rs = append(rs, r)
		}
	})
	return rs
}

// modify changes the actions of the flows fm selects and returns the
// flows it replaced.
func (br *Bridge) modify(ft *flowTables, fm *ofp.FlowMod, now time.Duration, gen uint64) []*rule {
	strict := fm.Command == ofp.FlowModifyStrict
	lo, hi := tablesOf(fm.Table)
	var replaced []*rule
	var acts []ofp.Action
	for t := lo; t <= hi; t++ {
		for _, r := range matching(ft, t, fm, strict) {
			if acts == nil {
				acts = internActions(fm.Actions)
			}
			replaced = append(replaced, r)
			nr := boxRule(r, fm.Flags&ofp.FlagResetCounts != 0)
			nr.setActions(acts)
			nr.modified = now
			if fm.HasNewCookie && fm.NewCookie != ^uint64(0) {
				nr.cookie = fm.NewCookie
			}
			ft.mutable(uint8(t), gen).put(nr, r, gen)
			br.noteChange(ofp.UpdateModified, nr, 0, r, originOf(fm))
		}
	}
	return replaced
}

func (br *Bridge) delete(ft *flowTables, fm *ofp.FlowMod, gen uint64) []*rule {
	strict := fm.Command == ofp.FlowDeleteStrict
	lo, hi := tablesOf(fm.Table)
	var removed []*rule
	for t := lo; t <= hi; t++ {
		if t == hiddenTable {
			continue
		}
		rs := matching(ft, t, fm, strict)
		slices.SortFunc(rs, byRank)
		for _, r := range rs {
			ft.mutable(uint8(t), gen).remove(r, gen)
		}
		removed = append(removed, rs...)
	}
	return removed
}

// sendRemoved reports r's removal if it asked for it. flowMu must be
// held.
func (br *Bridge) sendRemoved(r *rule, reason uint8, now time.Duration) {
	if r.flags&ofp.FlagSendFlowRem == 0 || br.async == nil {
		return
	}
	fs := br.flowStats(r, now)
	br.async.FlowRemoved(&ofp.FlowRemoved{FlowStats: fs, Reason: reason})
}

func (br *Bridge) flowStats(r *rule, now time.Duration) ofp.FlowStats {
	used := time.Duration(r.stats.used.Load())
	if used < r.created {
		used = r.created
	}
	return ofp.FlowStats{Table: r.table, Duration: (now - r.created).Truncate(time.Millisecond), Priority: r.priority,
		IdleTimeout: r.idle, HardTimeout: r.hard, Flags: r.flags, Importance: r.imp, Cookie: r.cookie,
		Packets: r.stats.packets.Load(), Bytes: r.stats.bytes.Load(), IdleAge: (now - used).Truncate(time.Millisecond), HardAge: (now - r.modified).Truncate(time.Millisecond),
		Match: r.match(), Actions: r.actions()}
}

// EachFlow calls fn with every flow of every table, in Flows' order,
// without a slice of all (a FlowStats is 2 KB: 200 MB at 100 000 flows);
// fn must not keep f.
func (br *Bridge) EachFlow(fn func(f *ofp.FlowStats)) {
	ft := br.tables.Load()
	now := br.clock()
	var f ofp.FlowStats
	for t := range NumTables {
		for _, r := range ft.table(t).sorted() {
			f = br.flowStats(r, now)
			fn(&f)
		}
	}
}

// Flows returns every flow of every table, table by table, each in
// priority order.
func (br *Bridge) Flows() []ofp.FlowStats {
	ft := br.tables.Load()
	now := br.clock()
	var out []ofp.FlowStats
	for t := range NumTables {
		for _, r := range ft.table(t).sorted() {
			out = append(out, br.flowStats(r, now))
		}
	}
	return out
}

// expire removes the flows whose idle or hard timeout passed, sending
// FLOW_REMOVED for those that asked; it reports whether any went.
func (br *Bridge) expire() bool {
	var changes []ofp.FlowChange
	defer func() { br.reportChanges(changes) }()
	br.flowMu.Lock()
	defer br.flowMu.Unlock()
	br.startChanges()
	old := br.tables.Load()
	now := br.clock()
	var ft *flowTables
	gen := gens.Add(1)
	type gone struct {
		r      *rule
		reason uint8
	}
	var removed []gone
	for t := range NumTables {
		if old.table(t) == nil || old.table(t).timed == 0 {
			continue
		}
		for _, r := range old.table(t).sorted() {
			reason := -1
			if r.hard != 0 && now-max(r.modified, time.Duration(r.stats.refreshed.Load())) >= time.Duration(r.hard)*time.Second {
				reason = ofp.RemovedHardTimeout
			} else if r.idle != 0 {
				used := max(time.Duration(r.stats.used.Load()), r.created)
				if now-used >= time.Duration(r.idle)*time.Second {
					reason = ofp.RemovedIdleTimeout
				}
			}
			if reason < 0 {
				continue
			}
			if ft == nil {
				c := *old
				ft = &c
			}
			ft.mutable(uint8(t), gen).remove(r, gen)
			removed = append(removed, gone{r, uint8(reason)})
		}
	}
	if ft == nil {
		br.takeChanges() // none
		return false
	}
	var rs []*rule
	for _, g := range removed {
		rs = append(rs, g.r)
	}
	for _, r := range deleteLearned(ft, rs, gen) {
		removed = append(removed, gone{r, ofp.RemovedDelete})
	}
	br.publish(ft)
	br.dirty.Store(true)
	for _, g := range removed {
		br.sendRemoved(g.r, g.reason, now)
		br.flowGone(g.r, g.reason, origin{})
	}
	changes = br.takeChanges()
	return true
}
