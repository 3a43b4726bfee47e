package ofproto

import (
	"reflect"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// FlowMonitorSink is an AsyncSink that also reports flow table changes to
// flow monitors (NXST_FLOW_MONITOR and its successors).
type FlowMonitorSink interface {
	// Monitoring reports whether any flow monitor exists: changes are
	// recorded only then.
	Monitoring() bool
	// FlowChanges reports the changes one request (or one expiry run)
	// made, in order. It is called without the bridge's locks held.
	FlowChanges(changes []ofp.FlowChange)
}

// startChanges starts recording the flow changes of one request if
// anyone monitors flows. flowMu must be held.
func (br *Bridge) startChanges() {
	br.changes = br.changes[:0]
	br.recording = br.monitor != nil && br.monitor.Monitoring()
}

// takeChanges returns the recorded changes and stops recording. flowMu
// must be held.
func (br *Bridge) takeChanges() []ofp.FlowChange {
	if !br.recording || len(br.changes) == 0 {
		br.recording = false
		return nil
	}
	cs := br.changes
	br.changes, br.recording = nil, false
	return cs
}

// reportChanges hands changes taken by takeChanges to the monitors,
// without flowMu held.
func (br *Bridge) reportChanges(cs []ofp.FlowChange) {
	if len(cs) > 0 {
		br.monitor.FlowChanges(cs)
	}
}

// noteChange records what happened to r, as OVS's ofmonitor_report: an
// add (a replacing add too) is ADDED, a modify that changes the actions
// or the cookie MODIFIED (old is the flow before), a removal DELETED with its
// reason. o is the request that made the change, zero for the switch's
// own (expiry). flowMu must be held.
func (br *Bridge) noteChange(ev ofp.UpdateEvent, r *rule, reason uint8, old *rule, o origin) {
	if !br.recording {
		return
	}
	var oldActions []ofp.Action
	if old != nil {
		if old.cookie == r.cookie && reflect.DeepEqual(old.actions(), r.actions()) {
			return
		}
		oldActions = old.actions()
	}
	c := ofp.FlowChange{FlowUpdate: ofp.FlowUpdate{Event: ev, Reason: reason, Table: r.table, Priority: r.priority,
		IdleTimeout: r.idle, HardTimeout: r.hard, Cookie: r.cookie, Match: r.match(), Actions: r.actions()}, OldActions: oldActions}
	c.Origin, c.Xid = o.conn, o.xid
	br.changes = append(br.changes, c)
}

// origin is the request behind a change, as flow monitors report it:
// the connection that sent it (ofp.FlowMod's Origin) and its xid; zero
// for the switch's own changes.
type origin struct {
	conn any
	xid  uint32
}

// originOf is fm's origin, zero for nil.
func originOf(fm *ofp.FlowMod) origin {
	if fm == nil {
		return origin{}
	}
	return origin{fm.Origin, fm.Xid}
}

// flowGone reports r's removal: FLOW_REMOVED if it asked, and to flow
// monitors. flowMu must be held.
func (br *Bridge) flowGone(r *rule, reason uint8, o origin) {
	br.noteChange(ofp.UpdateDeleted, r, reason, nil, o)
}

// changeLog is what a request changed, for flow monitors.
type changeLog []ofp.FlowChange
