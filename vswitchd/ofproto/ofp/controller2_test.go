package ofp

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"testing"
)

// NXAST_CONTROLLER2 as Debian's ovs-ofctl encodes it: it decodes, encodes
// back to the same bytes, and bad properties get the errors Debian's
// `ovs-ofctl ofp-print` reports for the same bytes.
func TestController2Codec(t *testing.T) {
	for _, tc := range []struct {
		wire, back string // back: the encoding back when not wire
		want       Action
	}{
		// controller(max_len=64,userdata=00.00.00.01.02,pause,meter_id=5)
		{"ffff003800002320002500000000000000000006004000000003000900000001020000000000000000040004000000000005000800000005", "",
			Action{MaxLen: 64, Reason: PacketInAction, Userdata: []byte{0, 0, 0, 1, 2}, Pause: true, ID: 5}},
		// controller(id=7), with reason=action spelt out: encoded back
		// without it.
		{"ffff002000002320002500000000000000010006000700000002000501000000", "ffff00180000232000250000000000000001000600070000",
			Action{MaxLen: 0xffff, Reason: PacketInAction, ControllerID: 7}},
		// CONTROLLER:65535, still NXAST_CONTROLLER2.
		{"ffff0010000023200025000000000000", "", Action{MaxLen: 0xffff, Reason: PacketInAction}},
		// controller(reason=no_match,userdata=00.00.00.01)
		{"ffff002000002320002500000000000000020005000000000003000800000001", "",
			Action{MaxLen: 0xffff, Reason: PacketInNoMatch, Userdata: []byte{0, 0, 0, 1}}},
	} {
		wire, _ := hex.DecodeString(tc.wire)
		acts, err := DecodeActions(V13, wire)
		if err != nil || len(acts) != 1 {
			t.Fatalf("%s: %v", tc.wire, err)
		}
		a := acts[0]
		if a.Type != ActController || a.Port != PortController || a.MaxLen != tc.want.MaxLen || a.ControllerID != tc.want.ControllerID ||
			a.Reason != tc.want.Reason || !bytes.Equal(a.Userdata, tc.want.Userdata) || a.Pause != tc.want.Pause || a.ID != tc.want.ID {
			t.Errorf("%s: decoded as %+v", tc.wire, a)
		}
		if tc.back != "" {
			wire, _ = hex.DecodeString(tc.back)
		}
		if back := AppendActions(nil, V13, acts); !bytes.Equal(back, wire) {
			t.Errorf("%s: encoded back as %x", tc.wire, back)
		}
	}
	for _, tc := range []struct {
		name, wire string
		want       Errno
	}{
		{"padding", "ffff0010000023200025000000000001", MustBeZero},                            // NXBRC_MUST_BE_ZERO
		{"max_len of 1 byte", "ffff00180000232000250000000000000000000500000000", BadAsyncLen}, // OFPBPC_BAD_LEN
		{"meter_id of 3 bytes", "ffff00180000232000250000000000000005000700000000", BadAsyncLen},
		{"reason of 0 bytes", "ffff00180000232000250000000000000002000400000000", BadAsyncLen},
		{"property of 3 bytes", "ffff00180000232000250000000000000003000300000000", BadAsyncLen},
		{"property past the action", "ffff00180000232000250000000000000003001461626364", BadAsyncLen},
		{"unknown property", "ffff00180000232000250000000000000006000400000000", BadAsyncProp},                             // OFPBPC_BAD_TYPE
		{"experimenter property", "ffff0020000023200025000000000000ffff000c000000000000000000000000", BadPropExperimenter}, // OFPBPC_BAD_EXPERIMENTER
	} {
		b, _ := hex.DecodeString(tc.wire)
		if _, err := DecodeActions(V13, b); err == nil || err.Errno != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
}

// NXAST_DEC_TTL_CNT_IDS (dec_ttl(ids), as ovn-controller encodes a
// router's ip.ttl--): decoded and encoded back to the same bytes, with the
// errors Debian's `ovs-ofctl parse-actions` gives for bad ones.
func TestDecTTLCntIDsCodec(t *testing.T) {
	for _, tc := range []struct {
		wire string
		ids  []uint16
	}{
		{"ffff00180000232000150001000000000000000000000000", []uint16{0}},
		{"ffff00180000232000150003000000000001000200030000", []uint16{1, 2, 3}},
		{"ffff0010000023200015000000000000", []uint16{}},
	} {
		wire, _ := hex.DecodeString(tc.wire)
		acts, err := DecodeActions(V15, wire)
		if err != nil || len(acts) != 1 || acts[0].Type != ActDecTTL || acts[0].CntIDs == nil ||
			fmt.Sprint(acts[0].CntIDs) != fmt.Sprint(tc.ids) {
			t.Fatalf("%s: %+v, %v", tc.wire, acts, err)
		}
		if back := AppendActions(nil, V15, acts); !bytes.Equal(back, wire) {
			t.Errorf("%s: encoded back as %x", tc.wire, back)
		}
	}
	for _, tc := range []struct {
		name, wire string
		want       Errno
	}{
		{"more ids than bytes", "ffff00180000232000150005000000000001000200030000", BadActionLen},
		{"padding", "ffff00180000232000150001000000010001000200030000", MustBeZero}, // NXBRC_MUST_BE_ZERO
	} {
		b, _ := hex.DecodeString(tc.wire)
		if _, err := DecodeActions(V15, b); err == nil || err.Errno != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
	// The plain dec_ttl stays OFPAT_DEC_NW_TTL.
	if b := AppendActions(nil, V15, []Action{{Type: ActDecTTL}}); hex.EncodeToString(b) != "0018000800000000" {
		t.Errorf("dec_ttl encoded as %x", b)
	}
}

// NiciraController tells NXAST_CONTROLLER and NXAST_CONTROLLER2 (OVS's
// OFPACT_CONTROLLER, which action sets refuse) from output:CONTROLLER.
func TestNiciraController(t *testing.T) {
	for _, tc := range []struct {
		a    Action
		want bool
	}{
		{Action{Type: ActController, Port: PortController, MaxLen: 0xffff, Reason: PacketInNoMatch}, true},
		{Action{Type: ActController, Port: PortController, MaxLen: 0xffff, Reason: PacketInAction, Userdata: []byte{1}}, true},
		{Action{Type: ActController, Port: PortController, MaxLen: 0xffff, Reason: PacketInAction}, false},
	} {
		acts, err := DecodeActions(V13, AppendActions(nil, V13, []Action{tc.a}))
		if err != nil {
			t.Fatal(err)
		}
		if got := acts[0].NiciraController(); got != tc.want {
			t.Errorf("%+v: NiciraController %v, want %v", tc.a, got, tc.want)
		}
	}
}

// NXAST_SET_TUNNEL and NXAST_SET_TUNNEL64 (ovs-ofctl's set_tunnel and
// set_tunnel64, in the bytes Debian's ovs-ofctl sends): decoded as a set of
// the whole tun_id, printed and encoded back before OpenFlow 1.2 in the
// form they came in, from 1.2 as a set_field (encode_SET_TUNNEL), and
// refused at a wrong length as OVS does.
func TestSetTunnelCodec(t *testing.T) {
	for _, tc := range []struct {
		wire, text string
		id         uint64
	}{
		{"ffff001000002320000200000000000a", "set_tunnel:0xa", 10},
		{"ffff0018000023200009000000000000000000000000000b", "set_tunnel64:0xb", 11},
		{"ffff00180000232000090000000000000000000100000000", "set_tunnel64:0x100000000", 1 << 32},
		{"ffff0010000023200002000000000000", "set_tunnel:0", 0},
	} {
		wire, _ := hex.DecodeString(tc.wire)
		acts, err := DecodeActions(V13, wire)
		if err != nil || len(acts) != 1 {
			t.Fatalf("%s: %+v, %v", tc.wire, acts, err)
		}
		if id, ok := acts[0].SetTunnelID(); !ok || id != tc.id || acts[0].Field.Name != "tun_id" {
			t.Errorf("%s: tun_id %#x, %v", tc.wire, id, ok)
		}
		if got := FormatAction(&acts[0], V13, nil); got != tc.text {
			t.Errorf("%s: printed %q, want %q", tc.wire, got, tc.text)
		}
		if back := AppendActions(nil, V10, acts); !bytes.Equal(back, wire) {
			t.Errorf("%s: encoded back as %x", tc.wire, back)
		}
		// From OpenFlow 1.2, OVS sends a set_field of tun_id.
		sf := SetField(fields[FieldTunID], acts[0].Value, acts[0].Mask, false)
		if back, want := AppendActions(nil, V13, acts), AppendActions(nil, V13, []Action{sf}); !bytes.Equal(back, want) {
			t.Errorf("%s: encoded in OpenFlow 1.3 as %x, want %x", tc.wire, back, want)
		}
	}
	// A 32-bit set_tunnel of an id that needs 64 bits is sent as the
	// 64-bit action (encode_SET_TUNNEL).
	a := SetTunnel(1<<40, false)
	if b := AppendActions(nil, V10, []Action{a}); hex.EncodeToString(b) != "ffff00180000232000090000000000000000010000000000" {
		t.Errorf("set_tunnel:0x10000000000 encoded as %x", b)
	}
	if got := FormatAction(&a, V13, nil); got != "set_tunnel64:0x10000000000" {
		t.Errorf("printed %q", got)
	}
	for _, wire := range []string{"ffff0018000023200002000000000000000000000000000a", "ffff001000002320000900000000000b"} {
		b, _ := hex.DecodeString(wire)
		if _, err := DecodeActions(V13, b); err == nil || err.Errno != BadActionLen {
			t.Errorf("%s: %v, want %s", wire, err, BadActionLen)
		}
	}
}

// TestResubmitCTCodec: NXAST_RESUBMIT_TABLE_CT decodes to a resubmit
// with CTOrig, printed as OVS's format_RESUBMIT prints it (the short
// form, without "ct", for a port and no table) and encoded back as
// itself in every version.
func TestResubmitCTCodec(t *testing.T) {
	for _, tc := range []struct{ wire, text string }{
		{"ffff001000002320002cfff805000000", "resubmit(,5,ct)"},
		{"ffff001000002320002c000305000000", "resubmit(3,5,ct)"},
		{"ffff001000002320002c0003ff000000", "resubmit:3"},
	} {
		if a := nxRoundTrip(t, tc.wire, tc.text); a.Type != ActResubmit || !a.CTOrig {
			t.Errorf("%s: %+v", tc.wire, a)
		}
	}
	// A resubmit without ct is encoded as before.
	a := Resubmit(PortInPort, 5, true)
	if b := AppendActions(nil, V13, []Action{a}); hex.EncodeToString(b) != "ffff001000002320000efff805000000" {
		t.Errorf("resubmit(,5) encoded as %x", b)
	}
	b, _ := hex.DecodeString("ffff001000002320002cfff805000001")
	if _, err := DecodeActions(V13, b); err == nil || err.Errno != ActionMustBeZero {
		t.Errorf("nonzero padding: %v, want %s", err, ActionMustBeZero)
	}
}

// TestOutputTruncCodec: NXAST_OUTPUT_TRUNC decodes to output(port=,
// max_len=) and is encoded back as itself; a max_len under an Ethernet
// header and a port no output may name are refused as OVS refuses them.
func TestOutputTruncCodec(t *testing.T) {
	for _, tc := range []struct{ wire, text string }{
		{"ffff00100000232000270002" + "00000064", "output(port=2,max_len=100)"},
		{"ffff0010000023200027fffe" + "0000000e", "output(port=LOCAL,max_len=14)"},
		{"ffff0010000023200027fff8" + "ffffffff", "output(port=IN_PORT,max_len=4294967295)"},
	} {
		if a := nxRoundTrip(t, tc.wire, tc.text); a.Type != ActOutputTrunc {
			t.Errorf("%s: %+v", tc.wire, a)
		}
	}
	for _, tc := range []struct {
		wire string
		want Errno
	}{
		{"ffff00100000232000270002" + "0000000d", BadActionArgument},
		{"ffff0010000023200027ff05" + "00000064", BadOutPort},
		{"ffff0010000023200027ffff" + "00000064", BadOutPort},
		{"ffff0018000023200027000200000064" + "0000000000000000", BadActionLen},
	} {
		b, _ := hex.DecodeString(tc.wire)
		if _, err := DecodeActions(V13, b); err == nil || err.Errno != tc.want {
			t.Errorf("%s: %v, want %s", tc.wire, err, tc.want)
		}
	}
}

// nxRoundTrip decodes wire (hex), a Nicira action, requires it printed
// as text and encoded back as itself in OpenFlow 1.0, 1.3 and 1.5, and
// returns it.
func nxRoundTrip(t *testing.T, wire, text string) Action {
	t.Helper()
	b, _ := hex.DecodeString(wire)
	acts, err := DecodeActions(V13, b)
	if err != nil || len(acts) != 1 {
		t.Fatalf("%s: %+v, %v", wire, acts, err)
	}
	if got := FormatAction(&acts[0], V13, nil); got != text {
		t.Errorf("%s: printed %q, want %q", wire, got, text)
	}
	for _, v := range []Version{V10, V13, V15} {
		if back := AppendActions(nil, v, acts); !bytes.Equal(back, b) {
			t.Errorf("%s: encoded back in %v as %x", wire, v, back)
		}
	}
	return acts[0]
}
