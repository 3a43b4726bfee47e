package offload_test

import (
	"errors"
	"testing"

	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev/internal/pkttest"
	"github.com/govs/govs/netdev/offload"
)

func addSeeds(f *testing.F, add func(frame []byte, o packet.Offload)) {
	for _, n := range []int{0, 1, 100, 3000} {
		for _, fr := range frames(n) {
			b, o := fr.GSO(1000)
			add(b, o)
		}
	}
}

// FuzzSegment cuts arbitrary frames with arbitrary offload metadata: no
// panic, segments within bounds, and the lengths and checksums of every
// segment that parses right.
func FuzzSegment(f *testing.F) {
	addSeeds(f, func(b []byte, o packet.Offload) {
		f.Add(b, uint8(o.GSO), o.GSOSize, uint8(o.Flags), o.CsumStart, o.CsumOffset)
	})
	buf := make([]byte, packet.MaxFrame)
	f.Fuzz(func(t *testing.T, frame []byte, gso uint8, gsoSize uint16, flags uint8, csumStart, csumOffset uint16) {
		if len(frame) > packet.MaxFrame {
			return
		}
		o := packet.Offload{Flags: packet.Flag(flags), GSO: packet.GSOType(gso), GSOSize: gsoSize, CsumStart: csumStart, CsumOffset: csumOffset}
		var s offload.Segmenter
		if s.Reset(frame, &o) != nil {
			return
		}
		for i := 0; ; i++ {
			n := s.Next(buf)
			if n == 0 {
				if i != s.Segments() {
					t.Fatalf("%d segments, Segments said %d", i, s.Segments())
				}
				return
			}
			if n > s.MaxSegmentLen() || i >= s.Segments() {
				t.Fatalf("segment %d of %d bytes; Segments %d, MaxSegmentLen %d", i, n, s.Segments(), s.MaxSegmentLen())
			}
			if _, err := pkttest.Parse(buf[:n]); errors.Is(err, pkttest.ErrChecksum) || errors.Is(err, pkttest.ErrLength) {
				t.Fatalf("segment %d: %v", i, err)
			}
		}
	})
}

// FuzzCompleteChecksum: no panic on any offsets, and a completed checksum
// at an even offset verifies: the sum over the checksummed range, with the pseudo-header sum
// the field held before, is all ones.
func FuzzCompleteChecksum(f *testing.F) {
	addSeeds(f, func(b []byte, o packet.Offload) { f.Add(b, o.CsumStart, o.CsumOffset) })
	f.Fuzz(func(t *testing.T, frame []byte, start, off uint16) {
		o := packet.Offload{Flags: packet.NeedsCsum, CsumStart: start, CsumOffset: off}
		var seed uint16
		if at := int(start) + int(off); at+2 <= len(frame) {
			seed = uint16(frame[at])<<8 | uint16(frame[at+1])
		}
		if offload.CompleteChecksum(frame, &o) != nil || off%2 != 0 {
			return // a field at an odd offset is not in 16-bit word order with the sum; no protocol has one
		}
		if s := uint32(pkttest.Sum(frame[start:])) + uint32(seed); s != 0xffff && s != 0x1fffe {
			t.Fatalf("sum after completion %#x", s)
		}
	})
}

// FuzzRecover: no panic, and a recovered TCP super-frame segments into
// valid segments.
func FuzzRecover(f *testing.F) {
	addSeeds(f, func(b []byte, o packet.Offload) { f.Add(b, true, uint16(1500)) })
	buf := make([]byte, packet.MaxFrame)
	f.Fuzz(func(t *testing.T, frame []byte, partial bool, mtu uint16) {
		if len(frame) > packet.MaxFrame {
			return
		}
		o, _, err := offload.Recover(frame, partial, int(mtu))
		if err != nil || o.GSO == packet.GSONone {
			return
		}
		var s offload.Segmenter
		if err := s.Reset(frame, &o); err != nil {
			t.Fatalf("Recover gave %+v, which Reset refuses: %v", o, err)
		}
		for n := s.Next(buf); n != 0; n = s.Next(buf) {
			if _, err := pkttest.Parse(buf[:n]); errors.Is(err, pkttest.ErrChecksum) || errors.Is(err, pkttest.ErrLength) {
				t.Fatal(err)
			}
		}
	})
}
