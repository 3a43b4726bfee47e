package ofp

import (
	"encoding/binary"
	"sync"
	"time"
)

// Flow mod commands (ofp_flow_mod_command).
const (
	FlowAdd          = 0
	FlowModify       = 1
	FlowModifyStrict = 2
	FlowDelete       = 3
	FlowDeleteStrict = 4
)

// Flow mod flags (ofp_flow_mod_flags), with 1.2+'s numbers.
const (
	FlagSendFlowRem  = 1 << 0
	FlagCheckOverlap = 1 << 1
	FlagResetCounts  = 1 << 2 // OpenFlow 1.2+ (1.0's is EMERG)
	FlagNoPktCounts  = 1 << 3
	FlagNoBytCounts  = 1 << 4
)

// FlowMod is OFPT_FLOW_MOD or NXT_FLOW_MOD, decoded into OVS's terms
// (struct ofputil_flow_mod).
type FlowMod struct {
	Header
	Match    Match
	Priority uint16
	// Cookie filters modify and delete commands (Mask 0: no filter).
	Cookie Cookie
	// NewCookie is an added flow's cookie and, when HasNewCookie, what
	// a modify sets.
	NewCookie    uint64
	HasNewCookie bool
	// Table is the table, TableAll for every table (delete only).
	Table                    uint8
	Command                  uint8
	IdleTimeout, HardTimeout uint16
	BufferID                 uint32
	OutPort, OutGroup        uint32
	Flags                    uint16
	Importance               uint16
	Actions                  []Action
	// ModifyAdds: a modify that matches no flow adds one (OpenFlow
	// 1.0 and 1.1 semantics).
	ModifyAdds bool
	// Origin is the connection that sent it (not on the wire): flow
	// monitors abbreviate a connection's own changes.
	Origin any
}

// flowMods are FlowMods that nothing refers to any more (ReleaseFlowMod),
// for decoding others: a FlowMod is over a kilobyte, which a switch that
// takes flow mods by the hundred thousand would otherwise allocate and
// collect for each.
var flowMods = sync.Pool{New: func() any { return new(FlowMod) }}

// newFlowMod returns a zero FlowMod with header h.
func newFlowMod(h Header) *FlowMod {
	fm := flowMods.Get().(*FlowMod)
	*fm = FlowMod{Header: h}
	return fm
}

// ReleaseFlowMod hands fm, a decoded flow mod nothing refers to any more
// (what it refers to may live on: its actions, its match's tun_metadata),
// back for Decode to reuse.
func ReleaseFlowMod(fm *FlowMod) { flowMods.Put(fm) }

// FlowModTableID is NXT_FLOW_MOD_TABLE_ID: whether OpenFlow 1.0 flow
// mods carry a table ID in the command's high byte.
type FlowModTableID struct {
	Header
	Enable bool
}

// Nicira message subtypes used for flows.
const (
	nxtFlowMod        = 13
	nxtFlowRemoved    = 14
	nxtFlowModTableID = 15
)

// decodeFlowMod10 decodes ofp10_flow_mod.
func decodeFlowMod10(h Header, body []byte) (Message, error) {
	const fixed = ofp10MatchLen + 24
	if len(body) < fixed {
		return nil, errorf(BadLen, "OFPT_FLOW_MOD", "%d bytes", len(body))
	}
	fm := &FlowMod{Header: h, Match: decodeMatch10(body), ModifyAdds: true, OutGroup: GroupAny}
	b := body[ofp10MatchLen:]
	decodeFlowModHead10(fm, b)
	if binary.BigEndian.Uint32(body)&fw10All == 0 {
		fm.Priority = 0xffff // OpenFlow 1.0: a match without wildcards has the highest priority
	}
	acts, err := DecodeActions(V10, b[24:])
	if err != nil {
		// A flow mod's bad actions are echoed whole, as its bad match
		// (checked against Debian's ovs-vswitchd with ct actions).
		err.Name, err.EchoAll = "OFPT_FLOW_MOD", true
		return nil, err
	}
	fm.Actions = acts
	return fm, nil
}

// decodeFlowModHead10 decodes what ofp10_flow_mod and nx_flow_mod share:
// cookie, command (with a table ID in its high byte), timeouts, priority,
// buffer, out_port and flags.
func decodeFlowModHead10(fm *FlowMod, b []byte) {
	fm.NewCookie, fm.HasNewCookie = binary.BigEndian.Uint64(b), true
	cmd := binary.BigEndian.Uint16(b[8:])
	fm.Command, fm.Table = uint8(cmd), uint8(cmd>>8)
	fm.IdleTimeout = binary.BigEndian.Uint16(b[10:])
	fm.HardTimeout = binary.BigEndian.Uint16(b[12:])
	fm.Priority = binary.BigEndian.Uint16(b[14:])
	fm.BufferID = binary.BigEndian.Uint32(b[16:])
	fm.OutPort = widenPort10(binary.BigEndian.Uint16(b[20:]))
	fm.Flags = flags10(binary.BigEndian.Uint16(b[22:]), fm.Header.Version, fm.Command)
}

// flags10 maps OpenFlow 1.0 flow mod flags to 1.2+'s. Before OpenFlow 1.2
// an add resets the counters and no other command does (OVS's
// ofputil_decode_flow_mod_flags), and bits 3 and 4 are NO_PKT_COUNTS and
// NO_BYT_COUNTS as 1.3 numbers them.
func flags10(f uint16, version Version, cmd uint8) uint16 {
	if cmd == FlowAdd && (version == V10 || version == V11) {
		return f | FlagResetCounts
	}
	return f
}

// decodeNXFlowMod decodes nx_flow_mod (after the Nicira header).
func decodeNXFlowMod(h Header, b []byte) (Message, error) {
	const name = "NXT_FLOW_MOD"
	if len(b) < 32 {
		return nil, errorf(BadLen, name, "%d bytes", len(b))
	}
	fm := newFlowMod(h)
	fm.ModifyAdds, fm.OutGroup = true, GroupAny
	decodeFlowModHead10(fm, b)
	n := int(binary.BigEndian.Uint16(b[24:]))
	rest := b[32:]
	padded := (n + 7) &^ 7
	if padded > len(rest) {
		return nil, errorf(BadLen, name, "match_len %d", n)
	}
	ck, err := decodeNXMatchInto(&fm.Match, rest[:n], true)
	if err != nil {
		// OVS refuses a flow mod's bad match whole, as its other errors
		// (checked against Debian's ovs-vswitchd with ct_* matches).
		err.Name, err.EchoAll = name, true
		return nil, err
	}
	if fm.Command == FlowAdd && ck.Mask != 0 {
		// OVS's ofputil_decode_flow_mod: an add sets a cookie, it
		// cannot match one.
		return nil, &Error{Errno: NXMInvalid, Name: name, Detail: "NXM_NX_COOKIE in an add", EchoAll: true}
	}
	fm.Cookie = ck
	acts, err := DecodeActions(V10, rest[padded:])
	if err != nil {
		err.Name, err.EchoAll = name, true
		return nil, err
	}
	fm.Actions = acts
	return fm, nil
}

// decodeFlowMod11 decodes ofp11_flow_mod (1.1 with a standard match, 1.2+
// with an OXM match).
func decodeFlowMod11(h Header, body []byte) (Message, error) {
	const name = "OFPT_FLOW_MOD"
	if len(body) < 40 {
		return nil, errorf(BadLen, name, "%d bytes", len(body))
	}
	fm := newFlowMod(h)
	fm.Cookie.Value = binary.BigEndian.Uint64(body)
	fm.Cookie.Mask = binary.BigEndian.Uint64(body[8:])
	fm.Table = body[16]
	fm.Command = body[17]
	fm.IdleTimeout = binary.BigEndian.Uint16(body[18:])
	fm.HardTimeout = binary.BigEndian.Uint16(body[20:])
	fm.Priority = binary.BigEndian.Uint16(body[22:])
	fm.BufferID = binary.BigEndian.Uint32(body[24:])
	fm.OutPort = binary.BigEndian.Uint32(body[28:])
	fm.OutGroup = binary.BigEndian.Uint32(body[32:])
	fm.Flags = binary.BigEndian.Uint16(body[36:])
	if h.Version >= V14 {
		fm.Importance = binary.BigEndian.Uint16(body[38:])
	}
	if fm.Table == TableAll && fm.Command != FlowDelete && fm.Command != FlowDeleteStrict {
		return nil, errorf(FlowModBadTableID, name, "table 255 for an add or modify")
	}
	if fm.Command == FlowAdd {
		fm.NewCookie, fm.HasNewCookie = fm.Cookie.Value, true
		fm.Cookie = Cookie{}
	}
	fm.Cookie.Value &= fm.Cookie.Mask
	fm.ModifyAdds = h.Version == V11
	if h.Version == V11 {
		// OpenFlow 1.1 knows SEND_FLOW_REM and CHECK_OVERLAP only, and
		// an add resets the counters (OVS's ofputil_decode_flow_mod_flags).
		if fm.Flags&^(FlagSendFlowRem|FlagCheckOverlap) != 0 {
			return nil, errorf(FlowModBadFlags, name, "flags 0x%x in OpenFlow 1.1", fm.Flags)
		}
		if fm.Command == FlowAdd {
			fm.Flags |= FlagResetCounts
		}
	}
	var rest []byte
	var err *Error
	if len(body) >= 42 && binary.BigEndian.Uint16(body[40:]) == matchTypeStandard {
		fm.Match, rest, err = decodeMatch11(h.Version, body[40:])
	} else {
		rest, err = decodeOXMMatchInto(&fm.Match, h.Version, body[40:])
	}
	if err != nil {
		err.EchoAll = true // as decodeNXFlowMod's
		return nil, named(err, name)
	}
	acts, err := DecodeInstructions(h.Version, rest)
	if err != nil {
		err.EchoAll = true
		return nil, named(err, name)
	}
	fm.Actions = acts
	return fm, nil
}

// PacketOut is OFPT_PACKET_OUT.
type PacketOut struct {
	Header
	BufferID uint32
	InPort   uint32
	Actions  []Action
	Data     []byte
}

func decodePacketOut(h Header, body []byte) (Message, error) {
	const name = "OFPT_PACKET_OUT"
	po := &PacketOut{Header: h}
	var acts []byte
	switch {
	case h.Version == V10:
		if len(body) < 8 {
			return nil, errorf(BadLen, name, "%d bytes", len(body))
		}
		po.BufferID = binary.BigEndian.Uint32(body)
		po.InPort = widenPort10(binary.BigEndian.Uint16(body[4:]))
		n := int(binary.BigEndian.Uint16(body[6:]))
		if 8+n > len(body) {
			return nil, errorf(BadLen, name, "actions_len %d", n)
		}
		acts, po.Data = body[8:8+n], body[8+n:]
	case h.Version < V15:
		if len(body) < 16 {
			return nil, errorf(BadLen, name, "%d bytes", len(body))
		}
		po.BufferID = binary.BigEndian.Uint32(body)
		po.InPort = binary.BigEndian.Uint32(body[4:])
		n := int(binary.BigEndian.Uint16(body[8:]))
		if 16+n > len(body) {
			return nil, errorf(BadLen, name, "actions_len %d", n)
		}
		acts, po.Data = body[16:16+n], body[16+n:]
	default:
		if len(body) < 8 {
			return nil, errorf(BadLen, name, "%d bytes", len(body))
		}
		po.BufferID = binary.BigEndian.Uint32(body)
		n := int(binary.BigEndian.Uint16(body[4:]))
		m, rest, err := decodeOXMMatch(h.Version, body[8:])
		if err != nil {
			err.Name = name
			return nil, err
		}
		po.InPort = PortController
		if m.Mask.InPort != 0 {
			po.InPort = m.Flow.InPort
		}
		if n > len(rest) {
			return nil, errorf(BadLen, name, "actions_len %d", n)
		}
		acts, po.Data = rest[:n], rest[n:]
	}
	a, err := DecodeActions(h.Version, acts)
	if err != nil {
		return nil, named(err, name)
	}
	po.Actions = a
	return po, nil
}

// named sets the name of the refused message in err and returns it.
func named(err *Error, name string) *Error {
	err.Name = name
	return err
}

// FlowStats is one flow of a FLOW statistics reply.
type FlowStats struct {
	Table                    uint8
	Duration                 time.Duration
	Priority                 uint16
	IdleTimeout, HardTimeout uint16
	Flags                    uint16
	Importance               uint16
	Cookie                   uint64
	Packets, Bytes           uint64
	// IdleAge is the time since the flow last matched a packet, HardAge
	// since it was added or last modified.
	IdleAge, HardAge time.Duration
	Match            Match
	Actions          []Action
}

// FlowRemoved is what OFPT_FLOW_REMOVED reports.
type FlowRemoved struct {
	FlowStats
	Reason uint8
}

// Flow removed reasons.
const (
	RemovedIdleTimeout = 0
	RemovedHardTimeout = 1
	RemovedDelete      = 2
)

// EncodeFlowRemoved encodes OFPT_FLOW_REMOVED (NXT_FLOW_REMOVED if nx).
func EncodeFlowRemoved(v Version, nx bool, f *FlowRemoved) []byte {
	sec, nsec := splitDuration(f.Duration)
	switch {
	case nx:
		b := newMsg(v, TypeVendor, 0, 64)
		b = put32(b, NiciraVendor)
		b = put32(b, nxtFlowRemoved)
		b = put64(b, f.Cookie)
		b = put16(b, f.Priority)
		b = put8(b, f.Reason)
		b = put8(b, f.Table+1) // table_id + 1, 0 meaning unknown
		b = put32(b, sec)
		b = put32(b, nsec)
		b = put16(b, f.IdleTimeout)
		mstart := len(b)
		b = put16(b, 0) // match_len
		b = put64(b, f.Packets)
		b = put64(b, f.Bytes)
		ms := len(b)
		b = AppendNXMatch(b, &f.Match, true)
		binary.BigEndian.PutUint16(b[mstart:], uint16(len(b)-ms))
		return finish(padTo8(b, ms))
	case v == V10:
		b := newMsg(v, TypeFlowRemoved, 0, 80)
		b = appendMatch10(b, &f.Match)
		b = put64(b, f.Cookie)
		b = put16(b, f.Priority)
		b = put8(b, f.Reason)
		b = pad(b, 1)
		b = put32(b, sec)
		b = put32(b, nsec)
		b = put16(b, f.IdleTimeout)
		b = pad(b, 2)
		b = put64(b, f.Packets)
		return finish(put64(b, f.Bytes))
	case v < V15:
		b := newMsg(v, TypeFlowRemoved, 0, 80)
		b = put64(b, f.Cookie)
		b = put16(b, f.Priority)
		b = put8(b, f.Reason)
		b = put8(b, f.Table)
		b = put32(b, sec)
		b = put32(b, nsec)
		b = put16(b, f.IdleTimeout)
		b = put16(b, f.HardTimeout)
		b = put64(b, f.Packets)
		b = put64(b, f.Bytes)
		return finish(appendOXMMatch(b, &f.Match))
	}
	b := newMsg(v, TypeFlowRemoved, 0, 80)
	b = put8(b, f.Table)
	b = put8(b, f.Reason)
	b = put16(b, f.Priority)
	b = put16(b, f.IdleTimeout)
	b = put16(b, f.HardTimeout)
	b = put64(b, f.Cookie)
	b = appendOXMMatch(b, &f.Match)
	return finish(appendOXS(b, &f.FlowStats))
}

// EncodeAggregateReply answers an AGGREGATE statistics request
// (NXST_AGGREGATE when nx).
func EncodeAggregateReply(v Version, xid uint32, nx bool, packets, bytes uint64, flows uint32) [][]byte {
	r := newStatsReply(v, xid, StatsAggregate, nx)
	var b []byte
	if v == V15 && !nx {
		// ofp15 aggregate: OXS packet and byte counts and flow count.
		start := len(b)
		b = put16(b, 0)
		b = put16(b, 0)
		b = put16(b, oxsClass)
		b = put8(b, 3<<1) // OXS_OF_FLOW_COUNT
		b = put8(b, 4)
		b = put32(b, flows)
		b = put16(b, oxsClass)
		b = put8(b, oxsPacketCount<<1)
		b = put8(b, 8)
		b = put64(b, packets)
		b = put16(b, oxsClass)
		b = put8(b, oxsByteCount<<1)
		b = put8(b, 8)
		b = put64(b, bytes)
		binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
		b = padTo8(b, start)
	} else {
		b = put64(b, packets)
		b = put64(b, bytes)
		b = put32(b, flows)
		b = pad(b, 4)
	}
	r.add(b)
	return r.done()
}
