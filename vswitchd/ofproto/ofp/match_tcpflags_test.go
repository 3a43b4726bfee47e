package ofp

import (
	"encoding/binary"
	"testing"
)

// tcp_flags arrives as OpenFlow 1.5's OXM_OF_TCP_FLAGS and, in 1.3 and 1.4,
// as ONF's experimenter field, besides NXM's; other experimenter fields
// are unknown.
func TestMatchTCPFlagsHeaders(t *testing.T) {
	put := func(b []byte, v ...uint32) []byte {
		for _, x := range v {
			b = binary.BigEndian.AppendUint32(b, x)
		}
		return b
	}
	// eth_type=0x0800, ip_proto=6: tcp_flags' prerequisites.
	prereq := append(put(nil, nxmHeader(classOXM, 5, 2)), 0x08, 0x00)
	prereq = append(put(prereq, nxmHeader(classOXM, 10, 1)), 6)
	for _, tc := range []struct {
		name  string
		field []byte
		ok    bool
	}{
		{"OXM 1.5", append(put(nil, nxmHeader(classOXM, oxmTCPFlags, 2)), 0x00, 0x12), true},
		{"ONF", append(put(nil, classExp<<16|oxmTCPFlags<<9|6, ONFVendor), 0x00, 0x12), true},
		{"ONF masked", append(put(nil, classExp<<16|oxmTCPFlags<<9|0x100|8, ONFVendor), 0x00, 0x12, 0x0f, 0xff), true},
		{"other experimenter", append(put(nil, classExp<<16|oxmTCPFlags<<9|6, 0x00002320), 0x00, 0x12), false},
	} {
		var m Match
		_, err := decodeNXMatchInto(&m, append(append([]byte(nil), prereq...), tc.field...), false)
		if tc.ok && (err != nil || m.Flow.TCPFlags != 0x12) {
			t.Errorf("%s: %v, tcp_flags %#x", tc.name, err, m.Flow.TCPFlags)
		}
		if !tc.ok && (err == nil || err.Errno != BadField) {
			t.Errorf("%s: %v, want OFPBMC_BAD_FIELD", tc.name, err)
		}
	}
}
