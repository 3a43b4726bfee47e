// Package rstp is the Rapid Spanning Tree Protocol (IEEE 802.1D-2004
// clause 17, 802.1w) as OVS's lib/rstp.c runs it for a bridge: the BPDU
// codec and, per bridge, the port state machines that choose each port's
// role (root, designated, alternate, backup, disabled) and state
// (discarding, learning, forwarding). It also accepts the configuration
// and topology change BPDUs of 802.1D bridges and falls back to them on
// such a port. It does no I/O: the caller hands it the BPDUs its ports
// receive, carrier changes and a tick a second, and sends the BPDUs it
// asks for.
package rstp

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// BPDU types (802.1D-2004 9.3).
const (
	TypeConfig = 0x00
	TypeRST    = 0x02
	TypeTCN    = 0x80
)

// BPDU sizes after the LLC header (OVS's CONFIGURATION_BPDU_SIZE,
// TOPOLOGY_CHANGE_NOTIFICATION_BPDU_SIZE, RAPID_SPANNING_TREE_BPDU_SIZE).
const (
	configLen = 35
	tcnLen    = 4
	rstLen    = 36
)

// Flags of configuration and RST BPDUs (9.3.3).
const (
	FlagTC       = 0x01
	FlagProposal = 0x02
	roleShift    = 2
	roleMask     = 0x0c
	FlagLearning = 0x10
	FlagForward  = 0x20
	FlagAgree    = 0x40
	FlagTCAck    = 0x80
)

// Port role encodings of an RST BPDU's flags.
const (
	bpduRoleUnknown    = 0
	bpduRoleAltBackup  = 1
	bpduRoleRoot       = 2
	bpduRoleDesignated = 3
)

// Addr is where BPDUs go: the bridge group address.
var Addr = [6]byte{0x01, 0x80, 0xc2, 0x00, 0x00, 0x00}

// llc is the LLC header of a BPDU: DSAP and SSAP 0x42, UI.
var llc = [3]byte{0x42, 0x42, 0x03}

// BridgeID is a bridge identifier: priority in the top 16 bits, the
// address below.
type BridgeID uint64

// String is OVS's RSTP_ID_FMT: "8000.0a0b0c0d0e0f".
func (id BridgeID) String() string {
	return fmt.Sprintf("%04x.%012x", uint16(id>>48), uint64(id)&(1<<48-1))
}

func (id BridgeID) addr() uint64 { return uint64(id) & (1<<48 - 1) }

// Vector is a priority vector (17.6) without its last component, the
// receiving port, which Better compares only where 17.6 says to.
type Vector struct {
	RootID             BridgeID
	RootPathCost       uint32
	DesignatedBridgeID BridgeID
	DesignatedPortID   uint16
}

// compare is <0 if v is better (numerically lower) than w.
func (v Vector) compare(w Vector) int {
	switch {
	case v.RootID != w.RootID:
		return cmp64(uint64(v.RootID), uint64(w.RootID))
	case v.RootPathCost != w.RootPathCost:
		return cmp64(uint64(v.RootPathCost), uint64(w.RootPathCost))
	case v.DesignatedBridgeID != w.DesignatedBridgeID:
		return cmp64(uint64(v.DesignatedBridgeID), uint64(w.DesignatedBridgeID))
	}
	return cmp64(uint64(v.DesignatedPortID), uint64(w.DesignatedPortID))
}

func cmp64(a, b uint64) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

// Times are a BPDU's timer values, in whole seconds.
type Times struct {
	MessageAge, MaxAge, HelloTime, ForwardDelay uint16
}

// BPDU is a decoded BPDU. Vector, Times and Flags are meaningless in a
// TCN BPDU.
type BPDU struct {
	Version uint8
	Type    uint8
	Flags   uint8
	Vector  Vector
	Times   Times
}

// role is the port role an RST BPDU's flags carry; a configuration BPDU
// conveys a designated port.
func (b *BPDU) role() uint8 {
	if b.Type == TypeConfig {
		return bpduRoleDesignated
	}
	return (b.Flags & roleMask) >> roleShift
}

// Errors of Decode.
var (
	ErrShort    = errors.New("truncated BPDU")
	ErrProtocol = errors.New("BPDU protocol identifier is not 0")
	ErrType     = errors.New("unknown BPDU type")
	ErrAge      = errors.New("BPDU message age is not below its max age")
)

// Decode parses b, a BPDU after its LLC header, with OVS's checks
// (validate_received_bpdu, 802.1D 9.3.4): a TCN BPDU is 4 bytes or more,
// a configuration BPDU 35 with a message age below its max age, an RST
// BPDU 36.
func Decode(b []byte) (BPDU, error) {
	if len(b) < tcnLen {
		return BPDU{}, ErrShort
	}
	if binary.BigEndian.Uint16(b) != 0 {
		return BPDU{}, ErrProtocol
	}
	p := BPDU{Version: b[2], Type: b[3]}
	switch p.Type {
	case TypeTCN:
		return p, nil
	case TypeConfig:
		if len(b) < configLen {
			return BPDU{}, ErrShort
		}
	case TypeRST:
		if len(b) < rstLen {
			return BPDU{}, ErrShort
		}
	default:
		return BPDU{}, ErrType
	}
	p.Flags = b[4]
	p.Vector = Vector{
		RootID:             BridgeID(binary.BigEndian.Uint64(b[5:])),
		RootPathCost:       binary.BigEndian.Uint32(b[13:]),
		DesignatedBridgeID: BridgeID(binary.BigEndian.Uint64(b[17:])),
		DesignatedPortID:   binary.BigEndian.Uint16(b[25:]),
	}
	p.Times = Times{
		MessageAge:   binary.BigEndian.Uint16(b[27:]) / 256,
		MaxAge:       binary.BigEndian.Uint16(b[29:]) / 256,
		HelloTime:    binary.BigEndian.Uint16(b[31:]) / 256,
		ForwardDelay: binary.BigEndian.Uint16(b[33:]) / 256,
	}
	if p.Type == TypeConfig && p.Times.MessageAge >= p.Times.MaxAge {
		return BPDU{}, ErrAge
	}
	return p, nil
}

// Encode returns p as the bytes after the LLC header: 4 for a TCN BPDU,
// 35 for a configuration BPDU, 36 for an RST BPDU (version 1 length 0).
func (p BPDU) Encode() []byte {
	if p.Type == TypeTCN {
		return []byte{0, 0, p.Version, TypeTCN}
	}
	n := configLen
	if p.Type == TypeRST {
		n = rstLen
	}
	b := make([]byte, n)
	b[2], b[3], b[4] = p.Version, p.Type, p.Flags
	binary.BigEndian.PutUint64(b[5:], uint64(p.Vector.RootID))
	binary.BigEndian.PutUint32(b[13:], p.Vector.RootPathCost)
	binary.BigEndian.PutUint64(b[17:], uint64(p.Vector.DesignatedBridgeID))
	binary.BigEndian.PutUint16(b[25:], p.Vector.DesignatedPortID)
	binary.BigEndian.PutUint16(b[27:], p.Times.MessageAge*256)
	binary.BigEndian.PutUint16(b[29:], p.Times.MaxAge*256)
	binary.BigEndian.PutUint16(b[31:], p.Times.HelloTime*256)
	binary.BigEndian.PutUint16(b[33:], p.Times.ForwardDelay*256)
	return b
}

// Frame returns bpdu (Encode's bytes) in an 802.3 frame from src to
// Addr with its LLC header.
func Frame(src [6]byte, bpdu []byte) []byte {
	f := make([]byte, 14, 17+len(bpdu))
	copy(f, Addr[:])
	copy(f[6:], src[:])
	binary.BigEndian.PutUint16(f[12:], uint16(len(llc)+len(bpdu)))
	f = append(f, llc[:]...)
	return append(f, bpdu...)
}

// ParseFrame returns the BPDU of an untagged 802.3 frame to Addr: the
// bytes after its LLC header.
func ParseFrame(f []byte) ([]byte, error) {
	if len(f) < 17 || [6]byte(f[:6]) != Addr || binary.BigEndian.Uint16(f[12:]) > 1500 || [3]byte(f[14:17]) != llc {
		return nil, fmt.Errorf("not a BPDU frame")
	}
	n := int(binary.BigEndian.Uint16(f[12:]))
	if n >= len(llc) && 14+n <= len(f) {
		f = f[:14+n] // drop the padding
	}
	return f[17:], nil
}
