package ofp

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/govs/govs/datapath/flow"
)

// The tun_metadata0-63 fields (NXM_NX_TUN_METADATA<n>, OVS's
// lib/tun-metadata.c). Their length is the one the bridge's TLVTable
// maps them to: decoding, which has no table, keeps the length the wire
// gave, and the bridge resolves matches and actions against its table
// (ResolveTunMD, ResolveActions) before it takes them.

// FieldTunMetadata0 is tun_metadata0's FieldID; tun_metadata<n> is
// FieldTunMetadata0+n. They are not in the fixed field table.
const FieldTunMetadata0 FieldID = 128

// TunMDEntry is a match on tun_metadata<Idx>: Value under Mask, both as
// long as the field (a multiple of 4 once resolved); a nil Mask, before
// resolving, is an exact match of the whole mapping.
type TunMDEntry struct {
	Idx         int
	Value, Mask []byte
}

var (
	tunMDMu     sync.Mutex
	tunMDFields [TLVMaxFields][TLVMaxOptLen + 1]*Field
)

// TunMetadataField returns tun_metadata<idx> as a field of n bytes
// (1..124): its NXM header has length n, and it reads and writes the
// low n bytes of the value the flow's TunTab places.
func TunMetadataField(idx, n int) *Field {
	tunMDMu.Lock()
	defer tunMDMu.Unlock()
	if fd := tunMDFields[idx][n]; fd != nil {
		return fd
	}
	fd := &Field{ID: FieldTunMetadata0 + FieldID(idx), Name: "tun_metadata" + strconv.Itoa(idx), Len: n, Maskable: true,
		NXM: nxmHeader(classNXM1, uint8(40+idx), n), Writable: true,
		get: func(f *Flow, b []byte) { tunMDRead(f, idx, b) },
		set: func(f *Flow, b []byte) { tunMDWrite(f, idx, b) }}
	tunMDFields[idx][n] = fd
	return fd
}

// SetTunMetadata returns a set of tun_metadata<idx> as ovs-ofctl makes
// one without a TLV map: value and mask, TLVMaxOptLen bytes, cut to the
// bytes they use (tunMDLen), and masked unless mask is all ones.
// regLoad: it was given as a load.
func SetTunMetadata(idx int, value, mask []byte, regLoad bool) Action {
	n, whole := tunMDLen(value, mask)
	a := Action{Type: ActSetField, Field: TunMetadataField(idx, n), Value: bytes.Clone(value[len(value)-n:]),
		Mask: bytes.Clone(mask[len(mask)-n:]), wholeVar: whole, tunMDMasked: !whole}
	if regLoad {
		a.raw = rawRegLoad
	}
	return a
}

// TunMetadataMatch returns a match on tun_metadata<idx> as ovs-ofctl
// makes one without a TLV map, as SetTunMetadata.
func TunMetadataMatch(idx int, value, mask []byte) TunMDEntry {
	n, whole := tunMDLen(value, mask)
	e := TunMDEntry{Idx: idx, Value: make([]byte, n)}
	for i := range e.Value {
		e.Value[i] = value[len(value)-n+i] & mask[len(mask)-n+i]
	}
	if !whole {
		e.Mask = bytes.Clone(mask[len(mask)-n:])
	}
	return e
}

// tunMDLen is OVS's mf_field_len of a tun_metadata value and mask: the
// bytes from the first nonzero one of the value, or of the mask if it
// is not all ones (whole false). OVS would use no bytes for a zero
// value: govs keeps one.
func tunMDLen(value, mask []byte) (n int, whole bool) {
	used := func(b []byte) int {
		for i, c := range b {
			if c != 0 {
				return len(b) - i
			}
		}
		return 0
	}
	whole = isAllOnes(mask)
	n = used(value)
	if !whole {
		n = max(n, used(mask))
	}
	return max(n, 1), whole
}

// TunMetadataIndex returns n if fd is tun_metadata<n>, else -1.
func TunMetadataIndex(fd *Field) int {
	if fd != nil && fd.ID >= FieldTunMetadata0 && fd.ID < FieldTunMetadata0+TLVMaxFields {
		return int(fd.ID - FieldTunMetadata0)
	}
	return -1
}

// read returns the bytes of option space space that l places, in order.
func (l *TLVLoc) read(space *[TLVOptionSpace]byte) []byte {
	b := make([]byte, 0, l.Len)
	for _, off := range l.Blocks {
		b = append(b, space[off:off+tlvBlock]...)
	}
	return b
}

// write puts v, l.Len bytes, in the option space at l's places.
func (l *TLVLoc) write(space *[TLVOptionSpace]byte, v []byte) {
	for i, off := range l.Blocks {
		copy(space[off:off+tlvBlock], v[i*tlvBlock:])
	}
}

// tunMDRead puts tun_metadata<idx>'s value in f into b, right-aligned
// (OVS's tun_metadata_read); zeros if unmapped.
func tunMDRead(f *Flow, idx int, b []byte) {
	clear(b)
	l := f.TunTab.Loc(idx)
	if l == nil {
		return
	}
	v := l.read(&f.TunMD)
	if len(b) >= len(v) {
		copy(b[len(b)-len(v):], v)
	} else {
		copy(b, v[len(v)-len(b):])
	}
}

// tunMDWrite sets tun_metadata<idx> in f to b, right-aligned, and marks
// it present (OVS's tun_metadata_write); nothing if unmapped.
func tunMDWrite(f *Flow, idx int, b []byte) {
	l := f.TunTab.Loc(idx)
	if l == nil {
		return
	}
	l.write(&f.TunMD, lowBytes(b, int(l.Len)))
	f.TunMDPresent |= 1 << idx
}

// lowBytes returns b right-aligned in n bytes: its last n bytes if it
// is longer.
func lowBytes(b []byte, n int) []byte {
	v := make([]byte, n)
	if len(b) >= n {
		copy(v, b[len(b)-n:])
	} else {
		copy(v[n-len(b):], b)
	}
	return v
}

// fit returns b right-aligned in n bytes. Of a longer b, the last n
// bytes if the others are zero (the same number), else the first n, as
// OVS's copy_entry_value takes a variable-length field's value.
func fit(b []byte, n int) []byte {
	if len(b) >= n {
		if isZero(b[:len(b)-n]) {
			return bytes.Clone(b[len(b)-n:])
		}
		return bytes.Clone(b[:n])
	}
	r := make([]byte, n)
	copy(r[n-len(b):], b)
	return r
}

func errUnmappedTLV(idx int) *Error {
	return &Error{Errno: InvalidTLVField, Detail: "tun_metadata" + strconv.Itoa(idx) + " is not mapped", tunMetadata: idx + 1}
}

// ResolveTunMD places m's tun_metadata matches in m.Flow and m.Mask at
// the places t maps them to, each as long as its mapping, as OVS's
// tun_metadata_set_match with the switch's table:
// NXFMFC_INVALID_TLV_FIELD for an unmapped field; of a value longer than
// the mapping, its first bytes count.
func (m *Match) ResolveTunMD(t *TLVTable) *Error {
	for i := range m.TunMD {
		e := &m.TunMD[i]
		l := t.Loc(e.Idx)
		if l == nil {
			return errUnmappedTLV(e.Idx)
		}
		v, mk := fit(e.Value, int(l.Len)), bytes.Repeat([]byte{0xff}, int(l.Len))
		if e.Mask != nil {
			mk = fit(e.Mask, int(l.Len))
		}
		for j := range v {
			v[j] &= mk[j]
		}
		e.Value, e.Mask = v, mk
		l.write(&m.Flow.TunMD, v)
		l.write(&m.Mask.TunMD, mk)
		m.Flow.TunMDPresent |= 1 << e.Idx
		m.Mask.TunMDPresent |= 1 << e.Idx
	}
	slices.SortFunc(m.TunMD, func(a, b TunMDEntry) int { return a.Idx - b.Idx })
	return nil
}

// ResolveActions gives the tun_metadata fields acts use (set_field, load,
// move, push, pop, output_reg, in nested lists too) the length t maps
// them to: NXFMFC_INVALID_TLV_FIELD for an unmapped field,
// OFPBAC_BAD_SET_LEN for a bit range beyond the mapping.
func ResolveActions(acts []Action, t *TLVTable) *Error {
	ref := func(r *FieldRef) *Error {
		idx := TunMetadataIndex(r.Field)
		if idx < 0 {
			return nil
		}
		l := t.Loc(idx)
		if l == nil {
			return errUnmappedTLV(idx)
		}
		if r.Ofs+r.NBits > int(l.Len)*8 {
			return &Error{Errno: BadSetLen, Detail: "bits beyond tun_metadata" + strconv.Itoa(idx) + "'s mapping"}
		}
		r.Field = TunMetadataField(idx, int(l.Len))
		return nil
	}
	for i := range acts {
		a := &acts[i]
		if idx := TunMetadataIndex(a.Field); idx >= 0 {
			l := t.Loc(idx)
			if l == nil {
				return errUnmappedTLV(idx)
			}
			mk := bytes.Repeat([]byte{0xff}, int(l.Len))
			if !a.wholeVar {
				mk = fit(a.Mask, int(l.Len))
			}
			a.Field, a.Value, a.Mask = TunMetadataField(idx, int(l.Len)), fit(a.Value, int(l.Len)), mk
			a.tunMDMasked = false
		}
		if a.Src.Field != nil {
			if err := ref(&a.Src); err != nil {
				return err
			}
		}
		if a.Dst.Field != nil {
			if err := ref(&a.Dst); err != nil {
				return err
			}
		}
		if l := a.Learn; l != nil {
			// learn's specs read and write tun_metadata too (OVS's
			// learn_check with the switch's table).
			for j := range l.Specs {
				sp := &l.Specs[j]
				if sp.Src.Field != nil {
					if err := ref(&sp.Src); err != nil {
						return err
					}
				}
				if sp.Dst.Field != nil {
					if err := ref(&sp.Dst); err != nil {
						return err
					}
				}
			}
			if l.ResultDst.Field != nil {
				if err := ref(&l.ResultDst); err != nil {
					return err
				}
			}
		}
		if err := ResolveActions(a.Nested, t); err != nil {
			return err
		}
	}
	return nil
}

// ActionsUseTunMD reports whether acts use tun_metadata<idx>.
func ActionsUseTunMD(acts []Action, idx int) bool {
	for i := range acts {
		a := &acts[i]
		if TunMetadataIndex(a.Field) == idx || TunMetadataIndex(a.Src.Field) == idx || TunMetadataIndex(a.Dst.Field) == idx ||
			ActionsUseTunMD(a.Nested, idx) {
			return true
		}
		if l := a.Learn; l != nil {
			if TunMetadataIndex(l.ResultDst.Field) == idx {
				return true
			}
			for _, sp := range l.Specs {
				if TunMetadataIndex(sp.Src.Field) == idx || TunMetadataIndex(sp.Dst.Field) == idx {
					return true
				}
			}
		}
	}
	return false
}

// errGeneve: a packet's Geneve options do not fit the table (a mapped
// option of another length, or a critical option not mapped).
type errGeneve struct{}

func (errGeneve) Error() string { return "Invalid Geneve tunnel metadata" }

// TunMDFromOpts fills f's tun_metadata from Geneve options opts (raw
// TLVs, as the datapath key has them) through t, as OVS's
// tun_metadata_from_geneve_udpif: a mapped option of another length than
// its mapping, or a critical option t does not map, is an error.
func TunMDFromOpts(f *Flow, t *TLVTable, opts []byte) error {
	f.TunMD, f.TunMDPresent = [TLVOptionSpace]byte{}, 0
	if _, err := flow.ParseGeneveOpts(opts); err != nil {
		return err
	}
	for len(opts) > 0 {
		var o flow.GeneveOpt
		o, opts = flow.NextGeneveOpt(opts)
		idx := t.Lookup(o.Class, o.Type)
		switch {
		case idx >= 0 && int(t.entries[idx].Len) == len(o.Data):
			t.entries[idx].write(&f.TunMD, o.Data)
			f.TunMDPresent |= 1 << idx
		case idx >= 0 || o.Type&flow.GeneveCritical != 0:
			return errGeneve{}
		}
	}
	return nil
}

// TunMDOptsMask returns the datapath mask of Geneve options opts (which
// TunMDFromOpts took) for the tun_metadata bits wc consulted: every
// option's class, type and length, and the consulted bits of the mapped
// ones' data (OVS's tun_metadata_to_geneve_mask__).
func TunMDOptsMask(wc *Flow, t *TLVTable, opts []byte, mask []byte) {
	off := 0
	for len(opts) > 0 {
		var o flow.GeneveOpt
		o, opts = flow.NextGeneveOpt(opts)
		mask[off], mask[off+1], mask[off+2], mask[off+3] = 0xff, 0xff, 0xff, 0x1f
		if idx := t.Lookup(o.Class, o.Type); idx >= 0 && wc != nil && int(t.entries[idx].Len) == len(o.Data) {
			m := t.entries[idx].read(&wc.TunMD)
			for i := range m {
				mask[off+4+i] |= m[i]
			}
		}
		off += 4 + len(o.Data)
	}
}

// TunMDToOpts returns f's present tun_metadata fields as Geneve options,
// by index (OVS's tun_metadata_to_geneve_header).
func TunMDToOpts(f *Flow) []byte {
	var b []byte
	for idx := 0; idx < TLVMaxFields; idx++ {
		if f.TunMDPresent&(1<<idx) == 0 {
			continue
		}
		l := f.TunTab.Loc(idx)
		if l == nil {
			continue
		}
		b = flow.AppendGeneveOpt(b, flow.GeneveOpt{Class: l.Class, Type: l.Type, Data: l.read(&f.TunMD)})
	}
	return b
}

// FormatTunMD writes f's tun_metadata fields that wc consulted as OVS's
// tun_metadata_match_format: "tun_metadata<n>=<hex>[/<mask>]," by index,
// "=NP" for a field looked for but not present. A nil wc shows every
// present field exactly (a packet's flow).
func FormatTunMD(b *strings.Builder, f, wc *Flow) {
	for idx := range TLVMaxFields {
		l := f.TunTab.Loc(idx)
		seen := f.TunMDPresent
		if wc != nil {
			seen = wc.TunMDPresent
		}
		if l == nil || seen&(1<<idx) == 0 {
			continue
		}
		if f.TunMDPresent&(1<<idx) == 0 {
			fmt.Fprintf(b, "tun_metadata%d=NP,", idx)
			continue
		}
		v := l.read(&f.TunMD)
		var m []byte
		if wc != nil {
			m = l.read(&wc.TunMD)
			for i := range v {
				v[i] &= m[i]
			}
		}
		FormatTunMDEntry(b, idx, v, m)
	}
}

// FormatTunMDEntry writes "tun_metadata<idx>=<value>[/<mask>]," as OVS's
// match_format shows a matched field (mask nil for an exact match).
func FormatTunMDEntry(b *strings.Builder, idx int, v, m []byte) {
	fmt.Fprintf(b, "tun_metadata%d=%s", idx, hexBytes(v))
	if m != nil && !isAllOnes(m) {
		b.WriteString("/" + hexBytes(m))
	}
	b.WriteByte(',')
}

// hexBytes is OVS's ds_put_hex: "0x" and the digits without leading
// zeros, "0" for zero.
func hexBytes(b []byte) string {
	s := strings.TrimLeft(hex.EncodeToString(b), "0")
	if s == "" {
		return "0"
	}
	return "0x" + s
}

func isAllOnes(b []byte) bool {
	for _, c := range b {
		if c != 0xff {
			return false
		}
	}
	return true
}

// TunMDOptsFromValues returns the Geneve options (as a datapath key
// holds them) that give tun_metadata<i> the value vals[i] through t, by
// index; a value longer than its mapping keeps its low bytes and a field
// t does not map is left out, as OVS's parse_ofp_exact_flow does.
func TunMDOptsFromValues(t *TLVTable, vals map[int][]byte) []byte {
	var b []byte
	for idx := range TLVMaxFields {
		v, ok := vals[idx]
		l := t.Loc(idx)
		if !ok || l == nil {
			continue
		}
		b = flow.AppendGeneveOpt(b, flow.GeneveOpt{Class: l.Class, Type: l.Type, Data: lowBytes(v, int(l.Len))})
	}
	return b
}
