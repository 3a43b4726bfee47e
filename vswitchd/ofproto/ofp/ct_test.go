package ofp

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"
)

// nxmEntry is one NXM entry: header (without the mask bit and with the
// field's length), value and, if not nil, mask.
func nxmEntry(h uint32, value, mask []byte) []byte {
	if mask != nil {
		h = h&^0xff | 0x100 | uint32(2*len(value))
	}
	b := binary.BigEndian.AppendUint32(nil, h)
	b = append(b, value...)
	return append(b, mask...)
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// The conntrack matches decode with OVS's prerequisites (a ct_state
// saying the packet is in a connection, and the IP version for the
// addresses) and encode back as OVS's nx_put_raw does.
func TestCtMatches(t *testing.T) {
	ctState := func(v, m uint32) []byte { return nxmEntry(nxmHeader(classNXM1, 105, 4), be32(v), be32(m)) }
	ethType := func(t uint16) []byte { return nxmEntry(nxmHeader(classNXM0, 3, 2), []byte{byte(t >> 8), byte(t)}, nil) }
	proto := nxmEntry(nxmHeader(classNXM1, 119, 1), []byte{6}, nil)
	nwSrc := nxmEntry(nxmHeader(classNXM1, 120, 4), []byte{10, 0, 0, 0}, []byte{255, 0, 0, 0})
	ip6Src := nxmEntry(nxmHeader(classNXM1, 122, 16), bytes.Repeat([]byte{0x20}, 16), nil)
	tpDst := nxmEntry(nxmHeader(classNXM1, 125, 2), []byte{0, 80}, nil)
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	for _, tc := range []struct {
		name string
		in   []byte
		want string // "" accepted
	}{
		{"full tuple", cat(ctState(0x22, 0x22), ethType(0x0800), proto, nwSrc, tpDst), ""},
		{"+trk-inv ipv6", cat(ctState(0x20, 0x30), ethType(0x86dd), ip6Src), ""},
		{"ct_nw_proto without ct_state", proto, "OFPBMC_BAD_PREREQ"},
		{"ct_nw_proto with +trk only", cat(ctState(0x20, 0x20), proto), "OFPBMC_BAD_PREREQ"},
		{"ct_nw_proto with -trk", cat(ctState(0, 0x20), proto), "OFPBMC_BAD_PREREQ"},
		{"ct_nw_src without ip", cat(ctState(0x02, 0x02), nwSrc), "OFPBAC_MATCH_INCONSISTENT"},
		{"ct_nw_src on ipv6", cat(ctState(0x02, 0x02), ethType(0x86dd), nwSrc), "OFPBAC_MATCH_INCONSISTENT"},
		{"ct_ipv6_src on ipv4", cat(ctState(0x02, 0x02), ethType(0x0800), ip6Src), "OFPBAC_MATCH_INCONSISTENT"},
		{"ct_tp_dst with ct_nw_proto", cat(ctState(0x02, 0x02), proto, tpDst), ""},
		{"undefined ct_state bit", ctState(0x100, 0x100), "OFPBMC_BAD_VALUE"},
		{"exact ct_state", nxmEntry(nxmHeader(classNXM1, 105, 4), be32(0x21), nil), ""},
		{"ct_zone masked", nxmEntry(nxmHeader(classNXM1, 106, 2), []byte{0, 1}, []byte{0, 1}), "OFPBMC_BAD_MASK"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := DecodeNXMatch(tc.in)
			got := ""
			if err != nil {
				got = err.Errno.String()
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if err != nil {
				return
			}
			back, err := DecodeNXMatch(AppendNXMatch(nil, &m, true))
			if err != nil || back != m {
				t.Fatalf("re-encoded: %v, %+v became %+v", err, m, back)
			}
		})
	}
}

// Debian's ovs-ofctl sends these flow mods (`ovs-ofctl parse-flow`
// prints them, and its own decoder refuses them as OVS's switch does).
func TestCtPrereqsAsOVS(t *testing.T) {
	for _, tc := range []struct{ flow, hex, want string }{
		{"ct_nw_src=1.2.3.4", "0104003800000001000023200000000d00000000000000000000000000008000ffffffffffff000000080000000000000001f00401020304", "OFPBMC_BAD_PREREQ"},
		{"ct_state=+trk,ip,ct_nw_src=1.2.3.4", "0104005000000001000023200000000d00000000000000000000000000008000ffffffffffff0000001a0000000000000000060208000001d30800000020000000200001f00401020304000000000000", "OFPBMC_BAD_PREREQ"},
		{"ct_state=+trk,ct_nw_proto=6", "0104004800000001000023200000000d00000000000000000000000000008000ffffffffffff000000110000000000000001d30800000020000000200001ee010600000000000000", "OFPBMC_BAD_PREREQ"},
		{"ct_state=+est,ipv6,ct_nw_src=1.2.3.4", "0104005000000001000023200000000d00000000000000000000000000008000ffffffffffff0000001a0000000000000000060286dd0001d30800000002000000020001f00401020304000000000000", "OFPBAC_MATCH_INCONSISTENT"},
	} {
		b, err := hex.DecodeString(strings.ReplaceAll(tc.hex, " ", ""))
		if err != nil {
			t.Fatal(err)
		}
		if got := describe(Decode(b)); got != "error "+tc.want {
			t.Errorf("%s: %s, want %s", tc.flow, got, tc.want)
		}
	}
}

// NXAST_CT_CLEAR as ovs-ofctl sends it ("actions=ct_clear") decodes and
// encodes back to the same bytes; a longer one is refused.
func TestCtClearAction(t *testing.T) {
	wire, _ := hex.DecodeString("ffff001000002320002b000000000000")
	for _, v := range []Version{V10, V13} {
		acts, err := DecodeActions(v, wire)
		if err != nil || len(acts) != 1 || acts[0].Type != ActCTClear {
			t.Fatalf("%s: %v %+v", v, err, acts)
		}
		if back := AppendActions(nil, v, acts); !bytes.Equal(back, wire) {
			t.Errorf("%s: encoded %x, want %x", v, back, wire)
		}
	}
	long, _ := hex.DecodeString("ffff001800002320002b0000000000000000000000000000")
	if _, err := DecodeActions(V10, long); err == nil || err.Errno != BadActionLen {
		t.Errorf("long ct_clear: %v", err)
	}
}
