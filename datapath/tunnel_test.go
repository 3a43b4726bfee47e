package datapath

import (
	"bytes"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/govs/govs/datapath/conntrack"
	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev/offload"
	"github.com/govs/govs/netdev/tunnel"
)

// A frame from port 1 leaves port 2 in VXLAN, Geneve or GRE; the
// encapsulated frame coming back on port 2 is decapsulated for vport 3 and
// reaches port 1 again, with the outer headers in its key. Malformed
// outer headers are dropped and counted.
func TestTunnelPushPop(t *testing.T) {
	for _, kind := range []tunnel.Kind{tunnel.KindVXLAN, tunnel.KindGeneve, tunnel.KindGRE} {
		t.Run(kind.String(), func(t *testing.T) {
			r := newRig(t, 2)
			vport := tunnel.NewVport("vp", kind)
			if err := r.dp.AddPort(3, vport); err != nil {
				t.Fatal(err)
			}
			h := tunnel.Header{Kind: kind, EthDst: dptest.MAC("02:00:00:00:00:02"), EthSrc: dptest.MAC("02:00:00:00:00:01"),
				Src: netip.MustParseAddr("172.31.0.1"), Dst: netip.MustParseAddr("172.31.0.2"), TTL: 64, DF: true,
				Key: 5, KeyPresent: true, Csum: kind == tunnel.KindGeneve}
			switch kind {
			case tunnel.KindVXLAN:
				h.DstPort = 4789
			case tunnel.KindGeneve:
				// One option, OVN's (class 0x102, type 0x80, 4 bytes).
				h.DstPort, h.Options = 6081, []byte{0x01, 0x02, 0x80, 0x01, 0x00, 0x0a, 0x00, 0x01}
			}
			var popped popRecorder
			inner, enc := encapOne(t, r, h, &popped)
			got, in, err := tunnel.Parse(enc)
			if err != nil || !bytes.Equal(in, inner) || got.Key != 5 || got.Dst != h.Dst || got.Src != h.Src {
				t.Fatalf("encapsulated frame %x: %+v, %v", enc, got, err)
			}
			r.ports[2].Inject(enc)
			dptest.Eventually(t, "decapsulated frame on port 1", func() bool { return len(r.ports[1].Sent()) == 1 })
			if s := r.ports[1].Sent()[0]; !bytes.Equal(s, inner) {
				t.Fatalf("decapsulated %x, want %x", s, inner)
			}
			k, _ := popped.last()
			if k.TunID != 5 || netip.AddrFrom16(k.TunSrc).Unmap() != h.Src || netip.AddrFrom16(k.TunDst).Unmap() != h.Dst || k.TunTTL != 64 {
				t.Errorf("key after tnl_pop: %v", k)
			}
			if !bytes.Equal(k.Options(), h.Options) {
				t.Errorf("key options %x, want %x", k.Options(), h.Options)
			}
			if kind == tunnel.KindGeneve {
				if want := "geneve({class=0x102,type=0x80,len=4,0xa0001}),"; !strings.Contains(k.String(), want) {
					t.Errorf("key %s, want %s in it", k, want)
				}
				// An option longer than what is left: dropped.
				bad := h
				bad.Options = []byte{0x01, 0x02, 0x80, 0x02, 0, 0, 0, 1}
				b, err := tunnel.Build(&bad, inner)
				if err != nil {
					t.Fatal(err)
				}
				r.ports[2].Inject(b)
				dptest.Eventually(t, "bad options counted", func() bool { pop, _ := r.dp.TunnelErrors(); return pop == 1 })
				r.dp.tnlPopErrors.Store(0)
			}
			// Truncated outer headers: dropped, counted, nothing sent.
			r.ports[2].Inject(enc[:40])
			dptest.Eventually(t, "pop error counted", func() bool { pop, _ := r.dp.TunnelErrors(); return pop == 1 })
			if n := len(r.ports[1].Sent()); n != 1 {
				t.Errorf("port 1 sent %d frames, want 1", n)
			}
		})
	}
}

// encapOne has r's upcall push port 1's packets with h out of port 2 and
// pop port 2's into vport 3 (popped records its keys), sends frame() in on
// port 1 and returns it and what port 2 sent.
func encapOne(t *testing.T, r *rig, h tunnel.Header, popped *popRecorder) (inner, enc []byte) {
	t.Helper()
	r.dp.SetUpcall(popped.upcall(&TnlPush{Port: 3, OutPort: 2, Header: h, Nested: Actions{Output(2)}}))
	inner = frame()
	r.ports[1].Inject(inner)
	dptest.Eventually(t, "encapsulated frame on port 2", func() bool { return len(r.ports[2].Sent()) == 1 })
	return inner, r.ports[2].Sent()[0]
}

// popRecorder's upcall pushes port 1's packets with push (if not nil),
// pops port 2's into vport 3, and records vport 3's keys before sending
// those packets to port 1.
type popRecorder struct {
	mu   sync.Mutex
	keys []flow.Key
}

func (p *popRecorder) upcall(push *TnlPush) UpcallFunc {
	return func(batch []Upcall) {
		for i := range batch {
			u := &batch[i]
			u.Mask = flow.Exact()
			switch u.Key.InPort {
			case 1:
				if push != nil {
					u.Actions = append(u.Actions, TnlPushAction(*push))
				}
			case 2:
				u.Actions = append(u.Actions, TnlPop(3))
			case 3:
				p.mu.Lock()
				p.keys = append(p.keys, u.Key)
				p.mu.Unlock()
				u.Actions = append(u.Actions, Output(1))
			}
		}
	}
}

// last returns the last key recorded and how many were.
func (p *popRecorder) last() (flow.Key, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.keys) == 0 {
		return flow.Key{}, 0
	}
	return p.keys[len(p.keys)-1], len(p.keys)
}

// FuzzDecap feeds tnl_pop's decapsulation arbitrary frames and offload
// metadata: it must refuse or return an inner frame inside the outer one,
// with any partial checksum inside the inner frame, never panic.
func FuzzDecap(f *testing.F) {
	inner := frame()
	for _, kind := range []tunnel.Kind{tunnel.KindVXLAN, tunnel.KindGeneve, tunnel.KindGRE} {
		h := tunnel.Header{Kind: kind, Src: netip.MustParseAddr("172.31.0.1"), Dst: netip.MustParseAddr("172.31.0.2"),
			TTL: 64, Key: 5, KeyPresent: true, DstPort: 4789, Csum: true}
		if kind == tunnel.KindGeneve {
			h.DstPort, h.Options = 6081, []byte{1, 2, 0x80, 1, 0, 0, 0, 1}
		}
		b, _ := tunnel.Build(&h, inner)
		f.Add(b, uint8(kind), uint8(0), uint16(0), uint16(0))
		// A partial inner UDP checksum, as a local sender leaves it.
		f.Add(b, uint8(kind), uint8(packet.NeedsCsum), uint16(len(b)-len(inner)+34), uint16(6))
	}
	// legacy_l3 GRE: the inner packet is IPv4, no Ethernet header.
	h := tunnel.Header{Kind: tunnel.KindGRE, Src: netip.MustParseAddr("172.31.0.1"), Dst: netip.MustParseAddr("172.31.0.2"),
		TTL: 64, Proto: 0x0800}
	b, _ := tunnel.Build(&h, inner[14:])
	f.Add(b, uint8(tunnel.KindGRE), uint8(0), uint16(0), uint16(0))
	f.Add(b, uint8(tunnel.KindGRE), uint8(packet.NeedsCsum), uint16(len(b)-len(inner)+14+20), uint16(6))
	f.Fuzz(func(t *testing.T, b []byte, kind, flags uint8, start, off uint16) {
		o := packet.Offload{Flags: packet.Flag(flags) & packet.NeedsCsum, CsumStart: start, CsumOffset: off}
		if flags&0x80 != 0 {
			o.GSO, o.GSOSize, o.HdrLen = packet.GSOTCPv4, 1400, start+20
		}
		frame := append([]byte(nil), b...)
		_, at, n, err := decap(frame, &o, tunnel.Kind(kind%4))
		if err != nil {
			return
		}
		if at < 0 || n < 0 || at+n > len(frame) {
			t.Fatalf("inner [%d:%d] of %d bytes", at, at+n, len(frame))
		}
		if o.GSO != packet.GSONone && (o.HdrLen == 0 || int(o.HdrLen) > n) {
			t.Fatalf("super-frame headers %d of a %d-byte inner frame", o.HdrLen, n)
		}
		if o.Flags&packet.NeedsCsum != 0 && int(o.CsumStart)+int(o.CsumOffset)+2 > n {
			t.Fatalf("partial checksum at %d+%d outside the %d-byte inner frame", o.CsumStart, o.CsumOffset, n)
		}
	})
}

// The kernel's vxlan device, with checksum offload, sends the inner TCP
// checksum partial and the outer UDP checksum computed as if it were
// complete: decapsulation completes the inner one and verifies the outer.
func TestDecapLocalChecksumOffload(t *testing.T) {
	inner := dptest.Frame{Src: dptest.MAC("02:00:00:00:00:01"), Dst: dptest.MAC("02:00:00:00:00:02"),
		IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
		TCP:  &dptest.TCP{Src: 40000, Dst: 5201, Flags: dptest.SYN}, Payload: []byte("hello")}.Checksummed()
	h := tunnel.Header{Kind: tunnel.KindVXLAN, Src: netip.MustParseAddr("172.31.0.2"), Dst: netip.MustParseAddr("172.31.0.1"),
		TTL: 64, SrcPort: 40000, DstPort: 4789, Key: 5, Csum: true}
	enc, err := tunnel.Build(&h, inner)
	if err != nil {
		t.Fatal(err)
	}
	hl := len(enc) - len(inner)
	tcp := enc[hl+34:]
	// The partial checksum: the pseudo-header sum, not complemented.
	ph := append(append(append([]byte{}, inner[26:30]...), inner[30:34]...), 0, 6, 0, byte(len(tcp)))
	seed := ^offload.Checksum(ph, 0)
	tcp[16], tcp[17] = byte(seed>>8), byte(seed)
	o := packet.Offload{Flags: packet.NeedsCsum, CsumStart: uint16(hl + 34), CsumOffset: 16}
	_, off, n, err := decap(enc, &o, tunnel.KindVXLAN)
	if err != nil {
		t.Fatalf("decap: %v", err)
	}
	if !bytes.Equal(enc[off:off+n], inner) || o.Flags&packet.NeedsCsum != 0 {
		t.Errorf("inner %x (offload %+v), want %x", enc[off:off+n], o, inner)
	}
}

// tnl_push is printed as OVS 3.1's format_odp_tnl_push_action prints its
// header template (lib/odp-util.c).
func TestTnlPushString(t *testing.T) {
	mac := dptest.MAC
	ip := netip.MustParseAddr
	for _, c := range []struct {
		h    tunnel.Header
		want string
	}{
		{tunnel.Header{Kind: tunnel.KindVXLAN, EthDst: mac("02:00:00:00:00:20"), EthSrc: mac("02:00:00:00:00:10"),
			Src: ip("172.31.0.1"), Dst: ip("172.31.0.2"), TTL: 64, DF: true, DstPort: 4789, SrcPort: 1234, Key: 0x7b, KeyPresent: true},
			"clone(tnl_push(tnl_port(4),header(size=50,type=4,eth(dst=02:00:00:00:00:20,src=02:00:00:00:00:10,dl_type=0x0800)," +
				"ipv4(src=172.31.0.1,dst=172.31.0.2,proto=17,tos=0,ttl=64,frag=0x4000),udp(src=0,dst=4789,csum=0x0)," +
				"vxlan(flags=0x8000000,vni=0x7b)),out_port(2)),1)"},
		{tunnel.Header{Kind: tunnel.KindGeneve, EthDst: mac("02:00:00:00:00:20"), EthSrc: mac("02:00:00:00:00:10"),
			Src: ip("2001:db8::1"), Dst: ip("2001:db8::2"), TOS: 0x10, TTL: 63, DstPort: 6081, Key: 5, KeyPresent: true, OAM: true,
			Options: []byte{0x01, 0x02, 0x80, 0x01, 0x00, 0x0a, 0x00, 0x01}},
			"clone(tnl_push(tnl_port(4),header(size=78,type=5,eth(dst=02:00:00:00:00:20,src=02:00:00:00:00:10,dl_type=0x86dd)," +
				"ipv6(src=2001:db8::1,dst=2001:db8::2,label=0,proto=17,tclass=0x10,hlimit=63),udp(src=0,dst=6081,csum=0xffff)," +
				"geneve(oam,crit,vni=0x5,options({class=0x102,type=0x80,len=4,0xa0001}))),out_port(2)),1)"},
		{tunnel.Header{Kind: tunnel.KindGeneve, EthDst: mac("02:00:00:00:00:20"), EthSrc: mac("02:00:00:00:00:10"),
			Src: ip("172.31.0.1"), Dst: ip("172.31.0.2"), TOS: 0x20, TTL: 64, DstPort: 6081, Key: 0, KeyPresent: true, Csum: true},
			"clone(tnl_push(tnl_port(4),header(size=50,type=5,eth(dst=02:00:00:00:00:20,src=02:00:00:00:00:10,dl_type=0x0800)," +
				"ipv4(src=172.31.0.1,dst=172.31.0.2,proto=17,tos=0x20,ttl=64,frag=0x0),udp(src=0,dst=6081,csum=0xffff)," +
				"geneve(vni=0x0)),out_port(2)),1)"},
		{tunnel.Header{Kind: tunnel.KindGRE, EthDst: mac("02:00:00:00:00:20"), EthSrc: mac("02:00:00:00:00:10"),
			Src: ip("172.31.0.1"), Dst: ip("172.31.0.2"), TTL: 64, DF: true, Key: 5, KeyPresent: true, Csum: true, SeqPresent: true, Seq: 9},
			"clone(tnl_push(tnl_port(4),header(size=50,type=3,eth(dst=02:00:00:00:00:20,src=02:00:00:00:00:10,dl_type=0x0800)," +
				"ipv4(src=172.31.0.1,dst=172.31.0.2,proto=47,tos=0,ttl=64,frag=0x4000),gre((flags=0xb000,proto=0x6558),csum=0x0,key=0x5,seq=0x0))," +
				"out_port(2)),1)"},
		{tunnel.Header{Kind: tunnel.KindGRE, EthDst: mac("02:00:00:00:00:20"), EthSrc: mac("02:00:00:00:00:10"),
			Src: ip("fd31::1"), Dst: ip("fd31::2"), TTL: 64},
			"clone(tnl_push(tnl_port(4),header(size=58,type=109,eth(dst=02:00:00:00:00:20,src=02:00:00:00:00:10,dl_type=0x86dd)," +
				"ipv6(src=fd31::1,dst=fd31::2,label=0,proto=47,tclass=0x0,hlimit=64),gre((flags=0x0,proto=0x6558)))," +
				"out_port(2)),1)"},
	} {
		a := TnlPushAction(TnlPush{Port: 4, OutPort: 2, Header: c.h, Nested: Actions{Output(1)}})
		if got := a.String(); got != c.want {
			t.Errorf("%v:\n got %s\nwant %s", c.h.Kind, got, c.want)
		}
		// The last action: no clone.
		want := strings.TrimSuffix(strings.TrimPrefix(c.want, "clone("), ")")
		if got := (Actions{Output(3), a}).String(); got != "3,"+want {
			t.Errorf("%v last:\n got %s\nwant 3,%s", c.h.Kind, got, want)
		}
		// dump-flows --names names the tunnel port, the egress port
		// and the nested outputs.
		names := map[uint32]string{1: "ul", 2: "br-phy", 3: "vif", 4: "vxlan_sys_4789"}
		want = strings.NewReplacer("tnl_port(4)", "tnl_port(vxlan_sys_4789)", "out_port(2)),1", "out_port(br-phy)),ul").Replace(want)
		if got := (Actions{Output(3), a}).Format(func(no uint32) string { return names[no] }); got != "vif,"+want {
			t.Errorf("%v named:\n got %s\nwant vif,%s", c.h.Kind, got, want)
		}
	}
	if got := (Actions{TnlPop(4)}).Format(func(uint32) string { return "genev_sys_6081" }); got != "tnl_pop(genev_sys_6081)" {
		t.Errorf("tnl_pop named: %s", got)
	}
}

// ct() after tnl_pop: the recirculated packet is looked up again with
// the tunnel's in_port and the outer headers still in its key, as OVS's
// recirculation keeps the packet's metadata, so that a stateful ACL on
// the decapsulated side sees where the packet came from.
func TestTunnelPopCTRecirc(t *testing.T) {
	r := newRig(t, 2)
	if err := r.dp.AddPort(4, tunnel.NewVport("vp", tunnel.KindGeneve)); err != nil {
		t.Fatal(err)
	}
	h := tunnel.Header{Kind: tunnel.KindGeneve, EthDst: dptest.MAC("02:00:00:00:00:02"), EthSrc: dptest.MAC("02:00:00:00:00:01"),
		Src: netip.MustParseAddr("172.31.0.1"), Dst: netip.MustParseAddr("172.31.0.2"), TTL: 64, Key: 5, KeyPresent: true,
		DstPort: 6081, Options: []byte{0x01, 0x02, 0x80, 0x01, 0x00, 0x0a, 0x00, 0x01}}
	var mu sync.Mutex
	var after []flow.Key // keys seen after ct
	r.dp.SetUpcall(UpcallFunc(func(batch []Upcall) {
		for i := range batch {
			u := &batch[i]
			u.Mask = flow.Exact()
			k := &u.Key
			switch {
			case k.InPort == 1:
				u.Actions = append(u.Actions, TnlPop(4))
			case k.RecircID == 0:
				u.Actions = append(u.Actions, CT(conntrack.Action{Zone: 1, Commit: true}), Recirc(1))
			default:
				mu.Lock()
				after = append(after, *k)
				mu.Unlock()
				if k.InPort == 4 && k.TunID == 5 && k.CtState&conntrack.StateTracked != 0 {
					u.Actions = append(u.Actions, Output(2))
				}
			}
		}
	}))
	inner := tcpFrame(ipA, ipB, 40000, 80, dptest.SYN, 1, 0)
	enc, err := tunnel.Build(&h, inner)
	if err != nil {
		t.Fatal(err)
	}
	r.ports[1].Inject(enc)
	dptest.Eventually(t, "the packet through ct on port 2", func() bool { return len(r.ports[2].Sent()) == 1 })
	if s := r.ports[2].Sent()[0]; !bytes.Equal(s, inner) {
		t.Errorf("sent %x, want %x", s, inner)
	}
	mu.Lock()
	k := after[0]
	mu.Unlock()
	if k.InPort != 4 || k.TunID != 5 || netip.AddrFrom16(k.TunSrc).Unmap() != h.Src || netip.AddrFrom16(k.TunDst).Unmap() != h.Dst ||
		k.TunTpDst != 6081 || !bytes.Equal(k.Options(), h.Options) || k.CtState&conntrack.StateNew == 0 {
		t.Errorf("key after ct: %v", k)
	}
	// The connection's next packet finds the flows installed.
	r.ports[1].Inject(enc)
	dptest.Eventually(t, "second packet on port 2", func() bool { return len(r.ports[2].Sent()) == 2 })
}

// longGeneveOpts is OVN's option, then options of 124 and 112 bytes of
// data: 252 bytes, the most a Geneve header carries.
func longGeneveOpts() []byte {
	opts := flow.AppendGeneveOpt(nil, flow.GeneveOpt{Class: 0x102, Type: 0x80, Data: []byte{0, 0xa, 0, 1}})
	opts = flow.AppendGeneveOpt(opts, flow.GeneveOpt{Class: 0xffff, Type: 1, Data: bytes.Repeat([]byte{0x11}, 124)})
	opts = flow.AppendGeneveOpt(opts, flow.GeneveOpt{Class: 0xffff, Type: 2, Data: bytes.Repeat([]byte{0x22}, 112)})
	return opts
}

// Geneve options up to the 252 bytes a Geneve header can carry (OVS's
// TLV_TOT_OPT_SIZE) are decapsulated into the key whole, and keys that
// differ only in the last option byte are told apart.
func TestTunnelPopLongGeneveOptions(t *testing.T) {
	r := newRig(t, 2)
	if err := r.dp.AddPort(3, tunnel.NewVport("vp", tunnel.KindGeneve)); err != nil {
		t.Fatal(err)
	}
	var popped popRecorder
	r.dp.SetUpcall(popped.upcall(nil))
	opts := longGeneveOpts()
	if len(opts) != flow.TunOptsMax {
		t.Fatalf("%d bytes of options", len(opts))
	}
	inner := frame()
	for i, last := range []byte{0x22, 0x23} {
		opts[len(opts)-1] = last
		h := tunnel.Header{Kind: tunnel.KindGeneve, EthDst: dptest.MAC("02:00:00:00:00:02"), EthSrc: dptest.MAC("02:00:00:00:00:01"),
			Src: netip.MustParseAddr("172.31.0.1"), Dst: netip.MustParseAddr("172.31.0.2"), TTL: 64, Key: 5, KeyPresent: true,
			DstPort: 6081, Options: opts}
		enc, err := tunnel.Build(&h, inner)
		if err != nil {
			t.Fatal(err)
		}
		r.ports[2].Inject(enc)
		dptest.Eventually(t, "decapsulated frame on port 1", func() bool { return len(r.ports[1].Sent()) == i+1 })
		k, n := popped.last()
		if n != i+1 || !bytes.Equal(k.Options(), opts) {
			t.Errorf("%d upcalls; key options %x, want %x", n, k.Options(), opts)
		}
	}
	if pop, _ := r.dp.TunnelErrors(); pop != 0 {
		t.Errorf("%d pop errors", pop)
	}
}

// tnl_push with 252 bytes of Geneve options: the outer headers (302
// bytes) are more than a packet's headroom; the frame makes room.
func TestTunnelPushLongGeneveOptions(t *testing.T) {
	r := newRig(t, 2)
	if err := r.dp.AddPort(3, tunnel.NewVport("vp", tunnel.KindGeneve)); err != nil {
		t.Fatal(err)
	}
	opts := longGeneveOpts()
	h := tunnel.Header{Kind: tunnel.KindGeneve, EthDst: dptest.MAC("02:00:00:00:00:02"), EthSrc: dptest.MAC("02:00:00:00:00:01"),
		Src: netip.MustParseAddr("172.31.0.1"), Dst: netip.MustParseAddr("172.31.0.2"), TTL: 64, Key: 5, KeyPresent: true,
		DstPort: 6081, Options: opts}
	var calls atomic.Int64
	r.dp.SetUpcall(static(Actions{TnlPushAction(TnlPush{Port: 3, OutPort: 2, Header: h, Nested: Actions{Output(2)}})}, &calls))
	inner := frame()
	r.ports[1].Inject(inner, inner)
	dptest.Eventually(t, "2 encapsulated frames on port 2", func() bool { return len(r.ports[2].Sent()) == 2 })
	for _, enc := range r.ports[2].Sent() {
		got, in, err := tunnel.Parse(enc)
		if err != nil || !bytes.Equal(in, inner) || !bytes.Equal(got.Options, opts) || len(enc) != 302+len(inner) {
			t.Fatalf("encapsulated frame of %d bytes: %+v, %v", len(enc), got, err)
		}
	}
	if _, push := r.dp.TunnelErrors(); push != 0 {
		t.Errorf("%d push errors", push)
	}
}
