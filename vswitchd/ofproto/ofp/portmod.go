package ofp

import "encoding/binary"

// PortMod is OFPT_PORT_MOD. Config and Mask hold OFPPC_* bits, which have
// the same positions in every version; the bits a version does not define
// are dropped, as OVS's ofputil_decode_port_mod drops them.
type PortMod struct {
	Header
	Port         uint32
	HWAddr       [6]byte
	Config, Mask uint32
}

// Port configuration bits (OFPPC_*); NoSTP, NoRecvSTP and NoFlood are
// OpenFlow 1.0's only.
const (
	PortConfigNoSTP      = 1 << 1
	PortConfigNoRecv     = 1 << 2
	PortConfigNoRecvSTP  = 1 << 3
	PortConfigNoFlood    = 1 << 4
	PortConfigNoFwd      = 1 << 5
	PortConfigNoPacketIn = 1 << 6

	portConfig10All = 0x7f
	portConfig11All = PortConfigDown | PortConfigNoRecv | PortConfigNoFwd | PortConfigNoPacketIn
)

func decodePortMod(h Header, body []byte) (Message, error) {
	name := typeName(h.Version, h.Type)
	m := &PortMod{Header: h}
	switch {
	case h.Version == V10:
		if len(body) != 24 {
			return nil, errorf(BadLen, name, "%d bytes of body, want 24", len(body))
		}
		m.Port = widenPort10(binary.BigEndian.Uint16(body))
		copy(m.HWAddr[:], body[2:8])
		m.Config = binary.BigEndian.Uint32(body[8:]) & portConfig10All
		m.Mask = binary.BigEndian.Uint32(body[12:]) & portConfig10All
	case h.Version <= V13:
		if len(body) != 32 {
			return nil, errorf(BadLen, name, "%d bytes of body, want 32", len(body))
		}
		fallthrough
	default:
		// OF1.4+: the same head, then properties (Ethernet
		// advertisement, optical), which govs has no use for.
		if len(body) < 24 {
			return nil, errorf(BadLen, name, "%d bytes of body", len(body))
		}
		m.Port = binary.BigEndian.Uint32(body)
		copy(m.HWAddr[:], body[8:14])
		m.Config = binary.BigEndian.Uint32(body[16:]) & portConfig11All
		m.Mask = binary.BigEndian.Uint32(body[20:]) & portConfig11All
	}
	return m, nil
}
