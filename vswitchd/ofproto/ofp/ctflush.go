package ofp

import (
	"encoding/binary"
	"fmt"
)

// nxtCTFlushZone is NXT_CT_FLUSH_ZONE's Nicira subtype.
const nxtCTFlushZone = 29

// CTFlushZone is NXT_CT_FLUSH_ZONE: the controller asks the switch to
// forget every connection of Zone.
type CTFlushZone struct {
	Header
	Zone uint16
}

func (m *CTFlushZone) String() string { return fmt.Sprintf("NXT_CT_FLUSH_ZONE zone_id=%d", m.Zone) }

// decodeCTFlushZone decodes struct nx_zone_id: 6 zero bytes and the zone.
func decodeCTFlushZone(h Header, rest []byte) (Message, error) {
	if len(rest) != 8 {
		return nil, errorf(BadLen, "NXT_CT_FLUSH_ZONE", "%d bytes", len(rest))
	}
	for _, c := range rest[:6] {
		if c != 0 {
			return nil, errorf(MustBeZero, "NXT_CT_FLUSH_ZONE", "nonzero padding")
		}
	}
	return &CTFlushZone{Header: h, Zone: binary.BigEndian.Uint16(rest[6:])}, nil
}
