// Package ofp is the OpenFlow 1.0–1.5 wire codec of govs' switch side:
// typed messages decoded from and encoded to bytes, with no I/O. Layouts
// and numbers are OVS's (include/openflow/*.h, lib/ofp-msgs.h,
// lib/ofp-errors.h), including its extensions (Nicira vendor messages,
// OFPST_PORT_DESC on OpenFlow 1.0).
//
// Decode returns a typed message, or an *Error naming the OFPT_ERROR
// type/code OVS sends for the malformed or unsupported message; the
// caller answers it and keeps the connection.
package ofp

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Version is an OpenFlow protocol version as ofp_header.version carries it.
type Version uint8

// The versions govs speaks.
const (
	V10 Version = 1
	V11 Version = 2
	V12 Version = 3
	V13 Version = 4
	V14 Version = 5
	V15 Version = 6

	MinVersion = V10
	MaxVersion = V15
)

func (v Version) String() string {
	if v >= V10 && v <= V15 {
		return fmt.Sprintf("OpenFlow1%d", v-1)
	}
	return fmt.Sprintf("OpenFlow(0x%02x)", uint8(v))
}

// Versions is a set of versions, bit v set for version v (the HELLO
// version bitmap's encoding).
type Versions uint32

// AllVersions is every version govs speaks.
const AllVersions Versions = 1<<V10 | 1<<V11 | 1<<V12 | 1<<V13 | 1<<V14 | 1<<V15

// Has reports whether v is in the set.
func (s Versions) Has(v Version) bool { return v < 32 && s&(1<<v) != 0 }

// Highest returns the highest version in the set, 0 if empty.
func (s Versions) Highest() Version {
	for v := Version(31); v > 0; v-- {
		if s.Has(v) {
			return v
		}
	}
	return 0
}

// HeaderLen is the size of ofp_header.
const HeaderLen = 8

// MaxLen is the largest OpenFlow message (ofp_header.length is 16 bits).
const MaxLen = 65535

// Header is ofp_header.
type Header struct {
	Version Version
	Type    uint8
	Length  uint16
	Xid     uint32
}

// ParseHeader reads the header at the start of b (at least HeaderLen bytes).
func ParseHeader(b []byte) Header {
	return Header{Version: Version(b[0]), Type: b[1], Length: binary.BigEndian.Uint16(b[2:]), Xid: binary.BigEndian.Uint32(b[4:])}
}

// ErrFraming means a header's length is below HeaderLen: the stream can no
// longer be split into messages and the connection must be closed (OVS's
// vconn does the same).
var ErrFraming = errors.New("OpenFlow message length too short")

// Split returns the first complete message of buf and the rest; msg is nil
// when buf holds no complete message yet.
func Split(buf []byte) (msg, rest []byte, err error) {
	if len(buf) < HeaderLen {
		return nil, buf, nil
	}
	n := int(binary.BigEndian.Uint16(buf[2:]))
	if n < HeaderLen {
		return nil, buf, fmt.Errorf("%w: %d bytes", ErrFraming, n)
	}
	if len(buf) < n {
		return nil, buf, nil
	}
	return buf[:n:n], buf[n:], nil
}

// Message types common to every version.
const (
	TypeHello          = 0
	TypeError          = 1
	TypeEchoRequest    = 2
	TypeEchoReply      = 3
	TypeVendor         = 4 // OFPT_VENDOR, OFPT_EXPERIMENTER in 1.1+
	TypeFeaturesReq    = 5
	TypeFeaturesReply  = 6
	TypeGetConfigReq   = 7
	TypeGetConfigReply = 8
	TypeSetConfig      = 9
	TypePacketIn       = 10
	TypeFlowRemoved    = 11
	TypePortStatus     = 12
	TypePacketOut      = 13
	TypeFlowMod        = 14
)

// OpenFlow 1.0 message types that differ from 1.1+.
const (
	type10PortMod      = 15
	type10StatsRequest = 16
	type10StatsReply   = 17
	type10BarrierReq   = 18
	type10BarrierReply = 19
	type10QueueGetReq  = 20
)

// OpenFlow 1.1+ message types.
const (
	type11GroupMod      = 15
	type11PortMod       = 16
	type11TableMod      = 17
	type11MultipartReq  = 18
	type11MultipartRep  = 19
	type11BarrierReq    = 20
	type11BarrierReply  = 21
	type11QueueGetReq   = 22 // 1.1–1.3
	type12RoleRequest   = 24
	type12RoleReply     = 25
	type13GetAsyncReq   = 26
	type13SetAsync      = 28
	type13MeterMod      = 29
	type14BundleControl = 33
	type14BundleAdd     = 34
)

var (
	commonTypeNames = [...]string{"OFPT_HELLO", "OFPT_ERROR", "OFPT_ECHO_REQUEST", "OFPT_ECHO_REPLY", "OFPT_VENDOR",
		"OFPT_FEATURES_REQUEST", "OFPT_FEATURES_REPLY", "OFPT_GET_CONFIG_REQUEST", "OFPT_GET_CONFIG_REPLY",
		"OFPT_SET_CONFIG", "OFPT_PACKET_IN", "OFPT_FLOW_REMOVED", "OFPT_PORT_STATUS", "OFPT_PACKET_OUT", "OFPT_FLOW_MOD"}
	typeNames10 = map[uint8]string{15: "OFPT_PORT_MOD", 16: "OFPST_REQUEST", 17: "OFPST_REPLY", 18: "OFPT_BARRIER_REQUEST",
		19: "OFPT_BARRIER_REPLY", 20: "OFPT_QUEUE_GET_CONFIG_REQUEST", 21: "OFPT_QUEUE_GET_CONFIG_REPLY"}
	typeNames11 = map[uint8]string{15: "OFPT_GROUP_MOD", 16: "OFPT_PORT_MOD", 17: "OFPT_TABLE_MOD", 18: "OFPMP_REQUEST",
		19: "OFPMP_REPLY", 20: "OFPT_BARRIER_REQUEST", 21: "OFPT_BARRIER_REPLY", 22: "OFPT_QUEUE_GET_CONFIG_REQUEST",
		23: "OFPT_QUEUE_GET_CONFIG_REPLY", 24: "OFPT_ROLE_REQUEST", 25: "OFPT_ROLE_REPLY", 26: "OFPT_GET_ASYNC_REQUEST",
		27: "OFPT_GET_ASYNC_REPLY", 28: "OFPT_SET_ASYNC", 29: "OFPT_METER_MOD", 30: "OFPT_ROLE_STATUS",
		31: "OFPT_TABLE_STATUS", 32: "OFPT_REQUESTFORWARD", 33: "OFPT_BUNDLE_CONTROL", 34: "OFPT_BUNDLE_ADD_MESSAGE",
		35: "OFPT_CONTROLLER_STATUS"}
	// maxType is each 1.1+ version's highest message type.
	maxType = map[Version]uint8{V11: 23, V12: 25, V13: 29, V14: 34, V15: 35}
)

// typeName is OVS's name for message type t of version v, for logs and
// errors ("" if the type does not exist in v).
func typeName(v Version, t uint8) string {
	if int(t) < len(commonTypeNames) {
		return commonTypeNames[t]
	}
	if v == V10 {
		return typeNames10[t]
	}
	if t > maxType[v] {
		return ""
	}
	return typeNames11[t]
}

// put helpers append big-endian integers.
func put8(b []byte, v uint8) []byte   { return append(b, v) }
func put16(b []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(b, v) }
func put32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }
func put64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }
func pad(b []byte, n int) []byte      { return append(b, make([]byte, n)...) }

// putString appends s as a NUL-padded field of n bytes, truncated to
// leave a terminating NUL.
func putString(b []byte, s string, n int) []byte {
	if len(s) > n-1 {
		s = s[:n-1]
	}
	b = append(b, s...)
	return pad(b, n-len(s))
}

// newMsg starts a message: a header whose length finish fills in.
func newMsg(v Version, t uint8, xid uint32, capHint int) []byte {
	b := make([]byte, 0, HeaderLen+capHint)
	b = append(b, byte(v), t, 0, 0)
	return put32(b, xid)
}

// finish sets the header's length.
func finish(b []byte) []byte {
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	return b
}
