package ofp

import (
	"encoding/binary"
	"time"
)

// The controller's side of the codec (what ovs-ofctl sends and reads):
// requests are encoded, replies decoded. Each decoder is the inverse of
// the switch's encoder of the same message.

// EncodeRequest returns a message of type t with no body
// (OFPT_FEATURES_REQUEST, OFPT_GET_CONFIG_REQUEST, ...).
func EncodeRequest(v Version, t uint8, xid uint32) []byte { return finish(newMsg(v, t, xid, 0)) }

// EncodeBarrierRequest returns OFPT_BARRIER_REQUEST.
func EncodeBarrierRequest(v Version, xid uint32) []byte {
	t := uint8(type11BarrierReq)
	if v == V10 {
		t = type10BarrierReq
	}
	return EncodeRequest(v, t, xid)
}

// EncodeFlowModTableID returns NXT_FLOW_MOD_TABLE_ID: OpenFlow 1.0 flow
// mods carry a table in their command's high byte.
func EncodeFlowModTableID(v Version, xid uint32, enable bool) []byte {
	b := newMsg(v, TypeVendor, xid, 16)
	b = put32(b, NiciraVendor)
	b = put32(b, nxtFlowModTableID)
	if enable {
		b = put8(b, 1)
	} else {
		b = put8(b, 0)
	}
	return finish(pad(b, 7))
}

// EncodeSetFlowFormat returns NXT_SET_FLOW_FORMAT.
func EncodeSetFlowFormat(v Version, xid uint32, format uint32) []byte {
	b := newMsg(v, TypeVendor, xid, 12)
	b = put32(b, NiciraVendor)
	b = put32(b, nxtSetFlowFormat)
	return finish(put32(b, format))
}

// statsRequest starts a statistics request of kind (a Nicira one of
// subtype sub when kind is StatsVendor).
func statsRequest(v Version, xid uint32, kind StatsKind, sub uint32) []byte {
	t := uint8(type11MultipartReq)
	if v == V10 {
		t = type10StatsRequest
	}
	b := newMsg(v, t, xid, 64)
	b = put16(b, uint16(kind))
	b = put16(b, 0)
	if v != V10 {
		b = pad(b, 4)
	}
	if kind == StatsVendor {
		b = put32(b, NiciraVendor)
		b = put32(b, sub)
		if v == V10 {
			b = pad(b, 4)
		}
	}
	return b
}

// EncodePortDescRequest returns a PORT_DESC request: for port (PortAny
// for every port) in OpenFlow 1.5, for every port before.
func EncodePortDescRequest(v Version, xid uint32, port uint32) []byte {
	b := statsRequest(v, xid, StatsPortDesc, 0)
	if v >= V15 {
		b = put32(b, port)
		b = pad(b, 4)
	}
	return finish(b)
}

// EncodeFlowStatsRequest returns a FLOW (AGGREGATE when r.Kind says so)
// statistics request: NXST_FLOW with an NXM match in OpenFlow 1.0, the
// standard request with an OXM match in 1.2+ (1.1's standard match is
// not encoded).
func EncodeFlowStatsRequest(v Version, xid uint32, r *StatsRequest) []byte {
	if v == V10 {
		sub := uint32(nxStatsFlow)
		if r.Kind == StatsAggregate {
			sub = nxStatsAggregate
		}
		b := statsRequest(v, xid, StatsVendor, sub)
		b = put16(b, port10(r.OutPort))
		ml := len(b)
		b = put16(b, 0)
		b = put8(b, r.Table)
		b = pad(b, 3)
		ms := len(b)
		b = AppendNXMatch(b, &r.Match, true)
		b = appendNXCookie(b, r.Cookie, r.CookieMask)
		binary.BigEndian.PutUint16(b[ml:], uint16(len(b)-ms))
		return finish(padTo8(b, ms))
	}
	b := statsRequest(v, xid, r.Kind, 0)
	b = put8(b, r.Table)
	b = pad(b, 3)
	b = put32(b, r.OutPort)
	b = put32(b, r.OutGroup)
	b = pad(b, 4)
	b = put64(b, r.Cookie)
	b = put64(b, r.CookieMask)
	return finish(appendOXMMatch(b, &r.Match))
}

// appendNXCookie appends NXM_NX_COOKIE(_W) when mask is not zero.
func appendNXCookie(b []byte, cookie, mask uint64) []byte {
	switch mask {
	case 0:
		return b
	case ^uint64(0):
		b = put32(b, nxmCookie)
		return put64(b, cookie)
	}
	b = put32(b, nxmCookie&^0xff|0x100|16)
	b = put64(b, cookie&mask)
	return put64(b, mask)
}

// appendFlowModHead10 appends what ofp10_flow_mod and nx_flow_mod share
// (decodeFlowModHead10's inverse): cookie, command with the table in its
// high byte, timeouts, priority, buffer, out_port and flags.
func appendFlowModHead10(b []byte, fm *FlowMod) []byte {
	b = put64(b, fm.NewCookie)
	b = put16(b, uint16(fm.Table)<<8|uint16(fm.Command))
	b = put16(b, fm.IdleTimeout)
	b = put16(b, fm.HardTimeout)
	b = put16(b, fm.Priority)
	b = put32(b, fm.BufferID)
	b = put16(b, port10(fm.OutPort))
	return put16(b, fm.Flags&^FlagResetCounts)
}

// FlowModNX reports whether EncodeFlowMod encodes fm as NXT_FLOW_MOD in
// OpenFlow 1.0: when an ofp10_match cannot say its match or cookie
// filter (OVS's ovs-ofctl chooses the same way).
func FlowModNX(fm *FlowMod) bool { return fm.Cookie.Mask != 0 || !fm.Match.Representable10() }

// EncodeFlowMod returns fm in OpenFlow 1.0 as OFPT_FLOW_MOD, or as
// NXT_FLOW_MOD when FlowModNX; in 1.2+ as OFPT_FLOW_MOD with an OXM match.
func EncodeFlowMod(v Version, xid uint32, fm *FlowMod) []byte {
	if v == V10 && !FlowModNX(fm) {
		b := newMsg(v, TypeFlowMod, xid, 128)
		b = appendMatch10(b, &fm.Match)
		b = appendFlowModHead10(b, fm)
		return finish(AppendActions(b, V10, fm.Actions))
	}
	if v == V10 {
		b := newMsg(v, TypeVendor, xid, 128)
		b = put32(b, NiciraVendor)
		b = put32(b, nxtFlowMod)
		b = appendFlowModHead10(b, fm)
		ml := len(b)
		b = put16(b, 0)
		b = pad(b, 6)
		ms := len(b)
		b = AppendNXMatch(b, &fm.Match, true)
		b = appendNXCookie(b, fm.Cookie.Value, fm.Cookie.Mask)
		binary.BigEndian.PutUint16(b[ml:], uint16(len(b)-ms))
		b = padTo8(b, ms)
		return finish(AppendActions(b, V10, fm.Actions))
	}
	b := newMsg(v, TypeFlowMod, xid, 128)
	if fm.Command == FlowAdd {
		b = put64(b, fm.NewCookie)
		b = put64(b, 0)
	} else {
		b = put64(b, fm.Cookie.Value)
		b = put64(b, fm.Cookie.Mask)
	}
	b = put8(b, fm.Table)
	b = put8(b, fm.Command)
	b = put16(b, fm.IdleTimeout)
	b = put16(b, fm.HardTimeout)
	b = put16(b, fm.Priority)
	b = put32(b, fm.BufferID)
	b = put32(b, fm.OutPort)
	b = put32(b, fm.OutGroup)
	b = put16(b, fm.Flags)
	if v >= V14 {
		b = put16(b, fm.Importance)
	} else {
		b = pad(b, 2)
	}
	b = appendOXMMatch(b, &fm.Match)
	return finish(AppendInstructions(b, v, fm.Actions))
}

// Reply is a statistics reply's body and whether more parts follow.
type Reply struct {
	Header
	Kind StatsKind
	More bool
	Body []byte
}

// DecodeStatsReply splits a statistics (multipart) reply into its header
// and body; a Nicira reply's body starts after the Nicira header.
func DecodeStatsReply(b []byte) (*Reply, error) {
	h := ParseHeader(b)
	want, hdr := uint8(type11MultipartRep), HeaderLen+8
	if h.Version == V10 {
		want, hdr = type10StatsReply, HeaderLen+4
	}
	if h.Type != want || len(b) < hdr || int(h.Length) != len(b) {
		return nil, errorf(BadLen, "", "not a statistics reply")
	}
	r := &Reply{Header: h, Kind: StatsKind(binary.BigEndian.Uint16(b[HeaderLen:]))}
	r.More = binary.BigEndian.Uint16(b[HeaderLen+2:])&StatsFlagMore != 0
	r.Body = b[hdr:]
	if r.Kind == StatsVendor {
		n := 8
		if h.Version == V10 {
			n = 12
		}
		if len(r.Body) < n {
			return nil, errorf(BadLen, "", "short Nicira statistics reply")
		}
		r.Body = r.Body[n:]
	}
	return r, nil
}

// DecodeFeaturesReply decodes OFPT_FEATURES_REPLY (with its ports up to
// OpenFlow 1.2).
func DecodeFeaturesReply(b []byte) (*Features, error) {
	h := ParseHeader(b)
	if h.Type != TypeFeaturesReply || len(b) < HeaderLen+24 {
		return nil, errorf(BadLen, "OFPT_FEATURES_REPLY", "%d bytes", len(b))
	}
	body := b[HeaderLen:]
	f := &Features{DatapathID: binary.BigEndian.Uint64(body), NBuffers: binary.BigEndian.Uint32(body[8:]),
		NTables: body[12], Capabilities: binary.BigEndian.Uint32(body[16:]), Actions: binary.BigEndian.Uint32(body[20:])}
	if h.Version <= V12 {
		ports, err := DecodePorts(h.Version, body[24:])
		if err != nil {
			return nil, err
		}
		f.Ports = ports
	}
	return f, nil
}

// features11 converts OpenFlow 1.0 feature bits to 1.1+'s (the inverse
// of features10).
func features11(f uint32) uint32 { return f&0x7f | (f&0xf80)<<4 }

// DecodePorts decodes a sequence of ofp_port (a features reply's or a
// PORT_DESC reply's body).
func DecodePorts(v Version, b []byte) ([]Port, error) {
	var ports []Port
	for len(b) > 0 {
		var p Port
		n := 64
		switch {
		case v == V10:
			n = 48
			if len(b) < n {
				return nil, errorf(BadLen, "", "truncated port")
			}
			p.No = widenPort10(binary.BigEndian.Uint16(b))
			copy(p.HWAddr[:], b[2:8])
			p.Name = cString(b[8:24])
			p.Config = binary.BigEndian.Uint32(b[24:])
			p.State = binary.BigEndian.Uint32(b[28:])
			p.Curr = features11(binary.BigEndian.Uint32(b[32:]))
			p.Advertised = features11(binary.BigEndian.Uint32(b[36:]))
			p.Supported = features11(binary.BigEndian.Uint32(b[40:]))
			p.Peer = features11(binary.BigEndian.Uint32(b[44:]))
		case v <= V13:
			if len(b) < n {
				return nil, errorf(BadLen, "", "truncated port")
			}
			p.No = binary.BigEndian.Uint32(b)
			copy(p.HWAddr[:], b[8:14])
			p.Name = cString(b[16:32])
			f := []*uint32{&p.Config, &p.State, &p.Curr, &p.Advertised, &p.Supported, &p.Peer, &p.CurrSpeed, &p.MaxSpeed}
			for i, q := range f {
				*q = binary.BigEndian.Uint32(b[32+4*i:])
			}
		default:
			if len(b) < 40 {
				return nil, errorf(BadLen, "", "truncated port")
			}
			n = int(binary.BigEndian.Uint16(b[4:]))
			if n < 40 || n > len(b) {
				return nil, errorf(BadLen, "", "port of %d bytes", n)
			}
			p.No = binary.BigEndian.Uint32(b)
			copy(p.HWAddr[:], b[8:14])
			p.Name = cString(b[16:32])
			p.Config = binary.BigEndian.Uint32(b[32:])
			p.State = binary.BigEndian.Uint32(b[36:])
			for props := b[40:n]; len(props) >= 4; {
				typ, pl := binary.BigEndian.Uint16(props), int(binary.BigEndian.Uint16(props[2:]))
				if pl < 4 || pl > len(props) {
					break
				}
				if typ == 0 && pl >= 32 {
					f := []*uint32{&p.Curr, &p.Advertised, &p.Supported, &p.Peer, &p.CurrSpeed, &p.MaxSpeed}
					for i, q := range f {
						*q = binary.BigEndian.Uint32(props[8+4*i:])
					}
				}
				props = props[(pl+7)&^7:]
			}
		}
		ports = append(ports, p)
		b = b[n:]
	}
	return ports, nil
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// DecodeGetConfigReply decodes OFPT_GET_CONFIG_REPLY.
func DecodeGetConfigReply(b []byte) (Config, error) {
	if len(b) < HeaderLen+4 || b[1] != TypeGetConfigReply {
		return Config{}, errorf(BadLen, "OFPT_GET_CONFIG_REPLY", "%d bytes", len(b))
	}
	return Config{Flags: binary.BigEndian.Uint16(b[HeaderLen:]), MissSendLen: binary.BigEndian.Uint16(b[HeaderLen+2:])}, nil
}

// flowStatsHead decodes what nx_flow_stats and ofp11_flow_stats share at
// the same offsets: table, duration, priority, timeouts and the cookie
// and counters at 24.
func flowStatsHead(f *FlowStats, e []byte) {
	f.Table = e[2]
	f.Duration = time.Duration(binary.BigEndian.Uint32(e[4:]))*time.Second + time.Duration(binary.BigEndian.Uint32(e[8:]))
	f.Priority = binary.BigEndian.Uint16(e[12:])
	f.IdleTimeout = binary.BigEndian.Uint16(e[14:])
	f.HardTimeout = binary.BigEndian.Uint16(e[16:])
	f.Cookie = binary.BigEndian.Uint64(e[24:])
	f.Packets = binary.BigEndian.Uint64(e[32:])
	f.Bytes = binary.BigEndian.Uint64(e[40:])
}

// DecodeFlowStats decodes a FLOW statistics reply's body (r from
// DecodeStatsReply): NXST_FLOW's nx_flow_stats, or 1.2+'s ofp_flow_stats.
// IdleAge and HardAge are -1 when the reply does not say.
func DecodeFlowStats(r *Reply) ([]FlowStats, error) {
	v, b := r.Version, r.Body
	var flows []FlowStats
	bad := func(what string) error { return errorf(BadLen, "", "flow statistics: %s", what) }
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, bad("truncated entry")
		}
		n := int(binary.BigEndian.Uint16(b))
		if n < 8 || n > len(b) {
			return nil, bad("entry length")
		}
		e := b[:n]
		b = b[n:]
		f := FlowStats{IdleAge: -1, HardAge: -1}
		switch {
		case r.Kind == StatsVendor:
			if n < 48 {
				return nil, bad("short nx_flow_stats")
			}
			flowStatsHead(&f, e)
			ml := int(binary.BigEndian.Uint16(e[18:]))
			if age := binary.BigEndian.Uint16(e[20:]); age != 0 {
				f.IdleAge = time.Duration(age-1) * time.Second
			}
			if age := binary.BigEndian.Uint16(e[22:]); age != 0 {
				f.HardAge = time.Duration(age-1) * time.Second
			}
			rest := e[48:]
			if (ml+7)&^7 > len(rest) {
				return nil, bad("match length")
			}
			m, _, err := decodeNXMatch(rest[:ml], true)
			if err != nil {
				return nil, err
			}
			f.Match = m
			acts, err := DecodeActions(V10, rest[(ml+7)&^7:])
			if err != nil {
				return nil, err
			}
			f.Actions = acts
		case v >= V12 && v <= V14:
			if n < 56 {
				return nil, bad("short ofp_flow_stats")
			}
			flowStatsHead(&f, e)
			if v >= V13 {
				f.Flags = binary.BigEndian.Uint16(e[18:])
			}
			if v == V14 {
				f.Importance = binary.BigEndian.Uint16(e[20:])
			}
			m, rest, err := decodeOXMMatch(v, e[48:])
			if err != nil {
				return nil, err
			}
			f.Match = m
			acts, err := DecodeInstructions(v, rest)
			if err != nil {
				return nil, err
			}
			f.Actions = acts
		case v == V11:
			// OVS's switch and govs' send an OXM match; a standard
			// match is read too (OVS's ofputil_pull_ofp11_match).
			if n < 48 {
				return nil, bad("short ofp11_flow_stats")
			}
			flowStatsHead(&f, e)
			m, rest, err := decodeMatch11(v, e[48:])
			if err != nil {
				return nil, err
			}
			f.Match = m
			acts, aerr := DecodeInstructions(v, rest)
			if aerr != nil {
				return nil, aerr
			}
			f.Actions = acts
		case v == V15:
			// ofp15_flow_desc: the counters are OXS fields after the match.
			if n < 24 {
				return nil, bad("short ofp15_flow_desc")
			}
			f.Table = e[4]
			f.Priority = binary.BigEndian.Uint16(e[6:])
			f.IdleTimeout = binary.BigEndian.Uint16(e[8:])
			f.HardTimeout = binary.BigEndian.Uint16(e[10:])
			f.Flags = binary.BigEndian.Uint16(e[12:])
			f.Importance = binary.BigEndian.Uint16(e[14:])
			f.Cookie = binary.BigEndian.Uint64(e[16:])
			m, rest, err := decodeOXMMatch(v, e[24:])
			if err != nil {
				return nil, err
			}
			f.Match = m
			if len(rest) < 4 {
				return nil, bad("missing OXS stats")
			}
			sl := int(binary.BigEndian.Uint16(rest[2:]))
			if sl < 4 || (sl+7)&^7 > len(rest) {
				return nil, bad("OXS stats length")
			}
			for oxs := rest[4:sl]; len(oxs) >= 4; {
				id, l := oxs[2]>>1, int(oxs[3])
				if 4+l > len(oxs) {
					return nil, bad("truncated OXS field")
				}
				val := oxs[4 : 4+l]
				var x uint64
				for _, c := range val {
					x = x<<8 | uint64(c)
				}
				dur := time.Duration(x>>32)*time.Second + time.Duration(x&0xffffffff)
				switch {
				case binary.BigEndian.Uint16(oxs) != oxsClass:
				case id == oxsDuration:
					f.Duration = dur
				case id == oxsIdleTime:
					f.IdleAge = dur
				case id == oxsPacketCount:
					f.Packets = x
				case id == oxsByteCount:
					f.Bytes = x
				}
				oxs = oxs[4+l:]
			}
			acts, aerr := DecodeInstructions(v, rest[(sl+7)&^7:])
			if aerr != nil {
				return nil, aerr
			}
			f.Actions = acts
		default:
			return nil, errorf(BadVersion, "", "flow statistics in %s are not supported", v)
		}
		flows = append(flows, f)
	}
	return flows, nil
}

// FieldByName returns the field OVS names name ("eth_src", "reg0"), nil
// if govs has none.
func FieldByName(name string) *Field { return fieldNames[name] }

// SetField returns a set_field action; legacy encodes it as OpenFlow
// 1.0's mod_* action where one exists (ovs-ofctl's "mod_dl_src:...").
func SetField(fd *Field, value, mask []byte, legacy bool) Action {
	a := Action{Type: ActSetField, Field: fd, Value: value, Mask: mask}
	if legacy {
		a.raw = rawLegacy
	}
	return a
}

// RegLoad reports whether a set-field action came as NXAST_REG_LOAD
// (ovs-ofctl shows it "load:").
func (a *Action) RegLoad() bool { return a.raw == rawRegLoad }

// LoadRange returns a set-field action's mask as a bit range and the
// value in it, ok false if the mask is not one contiguous range.
func (a *Action) LoadRange() (ref FieldRef, value uint64, ok bool) {
	ofs, nbits, ok := maskRange(a.Mask)
	if !ok || nbits > 64 {
		return FieldRef{}, 0, false
	}
	return FieldRef{Field: a.Field, Ofs: ofs, NBits: nbits}, rangeValue(a.Value, ofs, nbits), true
}

// ResubmitTable marks a resubmit to be encoded as NXAST_RESUBMIT_TABLE
// ("resubmit(,T)" or "resubmit(P,T)"), as a decoded one records it.
func (a *Action) ResubmitTable() bool { return a.resubmitTable }

// Resubmit returns a resubmit action to port (PortInPort: the packet's
// own) and table (0xff: the current one); withTable encodes it as
// NXAST_RESUBMIT_TABLE.
func Resubmit(port uint32, table uint8, withTable bool) Action {
	return Action{Type: ActResubmit, Port: port, Table: table, resubmitTable: withTable}
}

// DecodeErrorMsg decodes OFPT_ERROR: the error OVS names (ok false if
// govs does not know its numbers) and the data it carries.
func DecodeErrorMsg(b []byte) (e Errno, data []byte, ok bool) {
	if len(b) < HeaderLen+4 || b[1] != TypeError {
		return 0, nil, false
	}
	v := Version(b[0])
	c := errCode{typ: binary.BigEndian.Uint16(b[HeaderLen:]), code: binary.BigEndian.Uint16(b[HeaderLen+2:])}
	data = b[HeaderLen+4:]
	switch {
	case c.typ == 0xb0c2 && len(data) >= 8:
		c = errCode{vendor: binary.BigEndian.Uint32(data), typ: binary.BigEndian.Uint16(data[4:]), code: binary.BigEndian.Uint16(data[6:])}
		data = data[8:]
	case c.typ == 0xffff && v >= V12 && len(data) >= 4:
		c = errCode{vendor: binary.BigEndian.Uint32(data), typ: c.code}
		data = data[4:]
	}
	vi := min(max(v, V10), V15) - V10
	for errno, codes := range errCodes {
		if codes[vi] == c {
			return errno, data, true
		}
	}
	return 0, data, false
}

// EncodePortStatsRequest returns a PORT statistics request for port
// (PortAny: every port).
func EncodePortStatsRequest(v Version, xid uint32, port uint32) []byte {
	b := statsRequest(v, xid, StatsPort, 0)
	if v == V10 {
		b = put16(b, port10(port))
		return finish(pad(b, 6))
	}
	b = put32(b, port)
	return finish(pad(b, 4))
}

// EncodeQueueStatsRequest returns a QUEUE statistics request.
func EncodeQueueStatsRequest(v Version, xid uint32, port, queue uint32) []byte {
	b := statsRequest(v, xid, StatsQueue, 0)
	if v == V10 {
		b = put16(b, port10(port))
		b = pad(b, 2)
	} else {
		b = put32(b, port)
	}
	return finish(put32(b, queue))
}

// DecodePortStats decodes a PORT statistics reply's body. Duration is -1
// when the version does not report it (before 1.3).
func DecodePortStats(r *Reply) ([]PortStats, error) {
	v, b := r.Version, r.Body
	var stats []PortStats
	for len(b) > 0 {
		var s PortStats
		n, counters := 104, 8
		switch {
		case v == V10:
			if len(b) < n {
				return nil, errorf(BadLen, "", "truncated port statistics")
			}
			s.No = widenPort10(binary.BigEndian.Uint16(b))
		case v <= V13:
			if v == V13 {
				n = 112
			}
			if len(b) < n {
				return nil, errorf(BadLen, "", "truncated port statistics")
			}
			s.No = binary.BigEndian.Uint32(b)
		default:
			if len(b) < 80 {
				return nil, errorf(BadLen, "", "truncated port statistics")
			}
			n = int(binary.BigEndian.Uint16(b))
			if n < 80 || n > len(b) {
				return nil, errorf(BadLen, "", "port statistics of %d bytes", n)
			}
			s.No = binary.BigEndian.Uint32(b[4:])
			s.Duration = time.Duration(binary.BigEndian.Uint32(b[8:]))*time.Second + time.Duration(binary.BigEndian.Uint32(b[12:]))
			counters = 16
		}
		e := b[:n]
		b = b[n:]
		for i, p := range []*uint64{&s.RxPackets, &s.TxPackets, &s.RxBytes, &s.TxBytes, &s.RxDropped, &s.TxDropped, &s.RxErrors, &s.TxErrors} {
			*p = binary.BigEndian.Uint64(e[counters+8*i:])
		}
		ext := []*uint64{&s.RxFrameErr, &s.RxOverErr, &s.RxCRCErr, &s.Collision}
		if v >= V14 {
			for i := range ext {
				*ext[i] = Unknown
			}
			for props := e[80:]; len(props) >= 4; {
				typ, pl := binary.BigEndian.Uint16(props), int(binary.BigEndian.Uint16(props[2:]))
				if pl < 4 || pl > len(props) {
					break
				}
				if typ == 0 && pl >= 40 {
					for i, p := range ext {
						*p = binary.BigEndian.Uint64(props[8+8*i:])
					}
				}
				props = props[(pl+7)&^7:]
			}
		} else {
			for i, p := range ext {
				*p = binary.BigEndian.Uint64(e[counters+64+8*i:])
			}
		}
		switch {
		case v == V13:
			s.Duration = time.Duration(binary.BigEndian.Uint32(e[104:]))*time.Second + time.Duration(binary.BigEndian.Uint32(e[108:]))
		case v < V13:
			s.Duration = -1
		}
		stats = append(stats, s)
	}
	return stats, nil
}

// DecodeAggregate decodes an AGGREGATE statistics reply's body.
func DecodeAggregate(r *Reply) (packets, bytes uint64, flows uint32, err error) {
	b := r.Body
	if r.Version == V15 && r.Kind != StatsVendor {
		if len(b) < 4 {
			return 0, 0, 0, errorf(BadLen, "", "truncated aggregate statistics")
		}
		n := int(binary.BigEndian.Uint16(b[2:]))
		if n < 4 || n > len(b) {
			return 0, 0, 0, errorf(BadLen, "", "aggregate statistics length")
		}
		for oxs := b[4:n]; len(oxs) >= 4; {
			id, l := oxs[2]>>1, int(oxs[3])
			if 4+l > len(oxs) {
				break
			}
			var x uint64
			for _, c := range oxs[4 : 4+l] {
				x = x<<8 | uint64(c)
			}
			switch id {
			case 3:
				flows = uint32(x)
			case oxsPacketCount:
				packets = x
			case oxsByteCount:
				bytes = x
			}
			oxs = oxs[4+l:]
		}
		return packets, bytes, flows, nil
	}
	if len(b) < 20 {
		return 0, 0, 0, errorf(BadLen, "", "truncated aggregate statistics")
	}
	return binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:]), binary.BigEndian.Uint32(b[16:]), nil
}

// QueueStats is one queue's counters; Duration is -1 when not reported.
type QueueStats struct {
	Port, Queue                  uint32
	TxBytes, TxPackets, TxErrors uint64
	Duration                     time.Duration
}

// DecodeQueueStats decodes a QUEUE statistics reply's body.
func DecodeQueueStats(r *Reply) ([]QueueStats, error) {
	v, b := r.Version, r.Body
	var stats []QueueStats
	for len(b) > 0 {
		q := QueueStats{Duration: -1}
		n, off := 32, 8
		switch {
		case v == V10:
			if len(b) < n {
				return nil, errorf(BadLen, "", "truncated queue statistics")
			}
			q.Port = widenPort10(binary.BigEndian.Uint16(b))
			q.Queue = binary.BigEndian.Uint32(b[4:])
		case v <= V13:
			if v == V13 {
				n = 40
			}
			if len(b) < n {
				return nil, errorf(BadLen, "", "truncated queue statistics")
			}
			q.Port, q.Queue = binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])
		default:
			if len(b) < 48 {
				return nil, errorf(BadLen, "", "truncated queue statistics")
			}
			n = int(binary.BigEndian.Uint16(b))
			if n < 48 || n > len(b) {
				return nil, errorf(BadLen, "", "queue statistics of %d bytes", n)
			}
			q.Port, q.Queue = binary.BigEndian.Uint32(b[8:]), binary.BigEndian.Uint32(b[12:])
			off = 16
		}
		e := b[:n]
		b = b[n:]
		q.TxBytes, q.TxPackets, q.TxErrors = binary.BigEndian.Uint64(e[off:]), binary.BigEndian.Uint64(e[off+8:]), binary.BigEndian.Uint64(e[off+16:])
		switch {
		case v == V13:
			q.Duration = time.Duration(binary.BigEndian.Uint32(e[32:]))*time.Second + time.Duration(binary.BigEndian.Uint32(e[36:]))
		case v >= V14:
			q.Duration = time.Duration(binary.BigEndian.Uint32(e[40:]))*time.Second + time.Duration(binary.BigEndian.Uint32(e[44:]))
		}
		stats = append(stats, q)
	}
	return stats, nil
}

// EncodePortMod returns OFPT_PORT_MOD (advertising no change), with the
// config bits version v defines.
func EncodePortMod(v Version, xid uint32, m *PortMod) []byte {
	t := uint8(type11PortMod)
	if v == V10 {
		t = type10PortMod
	}
	b := newMsg(v, t, xid, 32)
	if v == V10 {
		b = put16(b, port10(m.Port))
		b = append(b, m.HWAddr[:]...)
		b = put32(b, m.Config&portConfig10All)
		b = put32(b, m.Mask&portConfig10All)
		b = put32(b, 0)
		return finish(pad(b, 4))
	}
	b = put32(b, m.Port)
	b = pad(b, 4)
	b = append(b, m.HWAddr[:]...)
	b = pad(b, 2)
	b = put32(b, m.Config&portConfig11All)
	b = put32(b, m.Mask&portConfig11All)
	if v <= V13 {
		b = put32(b, 0)
		return finish(pad(b, 4))
	}
	return finish(b)
}

// EncodePacketOut returns OFPT_PACKET_OUT of po (no buffer).
func EncodePacketOut(v Version, xid uint32, po *PacketOut) []byte {
	b := newMsg(v, TypePacketOut, xid, 64+len(po.Data))
	b = put32(b, 0xffffffff)
	var acts []byte
	acts = AppendActions(acts, v, po.Actions)
	switch {
	case v == V10:
		b = put16(b, port10(po.InPort))
		b = put16(b, uint16(len(acts)))
	case v < V15:
		b = put32(b, po.InPort)
		b = put16(b, uint16(len(acts)))
		b = pad(b, 6)
	default:
		b = put16(b, uint16(len(acts)))
		b = pad(b, 2)
		var m Match
		m.Flow.InPort, m.Mask.InPort = po.InPort, ^uint32(0)
		b = appendOXMMatch(b, &m)
	}
	b = append(b, acts...)
	return finish(append(b, po.Data...))
}

// EncodeGroupMod returns OFPT_GROUP_MOD (OpenFlow 1.1+): 1.1–1.4's
// buckets, or 1.5's with their properties and the selection method.
func EncodeGroupMod(v Version, xid uint32, gm *GroupMod) []byte {
	b := newMsg(v, type11GroupMod, xid, 64)
	b = put16(b, gm.Command)
	b = put8(b, gm.Type)
	b = pad(b, 1)
	b = put32(b, gm.ID)
	if v < V15 {
		for i := range gm.Buckets {
			b = appendBucket11(b, v, &gm.Buckets[i])
		}
		return finish(b)
	}
	ll := len(b)
	b = put16(b, 0)
	b = pad(b, 2)
	b = put32(b, gm.CommandBucketID)
	start := len(b)
	for i := range gm.Buckets {
		b = appendBucket15(b, v, gm.Type, &gm.Buckets[i])
	}
	binary.BigEndian.PutUint16(b[ll:], uint16(len(b)-start))
	return finish(appendGroupProps(b, &gm.Props))
}

// EncodeGroupDescRequest returns a GROUP_DESC request: for group
// (GroupAllGroups for all) in OpenFlow 1.5, for every group before.
func EncodeGroupDescRequest(v Version, xid uint32, group uint32) []byte {
	b := statsRequest(v, xid, StatsGroupDesc, 0)
	if v >= V15 {
		b = put32(b, group)
		b = pad(b, 4)
	}
	return finish(b)
}

// DecodeGroupDesc decodes a GROUP_DESC reply's body.
func DecodeGroupDesc(r *Reply) ([]GroupDesc, error) {
	v, b := r.Version, r.Body
	var groups []GroupDesc
	for len(b) > 0 {
		if len(b) < 8 {
			return nil, errorf(BadLen, "", "truncated group description")
		}
		n := int(binary.BigEndian.Uint16(b))
		if n < 8 || n > len(b) {
			return nil, errorf(BadLen, "", "group description of %d bytes", n)
		}
		e := b[:n]
		b = b[n:]
		g := GroupDesc{Type: e[2], ID: binary.BigEndian.Uint32(e[4:])}
		var err *Error
		if v < V15 {
			g.Buckets, err = decodeBuckets11(v, e[8:])
		} else {
			if n < 16 {
				return nil, errorf(BadLen, "", "truncated group description")
			}
			bl := int(binary.BigEndian.Uint16(e[8:]))
			if 16+bl > n {
				return nil, errorf(BadLen, "", "bucket list of %d bytes", bl)
			}
			if g.Buckets, err = decodeBuckets15(v, e[16:16+bl]); err == nil {
				err = decodeGroupProps(&g.Props, e[16+bl:])
			}
		}
		if err != nil {
			return nil, err
		}
		groups = append(groups, g)
	}
	return groups, nil
}

// EncodeMeterConfigRequest returns a METER_CONFIG request (OpenFlow
// 1.3+) for meter (MeterAll for all).
func EncodeMeterConfigRequest(v Version, xid uint32, meter uint32) []byte {
	b := statsRequest(v, xid, StatsMeterConfig, 0)
	b = put32(b, meter)
	return finish(pad(b, 4))
}

// DecodeMeterConfig decodes a METER_CONFIG reply's body.
func DecodeMeterConfig(r *Reply) ([]MeterConfig, error) {
	b := r.Body
	var ms []MeterConfig
	for len(b) > 0 {
		if len(b) < 8 {
			return nil, errorf(BadLen, "", "truncated meter configuration")
		}
		n := int(binary.BigEndian.Uint16(b))
		if n < 8 || n > len(b) {
			return nil, errorf(BadLen, "", "meter configuration of %d bytes", n)
		}
		bands, err := decodeBands(b[8:n], "")
		if err != nil {
			return nil, err
		}
		ms = append(ms, MeterConfig{Flags: binary.BigEndian.Uint16(b[2:]), ID: binary.BigEndian.Uint32(b[4:]), Bands: bands})
		b = b[n:]
	}
	return ms, nil
}
