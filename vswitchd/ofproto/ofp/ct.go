package ofp

import (
	"bytes"
	"encoding/binary"
)

// NX_CT_F_* flags of NXAST_CT.
const (
	CTCommit = 1 << 0
	CTForce  = 1 << 1
)

// CTNoTable is NX_CT_RECIRC_NONE: a ct that does not recirculate.
const CTNoTable = 0xff

// CT is NXAST_CT's arguments (OVS's struct ofpact_conntrack); its exec()
// actions are the Action's Nested.
type CT struct {
	Flags uint16
	// ZoneSrc is the 16-bit field range the zone comes from; when its
	// Field is nil the zone is ZoneImm.
	ZoneSrc FieldRef
	ZoneImm uint16
	// Table is the table the packet recirculates to after tracking, or
	// CTNoTable.
	Table uint8
	// Alg is the helper's well-known port (21 ftp, 69 tftp), 0 for none.
	Alg uint16
}

// NX_NAT_F_* flags of NXAST_NAT.
const (
	NATSrc        = 1 << 0
	NATDst        = 1 << 1
	NATPersistent = 1 << 2
	NATHash       = 1 << 3
	NATRandom     = 1 << 4
	natFlagsMask  = 0x1f
)

// NX_NAT_RANGE_* bits: which optional fields follow nx_action_nat.
const (
	natIPv4Min  = 1 << 0
	natIPv4Max  = 1 << 1
	natIPv6Min  = 1 << 2
	natIPv6Max  = 1 << 3
	natProtoMin = 1 << 4
	natProtoMax = 1 << 5
)

// NAT is NXAST_NAT's arguments (OVS's struct ofpact_nat). Family is 0
// (no range), 4 or 6; an IPv4 address is in the first 4 bytes. A zero
// MaxAddr, MinPort or MaxPort is one the action does not carry.
type NAT struct {
	Flags            uint16
	Family           uint8
	MinAddr, MaxAddr [16]byte
	MinPort, MaxPort uint16
}

// nxActionCTLen is sizeof(struct nx_action_conntrack).
const nxActionCTLen = 24

// decodeCT decodes NXAST_CT and its nested actions as OVS's
// decode_NXAST_RAW_CT: a zone from a field takes exactly 16 bits, the
// nested actions may only set ct_mark/ct_label and NAT, and without
// commit only an argument-less nat.
func decodeCT(v Version, b []byte, depth int) (Action, *Error) {
	if len(b) < nxActionCTLen {
		return Action{}, actErr(BadActionLen, "ct")
	}
	ct := &CT{Flags: binary.BigEndian.Uint16(b[10:]), Table: b[18], Alg: binary.BigEndian.Uint16(b[22:])}
	if src := binary.BigEndian.Uint32(b[12:]); src != 0 {
		fd := FieldByHeader(src)
		if fd == nil || src&0x100 != 0 {
			return Action{}, actErr(BadSetType, "ct zone field")
		}
		ofsNBits := binary.BigEndian.Uint16(b[16:])
		ofs, nbits := int(ofsNBits>>6), int(ofsNBits&0x3f)+1
		if ofs+nbits > fd.Len*8 {
			return Action{}, actErr(BadSetLen, "ct zone field range")
		}
		if nbits != 16 {
			return Action{}, actErr(BadSetLen, "ct zone must be 16 bits")
		}
		ct.ZoneSrc = FieldRef{Field: fd, Ofs: ofs, NBits: nbits}
	} else {
		ct.ZoneImm = binary.BigEndian.Uint16(b[16:])
	}
	nested, err := decodeActions(v, b[nxActionCTLen:], depth+1)
	if err != nil {
		return Action{}, err
	}
	for i := range nested {
		if err := verifyNested(&nested[i], ActCT); err != nil {
			return Action{}, err
		}
	}
	if ct.Flags&CTCommit == 0 {
		for _, a := range nested {
			if a.Type != ActNAT || a.NAT.Flags != 0 || a.NAT.Family != 0 {
				return Action{}, actErr(BadActionArgument, "ct actions other than a plain nat need commit")
			}
		}
	}
	return Action{Type: ActCT, CT: ct, Nested: nested}, nil
}

// requiresCT reports whether fd may only be set inside ct's exec().
func requiresCT(fd *Field) bool { return fd.ID == FieldCtMark || fd.ID == FieldCtLabel }

// verifyNested checks a's place as OVS's ofpacts_verify_nested: nat and
// writes to ct_mark/ct_label only inside ct, and nothing else there.
// outer is the enclosing action's type, 0 at the top.
func verifyNested(a *Action, outer ActionType) *Error {
	// OVS's ofpact_get_mf_dst: set_field's and move's destination; a
	// pop into ct_mark is no write of it here (OVS takes it at the top
	// level and refuses it inside ct as any other action).
	var dst *Field
	switch a.Type {
	case ActSetField:
		dst = a.Field
	case ActMove:
		dst = a.Dst.Field
	}
	if dst != nil && requiresCT(dst) && outer != ActCT {
		return actErr(BadSetArgument, "cannot set CT fields outside of ct action")
	}
	if a.Type == ActNAT {
		if outer != ActCT {
			return actErr(BadSetArgument, "nat outside of ct action")
		}
		return nil
	}
	if outer == ActCT && (dst == nil || !requiresCT(dst)) {
		return actErr(BadActionArgument, "ct action doesn't support nesting of this action")
	}
	return nil
}

// verifyActions verifies a decoded list at the top level or in clone.
func verifyActions(acts []Action, outer ActionType) *Error {
	for i := range acts {
		if acts[i].Type == ActCT {
			continue // its exec() was verified as it decoded
		}
		if err := verifyNested(&acts[i], outer); err != nil {
			return err
		}
		if acts[i].Type == ActClone {
			if err := verifyActions(acts[i].Nested, ActClone); err != nil {
				return err
			}
		}
	}
	return nil
}

func appendCT(b []byte, v Version, a *Action) []byte {
	start := len(b)
	ct := a.CT
	b = nxActionHeader(b, 0, nxastCT)
	b = put16(b, ct.Flags)
	if ct.ZoneSrc.Field != nil {
		b = put32(b, ct.ZoneSrc.Field.header(true))
		b = put16(b, uint16(ct.ZoneSrc.Ofs<<6|(ct.ZoneSrc.NBits-1)))
	} else {
		b = put32(b, 0)
		b = put16(b, ct.ZoneImm)
	}
	b = put8(b, ct.Table)
	b = pad(b, 3)
	b = put16(b, ct.Alg)
	b = AppendActions(b, v, a.Nested)
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
	return b
}

// decodeNAT decodes NXAST_NAT as OVS's decode_NXAST_RAW_NAT.
func decodeNAT(b []byte) (Action, *Error) {
	if len(b) < 16 {
		return Action{}, actErr(BadActionLen, "nat")
	}
	if b[10] != 0 || b[11] != 0 {
		return Action{}, actErr(ActionMustBeZero, "nat padding")
	}
	n := &NAT{Flags: binary.BigEndian.Uint16(b[12:])}
	present := binary.BigEndian.Uint16(b[14:])
	if n.Flags&^natFlagsMask != 0 || n.Flags&NATSrc != 0 && n.Flags&NATDst != 0 ||
		n.Flags&NATHash != 0 && n.Flags&NATRandom != 0 {
		return Action{}, actErr(BadActionArgument, "nat flags")
	}
	opt := b[16:]
	get := func(dst []byte) bool {
		if len(opt) < len(dst) {
			return false
		}
		copy(dst, opt)
		opt = opt[len(dst):]
		return true
	}
	bad := actErr(BadActionArgument, "nat range")
	var zero [16]byte
	switch {
	case present&natIPv4Min != 0:
		if present&(natIPv6Min|natIPv6Max) != 0 || !get(n.MinAddr[:4]) || bytes.Equal(n.MinAddr[:4], zero[:4]) {
			return Action{}, bad
		}
		n.Family = 4
		if present&natIPv4Max != 0 {
			if !get(n.MaxAddr[:4]) || bytes.Compare(n.MaxAddr[:4], n.MinAddr[:4]) < 0 {
				return Action{}, bad
			}
		}
	case present&natIPv4Max != 0:
		return Action{}, bad
	case present&natIPv6Min != 0:
		if !get(n.MinAddr[:]) || n.MinAddr == zero {
			return Action{}, bad
		}
		n.Family = 6
		if present&natIPv6Max != 0 {
			if !get(n.MaxAddr[:]) || bytes.Compare(n.MaxAddr[:], n.MinAddr[:]) < 0 {
				return Action{}, bad
			}
		}
	case present&natIPv6Max != 0:
		return Action{}, bad
	}
	var p [2]byte
	switch {
	case present&natProtoMin != 0:
		if n.Family == 0 || !get(p[:]) || p == [2]byte{} {
			return Action{}, bad
		}
		n.MinPort = binary.BigEndian.Uint16(p[:])
		if present&natProtoMax != 0 {
			if !get(p[:]) {
				return Action{}, bad
			}
			n.MaxPort = binary.BigEndian.Uint16(p[:])
			if n.MaxPort < n.MinPort {
				return Action{}, bad
			}
		}
	case present&natProtoMax != 0:
		return Action{}, bad
	}
	return Action{Type: ActNAT, NAT: n}, nil
}

// appendNAT encodes nat as OVS's encode_NAT: only the nonzero range
// fields, padded to 8 bytes.
func appendNAT(b []byte, n *NAT) []byte {
	start := len(b)
	b = nxActionHeader(b, 0, nxastNAT)
	b = pad(b, 2)
	b = put16(b, n.Flags)
	b = put16(b, 0)
	var present uint16
	var zero [16]byte
	switch n.Family {
	case 4:
		if !bytes.Equal(n.MinAddr[:4], zero[:4]) {
			b = append(b, n.MinAddr[:4]...)
			present |= natIPv4Min
		}
		if !bytes.Equal(n.MaxAddr[:4], zero[:4]) {
			b = append(b, n.MaxAddr[:4]...)
			present |= natIPv4Max
		}
	case 6:
		if n.MinAddr != zero {
			b = append(b, n.MinAddr[:]...)
			present |= natIPv6Min
		}
		if n.MaxAddr != zero {
			b = append(b, n.MaxAddr[:]...)
			present |= natIPv6Max
		}
	}
	if n.Family != 0 {
		if n.MinPort != 0 {
			b = put16(b, n.MinPort)
			present |= natProtoMin
		}
		if n.MaxPort != 0 {
			b = put16(b, n.MaxPort)
			present |= natProtoMax
		}
	}
	b = padTo8(b, start)
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
	binary.BigEndian.PutUint16(b[start+14:], present)
	return b
}
