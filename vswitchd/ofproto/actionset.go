package ofproto

import (
	"strings"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// The OpenFlow action set (write_actions, clear_actions): the actions a
// walk through the tables writes, kept in ofState.actset in the order
// written, and executed when the walk ends, as OVS's xlate_action_set.

// Action set classes, in execution order (OVS's ofpacts_execute_action_set
// and ovs-actions(7) "Action Sets"): of a slot the last action written
// runs; set-field and move actions all run, in the order written; of the
// final actions only the one of the highest class runs, and without one
// the set does nothing.
const (
	setPopVLAN = iota
	setPushVLAN
	setDecTTL
	numSetSlots

	setSetOrMove = numSetSlots
	// Final actions, lowest priority first.
	setCT       = setSetOrMove + 1
	setCTClear  = setSetOrMove + 2
	setResubmit = setSetOrMove + 3
	setOutput   = setSetOrMove + 4
	setGroup    = setSetOrMove + 5
	setInvalid  = -1
)

// actionSetClass is a's class in an action set, setInvalid for the
// actions an action set may not hold (OVS's
// ofpact_is_allowed_in_actions_set: set_queue, a set action there, but
// neither pop_queue nor enqueue).
func actionSetClass(a *ofp.Action) int {
	switch a.Type {
	case ofp.ActPopVLAN:
		return setPopVLAN
	case ofp.ActPushVLAN:
		return setPushVLAN
	case ofp.ActDecTTL:
		return setDecTTL
	case ofp.ActSetField, ofp.ActMove, ofp.ActSetVLANVID, ofp.ActSetVLANPCP, ofp.ActSetQueue:
		return setSetOrMove
	case ofp.ActOutput, ofp.ActController:
		// output:CONTROLLER decodes as a controller action.
		return setOutput
	case ofp.ActGroup:
		return setGroup
	case ofp.ActResubmit:
		return setResubmit
	case ofp.ActCTClear:
		return setCTClear
	case ofp.ActCT:
		return setCT
	}
	return setInvalid
}

// checkActionSet refuses, as OVS's ofpacts_decode_for_action_set, the
// actions write_actions may not write.
func checkActionSet(acts []ofp.Action) *ofp.Error {
	for i := range acts {
		a := &acts[i]
		if a.Type == ofp.ActUnsupported {
			return &ofp.Error{Errno: a.Errno, Detail: a.Name + " is not supported"}
		}
		// OVS's action sets take an output to CONTROLLER, not the
		// Nicira controller actions.
		if a.NiciraController() || a.Type == ofp.ActController && a.Port != ofp.PortController {
			return &ofp.Error{Errno: ofp.BadActionType, Detail: "disallowed action in action set"}
		}
		if actionSetClass(a) == setInvalid {
			return &ofp.Error{Errno: ofp.BadActionType, Detail: "disallowed action in action set"}
		}
	}
	return nil
}

// actionSetList is the action list an action set executes.
func actionSetList(set []ofp.Action) []ofp.Action {
	var slots [numSetSlots]*ofp.Action
	var final *ofp.Action
	finalClass := setInvalid
	var sets []ofp.Action
	for i := range set {
		a := &set[i]
		switch c := actionSetClass(a); {
		case c < 0:
		case c < numSetSlots:
			slots[c] = a
		case c == setSetOrMove:
			sets = append(sets, *a)
		case c >= finalClass:
			final, finalClass = a, c
		}
	}
	if final == nil {
		return nil
	}
	var list []ofp.Action
	for _, a := range slots {
		if a != nil {
			list = append(list, *a)
		}
	}
	list = append(list, sets...)
	return append(list, *final)
}

// formatActionSet is how ofproto/trace shows an action set.
func formatActionSet(set []ofp.Action) string {
	list := actionSetList(set)
	parts := make([]string, len(list))
	for i := range list {
		parts[i] = formatAction(&list[i])
	}
	return strings.Join(parts, ",")
}

// reportActionSet is OVS's xlate_report_action_set.
func (x *xlate) reportActionSet(verb string) {
	if x.trace == nil {
		return
	}
	if s := formatActionSet(x.of.actset); s != "" {
		x.report("->", "action set %s: %s", verb, s)
	} else {
		x.report("->", "action set %s empty", verb)
	}
}

// writeActions adds acts to the action set. The set is never changed in
// place: a clone's or a bucket's copy of the state keeps the set it
// started with.
func (x *xlate) writeActions(acts []ofp.Action) {
	// OVS's xlate_write_actions__ keeps actset_output.
	for i := 0; i < len(acts) && !x.of.actsetGroup; i++ {
		switch acts[i].Type {
		case ofp.ActOutput:
			x.of.actsetOutput = true
		case ofp.ActGroup:
			x.of.actsetOutput, x.of.actsetGroup = false, true
		}
	}
	set := x.of.actset
	x.of.actset = append(set[:len(set):len(set)], acts...)
	x.reportActionSet("is")
}

// clearActions empties the action set.
func (x *xlate) clearActions() {
	x.reportActionSet("was")
	x.of.actset = nil
	x.of.actsetOutput = false
}

// executeActionSet runs the action set at the end of a walk through the
// tables (OVS's xlate_action_set); table is the last table of the walk.
// After an exit it runs nothing, as Debian's ovs-vswitchd (whose
// ovs-actions(7) says otherwise).
func (x *xlate) executeActionSet(table uint8) {
	if x.freezing != nil {
		return // frozen with the rest (finishFreeze)
	}
	list := actionSetList(x.of.actset)
	x.of.actset = nil
	if len(list) == 0 || x.paused != nil {
		return
	}
	if x.trace != nil {
		defer func(cur *[]*traceNode) { x.tt.cur = cur }(x.tt.open(traceTable, "--. Executing action set:"))
	}
	x.of.endList, x.of.inActionSet = false, true
	x.ofActions(list, table)
	x.of.endList, x.of.inActionSet = false, false
}

// hasPrereqs reports whether the flow has the fields fd's prerequisites
// name: an action set's set-field or move, whose prerequisites no match
// guarantees, does nothing on a packet without the field (OVS's
// mf_are_prereqs_ok at translation). The mask gets the bits consulted.
func (x *xlate) hasPrereqs(fds ...*ofp.Field) bool {
	m := ofp.Match{Flow: x.of.flow}
	m.Mask.EthType, m.Mask.NwProto, m.Mask.VLANTCI = 0xffff, 0xff, 0xffff
	for _, fd := range fds {
		if !fd.Prereqs(&m) {
			x.of.wc.EthType, x.of.wc.NwProto = 0xffff, 0xff
			x.report(">>", "unmet prerequisites for %s, set_field ignored", fd.Name)
			return false
		}
	}
	x.of.wc.EthType, x.of.wc.NwProto = 0xffff, 0xff
	return true
}
