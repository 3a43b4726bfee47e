package ofp

import (
	"encoding/binary"
	"testing"
)

// cplWire is NXAST_CHECK_PKT_LARGER(pktLen)->field[ofs] as OVS encodes it.
func cplWire(pktLen, ofs uint16, h uint32) []byte {
	b := nxActionHeader(nil, 24, nxastCheckPktLarger)
	b = binary.BigEndian.AppendUint16(b, pktLen)
	b = binary.BigEndian.AppendUint16(b, ofs)
	b = binary.BigEndian.AppendUint32(b, h)
	return append(b, make([]byte, 6)...)
}

// check_pkt_larger decodes, encodes back the same in every version, and
// is refused as OVS's decode refuses it.
func TestCheckPktLargerWire(t *testing.T) {
	reg0 := FieldByID(FieldReg0).header(true)
	wire := cplWire(1500, 3, reg0)
	for _, v := range []Version{V10, V13, V15} {
		acts, err := DecodeActions(v, wire)
		if err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		a := acts[0]
		if a.Type != ActCheckPktLarger || a.PktLen != 1500 || a.Dst.Field.ID != FieldReg0 || a.Dst.Ofs != 3 || a.Dst.NBits != 1 {
			t.Errorf("%v: decoded %+v", v, a)
		}
		if back := AppendActions(nil, v, acts); string(back) != string(wire) {
			t.Errorf("%v: encoded\n %x\nwant %x", v, back, wire)
		}
	}
	padded := cplWire(1500, 3, reg0)
	padded[23] = 1
	for _, tc := range []struct {
		name string
		wire []byte
		want Errno
	}{
		{"short", wire[:16], BadActionLen},
		{"padding", padded, MustBeZero},
		{"bit beyond the field", cplWire(1500, 32, reg0), BadSetLen},
		{"unknown field", cplWire(1500, 0, 0x0001ff04), BadField},
		{"read-only field", cplWire(1500, 0, FieldByID(FieldEthType).header(true)), BadSetArgument},
	} {
		w := tc.wire
		if len(w) == 16 {
			w = append([]byte{}, w...)
			binary.BigEndian.PutUint16(w[2:], 16)
		}
		if _, err := DecodeActions(V13, w); err == nil || err.Errno != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}
