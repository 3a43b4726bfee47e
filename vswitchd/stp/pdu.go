// Package stp is the Spanning Tree Protocol of IEEE 802.1D-1998 as OVS's
// lib/stp.c runs it for a bridge: the BPDU codec and, per bridge, the
// state machine that elects a root, gives each port a role and moves it
// through listening and learning to forwarding or keeps it blocking. It
// does no I/O: the caller hands it the BPDUs its ports receive and the
// time that passed, and sends the BPDUs it asks for.
package stp

import (
	"encoding/binary"
	"fmt"
)

// Addr is the destination of BPDUs (the bridge group address).
var Addr = [6]byte{0x01, 0x80, 0xc2, 0x00, 0x00, 0x00}

// LLC header of a BPDU (802.2: DSAP, SSAP, UI).
const (
	llcSAP  = 0x42
	llcCntl = 0x03
	// ethLLCLen is the Ethernet and LLC headers before a BPDU.
	ethLLCLen = 14 + 3
)

// BPDU types and lengths.
const (
	TypeConfig = 0x00
	TypeTCN    = 0x80
	// ConfigLen and TCNLen are the lengths of a configuration and a
	// topology change notification BPDU; headerLen of their common header.
	ConfigLen = 35
	TCNLen    = 4
	headerLen = 4
)

// Flags of a configuration BPDU.
const (
	FlagTopologyChange    = 0x01
	FlagTopologyChangeAck = 0x80
)

// DecodeError is a BPDU that stp_received_bpdu refuses, with OVS's
// wording; the caller prefixes the bridge's name.
type DecodeError struct{ Msg string }

func (e *DecodeError) Error() string { return e.Msg }

// BPDU is a configuration or TCN BPDU. Times are in 1/256 s, as on the
// wire.
type BPDU struct {
	Type         uint8
	Flags        uint8
	RootID       ID
	RootPathCost uint32
	BridgeID     ID
	PortID       uint16
	MessageAge   uint16
	MaxAge       uint16
	HelloTime    uint16
	ForwardDelay uint16
}

// Decode parses a BPDU (what follows the LLC header), as
// stp_received_bpdu checks it: a protocol version other than 0 is
// accepted, a configuration BPDU may be followed by more bytes, a TCN
// may not.
func Decode(b []byte) (BPDU, error) {
	if len(b) < headerLen {
		return BPDU{}, &DecodeError{fmt.Sprintf("received runt %d-byte BPDU", len(b))}
	}
	if id := binary.BigEndian.Uint16(b); id != 0 {
		return BPDU{}, &DecodeError{fmt.Sprintf("received BPDU with unexpected protocol ID %d", id)}
	}
	p := BPDU{Type: b[3]}
	switch p.Type {
	case TypeConfig:
		if len(b) < ConfigLen {
			return BPDU{}, &DecodeError{fmt.Sprintf("received config BPDU with invalid size %d", len(b))}
		}
		p.Flags = b[4]
		p.RootID = ID(binary.BigEndian.Uint64(b[5:]))
		p.RootPathCost = binary.BigEndian.Uint32(b[13:])
		p.BridgeID = ID(binary.BigEndian.Uint64(b[17:]))
		p.PortID = binary.BigEndian.Uint16(b[25:])
		p.MessageAge = binary.BigEndian.Uint16(b[27:])
		p.MaxAge = binary.BigEndian.Uint16(b[29:])
		p.HelloTime = binary.BigEndian.Uint16(b[31:])
		p.ForwardDelay = binary.BigEndian.Uint16(b[33:])
	case TypeTCN:
		if len(b) != TCNLen {
			return BPDU{}, &DecodeError{fmt.Sprintf("received TCN BPDU with invalid size %d", len(b))}
		}
	default:
		return BPDU{}, &DecodeError{fmt.Sprintf("received BPDU of unexpected type %d", p.Type)}
	}
	return p, nil
}

// Encode returns p as sent: 35 bytes for a configuration BPDU, 4 for a
// TCN.
func (p BPDU) Encode() []byte {
	if p.Type == TypeTCN {
		return []byte{0, 0, 0, TypeTCN}
	}
	b := make([]byte, ConfigLen)
	b[3] = p.Type
	b[4] = p.Flags
	binary.BigEndian.PutUint64(b[5:], uint64(p.RootID))
	binary.BigEndian.PutUint32(b[13:], p.RootPathCost)
	binary.BigEndian.PutUint64(b[17:], uint64(p.BridgeID))
	binary.BigEndian.PutUint16(b[25:], p.PortID)
	binary.BigEndian.PutUint16(b[27:], p.MessageAge)
	binary.BigEndian.PutUint16(b[29:], p.MaxAge)
	binary.BigEndian.PutUint16(b[31:], p.HelloTime)
	binary.BigEndian.PutUint16(b[33:], p.ForwardDelay)
	return b
}

// Frame returns bpdu (Encode's bytes) in an 802.3 frame with an LLC
// header from src to Addr, as stp_send_bpdu builds it (no padding).
func Frame(src [6]byte, bpdu []byte) []byte {
	f := make([]byte, ethLLCLen, ethLLCLen+len(bpdu))
	copy(f, Addr[:])
	copy(f[6:], src[:])
	binary.BigEndian.PutUint16(f[12:], uint16(3+len(bpdu)))
	f[14], f[15], f[16] = llcSAP, llcSAP, llcCntl
	return append(f, bpdu...)
}

// Payload returns the BPDU bytes of a frame sent to Addr, as OVS's
// stp_process_packet takes them: the padding beyond the 802.3 length is
// trimmed and the Ethernet and LLC headers skipped (the LLC header is not
// checked). It reports false for a frame too short to hold them.
func Payload(f []byte) ([]byte, bool) {
	if len(f) < 14 {
		return nil, false
	}
	if n := int(binary.BigEndian.Uint16(f[12:])) + 14; len(f) > n {
		f = f[:n]
	}
	if len(f) < ethLLCLen {
		return nil, false
	}
	return f[ethLLCLen:], true
}

// IsBPDU reports whether an Ethernet destination is Addr.
func IsBPDU(dst [6]byte) bool { return dst == Addr }
