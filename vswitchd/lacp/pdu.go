// Package lacp is the Link Aggregation Control Protocol (IEEE 802.1AX) as
// OVS's lib/lacp.c runs it for a bond: the LACPDU codec and, per bond, the
// state machine that tells which members are attached to the partner's
// aggregator and may carry traffic. It does no I/O: the caller hands it
// the PDUs its members receive, the time and the carrier changes, and
// sends the frames Run asks for.
package lacp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
)

// State bits of Info.State (802.1AX's actor/partner state).
const (
	StateActivity     = 0x01 // active, not passive
	StateTimeout      = 0x02 // short (fast) timeout
	StateAggregation  = 0x04 // the link may be aggregated
	StateSync         = 0x08 // in sync with the aggregator
	StateCollecting   = 0x10
	StateDistributing = 0x20
	StateDefaulted    = 0x40 // the partner information is the default
	StateExpired      = 0x80 // the partner information expired
)

// Slow protocols (IEEE 802.3 annex 57A): what a bond member punts to LACP.
const (
	EthTypeSlow = 0x8809
	// PDULen is the length of a LACPDU after the Ethernet header.
	PDULen = 110
	// infoLen is an actor or partner TLV's information.
	infoLen = 15
)

// Subtypes of slow protocol PDUs.
const (
	SubtypeLACP   = 1
	SubtypeMarker = 2
)

// MulticastAddr is the slow protocols' destination address.
var MulticastAddr = [6]byte{0x01, 0x80, 0xc2, 0x00, 0x00, 0x02}

// Info is an actor's or partner's information in a LACPDU.
type Info struct {
	SysPriority  uint16
	SysID        [6]byte
	Key          uint16
	PortPriority uint16
	PortID       uint16
	State        uint8
}

// PDU is a LACPDU.
type PDU struct {
	Actor, Partner Info
}

// Errors of Decode.
var (
	ErrShort   = errors.New("truncated slow protocols PDU")
	ErrMarker  = errors.New("marker PDU")
	ErrInvalid = errors.New("not a LACPDU OVS supports")
)

// Decode parses b, a slow protocols PDU (the frame after its Ethernet
// header), as OVS's parse_lacp_packet: subtype 1 with actor and partner
// TLVs of type 1 and 2 and length 20; the rest of the 110 bytes is not
// checked. A marker PDU is ErrMarker; anything shorter than 110 bytes
// is ErrShort, as OVS reads 110 bytes before it looks at the subtype.
func Decode(b []byte) (PDU, error) {
	switch {
	case len(b) < PDULen:
		return PDU{}, ErrShort
	case b[0] == SubtypeLACP && b[2] == 1 && b[3] == 20 && b[22] == 2 && b[23] == 20:
		return PDU{Actor: decodeInfo(b[4:]), Partner: decodeInfo(b[24:])}, nil
	case b[0] == SubtypeMarker:
		return PDU{}, ErrMarker
	}
	return PDU{}, ErrInvalid
}

func decodeInfo(b []byte) Info {
	var i Info
	i.SysPriority = binary.BigEndian.Uint16(b)
	copy(i.SysID[:], b[2:8])
	i.Key = binary.BigEndian.Uint16(b[8:])
	i.PortPriority = binary.BigEndian.Uint16(b[10:])
	i.PortID = binary.BigEndian.Uint16(b[12:])
	i.State = b[14]
	return i
}

func (i Info) put(b []byte) {
	binary.BigEndian.PutUint16(b, i.SysPriority)
	copy(b[2:8], i.SysID[:])
	binary.BigEndian.PutUint16(b[8:], i.Key)
	binary.BigEndian.PutUint16(b[10:], i.PortPriority)
	binary.BigEndian.PutUint16(b[12:], i.PortID)
	b[14] = i.State
}

// Encode returns p as the 110 bytes OVS's compose_lacp_pdu writes
// (collector delay 0, reserved bytes and terminator zero).
func (p PDU) Encode() []byte {
	b := make([]byte, PDULen)
	b[0], b[1] = SubtypeLACP, 1
	b[2], b[3] = 1, 20
	p.Actor.put(b[4:])
	b[22], b[23] = 2, 20
	p.Partner.put(b[24:])
	b[42], b[43] = 3, 16
	return b
}

// Frame returns p in an Ethernet frame from src to the slow protocols
// address.
func (p PDU) Frame(src [6]byte) []byte {
	f := make([]byte, 14, 14+PDULen)
	copy(f, MulticastAddr[:])
	copy(f[6:], src[:])
	binary.BigEndian.PutUint16(f[12:], EthTypeSlow)
	return append(f, p.Encode()...)
}

// ParseFrame returns the slow protocols PDU of an untagged Ethernet
// frame, or an error if it is not one.
func ParseFrame(f []byte) ([]byte, error) {
	if len(f) < 14 || binary.BigEndian.Uint16(f[12:]) != EthTypeSlow {
		return nil, fmt.Errorf("not a slow protocols frame")
	}
	return f[14:], nil
}

func macString(m [6]byte) string { return net.HardwareAddr(m[:]).String() }
