package netdev

import (
	"encoding/binary"
	"testing"
)

// frame4 returns an Ethernet/IPv4 frame from src:sp to dst:dp (proto p).
func frame4(src, dst [4]byte, p byte, sp, dp uint16, frag uint16) []byte {
	f := make([]byte, 14+20+8)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0], ip[9] = 0x45, p
	binary.BigEndian.PutUint16(ip[6:], frag)
	copy(ip[12:], src[:])
	copy(ip[16:], dst[:])
	binary.BigEndian.PutUint16(ip[20:], sp)
	binary.BigEndian.PutUint16(ip[22:], dp)
	return f
}

func TestFlowQueue(t *testing.T) {
	a, b := [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
	used := map[int]bool{}
	for sp := uint16(1000); sp < 1064; sp++ {
		fwd := flowQueue(frame4(a, b, 6, sp, 80, 0), 4)
		if rev := flowQueue(frame4(b, a, 6, 80, sp, 0), 4); rev != fwd {
			t.Fatalf("port %d: forward on queue %d, reverse on %d", sp, fwd, rev)
		}
		if fwd < 0 || fwd >= 4 {
			t.Fatalf("queue %d of 4", fwd)
		}
		used[fwd] = true
	}
	if len(used) != 4 {
		t.Errorf("64 flows used queues %v, want all 4", used)
	}
	// A datagram's fragments stay with each other.
	first := flowQueue(frame4(a, b, 17, 1, 2, 0x2000), 4)
	if rest := flowQueue(frame4(a, b, 17, 0xdead, 0xbeef, 0x00b9), 4); rest != first {
		t.Errorf("fragments on queues %d and %d", first, rest)
	}
	if q := flowQueue([]byte{1, 2, 3}, 4); q != 0 {
		t.Errorf("runt on queue %d", q)
	}
}

func FuzzFlowQueue(f *testing.F) {
	f.Add(frame4([4]byte{1, 2, 3, 4}, [4]byte{5, 6, 7, 8}, 6, 1, 2, 0), 2)
	f.Add([]byte{}, 3)
	f.Fuzz(func(t *testing.T, frame []byte, n int) {
		n = n%17 + 1
		if n < 1 {
			n = -n + 2
		}
		if q := flowQueue(frame, n); q < 0 || q >= n {
			t.Fatalf("queue %d of %d", q, n)
		}
	})
}
