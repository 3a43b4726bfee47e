package ofproto

import (
	"fmt"
	"strings"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// freezing is a translation frozen for a recirculation with a hash, as a
// select group that picks by dp_hash needs one (OVS's ctx->freezing with
// recirc_update_dp_hash): the translation stops at the group action, the
// actions left are gathered as it unwinds, and where OVS finishes the
// freeze (the end of the bridge's translation, of a group bucket, of a
// clone, of a check_pkt_larger branch) the datapath actions get the
// hash and a recirculation whose frozen state runs those actions again,
// the group first, on the packet that now has a dp_hash.
type freezing struct {
	hash datapath.Action
	// rule is the rule whose actions froze (the recirculation ID lives
	// with it); here: the action being translated (the group) is the
	// first of the actions left.
	rule *rule
	here bool
	rest []ofp.Action
	// unrolls are OVS's unroll_xlate actions among rest: the table and
	// rule the actions after each ran in.
	unrolls []unrollAt
}

// unrollAt is an unroll_xlate before rest[at] (OVS's
// freeze_put_unroll_xlate): the actions from there on run in table's
// and rule's context (packet-ins report them).
type unrollAt struct {
	at    int
	table uint8
	rule  *rule
}

func (u unrollAt) cookie() uint64 {
	if u.rule == nil {
		return 0
	}
	return u.rule.cookie
}

// freeze stops the translation at the action being translated, to go on
// after a recirculation that computes the packet's dp_hash with hash.
func (x *xlate) freeze(hash datapath.Action) {
	x.freezing = &freezing{hash: hash, rule: x.of.rule, here: true}
}

// unwindFreeze adds to a freeze's actions left the rest of acts, the list
// of table id whose action i stopped for it: that action too if it froze,
// as OVS's do_xlate_actions and freeze_unroll_actions. A goto_table
// becomes a resubmit, which the thawed actions can run.
func (x *xlate) unwindFreeze(acts []ofp.Action, i int, id uint8) {
	fz := x.freezing
	from := i + 1
	if fz.here {
		from, fz.here = i, false
	}
	for _, a := range acts[from:] {
		if a.Type == ofp.ActGotoTable {
			a = ofp.Action{Type: ofp.ActResubmit, Port: ofp.PortInPort, Table: a.Table}
		}
		fz.add(a, id, x.of.rule)
	}
}

// add appends a to the actions left, after an unroll_xlate for table
// and r if a reports them and the last one says others.
func (fz *freezing) add(a ofp.Action, table uint8, r *rule) {
	switch a.Type {
	case ofp.ActOutput, ofp.ActOutputReg, ofp.ActOutputTrunc, ofp.ActGroup, ofp.ActController, ofp.ActDecTTL:
	case ofp.ActResubmit:
		if a.Table != 0xff {
			fz.rest = append(fz.rest, a)
			return
		}
	default:
		fz.rest = append(fz.rest, a)
		return
	}
	u := unrollAt{at: len(fz.rest), table: table, rule: r}
	if n := len(fz.unrolls); n == 0 || fz.unrolls[n-1].table != table || fz.unrolls[n-1].cookie() != u.cookie() {
		fz.unrolls = append(fz.unrolls, u)
	}
	fz.rest = append(fz.rest, a)
}

// finishFreeze completes a freeze, if one is pending (OVS's
// finish_freezing): pending header changes are committed, the state is
// frozen under a recirculation ID that the rule which froze keeps, and
// the datapath hashes the packet and recirculates it.
func (x *xlate) finishFreeze() {
	fz := x.freezing
	if fz == nil {
		return
	}
	x.freezing = nil
	x.commitSets()
	x.commitVLAN()
	f := &x.of.flow
	var key strings.Builder
	for i, u := range fz.unrolls {
		end := len(fz.rest)
		if i+1 < len(fz.unrolls) {
			end = fz.unrolls[i+1].at
		}
		fmt.Fprintf(&key, "%d/%d/%p/%d:", u.at, u.table, u.rule, end)
	}
	key.Write(ofp.AppendActions(nil, ofp.V13, fz.rest))
	st := frozen{br: x.of.in.br.br, inPort: x.of.in.name, ofInPort: f.InPort, regs: f.Regs, metadata: f.Metadata,
		stack: x.of.stack, pktMark: f.PktMark, acts: key.String(), actset: string(ofp.AppendActions(nil, ofp.V13, x.of.actset))}
	id := x.backer.recircs.allocFrozen(st, fz.rule, &frozenActs{acts: fz.rest, unrolls: fz.unrolls, actset: x.of.actset})
	x.acts = append(x.acts, fz.hash, datapath.Recirc(id))
}

// frozenActs are what a freeze left: the actions, their unroll_xlates and
// the action set.
type frozenActs struct {
	acts    []ofp.Action
	unrolls []unrollAt
	actset  []ofp.Action
}

// String formats the actions as OVS's trace of a thawed state does, the
// unroll_xlates among them.
func (fa *frozenActs) String() string {
	var parts []string
	u := 0
	for i := range fa.acts {
		for u < len(fa.unrolls) && fa.unrolls[u].at == i {
			parts = append(parts, fmt.Sprintf("unroll_xlate(table=%d, cookie=%d)", fa.unrolls[u].table, fa.unrolls[u].cookie()))
			u++
		}
		parts = append(parts, ofp.FormatAction(&fa.acts[i], ofp.V13, nil))
	}
	return strings.Join(parts, ",")
}

// thaw runs a freeze's actions, each unroll_xlate restoring its table
// and rule (OVS's xlate_ofpact_unroll_xlate), then the action set. A
// freeze among them takes the rest, with their unroll_xlates.
func (x *xlate) thaw(fa *frozenActs) {
	x.of.actset = append([]ofp.Action(nil), fa.actset...)
	for i, u := range fa.unrolls {
		end := len(fa.acts)
		if i+1 < len(fa.unrolls) {
			end = fa.unrolls[i+1].at
		}
		if x.of.exit || x.paused != nil {
			break
		}
		if fz := x.freezing; fz != nil {
			for _, a := range fa.acts[u.at:end] {
				fz.add(a, u.table, u.rule)
			}
			continue
		}
		if x.trace != nil {
			x.tt.add(traceAction, fmt.Sprintf("unroll_xlate(table=%d, cookie=%d)", u.table, u.cookie()))
			x.tt.add(traceThaw, fmt.Sprintf("restored state: table=%d, cookie=%s", u.table, hexAlt(u.cookie())))
		}
		x.of.rule, x.of.lastTable = u.rule, u.table
		x.ofActions(fa.acts[u.at:end], u.table)
	}
	x.executeActionSet(x.of.lastTable)
}

// hexAlt formats v as C's "%#x" (0 as "0").
func hexAlt(v uint64) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%#x", v)
}
