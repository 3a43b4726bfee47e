package ofp

import (
	"encoding/binary"
	"unsafe"
)

// AppendActionsKey appends to b a key of acts: two lists with the same
// key are equal, field for field, so that one may stand for the other
// (a switch shares the action lists of its flows; an Action is 352
// bytes). Fields are compared by identity (a Field is one per field and
// length). It returns false, and b as it was, for a list it does not key:
// one with an action whose arguments are behind a pointer (ct, nat,
// learn, fin_timeout, multipath, bundle).
func AppendActionsKey(b []byte, acts []Action) ([]byte, bool) {
	n := len(b)
	b, ok := appendActionsKey(b, acts)
	if !ok {
		return b[:n], false
	}
	return b, true
}

func appendActionsKey(b []byte, acts []Action) ([]byte, bool) {
	b = binary.AppendUvarint(b, uint64(len(acts)))
	for i := range acts {
		a := &acts[i]
		if a.CT != nil || a.NAT != nil || a.Learn != nil || a.Fin != nil || a.Multipath != nil || a.Bundle != nil {
			return b, false
		}
		b = append(b, byte(a.Type), a.Table, a.Reason, byte(a.Errno), a.Clause, a.NClauses,
			flags(a.Pause, a.wholeVar, a.tunMDMasked, a.resubmitTable, a.CntIDs != nil, a.NoPush, a.FlowHasVLAN, a.CTOrig))
		for _, v := range [...]uint64{uint64(a.Port), uint64(a.MaxLen), uint64(a.ControllerID), uint64(a.VLAN),
			uint64(uintptr(unsafe.Pointer(a.Field))), uint64(a.raw), a.Metadata, a.MetadataMask, uint64(a.ID),
			uint64(a.PktLen)} {
			b = binary.AppendUvarint(b, v)
		}
		for _, r := range [...]*FieldRef{&a.Src, &a.Dst} {
			b = binary.AppendUvarint(b, uint64(uintptr(unsafe.Pointer(r.Field))))
			b = binary.AppendUvarint(b, uint64(r.Ofs))
			b = binary.AppendUvarint(b, uint64(r.NBits))
		}
		for _, s := range [...][]byte{a.Userdata, a.Value, a.Mask, a.Data} {
			b = appendBytesKey(b, s)
		}
		b = binary.AppendUvarint(b, uint64(len(a.Name)))
		b = append(b, a.Name...)
		b = binary.AppendUvarint(b, uint64(len(a.CntIDs)))
		for _, id := range a.CntIDs {
			b = binary.AppendUvarint(b, uint64(id))
		}
		b = append(b, flags(a.Nested != nil))
		var ok bool
		if b, ok = appendActionsKey(b, a.Nested); !ok {
			return b, false
		}
	}
	return b, true
}

// appendBytesKey appends s, nil or not, to a key.
func appendBytesKey(b, s []byte) []byte {
	if s == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(s))+1)
	return append(b, s...)
}

func flags(fs ...bool) byte {
	var x byte
	for i, f := range fs {
		if f {
			x |= 1 << i
		}
	}
	return x
}
