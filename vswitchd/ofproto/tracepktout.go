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
	if err == nil && o.consistent && inconsistentActions(o.actions, *k) {
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

// inconsistentActions reports whether an action works on a header the
// packet k (as the actions before it leave it) does not have, where OVS's
// ofpacts_check calls inconsistent_match: OpenFlow 1.0's mod_nw_* and
// mod_tp_*, strip_vlan of an untagged packet, fin_timeout of a non-TCP
// one. Only -consistent refuses them; otherwise they are traced and do
// nothing.
func inconsistentActions(acts []ofp.Action, k flow.Key) bool {
	ipAny := func() bool { return k.EthType == flow.EthTypeIPv4 || k.EthType == flow.EthTypeIPv6 }
	for i := range acts {
		a := &acts[i]
		switch a.Type {
		case ofp.ActSetField:
			if !a.Legacy() {
				continue
			}
			switch a.Field.Name {
			case "ip_src", "ip_dst":
				if k.EthType != flow.EthTypeIPv4 {
					return true
				}
			case "nw_tos", "ip_dscp", "nw_ecn", "ip_ecn", "nw_ttl":
				if !ipAny() {
					return true
				}
			case "tcp_src", "tcp_dst", "udp_src", "udp_dst", "sctp_src", "sctp_dst":
				p := k.NwProto
				if !ipAny() || k.NwFrag&flow.FragLater != 0 || p != flow.IPProtoTCP && p != flow.IPProtoUDP && p != flow.IPProtoSCTP {
					return true
				}
			}
		case ofp.ActPopVLAN:
			if k.VLANTCI&flow.VLANPresent == 0 {
				return true
			}
			k.VLANTCI = 0
		case ofp.ActPushVLAN, ofp.ActSetVLANVID, ofp.ActSetVLANPCP:
			k.VLANTCI |= flow.VLANPresent
		case ofp.ActFinTimeout:
			if k.NwProto != flow.IPProtoTCP {
				return true
			}
		case ofp.ActClone, ofp.ActCT:
			if inconsistentActions(a.Nested, k) {
				return true
			}
		}
	}
	return false
}
