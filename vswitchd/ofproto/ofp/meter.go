package ofp

import "encoding/binary"

// MeterMod is OFPT_METER_MOD (OpenFlow 1.3+). A delete carries no flags
// and no bands.
type MeterMod struct {
	Header
	Command uint16
	Flags   uint16
	ID      uint32
	Bands   []MeterBand
}

// MeterBand is one ofp13_meter_band: Rate in kbit/s or packets/s, Burst in
// kbit or packets; PrecLevel only for a dscp_remark band.
type MeterBand struct {
	Type        uint16
	Rate, Burst uint32
	PrecLevel   uint8
}

// Meter commands (ofp13_meter_mod_command).
const (
	MeterAdd    = 0
	MeterModify = 1
	MeterDelete = 2
)

// Meter flags (ofp13_meter_flags).
const (
	MeterKbps      = 1
	MeterPktps     = 2
	MeterBurst     = 4
	MeterStatsFlag = 8
)

// Meter band types (ofp13_meter_band_type).
const (
	BandDrop       = 1
	BandDSCPRemark = 2
)

// Meter ids with a meaning of their own (ofp13_meter).
const (
	MeterMax        = 0xffff0000
	MeterSlowpath   = 0xfffffffd
	MeterController = 0xfffffffe
	MeterAll        = 0xffffffff
)

// Multipart kinds of meters (OpenFlow 1.3+).
const (
	StatsMeter         StatsKind = 9
	StatsMeterConfig   StatsKind = 10
	StatsMeterFeatures StatsKind = 11
)

// The meter errors (OFPMMFC_*, OpenFlow 1.3+'s type 12), beyond
// InvalidMeter.
const (
	MeterUnknown Errno = 230 + iota // after group.go's
	MeterExists
	UnknownMeter
	MeterBadCommand
	MeterBadFlags
	MeterBadRate
	MeterBadBand
	OutOfMeters
	OutOfBands
)

func init() {
	for e, c := range map[Errno]struct {
		name string
		code uint16
	}{
		MeterUnknown: {"OFPMMFC_UNKNOWN", 0}, MeterExists: {"OFPMMFC_METER_EXISTS", 1},
		UnknownMeter: {"OFPMMFC_UNKNOWN_METER", 3}, MeterBadCommand: {"OFPMMFC_BAD_COMMAND", 4},
		MeterBadFlags: {"OFPMMFC_BAD_FLAGS", 5}, MeterBadRate: {"OFPMMFC_BAD_RATE", 6},
		MeterBadBand: {"OFPMMFC_BAD_BAND", 8}, OutOfMeters: {"OFPMMFC_OUT_OF_METERS", 10},
		OutOfBands: {"OFPMMFC_OUT_OF_BANDS", 11},
	} {
		errnoExtra[e] = c.name
		errCodes[e] = allVersions(12, c.code)
	}
}

// meterBandLen is sizeof(struct ofp13_meter_band_drop), the length of
// every band type OVS knows.
const meterBandLen = 16

// decodeMeterMod decodes ofp13_meter_mod as OVS's
// ofputil_decode_meter_mod.
func decodeMeterMod(h Header, body []byte) (Message, error) {
	const name = "OFPT_METER_MOD"
	if len(body) < 8 {
		return nil, errorf(BadLen, name, "%d bytes of body", len(body))
	}
	m := &MeterMod{Header: h, Command: binary.BigEndian.Uint16(body), ID: binary.BigEndian.Uint32(body[4:])}
	switch m.Command {
	case MeterDelete:
		return m, nil
	case MeterAdd, MeterModify:
	default:
		return nil, errorf(MeterBadCommand, name, "command %d", m.Command)
	}
	m.Flags = binary.BigEndian.Uint16(body[2:])
	if m.Flags&MeterKbps != 0 && m.Flags&MeterPktps != 0 {
		return nil, errorf(MeterBadFlags, name, "both kbps and pktps")
	}
	bands, err := decodeBands(body[8:], name)
	if err != nil {
		return nil, err
	}
	m.Bands = bands
	return m, nil
}

func decodeBands(b []byte, name string) ([]MeterBand, error) {
	var bands []MeterBand
	for len(b) >= meterBandLen {
		if n := binary.BigEndian.Uint16(b[2:]); n != meterBandLen {
			return nil, errorf(BadLen, name, "band of %d bytes", n)
		}
		mb := MeterBand{Type: binary.BigEndian.Uint16(b), Rate: binary.BigEndian.Uint32(b[4:]), Burst: binary.BigEndian.Uint32(b[8:])}
		switch mb.Type {
		case BandDrop:
		case BandDSCPRemark:
			mb.PrecLevel = b[12]
		default:
			return nil, errorf(MeterBadBand, name, "band type %d", mb.Type)
		}
		bands = append(bands, mb)
		b = b[meterBandLen:]
	}
	if len(b) != 0 {
		return nil, errorf(BadLen, name, "%d bytes after the bands", len(b))
	}
	return bands, nil
}

// decodeMeterStats decodes a METER, METER_CONFIG or METER_FEATURES
// request: the first two carry ofp13_meter_multipart_request (meter_id,
// pad[4]), the last nothing.
func decodeMeterStats(m *StatsRequest, body []byte, name string) (Message, error) {
	if m.Version < V13 {
		return nil, errorf(BadStat, name, "statistics type %d not supported in %s", m.Kind, m.Version)
	}
	if m.Kind == StatsMeterFeatures {
		if len(body) != 0 {
			return nil, errorf(BadLen, name, "%d bytes of body, want 0", len(body))
		}
		return m, nil
	}
	if len(body) != 8 {
		return nil, errorf(BadLen, name, "%d bytes of body, want 8", len(body))
	}
	m.Meter = binary.BigEndian.Uint32(body)
	return m, nil
}

// MeterConfig is one entry of a METER_CONFIG reply.
type MeterConfig struct {
	ID    uint32
	Flags uint16
	Bands []MeterBand
}

// MeterStats is one entry of a METER reply.
type MeterStats struct {
	ID                   uint32
	FlowCount            uint32
	Packets, Bytes       uint64
	DurationSec, DurNsec uint32
	// Bands are each band's packets and bytes, in the meter's order.
	Bands [][2]uint64
}

// MeterFeatures is the METER_FEATURES reply.
type MeterFeatures struct {
	MaxMeter     uint32
	BandTypes    uint32 // bit n set: band type n supported
	Capabilities uint32 // meter flags supported
	MaxBands     uint8
	MaxColor     uint8
}

// EncodeMeterConfigReply answers a METER_CONFIG request.
func EncodeMeterConfigReply(v Version, xid uint32, ms []MeterConfig) [][]byte {
	r := newStatsReply(v, xid, StatsMeterConfig, false)
	for _, m := range ms {
		var b []byte
		b = put16(b, uint16(8+meterBandLen*len(m.Bands)))
		b = put16(b, m.Flags)
		b = put32(b, m.ID)
		r.add(appendBands(b, m.Bands))
	}
	return r.done()
}

// EncodeMeterStatsReply answers a METER request.
func EncodeMeterStatsReply(v Version, xid uint32, ms []MeterStats) [][]byte {
	r := newStatsReply(v, xid, StatsMeter, false)
	for _, m := range ms {
		var b []byte
		b = put32(b, m.ID)
		b = put16(b, uint16(40+16*len(m.Bands)))
		b = pad(b, 6)
		b = put32(b, m.FlowCount)
		b = put64(b, m.Packets)
		b = put64(b, m.Bytes)
		b = put32(b, m.DurationSec)
		b = put32(b, m.DurNsec)
		for _, bs := range m.Bands {
			b = put64(b, bs[0])
			b = put64(b, bs[1])
		}
		r.add(b)
	}
	return r.done()
}

// EncodeMeterFeaturesReply answers a METER_FEATURES request.
func EncodeMeterFeaturesReply(v Version, xid uint32, f MeterFeatures) [][]byte {
	r := newStatsReply(v, xid, StatsMeterFeatures, false)
	var b []byte
	b = put32(b, f.MaxMeter)
	b = put32(b, f.BandTypes)
	b = put32(b, f.Capabilities)
	b = put8(b, f.MaxBands)
	b = put8(b, f.MaxColor)
	r.add(pad(b, 2))
	return r.done()
}

// EncodeMeterMod returns OFPT_METER_MOD m (for tests and controllers).
func EncodeMeterMod(v Version, xid uint32, m *MeterMod) []byte {
	b := newMsg(v, type13MeterMod, xid, 8+meterBandLen*len(m.Bands))
	b = put16(b, m.Command)
	b = put16(b, m.Flags)
	b = put32(b, m.ID)
	return finish(appendBands(b, m.Bands))
}

// appendBands appends bands as ofp13_meter_band_drop or _dscp_remark.
func appendBands(b []byte, bands []MeterBand) []byte {
	for _, mb := range bands {
		b = put16(b, mb.Type)
		b = put16(b, meterBandLen)
		b = put32(b, mb.Rate)
		b = put32(b, mb.Burst)
		b = put8(b, mb.PrecLevel)
		b = pad(b, 3)
	}
	return b
}

// Meters returns the meters acts use.
func Meters(acts []Action) []uint32 {
	var ids []uint32
	for i := range acts {
		switch acts[i].Type {
		case ActMeter:
			ids = append(ids, acts[i].ID)
		case ActClone:
			ids = append(ids, Meters(acts[i].Nested)...)
		}
	}
	return ids
}

// appendMeter encodes a meter as OVS's encode_METER: an instruction in
// OpenFlow 1.3 and 1.4, an action from 1.5 on, nothing before 1.3.
func appendMeter(b []byte, v Version, a *Action) []byte {
	switch {
	case v == V13 || v == V14:
		b = put16(b, 6) // OFPIT13_METER
		b = put16(b, 8)
		return put32(b, a.ID)
	case v >= V15:
		b = put16(b, at15Meter)
		b = put16(b, 8)
		return put32(b, a.ID)
	}
	return b
}
