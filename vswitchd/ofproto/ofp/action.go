package ofp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/govs/govs/datapath/flow"
)

// ActionType is the kind of a decoded action or instruction (OVS's enum
// ofpact_type, a subset).
type ActionType uint8

const (
	ActOutput ActionType = iota + 1
	// ActController is output to the controller (Port OFPP_CONTROLLER
	// or NXAST_CONTROLLER).
	ActController
	ActSetVLANVID // OpenFlow 1.0 mod_vlan_vid: push a tag if none
	ActSetVLANPCP
	ActPushVLAN
	ActPopVLAN
	ActSetField
	ActMove
	// ActStackPush pushes Src's bits on the translation's stack;
	// ActStackPop pops the top into Dst (NXAST_STACK_PUSH/POP).
	ActStackPush
	ActStackPop
	ActResubmit
	ActNote
	ActDecTTL
	ActExit
	ActClone
	ActGroup
	ActOutputReg
	ActCTClear // ct_clear: the packet's conntrack state is forgotten
	// ActConjunction is conjunction(ID, Clause+1/NClauses): the flow is
	// one clause of a conjunctive match (conjunction.go).
	ActConjunction
	ActCT  // ct(...): CT's arguments, Nested its exec() actions
	ActNAT // nat(...), only inside a ct's exec(): NAT's arguments
	// ActLearn adds or refreshes a flow made from the packet (learn.go);
	// ActFinTimeout shortens the rule's timeouts on a TCP FIN or RST.
	ActLearn
	ActFinTimeout
	// ActCheckPktLarger is check_pkt_larger(PktLen)->Dst: Dst's bit is
	// set to whether the packet is longer than PktLen bytes.
	ActCheckPktLarger
	// ActMultipath writes the link Multipath picks to its Dst;
	// ActBundle outputs to the member Bundle picks, or writes its
	// number to Dst (bundle_load).
	ActMultipath
	ActBundle
	// ActOutputTrunc is output(port=Port,max_len=ID): an output of at
	// most ID bytes of the packet (NXAST_OUTPUT_TRUNC).
	ActOutputTrunc
	// ActSetQueue is set_queue:ID, ActPopQueue pop_queue: the packet's
	// queue (its skb_priority) becomes ID, or the one it arrived in.
	// ActEnqueue (OpenFlow 1.0's enqueue) outputs to Port in queue ID.
	ActSetQueue
	ActPopQueue
	ActEnqueue
	// ActUnsupported is an action govs decodes but does not execute:
	// a flow with it is refused with Errno.
	ActUnsupported

	// Instructions (OpenFlow 1.1+), in the order they must appear.
	ActMeter
	ActClearActions
	ActWriteActions
	ActWriteMetadata
	ActGotoTable
)

// How a set-field action was encoded, so that it is encoded back the
// same way (ovs-ofctl shows "mod_dl_src", "load" or "set_field").
const (
	rawSetField = iota
	rawLegacy   // an OpenFlow 1.0 mod_* action
	rawRegLoad  // NXAST_REG_LOAD
	// rawRegLoad2: from NXAST_REG_LOAD2, sent back as one before
	// OpenFlow 1.5 and shown as a set_field (OVS's NXAST_RAW_REG_LOAD2).
	rawRegLoad2
	// rawController2: a controller action decoded from NXAST_CONTROLLER2,
	// encoded back as one (OVS keeps the raw form).
	rawController2
	// rawNXController: a controller action decoded from NXAST_CONTROLLER.
	rawNXController
	// rawSetTunnel, rawSetTunnel64: a set of tun_id from NXAST_SET_TUNNEL
	// or NXAST_SET_TUNNEL64 (ovs-ofctl's set_tunnel and set_tunnel64).
	rawSetTunnel
	rawSetTunnel64
)

// NXAST_CONTROLLER2 properties (OVS's NXAC2PT_*).
const (
	nxac2ptMaxLen = iota
	nxac2ptControllerID
	nxac2ptReason
	nxac2ptUserdata
	nxac2ptPause
	nxac2ptMeterID
)

// FieldRef is a bit range of a field (OVS's mf_subfield).
type FieldRef struct {
	Field *Field
	Ofs   int
	NBits int
}

// Action is one decoded action or instruction. Which fields are set
// depends on Type.
type Action struct {
	Type ActionType
	// Port: ActOutput's port, ActResubmit's in_port (PortInPort for
	// the packet's own); MaxLen: ActOutput/ActController's max_len.
	Port   uint32
	MaxLen uint16
	// Table: ActResubmit's table (0xff: the current one) or
	// ActGotoTable's.
	Table uint8
	// Reason and ControllerID are NXAST_CONTROLLER's; Userdata, Pause
	// and ID (its meter_id, 0 for none) NXAST_CONTROLLER2's.
	Reason       uint8
	ControllerID uint16
	Userdata     []byte
	Pause        bool
	// VLAN: ActSetVLANVID's VID, ActSetVLANPCP's PCP, ActPushVLAN's
	// Ethertype.
	VLAN uint16
	// NoPush: ActSetVLANVID or ActSetVLANPCP as OpenFlow 1.1's
	// set_vlan_vid and set_vlan_pcp, which change a tag the packet has
	// and push none (OVS's push_vlan_if_needed false); OpenFlow 1.0's
	// push one if there is none.
	NoPush bool
	// FlowHasVLAN: for ActSetVLANVID, ActSetVLANPCP and ActSetField,
	// whether the flow's match and the actions before this one leave a
	// tag on the packet (OVS's flow_has_vlan, set by CheckVLAN): their
	// OpenFlow 1.1+ forms then need no push_vlan before them.
	FlowHasVLAN bool
	// Field, Value and Mask: ActSetField (Value and Mask of the field's
	// length).
	Field       *Field
	Value, Mask []byte
	raw         int
	// wholeVar: an unmasked set_field of a variable-length field, which
	// sets all of it whatever the length of Value.
	wholeVar bool
	// tunMDMasked: a tun_metadata set that is masked though its mask
	// is all ones, as ovs-ofctl sends and shows one without a TLV map
	// (OVS's mf_field_len over all 124 bytes); ResolveActions clears
	// it, the bridge's mapping giving the length.
	tunMDMasked bool
	// Src and Dst: ActMove; Dst: ActOutputReg's source register; Src:
	// ActStackPush's field, Dst: ActStackPop's.
	Src, Dst FieldRef
	// Data: ActNote's bytes.
	Data []byte
	// Nested: ActClone's and ActWriteActions' actions.
	Nested []Action
	// Metadata and MetadataMask: ActWriteMetadata; ID: ActGroup's group,
	// ActMeter's meter, ActOutputTrunc's max_len, ActSetQueue's and
	// ActEnqueue's queue.
	Metadata, MetadataMask uint64
	ID                     uint32
	// Errno and Name: why and what an ActUnsupported is.
	Errno Errno
	Name  string
	// Clause (from 0) and NClauses: ActConjunction's, with ID.
	Clause, NClauses uint8
	// CT and NAT: ActCT's and ActNAT's arguments.
	CT  *CT
	NAT *NAT
	// CntIDs: ActDecTTL's controller ids when it came as
	// NXAST_DEC_TTL_CNT_IDS (and is encoded back as one); nil for the
	// plain dec_ttl, which reports to controller id 0.
	CntIDs []uint16
	// Learn and Fin: ActLearn's and ActFinTimeout's arguments.
	Learn *Learn
	Fin   *FinTimeout
	// PktLen: ActCheckPktLarger's length.
	PktLen uint16
	// Multipath and Bundle: ActMultipath's and ActBundle's arguments.
	Multipath *Multipath
	Bundle    *Bundle
	// resubmitTable: encoded as NXAST_RESUBMIT_TABLE.
	resubmitTable bool
	// CTOrig: ActResubmit's "ct" (NXAST_RESUBMIT_TABLE_CT, OVS's
	// with_ct_orig): the lookup sees the connection's original tuple
	// in place of the packet's addresses, protocol and ports.
	CTOrig bool
}

// OpenFlow 1.0 action types.
const (
	at10Output     = 0
	at10SetVLANVID = 1
	at10SetVLANPCP = 2
	at10StripVLAN  = 3
	at10SetDLSrc   = 4
	at10SetDLDst   = 5
	at10SetNWSrc   = 6
	at10SetNWDst   = 7
	at10SetNWTOS   = 8
	at10SetTPSrc   = 9
	at10SetTPDst   = 10
	at10Enqueue    = 11
	atVendor       = 0xffff
)

// OpenFlow 1.1+ action types.
const (
	at11Output = 0
	// OpenFlow 1.1's set actions (gone in 1.2: set_field).
	at11SetVLANVID = 1
	at11SetVLANPCP = 2
	at11SetDLSrc   = 3
	at11SetDLDst   = 4
	at11SetNWSrc   = 5
	at11SetNWDst   = 6
	at11SetNWTOS   = 7
	at11SetNWECN   = 8
	at11SetTPSrc   = 9
	at11SetTPDst   = 10
	at11PushVLAN   = 17
	at11PopVLAN    = 18
	at11SetQueue   = 21
	at11Group      = 22
	at11SetNWTTL   = 23
	at11DecNWTTL   = 24
	at12SetField   = 25
	at15CopyField  = 28
	at15Meter      = 29
)

// Nicira action subtypes (NXAST_*).
const (
	nxastResubmit       = 1
	nxastSetTunnel      = 2
	nxastSetQueue       = 4
	nxastPopQueue       = 5
	nxastRegMove        = 6
	nxastRegLoad        = 7
	nxastNote           = 8
	nxastSetTunnel64    = 9
	nxastMultipath      = 10
	nxastBundle         = 12
	nxastBundleLoad     = 13
	nxastResubmitTable  = 14
	nxastOutputReg      = 15
	nxastLearn          = 16
	nxastExit           = 17
	nxastDecTTL         = 18
	nxastFinTimeout     = 19
	nxastController     = 20
	nxastDecTTLCntIDs   = 21
	nxastWriteMetadata  = 22
	nxastStackPush      = 27
	nxastStackPop       = 28
	nxastSample         = 29
	nxastSetMPLSLabel   = 30
	nxastOutputReg2     = 32
	nxastRegLoad2       = 33
	nxastConjunction    = 34
	nxastCT             = 35
	nxastNAT            = 36
	nxastController2    = 37
	nxastSample2        = 38
	nxastOutputTrunc    = 39
	nxastGroup          = 40
	nxastDebugRecirc    = 41
	nxastClone          = 42
	nxastCTClear        = 43
	nxastResubmitCT     = 44
	nxastLearn2         = 45
	nxastEncap          = 46
	nxastDecap          = 47
	nxastDecNSHTTL      = 48
	nxastCheckPktLarger = 49
	nxastDeleteField    = 50
	nxastDebugSlow      = 254
)

// nxastNames are the Nicira actions govs decodes without executing.
var nxastNames = map[uint16]string{
	nxastSample: "sample", nxastSetMPLSLabel: "set_mpls_label",
	nxastCT: "ct", nxastNAT: "nat", nxastSample2: "sample",
	nxastDebugRecirc: "debug_recirc", nxastCTClear: "ct_clear",
	nxastEncap: "encap", nxastDecap: "decap", nxastDecNSHTTL: "dec_nsh_ttl", nxastDebugSlow: "debug_slow",
	nxastDeleteField: "delete_field",
}

func actErr(e Errno, detail string) *Error { return &Error{Errno: e, Detail: detail} }

// DecodeActions decodes a list of actions of version v (OVS's
// ofpacts_pull_openflow_actions).
func DecodeActions(v Version, b []byte) ([]Action, *Error) {
	acts, err := decodeActions(v, b, 0)
	if err != nil {
		return nil, err
	}
	if err := verifyActions(acts, 0); err != nil {
		return nil, err
	}
	// In an OpenFlow 1.0 list, write_metadata is an instruction: nothing
	// may follow it (OVS's ofpacts_verify ordering).
	for i := range acts {
		if acts[i].Type == ActWriteMetadata && i != len(acts)-1 {
			return nil, actErr(UnsupportedOrder, "write_metadata must be last")
		}
	}
	return acts, nil
}

func decodeActions(v Version, b []byte, depth int) ([]Action, *Error) {
	if depth > 8 {
		return nil, actErr(BadActionLen, "actions nested too deep")
	}
	if len(b)%8 != 0 {
		return nil, actErr(BadActionLen, "action list not a multiple of 8 bytes")
	}
	var acts []Action
	for len(b) > 0 {
		if len(b) < 8 {
			return nil, actErr(BadActionLen, "truncated action")
		}
		typ, n := binary.BigEndian.Uint16(b), int(binary.BigEndian.Uint16(b[2:]))
		if n < 8 || n%8 != 0 || n > len(b) {
			return nil, actErr(BadActionLen, "bad action length")
		}
		a, err := decodeAction(v, typ, b[:n], depth)
		if err != nil {
			return nil, err
		}
		acts = append(acts, a)
		b = b[n:]
	}
	return acts, nil
}

func fixedLen(b []byte, n int) *Error {
	if len(b) != n {
		return actErr(BadActionLen, "bad action length")
	}
	return nil
}

func decodeAction(v Version, typ uint16, b []byte, depth int) (Action, *Error) {
	if typ == atVendor {
		return decodeNXAction(v, b, depth)
	}
	if v == V10 {
		return decodeAction10(typ, b)
	}
	if n, ok := fixed11[typ]; ok {
		if err := fixedLen(b, n); err != nil {
			return Action{}, err
		}
	}
	if l, ok := legacyDecode11[typ]; ok && v == V11 {
		if err := fixedLen(b, l.size); err != nil {
			return Action{}, err
		}
		if typ == at11SetNWTOS && b[4]&3 != 0 {
			return Action{}, actErr(BadActionArgument, "nw_tos")
		}
		if typ == at11SetNWECN && b[4]&^3 != 0 {
			return Action{}, actErr(BadActionArgument, "nw_ecn")
		}
		fd := fields[l.id]
		return Action{Type: ActSetField, Field: fd, Value: bytes.Clone(b[4 : 4+fd.Len]), Mask: bytes.Clone(ones[:fd.Len]), raw: rawLegacy}, nil
	}
	switch typ {
	case at11Output:
		if err := fixedLen(b, 16); err != nil {
			return Action{}, err
		}
		return outputAction(binary.BigEndian.Uint32(b[4:]), binary.BigEndian.Uint16(b[8:]))
	case at11SetVLANVID, at11SetVLANPCP:
		if v != V11 {
			break
		}
		if err := fixedLen(b, 8); err != nil {
			return Action{}, err
		}
		if typ == at11SetVLANVID {
			vid := binary.BigEndian.Uint16(b[4:])
			if vid > flow.VLANVIDMask {
				return Action{}, actErr(BadActionArgument, "VLAN ID")
			}
			return Action{Type: ActSetVLANVID, VLAN: vid, NoPush: true}, nil
		}
		if b[4] > 7 {
			return Action{}, actErr(BadActionArgument, "VLAN PCP")
		}
		return Action{Type: ActSetVLANPCP, VLAN: uint16(b[4]), NoPush: true}, nil
	case at11PushVLAN:
		et := binary.BigEndian.Uint16(b[4:])
		if !flow.IsVLANType(et) {
			return Action{}, actErr(BadActionArgument, "push_vlan Ethertype")
		}
		return Action{Type: ActPushVLAN, VLAN: et}, nil
	case at11PopVLAN:
		return Action{Type: ActPopVLAN}, nil
	case at11Group:
		return Action{Type: ActGroup, ID: binary.BigEndian.Uint32(b[4:])}, nil
	case at11SetNWTTL:
		return Action{Type: ActSetField, Field: fields[FieldIPTTL], Value: []byte{b[4]}, Mask: []byte{0xff}, raw: rawLegacy}, nil
	case at11DecNWTTL:
		return Action{Type: ActDecTTL}, nil
	case at11SetQueue:
		return Action{Type: ActSetQueue, ID: binary.BigEndian.Uint32(b[4:])}, nil
	case at12SetField:
		if v < V12 {
			break
		}
		return decodeSetField(v, b[4:])
	case at15CopyField:
		if v < V15 {
			break
		}
		// ofp15_action_copy_field: n_bits, src_offset, dst_offset, pad,
		// src and dst OXM headers.
		if len(b) < 20 {
			return Action{}, actErr(BadActionLen, "copy_field")
		}
		return decodeMove(binary.BigEndian.Uint16(b[4:]), binary.BigEndian.Uint16(b[6:]), binary.BigEndian.Uint16(b[8:]),
			binary.BigEndian.Uint32(b[12:]), binary.BigEndian.Uint32(b[16:]))
	case at15Meter:
		if v < V15 {
			break
		}
		if err := fixedLen(b, 8); err != nil {
			return Action{}, err
		}
		return Action{Type: ActMeter, ID: binary.BigEndian.Uint32(b[4:])}, nil
	case 11, 12, 15, 16, 19, 20, 26, 27:
		// MPLS and PBB actions.
		return Action{Type: ActUnsupported, Errno: BadActionType, Name: "mpls/pbb"}, nil
	}
	return Action{}, actErr(BadActionType, "unknown action type")
}

// fixed11 are the sizes of the fixed-size OpenFlow 1.1+ actions.
var fixed11 = map[uint16]int{at11PushVLAN: 8, at11PopVLAN: 8, at11Group: 8, at11SetNWTTL: 8, at11DecNWTTL: 8, at11SetQueue: 8}

func outputAction(port uint32, maxLen uint16) (Action, *Error) {
	if port == PortController {
		return Action{Type: ActController, Port: port, MaxLen: maxLen, Reason: PacketInAction}, nil
	}
	if port >= PortMax && port != PortInPort && port != PortNormal && port != PortFlood && port != PortAll &&
		port != PortLocal && port != 0xfffffff9 {
		return Action{}, actErr(BadOutPort, "output port")
	}
	if port == 0xfffffff9 { // OFPP_TABLE: only in packet-outs
		return Action{Type: ActUnsupported, Errno: BadOutPort, Name: "output:TABLE"}, nil
	}
	return Action{Type: ActOutput, Port: port, MaxLen: maxLen}, nil
}

// legacyDecode10 are OpenFlow 1.0's set actions: the field each sets and
// the action's size.
var legacyDecode10 = map[uint16]struct {
	id   FieldID
	size int
}{at10SetDLSrc: {FieldEthSrc, 16}, at10SetDLDst: {FieldEthDst, 16}, at10SetNWSrc: {FieldIPv4Src, 8},
	at10SetNWDst: {FieldIPv4Dst, 8}, at10SetNWTOS: {FieldIPTOS, 8}, at10SetTPSrc: {FieldTCPSrc, 8}, at10SetTPDst: {FieldTCPDst, 8}}

// legacyDecode11 are OpenFlow 1.1's set actions, as legacyDecode10.
var legacyDecode11 = map[uint16]struct {
	id   FieldID
	size int
}{at11SetDLSrc: {FieldEthSrc, 16}, at11SetDLDst: {FieldEthDst, 16}, at11SetNWSrc: {FieldIPv4Src, 8},
	at11SetNWDst: {FieldIPv4Dst, 8}, at11SetNWTOS: {FieldIPTOS, 8}, at11SetNWECN: {FieldIPECN, 8},
	at11SetTPSrc: {FieldTCPSrc, 8}, at11SetTPDst: {FieldTCPDst, 8}}

// legacy11 is the OpenFlow 1.1 action that sets a field, if any.
var legacy11 = map[FieldID]uint16{FieldEthSrc: at11SetDLSrc, FieldEthDst: at11SetDLDst, FieldIPv4Src: at11SetNWSrc,
	FieldIPv4Dst: at11SetNWDst, FieldIPTOS: at11SetNWTOS, FieldIPECN: at11SetNWECN, FieldTCPSrc: at11SetTPSrc,
	FieldTCPDst: at11SetTPDst, FieldUDPSrc: at11SetTPSrc, FieldUDPDst: at11SetTPDst, FieldSCTPSrc: at11SetTPSrc, FieldSCTPDst: at11SetTPDst}

func decodeAction10(typ uint16, b []byte) (Action, *Error) {
	legacy := func(id FieldID, val []byte) (Action, *Error) {
		fd := fields[id]
		return Action{Type: ActSetField, Field: fd, Value: val, Mask: bytes.Clone(ones[:fd.Len]), raw: rawLegacy}, nil
	}
	switch typ {
	case at10Output:
		if err := fixedLen(b, 8); err != nil {
			return Action{}, err
		}
		return outputAction(widenPort10(binary.BigEndian.Uint16(b[4:])), binary.BigEndian.Uint16(b[6:]))
	case at10SetVLANVID:
		if err := fixedLen(b, 8); err != nil {
			return Action{}, err
		}
		vid := binary.BigEndian.Uint16(b[4:])
		if vid > flow.VLANVIDMask {
			return Action{}, actErr(BadActionArgument, "VLAN ID")
		}
		return Action{Type: ActSetVLANVID, VLAN: vid}, nil
	case at10SetVLANPCP:
		if err := fixedLen(b, 8); err != nil {
			return Action{}, err
		}
		if b[4] > 7 {
			return Action{}, actErr(BadActionArgument, "VLAN PCP")
		}
		return Action{Type: ActSetVLANPCP, VLAN: uint16(b[4])}, nil
	case at10StripVLAN:
		if err := fixedLen(b, 8); err != nil {
			return Action{}, err
		}
		return Action{Type: ActPopVLAN}, nil
	case at10SetDLSrc, at10SetDLDst, at10SetNWSrc, at10SetNWDst, at10SetNWTOS, at10SetTPSrc, at10SetTPDst:
		l := legacyDecode10[typ]
		if err := fixedLen(b, l.size); err != nil {
			return Action{}, err
		}
		if typ == at10SetNWTOS && b[4]&3 != 0 {
			return Action{}, actErr(BadActionArgument, "nw_tos")
		}
		return legacy(l.id, bytes.Clone(b[4:4+fields[l.id].Len]))
	case at10Enqueue:
		// ofp10_action_enqueue: port, 6 bytes of padding (not checked,
		// as OVS's decode_OFPAT_RAW10_ENQUEUE), queue_id.
		if err := fixedLen(b, 16); err != nil {
			return Action{}, err
		}
		port := widenPort10(binary.BigEndian.Uint16(b[4:]))
		if port >= PortMax && port != PortInPort && port != PortLocal {
			return Action{}, actErr(BadOutPort, "enqueue port")
		}
		return Action{Type: ActEnqueue, Port: port, ID: binary.BigEndian.Uint32(b[12:])}, nil
	}
	return Action{}, actErr(BadActionType, "unknown action type")
}

// decodeSetField decodes OFPAT12_SET_FIELD's OXM TLV (masked from 1.5).
func decodeSetField(v Version, b []byte) (Action, *Error) {
	if len(b) < 4 {
		return Action{}, actErr(BadSetLen, "set_field")
	}
	h := binary.BigEndian.Uint32(b)
	masked := h&0x100 != 0
	n := int(b[3])
	if masked {
		n /= 2
	}
	fd := FieldByHeader(h&^0xff | uint32(n))
	if idx := tunMetadataIndex(h); idx >= 0 {
		if n < 1 || n > TLVMaxOptLen {
			return Action{}, actErr(BadSetLen, "set_field: tun_metadata length")
		}
		// As long as the wire says; ResolveActions fits it to the
		// bridge's mapping.
		fd = TunMetadataField(idx, n)
	}
	if fd == nil {
		return Action{}, actErr(BadSetLen, "set_field: unknown field") // as OVS's decode_ofpat_set_field
	}
	l := fd.Len
	if masked {
		if v < V15 {
			return Action{}, actErr(BadSetArgument, "masked set_field before OpenFlow 1.5")
		}
		l *= 2
	}
	if 4+l > len(b) {
		return Action{}, actErr(BadSetLen, "set_field")
	}
	for _, c := range b[4+l:] {
		if c != 0 {
			return Action{}, actErr(BadSetArgument, "set_field padding")
		}
	}
	if !fd.Writable {
		return Action{}, actErr(BadSetArgument, "set_field: read-only field "+fd.Name)
	}
	val := bytes.Clone(b[4 : 4+fd.Len])
	mask := bytes.Repeat([]byte{0xff}, fd.Len)
	if masked {
		mask = bytes.Clone(b[4+fd.Len : 4+l])
	}
	if checkValue(fd, val, mask) != nil {
		return Action{}, actErr(BadSetArgument, "set_field value")
	}
	if fd.ID == FieldVLANVID && binary.BigEndian.Uint16(val)&0x1000 == 0 {
		// OVS requires OFPVID_PRESENT in a set_field to vlan_vid.
		return Action{}, actErr(BadSetArgument, "set_field vlan_vid without OFPVID_PRESENT")
	}
	// An unmasked tun_metadata set_field sets the whole mapping,
	// whatever length the wire gave (ResolveActions).
	tunMD := TunMetadataIndex(fd) >= 0
	return Action{Type: ActSetField, Field: fd, Value: val, Mask: mask, wholeVar: !masked && tunMD, tunMDMasked: masked && tunMD}, nil
}

// decodeRef decodes a header plus ofs/nbits into a FieldRef, checking
// the range lies in the field's width as OVS's mf_check__ does
// (OFPBAC_BAD_SET_LEN); an unknown field is refused with unknown.
func decodeRef(h uint32, ofs, nbits int, unknown Errno) (FieldRef, *Error) {
	fd := FieldByHeader(h)
	if idx := tunMetadataIndex(h); idx >= 0 && h&0x100 == 0 {
		// The header's length is the sender's idea of the mapping's
		// (0: the most there is); ResolveActions checks the range
		// against the bridge's.
		n := int(h & 0xff)
		if n == 0 || n > TLVMaxOptLen {
			n = TLVMaxOptLen
		}
		fd = TunMetadataField(idx, n)
	}
	if fd == nil || h&0x100 != 0 {
		return FieldRef{}, actErr(unknown, "unknown field")
	}
	if nbits <= 0 || ofs+nbits > fd.Bits() {
		return FieldRef{}, actErr(BadSetLen, "bits "+itoa(ofs)+".."+itoa(ofs+nbits-1)+" exceed the "+itoa(fd.Bits())+"-bit field "+fd.Name)
	}
	return FieldRef{Field: fd, Ofs: ofs, NBits: nbits}, nil
}

// decodeOfsNBits decodes an ofs_nbits and a field header (NXAST_REG_LOAD,
// NXAST_OUTPUT_REG); OVS refuses an unknown field there with
// OFPBAC_BAD_SET_TYPE.
func decodeOfsNBits(b []byte) (FieldRef, *Error) {
	ofsNBits := binary.BigEndian.Uint16(b)
	return decodeRef(binary.BigEndian.Uint32(b[2:]), int(ofsNBits>>6), int(ofsNBits&0x3f)+1, BadSetType)
}

// decodeMove decodes NXAST_REG_MOVE and OpenFlow 1.5 copy_field; OVS
// refuses an unknown field there with OFPBMC_BAD_FIELD (nx_pull_header)
// and a read-only destination with OFPBAC_BAD_SET_ARGUMENT.
func decodeMove(nbits, srcOfs, dstOfs uint16, src, dst uint32) (Action, *Error) {
	s, err := decodeRef(src, int(srcOfs), int(nbits), BadField)
	if err != nil {
		return Action{}, err
	}
	d, err := decodeRef(dst, int(dstOfs), int(nbits), BadField)
	if err != nil {
		return Action{}, err
	}
	if !d.Field.Writable {
		return Action{}, actErr(BadSetArgument, "move to read-only field "+d.Field.Name)
	}
	return Action{Type: ActMove, Src: s, Dst: d}, nil
}

// decodeStack decodes NXAST_STACK_PUSH or NXAST_STACK_POP (struct
// nx_action_stack): offset, an NXM/OXM header, n_bits, zeros to 24 bytes.
func decodeStack(sub uint16, b []byte) (Action, *Error) {
	if err := fixedLen(b, 24); err != nil {
		return Action{}, err
	}
	for _, c := range b[18:] {
		if c != 0 {
			return Action{}, actErr(MustBeZero, "padding") // as OVS: NXBRC_, not NXBAC_
		}
	}
	ref, err := decodeRef(binary.BigEndian.Uint32(b[12:]), int(binary.BigEndian.Uint16(b[10:])), int(binary.BigEndian.Uint16(b[16:])), BadField)
	if err != nil {
		return Action{}, err
	}
	if sub == nxastStackPush {
		return Action{Type: ActStackPush, Src: ref}, nil
	}
	if !ref.Field.Writable {
		return Action{}, actErr(BadSetArgument, "pop to read-only field")
	}
	return Action{Type: ActStackPop, Dst: ref}, nil
}

func decodeNXAction(v Version, b []byte, depth int) (Action, *Error) {
	if len(b) < 10 {
		return Action{}, actErr(BadActionLen, "vendor action")
	}
	if vendor := binary.BigEndian.Uint32(b[4:]); vendor != NiciraVendor {
		return Action{}, actErr(BadActionVendor, "vendor")
	}
	sub := binary.BigEndian.Uint16(b[8:])
	body := b[10:]
	zero := func(p []byte) *Error {
		for _, c := range p {
			if c != 0 {
				return actErr(ActionMustBeZero, "padding")
			}
		}
		return nil
	}
	switch sub {
	case nxastResubmit, nxastResubmitTable, nxastResubmitCT:
		if err := fixedLen(b, 16); err != nil {
			return Action{}, err
		}
		a := Action{Type: ActResubmit, Port: widenPort10(binary.BigEndian.Uint16(body)), Table: 0xff,
			resubmitTable: sub != nxastResubmit, CTOrig: sub == nxastResubmitCT}
		if sub != nxastResubmit {
			a.Table = body[2]
			if err := zero(body[3:6]); err != nil {
				return Action{}, err
			}
		}
		return a, nil
	case nxastOutputTrunc:
		// nx_action_output_trunc: a 16-bit port, a 32-bit max_len of
		// at least an Ethernet header (OVS's decode); the port is
		// checked as any output's (ofpact_check_output_port).
		if err := fixedLen(b, 16); err != nil {
			return Action{}, err
		}
		a := Action{Type: ActOutputTrunc, Port: widenPort10(binary.BigEndian.Uint16(body)), ID: binary.BigEndian.Uint32(body[2:])}
		if a.ID < 14 {
			return Action{}, actErr(BadActionArgument, "output_trunc max_len")
		}
		if p := a.Port; p >= PortMax && p != PortInPort && p != 0xfffffff9 && p != PortNormal &&
			p != PortFlood && p != PortAll && p != PortController && p != PortLocal {
			return Action{}, actErr(BadOutPort, "output_trunc port")
		}
		return a, nil
	case nxastSetTunnel, nxastSetTunnel64:
		// nx_action_set_tunnel: 2 bytes of padding, a 32-bit tun_id;
		// nx_action_set_tunnel64: 6 bytes of padding, a 64-bit one.
		n, raw := 16, rawSetTunnel
		if sub == nxastSetTunnel64 {
			n, raw = 24, rawSetTunnel64
		}
		if err := fixedLen(b, n); err != nil {
			return Action{}, err
		}
		var id uint64
		if sub == nxastSetTunnel {
			id = uint64(binary.BigEndian.Uint32(body[2:]))
		} else {
			id = binary.BigEndian.Uint64(body[6:])
		}
		return SetTunnel(id, raw == rawSetTunnel64), nil
	case nxastSetQueue:
		// OVS has NXAST_SET_QUEUE in OpenFlow 1.0 only (NX1.0(4)):
		// from 1.1 set_queue is OFPAT11_SET_QUEUE. The queue is the
		// last 4 bytes, unchecked padding before it.
		if v != V10 {
			break
		}
		if err := fixedLen(b, 16); err != nil {
			return Action{}, err
		}
		return Action{Type: ActSetQueue, ID: binary.BigEndian.Uint32(body[2:])}, nil
	case nxastPopQueue:
		if err := fixedLen(b, 16); err != nil {
			return Action{}, err
		}
		return Action{Type: ActPopQueue}, nil
	case nxastRegMove:
		if err := fixedLen(b, 24); err != nil {
			return Action{}, err
		}
		return decodeMove(binary.BigEndian.Uint16(body), binary.BigEndian.Uint16(body[2:]), binary.BigEndian.Uint16(body[4:]),
			binary.BigEndian.Uint32(body[6:]), binary.BigEndian.Uint32(body[10:]))
	case nxastStackPush, nxastStackPop:
		return decodeStack(sub, b)
	case nxastRegLoad:
		// OpenFlow 1.5's masked set_field replaces it: OVS knows
		// NXAST_REG_LOAD in OpenFlow 1.0 to 1.4 only.
		if v >= V15 {
			return Action{}, actErr(BadActionVendorType, "NXAST_REG_LOAD in OpenFlow 1.5")
		}
		if err := fixedLen(b, 24); err != nil {
			return Action{}, err
		}
		ref, err := decodeOfsNBits(body)
		if err != nil {
			return Action{}, err
		}
		if !ref.Field.Writable {
			return Action{}, actErr(BadSetArgument, "load to read-only field "+ref.Field.Name)
		}
		value := binary.BigEndian.Uint64(body[6:])
		if ref.NBits < 64 && value>>ref.NBits != 0 {
			return Action{}, actErr(BadActionArgument, "load value wider than its field range")
		}
		a := Action{Type: ActSetField, Field: ref.Field, raw: rawRegLoad}
		a.Value, a.Mask = refValue(ref, value)
		return a, nil
	case nxastRegLoad2:
		// An OXM TLV, possibly masked, padded.
		a, err := decodeSetField(V15, body)
		if err != nil {
			return Action{}, err
		}
		a.raw = rawRegLoad2
		return a, nil
	case nxastNote:
		return Action{Type: ActNote, Data: bytes.Clone(body)}, nil
	case nxastConjunction:
		return decodeConjunction(b)
	case nxastExit:
		return Action{Type: ActExit}, nil
	case nxastCTClear:
		if err := fixedLen(b, 16); err != nil {
			return Action{}, err
		}
		return Action{Type: ActCTClear}, nil
	case nxastDecTTL:
		return Action{Type: ActDecTTL}, nil
	case nxastDecTTLCntIDs:
		return decodeDecTTLCntIDs(b)
	case nxastController:
		if err := fixedLen(b, 16); err != nil {
			return Action{}, err
		}
		return Action{Type: ActController, Port: PortController, MaxLen: binary.BigEndian.Uint16(body),
			ControllerID: binary.BigEndian.Uint16(body[2:]), Reason: body[4], raw: rawNXController}, nil
	case nxastController2:
		return decodeController2(b)
	case nxastWriteMetadata:
		if err := fixedLen(b, 32); err != nil {
			return Action{}, err
		}
		return Action{Type: ActWriteMetadata, Metadata: binary.BigEndian.Uint64(body[6:]), MetadataMask: binary.BigEndian.Uint64(body[14:])}, nil
	case nxastOutputReg:
		if err := fixedLen(b, 24); err != nil {
			return Action{}, err
		}
		ref, err := decodeOfsNBits(body)
		if err != nil {
			return Action{}, err
		}
		return Action{Type: ActOutputReg, Src: ref, MaxLen: binary.BigEndian.Uint16(body[6:])}, nil
	case nxastGroup:
		if err := fixedLen(b, 16); err != nil {
			return Action{}, err
		}
		// The group id is 32-bit aligned, after two bytes of padding.
		return Action{Type: ActGroup, ID: binary.BigEndian.Uint32(body[2:])}, nil
	case nxastCheckPktLarger:
		return decodeCheckPktLarger(b)
	case nxastMultipath:
		return decodeMultipath(b)
	case nxastBundle, nxastBundleLoad:
		return decodeBundleAction(sub == nxastBundleLoad, b)
	case nxastCT:
		return decodeCT(v, b, depth)
	case nxastNAT:
		return decodeNAT(b)
	case nxastLearn, nxastLearn2:
		return decodeLearn(sub, b)
	case nxastFinTimeout:
		return decodeFinTimeout(b)
	case nxastClone:
		if len(b) < 16 {
			return Action{}, actErr(BadActionLen, "clone")
		}
		nested, err := decodeActions(v, b[16:], depth+1)
		if err != nil {
			return Action{}, err
		}
		return Action{Type: ActClone, Nested: nested}, nil
	}
	if name, ok := nxastNames[sub]; ok {
		return Action{Type: ActUnsupported, Errno: BadActionVendorType, Name: name}, nil
	}
	return Action{}, actErr(BadActionVendorType, "unknown Nicira action")
}

// decodeDecTTLCntIDs decodes NXAST_DEC_TTL_CNT_IDS (dec_ttl(id,...), as
// ovn-controller encodes its routers' ip.ttl--) with the checks of OVS's
// decode_NXAST_RAW_DEC_TTL_CNT_IDS.
func decodeDecTTLCntIDs(b []byte) (Action, *Error) {
	if len(b) < 16 {
		return Action{}, actErr(BadActionLen, "dec_ttl")
	}
	n := int(binary.BigEndian.Uint16(b[10:]))
	if !bytes.Equal(b[12:16], make([]byte, 4)) {
		return Action{}, actErr(MustBeZero, "dec_ttl padding") // as OVS: NXBRC_
	}
	ids := b[16:]
	if len(ids)%2 != 0 || len(ids) < 2*n {
		return Action{}, actErr(BadActionLen, "dec_ttl controller ids")
	}
	a := Action{Type: ActDecTTL, CntIDs: make([]uint16, n)}
	for i := range a.CntIDs {
		a.CntIDs[i] = binary.BigEndian.Uint16(ids[2*i:])
	}
	return a, nil
}

// refValue returns a field-sized value and mask setting ref's bits to v.
func refValue(ref FieldRef, v uint64) (value, mask []byte) {
	n := ref.Field.Len
	value, mask = make([]byte, n), make([]byte, n)
	for i := 0; i < ref.NBits; i++ {
		bit := ref.Ofs + i
		byteIdx := n - 1 - bit/8
		mask[byteIdx] |= 1 << (bit % 8)
		if i < 64 && v>>i&1 != 0 {
			value[byteIdx] |= 1 << (bit % 8)
		}
	}
	return value, mask
}

// maskRange returns the offset and width of a contiguous mask, ok false
// if it is not contiguous.
func maskRange(mask []byte) (ofs, nbits int, ok bool) {
	n := len(mask) * 8
	first, last := -1, -1
	for bit := 0; bit < n; bit++ {
		if mask[len(mask)-1-bit/8]>>(bit%8)&1 != 0 {
			if first < 0 {
				first = bit
			}
			if last >= 0 && last != bit-1 {
				return 0, 0, false
			}
			last = bit
		}
	}
	if first < 0 {
		return 0, 0, false
	}
	return first, last - first + 1, true
}

// rangeValue extracts the bits of value at ofs.. as an integer (up to 64
// bits).
func rangeValue(value []byte, ofs, nbits int) uint64 {
	var v uint64
	n := len(value)
	for i := 0; i < nbits && i < 64; i++ {
		bit := ofs + i
		if value[n-1-bit/8]>>(bit%8)&1 != 0 {
			v |= 1 << i
		}
	}
	return v
}

// DecodeInstructions decodes OpenFlow 1.1+ instructions into one action
// list, instructions after the apply-actions (as OVS's
// ofpacts_pull_openflow_instructions).
func DecodeInstructions(v Version, b []byte) ([]Action, *Error) {
	var meter, apply, clear, write, meta, gotoT []Action
	// seen: the types 1..6 met so far (any other type is refused below
	// the first time).
	var seen uint64
	for len(b) > 0 {
		if len(b) < 8 {
			return nil, actErr(InstBadLen, "truncated instruction")
		}
		typ, n := binary.BigEndian.Uint16(b), int(binary.BigEndian.Uint16(b[2:]))
		if n < 8 || n%8 != 0 || n > len(b) {
			return nil, actErr(InstBadLen, "instruction length")
		}
		ib := b[:n]
		b = b[n:]
		if typ < 64 {
			if seen&(1<<typ) != 0 {
				return nil, actErr(DupInst, "instruction twice")
			}
			seen |= 1 << typ
		}
		switch typ {
		case 1: // OFPIT11_GOTO_TABLE
			if n != 8 {
				return nil, actErr(InstBadLen, "goto_table")
			}
			gotoT = []Action{{Type: ActGotoTable, Table: ib[4]}}
		case 2: // OFPIT11_WRITE_METADATA
			if n != 24 {
				return nil, actErr(InstBadLen, "write_metadata")
			}
			meta = []Action{{Type: ActWriteMetadata, Metadata: binary.BigEndian.Uint64(ib[8:]), MetadataMask: binary.BigEndian.Uint64(ib[16:])}}
		case 3, 4: // OFPIT11_WRITE_ACTIONS, APPLY_ACTIONS
			acts, err := DecodeActions(v, ib[8:])
			if err != nil {
				return nil, err
			}
			if typ == 4 {
				apply = acts
			} else {
				write = []Action{{Type: ActWriteActions, Nested: acts}}
			}
		case 5: // OFPIT11_CLEAR_ACTIONS
			if n != 8 {
				return nil, actErr(InstBadLen, "clear_actions")
			}
			clear = []Action{{Type: ActClearActions}}
		case 6: // OFPIT13_METER
			if v < V13 || v >= V15 {
				return nil, actErr(UnknownInst, "meter instruction")
			}
			if n != 8 {
				return nil, actErr(InstBadLen, "meter")
			}
			meter = []Action{{Type: ActMeter, ID: binary.BigEndian.Uint32(ib[4:])}}
		case 0xffff:
			return nil, actErr(InstBadVendor, "experimenter instruction")
		default:
			return nil, actErr(UnknownInst, "unknown instruction")
		}
	}
	if len(meter)+len(clear)+len(write)+len(meta)+len(gotoT) == 0 {
		return apply, nil // the usual case: apply-actions alone
	}
	acts := make([]Action, 0, len(meter)+len(apply)+len(clear)+len(write)+len(meta)+len(gotoT))
	for _, l := range [][]Action{meter, apply, clear, write, meta, gotoT} {
		acts = append(acts, l...)
	}
	return acts, nil
}

// decodeController2 decodes NXAST_CONTROLLER2: zero padding, then
// properties, each padded to 8 bytes (OVS's
// decode_NXAST_RAW_CONTROLLER2). b is the whole action.
func decodeController2(b []byte) (Action, *Error) {
	if len(b) < 16 {
		return Action{}, actErr(BadActionLen, "controller2")
	}
	for _, z := range b[10:16] {
		if z != 0 {
			return Action{}, actErr(MustBeZero, "controller2 padding") // as OVS: NXBRC_
		}
	}
	a := Action{Type: ActController, Port: PortController, MaxLen: 0xffff, Reason: PacketInAction, raw: rawController2}
	props := b[16:]
	for len(props) > 0 {
		if len(props) < 4 {
			return Action{}, actErr(BadAsyncLen, "controller2 property header")
		}
		typ, n := binary.BigEndian.Uint16(props), int(binary.BigEndian.Uint16(props[2:]))
		if n < 4 || (n+7)&^7 > len(props) {
			return Action{}, actErr(BadAsyncLen, "controller2 property length")
		}
		val := props[4:n]
		props = props[(n+7)&^7:]
		short := func(min int) bool { return len(val) < min }
		switch typ {
		case nxac2ptMaxLen:
			if short(2) {
				return Action{}, actErr(BadAsyncLen, "controller2 max_len")
			}
			a.MaxLen = binary.BigEndian.Uint16(val)
		case nxac2ptControllerID:
			if short(2) {
				return Action{}, actErr(BadAsyncLen, "controller2 id")
			}
			a.ControllerID = binary.BigEndian.Uint16(val)
		case nxac2ptReason:
			if short(1) {
				return Action{}, actErr(BadAsyncLen, "controller2 reason")
			}
			a.Reason = val[0]
		case nxac2ptUserdata:
			if len(val) > 0 { // none is no userdata, as in OVS
				a.Userdata = bytes.Clone(val)
			}
		case nxac2ptPause:
			a.Pause = true
		case nxac2ptMeterID:
			if short(4) {
				return Action{}, actErr(BadAsyncLen, "controller2 meter_id")
			}
			a.ID = binary.BigEndian.Uint32(val) // 0: OVS's NX_CTLR_NO_METER
		case 0xffff:
			if n < 12 {
				return Action{}, actErr(BadAsyncLen, "controller2 experimenter property")
			}
			return Action{}, actErr(BadPropExperimenter, "controller2 experimenter property")
		default:
			return Action{}, actErr(BadAsyncProp, fmt.Sprintf("controller2 property %d", typ))
		}
	}
	return a, nil
}

// needsController2: a is encoded as NXAST_CONTROLLER2 (OVS's
// encode_CONTROLLER).
func (a *Action) needsController2() bool {
	return len(a.Userdata) > 0 || a.Pause || a.ID != 0 || a.raw == rawController2
}

// appendController2 encodes a as NXAST_CONTROLLER2 with the properties
// that differ from their defaults.
func appendController2(b []byte, a *Action) []byte {
	start := len(b)
	b = nxActionHeader(b, 0, nxastController2)
	b = pad(b, 6)
	if a.MaxLen != 0xffff {
		b = appendProp(b, nxac2ptMaxLen, binary.BigEndian.AppendUint16(nil, a.MaxLen))
	}
	if a.ControllerID != 0 {
		b = appendProp(b, nxac2ptControllerID, binary.BigEndian.AppendUint16(nil, a.ControllerID))
	}
	if a.Reason != PacketInAction {
		b = appendProp(b, nxac2ptReason, []byte{a.Reason})
	}
	if len(a.Userdata) > 0 {
		b = appendProp(b, nxac2ptUserdata, a.Userdata)
	}
	if a.Pause {
		b = appendProp(b, nxac2ptPause, nil)
	}
	if a.ID != 0 {
		b = appendProp(b, nxac2ptMeterID, binary.BigEndian.AppendUint32(nil, a.ID))
	}
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
	return b
}

// nxActionHeader starts a Nicira action of n bytes.
func nxActionHeader(b []byte, n int, sub uint16) []byte {
	b = put16(b, atVendor)
	b = put16(b, uint16(n))
	b = put32(b, NiciraVendor)
	return put16(b, sub)
}

func padTo8(b []byte, start int) []byte {
	return pad(b, (8-(len(b)-start)%8)%8)
}

// legacy10 is the OpenFlow 1.0 action that sets a whole field, if any.
var legacy10 = map[FieldID]uint16{FieldEthSrc: at10SetDLSrc, FieldEthDst: at10SetDLDst, FieldIPv4Src: at10SetNWSrc,
	FieldIPv4Dst: at10SetNWDst, FieldIPTOS: at10SetNWTOS, FieldTCPSrc: at10SetTPSrc, FieldTCPDst: at10SetTPDst,
	FieldUDPSrc: at10SetTPSrc, FieldUDPDst: at10SetTPDst, FieldSCTPSrc: at10SetTPSrc, FieldSCTPDst: at10SetTPDst}

// AppendActions appends acts as version v's actions (instructions are
// left out: AppendInstructions places them).
func AppendActions(b []byte, v Version, acts []Action) []byte {
	for i := range acts {
		if v == V10 && acts[i].Type == ActWriteMetadata {
			continue
		}
		b = appendAction(b, v, &acts[i])
	}
	if v == V10 {
		// write_metadata, an instruction, ends an OpenFlow 1.0 list.
		for i := range acts {
			if acts[i].Type == ActWriteMetadata {
				b = appendAction(b, v, &acts[i])
			}
		}
	}
	return b
}

func appendAction(b []byte, v Version, a *Action) []byte {
	start := len(b)
	switch a.Type {
	case ActOutput, ActController:
		if a.Type == ActController && a.needsController2() {
			return appendController2(b, a)
		}
		if a.Type == ActController && (a.Reason != PacketInAction || a.ControllerID != 0) {
			b = nxActionHeader(b, 16, nxastController)
			b = put16(b, a.MaxLen)
			b = put16(b, a.ControllerID)
			b = put8(b, a.Reason)
			return pad(b, 1)
		}
		if v == V10 {
			b = put16(b, at10Output)
			b = put16(b, 8)
			b = put16(b, port10(a.Port))
			return put16(b, a.MaxLen)
		}
		b = put16(b, at11Output)
		b = put16(b, 16)
		b = put32(b, a.Port)
		b = put16(b, a.MaxLen)
		return pad(b, 6)
	case ActSetVLANVID, ActSetVLANPCP:
		// OVS's encode_SET_VLAN_VID and _PCP: OpenFlow 1.0's mod_vlan_*
		// pushes a tag if there is none, which 1.1+ says with a
		// push_vlan before, unless the flow has a tag there.
		if v > V10 && !a.NoPush && !a.FlowHasVLAN {
			b = appendAction(b, v, &Action{Type: ActPushVLAN, VLAN: flow.EthTypeVLAN})
		}
		vid := a.Type == ActSetVLANVID
		switch {
		case v == V10 && vid:
			return putVLANAction(b, at10SetVLANVID, a.VLAN)
		case v == V10:
			return putVLANAction(b, at10SetVLANPCP, a.VLAN)
		case v == V11 && vid:
			return putVLANAction(b, at11SetVLANVID, a.VLAN)
		case v == V11:
			return putVLANAction(b, at11SetVLANPCP, a.VLAN)
		case vid:
			return appendSetField(b, v, fields[FieldVLANVID], binary.BigEndian.AppendUint16(nil, a.VLAN|0x1000), []byte{0xff, 0xff}, false)
		}
		return appendSetField(b, v, fields[FieldVLANPCP], []byte{uint8(a.VLAN)}, []byte{0xff}, false)
	case ActPushVLAN:
		if v == V10 {
			return b // OpenFlow 1.0 pushes as a side effect of mod_vlan_vid
		}
		b = put16(b, at11PushVLAN)
		b = put16(b, 8)
		b = put16(b, a.VLAN)
		return pad(b, 2)
	case ActPopVLAN:
		if v == V10 {
			b = put16(b, at10StripVLAN)
		} else {
			b = put16(b, at11PopVLAN)
		}
		b = put16(b, 8)
		return pad(b, 4)
	case ActSetField:
		if id, ok := a.SetTunnelID(); ok && v < V12 {
			// encode_SET_TUNNEL: before OpenFlow 1.2 the 32-bit action
			// unless the id or its raw form needs the 64-bit one; from
			// 1.2 a set_field of tun_id (below).
			if id <= 0xffffffff && a.raw != rawSetTunnel64 {
				b = nxActionHeader(b, 16, nxastSetTunnel)
				b = pad(b, 2)
				return put32(b, uint32(id))
			}
			b = nxActionHeader(b, 24, nxastSetTunnel64)
			b = pad(b, 6)
			return binary.BigEndian.AppendUint64(b, id)
		}
		// Fields run to 124 bytes (tun_metadata): longer than ones; and
		// ovs-ofctl's tun_metadata sets may be masked by all ones.
		full := allOnes(a.Mask) && !a.tunMDMasked
		regLoad := a.raw == rawRegLoad || a.raw == rawRegLoad2
		if v == V10 && full && !regLoad && a.Field.ID == FieldVLANVID {
			return appendAction(b, v, &Action{Type: ActSetVLANVID, VLAN: binary.BigEndian.Uint16(a.Value) & flow.VLANVIDMask})
		}
		if v == V10 && full && !regLoad && a.Field.ID == FieldVLANPCP {
			return appendAction(b, v, &Action{Type: ActSetVLANPCP, VLAN: uint16(a.Value[0])})
		}
		if v <= V11 && !regLoad {
			if out, ok := appendVLANLegacy(b, v, a); ok {
				return out
			}
		}
		if v >= V11 && a.raw == rawLegacy && a.Field.ID == FieldIPTTL {
			// encode_SET_IP_TTL: OFPAT11_SET_NW_TTL from 1.1 on (1.0
			// has none: NXAST_REG_LOAD, below).
			b = put16(b, at11SetNWTTL)
			b = put16(b, 8)
			b = append(b, a.Value[0])
			return pad(b, 3)
		}
		if v == V11 && !regLoad {
			// OVS's set_field_to_legacy_openflow and the OpenFlow 1.1
			// forms of its mod_* actions: the mask dropped; a set_field
			// of SCTP's ports (not a mod_tp_*) as NXAST_REG_LOAD.
			id, val := a.Field.ID, a.Value
			if id == FieldIPDSCP {
				id, val = FieldIPTOS, []byte{a.Value[0] << 2}
			}
			sctp := id == FieldSCTPSrc || id == FieldSCTPDst
			if t, ok := legacy11[id]; ok && (a.raw == rawLegacy || !sctp) {
				b = put16(b, t)
				if t == at11SetDLSrc || t == at11SetDLDst {
					b = put16(b, 16)
					b = append(b, val...)
					return pad(b, 6)
				}
				b = put16(b, 8)
				b = append(b, val...)
				return padTo8(b, start)
			}
		}
		if v == V10 && a.raw == rawSetField {
			// OVS's set_field_to_legacy_openflow: a set_field of a
			// field OpenFlow 1.0 has an action for goes as that action,
			// its mask dropped (sic); SCTP's ports and the rest as
			// NXAST_REG_LOAD.
			id, val := a.Field.ID, a.Value
			if id == FieldIPDSCP {
				id, val = FieldIPTOS, []byte{a.Value[0] << 2}
			}
			if _, ok := legacy10[id]; ok && id != FieldSCTPSrc && id != FieldSCTPDst {
				return appendAction(b, v, &Action{Type: ActSetField, Field: fields[id], Value: val, Mask: ones[:len(val)], raw: rawLegacy})
			}
		}
		if v == V10 && full && !regLoad {
			if t, ok := legacy10[a.Field.ID]; ok {
				b = put16(b, t)
				if t == at10SetDLSrc || t == at10SetDLDst {
					b = put16(b, 16)
					b = append(b, a.Value...)
					return pad(b, 6)
				}
				b = put16(b, 8)
				b = append(b, a.Value...)
				return padTo8(b, start)
			}
		}
		if v >= V12 && full && a.raw == rawLegacy && a.Field.ID == FieldIPTOS {
			// OpenFlow 1.0's mod_nw_tos is ip_dscp in OXM, as OVS's.
			return appendSetField(b, v, fields[FieldIPDSCP], []byte{a.Value[0] >> 2}, []byte{0xff}, false)
		}
		if v >= V15 || (!regLoad && full && v >= V12) {
			return appendSetField(b, v, a.Field, a.Value, a.Mask, !full)
		}
		// A variable-length field (tun_metadata), or one that came so,
		// goes as NXAST_REG_LOAD2, as OVS's set_field_to_nxast.
		// The bits the field has (ip_dscp's 6, ip_ecn's 2): a mask
		// of the whole byte would load beyond the field.
		mask := a.Mask
		if full := a.Field.full; len(full) == len(mask) {
			mask = bytes.Clone(mask)
			for i := range mask {
				mask[i] &= full[i]
			}
		}
		if TunMetadataIndex(a.Field) < 0 && a.raw != rawRegLoad2 && !allZero(mask) {
			if ofs, nbits, ok := maskRange(mask); ok && nbits <= 64 {
				b = nxActionHeader(b, 24, nxastRegLoad)
				b = put16(b, uint16(ofs<<6|(nbits-1)))
				b = put32(b, a.Field.header(true))
				return put64(b, rangeValue(a.Value, ofs, nbits))
			}
			// OVS's next_load_segment: one NXAST_REG_LOAD for each run
			// of the mask's ones, up to 64 bits each (a 128-bit
			// ipv6_dst or tun_ipv6_dst takes two).
			for ofs := 0; ofs < len(mask)*8; {
				if !maskBit(mask, ofs) {
					ofs++
					continue
				}
				nbits := 1
				for nbits < 64 && ofs+nbits < len(mask)*8 && maskBit(mask, ofs+nbits) {
					nbits++
				}
				b = nxActionHeader(b, 24, nxastRegLoad)
				b = put16(b, uint16(ofs<<6|(nbits-1)))
				b = put32(b, a.Field.header(true))
				b = put64(b, rangeValue(a.Value, ofs, nbits))
				ofs += nbits
			}
			return b
		}
		b = nxActionHeader(b, 0, nxastRegLoad2)
		b = appendOXMField(b, a.Field, a.Value, a.Mask, v == V10, !full)
		b = padTo8(b, start)
		binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
		return b
	case ActMove:
		if v >= V15 {
			b = put16(b, at15CopyField)
			b = put16(b, 24)
			b = put16(b, uint16(a.Src.NBits))
			b = put16(b, uint16(a.Src.Ofs))
			b = put16(b, uint16(a.Dst.Ofs))
			b = pad(b, 2)
			b = put32(b, a.Src.Field.header(false))
			b = put32(b, a.Dst.Field.header(false))
			return pad(b, 4)
		}
		b = nxActionHeader(b, 24, nxastRegMove)
		b = put16(b, uint16(a.Src.NBits))
		b = put16(b, uint16(a.Src.Ofs))
		b = put16(b, uint16(a.Dst.Ofs))
		b = put32(b, a.Src.Field.header(v == V10))
		return put32(b, a.Dst.Field.header(v == V10))
	case ActStackPush, ActStackPop:
		ref, sub := a.Src, uint16(nxastStackPush)
		if a.Type == ActStackPop {
			ref, sub = a.Dst, nxastStackPop
		}
		b = nxActionHeader(b, 24, sub)
		b = put16(b, uint16(ref.Ofs))
		b = put32(b, ref.Field.header(true)) // OVS encodes NXM headers here in every version
		b = put16(b, uint16(ref.NBits))
		return pad(b, 6)
	case ActResubmit:
		if a.Table == 0xff && !a.resubmitTable && !a.CTOrig {
			b = nxActionHeader(b, 16, nxastResubmit)
			b = put16(b, port10(a.Port))
			return pad(b, 4)
		}
		sub := uint16(nxastResubmitTable)
		if a.CTOrig {
			sub = nxastResubmitCT
		}
		b = nxActionHeader(b, 16, sub)
		b = put16(b, port10(a.Port))
		b = put8(b, a.Table)
		return pad(b, 3)
	case ActNote:
		b = nxActionHeader(b, 0, nxastNote)
		b = append(b, a.Data...)
		b = padTo8(b, start)
		binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
		return b
	case ActConjunction:
		return appendConjunction(b, a)
	case ActExit:
		b = nxActionHeader(b, 16, nxastExit)
		return pad(b, 6)
	case ActCTClear:
		b = nxActionHeader(b, 16, nxastCTClear)
		return pad(b, 6)
	case ActDecTTL:
		if a.CntIDs != nil {
			// nx_action_cnt_ids: the ids after the 16-byte header,
			// padded to 8 bytes.
			b = nxActionHeader(b, 0, nxastDecTTLCntIDs)
			b = put16(b, uint16(len(a.CntIDs)))
			b = pad(b, 4)
			for _, id := range a.CntIDs {
				b = put16(b, id)
			}
			b = padTo8(b, start)
			binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
			return b
		}
		if v == V10 {
			b = nxActionHeader(b, 16, nxastDecTTL)
			return pad(b, 6)
		}
		b = put16(b, at11DecNWTTL)
		b = put16(b, 8)
		return pad(b, 4)
	case ActGroup:
		return appendU32Action(b, v, nxastGroup, at11Group, a.ID)
	case ActOutputTrunc:
		b = nxActionHeader(b, 16, nxastOutputTrunc)
		b = put16(b, port10(a.Port))
		return put32(b, a.ID)
	case ActSetQueue:
		return appendU32Action(b, v, nxastSetQueue, at11SetQueue, a.ID)
	case ActPopQueue:
		b = nxActionHeader(b, 16, nxastPopQueue)
		return pad(b, 6)
	case ActEnqueue:
		if v == V10 {
			b = put16(b, at10Enqueue)
			b = put16(b, 16)
			b = put16(b, port10(a.Port))
			b = pad(b, 6)
			return put32(b, a.ID)
		}
		// OVS's encode_ENQUEUE: OpenFlow 1.1+ has no enqueue, but a
		// set_queue, an output (max_len 0xffff) and a pop_queue.
		b = appendAction(b, v, &Action{Type: ActSetQueue, ID: a.ID})
		b = appendAction(b, v, &Action{Type: ActOutput, Port: a.Port, MaxLen: 0xffff})
		return appendAction(b, v, &Action{Type: ActPopQueue})
	case ActOutputReg:
		b = nxActionHeader(b, 24, nxastOutputReg)
		b = put16(b, uint16(a.Src.Ofs<<6|(a.Src.NBits-1)))
		b = put32(b, a.Src.Field.header(true))
		b = put16(b, a.MaxLen)
		return pad(b, 6)
	case ActCheckPktLarger:
		return appendCheckPktLarger(b, a)
	case ActMultipath:
		return appendMultipath(b, a.Multipath)
	case ActBundle:
		return appendBundleAction(b, a.Bundle)
	case ActCT:
		return appendCT(b, v, a)
	case ActNAT:
		return appendNAT(b, a.NAT)
	case ActLearn:
		return appendLearn(b, a.Learn)
	case ActFinTimeout:
		return appendFinTimeout(b, a.Fin)
	case ActClone:
		b = nxActionHeader(b, 0, nxastClone)
		b = pad(b, 6)
		b = AppendActions(b, v, a.Nested)
		binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
		return b
	case ActMeter:
		if v >= V15 {
			return appendMeter(b, v, a)
		}
		return b
	case ActGotoTable:
		if v == V10 {
			// OpenFlow 1.0 has no goto_table: OVS encodes it as a resubmit.
			return appendAction(b, v, &Action{Type: ActResubmit, Port: PortInPort, Table: a.Table, resubmitTable: true})
		}
	case ActWriteMetadata:
		if v == V10 {
			b = nxActionHeader(b, 32, nxastWriteMetadata)
			b = pad(b, 6)
			b = put64(b, a.Metadata)
			return put64(b, a.MetadataMask)
		}
	}
	return b
}

func appendOXMField(b []byte, fd *Field, value, mask []byte, nx, masked bool) []byte {
	h := fd.header(nx)
	if !masked {
		b = put32(b, h)
		return append(b, value...)
	}
	b = put32(b, h&^0xff|0x100|uint32(2*fd.Len))
	b = append(b, value...)
	return append(b, mask...)
}

func appendSetField(b []byte, v Version, fd *Field, value, mask []byte, masked bool) []byte {
	start := len(b)
	b = put16(b, at12SetField)
	b = put16(b, 0)
	b = appendOXMField(b, fd, value, mask, false, masked)
	b = padTo8(b, start)
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
	return b
}

// AppendInstructions appends acts as OpenFlow 1.1+ instructions.
func AppendInstructions(b []byte, v Version, acts []Action) []byte {
	var apply []Action
	var rest []*Action
	for i := range acts {
		if acts[i].Type >= ActMeter && (acts[i].Type != ActMeter || v < V15) {
			rest = append(rest, &acts[i])
		} else {
			apply = append(apply, acts[i])
		}
	}
	for _, a := range rest {
		if a.Type == ActMeter {
			b = appendMeter(b, v, a)
		}
	}
	if len(apply) > 0 {
		start := len(b)
		b = put16(b, 4)
		b = put16(b, 0)
		b = pad(b, 4)
		b = AppendActions(b, v, apply)
		binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
	}
	for _, a := range rest {
		switch a.Type {
		case ActClearActions:
			b = put16(b, 5)
			b = put16(b, 8)
			b = pad(b, 4)
		case ActWriteActions:
			start := len(b)
			b = put16(b, 3)
			b = put16(b, 0)
			b = pad(b, 4)
			b = AppendActions(b, v, a.Nested)
			binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
		case ActWriteMetadata:
			b = put16(b, 2)
			b = put16(b, 24)
			b = pad(b, 4)
			b = put64(b, a.Metadata)
			b = put64(b, a.MetadataMask)
		case ActGotoTable:
			b = put16(b, 1)
			b = put16(b, 8)
			b = put8(b, a.Table)
			b = pad(b, 3)
		}
	}
	return b
}

// Outputs returns the ports acts output to (for out_port filters).
func Outputs(acts []Action) []uint32 {
	var ports []uint32
	for _, a := range acts {
		switch a.Type {
		case ActOutput, ActController, ActEnqueue:
			ports = append(ports, a.Port)
		case ActClone, ActWriteActions:
			ports = append(ports, Outputs(a.Nested)...)
		}
	}
	return ports
}

// Groups returns the groups acts output to.
func Groups(acts []Action) []uint32 {
	var g []uint32
	for _, a := range acts {
		switch a.Type {
		case ActGroup:
			g = append(g, a.ID)
		case ActClone, ActWriteActions:
			g = append(g, Groups(a.Nested)...)
		}
	}
	return g
}

// MaskBits returns the number of one bits in b.
func MaskBits(b []byte) int {
	n := 0
	for _, c := range b {
		n += bits.OnesCount8(c)
	}
	return n
}

// Legacy reports whether a set-field action was an OpenFlow 1.0 mod_*
// action.
func (a *Action) Legacy() bool { return a.raw == rawLegacy }

// SetTunnel returns OVS's set_tunnel action (set_tunnel64 if long): a
// set of the whole tun_id, encoded as NXAST_SET_TUNNEL(64).
func SetTunnel(id uint64, long bool) Action {
	raw := rawSetTunnel
	if long {
		raw = rawSetTunnel64
	}
	return Action{Type: ActSetField, Field: fields[FieldTunID], Value: binary.BigEndian.AppendUint64(nil, id),
		Mask: bytes.Clone(ones[:8]), raw: raw}
}

// SetTunnelID returns the tun_id a set_tunnel or set_tunnel64 action sets.
func (a *Action) SetTunnelID() (uint64, bool) {
	if a.Type != ActSetField || a.raw != rawSetTunnel && a.raw != rawSetTunnel64 {
		return 0, false
	}
	return binary.BigEndian.Uint64(a.Value), true
}

// NiciraController reports whether a controller action came as
// NXAST_CONTROLLER or NXAST_CONTROLLER2 (OVS's OFPACT_CONTROLLER), not as
// an output to the CONTROLLER port (OFPACT_OUTPUT).
func (a *Action) NiciraController() bool {
	return a.Type == ActController && (a.raw == rawNXController || a.raw == rawController2)
}

// putVLANAction appends OpenFlow 1.0's or 1.1's set_vlan_vid or
// set_vlan_pcp (struct ofp_action_vlan_vid, _vlan_pcp: 8 bytes).
func putVLANAction(b []byte, typ, val uint16) []byte {
	b = put16(b, typ)
	b = put16(b, 8)
	if typ == at10SetVLANVID || typ == at11SetVLANVID {
		b = put16(b, val)
		return pad(b, 2)
	}
	b = put8(b, uint8(val))
	return pad(b, 3)
}

// appendVLANLegacy appends a set_field of the VLAN's fields as OpenFlow
// 1.0 or 1.1 says it (OVS's set_field_to_legacy_openflow, the mask
// dropped): vlan_vid and vlan_pcp as set_vlan_vid and set_vlan_pcp;
// vlan_tci with its CFI bit as both (in 1.1 after a push_vlan unless the
// flow has a tag), without it as a pop (strip_vlan). ok is false for
// another field.
func appendVLANLegacy(b []byte, v Version, a *Action) (out []byte, ok bool) {
	vidType, pcpType, popType := uint16(at10SetVLANVID), uint16(at10SetVLANPCP), uint16(at10StripVLAN)
	if v == V11 {
		vidType, pcpType, popType = at11SetVLANVID, at11SetVLANPCP, at11PopVLAN
	}
	switch a.Field.ID {
	case FieldVLANVID:
		return putVLANAction(b, vidType, binary.BigEndian.Uint16(a.Value)&flow.VLANVIDMask), true
	case FieldVLANPCP:
		return putVLANAction(b, pcpType, uint16(a.Value[0])), true
	case FieldVLANTCI:
		tci := binary.BigEndian.Uint16(a.Value)
		if tci&flow.VLANPresent == 0 {
			b = put16(b, popType)
			b = put16(b, 8)
			return pad(b, 4), true
		}
		if v == V11 && !a.FlowHasVLAN {
			b = appendAction(b, v, &Action{Type: ActPushVLAN, VLAN: flow.EthTypeVLAN})
		}
		b = putVLANAction(b, vidType, tci&flow.VLANVIDMask)
		return putVLANAction(b, pcpType, tci>>13), true
	}
	return b, false
}

// CheckVLAN sets the FlowHasVLAN of acts' VLAN actions as OVS's
// ofpacts_check does: whether a tag is on the packet there, by the
// match (tagged says it has one) and the actions before (a push or
// mod_vlan_* leaves one, a pop removes one, a set of vlan_tci leaves
// what its CFI bit says). Nested actions (clone, write_actions) start
// from the state where they are and leave it as it was.
func CheckVLAN(acts []Action, tagged bool) {
	depth := 0
	if tagged {
		depth = 1
	}
	checkVLAN(acts, depth)
}

func checkVLAN(acts []Action, depth int) {
	for i := range acts {
		a := &acts[i]
		switch a.Type {
		case ActPushVLAN:
			depth++
		case ActPopVLAN:
			depth = max(depth-1, 0)
		case ActSetVLANVID, ActSetVLANPCP:
			a.FlowHasVLAN = depth > 0
			depth = max(depth, 1)
		case ActSetField:
			a.FlowHasVLAN = depth > 0
			if a.Field.ID == FieldVLANTCI {
				if binary.BigEndian.Uint16(a.Value)&flow.VLANPresent != 0 {
					depth = max(depth, 1)
				} else {
					depth = max(depth-1, 0)
				}
			}
		case ActClone, ActWriteActions:
			checkVLAN(a.Nested, depth)
		}
	}
}

// maskBit reports whether bit i (0 the least significant) of big-endian
// mask is one.
func maskBit(mask []byte, i int) bool { return mask[len(mask)-1-i/8]>>(i%8)&1 != 0 }

// appendU32Action appends an action whose argument is one 32-bit value
// (group, set_queue): OpenFlow 1.1+'s standard action of type at11, 8
// bytes, and before it the Nicira action sub, 16 bytes.
func appendU32Action(b []byte, v Version, sub, at11 uint16, x uint32) []byte {
	if v == V10 {
		b = nxActionHeader(b, 16, sub)
		b = pad(b, 2)
		return put32(b, x)
	}
	b = put16(b, at11)
	b = put16(b, 8)
	return put32(b, x)
}
