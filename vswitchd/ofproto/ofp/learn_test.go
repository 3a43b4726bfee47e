package ofp

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// macLearn is the classic MAC-learning learn action (ovs-actions(7)):
// NXM_OF_VLAN_TCI[0..11], NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],
// load:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15], with every option set.
func macLearn() *Learn {
	tci, src, dst := FieldByID(FieldVLANTCI), FieldByID(FieldEthSrc), FieldByID(FieldEthDst)
	in, reg0 := FieldByID(FieldInPort), FieldByID(FieldReg0)
	return &Learn{IdleTimeout: 10, HardTimeout: 20, FinIdleTimeout: 2, FinHardTimeout: 4, Priority: 5, Cookie: 0x12,
		Flags: LearnSendFlowRem | LearnDeleteLearned, Table: 10, Specs: []LearnSpec{
			{Kind: LearnMatch, NBits: 12, Src: FieldRef{tci, 0, 12}, Dst: FieldRef{tci, 0, 12}},
			{Kind: LearnMatch, NBits: 48, Src: FieldRef{src, 0, 48}, Dst: FieldRef{dst, 0, 48}},
			{Kind: LearnLoad, NBits: 16, Src: FieldRef{in, 0, 16}, Dst: FieldRef{reg0, 0, 16}},
			{Kind: LearnLoad, NBits: 32, Imm: []byte{0, 0, 0, 5}, Dst: FieldRef{FieldByID(FieldReg0 + 1), 0, 32}},
			{Kind: LearnMatch, NBits: 16, Imm: []byte{8, 0}, Dst: FieldRef{FieldByID(FieldEthType), 0, 16}},
			{Kind: LearnOutput, NBits: 16, Src: FieldRef{FieldByID(FieldReg0 + 2), 0, 16}},
		}}
}

// macLearn2 is macLearn as NXAST_LEARN2: a limit and a result_dst.
func macLearn2() *Learn {
	l := macLearn()
	l.Limit, l.Flags = 3, LearnWriteResult
	l.ResultDst = FieldRef{FieldByID(FieldReg0 + 3), 5, 1}
	return l
}

// The wire layout of struct nx_action_learn and its specs, as OVS's
// encode_LEARN lays them out.
func TestLearnEncoding(t *testing.T) {
	b := appendLearn(nil, macLearn())
	if len(b)%8 != 0 || int(binary.BigEndian.Uint16(b[2:])) != len(b) {
		t.Fatalf("length %d, header %d", len(b), binary.BigEndian.Uint16(b[2:]))
	}
	if sub := binary.BigEndian.Uint16(b[8:]); sub != nxastLearn {
		t.Fatalf("subtype %d", sub)
	}
	// First spec: header n_bits=12, src field, dst match; NXM_OF_VLAN_TCI
	// and offset 0, twice.
	want := []byte{0x00, 0x0c, 0x00, 0x00, 0x08, 0x02, 0x00, 0x00, 0x00, 0x00, 0x08, 0x02, 0x00, 0x00}
	if !bytes.Equal(b[32:32+len(want)], want) {
		t.Errorf("first spec %x, want %x", b[32:32+len(want)], want)
	}
	l2 := macLearn2()
	if b2 := appendLearn(nil, l2); binary.BigEndian.Uint16(b2[8:]) != nxastLearn2 || binary.BigEndian.Uint32(b2[32:]) != 3 {
		t.Errorf("learn2 %x", b2)
	}
}

func TestLearnRoundTrip(t *testing.T) {
	l2 := macLearn2()
	l2.Flags |= LearnDeleteLearned
	fin := Action{Type: ActFinTimeout, Fin: &FinTimeout{Idle: 3, Hard: 7}}
	for _, v := range []Version{V10, V13, V15} {
		for _, l := range []*Learn{macLearn(), l2} {
			wire := AppendActions(nil, v, []Action{{Type: ActLearn, Learn: l}, fin})
			acts, err := DecodeActions(v, wire)
			if err != nil {
				t.Fatalf("%s: %v", v, err)
			}
			if back := AppendActions(nil, v, acts); !bytes.Equal(back, wire) {
				t.Errorf("%s: %x\nencodes back as %x", v, wire, back)
			}
			got := acts[0].Learn
			if got.Table != l.Table || got.Limit != l.Limit || len(got.Specs) != len(l.Specs) || got.Flags != l.Flags {
				t.Errorf("%s: decoded %+v", v, got)
			}
			if *acts[1].Fin != *fin.Fin {
				t.Errorf("%s: fin_timeout %+v", v, acts[1].Fin)
			}
		}
	}
}

// Malformed learn actions get the errors OVS's decoder and learn_check
// give them (the decoding ones as Debian's ovs-ofctl ofp-print reports
// them for the same bytes in a FLOW_MOD).
func TestLearnDecodeErrors(t *testing.T) {
	good := appendLearn(nil, macLearn())
	mod := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	l2 := macLearn2()
	good2 := appendLearn(nil, l2)
	mod2 := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good2)) }
	tcpDst := &Learn{Table: 1, Specs: []LearnSpec{{Kind: LearnMatch, NBits: 16, Imm: []byte{0, 80}, Dst: FieldRef{FieldByID(FieldTCPDst), 0, 16}}}}
	roLoad := &Learn{Table: 1, Specs: []LearnSpec{{Kind: LearnLoad, NBits: 16, Imm: []byte{8, 0}, Dst: FieldRef{FieldByID(FieldEthType), 0, 16}}}}
	ipLoad := &Learn{Table: 1, Specs: []LearnSpec{{Kind: LearnLoad, NBits: 32, Src: FieldRef{FieldByID(FieldReg0), 0, 32}, Dst: FieldRef{FieldByID(FieldIPv4Dst), 0, 32}}}}
	wide := &Learn{Table: 1, Specs: []LearnSpec{{Kind: LearnMatch, NBits: 20, Src: FieldRef{FieldByID(FieldReg0), 20, 20}, Dst: FieldRef{FieldByID(FieldReg0), 20, 20}}}}
	for _, tc := range []struct {
		name string
		wire []byte
		want Errno
	}{
		{"table 255", mod(func(b []byte) []byte { b[26] = 0xff; return b }), BadActionArgument},
		{"pad", mod(func(b []byte) []byte { b[27] = 1; return b }), BadActionArgument},
		{"unknown flag", mod(func(b []byte) []byte { b[25] |= LearnWriteResult; return b }), BadActionArgument},
		{"immediate output", mod(func(b []byte) []byte { b[32] |= 0x20 | 0x10; return b }), BadActionArgument},
		{"unknown field", mod(func(b []byte) []byte { b[34], b[35] = 0x7f, 0x7f; return b }), BadSetType},
		{"truncated", good[:32+4], BadActionLen},
		{"short header", good[:24], BadActionLen},
		{"bytes after the end", mod(func(b []byte) []byte {
			b = append(b, 0, 0, 0, 0, 0, 0, 0, 1)
			binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
			return b
		}), BadActionArgument},
		{"learn2 padding", mod2(func(b []byte) []byte { b[38] = 1; return b }), ActionMustBeZero},
		{"learn2 result_dst_ofs without result_dst", mod2(func(b []byte) []byte { b[25] = 0; return b }), BadActionArgument},
		{"learn2 unknown result_dst", mod2(func(b []byte) []byte { b[40] = 0x7f; return b }), BadField},
		{"match without prerequisites", appendLearn(nil, tcpDst), MatchInconsistent},
		{"load to read-only", appendLearn(nil, roLoad), BadSetArgument},
		{"load without prerequisites", appendLearn(nil, ipLoad), MatchInconsistent},
		{"bits past the field", appendLearn(nil, wide), BadSetLen},
	} {
		_, err := DecodeActions(V10, tc.wire)
		if err == nil || err.Errno != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
}

// FuzzLearnActions: a learn or fin_timeout action list that decodes
// encodes to bytes that decode to the same actions and encode the same.
func FuzzLearnActions(f *testing.F) {
	l2 := macLearn2()
	for _, v := range []Version{V10, V13, V15} {
		f.Add(uint8(v), AppendActions(nil, v, []Action{{Type: ActLearn, Learn: macLearn()}, {Type: ActFinTimeout, Fin: &FinTimeout{Idle: 1}}}))
		f.Add(uint8(v), AppendActions(nil, v, []Action{{Type: ActLearn, Learn: l2}}))
	}
	f.Fuzz(func(t *testing.T, ver uint8, b []byte) {
		v := Version(ver%6 + 1)
		acts, err := DecodeActions(v, b)
		if err != nil {
			return
		}
		for _, a := range acts {
			if a.Type != ActLearn && a.Type != ActFinTimeout {
				return
			}
			if a.Type == ActLearn {
				for i := range a.Learn.Specs {
					s := &a.Learn.Specs[i]
					var fl Flow
					if s.Kind == LearnOutput {
						s.Port(&fl)
					} else {
						s.Value(&fl)
					}
				}
			}
		}
		requireRoundTrip(t, v, b, acts)
	})
}

// requireRoundTrip: acts, decoded from b, encode to bytes that decode and
// encode the same again.
func requireRoundTrip(t *testing.T, v Version, b []byte, acts []Action) {
	t.Helper()
	wire := AppendActions(nil, v, acts)
	again, err := DecodeActions(v, wire)
	if err != nil {
		t.Fatalf("%s: %x decoded, its encoding %x does not: %v", v, b, wire, err)
	}
	if back := AppendActions(nil, v, again); !bytes.Equal(back, wire) {
		t.Fatalf("%s: %x encodes as %x, then %x", v, b, wire, back)
	}
}
