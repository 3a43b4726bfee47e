package ofp

import (
	"encoding/hex"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// ndFlowMod13 is an OpenFlow 1.3 flow mod of an ND responder, as Debian's
// ovs-ofctl encodes "icmp6,icmp_type=135,icmp_code=0,nd_target=fd00::99,
// nd_sll=00:00:00:00:00:01,nd_reserved=0,nd_options_type=1,
// actions=set_field:136->icmpv6_type,set_field:0a:00:00:00:00:99->nd_tll,IN_PORT":
// the ND fields in their NXM/OXM and Ericsson OXM (class 0x1000) entries.
var ndFlowMod13 = []string{
	"0000000000000000 0000000000000000 00 00 0000 0000 8000 ffffffff ffffffff ffffffff 0000 0000",
	"0001 0044 80000a02 86dd 80001401 3a 80003a01 87 80003c01 00",
	"80003e10 fd000000000000000000000000000099 80004006 000000000001 10000204 00000000 10000401 01 00000000",
	"0004 0038 00000000 0019 0010 80003a01 88 00000000000000 0019 0010 80004206 0a0000000099 0000",
	"0000 0010 fffffff8 ffff 000000000000",
}

// TestNDMatchAndSet decodes the ND fields in a match and a set_field and
// encodes the match back the same; a match on them without an NS or NA is
// refused as OVS refuses it.
func TestNDMatchAndSet(t *testing.T) {
	b := msg(t, V13, TypeFlowMod, ndFlowMod13...)
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	fm := m.(*FlowMod)
	f, mk := &fm.Match.Flow, &fm.Match.Mask
	if f.NdTarget != netip.MustParseAddr("fd00::99").As16() || f.ArpSHA != [6]byte{5: 1} || f.NdOptionsType != 1 ||
		mk.NdReserved != 0xffffffff || mk.NdOptionsType != 0xff || mk.ArpTHA != [6]byte{} {
		t.Errorf("match %+v", fm.Match)
	}
	if len(fm.Actions) != 3 || fm.Actions[0].Field.ID != FieldICMPv6Type || fm.Actions[1].Field.ID != FieldNDTLL {
		t.Errorf("actions %+v", fm.Actions)
	}
	oxm := AppendNXMatch(nil, &fm.Match, false)
	back, derr := DecodeNXMatch(oxm)
	if derr != nil || !reflect.DeepEqual(back, fm.Match) {
		t.Errorf("round trip: %v, %+v", derr, back)
	}

	// nd_sll needs an NS, nd_target an NS or NA: OFPBMC_BAD_PREREQ.
	for _, h := range []string{
		"80000a02 86dd 80001401 3a 80003a01 88 80003c01 00 80004006 000000000001",
		"80000a02 86dd 80001401 3a 80003a01 87 80003c01 01 80003e10 fd000000000000000000000000000099",
		"80000a02 86dd 80001401 3a 10000401 01",
	} {
		b, _ := hex.DecodeString(strings.ReplaceAll(h, " ", ""))
		if _, err := DecodeNXMatch(b); err == nil || err.Errno != BadPrereq {
			t.Errorf("%s: %v, want OFPBMC_BAD_PREREQ", h, err)
		}
	}
	path := filepath.Join("testdata", "requests", "ndflow-of13.bin")
	if old, err := os.ReadFile(path); err != nil || string(old) != string(b) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
