package ofp

import (
	"encoding/binary"
	"fmt"
)

// Bundles: OFPT_BUNDLE_CONTROL and OFPT_BUNDLE_ADD_MESSAGE of OpenFlow
// 1.4+, and the ONF extension that carries them in OpenFlow 1.3
// (ONFT_BUNDLE_CONTROL, ONFT_BUNDLE_ADD_MESSAGE), laid out as OVS's
// lib/ofp-bundle.c reads them.

// ONFVendor is the Open Networking Foundation's experimenter ID.
const ONFVendor = 0x4f4e4600

// ONF experimenter message types of OpenFlow 1.3.
const (
	onftBundleControl = 2300
	onftBundleAdd     = 2301
)

// Bundle control types (ofp14_bundle_ctrl_type).
const (
	BundleOpenRequest    = 0
	BundleOpenReply      = 1
	BundleCloseRequest   = 2
	BundleCloseReply     = 3
	BundleCommitRequest  = 4
	BundleCommitReply    = 5
	BundleDiscardRequest = 6
	BundleDiscardReply   = 7
)

// Bundle flags (ofp14_bundle_flags).
const (
	BundleAtomic  = 1 << 0
	BundleOrdered = 1 << 1
)

// bundleCtrlLen is sizeof(struct ofp14_bundle_ctrl_msg) after the header:
// bundle_id, type, flags.
const bundleCtrlLen = 8

// Bundle errors (OFPET14_BUNDLE_FAILED, ONF's 2300+code in OpenFlow 1.3).
const (
	BundleUnknown     Errno = 160 + iota // OFPBFC_UNKNOWN; before group.go's 200
	BundleEPerm                          // OFPBFC_EPERM
	BundleBadID                          // OFPBFC_BAD_ID
	BundleExist                          // OFPBFC_BUNDLE_EXIST
	BundleClosed                         // OFPBFC_BUNDLE_CLOSED
	OutOfBundles                         // OFPBFC_OUT_OF_BUNDLES
	BundleBadType                        // OFPBFC_BAD_TYPE
	BundleBadFlags                       // OFPBFC_BAD_FLAGS
	BundleMsgBadLen                      // OFPBFC_MSG_BAD_LEN
	BundleMsgBadXid                      // OFPBFC_MSG_BAD_XID
	BundleMsgUnsup                       // OFPBFC_MSG_UNSUP
	BundleMsgConflict                    // OFPBFC_MSG_CONFLICT
	BundleMsgTooMany                     // OFPBFC_MSG_TOO_MANY
	BundleMsgFailed                      // OFPBFC_MSG_FAILED
	BundleTimeout                        // OFPBFC_TIMEOUT
	BundleInProgress                     // OFPBFC_BUNDLE_IN_PROGRESS
	BundleBadVersion                     // OFPBFC_BAD_VERSION (an OVS extension)
)

func init() {
	names := [...]string{"OFPBFC_UNKNOWN", "OFPBFC_EPERM", "OFPBFC_BAD_ID", "OFPBFC_BUNDLE_EXIST",
		"OFPBFC_BUNDLE_CLOSED", "OFPBFC_OUT_OF_BUNDLES", "OFPBFC_BAD_TYPE", "OFPBFC_BAD_FLAGS",
		"OFPBFC_MSG_BAD_LEN", "OFPBFC_MSG_BAD_XID", "OFPBFC_MSG_UNSUP", "OFPBFC_MSG_CONFLICT",
		"OFPBFC_MSG_TOO_MANY", "OFPBFC_MSG_FAILED", "OFPBFC_TIMEOUT", "OFPBFC_BUNDLE_IN_PROGRESS"}
	for i, name := range names {
		e := BundleUnknown + Errno(i)
		onf := errCode{vendor: ONFVendor, typ: 2300 + uint16(i)}
		std := errCode{typ: 17, code: uint16(i)}
		errnoExtra[e] = name
		errCodes[e] = [6]errCode{onf, onf, onf, onf, std, std}
	}
	// As `ovs-ofctl print-error` gives it: Nicira's 22 in 1.4+, nothing
	// in 1.3 (OVS then sends NXBRC_UNENCODABLE_ERROR).
	errnoExtra[BundleBadVersion] = "OFPBFC_BAD_VERSION"
	unenc := errCode{vendor: NiciraVendor, typ: 10}
	nx := errCode{vendor: NiciraVendor, typ: 22}
	errCodes[BundleBadVersion] = [6]errCode{unenc, unenc, unenc, unenc, nx, nx}
}

// BundleControl is OFPT_BUNDLE_CONTROL (ONFT_BUNDLE_CONTROL in 1.3).
// OVS reads no property; neither does govs.
type BundleControl struct {
	Header
	ID    uint32
	Type  uint16
	Flags uint16
}

// BundleAdd is OFPT_BUNDLE_ADD_MESSAGE (ONFT_BUNDLE_ADD_MESSAGE in 1.3):
// Msg is the decoded message to add (*FlowMod, *GroupMod, *PortMod or
// *PacketOut, the messages OVS's ofputil_is_bundlable allows) and Raw
// its bytes, which an error about it echoes.
type BundleAdd struct {
	Header
	ID    uint32
	Flags uint16
	Msg   Message
	Raw   []byte
}

// decodeBundle decodes the body (after ofp_header, or after the ONF
// experimenter header in 1.3) of a bundle control or add message.
func decodeBundle(h Header, body []byte, add bool, name string) (Message, error) {
	if len(body) < bundleCtrlLen {
		return nil, errorf(BadLen, name, "%d bytes of body", len(body))
	}
	id, typ, flags := binary.BigEndian.Uint32(body), binary.BigEndian.Uint16(body[4:]), binary.BigEndian.Uint16(body[6:])
	rest := body[bundleCtrlLen:]
	if !add {
		// Properties come in 8-byte units (OVS's raw type
		// uint8_t[8][]).
		if len(rest)%8 != 0 {
			return nil, errorf(BadLen, name, "%d bytes of properties", len(rest))
		}
		return &BundleControl{Header: h, ID: id, Type: typ, Flags: flags}, nil
	}
	if len(rest) < HeaderLen {
		return nil, errorf(BundleMsgBadLen, name, "%d bytes of message", len(rest))
	}
	inner := ParseHeader(rest)
	if inner.Version != h.Version {
		return nil, errorf(BundleBadVersion, name, "message of %s in a %s bundle", inner.Version, h.Version)
	}
	if inner.Length < HeaderLen || int(inner.Length) > len(rest) {
		return nil, errorf(BundleMsgBadLen, name, "message length %d, %d bytes left", inner.Length, len(rest))
	}
	if inner.Xid != h.Xid {
		return nil, errorf(BundleMsgBadXid, name, "message xid %#x, bundle add's %#x", inner.Xid, h.Xid)
	}
	raw := rest[:inner.Length:inner.Length]
	if !bundlable(inner, raw) {
		return nil, errorf(BundleMsgUnsup, name, "%s not allowed in a bundle", msgName(inner, raw))
	}
	m, err := Decode(raw)
	if err != nil {
		return nil, err
	}
	return &BundleAdd{Header: h, ID: id, Flags: flags, Msg: m, Raw: raw}, nil
}

// IsBundleAdd reports whether b, a message with header h, is a bundle
// add (OFPT_BUNDLE_ADD_MESSAGE, ONFT_BUNDLE_ADD_MESSAGE in 1.3). What
// Decode makes of one refers to b's bytes: a receiver that keeps the
// message until the commit decodes a copy of b it owns.
func IsBundleAdd(h Header, b []byte) bool {
	if h.Version >= V14 {
		return h.Type == type14BundleAdd
	}
	return h.Version == V13 && h.Type == TypeVendor && len(b) >= HeaderLen+8 &&
		binary.BigEndian.Uint32(b[HeaderLen:]) == ONFVendor && binary.BigEndian.Uint32(b[HeaderLen+4:]) == onftBundleAdd
}

// bundlable reports whether a message may be added to a bundle: FLOW_MOD
// (NXT_FLOW_MOD too), GROUP_MOD, PORT_MOD and PACKET_OUT, as OVS's
// ofputil_is_bundlable.
func bundlable(h Header, b []byte) bool {
	switch {
	case h.Type == TypeFlowMod, h.Type == TypePacketOut:
		return true
	case h.Version > V10 && (h.Type == type11GroupMod || h.Type == type11PortMod):
		return true
	case h.Version == V10 && h.Type == type10PortMod:
		return true
	case h.Type == TypeVendor && len(b) >= HeaderLen+8:
		return binary.BigEndian.Uint32(b[HeaderLen:]) == NiciraVendor && binary.BigEndian.Uint32(b[HeaderLen+4:]) == nxtFlowMod
	}
	return false
}

// msgName names a message for logs: its type, or its vendor subtype.
func msgName(h Header, b []byte) string {
	if n := typeName(h.Version, h.Type); n != "" && h.Type != TypeVendor {
		return n
	}
	if h.Type == TypeVendor && len(b) >= HeaderLen+8 {
		return fmt.Sprintf("vendor message subtype %d", binary.BigEndian.Uint32(b[HeaderLen+4:]))
	}
	return fmt.Sprintf("message type %d", h.Type)
}

// decodeONF decodes an ONF experimenter message of OpenFlow 1.3 (body
// after the experimenter ID).
func decodeONF(h Header, body []byte) (Message, error) {
	if len(body) < 4 {
		return nil, errorf(BadLen, "ONFT", "%d bytes of body", len(body))
	}
	typ, rest := binary.BigEndian.Uint32(body), body[4:]
	if h.Version == V13 {
		switch typ {
		case onftBundleControl:
			return decodeBundle(h, rest, false, "ONFT_BUNDLE_CONTROL")
		case onftBundleAdd:
			return decodeBundle(h, rest, true, "ONFT_BUNDLE_ADD_MESSAGE")
		case onfFlowMonitor:
			return decodeFlowMonitorCancel(h, rest, "ONFT_FLOW_MONITOR_CANCEL")
		}
	}
	return nil, errorf(BadSubtype, "ONFT", "ONF experimenter type %d not supported in %s", typ, h.Version)
}

// EncodeBundleReply answers a bundle control request with reply type typ
// (the request's type + 1), the request's ID and no flags, as OVS's
// ofputil_encode_bundle_ctrl_reply.
func EncodeBundleReply(v Version, xid, id uint32, typ uint16) []byte {
	return EncodeBundleControl(v, xid, id, typ, 0)
}

// EncodeBundleControl is a bundle control request (ONFT_BUNDLE_CONTROL
// in OpenFlow 1.3), as OVS's ofputil_encode_bundle_ctrl_request.
func EncodeBundleControl(v Version, xid, id uint32, typ, flags uint16) []byte {
	if v == V13 {
		b := newMsg(v, TypeVendor, xid, 16)
		b = put32(b, ONFVendor)
		b = put32(b, onftBundleControl)
		return finish(put16(put16(put32(b, id), typ), flags))
	}
	b := newMsg(v, type14BundleControl, xid, 8)
	return finish(put16(put16(put32(b, id), typ), flags))
}

// EncodeBundleAdd wraps msg (of version v) in a bundle add message with
// msg's xid, as OVS's ofputil_encode_bundle_add.
func EncodeBundleAdd(v Version, id uint32, flags uint16, msg []byte) []byte {
	xid := ParseHeader(msg).Xid
	var b []byte
	if v == V13 {
		b = newMsg(v, TypeVendor, xid, 16+len(msg))
		b = put32(b, ONFVendor)
		b = put32(b, onftBundleAdd)
	} else {
		b = newMsg(v, type14BundleAdd, xid, 8+len(msg))
	}
	b = put16(put16(put32(b, id), 0), flags)
	return finish(append(b, msg...))
}
