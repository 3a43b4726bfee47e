package datapath

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev"
	"github.com/govs/govs/netdev/offload"
	"github.com/govs/govs/netdev/tunnel"
)

// groRig is a switch that decapsulates Geneve from port 1 for vport 4 and
// outputs what comes out of the tunnel to port 2; frames from port 3 go
// to port 2 as they are.
type groRig struct {
	*rig
	h tunnel.Header
}

func newGRORig(t *testing.T, off netdev.Offloads) *groRig {
	r := &groRig{rig: newRig(t, 3)}
	if err := r.dp.AddPort(4, tunnel.NewVport("vp", tunnel.KindGeneve)); err != nil {
		t.Fatal(err)
	}
	r.ports[2].SetOffloads(off)
	r.h = tunnel.Header{Kind: tunnel.KindGeneve, EthDst: dptest.MAC("02:00:00:00:00:02"), EthSrc: dptest.MAC("02:00:00:00:00:01"),
		Src: netip.MustParseAddr("172.31.0.1"), Dst: netip.MustParseAddr("172.31.0.2"), TTL: 64, Key: 5, KeyPresent: true,
		SrcPort: 40000, DstPort: 6081}
	// Flows on the in_port alone: every segment of a port counts in one.
	m := flow.Mask{InPort: ^uint32(0), RecircID: ^uint32(0)}
	r.dp.SetUpcall(UpcallFunc(func(batch []Upcall) {
		for i := range batch {
			u := &batch[i]
			u.Mask = m
			switch u.Key.InPort {
			case 1:
				u.Actions = append(u.Actions, TnlPop(4))
			case 3, 4:
				u.Actions = append(u.Actions, Output(2))
			}
		}
	}))
	return r
}

// encap returns the Geneve packets carrying frames.
func (r *groRig) encap(t *testing.T, frames ...[]byte) [][]byte {
	var out [][]byte
	for _, f := range frames {
		b, err := tunnel.Build(&r.h, f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// send injects frames on port in as one batch and waits for port 2 to
// have sent want frames in all.
func (r *groRig) send(t *testing.T, in uint32, want int, frames ...[]byte) {
	t.Helper()
	if in == 1 {
		frames = r.encap(t, frames...)
	}
	r.ports[in].Inject(frames...)
	dptest.Eventually(t, "frames on port 2", func() bool { return len(r.ports[2].Sent()) >= want })
	if n := len(r.ports[2].Sent()); n != want {
		t.Fatalf("port 2 sent %d frames, want %d", n, want)
	}
}

// tcpSeg is segment i of a connection from source port sport, mss bytes
// of payload each but pay for the last, PSH on it.
func tcpSeg(v6 bool, sport uint16, i, n, mss, pay int) []byte {
	f := dptest.Frame{Src: dptest.MAC("02:00:00:00:00:0a"), Dst: dptest.MAC("02:00:00:00:00:0b"),
		TCP: &dptest.TCP{Src: sport, Dst: 5201, Flags: dptest.ACK, Seq: 1000 + uint32(i*mss), Ack: 7}}
	if v6 {
		f.IPv6 = &dptest.IPv6{Src: netip.MustParseAddr("fd00::1"), Dst: netip.MustParseAddr("fd00::2")}
	} else {
		f.IPv4 = &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"), ID: uint16(100 + i)}
	}
	l := mss
	if i == n-1 {
		l = pay
		f.TCP.Flags |= dptest.PSH
	}
	f.Payload = make([]byte, l)
	for j := range f.Payload {
		f.Payload[j] = byte(i*mss + j)
	}
	return f.Checksummed()
}

func tcpSegs(v6 bool, sport uint16, n, mss, pay int) [][]byte {
	var segs [][]byte
	for i := 0; i < n; i++ {
		segs = append(segs, tcpSeg(v6, sport, i, n, mss, pay))
	}
	return segs
}

// resegment cuts a super-frame sent with o as the kernel would.
func resegment(t *testing.T, b []byte, o packet.Offload) [][]byte {
	t.Helper()
	var s offload.Segmenter
	if err := s.Reset(b, &o); err != nil {
		t.Fatalf("super-frame %+v: %v", o, err)
	}
	var out [][]byte
	for {
		buf := make([]byte, packet.MaxFrame)
		n := s.Next(buf)
		if n == 0 {
			return out
		}
		out = append(out, buf[:n])
	}
}

// Segments of one connection that come out of a tunnel in one batch
// leave a port that takes TSO as one super-frame, which the kernel's
// segmentation turns back into the very segments; the flow counts every
// segment, the port one frame.
func TestGROCoalesces(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		name := map[bool]string{false: "IPv4", true: "IPv6"}[v6]
		t.Run(name, func(t *testing.T) {
			r := newGRORig(t, netdev.Offloads{Csum: true, TSO4: true, TSO6: true})
			// The flows' upcalls first: the packet of an upcall is not
			// counted in its flow.
			r.send(t, 1, 1, tcpSeg(v6, 1, 0, 1, 100, 100))
			segs := tcpSegs(v6, 40000, 11, 1400, 500)
			r.send(t, 1, 2, segs...)
			got := r.ports[2].Sent()[1]
			o := r.ports[2].SentOffloads()[1]
			gso, hl := packet.GSOTCPv4, 14+20+20
			if v6 {
				gso, hl = packet.GSOTCPv6, 14+40+20
			}
			if want := (packet.Offload{Flags: packet.NeedsCsum, GSO: gso, HdrLen: uint16(hl), GSOSize: 1400,
				CsumStart: uint16(hl - 20), CsumOffset: 16}); o != want {
				t.Fatalf("offload %+v, want %+v", o, want)
			}
			back := resegment(t, got, o)
			if len(back) != len(segs) {
				t.Fatalf("%d segments back, want %d", len(back), len(segs))
			}
			for i := range segs {
				if !bytes.Equal(back[i], segs[i]) {
					t.Fatalf("segment %d back:\n%x\nwant\n%x", i, back[i], segs[i])
				}
			}
			for _, fi := range r.dp.Flows() {
				if fi.Key.InPort == 4 && fi.Packets != 11 {
					t.Errorf("flow from the vport counted %d packets, want 11", fi.Packets)
				}
			}
			if st := r.ports[2].Stats(); st.TxPackets != 2 {
				t.Errorf("port 2 sent %d frames, want 2", st.TxPackets)
			}
			if segs, frames := r.dp.GRO(); segs != 11 || frames != 1 {
				t.Errorf("GRO counted %d segments in %d frames, want 11 in 1", segs, frames)
			}
		})
	}
}

// What may not be joined is sent as it came: a segment with a bad
// checksum, one out of sequence, one after PSH, other connections' in
// between, segments that were not decapsulated, and anything to a port
// that takes no TSO.
func TestGROKeepsApart(t *testing.T) {
	t.Run("runs", func(t *testing.T) {
		r := newGRORig(t, netdev.Offloads{Csum: true, TSO4: true, TSO6: true})
		r.send(t, 1, 1, tcpSeg(false, 1, 0, 1, 100, 100))
		a := tcpSegs(false, 40000, 8, 1000, 1000)
		b := tcpSegs(false, 40001, 2, 1000, 300)
		bad := append([]byte(nil), a[2]...)
		bad[len(bad)-1] ^= 0xff
		short := tcpSeg(false, 40002, 0, 3, 1000, 0)
		short = short[:len(short)-1]                     // IP length says one byte more
		pushed := tcpSeg(false, 40003, 0, 1, 1000, 1000) // PSH set
		next := tcpSeg(false, 40003, 1, 3, 1000, 1000)
		in := [][]byte{a[0], a[1], bad, a[3], a[4], b[0], b[1], a[6], a[5], a[7], short, pushed, next}
		want := []int{2, 1, 2, 2, 1, 1, 1, 1, 1, 1} // segments per frame sent
		r.send(t, 1, 1+len(want), in...)
		sent, offs := r.ports[2].Sent()[1:], r.ports[2].SentOffloads()[1:]
		k := 0
		for i, n := range want {
			if n == 1 {
				if offs[i].GSO != packet.GSONone || !bytes.Equal(sent[i], in[k]) {
					t.Errorf("frame %d: %x (%+v), want %x as it came", i, sent[i], offs[i], in[k])
				}
			} else if back := resegment(t, sent[i], offs[i]); len(back) != n || !bytes.Equal(back[0], in[k]) || !bytes.Equal(back[n-1], in[k+n-1]) {
				t.Errorf("frame %d: %d segments, want %d: %x", i, len(back), n, back)
			}
			k += n
		}
	})
	t.Run("not decapsulated", func(t *testing.T) {
		r := newGRORig(t, netdev.Offloads{Csum: true, TSO4: true, TSO6: true})
		r.send(t, 3, 5, tcpSegs(false, 40000, 5, 1000, 1000)...)
	})
	t.Run("no TSO", func(t *testing.T) {
		r := newGRORig(t, netdev.Offloads{Csum: true, TSO6: true})
		r.send(t, 1, 5, tcpSegs(false, 40000, 5, 1000, 1000)...)
	})
}

// BenchmarkGRO measures coalescing a batch of 32 decapsulated segments.
func BenchmarkGRO(b *testing.B) {
	dp := newDatapath(nil, nil)
	defer dp.Close()
	vp := &dpPort{no: 3, tunnel: true}
	table := newPortTable(map[uint32]*dpPort{3: vp})
	w := newWorker(dp, &dpPort{no: 1})
	segs := tcpSegs(false, 40000, 32, 1400, 1400)
	pkts := make([]*packet.Packet, 32)
	for i, s := range segs {
		pkts[i] = packet.New()
		pkts[i].SetData(s)
		pkts[i].InPort = 3
	}
	q := make([]*packet.Packet, 32)
	b.ReportAllocs()
	b.SetBytes(int64(32 * len(segs[0])))
	for i := 0; i < b.N; i++ {
		copy(q, pkts)
		out := w.coalesce(q, offloadCaps{tso4: true}, table)
		if len(out) != 1 {
			b.Fatalf("%d frames", len(out))
		}
		w.resetRx(0)
	}
}

// FuzzGRO feeds coalescing two arbitrary decapsulated frames after a
// valid segment: it must never panic, and a super-frame it builds must
// segment back into the frames it joined.
func FuzzGRO(f *testing.F) {
	segs := tcpSegs(false, 40000, 3, 1000, 500)
	f.Add(segs[1], segs[2])
	s6 := tcpSegs(true, 40000, 3, 1000, 500)
	f.Add(s6[1], s6[2])
	f.Add(segs[1][:60], []byte{})
	dp := newDatapath(nil, nil)
	defer dp.Close()
	table := newPortTable(map[uint32]*dpPort{3: {no: 3, tunnel: true}})
	w := newWorker(dp, &dpPort{no: 1})
	f.Fuzz(func(t *testing.T, b, c []byte) {
		head := segs[0]
		if len(b) > 14 && b[12] == 0x86 {
			head = s6[0]
		}
		in := [][]byte{head, b, c}
		pkts := make([]*packet.Packet, 0, 3)
		for _, d := range in {
			if len(d) > packet.MaxFrame {
				return
			}
			p := packet.New()
			p.SetData(d)
			p.InPort = 3
			pkts = append(pkts, p)
		}
		out := w.coalesce(pkts, offloadCaps{tso4: true, tso6: true}, table)
		k := 0
		for _, p := range out {
			if p.Offload.GSO == packet.GSONone {
				k++
				continue
			}
			back := resegment(t, p.Data(), p.Offload)
			for _, s := range back {
				if k >= len(in) || !bytes.Equal(s[54:], in[k][len(in[k])-len(s)+54:]) {
					t.Fatalf("segment %d back %x, want the payload of %x", k, s, in[min(k, len(in)-1)])
				}
				k++
			}
		}
		if k != len(in) {
			t.Fatalf("%d frames back, want %d", k, len(in))
		}
		w.resetRx(0)
	})
}
