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

// nxtCTFlush is NXT_CT_FLUSH's Nicira subtype (OVS 3.1).
const nxtCTFlush = 32

// CTTuple is one direction of a connection in NXT_CT_FLUSH; IPv4
// addresses are IPv4-mapped. Zero fields were not given.
type CTTuple struct {
	Src, Dst           [16]byte
	SrcPort, DstPort   uint16
	ICMPID             uint16
	ICMPType, ICMPCode uint8
}

// CTFlush is NXT_CT_FLUSH: forget the connections of Zone (every zone
// when HasZone is false), only the one whose tuples are Orig/Reply if
// either is given.
type CTFlush struct {
	Header
	Proto       uint8
	HasZone     bool
	Zone        uint16
	Orig, Reply CTTuple
}

// decodeCTFlush decodes struct nx_ct_flush (ip_proto, 7 zero bytes) and
// its properties: NXT_CT_ORIG_TUPLE (0), NXT_CT_REPLY_TUPLE (1) with
// nested NXT_CT_TUPLE_* properties, NXT_CT_ZONE_ID (2). Properties are
// padded to 8 bytes; a tuple's nested ones start 8 bytes in.
func decodeCTFlush(h Header, rest []byte) (Message, error) {
	const name = "NXT_CT_FLUSH"
	if len(rest) < 8 {
		return nil, errorf(BadLen, name, "%d bytes", len(rest))
	}
	for _, c := range rest[1:8] {
		if c != 0 {
			return nil, errorf(MustBeZero, name, "nonzero padding")
		}
	}
	m := &CTFlush{Header: h, Proto: rest[0]}
	err := eachProp(rest[8:], func(typ uint16, val []byte) *Error {
		switch typ {
		case 0, 1:
			tu := &m.Orig
			if typ == 1 {
				tu = &m.Reply
			}
			// The nested properties start 8 bytes in.
			if len(val) < 4 {
				return errorf(BadAsyncLen, name, "tuple property")
			}
			return eachProp(val[4:], func(nt uint16, v []byte) *Error {
				sizes := map[uint16]int{0: 16, 1: 16, 2: 2, 3: 2, 4: 2, 5: 1, 6: 1}
				n, ok := sizes[nt]
				if !ok {
					return errorf(BadAsyncProp, name, "tuple property %d", nt)
				}
				// As OVS's ofpprop_parse_u16 and others, a value may be
				// padded (ovs-ofctl sends 16-bit ones in 4 bytes).
				if len(v) < n {
					return errorf(BadAsyncLen, name, "tuple property %d", nt)
				}
				switch nt {
				case 0:
					tu.Src = [16]byte(v[:16])
				case 1:
					tu.Dst = [16]byte(v[:16])
				case 2:
					tu.SrcPort = binary.BigEndian.Uint16(v)
				case 3:
					tu.DstPort = binary.BigEndian.Uint16(v)
				case 4:
					tu.ICMPID = binary.BigEndian.Uint16(v)
				case 5:
					tu.ICMPType = v[0]
				case 6:
					tu.ICMPCode = v[0]
				}
				return nil
			})
		case 2:
			if len(val) < 2 {
				return errorf(BadAsyncLen, name, "zone property")
			}
			m.HasZone, m.Zone = true, binary.BigEndian.Uint16(val)
			return nil
		}
		return errorf(BadAsyncProp, name, "property %d", typ)
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// eachProp calls fn with each property's type and value (OpenFlow 1.4
// property list: type, length including the 4-byte header, padding to
// 8 bytes).
func eachProp(b []byte, fn func(typ uint16, val []byte) *Error) *Error {
	for len(b) > 0 {
		if len(b) < 4 {
			return errorf(BadAsyncLen, "NXT_CT_FLUSH", "truncated property")
		}
		typ, n := binary.BigEndian.Uint16(b), int(binary.BigEndian.Uint16(b[2:]))
		padded := (n + 7) &^ 7
		if n < 4 || padded > len(b) {
			return errorf(BadAsyncLen, "NXT_CT_FLUSH", "property length %d", n)
		}
		if err := fn(typ, b[4:n]); err != nil {
			return err
		}
		b = b[padded:]
	}
	return nil
}
