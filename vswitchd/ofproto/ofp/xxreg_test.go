package ofp

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// xxreg0-3 (NXM_NX_XXREG<n>) as ovn-controller sends them in OpenFlow 1.5:
// a masked set_field decodes, encodes back to the same bytes and writes
// the registers it overlays, most significant first.
func TestXXRegSetField(t *testing.T) {
	// set_field:0xa0000fe0000000000000000/0xffffffff0000000000000000->xxreg0
	wire, _ := hex.DecodeString("00190028" + "0001df20" +
		"0000000000000000" + "0a0000fe00000000" +
		"0000000000000000" + "ffffffff00000000")
	acts, err := DecodeActions(V15, wire)
	if err != nil || len(acts) != 1 {
		t.Fatalf("decode: %v", err)
	}
	a := acts[0]
	if a.Type != ActSetField || a.Field == nil || a.Field.Name != "xxreg0" {
		t.Fatalf("decoded as %+v", a)
	}
	if back := AppendActions(nil, V15, acts); !bytes.Equal(back, wire) {
		t.Errorf("encoded back as %x", back)
	}
	var f Flow
	f.Regs[2], f.Regs[3] = 0xdead, 0xbeef
	a.Field.SetMasked(&f, a.Value, a.Mask)
	if f.Regs[2] != 0x0a0000fe || f.Regs[3] != 0xbeef || f.Regs[0] != 0 {
		t.Errorf("registers %x", f.Regs[:4])
	}
	for i := 0; i < 4; i++ {
		fd := FieldByHeader(nxmHeader(classNXM1, uint8(111+i), 16))
		if fd == nil || fd.Name != "xxreg"+itoa(i) || !fd.Writable || !fd.Maskable {
			t.Fatalf("xxreg%d: %+v", i, fd)
		}
		var g Flow
		fd.Set(&g, bytes.Repeat([]byte{byte(i + 1)}, 16))
		for r := 0; r < 16; r++ {
			want := uint32(0)
			if r/4 == i {
				want = uint32(i+1) * 0x01010101
			}
			if g.Regs[r] != want {
				t.Errorf("xxreg%d set reg%d = %x, want %x", i, r, g.Regs[r], want)
			}
		}
	}
}
