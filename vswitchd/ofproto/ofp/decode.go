package ofp

import (
	"encoding/binary"
)

// Message is a decoded OpenFlow message: one of the pointer types below.
type Message interface {
	Hdr() Header
}

func (h Header) Hdr() Header { return h }

// Hello is OFPT_HELLO. Versions is the sender's version bitmap if it sent
// one, else every version up to Header.Version.
type Hello struct {
	Header
	Versions Versions
}

// ErrorMsg is an OFPT_ERROR received.
type ErrorMsg struct {
	Header
	Type, Code uint16
	Data       []byte
}

// EchoRequest and EchoReply are OFPT_ECHO_*; Data is echoed back.
type EchoRequest struct {
	Header
	Data []byte
}

type EchoReply struct {
	Header
	Data []byte
}

// FeaturesRequest is OFPT_FEATURES_REQUEST.
type FeaturesRequest struct{ Header }

// GetConfigRequest is OFPT_GET_CONFIG_REQUEST.
type GetConfigRequest struct{ Header }

// SetConfig is OFPT_SET_CONFIG.
type SetConfig struct {
	Header
	Config
}

// Config is ofp_switch_config's body.
type Config struct {
	// Flags are the OFPC_FRAG_* fragment handling bits.
	Flags       uint16
	MissSendLen uint16
}

// Fragment handling modes (ofp_switch_config.flags & OFPC_FRAG_MASK).
const (
	FragNormal = 0
	FragDrop   = 1
	FragReasm  = 2
	// FragNXMatch is Nicira's mode, the rest of FragMask.
	FragNXMatch = 3
	FragMask    = 3
)

// FragName names a fragment handling mode as OVS's
// ofputil_frag_handling_to_string.
func FragName(mode uint8) string {
	return [...]string{"normal", "drop", "reassemble", "nx-match"}[mode&FragMask]
}

// BarrierRequest is OFPT_BARRIER_REQUEST.
type BarrierRequest struct{ Header }

// QueueGetConfigRequest is OFPT_QUEUE_GET_CONFIG_REQUEST (OpenFlow
// 1.0–1.3): the queues of Port (PortAny: every port's, from 1.1).
type QueueGetConfigRequest struct {
	Header
	Port uint32
}

// RoleRequest is OFPT_ROLE_REQUEST (OpenFlow 1.2+).
type RoleRequest struct {
	Header
	Role         uint32
	GenerationID uint64
	// NX is set for NXT_ROLE_REQUEST (any version, no generation ID),
	// whose role is converted to OF1.2's numbering.
	NX bool
}

// Controller roles (ofp12_controller_role).
const (
	RoleNoChange = 0
	RoleEqual    = 1
	RoleMaster   = 2
	RoleSlave    = 3
)

// Nicira vendor messages.
const (
	NiciraVendor = 0x00002320

	nxtSetFlowFormat     = 12
	nxtSetPacketInFormat = 16
)

// SetFlowFormat is NXT_SET_FLOW_FORMAT: Format is NXFF_OPENFLOW10 (0) or
// NXFF_NXM (2).
type SetFlowFormat struct {
	Header
	Format uint32
}

// Flow formats.
const (
	FlowFormatOpenFlow10 = 0
	FlowFormatNXM        = 2
)

// SetPacketInFormat is NXT_SET_PACKET_IN_FORMAT: Format is
// NXPIF_STANDARD (0), NXPIF_NXT_PACKET_IN (1) or NXPIF_NXT_PACKET_IN2 (2).
type SetPacketInFormat struct {
	Header
	Format uint32
}

// StatsKind is a statistics (multipart) request type, with OpenFlow
// 1.1+'s numbers (OFPMP_*) for standard ones.
type StatsKind uint16

const (
	StatsDesc      StatsKind = 0
	StatsFlow      StatsKind = 1
	StatsAggregate StatsKind = 2
	StatsTable     StatsKind = 3
	StatsPort      StatsKind = 4
	StatsQueue     StatsKind = 5
	StatsGroup     StatsKind = 6
	StatsGroupDesc StatsKind = 7
	// StatsTableFeatures is OFPMP_TABLE_FEATURES (1.3+).
	StatsTableFeatures StatsKind = 12
	StatsPortDesc      StatsKind = 13
	// StatsQueueDesc is OFPMP_QUEUE_DESC (1.4+), what
	// OFPT_QUEUE_GET_CONFIG_REQUEST was before.
	StatsQueueDesc StatsKind = 15
	// StatsVendor is OFPST_VENDOR / OFPMP_EXPERIMENTER.
	StatsVendor StatsKind = 0xffff
)

var statsNames = map[StatsKind]string{0: "DESC", 1: "FLOW", 2: "AGGREGATE", 3: "TABLE", 4: "PORT", 5: "QUEUE",
	6: "GROUP", 7: "GROUP_DESC", 8: "GROUP_FEATURES", 9: "METER", 10: "METER_CONFIG", 11: "METER_FEATURES",
	12: "TABLE_FEATURES", 13: "PORT_DESC", 14: "TABLE_DESC", 15: "QUEUE_DESC", 16: "FLOW_MONITOR", 0xffff: "VENDOR"}

func statsName(v Version, k StatsKind) string {
	prefix := "OFPMP_"
	if v == V10 {
		prefix = "OFPST_"
	}
	if n, ok := statsNames[k]; ok {
		return prefix + n + " request"
	}
	return prefix + "REQUEST"
}

// Port numbers with a meaning of their own, as OpenFlow 1.1+ spells them
// (1.0's 16-bit values are widened: 0xff00 and up map to 0xffffff00 up).
const (
	PortMax        = 0xffffff00
	PortInPort     = 0xfffffff8
	PortNormal     = 0xfffffffa
	PortFlood      = 0xfffffffb
	PortAll        = 0xfffffffc
	PortController = 0xfffffffd
	PortLocal      = 0xfffffffe
	PortAny        = 0xffffffff // OFPP_ANY, OpenFlow 1.0's OFPP_NONE
)

// GroupAny is OFPG_ANY.
const GroupAny = 0xffffffff

// TableAll is a flow statistics request's "all tables".
const TableAll = 0xff

// StatsRequest is a statistics (OpenFlow 1.0) or multipart (1.1+)
// request govs answers. Only the fields of its Kind are set.
type StatsRequest struct {
	Header
	Kind StatsKind
	// NX is set for a Nicira vendor statistics request (NXST_FLOW).
	NX bool
	// Port is the port of PORT, PORT_DESC and QUEUE requests (PortAny
	// for all), widened to 32 bits.
	Port uint32
	// Queue is a QUEUE request's queue (0xffffffff for all); Group a
	// GROUP or GROUP_DESC request's group (GroupAny or OFPG_ALL for all).
	Queue, Group uint32
	// Meter is a METER or METER_CONFIG request's meter (MeterAll for
	// all).
	Meter uint32

	// A FLOW or AGGREGATE request's filters: a flow is selected if its
	// match is at least as specific as Match.
	Table              uint8
	OutPort, OutGroup  uint32
	Cookie, CookieMask uint64
	Match              Match
}

// Decode decodes one complete message (as Split returns it) into a typed
// message, or returns an *Error to answer with OFPT_ERROR.
func Decode(b []byte) (Message, error) {
	if len(b) < HeaderLen {
		return nil, errorf(BadLen, "", "message of %d bytes", len(b))
	}
	h := ParseHeader(b)
	if int(h.Length) != len(b) {
		return nil, errorf(BadLen, "", "header says %d bytes, message has %d", h.Length, len(b))
	}
	body := b[HeaderLen:]
	v := h.Version
	if h.Type == TypeHello {
		return decodeHello(h, body)
	}
	if v < MinVersion || v > MaxVersion {
		return nil, errorf(BadVersion, "", "version 0x%02x", uint8(v))
	}
	name := typeName(v, h.Type)
	fixed := func(n int) error {
		if len(body) != n {
			return errorf(BadLen, name, "%d bytes of body, want %d", len(body), n)
		}
		return nil
	}
	switch {
	case h.Type == TypeError:
		if len(body) < 4 {
			return nil, errorf(BadLen, name, "%d bytes of body", len(body))
		}
		return &ErrorMsg{Header: h, Type: binary.BigEndian.Uint16(body), Code: binary.BigEndian.Uint16(body[2:]), Data: body[4:]}, nil
	case h.Type == TypeEchoRequest:
		return &EchoRequest{Header: h, Data: body}, nil
	case h.Type == TypeEchoReply:
		return &EchoReply{Header: h, Data: body}, nil
	case h.Type == TypeVendor:
		return decodeVendor(h, body)
	case h.Type == TypeFeaturesReq:
		if err := fixed(0); err != nil {
			return nil, err
		}
		return &FeaturesRequest{h}, nil
	case h.Type == TypeGetConfigReq:
		if err := fixed(0); err != nil {
			return nil, err
		}
		return &GetConfigRequest{h}, nil
	case h.Type == TypeSetConfig:
		if err := fixed(4); err != nil {
			return nil, err
		}
		return &SetConfig{Header: h, Config: Config{Flags: binary.BigEndian.Uint16(body), MissSendLen: binary.BigEndian.Uint16(body[2:])}}, nil
	case v == V10 && h.Type == type10BarrierReq, v > V10 && h.Type == type11BarrierReq:
		if err := fixed(0); err != nil {
			return nil, err
		}
		return &BarrierRequest{h}, nil
	case v == V10 && h.Type == type10QueueGetReq, v > V10 && v < V14 && h.Type == type11QueueGetReq:
		// ofp10_queue_get_config_request: a 16-bit port and 2 bytes of
		// padding; from 1.1 a 32-bit port and 4.
		if v == V10 {
			if err := fixed(4); err != nil {
				return nil, err
			}
			return &QueueGetConfigRequest{Header: h, Port: widenPort10(binary.BigEndian.Uint16(body))}, nil
		}
		if err := fixed(8); err != nil {
			return nil, err
		}
		return &QueueGetConfigRequest{Header: h, Port: binary.BigEndian.Uint32(body)}, nil
	case v == V10 && h.Type == type10StatsRequest:
		return decodeStats(h, body, 4)
	case v > V10 && h.Type == type11MultipartReq:
		return decodeStats(h, body, 8)
	case v == V10 && h.Type == type10PortMod, v > V10 && h.Type == type11PortMod:
		return decodePortMod(h, body)
	case v > V10 && h.Type == type11GroupMod:
		return decodeGroupMod(h, body)
	case v > V10 && h.Type == type11TableMod:
		return decodeTableMod(h, body)
	case h.Type == TypeFlowMod:
		if v == V10 {
			return decodeFlowMod10(h, body)
		}
		return decodeFlowMod11(h, body)
	case h.Type == TypePacketOut:
		return decodePacketOut(h, body)
	case v >= V13 && h.Type == type13MeterMod:
		return decodeMeterMod(h, body)
	case v >= V14 && h.Type == type14BundleControl:
		return decodeBundle(h, body, false, name)
	case v >= V14 && h.Type == type14BundleAdd:
		return decodeBundle(h, body, true, name)
	case v >= V12 && h.Type == type12RoleRequest:
		if err := fixed(16); err != nil {
			return nil, err
		}
		return &RoleRequest{Header: h, Role: binary.BigEndian.Uint32(body), GenerationID: binary.BigEndian.Uint64(body[8:])}, nil
	}
	if m, err, ok := decodeCtrl(h, body); ok {
		return m, err
	}
	if name == "" {
		return nil, errorf(BadType, "", "unknown message type %d in %s", h.Type, v)
	}
	return nil, errorf(BadType, name, "not supported")
}

// Hello elements.
const helloElemVersionBitmap = 1

func decodeHello(h Header, body []byte) (Message, error) {
	m := &Hello{Header: h}
	if h.Version < 31 {
		m.Versions = Versions(uint32(1)<<(h.Version+1)-1) &^ 1
	}
	// Elements are only defined from OpenFlow 1.3 on; OVS parses them
	// in any HELLO and ignores what it does not know.
	for len(body) >= 4 {
		typ, n := binary.BigEndian.Uint16(body), int(binary.BigEndian.Uint16(body[2:]))
		if n < 4 || n > len(body) {
			break // as OVS: a bad element ends the parse, the header's version stands
		}
		if typ == helloElemVersionBitmap && n >= 8 {
			m.Versions = Versions(binary.BigEndian.Uint32(body[4:]))
		}
		adv := (n + 7) &^ 7
		if adv > len(body) {
			break
		}
		body = body[adv:]
	}
	return m, nil
}

func decodeVendor(h Header, body []byte) (Message, error) {
	name := typeName(h.Version, h.Type)
	if len(body) < 4 {
		return nil, errorf(BadLen, name, "%d bytes of body", len(body))
	}
	vendor := binary.BigEndian.Uint32(body)
	if vendor == ONFVendor && h.Version >= V13 {
		return decodeONF(h, body[4:])
	}
	if vendor != NiciraVendor {
		return nil, errorf(BadVendor, name, "vendor 0x%08x", vendor)
	}
	if len(body) < 8 {
		return nil, errorf(BadLen, "NXT", "%d bytes of body", len(body))
	}
	sub := binary.BigEndian.Uint32(body[4:])
	rest := body[8:]
	if m, err, ok := decodeCtrlVendor(h, sub, rest); ok {
		return m, err
	}
	switch sub {
	case nxtSetFlowFormat:
		if len(rest) != 4 {
			return nil, errorf(BadLen, "NXT_SET_FLOW_FORMAT", "%d bytes", len(rest))
		}
		return &SetFlowFormat{Header: h, Format: binary.BigEndian.Uint32(rest)}, nil
	case nxtFlowMod:
		return decodeNXFlowMod(h, rest)
	case nxtGroupMod:
		if h.Version != V10 {
			return nil, errorf(BadSubtype, "NXT", "NXT_GROUP_MOD in %s", h.Version)
		}
		return decodeGroupMod(h, rest)
	case nxtFlowModTableID:
		if len(rest) != 8 {
			return nil, errorf(BadLen, "NXT_FLOW_MOD_TABLE_ID", "%d bytes", len(rest))
		}
		return &FlowModTableID{Header: h, Enable: rest[0] != 0}, nil
	case nxtCTFlushZone:
		return decodeCTFlushZone(h, rest)
	case nxtCTFlush:
		return decodeCTFlush(h, rest)
	case nxtResume:
		return decodeResume(h, rest)
	case nxtTLVTableMod:
		return decodeTLVTableMod(h, rest)
	case nxtTLVTableRequest:
		if len(rest) != 0 {
			return nil, errorf(BadLen, "NXT_TLV_TABLE_REQUEST", "%d bytes", len(rest))
		}
		return &TLVTableRequest{h}, nil
	case nxtFlowMonitorCancel:
		return decodeFlowMonitorCancel(h, rest, "NXT_FLOW_MONITOR_CANCEL")
	case nxtSetPacketInFormat:
		if len(rest) != 4 {
			return nil, errorf(BadLen, "NXT_SET_PACKET_IN_FORMAT", "%d bytes", len(rest))
		}
		return &SetPacketInFormat{Header: h, Format: binary.BigEndian.Uint32(rest)}, nil
	}
	return nil, errorf(BadSubtype, "NXT", "Nicira subtype %d not supported", sub)
}

// StatsFlagMore is OFPSF_REQ_MORE / OFPMPF_REQ_MORE (and the replies'
// OFPSF_REPLY_MORE).
const StatsFlagMore = 1

// decodeStats decodes a statistics request whose header (after
// ofp_header) is hdrLen bytes: type and flags, plus 4 bytes of padding in
// 1.1+.
func decodeStats(h Header, body []byte, hdrLen int) (Message, error) {
	v := h.Version
	if len(body) < hdrLen {
		return nil, errorf(BadLen, statsName(v, 0xfffe), "%d bytes of body", len(body))
	}
	kind := StatsKind(binary.BigEndian.Uint16(body))
	flags := binary.BigEndian.Uint16(body[2:])
	body = body[hdrLen:]
	name := statsName(v, kind)
	if flags&StatsFlagMore != 0 {
		return nil, errorf(BadStat, name, "requests in several parts are not supported")
	}
	m := &StatsRequest{Header: h, Kind: kind, Port: PortAny, Queue: 0xffffffff, Group: GroupAny}
	fixed := func(n int) error {
		if len(body) != n {
			return errorf(BadLen, name, "%d bytes of body, want %d", len(body), n)
		}
		return nil
	}
	switch kind {
	case StatsDesc, StatsTable, StatsTableDesc, StatsGroupFeatures:
		// Requests without a body, from the version that has them
		// (GROUP_FEATURES in 1.0 is Nicira's, decoded elsewhere).
		if kind == StatsTableDesc && v < V14 || kind == StatsGroupFeatures && v < V12 {
			break
		}
		if err := fixed(0); err != nil {
			return nil, err
		}
		return m, nil
	case StatsPortDesc:
		if v == V15 {
			if err := fixed(8); err != nil {
				return nil, err
			}
			m.Port = binary.BigEndian.Uint32(body)
			return m, nil
		}
		if err := fixed(0); err != nil {
			return nil, err
		}
		return m, nil
	case StatsPort, StatsQueue:
		// Both start with a port number; a QUEUE request adds the queue.
		if err := fixed(8); err != nil {
			return nil, err
		}
		if v == V10 {
			m.Port = widenPort10(binary.BigEndian.Uint16(body))
		} else {
			m.Port = binary.BigEndian.Uint32(body)
		}
		if kind == StatsQueue {
			m.Queue = binary.BigEndian.Uint32(body[4:])
		}
		return m, nil
	case StatsQueueDesc:
		// ofp14_queue_desc_request: port, queue.
		if v < V14 {
			break
		}
		if err := fixed(8); err != nil {
			return nil, err
		}
		m.Port, m.Queue = binary.BigEndian.Uint32(body), binary.BigEndian.Uint32(body[4:])
		return m, nil
	case StatsGroup:
		if v == V10 {
			break
		}
		if err := fixed(8); err != nil {
			return nil, err
		}
		m.Group = binary.BigEndian.Uint32(body)
		return m, nil
	case StatsGroupDesc:
		if v == V10 {
			break
		}
		if v < V15 {
			if err := fixed(0); err != nil {
				return nil, err
			}
			return m, nil
		}
		if err := fixed(8); err != nil {
			return nil, err
		}
		m.Group = binary.BigEndian.Uint32(body)
		return m, nil
	case StatsTableFeatures:
		if v < V13 {
			break
		}
		if len(body) != 0 {
			// A body asks to change the tables' features.
			return nil, errorf(TableFeaturesEPerm, name, "changing table features is not supported")
		}
		return m, nil
	case StatsFlow, StatsAggregate:
		return decodeFlowStats(m, body, name)
	case StatsMeter, StatsMeterConfig, StatsMeterFeatures:
		return decodeMeterStats(m, body, name)
	case StatsVendor:
		return decodeVendorStats(m, body)
	case StatsFlowMonitor:
		if v >= V14 {
			return decodeFlowMonitor14(h, body)
		}
	}
	return nil, errorf(BadStat, name, "statistics type %d not supported", kind)
}

func decodeFlowStats(m *StatsRequest, body []byte, name string) (Message, error) {
	m.OutGroup = GroupAny
	if m.Version == V10 {
		// ofp10_flow_stats_request: ofp10_match, table_id, pad, out_port.
		if len(body) != ofp10MatchLen+4 {
			return nil, errorf(BadLen, name, "%d bytes of body", len(body))
		}
		m.Match = decodeMatch10(body[:ofp10MatchLen])
		m.Table = body[ofp10MatchLen]
		m.OutPort = widenPort10(binary.BigEndian.Uint16(body[ofp10MatchLen+2:]))
		return m, nil
	}
	// ofp11_flow_stats_request: table_id, pad[3], out_port, out_group,
	// pad[4], cookie, cookie_mask, then the match.
	if len(body) < 32 {
		return nil, errorf(BadLen, name, "%d bytes of body", len(body))
	}
	m.Table = body[0]
	m.OutPort = binary.BigEndian.Uint32(body[4:])
	m.OutGroup = binary.BigEndian.Uint32(body[8:])
	m.Cookie = binary.BigEndian.Uint64(body[16:])
	m.CookieMask = binary.BigEndian.Uint64(body[24:])
	match, rest, err := decodeMatch11(m.Version, body[32:])
	if err != nil {
		err.Name = name
		return nil, err
	}
	if len(rest) != 0 {
		return nil, errorf(BadLen, name, "%d bytes after the match", len(rest))
	}
	m.Match = match
	return m, nil
}

// widenPort10 widens an OpenFlow 1.0 port number: the reserved ports
// 0xff00 and up become 0xffffff00 and up.
func widenPort10(p uint16) uint32 {
	if p >= 0xff00 {
		return uint32(p) | 0xffff0000
	}
	return uint32(p)
}

// Nicira statistics subtypes: NXST_FLOW, NXST_AGGREGATE, and the group
// statistics OpenFlow 1.0 has only as Nicira's.
const (
	nxStatsFlow          = 0
	nxStatsAggregate     = 1
	nxStatsIPFIXBridge   = 3
	nxStatsIPFIXFlow     = 4
	nxStatsGroup         = 7
	nxStatsGroupDesc     = 8
	nxStatsGroupFeatures = 9
)

func decodeVendorStats(m *StatsRequest, body []byte) (Message, error) {
	name := statsName(m.Version, StatsVendor)
	if len(body) < 4 {
		return nil, errorf(BadLen, name, "%d bytes of body", len(body))
	}
	vendor := binary.BigEndian.Uint32(body)
	if vendor == ONFVendor && m.Version == V13 && len(body) >= 8 && binary.BigEndian.Uint32(body[4:]) == onfFlowMonitor {
		return decodeONFFlowMonitor(m.Header, body[8:])
	}
	if vendor != NiciraVendor {
		return nil, errorf(BadVendor, name, "vendor 0x%08x", vendor)
	}
	// nicira10_stats_msg: vendor, subtype, pad[4]; nicira11_stats_msg
	// (1.1+): vendor, subtype.
	hdr := 12
	if m.Version > V10 {
		hdr = 8
	}
	if len(body) < hdr {
		return nil, errorf(BadLen, "NXST", "%d bytes of body", len(body))
	}
	sub := binary.BigEndian.Uint32(body[4:])
	if sub == nxStatsFlowMonitor && m.Version <= V12 {
		return decodeNXFlowMonitor(m.Header, body[hdr:])
	}
	if m.Version == V10 && sub >= nxStatsGroup && sub <= nxStatsGroupFeatures {
		return decodeNXGroupStats(m, sub, body[hdr:])
	}
	if sub == nxStatsIPFIXBridge || sub == nxStatsIPFIXFlow {
		// OVS's answer for a bridge without IPFIX, which govs never has.
		return nil, errorf(NXSTNotConfigured, "NXST", "IPFIX is not supported by govs")
	}
	if sub != nxStatsFlow && sub != nxStatsAggregate {
		return nil, errorf(BadSubtype, "NXST", "Nicira statistics subtype %d not supported", sub)
	}
	body = body[hdr:]
	m.Kind, m.NX, m.OutGroup = StatsFlow, true, GroupAny
	if sub == nxStatsAggregate {
		m.Kind = StatsAggregate
	}
	// nx_flow_stats_request: out_port, match_len, table_id, pad[3], then
	// the nx_match padded to 8 bytes.
	if len(body) < 8 {
		return nil, errorf(BadLen, "NXST_FLOW request", "%d bytes of body", len(body))
	}
	m.OutPort = widenPort10(binary.BigEndian.Uint16(body))
	n := int(binary.BigEndian.Uint16(body[2:]))
	m.Table = body[4]
	match := body[8:]
	if (n+7)&^7 != len(match) {
		return nil, errorf(BadLen, "NXST_FLOW request", "match_len %d with %d bytes left", n, len(match))
	}
	mt, ck, err := decodeNXMatch(match[:n], true)
	if err != nil {
		err.Name = "NXST_FLOW request"
		return nil, err
	}
	m.Match, m.Cookie, m.CookieMask = mt, ck.Value, ck.Mask
	return m, nil
}

// decodeNXGroupStats decodes OpenFlow 1.0's NXST_GROUP (body
// ofp11_group_stats_request), NXST_GROUP_DESC (ofp15_group_desc_request)
// and NXST_GROUP_FEATURES (empty) requests.
func decodeNXGroupStats(m *StatsRequest, sub uint32, body []byte) (Message, error) {
	m.NX = true
	want := 8
	switch sub {
	case nxStatsGroup:
		m.Kind = StatsGroup
	case nxStatsGroupDesc:
		m.Kind = StatsGroupDesc
	default:
		m.Kind, want = StatsGroupFeatures, 0
	}
	if len(body) != want {
		return nil, errorf(BadLen, "NXST", "Nicira statistics subtype %d with %d bytes of body, want %d", sub, len(body), want)
	}
	if want > 0 {
		m.Group = binary.BigEndian.Uint32(body)
	}
	return m, nil
}

// ofp10MatchLen is sizeof(struct ofp10_match).
const ofp10MatchLen = 40

// ofp10MatchAll reports whether an ofp10_match wildcards every field:
// every wildcard bit set and both IP prefixes at 32 bits or more.
func ofp10MatchAll(b []byte) bool {
	w := binary.BigEndian.Uint32(b)
	const other = 0x3fffff &^ (0x3f<<8 | 0x3f<<14)
	return w&other == other && (w>>8)&0x3f >= 32 && (w>>14)&0x3f >= 32
}

// decodeMatch checks a 1.1+ ofp_match (standard in 1.1, OXM in 1.2+)
// that must fill rest exactly, and reports whether it matches all.
func decodeMatch(v Version, b []byte, name string) (bool, error) {
	if len(b) < 4 {
		return false, errorf(BadLen, name, "match of %d bytes", len(b))
	}
	typ, n := binary.BigEndian.Uint16(b), int(binary.BigEndian.Uint16(b[2:]))
	switch {
	case typ == 0 && v == V11:
		// ofp11_match (OFPMT_STANDARD): mask bits set mean "any".
		if n != 88 || len(b) != 88 {
			return false, errorf(BadLen, name, "standard match of %d bytes", n)
		}
		all := binary.BigEndian.Uint32(b[8:])&0x3ff == 0x3ff
		for _, r := range [][2]int{{18, 24}, {30, 36}, {48, 52}, {56, 60}, {80, 88}} {
			for _, c := range b[r[0]:r[1]] {
				all = all && c == 0xff
			}
		}
		return all, nil
	case typ == 1 && v >= V12:
		if n < 4 || (n+7)&^7 != len(b) {
			return false, errorf(BadLen, name, "OXM match length %d with %d bytes", n, len(b))
		}
		if err := checkOXM(b[4:n], name); err != nil {
			return false, err
		}
		return n == 4, nil
	}
	return false, errorf(BadLen, name, "match type %d not supported in %s", typ, v)
}

// checkOXM checks that b is a sequence of whole OXM/NXM entries.
func checkOXM(b []byte, name string) error {
	for len(b) > 0 {
		if len(b) < 4 {
			return errorf(BadLen, name, "truncated match field")
		}
		n := int(b[3])
		class := binary.BigEndian.Uint16(b)
		hdr := 4
		if class == 0xffff { // experimenter OXM: 32-bit experimenter id follows
			hdr = 8
		}
		if n < hdr-4 || 4+n > len(b) {
			return errorf(BadLen, name, "match field of %d bytes with %d left", n, len(b)-4)
		}
		b = b[4+n:]
	}
	return nil
}
