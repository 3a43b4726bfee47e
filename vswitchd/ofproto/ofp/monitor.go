package ofp

import (
	"encoding/binary"
	"fmt"
)

// Flow monitors, as OVS's lib/ofp-monitor.c: Nicira's NXST_FLOW_MONITOR
// (what ovs-ofctl sends in OpenFlow 1.0–1.2), ONF's extension
// ONFST_FLOW_MONITOR in 1.3 (an experimenter multipart with Nicira's
// update layout and OXM matches) and OFPMP_FLOW_MONITOR in 1.4+.

// Flow monitor flags, Nicira's NXFMF_* numbering (ONF's is the same;
// 1.4's OFPFMF_* are translated on decode).
const (
	MonitorInitial uint16 = 1 << iota
	MonitorAdd
	MonitorDelete
	MonitorModify
	MonitorActions
	MonitorOwn
)

const monitorFlagsAll = MonitorInitial | MonitorAdd | MonitorDelete | MonitorModify | MonitorActions | MonitorOwn

// Flow monitor commands (ofp14_flow_monitor_command; NX and ONF requests
// always add).
const (
	MonitorCmdAdd    = 0
	MonitorCmdModify = 1
	MonitorCmdDelete = 2
)

// Message numbers.
const (
	nxStatsFlowMonitor    = 2    // NXST_FLOW_MONITOR
	nxtFlowMonitorCancel  = 21   // NXT_FLOW_MONITOR_CANCEL
	nxtFlowMonitorPaused  = 22   // NXT_FLOW_MONITOR_PAUSED
	nxtFlowMonitorResumed = 23   // NXT_FLOW_MONITOR_RESUMED
	onfFlowMonitor        = 1870 // ONFST_FLOW_MONITOR, ONFT_FLOW_MONITOR_CANCEL
	onftFlowMonitorPaused = 1871
	onftFlowMonitorResume = 1872
	// StatsFlowMonitor is OFPMP_FLOW_MONITOR (1.4+).
	StatsFlowMonitor StatsKind = 16
)

// Flow monitor errors (OFPMOFC_*).
const (
	MonitorExists   Errno = 145 + iota // OFPMOFC_MONITOR_EXISTS; before bundle.go's 160
	UnknownMonitor                     // OFPMOFC_UNKNOWN_MONITOR
	MonitorBadCmd                      // OFPMOFC_BAD_COMMAND (1.4+)
	MonitorBadFlags                    // OFPMOFC_BAD_FLAGS
)

func init() {
	nx := func(typ, code uint16) errCode { return errCode{vendor: NiciraVendor, typ: typ, code: code} }
	std := func(code uint16) errCode { return errCode{typ: 16, code: code} }
	// As `ovs-ofctl print-error` gives them.
	for e, c := range map[Errno]struct {
		name  string
		codes [6]errCode
	}{
		MonitorExists:   {"OFPMOFC_MONITOR_EXISTS", [6]errCode{nx(1, 517), nx(1, 517), nx(6, 0), nx(6, 0), std(1), std(1)}},
		UnknownMonitor:  {"OFPMOFC_UNKNOWN_MONITOR", [6]errCode{nx(1, 519), nx(1, 519), nx(8, 0), nx(8, 0), std(3), std(3)}},
		MonitorBadCmd:   {"OFPMOFC_BAD_COMMAND", [6]errCode{std(4), std(4), std(4), std(4), std(4), std(4)}},
		MonitorBadFlags: {"OFPMOFC_BAD_FLAGS", [6]errCode{nx(1, 518), nx(1, 518), nx(7, 0), nx(7, 0), std(5), std(5)}},
	} {
		errnoExtra[e] = c.name
		errCodes[e] = c.codes
	}
}

// FlowMonitor is one monitor of a flow monitor request.
type FlowMonitor struct {
	ID      uint32
	Command uint8
	// Flags are MonitorInitial etc.
	Flags uint16
	// OutPort (widened to 32 bits) and OutGroup filter on the flows'
	// outputs (PortAny, GroupAny: no filter).
	OutPort, OutGroup uint32
	Table             uint8
	Match             Match
}

// FlowMonitorRequest is NXST_FLOW_MONITOR, ONFST_FLOW_MONITOR or
// OFPMP_FLOW_MONITOR: one or more monitors to add (or, in 1.4+, to
// modify or delete).
type FlowMonitorRequest struct {
	Header
	Monitors []FlowMonitor
}

// FlowMonitorCancel is NXT_FLOW_MONITOR_CANCEL / ONFT_FLOW_MONITOR_CANCEL.
type FlowMonitorCancel struct {
	Header
	ID uint32
}

// decodeMonitors decodes a flow monitor request's entries, each 16 bytes
// then a match, with entry, which returns the monitor and what follows it.
func decodeMonitors(h Header, body []byte, name string, entry func(b []byte) (FlowMonitor, []byte, *Error)) (Message, error) {
	m := &FlowMonitorRequest{Header: h}
	for len(body) > 0 {
		if len(body) < 16 {
			return nil, errorf(BadLen, name, "%d leftover bytes", len(body))
		}
		fm, rest, err := entry(body)
		if err != nil {
			return nil, named(err, name)
		}
		m.Monitors = append(m.Monitors, fm)
		body = rest
	}
	return m, nil
}

// decodeNXFlowMonitor decodes the nx_flow_monitor_request entries of an
// NXST_FLOW_MONITOR request: id, flags, out_port, match_len, table_id,
// zeros[5], then an NXM match padded to 8 bytes.
func decodeNXFlowMonitor(h Header, body []byte) (Message, error) {
	return decodeMonitors(h, body, "NXST_FLOW_MONITOR request", func(b []byte) (FlowMonitor, []byte, *Error) {
		fm := FlowMonitor{ID: binary.BigEndian.Uint32(b), Flags: binary.BigEndian.Uint16(b[4:]),
			OutPort: widenPort10(binary.BigEndian.Uint16(b[6:])), OutGroup: GroupAny, Table: b[10]}
		if err := checkMonitorFlags(fm.Flags, b[11:16]); err != nil {
			return fm, nil, err
		}
		n := int(binary.BigEndian.Uint16(b[8:]))
		padded := (n + 7) &^ 7
		if len(b) < 16+padded {
			return fm, nil, &Error{Errno: BadLen, Detail: fmt.Sprintf("match_len %d with %d bytes", n, len(b)-16)}
		}
		match, err := DecodeNXMatch(b[16 : 16+n])
		fm.Match = match
		return fm, b[16+padded:], err
	})
}

// decodeONFFlowMonitor decodes ONFST_FLOW_MONITOR's entries (as OVS
// encodes them): id, flags, match_len, out_port (32 bits), table_id,
// zeros[3], then an OXM ofp_match.
func decodeONFFlowMonitor(h Header, body []byte) (Message, error) {
	return decodeMonitors(h, body, "ONFST_FLOW_MONITOR request", func(b []byte) (FlowMonitor, []byte, *Error) {
		fm := FlowMonitor{ID: binary.BigEndian.Uint32(b), Flags: binary.BigEndian.Uint16(b[4:]),
			OutPort: binary.BigEndian.Uint32(b[8:]), OutGroup: GroupAny, Table: b[12]}
		if err := checkMonitorFlags(fm.Flags, b[13:16]); err != nil {
			return fm, nil, err
		}
		match, rest, err := decodeOXMMatch(h.Version, b[16:])
		fm.Match = match
		return fm, rest, err
	})
}

// OpenFlow 1.4's flow monitor flags (OFPFMF_*).
const (
	ofpfmfInitial      = 1 << 0
	ofpfmfAdd          = 1 << 1
	ofpfmfRemoved      = 1 << 2
	ofpfmfModify       = 1 << 3
	ofpfmfInstructions = 1 << 4
	ofpfmfNoAbbrev     = 1 << 5
	ofpfmfOnlyOwn      = 1 << 6
	ofpfmfAll          = 1<<7 - 1
)

// decodeFlowMonitor14 decodes OFPMP_FLOW_MONITOR's
// ofp14_flow_monitor_request entries: monitor_id, out_port, out_group,
// flags, table_id, command, then an OXM ofp_match.
func decodeFlowMonitor14(h Header, body []byte) (Message, error) {
	return decodeMonitors(h, body, "OFPMP_FLOW_MONITOR request", func(b []byte) (FlowMonitor, []byte, *Error) {
		fm := FlowMonitor{ID: binary.BigEndian.Uint32(b), OutPort: binary.BigEndian.Uint32(b[4:]),
			OutGroup: binary.BigEndian.Uint32(b[8:]), Table: b[14], Command: b[15]}
		flags := binary.BigEndian.Uint16(b[12:])
		match, rest, err := decodeOXMMatch(h.Version, b[16:])
		fm.Match = match
		switch {
		case err != nil || fm.Command == MonitorCmdDelete:
			return fm, rest, err
		case fm.Command > MonitorCmdDelete:
			return fm, nil, &Error{Errno: MonitorBadCmd, Detail: fmt.Sprintf("command %d", fm.Command)}
		case flags&(ofpfmfAdd|ofpfmfRemoved|ofpfmfModify) == 0 || flags&^(ofpfmfAll&^ofpfmfNoAbbrev) != 0:
			// OFPFMF_NO_ABBREV is refused, as OVS's decoder does.
			return fm, nil, &Error{Errno: MonitorBadFlags, Detail: fmt.Sprintf("flags %#x", flags)}
		}
		for _, f := range [...][2]uint16{{ofpfmfInitial, MonitorInitial}, {ofpfmfAdd, MonitorAdd},
			{ofpfmfRemoved, MonitorDelete}, {ofpfmfModify, MonitorModify},
			{ofpfmfInstructions, MonitorActions}, {ofpfmfOnlyOwn, MonitorOwn}} {
			if flags&f[0] != 0 {
				fm.Flags |= f[1]
			}
		}
		return fm, rest, nil
	})
}

// checkMonitorFlags checks a Nicira or ONF monitor's flags and padding.
func checkMonitorFlags(flags uint16, zeros []byte) *Error {
	if flags&(MonitorAdd|MonitorDelete|MonitorModify) == 0 || flags&^monitorFlagsAll != 0 {
		return &Error{Errno: MonitorBadFlags, Detail: fmt.Sprintf("flags %#x", flags)}
	}
	if !isZero(zeros) {
		return &Error{Errno: MustBeZero, Detail: "nonzero padding"}
	}
	return nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func decodeFlowMonitorCancel(h Header, body []byte, name string) (Message, error) {
	if len(body) != 4 {
		return nil, errorf(BadLen, name, "%d bytes", len(body))
	}
	return &FlowMonitorCancel{Header: h, ID: binary.BigEndian.Uint32(body)}, nil
}

// UpdateEvent is what a flow update reports.
type UpdateEvent uint8

const (
	UpdateInitial UpdateEvent = iota // a flow present when the monitor started
	UpdateAdded
	UpdateDeleted
	UpdateModified
	UpdateAbbrev // a change the monitoring connection made itself, by its xid
)

// FlowUpdate is one entry of a flow monitor reply.
type FlowUpdate struct {
	Event UpdateEvent
	// Reason is a deleted flow's (RemovedDelete etc.).
	Reason                   uint8
	Table                    uint8
	Priority                 uint16
	IdleTimeout, HardTimeout uint16
	Cookie                   uint64
	Match                    Match
	// Actions are included when WithActions.
	Actions     []Action
	WithActions bool
	// Xid is an abbreviated update's: the request that made the change.
	Xid uint32
}

// nxEvent is an update's NXFME_* number (also ONF's); 1.4's OFPFME_*
// are UpdateEvent's own.
func (e UpdateEvent) nxEvent() uint16 {
	switch e {
	case UpdateDeleted:
		return 1
	case UpdateModified:
		return 2
	case UpdateAbbrev:
		return 3
	}
	return 0 // NXFME_ADDED, initial flows too
}

// EncodeFlowUpdates encodes updates as flow monitor replies of version v
// with xid (the request's for the initial flows, 0 for later changes),
// split into parts of at most MaxLen bytes. No updates still make one
// (empty) reply.
func EncodeFlowUpdates(v Version, xid uint32, updates []FlowUpdate) [][]byte {
	var msgs [][]byte
	var cur []byte
	hdrLen := 0
	start := func() {
		t := uint8(type11MultipartRep)
		if v == V10 {
			t = type10StatsReply
		}
		b := newMsg(v, t, xid, 256)
		switch {
		case v >= V14:
			b = put16(b, uint16(StatsFlowMonitor))
			b = put16(b, 0)
			b = pad(b, 4)
		case v == V13:
			b = put16(b, uint16(StatsVendor))
			b = put16(b, 0)
			b = pad(b, 4)
			b = put32(b, ONFVendor)
			b = put32(b, onfFlowMonitor)
		case v == V10:
			b = put16(b, uint16(StatsVendor))
			b = put16(b, 0)
			b = put32(b, NiciraVendor)
			b = put32(b, nxStatsFlowMonitor)
			b = pad(b, 4)
		default:
			b = put16(b, uint16(StatsVendor))
			b = put16(b, 0)
			b = pad(b, 4)
			b = put32(b, NiciraVendor)
			b = put32(b, nxStatsFlowMonitor)
		}
		cur, hdrLen = b, len(b)
	}
	start()
	for i := range updates {
		e := appendFlowUpdate(nil, v, &updates[i])
		if len(cur) > hdrLen && len(cur)+len(e) > MaxLen {
			binary.BigEndian.PutUint16(cur[HeaderLen+2:], StatsFlagMore)
			msgs = append(msgs, finish(cur))
			start()
		}
		cur = append(cur, e...)
	}
	return append(msgs, finish(cur))
}

func appendFlowUpdate(b []byte, v Version, u *FlowUpdate) []byte {
	var acts []Action
	if u.WithActions {
		acts = u.Actions
	}
	if v >= V14 {
		// ofp_flow_update_full: length, event, table_id, reason,
		// idle_timeout, hard_timeout, priority, zeros[4], cookie, match,
		// instructions; ofp_flow_update_abbrev: length, event, xid.
		if u.Event == UpdateAbbrev {
			return put32(put16(put16(b, 8), uint16(u.Event)), u.Xid)
		}
		b = put16(b, 0)
		b = put16(b, uint16(u.Event))
		b = put8(b, u.Table)
		b = put8(b, u.Reason)
		b = put16(b, u.IdleTimeout)
		b = put16(b, u.HardTimeout)
		b = put16(b, u.Priority)
		b = pad(b, 4)
		b = put64(b, u.Cookie)
		b = appendOXMMatch(b, &u.Match)
		b = AppendInstructions(b, v, acts)
		binary.BigEndian.PutUint16(b, uint16(len(b)))
		return b
	}
	// nx_flow_update_full: length, event, reason, priority, idle_timeout,
	// hard_timeout, match_len, table_id, pad, cookie, then the match (NXM;
	// in 1.3 an OXM ofp_match) and actions (instructions in 1.3);
	// nx_flow_update_abbrev: length, event, xid.
	if u.Event == UpdateAbbrev {
		return put32(put16(put16(b, 8), u.Event.nxEvent()), u.Xid)
	}
	b = put16(b, 0)
	b = put16(b, u.Event.nxEvent())
	b = put16(b, uint16(u.Reason))
	b = put16(b, u.Priority)
	b = put16(b, u.IdleTimeout)
	b = put16(b, u.HardTimeout)
	b = put16(b, 0) // match_len
	b = put8(b, u.Table)
	b = pad(b, 1)
	b = put64(b, u.Cookie)
	ms := len(b)
	if v == V13 {
		b = appendOXMMatch(b, &u.Match)
		binary.BigEndian.PutUint16(b[12:], binary.BigEndian.Uint16(b[ms+2:]))
		b = AppendInstructions(b, v, acts)
	} else {
		b = AppendNXMatch(b, &u.Match, true)
		binary.BigEndian.PutUint16(b[12:], uint16(len(b)-ms))
		b = padTo8(b, ms)
		b = AppendActions(b, v, acts)
	}
	binary.BigEndian.PutUint16(b, uint16(len(b)))
	return b
}

// EncodeFlowMonitorPaused is what tells a monitoring connection that
// updates stopped (resumed false) or restarted: NXT_FLOW_MONITOR_PAUSED /
// RESUMED, ONF's in 1.3, an OFPMP_FLOW_MONITOR reply with an
// OFPFME_PAUSED / RESUMED event in 1.4+.
func EncodeFlowMonitorPaused(v Version, resumed bool) []byte {
	switch {
	case v >= V14:
		ev := uint16(5) // OFPFME_PAUSED
		if resumed {
			ev = 6
		}
		b := newMsg(v, type11MultipartRep, 0, 24)
		b = put16(b, uint16(StatsFlowMonitor))
		b = put16(b, 0)
		b = pad(b, 4)
		b = put16(b, 8)
		b = put16(b, ev)
		return finish(pad(b, 4))
	case v == V13:
		sub := uint32(onftFlowMonitorPaused)
		if resumed {
			sub = onftFlowMonitorResume
		}
		return finish(put32(put32(newMsg(v, TypeVendor, 0, 8), ONFVendor), sub))
	}
	sub := uint32(nxtFlowMonitorPaused)
	if resumed {
		sub = nxtFlowMonitorResumed
	}
	return finish(put32(put32(newMsg(v, TypeVendor, 0, 8), NiciraVendor), sub))
}

// FlowChange is one flow table change as the switch reports it to flow
// monitors: the flow after the change (with its actions), the actions a
// modified flow had before, and the connection (FlowMod.Origin) and
// request xid that made it (Origin nil: the switch itself).
type FlowChange struct {
	FlowUpdate
	OldActions []Action
	Origin     any
	Xid        uint32
}
