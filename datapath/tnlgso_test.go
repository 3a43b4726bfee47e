package datapath

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev"
	"github.com/govs/govs/netdev/offload"
	"github.com/govs/govs/netdev/tunnel"
)

// tsoFrame is a TSO super-frame of pay bytes of TCP payload in mss-byte
// segments, as a VIF hands it over, and its offload metadata.
func tsoFrame(v6 bool, pay, mss int) ([]byte, packet.Offload) {
	f := dptest.Frame{Src: dptest.MAC("02:00:00:00:00:0a"), Dst: dptest.MAC("02:00:00:00:00:0b"),
		TCP: &dptest.TCP{Src: 40000, Dst: 5201, Flags: dptest.ACK | dptest.PSH, Seq: 1000, Ack: 7}}
	o := packet.Offload{Flags: packet.NeedsCsum, GSO: packet.GSOTCPv4, GSOSize: uint16(mss), HdrLen: 54, CsumStart: 34, CsumOffset: 16}
	if v6 {
		f.IPv6 = &dptest.IPv6{Src: netip.MustParseAddr("fd00::1"), Dst: netip.MustParseAddr("fd00::2")}
		o.GSO, o.HdrLen, o.CsumStart = packet.GSOTCPv6, 74, 54
	} else {
		f.IPv4 = &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), ID: 100}
	}
	f.Payload = make([]byte, pay)
	for i := range f.Payload {
		f.Payload[i] = byte(i * 7)
	}
	return f.Bytes(), o
}

// gsoHeader is the outer headers of the tests' tunnels.
func gsoHeader(kind tunnel.Kind, v6 bool) tunnel.Header {
	h := tunnel.Header{Kind: kind, EthDst: dptest.MAC("02:00:00:00:00:02"), EthSrc: dptest.MAC("02:00:00:00:00:01"),
		Src: netip.MustParseAddr("172.31.0.1"), Dst: netip.MustParseAddr("172.31.0.2"), TTL: 64, DF: true,
		Key: 5, KeyPresent: true, DstPort: 4789}
	if v6 {
		h.Src, h.Dst = netip.MustParseAddr("fd01::1"), netip.MustParseAddr("fd01::2")
	}
	if kind == tunnel.KindGeneve {
		h.DstPort, h.Options = 6081, []byte{0x01, 0x02, 0x80, 0x01, 0x00, 0x0a, 0x00, 0x01}
	}
	return h
}

// With TnlPush.GSO a TSO super-frame leaves as UDP GSO frames that the
// kernel's segmentation turns into exactly the tunnel packets of the
// super-frame's segments, checksums right; received back whole, they are
// decapsulated into one TSO super-frame again for a port that takes TSO.
func TestTunnelUDPGSO(t *testing.T) {
	for _, c := range []struct {
		kind     tunnel.Kind
		v6, in6  bool
		pay, mss int
		frames   int
	}{
		{tunnel.KindGeneve, false, false, 20000, 1398, 1},
		{tunnel.KindVXLAN, false, false, 64000, 1398, 2},
		{tunnel.KindGeneve, true, false, 64000, 1378, 2},
		{tunnel.KindVXLAN, false, true, 30000, 1378, 1},
	} {
		t.Run(fmt.Sprintf("%s/v6=%v/inner6=%v/%d", c.kind, c.v6, c.in6, c.pay), func(t *testing.T) {
			r := newRig(t, 2)
			if err := r.dp.AddPort(3, tunnel.NewVport("vp", c.kind)); err != nil {
				t.Fatal(err)
			}
			all := netdev.Offloads{Csum: true, TSO4: true, TSO6: true, USO: true}
			r.ports[1].SetOffloads(all)
			r.ports[2].SetOffloads(all)
			h := gsoHeader(c.kind, c.v6)
			var popped popRecorder
			r.dp.SetUpcall(popped.upcall(&TnlPush{Port: 3, OutPort: 2, Header: h, Nested: Actions{Output(2)}, GSO: true}))
			sf, so := tsoFrame(c.in6, c.pay, c.mss)
			r.ports[1].InjectOffload(so, sf)
			dptest.Eventually(t, "frames on port 2", func() bool { return r.ports[2].NumSent() == c.frames })
			want := resegment(t, sf, so)
			var got [][]byte
			for i, enc := range r.ports[2].Sent() {
				o := r.ports[2].SentOffloads()[i]
				if o.GSO != packet.GSOUDPL4 || o.Flags != packet.NeedsCsum || o.CsumOffset != 6 || int(o.HdrLen) != int(o.CsumStart)+8 {
					t.Fatalf("frame %d offload %+v", i, o)
				}
				checkPartialUDP(t, enc, o)
				for _, d := range resegment(t, enc, o) {
					gh, inner, err := tunnel.Parse(d)
					if err != nil || gh.Key != 5 || gh.Dst != h.Dst || !gh.Csum || !bytes.Equal(gh.Options, h.Options) {
						t.Fatalf("datagram %x: %+v, %v", d, gh, err)
					}
					got = append(got, inner)
				}
				// Sent back: one TSO super-frame out of each.
				r.ports[2].InjectOffload(o, enc)
			}
			if len(got) != len(want) {
				t.Fatalf("%d tunnel packets, want %d", len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("tunnel packet %d carries\n%x\nwant\n%x", i, got[i], want[i])
				}
			}
			if frames, segs, _ := r.dp.TunnelGSO(); frames != uint64(c.frames) || segs != uint64(len(want)) {
				t.Errorf("TunnelGSO %d frames, %d segments; want %d, %d", frames, segs, c.frames, len(want))
			}
			dptest.Eventually(t, "frames on port 1", func() bool { return r.ports[1].NumSent() == c.frames })
			var back [][]byte
			for i, f := range r.ports[1].Sent() {
				o := r.ports[1].SentOffloads()[i]
				if o.GSO == packet.GSONone {
					t.Fatalf("frame %d to port 1 is no super-frame: %+v", i, o)
				}
				back = append(back, resegment(t, f, o)...)
			}
			if len(back) != len(want) {
				t.Fatalf("%d segments back, want %d", len(back), len(want))
			}
			for i := range want {
				if !bytes.Equal(back[i], want[i]) {
					t.Fatalf("segment %d back\n%x\nwant\n%x", i, back[i], want[i])
				}
			}
			k, _ := popped.last()
			if k.TunID != 5 || k.TunFlags&flow.TunFlagCsum == 0 || !bytes.Equal(k.Options(), h.Options) {
				t.Errorf("key after tnl_pop: %v", k)
			}
			if pop, push := r.dp.TunnelErrors(); pop != 0 || push != 0 {
				t.Errorf("tunnel errors pop %d push %d", pop, push)
			}
		})
	}
}

// Towards a port that takes no UDP GSO (a kernel before 6.2) the option
// does nothing: super-frames are segmented before encapsulation, as
// without it, rather than cut twice.
func TestTunnelUDPGSONoUSO(t *testing.T) {
	r := newRig(t, 2)
	if err := r.dp.AddPort(3, tunnel.NewVport("vp", tunnel.KindGeneve)); err != nil {
		t.Fatal(err)
	}
	r.ports[2].SetOffloads(netdev.Offloads{Csum: true, TSO4: true, TSO6: true})
	var popped popRecorder
	r.dp.SetUpcall(popped.upcall(&TnlPush{Port: 3, OutPort: 2, Header: gsoHeader(tunnel.KindGeneve, false),
		Nested: Actions{Output(2)}, GSO: true}))
	sf, so := tsoFrame(false, 20000, 1398)
	want := resegment(t, sf, so)
	r.ports[1].InjectOffload(so, sf)
	dptest.Eventually(t, "frames on port 2", func() bool { return r.ports[2].NumSent() == len(want) })
	for i, o := range r.ports[2].SentOffloads() {
		if o.GSO != packet.GSONone {
			t.Fatalf("frame %d: offload %+v", i, o)
		}
	}
	if frames, _, _ := r.dp.TunnelGSO(); frames != 0 {
		t.Errorf("%d UDP GSO frames", frames)
	}
}

// checkPartialUDP checks that the UDP checksum field of UDP GSO frame b
// holds the pseudo-header sum its partial checksum needs.
func checkPartialUDP(t *testing.T, b []byte, o packet.Offload) {
	t.Helper()
	c := append([]byte(nil), b...)
	o.GSO, o.GSOSize = packet.GSONone, 0
	if err := offload.CompleteChecksum(c, &o); err != nil {
		t.Fatal(err)
	}
	l4 := c[o.HdrLen-8:]
	if _, _, err := tunnel.Parse(c); err != nil || binary.BigEndian.Uint16(l4[4:]) != uint16(len(l4)) {
		t.Fatalf("UDP GSO frame completed: %v", err)
	}
}

// A datagram of a received UDP GSO frame that does not continue the
// first's inner segment (another connection, not TCP) is decapsulated on
// its own; a frame that is not UDP GSO as the kernel makes it is dropped
// and counted.
func TestTunnelUDPGSOReceive(t *testing.T) {
	r := newRig(t, 2)
	if err := r.dp.AddPort(3, tunnel.NewVport("vp", tunnel.KindGeneve)); err != nil {
		t.Fatal(err)
	}
	r.ports[1].SetOffloads(netdev.Offloads{Csum: true, TSO4: true, TSO6: true})
	var popped popRecorder
	r.dp.SetUpcall(popped.upcall(nil))
	h := gsoHeader(tunnel.KindGeneve, false)
	a := tcpSegs(false, 40000, 4, 1000, 1000)
	b := tcpSegs(false, 40001, 1, 1000, 1000)
	inner := [][]byte{a[0], a[1], b[0], a[2], a[3]}
	enc, o := gsoFrame(t, &h, inner)
	r.ports[2].InjectOffload(o, enc)
	// a[0..1] joined, b[0], a[2..3] joined (as runs of the frame, and
	// again by GRO before port 1 if they were not).
	dptest.Eventually(t, "frames on port 1", func() bool { return r.ports[1].NumSent() >= 3 })
	sent, offs := r.ports[1].Sent(), r.ports[1].SentOffloads()
	if len(sent) != 3 || offs[0].GSO != packet.GSOTCPv4 || offs[1].GSO != packet.GSONone || offs[2].GSO != packet.GSOTCPv4 {
		t.Fatalf("sent %d frames, offloads %+v", len(sent), offs)
	}
	if back := resegment(t, sent[0], offs[0]); len(back) != 2 || !bytes.Equal(back[0], a[0]) || !bytes.Equal(back[1], a[1]) {
		t.Errorf("first frame resegments into %x", back)
	}
	if !bytes.Equal(sent[1], b[0]) {
		t.Errorf("second frame %x, want %x", sent[1], b[0])
	}
	if st := r.ports[1].Stats(); st.TxPackets != 3 {
		t.Errorf("port 1 sent %d", st.TxPackets)
	}

	// Bad: the partial checksum not at the UDP header; a wrong UDP length.
	bad := o
	bad.CsumStart = 14
	r.ports[2].InjectOffload(bad, enc)
	dptest.Eventually(t, "pop error counted", func() bool { pop, _ := r.dp.TunnelErrors(); return pop == 1 })
	short := append([]byte(nil), enc...)
	binary.BigEndian.PutUint16(short[14+20+4:], 100)
	r.ports[2].InjectOffload(o, short)
	dptest.Eventually(t, "pop error counted", func() bool { pop, _ := r.dp.TunnelErrors(); return pop == 2 })
}

// gsoFrame is the UDP GSO frame carrying inner behind h's outer headers,
// every inner frame as long as the first but the last.
func gsoFrame(t testing.TB, h *tunnel.Header, inner [][]byte) ([]byte, packet.Offload) {
	t.Helper()
	hc := *h
	hc.Csum = false
	tpl, err := tunnel.Build(&hc, nil)
	if err != nil {
		t.Fatal(err)
	}
	udp := 14 + 20
	if !h.Dst.Is4() {
		udp = 14 + 40
	}
	b := append([]byte(nil), tpl[:udp+8]...)
	for _, f := range inner {
		b = append(b, tpl[udp+8:]...)
		b = append(b, f...)
	}
	if udp == 34 {
		binary.BigEndian.PutUint16(b[16:], uint16(len(b)-14))
		b[24], b[25] = 0, 0
		binary.BigEndian.PutUint16(b[24:], offload.Checksum(b[14:34], 0))
	} else {
		binary.BigEndian.PutUint16(b[18:], uint16(len(b)-54))
	}
	binary.BigEndian.PutUint16(b[udp+4:], uint16(len(b)-udp))
	ps := tunnel.UDPPseudoSum(b[14:udp], udp == 34, len(b)-udp)
	binary.BigEndian.PutUint16(b[udp+6:], ^offload.Checksum(nil, ps))
	return b, packet.Offload{Flags: packet.NeedsCsum, GSO: packet.GSOUDPL4, GSOSize: uint16(len(tpl) - udp - 8 + len(inner[0])),
		HdrLen: uint16(udp + 8), CsumStart: uint16(udp), CsumOffset: 6}
}

// FuzzTnlGSO feeds the receive side's split and join arbitrary frames and
// segment sizes: it must refuse or cut them into datagrams inside the
// frame, never panic, and a super-frame it joins must segment back into
// the inner frames of the datagrams it joined.
func FuzzTnlGSO(f *testing.F) {
	h := gsoHeader(tunnel.KindGeneve, false)
	// Small seeds: the fuzzer's coverage-guided mutation of inputs of
	// kilobytes crawls.
	enc, o := gsoFrame(f, &h, tcpSegs(false, 40000, 3, 40, 20))
	f.Add(enc, o.GSOSize, o.CsumStart)
	h6 := gsoHeader(tunnel.KindVXLAN, true)
	enc6, o6 := gsoFrame(f, &h6, tcpSegs(true, 40000, 4, 24, 10))
	f.Add(enc6, o6.GSOSize, o6.CsumStart)
	f.Add(enc[:60], o.GSOSize, o.CsumStart)
	f.Fuzz(func(t *testing.T, frame []byte, size, csumStart uint16) {
		if len(frame) > packet.MaxFrame {
			return
		}
		o := packet.Offload{Flags: packet.NeedsCsum, GSO: packet.GSOUDPL4, GSOSize: size, CsumStart: csumStart, CsumOffset: 6}
		g, err := parseTnlGSO(frame, &o)
		if err != nil {
			return
		}
		buf := make([]byte, packet.MaxFrame)
		for i := 0; i < g.n; i++ {
			n := g.datagram(buf, i)
			if n != g.hdrLen+len(g.payload(i)) {
				t.Fatalf("datagram %d: %d bytes", i, n)
			}
			d := buf[:n]
			var do packet.Offload
			_, off, in, err := decap(d, &do, tunnel.KindGeneve)
			if err != nil {
				if _, off, in, err = decap(d, &do, tunnel.KindVXLAN); err != nil {
					continue
				}
			}
			innerLen := in
			first := append([]byte(nil), d[off:off+in]...)
			sbuf := make([]byte, packet.MaxFrame)
			copy(sbuf, first)
			segs, total, so := g.join(sbuf, sbuf[:innerLen], i, off-g.hdrLen)
			if segs < 1 || i+segs > g.n || total > len(sbuf) {
				t.Fatalf("join: %d datagrams, %d bytes", segs, total)
			}
			if segs == 1 {
				continue
			}
			back := resegment(t, sbuf[:total], so)
			if len(back) != segs || !bytes.Equal(back[0][so.HdrLen:], first[so.HdrLen:]) {
				t.Fatalf("joined %d datagrams, resegmented into %d", segs, len(back))
			}
			for j := 1; j < segs; j++ {
				c := g.payload(i + j)[off-g.hdrLen:]
				if !bytes.Equal(back[j][so.HdrLen:], c[so.HdrLen:]) {
					t.Fatalf("segment %d back %x, want the payload of %x", j, back[j], c)
				}
			}
		}
	})
}

// BenchmarkTunnelPush encapsulates a 64000-byte TSO super-frame over
// Geneve: segment by segment, or as UDP GSO frames.
func BenchmarkTunnelPush(b *testing.B) {
	for _, gso := range []bool{false, true} {
		b.Run(map[bool]string{false: "segments", true: "udpgso"}[gso], func(b *testing.B) {
			dp := newDatapath(nil, nil)
			defer dp.Close()
			table := newPortTable(map[uint32]*dpPort{})
			w := newWorker(dp, &dpPort{no: 1})
			t := resolveTnl(&TnlPush{Port: 3, OutPort: 2, Header: gsoHeader(tunnel.KindGeneve, false), GSO: gso}, table)
			sf, so := tsoFrame(false, 64000, 1398)
			p := packet.New()
			p.SetData(sf)
			p.Offload = so
			pkts := []*packet.Packet{p}
			b.ReportAllocs()
			b.SetBytes(int64(len(sf)))
			for i := 0; i < b.N; i++ {
				w.tnlPush(t, pkts, 0, table, 0)
				w.resetRx(0)
			}
		})
	}
}
