package offload_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev/internal/pkttest"
	"github.com/govs/govs/netdev/offload"
)

var (
	ip4a, ip4b = netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("198.51.100.2")
	ip6a, ip6b = netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8:1::2")
)

func payload(n int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// frames are the shapes every test runs over.
func frames(n int) map[string]*pkttest.Frame {
	tcp := func() *pkttest.TCP {
		return &pkttest.TCP{SrcPort: 40000, DstPort: 80, Seq: 0xfffff000, Ack: 7, Flags: pkttest.ACK | pkttest.PSH | pkttest.FIN | pkttest.CWR, Window: 512,
			Options: []byte{1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2}}
	}
	udp := func() *pkttest.UDP { return &pkttest.UDP{SrcPort: 5000, DstPort: 53} }
	return map[string]*pkttest.Frame{
		"tcp4":          {SrcIP: ip4a, DstIP: ip4b, IPID: 0xfffe, TCP: tcp(), Payload: payload(n)},
		"tcp6":          {SrcIP: ip6a, DstIP: ip6b, TCP: tcp(), Payload: payload(n)},
		"tcp4-vlan":     {VLANs: []pkttest.VLAN{{TCI: 10}}, SrcIP: ip4a, DstIP: ip4b, TCP: tcp(), Payload: payload(n)},
		"tcp6-qinq-hbh": {VLANs: []pkttest.VLAN{{TPID: 0x88a8, TCI: 100}, {TCI: 10}}, SrcIP: ip6a, DstIP: ip6b, HopByHop: true, TCP: tcp(), Payload: payload(n)},
		"udp4":          {SrcIP: ip4a, DstIP: ip4b, IPID: 9, UDP: udp(), Payload: payload(n)},
		"udp6":          {SrcIP: ip6a, DstIP: ip6b, UDP: udp(), Payload: payload(n)},
	}
}

func TestCompleteChecksum(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 7, 8, 31, 33, 1460, 9001} {
		for name, f := range frames(n) {
			want := f.Bytes()
			got, o := f.Partial()
			if err := offload.CompleteChecksum(got, &o); err != nil {
				t.Fatalf("%s/%d: %v", name, n, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s/%d: frame differs from one built with its checksum", name, n)
			}
			if _, err := pkttest.Parse(got); err != nil {
				t.Errorf("%s/%d: %v", name, n, err)
			}
			if o.Flags != packet.CsumValid {
				t.Errorf("%s/%d: flags %v, want CsumValid only", name, n, o.Flags)
			}
		}
	}
}

func TestCompleteChecksumBounds(t *testing.T) {
	f := frames(10)["udp4"]
	b, o := f.Partial()
	for _, bad := range []packet.Offload{
		{Flags: packet.NeedsCsum, CsumStart: uint16(len(b))},
		{Flags: packet.NeedsCsum, CsumStart: o.CsumStart, CsumOffset: uint16(len(b))},
		{Flags: packet.NeedsCsum, CsumStart: uint16(len(b) - 1), CsumOffset: 0},
	} {
		if err := offload.CompleteChecksum(b, &bad); !errors.Is(err, offload.ErrMalformed) {
			t.Errorf("%+v: err %v, want ErrMalformed", bad, err)
		}
	}
}

func TestChecksumOddOffsets(t *testing.T) {
	b := payload(300)
	for i := range 40 {
		for j := len(b) - 40; j <= len(b); j++ {
			if got, want := offload.Checksum(b[i:j], 0), ^pkttest.Sum(b[i:j]); got != want && !(got == 0xffff && want == 0) && !(got == 0 && want == 0xffff) {
				t.Fatalf("[%d:%d]: %#04x, want %#04x", i, j, got, want)
			}
		}
	}
}

func TestSegment(t *testing.T) {
	for _, tc := range []struct{ n, mss int }{
		{0, 1448}, {1, 1448}, {1448, 1448}, {1449, 1448}, {64000, 1448}, {65000, 8948}, {3000, 1}, {100, 7}, {2896, 1448},
	} {
		for name, f := range frames(tc.n) {
			frame, o := f.GSO(tc.mss)
			if len(frame) > packet.MaxFrame {
				continue
			}
			checkSegments(t, name, frame, &o, f, tc.mss)
		}
	}
}

func checkSegments(t *testing.T, name string, frame []byte, o *packet.Offload, f *pkttest.Frame, mss int) {
	t.Helper()
	orig := append([]byte(nil), frame...)
	var s offload.Segmenter
	if err := s.Reset(frame, o); err != nil {
		t.Fatalf("%s mss %d: Reset: %v", name, mss, err)
	}
	want := (len(f.Payload) + mss - 1) / mss
	if want == 0 {
		want = 1
	}
	if s.Segments() != want {
		t.Fatalf("%s mss %d: %d segments, want %d", name, mss, s.Segments(), want)
	}
	buf := make([]byte, packet.MaxFrame)
	var got []byte
	for i := 0; ; i++ {
		n := s.Next(buf)
		if n == 0 {
			if i != want {
				t.Fatalf("%s mss %d: Next stopped after %d segments, want %d", name, mss, i, want)
			}
			break
		}
		if n > s.MaxSegmentLen() {
			t.Fatalf("%s: segment %d is %d bytes, over MaxSegmentLen %d", name, i, n, s.MaxSegmentLen())
		}
		p, err := pkttest.Parse(buf[:n])
		if err != nil {
			t.Fatalf("%s mss %d: segment %d: %v", name, mss, i, err)
		}
		if len(p.Payload) > mss {
			t.Fatalf("%s: segment %d carries %d bytes, mss %d", name, i, len(p.Payload), mss)
		}
		if len(p.VLANs) != len(f.VLANs) {
			t.Fatalf("%s: segment %d lost its VLAN tags", name, i)
		}
		if p.V4 && p.IPID != f.IPID+uint16(i) {
			t.Errorf("%s: segment %d IP ID %d, want %d", name, i, p.IPID, f.IPID+uint16(i))
		}
		if f.TCP != nil {
			if p.Seq != f.TCP.Seq+uint32(len(got)) {
				t.Errorf("%s: segment %d seq %#x, want %#x", name, i, p.Seq, f.TCP.Seq+uint32(len(got)))
			}
			last, first := i == want-1, i == 0
			wantFlags := f.TCP.Flags
			if !last {
				wantFlags &^= pkttest.FIN | pkttest.PSH
			}
			if !first {
				wantFlags &^= pkttest.CWR
			}
			if p.Flags != wantFlags {
				t.Errorf("%s: segment %d flags %#x, want %#x", name, i, p.Flags, wantFlags)
			}
		}
		got = append(got, p.Payload...)
	}
	if !bytes.Equal(got, f.Payload) {
		t.Errorf("%s mss %d: reassembled payload differs (%d bytes, want %d)", name, mss, len(got), len(f.Payload))
	}
	if !bytes.Equal(frame, orig) {
		t.Errorf("%s: Segmenter modified the super-frame", name)
	}
}

func TestSegmentRejects(t *testing.T) {
	fs := frames(3000)
	tcp4, o4 := fs["tcp4"].GSO(1000)
	tcp6, o6 := fs["tcp6"].GSO(1000)
	udp4, ou := fs["udp4"].GSO(1000)
	with := func(o packet.Offload, f func(*packet.Offload)) *packet.Offload { f(&o); return &o }
	for _, tc := range []struct {
		name  string
		frame []byte
		o     *packet.Offload
	}{
		{"no gso", tcp4, with(o4, func(o *packet.Offload) { o.GSO = packet.GSONone })},
		{"zero size", tcp4, with(o4, func(o *packet.Offload) { o.GSOSize = 0 })},
		{"tcp6 type on ipv4", tcp4, &o6},
		{"tcp4 type on ipv6", tcp6, &o4},
		{"tcp type on udp", udp4, &o4},
		{"udp type on tcp", tcp4, &ou},
		{"csum start not at l4", tcp4, with(o4, func(o *packet.Offload) { o.CsumStart += 4 })},
		{"csum offset not tcp's", tcp4, with(o4, func(o *packet.Offload) { o.CsumOffset = 6 })},
		{"truncated tcp header", tcp4[:14+20+10], &o4},
		{"not ip", append([]byte{12: 0x08, 13: 0x06}, make([]byte, 40)...), &o4},
		{"unknown type", tcp4, with(o4, func(o *packet.Offload) { o.GSO = 99 })},
	} {
		var s offload.Segmenter
		if err := s.Reset(tc.frame, tc.o); err == nil {
			t.Errorf("%s: Reset succeeded", tc.name)
		}
	}
}

func TestRecover(t *testing.T) {
	const mtu = 1500
	fs := frames(60000)
	for _, name := range []string{"tcp4", "tcp6", "tcp4-vlan", "tcp6-qinq-hbh"} {
		f := fs[name]
		for _, partial := range []bool{true, false} {
			var frame []byte
			if partial {
				frame, _ = f.Partial()
			} else {
				frame = f.Bytes() // as GRO leaves it: the checksum field is stale
				binary.BigEndian.PutUint16(frame[len(frame)-len(f.Payload)-len(f.TCP.Options)-4:], 0x1234)
			}
			o, summed, err := offload.Recover(frame, partial, mtu)
			if err != nil || summed {
				t.Fatalf("%s: Recover: %v, summed %v", name, err, summed)
			}
			if o.GSO == packet.GSONone || o.Flags&packet.NeedsCsum == 0 || o.Flags&packet.ECN == 0 {
				t.Fatalf("%s: Recover gave %+v", name, o)
			}
			mss := int(o.GSOSize)
			if hdr := int(o.HdrLen) - int(o.CsumStart) + int(o.CsumStart) - 14 - 4*len(f.VLANs); hdr+mss != mtu {
				t.Errorf("%s: segments of %d header bytes and %d payload bytes do not fill the MTU %d", name, hdr, mss, mtu)
			}
			checkSegments(t, name, frame, &o, f, mss)
			// What it left must also be a valid partial checksum.
			if err := offload.CompleteChecksum(frame, &o); err != nil {
				t.Fatal(err)
			}
			if _, err := pkttest.Parse(frame); err != nil {
				t.Errorf("%s: completing the recovered partial checksum: %v", name, err)
			}
		}
	}

	small := frames(100)
	for name, f := range small {
		frame, _ := f.Partial()
		o, summed, err := offload.Recover(frame, true, mtu)
		if err != nil || !summed || o != (packet.Offload{Flags: packet.CsumValid}) {
			t.Errorf("%s: small partial frame: %+v, %v, %v", name, o, summed, err)
		}
		if _, err := pkttest.Parse(frame); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		full := f.Bytes()
		if o, summed, err := offload.Recover(full, false, mtu); err != nil || summed || o != (packet.Offload{}) {
			t.Errorf("%s: complete frame: %+v, %v, %v", name, o, summed, err)
		}
	}

	udp, _ := fs["udp4"].Partial()
	if _, _, err := offload.Recover(udp, true, mtu); !errors.Is(err, offload.ErrUnknownSegmentSize) {
		t.Errorf("UDP super-frame: %v, want ErrUnknownSegmentSize", err)
	}
	arp := append([]byte{12: 0x08, 13: 0x06}, make([]byte, 28)...)
	if _, _, err := offload.Recover(arp, true, mtu); !errors.Is(err, offload.ErrUnsupported) {
		t.Errorf("partial non-IP frame: %v, want ErrUnsupported", err)
	}
	if o, _, err := offload.Recover(arp, false, mtu); err != nil || o != (packet.Offload{}) {
		t.Errorf("ARP: %+v, %v", o, err)
	}
}

func TestCounters(t *testing.T) {
	var c offload.Counters
	c.AddSegmented(45)
	c.AddSegmented(3)
	c.AddChecksummed(2)
	c.AddErrors(1)
	if got, want := c.Snapshot(), (offload.Stats{Segmented: 2, Segments: 48, Checksummed: 2, Errors: 1}); got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
}

func TestSegmentAllocs(t *testing.T) {
	frame, o := frames(64000)["tcp4"].GSO(1448)
	buf := make([]byte, packet.MaxFrame)
	var s offload.Segmenter
	if a := testing.AllocsPerRun(10, func() {
		if err := s.Reset(frame, &o); err != nil {
			t.Fatal(err)
		}
		for s.Next(buf) != 0 {
		}
	}); a != 0 {
		t.Errorf("%v allocations per super-frame", a)
	}
}

func BenchmarkChecksum(b *testing.B) {
	for _, n := range []int{64, 1500, 9000, 65536} {
		buf := payload(n)
		b.Run(itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				offload.Checksum(buf, 0)
			}
		})
	}
}

func BenchmarkCompleteChecksum(b *testing.B) {
	frame, o := frames(1448)["tcp4"].Partial()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		oo := o
		offload.CompleteChecksum(frame, &oo)
	}
}

func BenchmarkSegment(b *testing.B) {
	for _, name := range []string{"tcp4", "tcp6", "udp4"} {
		frame, o := frames(65000 - 100)[name].GSO(1448)
		buf := make([]byte, packet.MaxFrame)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			var s offload.Segmenter
			for b.Loop() {
				s.Reset(frame, &o)
				for s.Next(buf) != 0 {
				}
			}
		})
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
