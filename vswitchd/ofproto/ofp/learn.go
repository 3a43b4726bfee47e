package ofp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
)

// NX_LEARN_F_* flags of NXAST_LEARN and NXAST_LEARN2.
const (
	LearnSendFlowRem   = 1 << 0
	LearnDeleteLearned = 1 << 1
	// LearnWriteResult: NXAST_LEARN2 only; the action writes whether it
	// learned into ResultDst.
	LearnWriteResult = 1 << 2
)

// Learn spec kinds: where a spec's value goes (NX_LEARN_DST_*).
const (
	LearnMatch  = 0 // a match field of the learned flow
	LearnLoad   = 1 // a load action of the learned flow
	LearnOutput = 2 // an output action of the learned flow
)

// Spec header bits (NX_LEARN_SRC_*, NX_LEARN_DST_*, NX_LEARN_N_BITS_MASK).
const (
	learnSrcImmediate = 1 << 13
	learnDstShift     = 11
	learnNBitsMask    = 0x3ff
)

// Sizes of struct nx_action_learn and struct nx_action_learn2.
const (
	nxActionLearnLen  = 32
	nxActionLearn2Len = 40
)

// LearnSpec is one flow_mod_spec: a value (NBits from a field of the
// packet's flow, Src, or the immediate Imm) that becomes a match field
// (Dst), a load into Dst, or an output port of the learned flow.
type LearnSpec struct {
	Kind  uint8
	NBits int
	// Src is the source field range; its Field is nil for an immediate,
	// then Imm holds the value, right-aligned in ceil(NBits/8) bytes.
	Src FieldRef
	Imm []byte
	// Dst is the destination of a LearnMatch or LearnLoad.
	Dst FieldRef
}

// Learn is NXAST_LEARN's or NXAST_LEARN2's arguments (OVS's struct
// ofpact_learn): the flow mod it makes, and its specs.
type Learn struct {
	IdleTimeout, HardTimeout       uint16
	FinIdleTimeout, FinHardTimeout uint16
	Priority                       uint16
	Cookie                         uint64
	Flags                          uint16
	Table                          uint8
	// Limit (NXAST_LEARN2, 0 for none): no new flow is learned while
	// Table holds Limit flows with Cookie (OVS's counting).
	Limit uint32
	// ResultDst is the bit the action sets to 1 if it learned (or the
	// flow existed) and 0 if Limit stopped it (LearnWriteResult).
	ResultDst FieldRef
	Specs     []LearnSpec
	// learn2: decoded from NXAST_LEARN2, encoded back as one.
	learn2 bool
}

// FinTimeout is NXAST_FIN_TIMEOUT's arguments: the timeouts a rule gets
// (if shorter) once a TCP FIN or RST went through it.
type FinTimeout struct {
	Idle, Hard uint16
}

// decodeFinTimeout decodes struct nx_action_fin_timeout (16 bytes).
func decodeFinTimeout(b []byte) (Action, *Error) {
	if err := fixedLen(b, 16); err != nil {
		return Action{}, err
	}
	return Action{Type: ActFinTimeout, Fin: &FinTimeout{Idle: binary.BigEndian.Uint16(b[10:]), Hard: binary.BigEndian.Uint16(b[12:])}}, nil
}

func appendFinTimeout(b []byte, f *FinTimeout) []byte {
	b = nxActionHeader(b, 16, nxastFinTimeout)
	b = put16(b, f.Idle)
	b = put16(b, f.Hard)
	return pad(b, 2)
}

// decodeLearn decodes NXAST_LEARN or NXAST_LEARN2 (b is the whole
// action) as OVS's decode_NXAST_RAW_LEARN(2) and decode_LEARN_specs.
func decodeLearn(sub uint16, b []byte) (Action, *Error) {
	min := nxActionLearnLen
	if sub == nxastLearn2 {
		min = nxActionLearn2Len
	}
	if len(b) < min {
		return Action{}, actErr(BadActionLen, "learn")
	}
	if sub == nxastLearn2 && (b[38] != 0 || b[39] != 0) {
		return Action{}, actErr(ActionMustBeZero, "learn2 padding")
	}
	l := &Learn{IdleTimeout: binary.BigEndian.Uint16(b[10:]), HardTimeout: binary.BigEndian.Uint16(b[12:]),
		Priority: binary.BigEndian.Uint16(b[14:]), Cookie: binary.BigEndian.Uint64(b[16:]),
		Flags: binary.BigEndian.Uint16(b[24:]), Table: b[26], FinIdleTimeout: binary.BigEndian.Uint16(b[28:]),
		FinHardTimeout: binary.BigEndian.Uint16(b[30:]), learn2: sub == nxastLearn2}
	if b[27] != 0 {
		return Action{}, actErr(BadActionArgument, "learn padding")
	}
	if l.Table == 0xff {
		return Action{}, actErr(BadActionArgument, "learn to table 255")
	}
	p := b[nxActionLearnLen:]
	if sub == nxastLearn {
		if l.Flags&^(LearnSendFlowRem|LearnDeleteLearned) != 0 {
			return Action{}, actErr(BadActionArgument, "learn flags")
		}
	} else {
		l.Limit = binary.BigEndian.Uint32(b[32:])
		if l.Flags&^(LearnSendFlowRem|LearnDeleteLearned|LearnWriteResult) != 0 {
			return Action{}, actErr(BadActionArgument, "learn flags")
		}
		ofs := binary.BigEndian.Uint16(b[36:])
		p = b[nxActionLearn2Len:]
		if l.Flags&LearnWriteResult != 0 {
			if len(p) < 4 {
				return Action{}, actErr(BadMatchLen, "learn result_dst") // as nx_pull_header
			}
			fd := FieldByHeader(binary.BigEndian.Uint32(p))
			if fd == nil {
				return Action{}, actErr(BadField, "learn result_dst field")
			}
			if !fd.Writable {
				return Action{}, actErr(BadSetArgument, "learn result_dst read-only")
			}
			if int(ofs) >= fd.Bits() {
				return Action{}, actErr(BadSetLen, "learn result_dst bit")
			}
			l.ResultDst = FieldRef{Field: fd, Ofs: int(ofs), NBits: 1}
			p = p[4:]
		} else if ofs != 0 {
			return Action{}, actErr(BadActionArgument, "learn result_dst_ofs without result_dst")
		}
	}
	for len(p) >= 2 {
		h := binary.BigEndian.Uint16(p)
		if h == 0 {
			break
		}
		p = p[2:]
		s := LearnSpec{Kind: uint8(h >> learnDstShift & 3), NBits: int(h & learnNBitsMask)}
		imm := h&learnSrcImmediate != 0
		if s.Kind == 3 || s.Kind == LearnOutput && imm {
			return Action{}, actErr(BadActionArgument, "learn spec type")
		}
		need := 6
		if imm {
			need = 2 * ((s.NBits + 15) / 16)
		}
		if s.Kind != LearnOutput {
			need += 6
		}
		if len(p) < need {
			return Action{}, actErr(BadActionLen, "learn spec")
		}
		if imm {
			n := 2 * ((s.NBits + 15) / 16)
			s.Imm = bytes.Clone(p[n-(s.NBits+7)/8 : n])
			p = p[n:]
		} else {
			ref, err := learnRef(p, s.NBits)
			if err != nil {
				return Action{}, err
			}
			s.Src = ref
			p = p[6:]
		}
		if s.Kind != LearnOutput {
			ref, err := learnRef(p, s.NBits)
			if err != nil {
				return Action{}, err
			}
			s.Dst = ref
			p = p[6:]
		}
		l.Specs = append(l.Specs, s)
	}
	for _, c := range p {
		if c != 0 {
			return Action{}, actErr(BadActionArgument, "learn trailing bytes")
		}
	}
	if err := l.check(); err != nil {
		return Action{}, err
	}
	return Action{Type: ActLearn, Learn: l}, nil
}

// learnRef reads a field header and offset (OVS's get_subfield): an
// unknown field is OFPBAC_BAD_SET_TYPE.
func learnRef(p []byte, nbits int) (FieldRef, *Error) {
	h := binary.BigEndian.Uint32(p)
	fd := FieldByHeader(h)
	if idx := tunMetadataIndex(h); idx >= 0 && h&0x100 == 0 {
		// As decodeRef: the header's length is the sender's idea of
		// the mapping's; ResolveActions fits it to the bridge's.
		n := int(h & 0xff)
		if n == 0 || n > TLVMaxOptLen {
			n = TLVMaxOptLen
		}
		fd = TunMetadataField(idx, n)
	}
	if fd == nil || h&0x100 != 0 {
		return FieldRef{}, actErr(BadSetType, "learn: unknown field")
	}
	return FieldRef{Field: fd, Ofs: int(binary.BigEndian.Uint16(p[4:])), NBits: nbits}, nil
}

// checkRange is OVS's mf_check__ without prerequisites.
func checkRange(r FieldRef) *Error {
	if r.NBits == 0 || r.Ofs >= r.Field.Bits() || r.Ofs+r.NBits > r.Field.Bits() {
		return actErr(BadSetLen, "learn: bits "+itoa(r.Ofs)+"+"+itoa(r.NBits)+" exceed the field "+r.Field.Name)
	}
	return nil
}

// check is what of OVS's learn_check does not depend on the learning
// flow's match: every range in its field, a load into a writable field,
// and each matched or loaded field's prerequisites among the immediates
// matched before it.
func (l *Learn) check() *Error {
	var dst Match
	for i := range l.Specs {
		s := &l.Specs[i]
		if s.Src.Field != nil {
			if err := checkRange(s.Src); err != nil {
				return err
			}
		} else if s.NBits == 0 {
			return actErr(BadSetLen, "learn: zero-bit immediate")
		}
		switch s.Kind {
		case LearnMatch:
			if err := checkRange(s.Dst); err != nil {
				return err
			}
			if !s.Dst.Field.Prereqs(&dst) {
				return actErr(MatchInconsistent, "learn: "+s.Dst.Field.Name+" lacks its prerequisites")
			}
			if s.Src.Field == nil {
				v, m := s.value(nil)
				s.Dst.Field.SetMasked(&dst.Flow, v, m)
				s.Dst.Field.SetMask(&dst.Mask, m)
			}
		case LearnLoad:
			if err := checkRange(s.Dst); err != nil {
				return err
			}
			if !s.Dst.Field.Writable {
				return actErr(BadSetArgument, "learn: load to read-only field "+s.Dst.Field.Name)
			}
			if !s.Dst.Field.Prereqs(&dst) {
				return actErr(MatchInconsistent, "learn: load to "+s.Dst.Field.Name+", which lacks its prerequisites")
			}
		}
	}
	return nil
}

// Entry returns the spec's value, right-aligned: NBits from f, or the
// immediate.
func (s *LearnSpec) Entry(f *Flow) StackEntry {
	var e StackEntry
	if s.Src.Field != nil {
		return Push(f, s.Src)
	}
	// The low 128 bits of a wider immediate (a tun_metadata's).
	copy(e[max(0, 16-len(s.Imm)):], s.Imm[max(0, len(s.Imm)-16):])
	// Bits of the immediate beyond NBits are not the spec's.
	for i := s.NBits; i < 128; i++ {
		e[15-i/8] &^= 1 << (i % 8)
	}
	return e
}

// value returns the spec's value for f placed at Dst's bits of a
// Dst-sized field, and the mask of those bits.
func (s *LearnSpec) value(f *Flow) (value, mask []byte) {
	if TunMetadataIndex(s.Dst.Field) >= 0 {
		// A flow without a TLVTable holds no tun_metadata: the bits
		// are placed in the field's bytes themselves.
		// It may be wider than a stack entry (up to 992 bits).
		src, so := s.Imm, 0
		if s.Src.Field != nil {
			src, so = s.Src.Field.Get(f), s.Src.Ofs
		}
		return placeBits(s.Dst.Field.Len, s.Dst.Ofs, s.NBits, src, so)
	}
	var tmp, mk Flow
	Pop(&tmp, s.Dst, s.Entry(f))
	MarkRef(&mk, s.Dst)
	return s.Dst.Field.Get(&tmp), s.Dst.Field.Get(&mk)
}

// placeBits returns an n-byte big-endian value with nbits of src (big
// endian, from its bit so; bits past its start are 0) at bit ofs, and
// the mask of those bits.
func placeBits(n, ofs, nbits int, src []byte, so int) (value, mask []byte) {
	value, mask = make([]byte, n), make([]byte, n)
	for i := 0; i < nbits && (ofs+i)/8 < n; i++ {
		sb, db := so+i, ofs+i
		var bit byte
		if j := len(src) - 1 - sb/8; j >= 0 {
			bit = src[j] >> (sb % 8) & 1
		}
		value[n-1-db/8] |= bit << (db % 8)
		mask[n-1-db/8] |= 1 << (db % 8)
	}
	return value, mask
}

// Value returns the value a match or load spec gives Dst for f: Dst's
// field with its bits set, and the mask of those bits.
func (s *LearnSpec) Value(f *Flow) (value, mask []byte) { return s.value(f) }

// Port returns the port an output spec gives for f (OVS's learn_execute:
// a value wider than 16 bits must have its high bits zero).
func (s *LearnSpec) Port(f *Flow) (uint16, bool) {
	e := s.Entry(f)
	for _, c := range e[:14] {
		if c != 0 {
			return 0, false
		}
	}
	return binary.BigEndian.Uint16(e[14:]), true
}

// appendLearn encodes l as NXAST_LEARN, or NXAST_LEARN2 when it has a
// limit or result_dst or was one (OVS's encode_LEARN).
func appendLearn(b []byte, l *Learn) []byte {
	start := len(b)
	two := l.learn2 || l.Limit != 0 || l.Flags&LearnWriteResult != 0
	sub := uint16(nxastLearn)
	if two {
		sub = nxastLearn2
	}
	b = nxActionHeader(b, 0, sub)
	b = put16(b, l.IdleTimeout)
	b = put16(b, l.HardTimeout)
	b = put16(b, l.Priority)
	b = put64(b, l.Cookie)
	b = put16(b, l.Flags)
	b = put8(b, l.Table)
	b = pad(b, 1)
	b = put16(b, l.FinIdleTimeout)
	b = put16(b, l.FinHardTimeout)
	if two {
		b = put32(b, l.Limit)
		b = put16(b, uint16(l.ResultDst.Ofs))
		b = pad(b, 2)
		if l.Flags&LearnWriteResult != 0 {
			b = put32(b, l.ResultDst.Field.header(true))
		}
	}
	for i := range l.Specs {
		s := &l.Specs[i]
		h := uint16(s.NBits) | uint16(s.Kind)<<learnDstShift
		if s.Src.Field == nil {
			h |= learnSrcImmediate
		}
		b = put16(b, h)
		if s.Src.Field != nil {
			b = put32(b, s.Src.Field.header(true))
			b = put16(b, uint16(s.Src.Ofs))
		} else {
			n := 2 * ((s.NBits + 15) / 16)
			imm := make([]byte, n)
			copy(imm[n-len(s.Imm):], s.Imm)
			b = append(b, imm...)
		}
		if s.Kind != LearnOutput {
			b = put32(b, s.Dst.Field.header(true))
			b = put16(b, uint16(s.Dst.Ofs))
		}
	}
	b = padTo8(b, start)
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
	return b
}

// LoadAction is the action a learn's load spec gives the learned flow:
// a set-field that encodes back as NXAST_REG_LOAD where the version has
// it (OVS's ofpact_put_reg_load).
func LoadAction(fd *Field, value, mask []byte) Action {
	return Action{Type: ActSetField, Field: fd, Value: value, Mask: mask, raw: rawRegLoad}
}

// mfNames are OVS's meta-flow names (mf_field.name, what learn_format
// prints) of the fields whose govs name is OVS's other name for them.
var mfNames = map[string]string{"ip_proto": "nw_proto", "ip_ecn": "nw_ecn"}

// MFName is the field's OVS meta-flow name, the one OVS's texts give.
func (fd *Field) MFName() string {
	if n, ok := mfNames[fd.Name]; ok {
		return n
	}
	return fd.Name
}

// Format formats l as OVS's learn_format: ref formats a field range,
// value a whole field's value (a full-width immediate match).
func (l *Learn) Format(ref func(FieldRef) string, value func(*Field, []byte) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "learn(table=%d", l.Table)
	for _, o := range []struct {
		name string
		v    uint16
	}{{"idle_timeout", l.IdleTimeout}, {"hard_timeout", l.HardTimeout}, {"fin_idle_timeout", l.FinIdleTimeout}, {"fin_hard_timeout", l.FinHardTimeout}} {
		if o.v != 0 {
			fmt.Fprintf(&b, ",%s=%d", o.name, o.v)
		}
	}
	if l.Priority != 0x8000 {
		fmt.Fprintf(&b, ",priority=%d", l.Priority)
	}
	if l.Flags&LearnSendFlowRem != 0 {
		b.WriteString(",send_flow_rem")
	}
	if l.Flags&LearnDeleteLearned != 0 {
		b.WriteString(",delete_learned")
	}
	if l.Cookie != 0 {
		fmt.Fprintf(&b, ",cookie=%#x", l.Cookie)
	}
	if l.Limit != 0 {
		fmt.Fprintf(&b, ",limit=%d", l.Limit)
	}
	if l.ResultDst.Field != nil {
		b.WriteString(",result_dst=" + ref(l.ResultDst))
	}
	for i := range l.Specs {
		s := &l.Specs[i]
		b.WriteByte(',')
		imm := func() string { // mf_format_subvalue
			e := s.Entry(nil)
			v := strings.TrimLeft(fmt.Sprintf("%x", e[:]), "0")
			if v == "" {
				v = "0"
			}
			return "0x" + v
		}
		switch {
		case s.Kind == LearnMatch && s.Src.Field == nil && s.Dst.Ofs == 0 && s.Dst.NBits == s.Dst.Field.Bits():
			v, _ := s.Value(nil)
			b.WriteString(s.Dst.Field.MFName() + "=" + value(s.Dst.Field, v))
		case s.Kind == LearnMatch && s.Src.Field == nil:
			b.WriteString(ref(s.Dst) + "=" + imm())
		case s.Kind == LearnMatch:
			b.WriteString(ref(s.Dst))
			if s.Src.Field != s.Dst.Field || s.Src.Ofs != s.Dst.Ofs {
				b.WriteString("=" + ref(s.Src))
			}
		case s.Kind == LearnLoad && s.Src.Field == nil:
			b.WriteString("load:" + imm() + "->" + ref(s.Dst))
		case s.Kind == LearnLoad:
			b.WriteString("load:" + ref(s.Src) + "->" + ref(s.Dst))
		default:
			b.WriteString("output:" + ref(s.Src))
		}
	}
	b.WriteByte(')')
	return b.String()
}

// Format formats f as OVS's format_FIN_TIMEOUT.
func (f *FinTimeout) Format() string {
	var args []string
	if f.Idle != 0 {
		args = append(args, fmt.Sprintf("idle_timeout=%d", f.Idle))
	}
	if f.Hard != 0 {
		args = append(args, fmt.Sprintf("hard_timeout=%d", f.Hard))
	}
	return "fin_timeout(" + strings.Join(args, ",") + ")"
}
