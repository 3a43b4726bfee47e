package ofproto

import (
	"slices"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// checkPktLarger translates check_pkt_larger(N)->dst followed by rest, the
// rest of its action list (OVS's xlate_check_pkt_larger): the packet's
// length is the datapath's to check, so rest is translated twice, with
// dst's bit 1 for the datapath's branch of packets longer than N and 0
// for the other, both branches under one check_pkt_len action. The
// translation ends there: what would follow in enclosing action lists is
// not executed, as in OVS. The mask reads no length: the flow serves
// packets of every length.
func (x *xlate) checkPktLarger(a *ofp.Action, rest []ofp.Action, id uint8) {
	x.commitSets()
	x.commitVLAN()
	saved := *x.of
	base, pkt, cur := x.base, x.pkt, x.cur
	inner := slices.Clone(x.inner)
	mirrored := x.mirrored
	start := len(x.acts)
	branch := func(bit uint64) datapath.Actions {
		ofp.SetRef(&x.of.flow, a.Dst, bit)
		if next, ok := x.ofActions(rest, id); ok && !x.of.exit {
			x.table(next)
		}
		x.finishFreeze()
		acts := slices.Clone(x.acts[start:])
		x.acts = x.acts[:start]
		// What the branch's lookups consulted stays consulted.
		saved.wc, saved.resubmits = x.of.wc, x.of.resubmits
		*x.of = saved
		x.base, x.pkt, x.cur, x.mirrored = base, pkt, cur, mirrored
		x.inner = slices.Clone(inner)
		return acts
	}
	gt := branch(1)
	le := branch(0)
	x.acts = append(x.acts, datapath.CheckPktLen(a.PktLen, gt, le))
}
