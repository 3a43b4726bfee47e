package conntrack

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/govs/govs/datapath/dptest"
)

// split6 cuts an untagged IPv6 frame's payload into fragments with a
// fragment header.
func split6(b []byte, size int, id uint32) [][]byte {
	hdr, payload := b[:54], b[54:]
	var out [][]byte
	for off := 0; off < len(payload); off += size {
		end := min(off+size, len(payload))
		f := append([]byte(nil), hdr...)
		fo := uint16(off)
		if end < len(payload) {
			fo |= 1
		}
		fh := []byte{hdr[20], 0, byte(fo >> 8), byte(fo), 0, 0, 0, 0}
		binary.BigEndian.PutUint32(fh[4:], id)
		f = append(append(f, fh...), payload[off:end]...)
		f[20] = IPProtoFragment
		binary.BigEndian.PutUint16(f[18:], uint16(8+end-off))
		out = append(out, f)
	}
	return out
}

func bigUDP(v6 bool) []byte {
	f := dptest.Frame{Dst: macB, Src: macA, UDP: &dptest.UDP{Src: 5000, Dst: 53}, Payload: bytes.Repeat([]byte("fragment"), 500)}
	if v6 {
		f.IPv6 = &dptest.IPv6{Src: ip("fd00::1"), Dst: ip("fd00::2")}
	} else {
		f.IPv4 = &dptest.IPv4{Src: ip("10.0.0.1"), Dst: ip("10.0.0.2"), ID: 77}
	}
	return f.Checksummed()
}

func TestDefrag(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		tr, clk := newTracker(t)
		full := bigUDP(v6)
		var frags [][]byte
		if v6 {
			frags = split6(full, 1448, 99)
		} else {
			frags = dptest.Fragment4(full, 1480)
		}
		if len(frags) != 3 {
			t.Fatalf("%d fragments", len(frags))
		}
		// Out of order; nothing is whole until the last one.
		for _, i := range []int{2, 0} {
			if fs, w := tr.Defrag(clk.now(), frags[i], 0); fs != nil || w != nil {
				t.Fatalf("v6=%v: datagram whole after fragment %d", v6, i)
			}
		}
		fs, whole := tr.Defrag(clk.now(), frags[1], 0)
		if len(fs) != 3 || !bytes.Equal(fs[0], frags[0]) || !bytes.Equal(whole, full) {
			t.Fatalf("v6=%v: reassembly gave %d fragments, whole datagram equal: %v", v6, len(fs), bytes.Equal(whole, full))
		}
		// The datagram is tracked; NAT applies to each fragment.
		var md Meta
		a := Action{Commit: true, NAT: &NATRange{Src: true, MinAddr: a4("192.168.0.1"), MaxAddr: a4("192.168.0.1")}}
		if v6 {
			a.NAT = &NATRange{Src: true, V6: true, MinAddr: a16("fd00::100"), MaxAddr: a16("fd00::100")}
		}
		tr.Execute(whole, &md, &a, false)
		if md.State != trk|nw|StateSrcNAT {
			t.Fatalf("v6=%v: datagram state %s", v6, StateString(md.State))
		}
		for _, f := range fs {
			tr.NATFragment(f, &md, &a)
		}
		// Reassembled again, the NATed fragments are the NATed datagram.
		fs2, whole2 := tr.Defrag(clk.now(), fs[0], 0)
		for _, f := range fs[1:] {
			fs2, whole2 = tr.Defrag(clk.now(), f, 0)
		}
		if fs2 == nil || !bytes.Equal(whole2, whole) {
			t.Errorf("v6=%v: NATed fragments do not make the NATed datagram", v6)
		} else {
			checkCsums(t, whole2)
		}
		if tr.frags.n != 0 {
			t.Errorf("v6=%v: %d fragments still held", v6, tr.frags.n)
		}
	}
}

func TestDefragRefused(t *testing.T) {
	tr, clk := newTracker(t)
	full := bigUDP(false)
	frags := dptest.Fragment4(full, 1480)
	small := dptest.Fragment4(full, 800)
	tests := []struct {
		name string
		seq  [][]byte
	}{
		{"overlap", [][]byte{frags[0], small[1], frags[1], frags[2]}},
		{"too small", [][]byte{small[0], small[1], small[2], small[3], small[4]}},
		{"last twice", [][]byte{frags[2], frags[2], frags[0], frags[1]}},
	}
	for _, tc := range tests {
		for i, f := range tc.seq {
			if fs, _ := tr.Defrag(clk.now(), f, 0); fs != nil {
				t.Errorf("%s: whole after fragment %d", tc.name, i)
			}
		}
		tr.Sweep()
		clk.advance(16e9)
		tr.Sweep()
	}
	// Expiry: a datagram missing a fragment for 15 s is forgotten.
	tr.Defrag(clk.now(), frags[0], 0)
	clk.advance(16e9)
	tr.Sweep()
	if tr.frags.n != 0 {
		t.Errorf("%d fragments held after expiry", tr.frags.n)
	}
	if tr.frags.reject == 0 {
		t.Error("no fragment refused")
	}
}
