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
		dptest.Frame{Src: a, Dst: b, IPv6: &dptest.IPv6{Src: ip61, Dst: ip62}, ICMP: &dptest.ICMP{Type: 136, Rest: 0x60000000},
			Payload: append(append(ip62.AsSlice(), dptest.NDOpt(2, b)...), dptest.NDOpt(1, a)...)}.Bytes(),
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

// FuzzExtractHead checks that a frame's key from its first bytes alone is
// the whole frame's key whenever ExtractHead says it is complete, and
// that it is complete whenever the head holds the headers.
func FuzzExtractHead(f *testing.F) {
	for _, s := range seedFrames() {
		for _, h := range []uint16{0, 14, 40, 64, 100, 192} {
			f.Add(s, h)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, h uint16) {
		head := data[:min(int(h), len(data))]
		var whole, part flow.Key
		okWhole := flow.Extract(data, 3, &whole)
		ok, complete := flow.ExtractHead(head, len(data), 3, &part)
		if len(head) == len(data) && !complete {
			t.Fatal("incomplete with the whole frame at hand")
		}
		if complete && (ok != okWhole || part != whole) {
			t.Fatalf("head of %d/%d bytes: %v %v, whole frame: %v %v", len(head), len(data), ok, part, okWhole, whole)
		}
	})
}

func TestExtractHeadIncomplete(t *testing.T) {
	ip61, ip62 := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
	a, b := dptest.MAC("00:00:00:00:00:0a"), dptest.MAC("00:00:00:00:00:0b")
	ext := make([]dptest.IPv6Ext, 4) // 4 x 8 bytes of hop-by-hop options
	data := dptest.Frame{Src: a, Dst: b, IPv6: &dptest.IPv6{Src: ip61, Dst: ip62, Ext: ext}, TCP: &dptest.TCP{Src: 1, Dst: 2}, Payload: make([]byte, 1000)}.Bytes()
	var k flow.Key
	for h, want := range map[int]bool{10: false, 64: false, 105: false, 106: true, 192: true} {
		if _, complete := flow.ExtractHead(data[:h], len(data), 1, &k); complete != want {
			t.Errorf("head of %d bytes: complete %v, want %v", h, complete, want)
		}
	}
	if _, complete := flow.ExtractHead(data[:192], len(data), 1, &k); !complete || k.TpDst != 2 {
		t.Errorf("key from a 192-byte head: %v", k)
	}
}
