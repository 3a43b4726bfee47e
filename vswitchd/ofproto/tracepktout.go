package ofproto

import (
	"errors"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
	"github.com/govs/govs/vswitchd/ofproto/ofp/ofptext"
)

// TracePacketOutCommand is `ovs-appctl ofproto/trace-packet-out
// [-consistent] BRIDGE FLOW [OPTIONS] ACTIONS` (or a datapath flow for
// BRIDGE FLOW, as ofproto/trace): the trace of a packet-out of the
// flow's packet with ACTIONS, in ovs-ofctl's action syntax (ports by
// number or reserved name), as OVS 3.1's ofproto_unixctl_trace_actions.
// The actions run where the first table lookup would; none, or "drop",
// traces the tables. The last argument is always the actions. They are
// checked as a packet-out's (a rule's prerequisites of set_field and
// the like, meters and groups that exist; with -consistent also OpenFlow
// 1.0's mod_* of a header the flow does not have), refused with "Bad
// actions: OFPERR". A recirculation (ct with a table) is not followed:
// OVS's trace stops there with a "Recirculation conflict".
func (b *Backer) TracePacketOutCommand(args []string) (string, error) {
	if len(args) < 2 {
		return "", errors.New(`"ofproto/trace-packet-out" command requires at least 2 arguments`)
	}
	acts, err := ofptext.ParseApplyActions(args[len(args)-1], nil)
	if err != nil {
		return "", err
	}
	pos, o, err := parseTraceArgs(args[:len(args)-1], true)
	if err != nil {
		return "", err
	}
	for i := range acts {
		if a := &acts[i]; a.Type == ofp.ActUnsupported && a.Name == "output:TABLE" {
			*a = ofp.Action{Type: ofp.ActOutput, Port: portTable}
		}
	}
	if len(acts) > 0 {
		o.actions = acts
	}
	return b.traceArgs(pos, o)
}

// checkTraceActions checks a traced packet-out's actions against the
// flow's packet k as OVS's ofproto_unixctl_trace_actions does, with its
// error text.
func (br *Bridge) checkTraceActions(o *traceOptions, k *flow.Key) error {
	m := ofp.Match{Flow: ofp.Flow{Key: *k}, Mask: ofp.Flow{Key: flow.Key(flow.Exact())}}
	err := checkActions(o.actions, &m, 0)
	// OVS's ofpacts_check_consistency: an action the flow does not
	// give what it works on leaves only OpenFlow 1.0 usable, fewer
	// protocols than any action text allows.
	if err == nil && o.consistent && ofptext.Inconsistent(o.actions, *k) {
		err = &ofp.Error{Errno: ofp.MatchInconsistent}
	}
	if err == nil {
		err = br.resolveTunMD(nil, o.actions)
	}
	if err == nil {
		err = br.checkActionRefs(br.tables.Load(), o.actions)
	}
	if err != nil {
		return errors.New("Bad actions: " + err.Errno.String())
	}
	return nil
}
