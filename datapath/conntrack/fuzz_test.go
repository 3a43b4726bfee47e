package conntrack

import (
	"testing"

	"github.com/govs/govs/datapath/dptest"
)

// FuzzExecute feeds arbitrary frames through tracking and NAT, in both
// directions of a connection set up from the frame itself: nothing may
// panic, read or write outside the frame, or change its length.
func FuzzExecute(f *testing.F) {
	f.Add(tcp4("10.0.0.1", "10.0.0.2", 1, 2, syn, 1, 0, ""), uint8(0))
	f.Add(udp6("fd00::1", "fd00::2", 1, 2), uint8(1))
	f.Add(icmp4("10.0.0.2", "10.0.0.1", icmp4Unreach, 3, 0, udp4("10.0.0.1", "10.0.0.2", 1, 2)[14:]), uint8(2))
	f.Add(icmp6("fd00::1", "fd00::2", icmp6Echo, 1), uint8(3))
	f.Add(dptest.Fragment4(bigUDP(false), 1480)[2], uint8(1))
	f.Add(split6(bigUDP(true), 1448, 1)[2], uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, mode uint8) {
		tr := New(Config{})
		defer tr.Close()
		acts := []Action{
			{Commit: true},
			{Commit: true, NAT: &NATRange{Src: true, MinAddr: a4("192.168.0.1"), MaxAddr: a4("192.168.0.3"), MinPort: 1, MaxPort: 3}},
			{Commit: true, Zone: 1, NAT: &NATRange{Dst: true, MinAddr: a4("10.1.0.1"), MaxAddr: a4("10.1.0.1")}},
			{Commit: true, Force: true, NAT: &NATRange{}},
			{Commit: true, Helper: HelperFTP, NAT: &NATRange{Src: true, MinAddr: a4("192.168.0.100"), MaxAddr: a4("192.168.0.100")}},
			{Commit: true, Helper: HelperTFTP},
		}
		a := acts[int(mode)%len(acts)]
		n := len(b)
		c := append([]byte(nil), b...)
		var md Meta
		if err := tr.Execute(c, &md, &a, mode&4 != 0); err != nil {
			t.Fatal(err)
		}
		if len(c) != n || md.State&StateTracked == 0 {
			t.Fatalf("length %d -> %d, state %#x", n, len(c), md.State)
		}
		// The same bytes again, and as the reply if it parses.
		var md2 Meta
		tr.Execute(append([]byte(nil), b...), &md2, &Action{NAT: &NATRange{}}, false)
		var p parsed
		if parseFrame(c, &p) && len(c) >= 14 {
			r := append([]byte(nil), c...)
			var md3 Meta
			tr.Execute(r, &md3, &Action{Commit: true, NAT: &NATRange{}}, false)
		}
		// As a fragment: held, or with the fragments of a whole datagram.
		if frags, whole, _ := tr.Defrag(1, append([]byte(nil), b...), 0, 0); frags != nil {
			var md4 Meta
			tr.Execute(whole, &md4, &a, false)
			for _, f := range frags {
				tr.NATFragment(f, &md4, &a)
			}
		}
		tr.Sweep()
		for _, e := range tr.Dump(-1) {
			_ = e.String()
		}
	})
}
