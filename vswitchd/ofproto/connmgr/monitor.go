package connmgr

import (
	"slices"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Flow monitors (OVS's ofmonitor in ofproto/connmgr.c): a connection asks
// with NXST_FLOW_MONITOR (OpenFlow 1.0–1.2), ONFST_FLOW_MONITOR (1.3) or
// OFPMP_FLOW_MONITOR (1.4+) to hear of the flows that match, first those
// present (the reply to the request), then every change as it happens.

// monitorSet is a connection's flow monitors.
type monitorSet struct {
	byID map[uint32]*ofp.FlowMonitor
}

// Monitoring reports whether any connection monitors flows.
func (m *Manager) Monitoring() bool { return m.nMonitors.Load() > 0 }

// flowMonitorRequest adds, modifies or deletes c's monitors and answers
// with the flows present that the new monitors want in full (INITIAL).
// Each request is checked before any changes: an error changes nothing.
func (c *conn) flowMonitorRequest(req *ofp.FlowMonitorRequest) ([][]byte, *ofp.Error) {
	c.monMu.Lock()
	defer c.monMu.Unlock()
	pending := map[uint32]*ofp.FlowMonitor{}
	exists := func(id uint32) bool {
		if fm, ok := pending[id]; ok {
			return fm != nil
		}
		_, ok := c.monitors.byID[id]
		return ok
	}
	for i := range req.Monitors {
		fm := &req.Monitors[i]
		switch fm.Command {
		case ofp.MonitorCmdAdd:
			if exists(fm.ID) {
				return nil, &ofp.Error{Errno: ofp.MonitorExists, Detail: "monitor id exists"}
			}
			pending[fm.ID] = fm
		case ofp.MonitorCmdModify:
			if !exists(fm.ID) {
				return nil, &ofp.Error{Errno: ofp.UnknownMonitor, Detail: "no such monitor"}
			}
			pending[fm.ID] = fm
		case ofp.MonitorCmdDelete:
			if !exists(fm.ID) {
				return nil, &ofp.Error{Errno: ofp.UnknownMonitor, Detail: "no such monitor"}
			}
			pending[fm.ID] = nil
		}
	}
	if c.monitors.byID == nil {
		c.monitors.byID = map[uint32]*ofp.FlowMonitor{}
	}
	var initial []*ofp.FlowMonitor
	for id, fm := range pending {
		_, had := c.monitors.byID[id]
		switch {
		case fm == nil:
			delete(c.monitors.byID, id)
			if had {
				c.m.nMonitors.Add(-1)
			}
		default:
			c.monitors.byID[id] = fm
			if !had {
				c.m.nMonitors.Add(1)
			}
			if fm.Flags&ofp.MonitorInitial != 0 {
				initial = append(initial, fm)
			}
		}
	}
	var updates []ofp.FlowUpdate
	if len(initial) > 0 {
		for _, f := range c.m.src.Flows() {
			var flags uint16
			for _, fm := range initial {
				if monitorSelects(fm, f.Table, &f.Match, f.Actions, nil) {
					flags |= fm.Flags
				}
			}
			if flags == 0 {
				continue
			}
			updates = append(updates, ofp.FlowUpdate{Event: ofp.UpdateInitial, Table: f.Table, Priority: f.Priority,
				IdleTimeout: f.IdleTimeout, HardTimeout: f.HardTimeout, Cookie: f.Cookie, Match: f.Match,
				Actions: f.Actions, WithActions: flags&ofp.MonitorActions != 0})
		}
	}
	return ofp.EncodeFlowUpdates(c.negotiated(), req.Xid, updates), nil
}

// flowMonitorCancel deletes monitor id (NXT/ONFT_FLOW_MONITOR_CANCEL).
func (c *conn) flowMonitorCancel(id uint32) *ofp.Error {
	c.monMu.Lock()
	defer c.monMu.Unlock()
	if _, ok := c.monitors.byID[id]; !ok {
		return &ofp.Error{Errno: ofp.UnknownMonitor, Detail: "no such monitor"}
	}
	delete(c.monitors.byID, id)
	c.m.nMonitors.Add(-1)
	return nil
}

// dropMonitors forgets a closed connection's monitors.
func (c *conn) dropMonitors() {
	c.monMu.Lock()
	defer c.monMu.Unlock()
	c.m.nMonitors.Add(-int32(len(c.monitors.byID)))
	c.monitors.byID = nil
}

// monitorSelects applies a monitor's filters to a flow as OVS's
// ofmonitor_report: its table, an output to its out_port (or out_group)
// in the flow's actions or, for a modify, the actions it had, and a
// match at least as specific as the monitor's.
func monitorSelects(fm *ofp.FlowMonitor, table uint8, match *ofp.Match, acts, old []ofp.Action) bool {
	if fm.Table != ofp.TableAll && fm.Table != table {
		return false
	}
	outputs := func(acts []ofp.Action) bool {
		if fm.OutPort != ofp.PortAny && !slices.Contains(ofp.Outputs(acts), fm.OutPort) {
			return false
		}
		return fm.OutGroup == ofp.GroupAny || slices.Contains(ofp.Groups(acts), fm.OutGroup)
	}
	if !outputs(acts) && (old == nil || !outputs(old)) {
		return false
	}
	return fm.Match.Includes(match)
}

// eventFlag is the monitor flag that asks for an event.
func eventFlag(ev ofp.UpdateEvent) uint16 {
	switch ev {
	case ofp.UpdateDeleted:
		return ofp.MonitorDelete
	case ofp.UpdateModified:
		return ofp.MonitorModify
	}
	return ofp.MonitorAdd
}

// FlowChanges sends each monitoring connection the changes its monitors
// select, as one reply: in full, or, for the connection's own changes
// unless it asked for them (MonitorOwn), one abbreviated update with the
// xid of the first such request.
func (m *Manager) FlowChanges(changes []ofp.FlowChange) {
	for _, c := range m.connList() {
		v := c.negotiated()
		c.monMu.Lock()
		if len(c.monitors.byID) == 0 || v == 0 {
			c.monMu.Unlock()
			continue
		}
		var updates []ofp.FlowUpdate
		abbreviated := false
		for i := range changes {
			ch := &changes[i]
			var flags uint16
			for _, fm := range c.monitors.byID {
				if fm.Flags&eventFlag(ch.Event) != 0 && monitorSelects(fm, ch.Table, &ch.Match, ch.Actions, ch.OldActions) {
					flags |= fm.Flags
				}
			}
			switch {
			case flags == 0:
			case flags&ofp.MonitorOwn != 0 || ch.Origin != c:
				u := ch.FlowUpdate
				u.WithActions = flags&ofp.MonitorActions != 0
				updates = append(updates, u)
			case !abbreviated:
				updates = append(updates, ofp.FlowUpdate{Event: ofp.UpdateAbbrev, Xid: ch.Xid})
				abbreviated = true
			}
		}
		c.monMu.Unlock()
		if len(updates) > 0 {
			c.send(ofp.EncodeFlowUpdates(v, 0, updates)...)
		}
	}
}
