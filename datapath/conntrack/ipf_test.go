package conntrack

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
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
			if fs, w, held := tr.Defrag(clk.now(), frags[i], 0, 0); fs != nil || w != nil || !held {
				t.Fatalf("v6=%v: datagram whole after fragment %d", v6, i)
			}
		}
		fs, whole, _ := tr.Defrag(clk.now(), frags[1], 0, 0)
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
		fs2, whole2, _ := tr.Defrag(clk.now(), fs[0], 0, 0)
		for _, f := range fs[1:] {
			fs2, whole2, _ = tr.Defrag(clk.now(), f, 0, 0)
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

// defragAll feeds fs to the reassembler and reports which it took and
// whether the last one made the datagram whole.
func defragAll(tr *Tracker, now int64, fs [][]byte) (held []bool, whole bool) {
	for _, f := range fs {
		frags, _, h := tr.Defrag(now, f, 0, 0)
		held = append(held, h)
		whole = frags != nil
	}
	return held, whole
}

// TestDefragRefused checks what the reassembler refuses (the fragment then
// goes to tracking as it is) and OVS's counters of it.
func TestDefragRefused(t *testing.T) {
	tr, clk := newTracker(t)
	full := bigUDP(false)
	frags := dptest.Fragment4(full, 1480)
	small := dptest.Fragment4(full, 800)  // 820-byte IP packets: too small
	mid := dptest.Fragment4(full, 1200)   // overlap frags
	if len(small) != 6 || len(mid) != 4 { // 4008 bytes of UDP
		t.Fatalf("%d, %d fragments", len(small), len(mid))
	}

	// Too small: refused but for the last; held until expiry.
	held, whole := defragAll(tr, clk.now(), small)
	if whole || !slices.Equal(held, []bool{false, false, false, false, false, true}) {
		t.Fatalf("too small: held %v, whole %v", held, whole)
	}
	if got := tr.IPFLists(); !slices.Equal(got, []string{"(src=10.0.0.1,dst=10.0.0.2,recirc_id=0,ip_id=77,dl_type=0x800,zone=0,nw_proto=17,num_fragments=1,state=last frag)"}) {
		t.Errorf("lists %q", got)
	}
	// Expired, the held fragment goes on with the next IPv4 packets (as
	// invalid), not with IPv6's.
	clk.advance(16e9)
	tr.Sweep()
	if got := tr.ExpiredFragments(clk.now(), true); got != nil {
		t.Errorf("expired v4 fragments given to v6: %d", len(got))
	}
	if got := tr.ExpiredFragments(clk.now(), false); len(got) != 1 || !bytes.Equal(got[0].Frame, small[5]) {
		t.Errorf("expired fragments: %d", len(got))
	}

	// Overlap: the overlapping fragment is refused, the datagram completes.
	held, whole = defragAll(tr, clk.now(), [][]byte{frags[0], mid[1], frags[1], frags[2]})
	if !whole || !slices.Equal(held, []bool{true, false, true, true}) {
		t.Fatalf("overlap: held %v, whole %v", held, whole)
	}
	st := tr.IPFStatus()
	want := IPFStatus{MaxFrags: 1000, NFrags: 0,
		V4: IPFFamilyStatus{Enabled: true, MinFragSize: 1200, IPFCounters: IPFCounters{Accepted: 4, Completed: 3, Expired: 1, TooSmall: 5, Overlap: 1}},
		V6: IPFFamilyStatus{Enabled: true, MinFragSize: 1280}}
	if st != want {
		t.Errorf("status %+v, want %+v", st, want)
	}

	// Disabled: IPv4 fragments are not taken, IPv6's still are.
	tr.SetIPFEnabled(false, false)
	if held, _ := defragAll(tr, clk.now(), frags); slices.Contains(held, true) {
		t.Errorf("disabled v4: held %v", held)
	}
	if _, whole := defragAll(tr, clk.now(), split6(bigUDP(true), 1448, 5)); !whole {
		t.Error("v6 not reassembled with v4 disabled")
	}
	tr.SetIPFEnabled(false, true)

	// A smaller minimum takes the small fragments.
	if err := tr.SetIPFMinFrag(false, 399); err != ErrIPFRange {
		t.Errorf("min frag 399: %v", err)
	}
	if err := tr.SetIPFMinFrag(false, 400); err != nil {
		t.Fatal(err)
	}
	if _, whole := defragAll(tr, clk.now(), small); !whole {
		t.Error("small fragments not reassembled with a 400-byte minimum")
	}

	// At most maxFrags fragments are held.
	if err := tr.SetIPFMaxFrags(5001); err != ErrIPFRange {
		t.Errorf("max frags 5001: %v", err)
	}
	if err := tr.SetIPFMaxFrags(2); err != nil {
		t.Fatal(err)
	}
	if held, whole := defragAll(tr, clk.now(), frags); whole || !slices.Equal(held, []bool{true, true, false}) {
		t.Errorf("max 2: held %v, whole %v", held, whole)
	}
	st = tr.IPFStatus()
	if st.MaxFrags != 2 || st.NFrags != 2 || st.V4.MinFragSize != 400 || st.V6.Completed != 3 || !st.V4.Enabled {
		t.Errorf("status %+v", st)
	}
	if got := tr.IPFLists(); len(got) != 1 || !strings.Contains(got[0], "num_fragments=2,state=first frag)") {
		t.Errorf("lists %q", got)
	}
	// Expired fragments no IPv4 packet came to send on are purged 10 s
	// later.
	clk.advance(16e9)
	tr.Sweep()
	if st := tr.IPFStatus(); st.NFrags != 2 {
		t.Errorf("expired fragments not held until purged: %+v", st)
	}
	clk.advance(10e9)
	tr.Sweep()
	if st := tr.IPFStatus(); st.NFrags != 0 || st.V4.Expired != 1 || st.V4.Purged != 2 {
		t.Errorf("after the purge: %+v", st)
	}
	if got := tr.ExpiredFragments(clk.now(), false); got != nil {
		t.Errorf("purged fragments sent on: %d", len(got))
	}
}

// TestDefragExpiry checks that expired fragments are given back by family
// and each list once it expired, not before.
func TestDefragExpiry(t *testing.T) {
	tr, clk := newTracker(t)
	v4 := dptest.Fragment4(bigUDP(false), 1480)
	v6 := split6(bigUDP(true), 1448, 9)
	expired := func(v6 bool) int { return len(tr.ExpiredFragments(clk.now(), v6)) }
	tr.Defrag(clk.now(), v4[0], 0, 3) // expires at 15 s
	clk.advance(5e9)
	tr.Defrag(clk.now(), v6[0], 0, 4) // at 20 s
	tr.Defrag(clk.now(), v6[1], 0, 4)
	if n, m := expired(false), expired(true); n != 0 || m != 0 {
		t.Fatalf("%d, %d fragments expired at 5 s", n, m)
	}
	clk.advance(11e9) // 16 s
	if got := tr.ExpiredFragments(clk.now(), false); len(got) != 1 || got[0].InPort != 3 || !bytes.Equal(got[0].Frame, v4[0]) {
		t.Fatalf("v4 at 16 s: %d fragments", len(got))
	}
	if n := expired(true); n != 0 {
		t.Fatalf("%d v6 fragments expired at 16 s", n)
	}
	tr.Defrag(clk.now(), v4[1], 0, 3) // at 31 s
	clk.advance(5e9)                  // 21 s
	if n, m := expired(false), expired(true); n != 0 || m != 2 {
		t.Fatalf("%d v4, %d v6 fragments expired at 21 s", n, m)
	}
	clk.advance(10e9) // 31 s
	if n := expired(false); n != 1 {
		t.Fatalf("%d v4 fragments expired at 31 s", n)
	}
	if st := tr.IPFStatus(); st.NFrags != 0 || st.V4.Expired != 2 || st.V6.Expired != 2 || tr.HoldsFragments() {
		t.Errorf("status %+v", st)
	}
}

// TestDefragGap checks that fragments whose lengths add up to the
// datagram's but leave a gap (one lies beyond the last fragment's end) do
// not make it whole.
func TestDefragGap(t *testing.T) {
	tr, clk := newTracker(t)
	frags := dptest.Fragment4(bigUDP(false), 1480) // 0-1480, 1480-2960, 2960-4008
	// A fragment of 1480 bytes at 4016, past the end, in place of the
	// second.
	beyond := slices.Clone(frags[1])
	binary.BigEndian.PutUint16(beyond[20:], 0x2000|4016/8)
	beyond[24], beyond[25] = 0, 0
	binary.BigEndian.PutUint16(beyond[24:], ^fold(sum(0, beyond[14:34])))
	held, whole := defragAll(tr, clk.now(), [][]byte{frags[0], beyond, frags[2]})
	if whole || !slices.Equal(held, []bool{true, true, true}) {
		t.Fatalf("held %v, whole %v", held, whole)
	}
	if st := tr.IPFStatus(); st.NFrags != 3 || st.V4.Completed != 0 {
		t.Errorf("status %+v", st)
	}
}
