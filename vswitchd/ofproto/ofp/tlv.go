package ofp

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// The Geneve option map (OVS's lib/tun-metadata.c and the NXT_TLV_TABLE
// messages of lib/ofp-switch.c): which option (class, type, length) each
// tun_metadata<n> field stands for, and where its value lives in the
// 256 bytes of option space a flow has.

// Nicira subtypes of the TLV table messages.
const (
	nxtTLVTableMod     = 24
	nxtTLVTableRequest = 25
	nxtTLVTableReply   = 26
)

// Limits of the map (TUN_METADATA_NUM_OPTS, TUN_METADATA_TOT_OPT_SIZE,
// TLV_MAX_OPT_SIZE).
const (
	TLVMaxFields   = 64
	TLVOptionSpace = 256
	TLVMaxOptLen   = 124
	tlvBlock       = 4 // option space is allocated in blocks of 4 bytes
)

// TLV table mod commands (NXTTMC_*).
const (
	TLVAdd    = 0
	TLVDelete = 1
	TLVClear  = 2
)

// The NXTTMFC_* errors, and NXFMFC_INVALID_TLV_FIELD for a flow that
// uses an unmapped tun_metadata field.
const (
	TLVBadCommand    Errno = 140 + iota // NXTTMFC_BAD_COMMAND
	TLVBadOptLen                        // NXTTMFC_BAD_OPT_LEN
	TLVBadFieldIdx                      // NXTTMFC_BAD_FIELD_IDX
	TLVTableFull                        // NXTTMFC_TABLE_FULL
	TLVAlreadyMapped                    // NXTTMFC_ALREADY_MAPPED
	TLVDupEntry                         // NXTTMFC_DUP_ENTRY
	TLVInvalidDel                       // NXTTMFC_INVALID_TLV_DEL
	InvalidTLVField                     // NXFMFC_INVALID_TLV_FIELD
)

func init() {
	// As `ovs-ofctl print-error` gives them: Nicira type 1 code 527+ in
	// OpenFlow 1.0 and 1.1, Nicira types 16+ from 1.2.
	for e, c := range map[Errno]struct {
		name       string
		code10, nx uint16
	}{
		TLVBadCommand: {"NXTTMFC_BAD_COMMAND", 527, 16}, TLVBadOptLen: {"NXTTMFC_BAD_OPT_LEN", 528, 17},
		TLVBadFieldIdx: {"NXTTMFC_BAD_FIELD_IDX", 529, 18}, TLVTableFull: {"NXTTMFC_TABLE_FULL", 530, 19},
		TLVAlreadyMapped: {"NXTTMFC_ALREADY_MAPPED", 531, 20}, TLVDupEntry: {"NXTTMFC_DUP_ENTRY", 532, 21},
		TLVInvalidDel: {"NXTTMFC_INVALID_TLV_DEL", 537, 38}, InvalidTLVField: {"NXFMFC_INVALID_TLV_FIELD", 536, 37},
	} {
		errnoExtra[e] = c.name
		old := errCode{vendor: NiciraVendor, typ: 1, code: c.code10}
		nx := errCode{vendor: NiciraVendor, typ: c.nx}
		errCodes[e] = [6]errCode{old, old, nx, nx, nx, nx}
	}
}

// TLVMap maps Geneve option (Class, Type) of Len bytes to
// tun_metadata<Index>.
type TLVMap struct {
	Class uint16
	Type  uint8
	Len   uint8
	Index uint16
}

func (m TLVMap) String() string {
	return fmt.Sprintf("{class=0x%x,type=0x%x,len=%d}->tun_metadata%d", m.Class, m.Type, m.Len, m.Index)
}

// TLVTableMod is NXT_TLV_TABLE_MOD.
type TLVTableMod struct {
	Header
	Command uint16
	Maps    []TLVMap
}

// TLVTableRequest is NXT_TLV_TABLE_REQUEST.
type TLVTableRequest struct{ Header }

// tlvMapLen is sizeof(struct nx_tlv_map).
const tlvMapLen = 8

// decodeTLVTableMod decodes struct nx_tlv_table_mod (command, 6 bytes of
// padding) and its nx_tlv_map entries, with OVS's checks of each entry
// (ofputil_decode_tlv_table_mod).
func decodeTLVTableMod(h Header, rest []byte) (Message, error) {
	const name = "NXT_TLV_TABLE_MOD"
	if len(rest) < 8 || (len(rest)-8)%tlvMapLen != 0 {
		return nil, errorf(BadLen, name, "%d bytes", len(rest))
	}
	m := &TLVTableMod{Header: h, Command: binary.BigEndian.Uint16(rest)}
	if m.Command > TLVClear {
		return nil, errorf(TLVBadCommand, name, "command %d", m.Command)
	}
	maps, err := decodeTLVMaps(rest[8:], name)
	if err != nil {
		return nil, err
	}
	m.Maps = maps
	return m, nil
}

func decodeTLVMaps(b []byte, name string) ([]TLVMap, *Error) {
	var maps []TLVMap
	for ; len(b) >= tlvMapLen; b = b[tlvMapLen:] {
		mp := TLVMap{Class: binary.BigEndian.Uint16(b), Type: b[2], Len: b[3], Index: binary.BigEndian.Uint16(b[4:])}
		if mp.Len%4 != 0 || mp.Len > TLVMaxOptLen {
			return nil, errorf(TLVBadOptLen, name, "tlv table option length (%d) is not a valid option size", mp.Len)
		}
		if mp.Index >= TLVMaxFields {
			return nil, errorf(TLVBadFieldIdx, name, "tlv table field index (%d) is too large (max %d)", mp.Index, TLVMaxFields-1)
		}
		maps = append(maps, mp)
	}
	return maps, nil
}

// EncodeTLVTableReply answers NXT_TLV_TABLE_REQUEST with t's maps, by
// index.
func EncodeTLVTableReply(v Version, xid uint32, t *TLVTable) []byte {
	b := newMsg(v, TypeVendor, xid, 8+16)
	b = put32(b, NiciraVendor)
	b = put32(b, nxtTLVTableReply)
	b = put32(b, TLVOptionSpace)
	b = put16(b, TLVMaxFields)
	b = pad(b, 10)
	return finish(appendTLVMaps(b, t.Maps()))
}

// appendTLVMaps appends maps as struct nx_tlv_map entries.
func appendTLVMaps(b []byte, maps []TLVMap) []byte {
	for _, mp := range maps {
		b = put16(b, mp.Class)
		b = put8(b, mp.Type)
		b = put8(b, mp.Len)
		b = put16(b, mp.Index)
		b = pad(b, 2)
	}
	return b
}

// TLVLoc is where a mapped tun_metadata field's value lives in a flow's
// option space: Len bytes in blocks of 4 (OVS's tun_metadata_loc chain),
// at the offsets in Blocks.
type TLVLoc struct {
	Class  uint16
	Type   uint8
	Len    uint8
	Blocks []uint8 // offset of each 4-byte block, in order
}

// TLVTable is a bridge's option map. It is immutable: Apply returns a new
// one, so that translations may read a table without locks. Entries of
// an old table keep their offsets in the new one.
type TLVTable struct {
	entries [TLVMaxFields]*TLVLoc
	used    uint64 // bit i: option space block i is allocated
}

// Loc returns tun_metadata<idx>'s location, nil if unmapped.
func (t *TLVTable) Loc(idx int) *TLVLoc {
	if t == nil || idx < 0 || idx >= TLVMaxFields {
		return nil
	}
	return t.entries[idx]
}

// Maps returns the table's maps by index.
func (t *TLVTable) Maps() []TLVMap {
	if t == nil {
		return nil
	}
	var maps []TLVMap
	for i, e := range t.entries {
		if e != nil {
			maps = append(maps, TLVMap{Class: e.Class, Type: e.Type, Len: e.Len, Index: uint16(i)})
		}
	}
	return maps
}

// Lookup returns the index option (class, typ) is mapped to, -1 if none.
func (t *TLVTable) Lookup(class uint16, typ uint8) int {
	if t == nil {
		return -1
	}
	for i, e := range t.entries {
		if e != nil && e.Class == class && e.Type == typ {
			return i
		}
	}
	return -1
}

// Apply returns the table m makes of t, or the error OVS refuses m with
// (tun_metadata_table_mod, then the in-use check of
// mf_vl_mff_map_mod_from_tun_metadata): a whole mod or nothing. inUse
// reports whether a flow uses tun_metadata<idx>.
func (t *TLVTable) Apply(m *TLVTableMod, inUse func(idx int) bool) (*TLVTable, *Error) {
	n := &TLVTable{}
	if t != nil {
		*n = *t
	}
	const name = "NXT_TLV_TABLE_MOD"
	switch m.Command {
	case TLVAdd:
		for _, mp := range m.Maps {
			if n.entries[mp.Index] != nil {
				return nil, errorf(TLVAlreadyMapped, name, "tun_metadata%d is already mapped", mp.Index)
			}
			if n.Lookup(mp.Class, mp.Type) >= 0 {
				return nil, errorf(TLVDupEntry, name, "option class 0x%x type 0x%x is already mapped", mp.Class, mp.Type)
			}
			loc := &TLVLoc{Class: mp.Class, Type: mp.Type, Len: mp.Len}
			for need := int(mp.Len) / tlvBlock; need > 0; need-- {
				free := ^n.used
				if free == 0 {
					return nil, errorf(TLVTableFull, name, "no option space left for tun_metadata%d", mp.Index)
				}
				blk := bits.TrailingZeros64(free)
				n.used |= 1 << blk
				loc.Blocks = append(loc.Blocks, uint8(blk*tlvBlock))
			}
			n.entries[mp.Index] = loc
		}
	case TLVDelete, TLVClear:
		for i := range n.entries {
			del := m.Command == TLVClear
			for _, mp := range m.Maps {
				del = del || int(mp.Index) == i
			}
			if !del || n.entries[i] == nil {
				continue
			}
			if inUse != nil && inUse(i) {
				return nil, errorf(TLVInvalidDel, name, "tun_metadata%d is in use by a flow", i)
			}
			for _, off := range n.entries[i].Blocks {
				n.used &^= 1 << (off / tlvBlock)
			}
			n.entries[i] = nil
		}
	}
	return n, nil
}

// tunMetadataIndex returns n if h (any length, mask bit ignored) is the
// header of NXM_NX_TUN_METADATA<n>, else -1.
func tunMetadataIndex(h uint32) int {
	if f := int(h>>9) & 0x7f; h>>16 == classNXM1 && f >= 40 && f < 40+TLVMaxFields {
		return f - 40
	}
	return -1
}

// TunMetadata reports whether e refuses a tun_metadata field, and
// which. For an unmapped one OVS's error is NXFMFC_INVALID_TLV_FIELD.
func (e *Error) TunMetadata() (int, bool) { return e.tunMetadata - 1, e.tunMetadata > 0 }
