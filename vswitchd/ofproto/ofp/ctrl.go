package ofp

import "encoding/binary"

// Controller-side messages: roles, asynchronous message configuration,
// controller IDs, echo probes and role status (OVS's lib/ofp-connection.c
// and lib/ofp-monitor.c layouts).

// Nicira vendor subtypes of the controller-connection messages.
const (
	nxtRoleRequest       = 10
	nxtRoleReply         = 11
	nxtSetAsyncConfig    = 19
	nxtSetControllerID   = 20
	nxtSetAsyncConfig2   = 27 // NXT_SET_ASYNC_CONFIG2: OF1.4-style properties
	type13GetAsyncReply  = 27
	type14RoleStatus     = 30
	nxRoleOther          = 0
	nxRoleMaster         = 1
	nxRoleSlave          = 2
	asyncConfigBodyLen13 = 24
)

// AsyncType is a kind of asynchronous message (OVS's enum
// ofputil_async_msg_type), an index of AsyncConfig's masks.
type AsyncType int

const (
	AsyncPacketIn AsyncType = iota
	AsyncPortStatus
	AsyncFlowRemoved
	AsyncTypes
)

func (t AsyncType) String() string {
	switch t {
	case AsyncPacketIn:
		return "PACKET_IN"
	case AsyncPortStatus:
		return "PORT_STATUS"
	case AsyncFlowRemoved:
		return "FLOW_REMOVED"
	}
	return "ASYNC?"
}

// Reasons of the asynchronous messages, as the wire carries them: bit r
// of a mask enables reason r.
const (
	PacketInNoMatch    = 0 // OFPR_NO_MATCH (OF1.3+: table-miss)
	PacketInAction     = 1 // OFPR_ACTION
	PacketInInvalidTTL = 2
	PacketInActionSet  = 3 // OF1.4+
	PacketInGroup      = 4 // OF1.4+
	PacketInPacketOut  = 5 // OF1.4+

	FlowRemovedIdle   = 0
	FlowRemovedHard   = 1
	FlowRemovedDelete = 2
	FlowRemovedGroup  = 3 // OF1.3+
	FlowRemovedMeter  = 4 // OF1.4+
	FlowRemovedEvict  = 5 // OF1.4+
)

// AsyncConfig is which asynchronous messages a connection receives: bit r
// of Master[t] enables reason r of type t while the connection is master
// or equal, Slave[t] while it is slave.
type AsyncConfig struct {
	Master, Slave [AsyncTypes]uint32
}

// DefaultAsyncConfig is the configuration a connection starts with in
// version v (OVS's ofputil_async_cfg_default): packet-ins except for an
// invalid TTL and flow removals for master and equal, port status for
// every role.
func DefaultAsyncConfig(v Version) AsyncConfig {
	var c AsyncConfig
	c.Master[AsyncPacketIn] = 1<<PacketInNoMatch | 1<<PacketInAction | 1<<PacketInActionSet | 1<<PacketInGroup | 1<<PacketInPacketOut
	c.Master[AsyncPortStatus] = 1<<PortAdded | 1<<PortDeleted | 1<<PortModified
	c.Slave[AsyncPortStatus] = c.Master[AsyncPortStatus]
	switch {
	case v == V10:
		c.Master[AsyncFlowRemoved] = 0x7
	case v >= V14:
		c.Master[AsyncFlowRemoved] = 0x3f
	default:
		c.Master[AsyncFlowRemoved] = 0xf
	}
	return c
}

// SetAsync is OFPT_SET_ASYNC (OF1.3's fixed masks or OF1.4+'s
// properties) or NXT_SET_ASYNC_CONFIG(2). Only the masks whose bit is set
// in Set (bit 2t for Slave[t], 2t+1 for Master[t]) are changed: OF1.4
// properties may leave some out.
type SetAsync struct {
	Header
	Config AsyncConfig
	Set    uint32
}

// GetAsyncRequest is OFPT_GET_ASYNC_REQUEST.
type GetAsyncRequest struct{ Header }

// SetControllerID is NXT_SET_CONTROLLER_ID.
type SetControllerID struct {
	Header
	ID uint16
}

// decodeAsyncMasks decodes OF1.3's ofp13_async_config body (and
// NXT_SET_ASYNC_CONFIG's): three pairs of (master-or-equal, slave) masks.
func decodeAsyncMasks(h Header, body []byte, name string) (Message, error) {
	if len(body) != asyncConfigBodyLen13 {
		return nil, errorf(BadLen, name, "%d bytes of body, want %d", len(body), asyncConfigBodyLen13)
	}
	m := &SetAsync{Header: h, Set: 1<<(2*AsyncTypes) - 1}
	for t := AsyncType(0); t < AsyncTypes; t++ {
		m.Config.Master[t] = binary.BigEndian.Uint32(body[8*t:])
		m.Config.Slave[t] = binary.BigEndian.Uint32(body[8*t+4:])
	}
	return m, nil
}

// Asynchronous configuration properties (OFPACPT_*): slave and master
// variants of each type alternate, slave first.
const asyncPropTypes = 12

// decodeAsyncProps decodes OF1.4+'s OFPT_SET_ASYNC properties. Role
// status, table status and request-forward properties (types 6–11) are
// accepted only for all-zero masks: govs sends none of those messages.
func decodeAsyncProps(h Header, body []byte, name string) (Message, error) {
	m := &SetAsync{Header: h}
	for len(body) > 0 {
		if len(body) < 4 {
			return nil, errorf(BadLen, name, "truncated property")
		}
		typ, n := binary.BigEndian.Uint16(body), int(binary.BigEndian.Uint16(body[2:]))
		if n < 4 || n > len(body) {
			return nil, errorf(BadLen, name, "property of %d bytes", n)
		}
		prop := body[:n]
		if adv := (n + 7) &^ 7; adv <= len(body) {
			body = body[adv:]
		} else {
			body = body[n:]
		}
		if typ >= 0xfffe {
			// Experimenter properties: OVS rejects unknown ones.
			return nil, errorf(BadAsyncProp, name, "experimenter property")
		}
		if typ >= asyncPropTypes {
			return nil, errorf(BadAsyncProp, name, "property type %d", typ)
		}
		if n != 8 {
			return nil, errorf(BadAsyncLen, name, "property of %d bytes", n)
		}
		mask := binary.BigEndian.Uint32(prop[4:])
		t := AsyncType(typ / 2)
		if t >= AsyncTypes {
			if mask != 0 {
				return nil, errorf(BadAsyncMask, name, "property type %d: govs sends no such messages", typ)
			}
			continue
		}
		if typ%2 == 0 {
			m.Config.Slave[t] = mask
		} else {
			m.Config.Master[t] = mask
		}
		m.Set |= 1 << typ
	}
	return m, nil
}

// Apply returns c with the masks m sets replaced.
func (m *SetAsync) Apply(c AsyncConfig) AsyncConfig {
	for t := AsyncType(0); t < AsyncTypes; t++ {
		if m.Set&(1<<(2*t)) != 0 {
			c.Slave[t] = m.Config.Slave[t]
		}
		if m.Set&(1<<(2*t+1)) != 0 {
			c.Master[t] = m.Config.Master[t]
		}
	}
	return c
}

// EncodeGetAsyncReply answers OFPT_GET_ASYNC_REQUEST: fixed masks in
// OF1.3, properties (every type govs has) from OF1.4.
func EncodeGetAsyncReply(v Version, xid uint32, c AsyncConfig) []byte {
	b := newMsg(v, type13GetAsyncReply, xid, 48)
	if v == V13 {
		for t := AsyncType(0); t < AsyncTypes; t++ {
			b = put32(b, c.Master[t])
			b = put32(b, c.Slave[t])
		}
		return finish(b)
	}
	for typ := 0; typ < 2*int(AsyncTypes); typ++ {
		t := AsyncType(typ / 2)
		mask := c.Slave[t]
		if typ%2 == 1 {
			mask = c.Master[t]
		}
		b = put16(b, uint16(typ))
		b = put16(b, 8)
		b = put32(b, mask)
	}
	return finish(b)
}

// EncodeNXRoleReply answers NXT_ROLE_REQUEST (role in OF1.2 numbering).
func EncodeNXRoleReply(v Version, xid uint32, role uint32) []byte {
	b := newMsg(v, TypeVendor, xid, 12)
	b = put32(b, NiciraVendor)
	b = put32(b, nxtRoleReply)
	nx := uint32(nxRoleOther)
	switch role {
	case RoleMaster:
		nx = nxRoleMaster
	case RoleSlave:
		nx = nxRoleSlave
	}
	return finish(put32(b, nx))
}

// Role status reasons (OFPCRR_*).
const (
	RoleReasonMasterRequest = 0
	RoleReasonConfig        = 1
)

// EncodeRoleStatus returns OFPT_ROLE_STATUS (OF1.4+), told to a master
// that another connection's request demoted.
func EncodeRoleStatus(v Version, role uint32, reason uint8, generationID uint64) []byte {
	b := newMsg(v, type14RoleStatus, 0, 16)
	b = put32(b, role)
	b = put8(b, reason)
	b = pad(b, 3)
	return finish(put64(b, generationID))
}

// EncodeEchoRequest returns an OFPT_ECHO_REQUEST (an inactivity probe).
func EncodeEchoRequest(v Version, xid uint32) []byte {
	return finish(newMsg(v, TypeEchoRequest, xid, 0))
}

// decodeNXRole decodes NXT_ROLE_REQUEST into a RoleRequest with OF1.2's
// role numbers.
func decodeNXRole(h Header, rest []byte) (Message, error) {
	if len(rest) != 4 {
		return nil, errorf(BadLen, "NXT_ROLE_REQUEST", "%d bytes", len(rest))
	}
	m := &RoleRequest{Header: h, NX: true}
	switch binary.BigEndian.Uint32(rest) {
	case nxRoleOther:
		m.Role = RoleEqual
	case nxRoleMaster:
		m.Role = RoleMaster
	case nxRoleSlave:
		m.Role = RoleSlave
	default:
		return nil, errorf(EPerm, "NXT_ROLE_REQUEST", "role %d", binary.BigEndian.Uint32(rest))
	}
	return m, nil
}

// decodeCtrlVendor decodes the Nicira controller-connection messages; ok
// is false for other subtypes.
func decodeCtrlVendor(h Header, sub uint32, rest []byte) (m Message, err error, ok bool) {
	switch sub {
	case nxtRoleRequest:
		m, err = decodeNXRole(h, rest)
	case nxtSetAsyncConfig:
		m, err = decodeAsyncMasks(h, rest, "NXT_SET_ASYNC_CONFIG")
	case nxtSetAsyncConfig2:
		m, err = decodeAsyncProps(h, rest, "NXT_SET_ASYNC_CONFIG2")
	case nxtSetControllerID:
		if len(rest) != 8 {
			return nil, errorf(BadLen, "NXT_SET_CONTROLLER_ID", "%d bytes", len(rest)), true
		}
		m = &SetControllerID{Header: h, ID: binary.BigEndian.Uint16(rest[6:])}
	default:
		return nil, nil, false
	}
	return m, err, true
}

// decodeCtrl decodes the standard controller-connection messages of
// OF1.3+ (asynchronous configuration); ok is false for other types.
func decodeCtrl(h Header, body []byte) (m Message, err error, ok bool) {
	if h.Version < V13 {
		return nil, nil, false
	}
	name := typeName(h.Version, h.Type)
	switch h.Type {
	case type13GetAsyncReq:
		if len(body) != 0 {
			return nil, errorf(BadLen, name, "%d bytes of body", len(body)), true
		}
		return &GetAsyncRequest{h}, nil, true
	case type13SetAsync:
		if h.Version == V13 {
			m, err = decodeAsyncMasks(h, body, name)
		} else {
			m, err = decodeAsyncProps(h, body, name)
		}
		return m, err, true
	}
	return nil, nil, false
}

// Nicira subtypes that change the switch (NXT_FLOW_MOD,
// NXT_FLOW_MOD_TABLE_ID, NXT_TLV_TABLE_MOD, NXT_RESUME: as OVS's handlers that call
// reject_slave_controller).
var nxWriteSubtypes = map[uint32]bool{13: true, 15: true, 24: true, 28: true}

// IsWriteRequest reports whether the message b (header h) would change
// the switch: what a slave controller may not send (OFPBRC_IS_SLAVE):
// FLOW_MOD, PACKET_OUT, PORT_MOD, GROUP_MOD, TABLE_MOD, METER_MOD and
// their Nicira forms.
func IsWriteRequest(h Header, b []byte) bool {
	v := h.Version
	switch {
	case h.Type == TypeFlowMod, h.Type == TypePacketOut:
		return true
	case v == V10:
		return h.Type == type10PortMod
	case h.Type == type11GroupMod, h.Type == type11PortMod, h.Type == type11TableMod:
		return true
	case v >= V13 && h.Type == type13MeterMod:
		return true
	case v >= V14 && (h.Type == type14BundleControl || h.Type == type14BundleAdd):
		return true
	}
	if h.Type == TypeVendor && v == V13 && len(b) >= HeaderLen+8 && binary.BigEndian.Uint32(b[HeaderLen:]) == ONFVendor {
		t := binary.BigEndian.Uint32(b[HeaderLen+4:])
		return t == onftBundleControl || t == onftBundleAdd
	}
	if h.Type == TypeVendor && len(b) >= HeaderLen+8 && binary.BigEndian.Uint32(b[HeaderLen:]) == NiciraVendor {
		return nxWriteSubtypes[binary.BigEndian.Uint32(b[HeaderLen+4:])]
	}
	return false
}
