package ofp

import (
	"encoding/binary"
	"time"
)

// EncodeHello returns OFPT_HELLO offering versions (version = the highest),
// with a version bitmap element only when the set is not every version
// from 1.0 up, as OVS's ofputil_encode_hello.
func EncodeHello(versions Versions, xid uint32) []byte {
	v := versions.Highest()
	b := newMsg(v, TypeHello, xid, 8)
	if bits := uint32(versions) >> 1; bits&(bits+1) != 0 {
		b = put16(b, helloElemVersionBitmap)
		b = put16(b, 8)
		b = put32(b, uint32(versions))
	}
	return finish(b)
}

// EncodeEchoReply answers an echo request.
func EncodeEchoReply(v Version, xid uint32, data []byte) []byte {
	return finish(append(newMsg(v, TypeEchoReply, xid, len(data)), data...))
}

// EncodeBarrierReply answers a barrier request.
func EncodeBarrierReply(v Version, xid uint32) []byte {
	t := uint8(type11BarrierReply)
	if v == V10 {
		t = type10BarrierReply
	}
	return finish(newMsg(v, t, xid, 0))
}

// EncodeGetConfigReply answers OFPT_GET_CONFIG_REQUEST.
func EncodeGetConfigReply(v Version, xid uint32, c Config) []byte {
	b := newMsg(v, TypeGetConfigReply, xid, 4)
	b = put16(b, c.Flags)
	return finish(put16(b, c.MissSendLen))
}

// EncodeRoleReply answers OFPT_ROLE_REQUEST.
func EncodeRoleReply(v Version, xid uint32, role uint32, generationID uint64) []byte {
	b := newMsg(v, type12RoleReply, xid, 16)
	b = put32(b, role)
	b = pad(b, 4)
	return finish(put64(b, generationID))
}

// Port is ofp_port, with OpenFlow 1.1+'s numbering of ports and features;
// the encoders convert for 1.0.
type Port struct {
	No     uint32
	HWAddr [6]byte
	Name   string
	// Config holds OFPPC_* bits, State OFPPS_* bits.
	Config, State                     uint32
	Curr, Advertised, Supported, Peer uint32
	// CurrSpeed and MaxSpeed are in kbit/s.
	CurrSpeed, MaxSpeed uint32
}

// Port config, state and feature bits (OpenFlow 1.1+).
const (
	PortConfigDown = 1 // OFPPC_PORT_DOWN
	PortStateDown  = 1 // OFPPS_LINK_DOWN
	PortStateLive  = 4 // OFPPS_LIVE, not in 1.0

	Feature10MBHD  = 1 << 0
	Feature10MBFD  = 1 << 1
	Feature100MBHD = 1 << 2
	Feature100MBFD = 1 << 3
	Feature1GBHD   = 1 << 4
	Feature1GBFD   = 1 << 5
	Feature10GBFD  = 1 << 6
	Feature40GBFD  = 1 << 7
	Feature100GBFD = 1 << 8
	Feature1TBFD   = 1 << 9
	FeatureOther   = 1 << 10
	FeatureCopper  = 1 << 11
	FeatureFiber   = 1 << 12
	FeatureAutoneg = 1 << 13
)

// port10 narrows a port number to OpenFlow 1.0's 16 bits: the reserved
// ports 0xffffff00 and up become 0xff00 and up.
func port10(p uint32) uint16 { return uint16(p) }

// features10 converts OpenFlow 1.1+ feature bits to 1.0's, as OVS's
// netdev_port_features_to_ofp10.
func features10(f uint32) uint32 { return f&0x7f | (f>>4)&0xf80 }

func appendPort(b []byte, v Version, p *Port) []byte {
	switch {
	case v == V10:
		b = put16(b, port10(p.No))
		b = append(b, p.HWAddr[:]...)
		b = putString(b, p.Name, 16)
		b = put32(b, p.Config)
		b = put32(b, p.State&^PortStateLive)
		for _, f := range []uint32{p.Curr, p.Advertised, p.Supported, p.Peer} {
			b = put32(b, features10(f))
		}
	case v <= V13:
		b = put32(b, p.No)
		b = pad(b, 4)
		b = append(b, p.HWAddr[:]...)
		b = pad(b, 2)
		b = putString(b, p.Name, 16)
		for _, f := range []uint32{p.Config, p.State, p.Curr, p.Advertised, p.Supported, p.Peer, p.CurrSpeed, p.MaxSpeed} {
			b = put32(b, f)
		}
	default:
		b = put32(b, p.No)
		b = put16(b, 72)
		b = pad(b, 2)
		b = append(b, p.HWAddr[:]...)
		b = pad(b, 2)
		b = putString(b, p.Name, 16)
		b = put32(b, p.Config)
		b = put32(b, p.State)
		// OFPPDPT_ETHERNET property.
		b = put16(b, 0)
		b = put16(b, 32)
		b = pad(b, 4)
		for _, f := range []uint32{p.Curr, p.Advertised, p.Supported, p.Peer, p.CurrSpeed, p.MaxSpeed} {
			b = put32(b, f)
		}
	}
	return b
}

// Features is OFPT_FEATURES_REPLY's content.
type Features struct {
	DatapathID   uint64
	NBuffers     uint32
	NTables      uint8
	Capabilities uint32
	// Actions is OpenFlow 1.0's supported actions bitmap.
	Actions uint32
	// Ports go in the reply up to OpenFlow 1.2; 1.3+ asks PORT_DESC.
	Ports []Port
}

// EncodeFeaturesReply answers OFPT_FEATURES_REQUEST.
func EncodeFeaturesReply(v Version, xid uint32, f *Features) []byte {
	b := newMsg(v, TypeFeaturesReply, xid, 24+len(f.Ports)*64)
	b = put64(b, f.DatapathID)
	b = put32(b, f.NBuffers)
	b = put8(b, f.NTables)
	b = pad(b, 3) // 1.3+: auxiliary_id 0 and 2 bytes of padding
	b = put32(b, f.Capabilities)
	if v == V10 {
		b = put32(b, f.Actions)
	} else {
		b = put32(b, 0)
	}
	if v <= V12 {
		for i := range f.Ports {
			b = appendPort(b, v, &f.Ports[i])
		}
	}
	return finish(b)
}

// Port status reasons.
const (
	PortAdded    = 0
	PortDeleted  = 1
	PortModified = 2
)

// EncodePortStatus returns an OFPT_PORT_STATUS message.
func EncodePortStatus(v Version, reason uint8, p *Port) []byte {
	b := newMsg(v, TypePortStatus, 0, 80)
	b = put8(b, reason)
	b = pad(b, 7)
	return finish(appendPort(b, v, p))
}

// statsReply builds the reply to a statistics request: each entry whole
// in some message, split over several with the MORE flag set on all but
// the last when they exceed MaxLen, as OVS's ofpmp_postappend.
type statsReply struct {
	v      Version
	xid    uint32
	kind   StatsKind
	nx     bool
	msgs   [][]byte
	cur    []byte
	hdrLen int
}

func newStatsReply(v Version, xid uint32, kind StatsKind, nx bool) *statsReply {
	r := &statsReply{v: v, xid: xid, kind: kind, nx: nx}
	r.start()
	return r
}

func (r *statsReply) start() {
	t := uint8(type11MultipartRep)
	if r.v == V10 {
		t = type10StatsReply
	}
	b := newMsg(r.v, t, r.xid, 64)
	if r.nx {
		b = put16(b, uint16(StatsVendor))
	} else {
		b = put16(b, uint16(r.kind))
	}
	b = put16(b, 0)
	if r.v == V10 {
		if r.nx {
			b = put32(b, NiciraVendor)
			b = put32(b, r.nxSub())
			b = pad(b, 4)
		}
	} else {
		b = pad(b, 4)
		if r.nx {
			b = put32(b, NiciraVendor)
			b = put32(b, r.nxSub())
		}
	}
	r.cur, r.hdrLen = b, len(b)
}

// nxSub is the Nicira statistics subtype of an nx reply.
func (r *statsReply) nxSub() uint32 {
	switch r.kind {
	case StatsAggregate:
		return nxStatsAggregate
	case StatsGroup:
		return nxStatsGroup
	case StatsGroupDesc:
		return nxStatsGroupDesc
	case StatsGroupFeatures:
		return nxStatsGroupFeatures
	}
	return nxStatsFlow
}

func (r *statsReply) add(entry []byte) {
	if len(r.cur) > r.hdrLen && len(r.cur)+len(entry) > MaxLen {
		// More follows: set the reply flag (byte after the type).
		binary.BigEndian.PutUint16(r.cur[HeaderLen+2:], StatsFlagMore)
		r.msgs = append(r.msgs, finish(r.cur))
		r.start()
	}
	r.cur = append(r.cur, entry...)
}

func (r *statsReply) done() [][]byte { return append(r.msgs, finish(r.cur)) }

// EncodeEmptyStatsReply answers a statistics request that has nothing to
// report (no groups, no queues).
func EncodeEmptyStatsReply(v Version, xid uint32, kind StatsKind) [][]byte {
	return newStatsReply(v, xid, kind, false).done()
}

// Desc is OFPST_DESC's reply.
type Desc struct {
	Manufacturer, Hardware, Software, Serial, Datapath string
}

// EncodeDescReply answers a DESC request.
func EncodeDescReply(v Version, xid uint32, d *Desc) [][]byte {
	r := newStatsReply(v, xid, StatsDesc, false)
	var b []byte
	b = putString(b, d.Manufacturer, 256)
	b = putString(b, d.Hardware, 256)
	b = putString(b, d.Software, 256)
	b = putString(b, d.Serial, 32)
	b = putString(b, d.Datapath, 256)
	r.add(b)
	return r.done()
}

// EncodePortDescReply answers a PORT_DESC request (OVS's OFPST_PORT_DESC
// extension in 1.0).
func EncodePortDescReply(v Version, xid uint32, ports []Port) [][]byte {
	r := newStatsReply(v, xid, StatsPortDesc, false)
	for i := range ports {
		r.add(appendPort(nil, v, &ports[i]))
	}
	return r.done()
}

// QueueAll is OFPQ_ALL, a QUEUE statistics request for every queue.
const QueueAll = 0xffffffff

// EncodeQueueStatsReply answers a QUEUE statistics request: each queue
// as ofputil_append_queue_stat lays it out in version v (the duration
// from 1.3, all ones when stats' is negative).
func EncodeQueueStatsReply(v Version, xid uint32, stats []QueueStats) [][]byte {
	r := newStatsReply(v, xid, StatsQueue, false)
	for i := range stats {
		s := &stats[i]
		sec, nsec := ^uint32(0), ^uint32(0)
		if s.Duration >= 0 {
			sec, nsec = splitDuration(s.Duration)
		}
		var b []byte
		switch {
		case v == V10:
			b = put16(b, port10(s.Port))
			b = pad(b, 2)
		case v <= V13:
			b = put32(b, s.Port)
		default:
			b = put16(b, 48)
			b = pad(b, 6)
			b = put32(b, s.Port)
		}
		b = put32(b, s.Queue)
		b = put64(b, s.TxBytes)
		b = put64(b, s.TxPackets)
		b = put64(b, s.TxErrors)
		if v >= V13 {
			b = put32(b, sec)
			b = put32(b, nsec)
		}
		r.add(b)
	}
	return r.done()
}

// EncodeQueueGetConfigReply answers OFPT_QUEUE_GET_CONFIG_REQUEST for
// port with the queues qs (Port and Queue), as OVS's
// ofputil_append_queue_get_config_reply: no properties (OVS reports no
// min or max rate), ofp10_packet_queue entries in 1.0 and 1.1,
// ofp12_packet_queue's from 1.2.
func EncodeQueueGetConfigReply(v Version, xid, port uint32, qs []QueueStats) []byte {
	t := uint8(type11QueueGetReq + 1)
	if v == V10 {
		t = type10QueueGetReq + 1
	}
	b := newMsg(v, t, xid, 8+16*len(qs))
	if v == V10 {
		b = put16(b, port10(port))
		b = pad(b, 6)
	} else {
		b = put32(b, port)
		b = pad(b, 4)
	}
	for _, q := range qs {
		if v < V12 {
			b = put32(b, q.Queue)
			b = put16(b, 8)
			b = pad(b, 2)
			continue
		}
		b = put32(b, q.Queue)
		b = put32(b, q.Port)
		b = put16(b, 16)
		b = pad(b, 6)
	}
	return finish(b)
}

// EncodeQueueDescReply answers OFPMP_QUEUE_DESC (1.4+): each queue's
// ofp14_queue_desc, without properties (as OVS's).
func EncodeQueueDescReply(v Version, xid uint32, qs []QueueStats) [][]byte {
	r := newStatsReply(v, xid, StatsQueueDesc, false)
	for _, q := range qs {
		var b []byte
		b = put32(b, q.Port)
		b = put32(b, q.Queue)
		b = put16(b, 16)
		r.add(pad(b, 6))
	}
	return r.done()
}

// Unknown is the value of a counter the switch does not keep (OVS's
// UINT64_MAX, printed "?").
const Unknown = ^uint64(0)

// PortStats is one port's counters.
type PortStats struct {
	No                                         uint32
	RxPackets, TxPackets, RxBytes, TxBytes     uint64
	RxDropped, TxDropped, RxErrors, TxErrors   uint64
	RxFrameErr, RxOverErr, RxCRCErr, Collision uint64
	// Duration is how long the port has existed (1.3+).
	Duration time.Duration
}

func splitDuration(d time.Duration) (uint32, uint32) {
	if d < 0 {
		d = 0
	}
	return uint32(d / time.Second), uint32(d % time.Second)
}

// EncodePortStatsReply answers a PORT statistics request.
func EncodePortStatsReply(v Version, xid uint32, stats []PortStats) [][]byte {
	r := newStatsReply(v, xid, StatsPort, false)
	for i := range stats {
		s := &stats[i]
		sec, nsec := splitDuration(s.Duration)
		var b []byte
		switch {
		case v == V10:
			b = put16(b, port10(s.No))
			b = pad(b, 6)
		case v <= V13:
			b = put32(b, s.No)
			b = pad(b, 4)
		default:
			b = put16(b, 120)
			b = pad(b, 2)
			b = put32(b, s.No)
			b = put32(b, sec)
			b = put32(b, nsec)
		}
		for _, c := range []uint64{s.RxPackets, s.TxPackets, s.RxBytes, s.TxBytes, s.RxDropped, s.TxDropped, s.RxErrors, s.TxErrors} {
			b = put64(b, c)
		}
		if v >= V14 {
			// OFPPSPT_ETHERNET property.
			b = put16(b, 0)
			b = put16(b, 40)
			b = pad(b, 4)
		}
		for _, c := range []uint64{s.RxFrameErr, s.RxOverErr, s.RxCRCErr, s.Collision} {
			b = put64(b, c)
		}
		if v == V13 {
			b = put32(b, sec)
			b = put32(b, nsec)
		}
		r.add(b)
	}
	return r.done()
}

// TableStats is one flow table's counters.
type TableStats struct {
	ID              uint8
	Active          uint32
	Lookup, Matched uint64
	MaxEntries      uint32 // OpenFlow 1.0–1.2
	Wildcards10     uint32 // OpenFlow 1.0
	Miss            uint8  // TableMiss*, OpenFlow 1.1–1.2's config
}

// OpenFlow 1.1 and 1.2 table statistics describe each table's
// capabilities with bitmaps; govs reports OVS's values (ofp-table.c's
// ofputil_put_ofp11_table_stats / ofp12), which ovs-ofctl reads before it
// sends a flow mod in those versions. Only the last table lacks
// goto_table.
const (
	// OFPFMF11_* for every field but OFPFMF11_TYPE (wildcards and match).
	tableMatch11 = 0xfbff
	// OFPIT_GOTO_TABLE, WRITE_METADATA, WRITE_ACTIONS, APPLY_ACTIONS and
	// CLEAR_ACTIONS, as bits by instruction number.
	tableInstructions = 0x3e
	instGotoTable     = 0x02
	// OFPAT11_* but COPY_TTL_OUT and COPY_TTL_IN.
	tableActions11 = 0x1ffe7ff
	// OFPAT12_OUTPUT, SET_MPLS_TTL, DEC_MPLS_TTL, PUSH_VLAN, POP_VLAN,
	// PUSH_MPLS, POP_MPLS, SET_QUEUE, GROUP, SET_NW_TTL, DEC_NW_TTL and
	// SET_FIELD.
	tableActions12 = 1<<0 | 0x7ff<<15
	// OXM fields (OFPXMT12_* bits) but IN_PHY_PORT; set-field also not
	// ETH_TYPE and IP_PROTO.
	tableMatch12     = 1<<36 - 1 - 1<<1
	tableSetFields12 = tableMatch12 - 1<<5 - 1<<10
)

// EncodeTableStatsReply answers a TABLE statistics request; tables are
// numbered from 0, the last one without goto_table.
func EncodeTableStatsReply(v Version, xid uint32, tables []TableStats) [][]byte {
	r := newStatsReply(v, xid, StatsTable, false)
	for i := range tables {
		t := &tables[i]
		inst := uint32(tableInstructions)
		if i == len(tables)-1 {
			inst &^= instGotoTable
		}
		var b []byte
		b = put8(b, t.ID)
		switch v {
		case V10:
			b = pad(b, 3)
			b = pad(b, 32) // name: OVS leaves it empty
			b = put32(b, t.Wildcards10)
			b = put32(b, t.MaxEntries)
		case V11, V12:
			b = pad(b, 7+32) // pad, name
			if v == V11 {
				b = put32(b, tableMatch11) // wildcards
				b = put32(b, tableMatch11) // match
				b = put32(b, inst)
				b = put32(b, tableActions11) // write_actions
				b = put32(b, tableActions11) // apply_actions
			} else {
				b = put64(b, tableMatch12) // match
				b = put64(b, tableMatch12) // wildcards
				b = put32(b, tableActions12)
				b = put32(b, tableActions12)
				b = put64(b, tableSetFields12)
				b = put64(b, tableSetFields12)
				b = put64(b, ^uint64(0)) // metadata_match
				b = put64(b, ^uint64(0)) // metadata_write
				b = put32(b, inst)
			}
			b = put32(b, tableStatsConfig(v, t.Miss))
			b = put32(b, t.MaxEntries)
		default:
			b = pad(b, 3)
		}
		b = put32(b, t.Active)
		b = put64(b, t.Lookup)
		b = put64(b, t.Matched)
		r.add(b)
	}
	return r.done()
}

func age16(d time.Duration) uint16 {
	s := int64(d / time.Second)
	if s < 0 {
		return 0
	}
	return uint16(min(s+1, 0xffff))
}

// EncodeFlowStatsReply answers a FLOW statistics request (NXST_FLOW when
// nx).
func EncodeFlowStatsReply(v Version, xid uint32, nx bool, flows []FlowStats) [][]byte {
	e := NewFlowStatsReply(v, xid, nx)
	for i := range flows {
		e.Add(&flows[i])
	}
	return e.Done()
}

// FlowStatsReply encodes the answer to a FLOW statistics request flow by
// flow, as EncodeFlowStatsReply a slice of flows: a switch need not
// gather all its flows' statistics first (a FlowStats is 2 KB).
type FlowStatsReply struct{ r *statsReply }

// NewFlowStatsReply starts the answer to a FLOW statistics request.
func NewFlowStatsReply(v Version, xid uint32, nx bool) *FlowStatsReply {
	return &FlowStatsReply{newStatsReply(v, xid, StatsFlow, nx)}
}

// Done returns the reply's messages.
func (e *FlowStatsReply) Done() [][]byte { return e.r.done() }

// Add adds f to the reply.
func (e *FlowStatsReply) Add(f *FlowStats) {
	r, v, nx := e.r, e.r.v, e.r.nx
	var b []byte
	switch {
	case nx:
		// nx_flow_stats, nx_match, actions.
		b = appendFlowHead(b, f, nil)
		ml := len(b)
		b = put16(b, 0) // match_len
		b = put16(b, age16(f.IdleAge))
		b = put16(b, age16(f.HardAge))
		b = appendFlowCounters(b, f)
		ms := len(b)
		b = AppendNXMatch(b, &f.Match, true)
		binary.BigEndian.PutUint16(b[ml:], uint16(len(b)-ms))
		b = padTo8(b, ms)
		b = AppendActions(b, V10, f.Actions)
	case v == V10:
		b = appendFlowHead(b, f, appendMatch10(nil, &f.Match))
		b = pad(b, 6)
		b = appendFlowCounters(b, f)
		b = AppendActions(b, v, f.Actions)
	case v <= V14:
		b = appendFlowHead(b, f, nil)
		switch {
		case v == V14:
			b = put16(b, f.Flags)
			b = put16(b, f.Importance)
			b = pad(b, 2)
		case v == V13:
			b = put16(b, f.Flags)
			b = pad(b, 4)
		default:
			b = pad(b, 6)
		}
		b = appendFlowCounters(b, f)
		// OVS's ofputil_append_flow_stats_reply sends an OXM match
		// from OpenFlow 1.1 on: in 1.1 too, not its standard match
		// (no VLAN dumps as vlan_tci=0x0000/0x1fff).
		b = appendOXMMatch(b, &f.Match)
		b = AppendInstructions(b, v, f.Actions)
	default:
		// ofp15_flow_desc: the counters are OXS fields.
		b = put16(b, 0)
		b = pad(b, 2)
		b = put8(b, f.Table)
		b = put8(b, 0) // reason
		b = put16(b, f.Priority)
		b = put16(b, f.IdleTimeout)
		b = put16(b, f.HardTimeout)
		b = put16(b, f.Flags)
		b = put16(b, f.Importance)
		b = put64(b, f.Cookie)
		b = appendOXMMatch(b, &f.Match)
		b = appendOXS(b, f)
		b = AppendInstructions(b, v, f.Actions)
	}
	binary.BigEndian.PutUint16(b, uint16(len(b)))
	r.add(b)
}

// appendFlowHead appends what OpenFlow 1.0–1.4 flow statistics start
// with: length (set by the caller), table, an OpenFlow 1.0 match if any,
// duration, priority and timeouts.
func appendFlowHead(b []byte, f *FlowStats, match10 []byte) []byte {
	sec, nsec := splitDuration(f.Duration)
	b = put16(b, 0)
	b = put8(b, f.Table)
	b = pad(b, 1)
	b = append(b, match10...)
	b = put32(b, sec)
	b = put32(b, nsec)
	b = put16(b, f.Priority)
	b = put16(b, f.IdleTimeout)
	return put16(b, f.HardTimeout)
}

func appendFlowCounters(b []byte, f *FlowStats) []byte {
	b = put64(b, f.Cookie)
	b = put64(b, f.Packets)
	return put64(b, f.Bytes)
}

// OXS stat fields (class OFPXSC_OPENFLOW_BASIC, 0x8002).
const (
	oxsClass       = 0x8002
	oxsDuration    = 0
	oxsIdleTime    = 1
	oxsPacketCount = 4
	oxsByteCount   = 5
)

func appendOXS(b []byte, f *FlowStats) []byte {
	start := len(b)
	b = put16(b, 0) // reserved
	b = put16(b, 0) // length, set below
	field := func(id uint8, val uint64) {
		b = put16(b, oxsClass)
		b = put8(b, id<<1)
		b = put8(b, 8)
		b = put64(b, val)
	}
	sec, nsec := splitDuration(f.Duration)
	field(oxsDuration, uint64(sec)<<32|uint64(nsec))
	sec, nsec = splitDuration(f.IdleAge)
	field(oxsIdleTime, uint64(sec)<<32|uint64(nsec))
	field(oxsPacketCount, f.Packets)
	field(oxsByteCount, f.Bytes)
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
	return pad(b, (8-(len(b)-start)%8)%8)
}
