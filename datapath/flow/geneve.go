package flow

import (
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
)

// GeneveOpt is one Geneve option TLV (RFC 8926 section 3.5): Data is a
// multiple of 4 bytes, at most 124.
type GeneveOpt struct {
	Class uint16
	Type  uint8
	Data  []byte
}

// GeneveCritical is the bit of an option's type that makes it critical: a
// receiver that does not understand the option must drop the packet.
const GeneveCritical = 0x80

// Errors of ParseGeneveOpts.
var (
	ErrGeneveOptTruncated = errors.New("geneve option truncated")
	ErrGeneveOptsTooLong  = errors.New("geneve options longer than " + strconv.Itoa(TunOptsMax) + " bytes")
)

// NextGeneveOpt splits the first option off the TLVs b, which
// ParseGeneveOpts accepted (or a mask in the same shape).
func NextGeneveOpt(b []byte) (o GeneveOpt, rest []byte) {
	n := 4 + int(b[3]&0x1f)*4
	return GeneveOpt{Class: binary.BigEndian.Uint16(b), Type: b[2], Data: b[4:n]}, b[n:]
}

// ParseGeneveOpts checks that b is a run of whole Geneve option TLVs
// that fits a key, and returns how many there are.
func ParseGeneveOpts(b []byte) (int, error) {
	if len(b) > TunOptsMax {
		return 0, ErrGeneveOptsTooLong
	}
	n := 0
	for len(b) > 0 {
		if len(b) < 4 || len(b) < 4+int(b[3]&0x1f)*4 {
			return 0, ErrGeneveOptTruncated
		}
		_, b = NextGeneveOpt(b)
		n++
	}
	return n, nil
}

// AppendGeneveOpt appends o as a TLV to b.
func AppendGeneveOpt(b []byte, o GeneveOpt) []byte {
	b = binary.BigEndian.AppendUint16(b, o.Class)
	return append(append(b, o.Type, byte(len(o.Data)/4)), o.Data...)
}

// formatGeneve writes opts (masked by mask, nil for none) as OVS's
// format_geneve_opts: {class=0x102,type=0x80,len=4,0xa0001}, a field the
// mask wildcards left out, a partial one as value/mask; the option header
// mask, when consulted, is all ones (the length's 5 bits print as 0xff).
func formatGeneve(b *strings.Builder, opts, mask []byte, verbose bool) {
	for len(opts) > 0 {
		if len(opts) < 4 || len(opts) < 4+int(opts[3]&0x1f)*4 {
			b.WriteString("opt len " + strconv.Itoa(len(opts)) + " truncated")
			return
		}
		var o, m GeneveOpt
		o, opts = NextGeneveOpt(opts)
		lenMask := uint8(0xff)
		if mask != nil {
			// The mask's length byte is not a length: take the data
			// mask at the option's own length.
			n := 4 + len(o.Data)
			m = GeneveOpt{Class: binary.BigEndian.Uint16(mask), Type: mask[2], Data: mask[4:n]}
			if mask[3]&0x1f != 0x1f {
				lenMask = mask[3] & 0x1f
			}
			mask = mask[n:]
		}
		var fields []string
		field := func(name, v string, mk, full uint64, set bool) {
			if set && mk == 0 && !verbose {
				return
			}
			if set && mk != full {
				v += "/" + hexAlt(mk)
			}
			fields = append(fields, name+"="+v)
		}
		field("class", hexAlt(uint64(o.Class)), uint64(m.Class), 0xffff, mask != nil)
		field("type", hexAlt(uint64(o.Type)), uint64(m.Type), 0xff, mask != nil)
		field("len", strconv.Itoa(len(o.Data)), uint64(lenMask), 0xff, mask != nil)
		if len(o.Data) > 0 && (verbose || mask == nil || !allZero(m.Data)) {
			v := hexBytes(o.Data)
			if mask != nil && !allOnes(m.Data) {
				v += "/" + hexBytes(m.Data)
			}
			fields = append(fields, v)
		}
		b.WriteString("{" + strings.Join(fields, ",") + "}")
	}
}

// FormatGeneveOpts formats Geneve option TLVs as OVS's
// format_geneve_opts does without a mask.
func FormatGeneveOpts(opts []byte) string {
	var b strings.Builder
	formatGeneve(&b, opts, nil, false)
	return b.String()
}

// hexBytes is OVS's ds_put_hex: the bytes as one hex number, leading
// zeros dropped, "0" if all zero.
func hexBytes(v []byte) string {
	var b strings.Builder
	for _, c := range v {
		if b.Len() == 0 {
			if c != 0 {
				b.WriteString("0x" + strconv.FormatUint(uint64(c), 16))
			}
			continue
		}
		b.WriteString(strconv.FormatUint(uint64(c)|0x100, 16)[1:])
	}
	if b.Len() == 0 {
		return "0"
	}
	return b.String()
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func allOnes(b []byte) bool {
	for _, c := range b {
		if c != 0xff {
			return false
		}
	}
	return true
}
