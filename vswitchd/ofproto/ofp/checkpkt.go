package ofp

import "encoding/binary"

// decodeCheckPktLarger decodes NXAST_CHECK_PKT_LARGER (struct
// nx_action_check_pkt_larger): pkt_len, the result bit's offset, the
// destination's NXM/OXM header, zeros to 24 bytes or more. b is the whole
// action. As OVS's decode: an unknown field is OFPBMC_BAD_FIELD, padding
// not zero NXBRC_MUST_BE_ZERO, a bad destination mf_check_dst's error.
func decodeCheckPktLarger(b []byte) (Action, *Error) {
	if len(b) < 24 {
		return Action{}, actErr(BadActionLen, "check_pkt_larger")
	}
	ofs := int(binary.BigEndian.Uint16(b[12:]))
	h := binary.BigEndian.Uint32(b[14:])
	rest := b[18:]
	if h>>16 == 0xffff {
		// An experimenter OXM header is 8 bytes; govs knows no
		// experimenter field a result bit could go to.
		return Action{}, actErr(BadField, "check_pkt_larger: experimenter field")
	}
	for _, c := range rest {
		if c != 0 {
			return Action{}, actErr(MustBeZero, "check_pkt_larger padding")
		}
	}
	ref, err := decodeRef(h, ofs, 1, BadField)
	if err != nil {
		return Action{}, err
	}
	if !ref.Field.Writable {
		return Action{}, actErr(BadSetArgument, "check_pkt_larger to read-only field "+ref.Field.Name)
	}
	return Action{Type: ActCheckPktLarger, PktLen: binary.BigEndian.Uint16(b[10:]), Dst: ref}, nil
}

// appendCheckPktLarger encodes a as NXAST_CHECK_PKT_LARGER, the
// destination as an NXM header in every version (OVS's
// encode_CHECK_PKT_LARGER).
func appendCheckPktLarger(b []byte, a *Action) []byte {
	b = nxActionHeader(b, 24, nxastCheckPktLarger)
	b = put16(b, a.PktLen)
	b = put16(b, uint16(a.Dst.Ofs))
	b = put32(b, a.Dst.Field.header(true))
	return pad(b, 6)
}

// SetRef writes v to ref's bits of f.
func SetRef(f *Flow, ref FieldRef, v uint64) {
	value, mask := refValue(ref, v)
	ref.Field.SetMasked(f, value, mask)
}
