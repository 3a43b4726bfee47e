package ofp

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// NXAST_STACK_PUSH/POP as ovn-controller sends them (here the MAC swap
// inside one of its controller() userdatas): they decode, encode back to
// the same bytes, and bad ones get errors.
func TestStackActionCodec(t *testing.T) {
	wire, _ := hex.DecodeString("ffff001800002320001b000000000406003000000000000" + "0" +
		"ffff001800002320001b000000000206003000000000000" + "0" +
		"ffff001800002320001c000000000406003000000000000" + "0" +
		"ffff001800002320001c000000000206003000000000000" + "0")
	for _, v := range []Version{V10, V13, V15} {
		acts, err := DecodeActions(v, wire)
		if err != nil || len(acts) != 4 {
			t.Fatalf("%s: %v", v, err)
		}
		if acts[0].Type != ActStackPush || acts[0].Src.Field.Name != "eth_src" || acts[0].Src.NBits != 48 ||
			acts[3].Type != ActStackPop || acts[3].Dst.Field.Name != "eth_dst" || acts[3].Dst.Ofs != 0 {
			t.Fatalf("%s: decoded as %+v", v, acts)
		}
		if back := AppendActions(nil, v, acts); !bytes.Equal(back, wire) {
			t.Errorf("%s: encoded back as %x", v, back)
		}
	}
	push := wire[:24]
	for _, tc := range []struct {
		name string
		wire string
		want Errno
	}{
		{"padding not zero", hex.EncodeToString(push[:23]) + "01", MustBeZero}, // Debian: NXBRC_MUST_BE_ZERO
		{"short", hex.EncodeToString(push[:16]), BadActionLen},
		{"bits past the field", "ffff001800002320001b000800000406003000000000000" + "0", BadSetLen},  // Debian: OFPBAC_BAD_SET_LEN
		{"unknown field", "ffff001800002320001b00000001fe04002000000000000" + "0", BadField},         // Debian: OFPBMC_BAD_FIELD
		{"pop to ip_proto", "ffff001800002320001c000000000c01000800000000000" + "0", BadSetArgument}, // Debian: OFPBAC_BAD_SET_ARGUMENT
	} {
		b, _ := hex.DecodeString(tc.wire)
		if tc.name == "short" {
			b[3] = 16
		}
		if _, err := DecodeActions(V13, b); err == nil || err.Errno != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
}

// Push takes a field's bit range right-aligned; Pop writes the low bits
// of the entry, whatever width was pushed.
func TestStackPushPop(t *testing.T) {
	var f Flow
	f.Regs[0] = 0xabcd1234
	e := Push(&f, FieldRef{Field: FieldByID(FieldReg0), Ofs: 8, NBits: 16})
	if e != (StackEntry{14: 0xcd, 15: 0x12}) {
		t.Fatalf("pushed %x", e)
	}
	f.Regs[1] = 0xffffffff
	Pop(&f, FieldRef{Field: FieldByID(FieldReg0 + 1), Ofs: 4, NBits: 8}, e)
	if f.Regs[1] != 0xfffff12f {
		t.Errorf("popped into reg1: %#x", f.Regs[1])
	}
	f.IPv6Src = [16]byte{0x20, 0x01, 15: 9}
	e = Push(&f, FieldRef{Field: FieldByID(FieldIPv6Src), NBits: 128})
	Pop(&f, FieldRef{Field: FieldByID(FieldXXReg0 + 1), NBits: 128}, e)
	if f.Regs[4] != 0x20010000 || f.Regs[7] != 9 {
		t.Errorf("ipv6_src into xxreg1: %x", f.Regs[4:8])
	}
}

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
