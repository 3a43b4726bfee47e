package ofproto

import (
	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
)

// commitMore adds the set action for the TOS byte (the rest of OVS's
// commit_set_nw_action). The TOS is a masked set of the bits the
// translation consulted or wrote, skipped as OVS skips it for a flow
// without an IP protocol.
func (x *xlate) commitMore() {
	k, b := x.key, &x.base
	if (b.EthType == flow.EthTypeIPv4 || b.EthType == flow.EthTypeIPv6) && k.NwProto != 0 && k.NwTOS != b.NwTOS {
		mask := uint8(0xff)
		if x.of != nil && x.of.wc.NwTOS != 0 {
			mask = x.of.wc.NwTOS
		}
		x.acts = append(x.acts, datapath.SetTOS(b.EthType == flow.EthTypeIPv6, k.NwTOS, mask))
	}
}

// commitMeta adds the set actions for the packet's queue and mark (OVS's
// commit_set_priority_action and commit_set_pkt_mark_action, which come
// last, after the VLAN's).
func (x *xlate) commitMeta() {
	if x.of == nil {
		return
	}
	if x.of.flow.SkbPriority != x.skbPriority {
		// Whatever changed it masked it whole, so the set is too.
		x.skbPriority = x.of.flow.SkbPriority
		x.acts = append(x.acts, datapath.SetPriority(x.skbPriority))
	}
	if x.of.flow.PktMark != x.pktMark {
		// Masked by the bits consulted or written, as the TOS.
		x.pktMark = x.of.flow.PktMark
		x.acts = append(x.acts, datapath.SetMark(x.pktMark, x.of.wc.PktMark))
	}
}

// setEgressPktMark makes the packet's pkt_mark a tunnel's egress_pkt_mark,
// as OVS's tnl_port_send: for the output to the tunnel (committed with
// it, before its tnl_push) and for the actions after, which see the new
// mark as a set_field would leave it; the megaflow consults it whole.
func (x *xlate) setEgressPktMark(mark uint32) {
	if x.of != nil {
		x.of.flow.PktMark = mark
		x.of.wc.PktMark = ^uint32(0)
		return
	}
	// A bridge without OpenFlow tables (NORMAL only): commitMeta has no
	// flow to compare, so the set goes in here.
	if x.pktMark != mark {
		x.pktMark = mark
		x.acts = append(x.acts, datapath.SetMark(mark, ^uint32(0)))
	}
}
