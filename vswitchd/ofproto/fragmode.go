package ofproto

import (
	"fmt"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Fragment handling, OVS's switch-wide frag_handling (`ovs-ofctl
// set-frags`, OFPT_SET_CONFIG's OFPC_FRAG_* bits): how the flow tables see
// IP fragments. "normal" (the default): a lookup sees every fragment's L4
// fields (ports, ICMP type and code) as 0, the first fragment's too;
// "nx-match": as they are (0 in later fragments); "drop": fragments are
// dropped before any table. "reassemble" is not supported, as in OVS.

// FragHandling returns the bridge's mode (ofp.FragNormal, FragDrop or
// FragNXMatch).
func (br *Bridge) FragHandling() uint8 { return uint8(br.fragMode.Load()) }

// SetFragHandling sets the bridge's mode, translating installed datapath
// flows again if it changes. A mode govs does not support (reassemble)
// changes nothing and is logged, as by OVS's handle_set_config.
func (br *Bridge) SetFragHandling(mode uint8) {
	switch mode {
	case ofp.FragNormal, ofp.FragDrop, ofp.FragNXMatch:
	default:
		warnRL(br.backer.ofLog, br.backer.ofRL, fmt.Sprintf("%s: unsupported fragment handling mode %s", br.name, ofp.FragName(mode)))
		return
	}
	if uint8(br.fragMode.Swap(uint32(mode))) != mode {
		br.flowsChanged()
	}
}

// fragLookup is lookup for an IP fragment in a mode other than
// "nx-match" (ok false in "drop": no table is consulted). In "normal" the
// tables see the L4 fields as 0; the megaflow still holds the packet's
// own under the bits the lookup examined, as OVS's (nw_frag is always
// examined for IP).
//
//go:noinline
func (x *xlate) fragLookup(id uint8) (r *rule, ok bool) {
	f := &x.of.flow
	switch x.of.in.br.br.fragMode.Load() {
	case ofp.FragDrop:
		return nil, false
	case ofp.FragNormal:
		src, dst := f.TpSrc, f.TpDst
		f.TpSrc, f.TpDst = 0, 0
		r = x.lookupTable(id)
		f.TpSrc, f.TpDst = src, dst
		return r, true
	}
	return x.lookupTable(id), true
}

// isFragment reports whether the flow is an IP fragment.
func isFragment(f *ofp.Flow) bool { return f.NwFrag&flow.FragAny != 0 }

// traceFragDrop is ofproto/trace's table line for a fragment that "drop"
// mode drops (OVS's drop_frags_rule).
func (x *xlate) traceFragDrop(id uint8, first **traceNode) {
	parent := x.tt.open(traceTable, fmt.Sprintf("%2d. Packets are IP fragments and the fragment handling mode is \"drop\".", id))
	if *first == nil {
		*first = (*parent)[len(*parent)-1]
	}
	x.tt.add(traceAction, "drop")
}
