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
		{"padding not zero", hex.EncodeToString(push[:23]) + "01", ActionMustBeZero},
		{"short", hex.EncodeToString(push[:16]), BadActionLen},
		{"bits past the field", "ffff001800002320001b000800000406003000000000000" + "0", BadActionArgument},
		{"unknown field", "ffff001800002320001b00000001fe04002000000000000" + "0", BadActionArgument},
		{"pop to ip_proto", "ffff001800002320001c000000000c01000800000000000" + "0", BadSetType},
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
