package connmgr

import (
	"slices"
	"time"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Flow monitors (OVS's ofmonitor in ofproto/connmgr.c): a connection asks
// with NXST_FLOW_MONITOR (OpenFlow 1.0–1.2), ONFST_FLOW_MONITOR (1.3) or
// OFPMP_FLOW_MONITOR (1.4+) to hear of the flows that match, first those
// present (the reply to the request), then every change as it happens.

// monitorSet is a connection's flow monitors and the updates waiting to
// be sent to it.
type monitorSet struct {
	byID map[uint32]*ofp.FlowMonitor
	// queue holds encoded updates for writeUpdates (running while
	// writing), queued bytes in all; paused is set from pausedAt until
	// the queue drains.
	queue    [][]byte
	queued   int
	writing  bool
	paused   bool
	pausedAt time.Time
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
		c.eachFlow(func(f *ofp.FlowStats) {
			var flags uint16
			for _, fm := range initial {
				if monitorSelects(fm, f.Table, &f.Match, f.Actions, nil) {
					flags |= fm.Flags
				}
			}
			if flags != 0 {
				updates = append(updates, flowUpdate(ofp.UpdateInitial, f, flags))
			}
		})
	}
	return ofp.EncodeFlowUpdates(c.negotiated(), req.Xid, updates), nil
}

// flowUpdate reports flow f as ev to monitors with flags.
func flowUpdate(ev ofp.UpdateEvent, f *ofp.FlowStats, flags uint16) ofp.FlowUpdate {
	return ofp.FlowUpdate{Event: ev, Table: f.Table, Priority: f.Priority, IdleTimeout: f.IdleTimeout,
		HardTimeout: f.HardTimeout, Cookie: f.Cookie, Match: f.Match, Actions: f.Actions,
		WithActions: flags&ofp.MonitorActions != 0}
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
	c.monitors.queue, c.monitors.queued, c.monitors.paused = nil, 0, false
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

// monitorBacklog is how many bytes of flow updates may wait for a
// connection before its monitors pause, as OVS's ofmonitor_flush (128 kB).
const monitorBacklog = 128 * 1024

// FlowChanges queues for each monitoring connection the changes its
// monitors select, as one reply: in full, or, for the connection's own
// changes unless it asked for them (MonitorOwn), one abbreviated update
// with the xid of the first such request. It never waits for a
// connection: one that falls more than monitorBacklog bytes behind is
// paused (NXT_FLOW_MONITOR_PAUSED) and hears only of deletions until its
// queue drains, then of the flows added or modified meanwhile, then
// NXT_FLOW_MONITOR_RESUMED (OVS's ofmonitor_resume).
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
			if c.monitors.paused && ch.Event != ofp.UpdateDeleted {
				continue
			}
			var flags uint16
			for _, fm := range c.monitors.byID {
				if fm.Flags&eventFlag(ch.Event) != 0 && monitorSelects(fm, ch.Table, &ch.Match, ch.Actions, ch.OldActions) {
					flags |= fm.Flags
				}
			}
			switch {
			case flags == 0:
			case flags&ofp.MonitorOwn != 0 || ch.Origin != c || c.monitors.paused:
				u := ch.FlowUpdate
				u.WithActions = flags&ofp.MonitorActions != 0
				updates = append(updates, u)
			case !abbreviated:
				updates = append(updates, ofp.FlowUpdate{Event: ofp.UpdateAbbrev, Xid: ch.Xid})
				abbreviated = true
			}
		}
		if len(updates) > 0 {
			c.queueUpdatesLocked(ofp.EncodeFlowUpdates(v, 0, updates))
			if !c.monitors.paused && c.monitors.queued > monitorBacklog {
				c.monitors.paused = true
				c.monitors.pausedAt = time.Now()
				c.queueUpdatesLocked([][]byte{ofp.EncodeFlowMonitorPaused(v, false)})
			}
		}
		c.monMu.Unlock()
	}
}

// queueUpdatesLocked queues msgs for the connection's monitor writer,
// starting it if needed. monMu must be held.
func (c *conn) queueUpdatesLocked(msgs [][]byte) {
	for _, b := range msgs {
		c.monitors.queue = append(c.monitors.queue, b)
		c.monitors.queued += len(b)
	}
	if !c.monitors.writing {
		c.monitors.writing = true
		go c.writeUpdates()
	}
}

// writeUpdates sends the queued updates until the queue is empty; a
// paused connection whose queue drained then resumes.
func (c *conn) writeUpdates() {
	for {
		c.monMu.Lock()
		if len(c.monitors.queue) == 0 {
			if !c.monitors.paused || c.monitors.byID == nil {
				c.monitors.writing = false
				c.monMu.Unlock()
				return
			}
			c.resumeLocked()
			c.monMu.Unlock()
			continue
		}
		b := c.monitors.queue[0]
		c.monitors.queue = c.monitors.queue[1:]
		c.monitors.queued -= len(b)
		c.monMu.Unlock()
		if err := c.send(b); err != nil {
			c.monMu.Lock()
			c.monitors.queue, c.monitors.queued, c.monitors.writing = nil, 0, false
			c.monMu.Unlock()
			return
		}
	}
}

// resumeLocked queues what a paused connection missed: the flows its
// monitors select that were added or modified since it paused, as
// ADDED, then NXT_FLOW_MONITOR_RESUMED. monMu must be held.
func (c *conn) resumeLocked() {
	v := c.negotiated()
	since := time.Since(c.monitors.pausedAt)
	var updates []ofp.FlowUpdate
	c.eachFlow(func(f *ofp.FlowStats) {
		if f.HardAge > since {
			return
		}
		var flags uint16
		for _, fm := range c.monitors.byID {
			if fm.Flags&(ofp.MonitorAdd|ofp.MonitorModify) != 0 && monitorSelects(fm, f.Table, &f.Match, f.Actions, nil) {
				flags |= fm.Flags
			}
		}
		if flags != 0 {
			updates = append(updates, flowUpdate(ofp.UpdateAdded, f, flags))
		}
	})
	c.monitors.paused = false
	if len(updates) > 0 {
		c.queueUpdatesLocked(ofp.EncodeFlowUpdates(v, 0, updates))
	}
	c.queueUpdatesLocked([][]byte{ofp.EncodeFlowMonitorPaused(v, true)})
}
