package ofproto

import (
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
	// rule and table are the rule whose actions froze and its table;
	// here: the action being translated (the group) is the first of
	// the actions left.
	rule  *rule
	table uint8
	here  bool
	rest  []ofp.Action
}

// freeze stops the translation at the action being translated, to go on
// after a recirculation that computes the packet's dp_hash with hash.
func (x *xlate) freeze(hash datapath.Action, table uint8) {
	x.freezing = &freezing{hash: hash, rule: x.of.rule, table: table, here: true}
}

// unwindFreeze adds to a freeze's actions left the rest of acts, the list
// whose action i stopped for it: that action too if it froze, as OVS's
// do_xlate_actions and freeze_unroll_actions. A goto_table becomes a
// resubmit, which the thawed actions can run.
func (x *xlate) unwindFreeze(acts []ofp.Action, i int) {
	fz := x.freezing
	from := i + 1
	if fz.here {
		from, fz.here = i, false
	}
	for _, a := range acts[from:] {
		if a.Type == ofp.ActGotoTable {
			a = ofp.Action{Type: ofp.ActResubmit, Port: ofp.PortInPort, Table: a.Table}
		}
		fz.rest = append(fz.rest, a)
	}
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
	st := frozen{br: x.of.in.br.br, inPort: x.of.in.name, ofInPort: f.InPort, regs: f.Regs, metadata: f.Metadata,
		stack: x.of.stack, pktMark: f.PktMark, rule: fz.rule, actTable: fz.table,
		acts: string(ofp.AppendActions(nil, ofp.V13, fz.rest)), actset: string(ofp.AppendActions(nil, ofp.V13, x.of.actset))}
	id := x.backer.recircs.allocFrozen(st, fz.rule, fz.rest, x.of.actset)
	x.acts = append(x.acts, fz.hash, datapath.Recirc(id))
}
