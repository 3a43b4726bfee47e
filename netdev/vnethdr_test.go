package netdev

import (
	"bytes"
	"errors"
	"testing"

	"github.com/govs/govs/datapath/packet"
)

func TestVirtioNetHdr(t *testing.T) {
	for _, tc := range []struct {
		name string
		hdr  []byte
		o    packet.Offload
	}{
		{"none", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, packet.Offload{}},
		{"data valid", []byte{2, 0, 0, 0, 0, 0, 0, 0, 0, 0}, packet.Offload{Flags: packet.CsumValid}},
		{"partial udp", []byte{1, 0, 42, 0, 0, 0, 34, 0, 6, 0},
			packet.Offload{Flags: packet.NeedsCsum, HdrLen: 42, CsumStart: 34, CsumOffset: 6}},
		{"tso4", []byte{1, 1, 66, 0, 0xa8, 5, 34, 0, 16, 0},
			packet.Offload{Flags: packet.NeedsCsum, GSO: packet.GSOTCPv4, HdrLen: 66, GSOSize: 1448, CsumStart: 34, CsumOffset: 16}},
		{"tso6 ecn", []byte{1, 0x84, 0, 0, 0xa0, 5, 54, 0, 16, 0},
			packet.Offload{Flags: packet.NeedsCsum | packet.ECN, GSO: packet.GSOTCPv6, GSOSize: 1440, CsumStart: 54, CsumOffset: 16}},
		{"uso", []byte{1, 5, 0, 0, 0xe8, 3, 34, 0, 6, 0},
			packet.Offload{Flags: packet.NeedsCsum, GSO: packet.GSOUDPL4, GSOSize: 1000, CsumStart: 34, CsumOffset: 6}},
		{"mrg_rxbuf length", []byte{1, 1, 66, 0, 0xa8, 5, 34, 0, 16, 0, 1, 0},
			packet.Offload{Flags: packet.NeedsCsum, GSO: packet.GSOTCPv4, HdrLen: 66, GSOSize: 1448, CsumStart: 34, CsumOffset: 16}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o packet.Offload
			if err := DecodeVirtioNetHdr(tc.hdr, &o); err != nil {
				t.Fatal(err)
			}
			if o != tc.o {
				t.Fatalf("decoded %+v, want %+v", o, tc.o)
			}
			b := make([]byte, VirtioNetHdrLen)
			EncodeVirtioNetHdr(b, &o, 65536)
			if want := tc.hdr[:VirtioNetHdrLen]; !bytes.Equal(b, want) && tc.o.Flags&packet.CsumValid == 0 {
				t.Fatalf("encoded % x, want % x", b, want)
			}
		})
	}
}

func TestVirtioNetHdrInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		hdr  []byte
	}{
		{"short", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"ufo", []byte{1, 3, 0, 0, 0xa8, 5, 34, 0, 6, 0}},
		{"unknown gso", []byte{1, 2, 0, 0, 0xa8, 5, 34, 0, 6, 0}},
		{"gso size 0", []byte{1, 1, 0, 0, 0, 0, 34, 0, 16, 0}},
	} {
		var o packet.Offload
		if err := DecodeVirtioNetHdr(tc.hdr, &o); !errors.Is(err, ErrVirtioNetHdr) {
			t.Errorf("%s: %v, want ErrVirtioNetHdr", tc.name, err)
		}
	}
}

func TestEncodeVirtioNetHdrStaleHdrLen(t *testing.T) {
	o := packet.Offload{Flags: packet.NeedsCsum, HdrLen: 200, CsumStart: 34, CsumOffset: 6}
	b := make([]byte, VirtioNetHdrLen)
	EncodeVirtioNetHdr(b, &o, 100)
	if b[2] != 0 || b[3] != 0 {
		t.Errorf("hdr_len %d sent for a frame of 100 bytes", int(b[2])|int(b[3])<<8)
	}
}

// FuzzVirtioNetHdr: decoding never panics, and what decodes encodes back to
// a header that decodes the same.
func FuzzVirtioNetHdr(f *testing.F) {
	f.Add([]byte{1, 1, 66, 0, 0xa8, 5, 34, 0, 16, 0})
	f.Add([]byte{1, 0x85, 0, 0, 1, 0, 0, 1, 6, 0, 1, 0})
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var o packet.Offload
		if DecodeVirtioNetHdr(b, &o) != nil {
			return
		}
		enc := make([]byte, VirtioNetHdrLen)
		EncodeVirtioNetHdr(enc, &o, 1<<16)
		var o2 packet.Offload
		if err := DecodeVirtioNetHdr(enc, &o2); err != nil {
			t.Fatalf("re-decoding % x: %v", enc, err)
		}
		o.Flags &^= packet.CsumValid
		if o != o2 {
			t.Fatalf("%+v became %+v", o, o2)
		}
	})
}

func BenchmarkVirtioNetHdr(b *testing.B) {
	hdr := []byte{1, 1, 66, 0, 0xa8, 5, 34, 0, 16, 0}
	var o packet.Offload
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			DecodeVirtioNetHdr(hdr, &o)
		}
	})
	out := make([]byte, VirtioNetHdrLen)
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			EncodeVirtioNetHdr(out, &o, 1500)
		}
	})
}
