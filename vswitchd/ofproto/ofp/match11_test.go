package ofp

import (
	"encoding/binary"
	"testing"

	"github.com/govs/govs/datapath/flow"
)

// std11 returns an ofp11_match that wildcards everything, for tests to
// narrow.
func std11() []byte {
	var m Match
	return appendMatch11Std(nil, &m)
}

// TestMatch11RoundTrip: what an ofp11_match can say survives encoding and
// decoding (OVS's ofputil_match_to/from_ofp11_match).
func TestMatch11RoundTrip(t *testing.T) {
	var m Match
	f, mk := &m.Flow, &m.Mask
	f.InPort, mk.InPort = PortLocal, ^uint32(0)
	f.EthSrc, mk.EthSrc = [6]byte{0, 0x11, 0x22}, [6]byte{0xff, 0xff, 0xff}
	f.VLANTCI, mk.VLANTCI = flow.VLANPresent|3<<13|5, flow.VLANPresent|flow.VLANVIDMask|flow.VLANPCPMask
	f.EthType, mk.EthType = flow.EthTypeIPv4, 0xffff
	f.NwProto, mk.NwProto = flow.IPProtoTCP, 0xff
	f.NwTOS, mk.NwTOS = 16, 0xfc
	f.IPv4Src, mk.IPv4Src = [4]byte{10}, [4]byte{0xff}
	f.TpDst, mk.TpDst = 80, 0xffff
	f.Metadata, mk.Metadata = 5, 0xff
	b := appendMatch11Std(nil, &m)
	if len(b) != match11Len {
		t.Fatalf("%d bytes", len(b))
	}
	back, err := decodeMatch11Std(b)
	if err != nil {
		t.Fatal(err)
	}
	if back.Flow != m.Flow || back.Mask != m.Mask {
		t.Errorf("round trip:\n%+v\nwant\n%+v", back, m)
	}
	all, err := decodeMatch11Std(std11())
	if err != nil || !all.IsAll() {
		t.Errorf("all-wildcards match decodes to %+v, %v", all, err)
	}
}

// TestMatch11Errors: the values OVS refuses in an ofp11_match.
func TestMatch11Errors(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(b []byte)
		want Errno
	}{
		{"in_port in the gap", func(b []byte) { binary.BigEndian.PutUint32(b[4:], 0x10000); narrow(b, fw11InPort) }, BadValue},
		{"vid 4096", func(b []byte) { binary.BigEndian.PutUint16(b[36:], 4096); narrow(b, fw11DLVLAN) }, BadValue},
		{"pcp 8", func(b []byte) { b[38] = 8; narrow(b, fw11DLVLAN|fw11DLVLANPCP) }, BadValue},
		{"tos ecn bits", func(b []byte) { ipv4(b); b[42] = 3; narrow(b, fw11NWTOS) }, BadValue},
		{"icmp type 256", func(b []byte) {
			ipv4(b)
			b[43] = flow.IPProtoICMP
			binary.BigEndian.PutUint16(b[60:], 256)
			narrow(b, fw11NWProto|fw11TPSrc)
		}, BadField},
		{"mpls label", func(b []byte) {
			binary.BigEndian.PutUint16(b[40:], 0x8847)
			narrow(b, fw11DLType|fw11MPLSLabel)
		}, BadField},
	} {
		b := std11()
		c.edit(b)
		if _, err := decodeMatch11Std(b); err == nil || err.Errno != c.want {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if _, _, err := decodeMatch11(V11, std11()[:80]); err == nil || err.Errno != BadMatchLen {
		t.Errorf("short standard match: %v", err)
	}
}

// narrow clears wildcard bits w of an ofp11_match.
func narrow(b []byte, w uint32) {
	binary.BigEndian.PutUint32(b[8:], binary.BigEndian.Uint32(b[8:])&^w)
}

func ipv4(b []byte) {
	binary.BigEndian.PutUint16(b[40:], flow.EthTypeIPv4)
	narrow(b, fw11DLType)
}
