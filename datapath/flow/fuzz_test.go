package flow_test

import (
	"net/netip"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
)

// seedFrames are valid frames of every kind the extractor parses; the
// fuzzer mutates them (and testdata/fuzz/FuzzExtract holds more, malformed
// ones included).
func seedFrames() [][]byte {
	ip1, ip2 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	ip61, ip62 := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
	a, b := dptest.MAC("00:00:00:00:00:0a"), dptest.MAC("00:00:00:00:00:0b")
	return [][]byte{
		dptest.Frame{Src: a, Dst: b, IPv4: &dptest.IPv4{Src: ip1, Dst: ip2}, UDP: &dptest.UDP{Src: 1, Dst: 2}}.Bytes(),
		dptest.Frame{Src: a, Dst: b, Tags: []dptest.Tag{{VID: 10}}, IPv4: &dptest.IPv4{Src: ip1, Dst: ip2}, TCP: &dptest.TCP{Src: 1, Dst: 2, Flags: dptest.SYN}}.Bytes(),
		dptest.Frame{Src: a, Dst: b, Tags: []dptest.Tag{{TPID: 0x88a8, VID: 100}, {VID: 10}}, IPv4: &dptest.IPv4{Src: ip1, Dst: ip2}}.Bytes(),
		dptest.Frame{Src: a, Dst: b, IPv4: &dptest.IPv4{Src: ip1, Dst: ip2, MF: true, Options: []byte{1, 1, 1, 0}}, ICMP: &dptest.ICMP{Type: 8}}.Bytes(),
		dptest.Frame{Src: a, Dst: b, IPv6: &dptest.IPv6{Src: ip61, Dst: ip62, Ext: []dptest.IPv6Ext{{Proto: 0}, {Proto: 44, MF: true}, {Proto: 51}}}, UDP: &dptest.UDP{Src: 1, Dst: 2}}.Bytes(),
		dptest.Frame{Src: a, Dst: b, IPv6: &dptest.IPv6{Src: ip61, Dst: ip62}, ICMP: &dptest.ICMP{Type: 135}}.Bytes(),
		dptest.Frame{Src: a, Dst: b, ARP: &dptest.ARP{Op: 1, SHA: a, SPA: ip1, TPA: ip2}}.Bytes(),
		dptest.Frame{Src: a, Dst: b, EtherType: 50, Payload: []byte{0xaa, 0xaa, 3, 0, 0, 0, 0x08, 0x00, 0x45, 0}}.Bytes(),
		{},
	}
}

func FuzzExtract(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var k, k2 flow.Key
		ok := flow.Extract(data, 5, &k)
		if ok != (len(data) >= 14) {
			t.Fatalf("Extract = %v for %d bytes", ok, len(data))
		}
		flow.Extract(data, 5, &k2)
		if k != k2 {
			t.Fatalf("not deterministic: %v vs %v", k, k2)
		}
		if k.InPort != 5 {
			t.Fatal("InPort lost")
		}
		if k.HasVLAN() != (k.VLANTPID != 0) || (k.HasVLAN() && !flow.IsVLANType(k.VLANTPID)) {
			t.Fatalf("inconsistent tag: tci %#x tpid %#x", k.VLANTCI, k.VLANTPID)
		}
		if k.NwFrag&flow.FragLater != 0 && (k.TpSrc != 0 || k.TpDst != 0 || k.TCPFlags != 0) {
			t.Fatalf("L4 fields in a later fragment: %v", k)
		}
		if k.NwFrag&^(flow.FragAny|flow.FragLater) != 0 || k.TCPFlags&^0x0fff != 0 || k.IPv6Label&^0xfffff != 0 {
			t.Fatalf("bits out of range: %+v", k)
		}
		_ = k.String()
	})
}
