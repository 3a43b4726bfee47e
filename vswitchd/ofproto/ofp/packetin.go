package ofp

import (
	"encoding/binary"

	"github.com/govs/govs/datapath/flow"
)

// Nicira packet-in subtypes and NXT_PACKET_IN2 properties.
const (
	nxtPacketIn  = 17
	nxtPacketIn2 = 30

	nxpintPacket   = 0
	nxpintFullLen  = 1
	nxpintTableID  = 3
	nxpintCookie   = 4
	nxpintReason   = 5
	nxpintMetadata = 6
	nxpintUserdata = 7
)

// Packet-in formats (NXT_SET_PACKET_IN_FORMAT).
const (
	PacketInStandard = 0 // NXPIF_STANDARD: OFPT_PACKET_IN
	PacketInNXT      = 1 // NXPIF_NXT_PACKET_IN
	PacketInNXT2     = 2 // NXPIF_NXT_PACKET_IN2
)

// NoBuffer is the buffer_id of an unbuffered packet: govs, as OVS, never
// buffers packets sent to controllers.
const NoBuffer = 0xffffffff

// PacketIn is one packet sent to controllers, as the translation left it.
type PacketIn struct {
	// Reason is the wire reason (OFPR_*) of OpenFlow 1.4+.
	Reason  uint8
	TableID uint8
	Cookie  uint64
	// Metadata holds the pipeline metadata OVS reports (in_port always,
	// tun_id, metadata, registers, pkt_mark and ct_* when not zero); its
	// packet header fields are unused.
	Metadata Flow
	// Data is the whole packet; TotalLen is its length before any
	// truncation (Data may be shorter).
	Data     []byte
	TotalLen int
	Userdata []byte
	// Cont: a paused translation's continuation (NXT_PACKET_IN2 only).
	Cont *Continuation
	// MaxLen is the controller action's max_len: how much of a packet
	// sent for OFPR_ACTION goes up (other reasons: the connection's
	// miss_send_len). ControllerID picks the connections that get it.
	MaxLen       uint16
	ControllerID uint16
	// ExplicitMiss: sent by a table-miss flow (priority 0, matching
	// everything) for OFPR_ACTION, which OpenFlow 1.3+ reports as
	// OFPR_NO_MATCH.
	ExplicitMiss bool
	// ImplicitMiss: sent by OVS's miss rule (no flow matched), which only
	// OpenFlow 1.0-1.2 connections get, as OFPR_NO_MATCH.
	ImplicitMiss bool
}

// WireReason is the reason pi carries on version v: the OpenFlow 1.4
// reasons (action set, group, packet out) are OFPR_ACTION before 1.4.
func (pi *PacketIn) WireReason(v Version) uint8 {
	if pi.ExplicitMiss && pi.Reason == PacketInAction && v >= V13 {
		return PacketInNoMatch
	}
	if pi.Reason > PacketInInvalidTTL && v < V14 {
		return PacketInAction
	}
	return pi.Reason
}

// metadataMatch is the match a packet-in carries: the metadata fields,
// exact, those that are not zero, and in_port always (OVS's
// flow_get_metadata).
func (pi *PacketIn) metadataMatch() Match {
	var m Match
	f, mk := &m.Flow, &m.Mask
	md := &pi.Metadata
	f.InPort, mk.InPort = md.InPort, ^uint32(0)
	if md.TunID != 0 {
		f.TunID, mk.TunID = md.TunID, ^uint64(0)
	}
	if fl := md.TunFlags & flow.TunFlagOAM; fl != 0 {
		f.TunFlags, mk.TunFlags = fl, flow.TunFlagOAM
	}
	all16 := [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	v4 := [16]byte{10: 0xff, 11: 0xff}
	if md.TunSrc != ([16]byte{}) && md.TunSrc != v4 {
		f.TunSrc, mk.TunSrc = md.TunSrc, all16
	}
	if md.TunDst != ([16]byte{}) && md.TunDst != v4 {
		f.TunDst, mk.TunDst = md.TunDst, all16
	}
	if md.TunGBPID != 0 {
		f.TunGBPID, mk.TunGBPID = md.TunGBPID, 0xffff
	}
	if md.TunGBPFlags != 0 {
		f.TunGBPFlags, mk.TunGBPFlags = md.TunGBPFlags, 0xff
	}
	// OVS's tun_metadata_get_fmd: the present fields, as long as their
	// mapping.
	for idx := range TLVMaxFields {
		if l := md.TunTab.Loc(idx); l != nil && md.TunMDPresent&(1<<idx) != 0 {
			m.TunMD = append(m.TunMD, TunMDEntry{Idx: idx, Value: l.read(&md.TunMD)})
		}
	}
	if md.Metadata != 0 {
		f.Metadata, mk.Metadata = md.Metadata, ^uint64(0)
	}
	for i, r := range md.Regs {
		if r != 0 {
			f.Regs[i], mk.Regs[i] = r, ^uint32(0)
		}
	}
	if md.PktMark != 0 {
		f.PktMark, mk.PktMark = md.PktMark, ^uint32(0)
	}
	if md.CtState != 0 {
		f.CtState, mk.CtState = md.CtState, ^uint8(0)
	}
	if md.CtZone != 0 {
		f.CtZone, mk.CtZone = md.CtZone, ^uint16(0)
	}
	if md.CtMark != 0 {
		f.CtMark, mk.CtMark = md.CtMark, ^uint32(0)
	}
	if md.CtLabel != ([16]byte{}) {
		f.CtLabel = md.CtLabel
		for i := range mk.CtLabel {
			mk.CtLabel[i] = 0xff
		}
	}
	return m
}

// EncodePacketIn encodes pi for a connection of version v with packet-in
// format format (PacketIn*), unbuffered (OVS's ofputil_encode_packet_in).
func EncodePacketIn(v Version, format uint32, pi *PacketIn) []byte {
	reason := pi.WireReason(v)
	m := pi.metadataMatch()
	switch {
	case format == PacketInNXT2:
		b := newMsg(v, TypeVendor, 0, 64+len(pi.Data))
		b = put32(b, NiciraVendor)
		b = put32(b, nxtPacketIn2)
		b = appendProp(b, nxpintPacket, pi.Data)
		if pi.TotalLen != len(pi.Data) {
			b = appendProp(b, nxpintFullLen, binary.BigEndian.AppendUint32(nil, uint32(pi.TotalLen)))
		}
		if pi.TableID != 0 {
			b = appendProp(b, nxpintTableID, []byte{pi.TableID})
		}
		b = appendProp(b, nxpintCookie, append(make([]byte, 4), binary.BigEndian.AppendUint64(nil, pi.Cookie)...))
		b = appendProp(b, nxpintReason, []byte{reason})
		b = appendProp(b, nxpintMetadata, AppendNXMatch(nil, &m, false))
		if len(pi.Userdata) > 0 {
			b = appendProp(b, nxpintUserdata, pi.Userdata)
		}
		if pi.Cont != nil {
			b = appendContinuation(b, v, pi.Cont)
		}
		return finish(b)
	case format == PacketInNXT && v < V15:
		b := newMsg(v, TypeVendor, 0, 64+len(pi.Data))
		b = put32(b, NiciraVendor)
		b = put32(b, nxtPacketIn)
		b = put32(b, NoBuffer)
		b = put16(b, uint16(pi.TotalLen))
		b = put8(b, reason)
		b = put8(b, pi.TableID)
		b = put64(b, pi.Cookie)
		mlen := len(b)
		b = put16(b, 0)
		b = pad(b, 6)
		ms := len(b)
		b = AppendNXMatch(b, &m, true)
		binary.BigEndian.PutUint16(b[mlen:], uint16(len(b)-ms))
		b = padTo8(b, ms)
		b = pad(b, 2)
		return finish(append(b, pi.Data...))
	case v == V10:
		b := newMsg(v, TypePacketIn, 0, 10+len(pi.Data))
		b = put32(b, NoBuffer)
		b = put16(b, uint16(pi.TotalLen))
		b = put16(b, port10(pi.Metadata.InPort))
		b = put8(b, reason)
		b = pad(b, 1)
		return finish(append(b, pi.Data...))
	case v == V11:
		b := newMsg(v, TypePacketIn, 0, 16+len(pi.Data))
		b = put32(b, NoBuffer)
		b = put32(b, pi.Metadata.InPort)
		b = put32(b, pi.Metadata.InPort)
		b = put16(b, uint16(pi.TotalLen))
		b = put8(b, reason)
		b = put8(b, pi.TableID)
		return finish(append(b, pi.Data...))
	}
	b := newMsg(v, TypePacketIn, 0, 32+len(pi.Data))
	b = put32(b, NoBuffer)
	b = put16(b, uint16(pi.TotalLen))
	b = put8(b, reason)
	b = put8(b, pi.TableID)
	if v >= V13 {
		b = put64(b, pi.Cookie)
	}
	b = appendOXMMatch(b, &m)
	b = pad(b, 2)
	return finish(append(b, pi.Data...))
}

// appendProp appends an OpenFlow property of type typ with value val,
// padded to 8 bytes.
func appendProp(b []byte, typ uint16, val []byte) []byte {
	start := len(b)
	b = put16(b, typ)
	b = put16(b, uint16(4+len(val)))
	b = append(b, val...)
	return padTo8(b, start)
}
