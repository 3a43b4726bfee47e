package conntrack

import (
	"encoding/binary"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govs/govs/datapath/dptest"
)

// clock is a settable test clock.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() int64              { return c.ns.Load() }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func newTracker(t testing.TB) (*Tracker, *clock) {
	c := &clock{}
	c.ns.Store(1)
	tr := New(Config{Clock: c.now})
	t.Cleanup(tr.Close)
	return tr, c
}

var (
	macA = dptest.MAC("02:00:00:00:00:01")
	macB = dptest.MAC("02:00:00:00:00:02")
)

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

// tcp4 builds a TCP/IPv4 frame with valid checksums.
func tcp4(src, dst string, sport, dport uint16, flags uint16, seq, ack uint32, payload string) []byte {
	f := dptest.Frame{Dst: macB, Src: macA,
		IPv4:    &dptest.IPv4{Src: ip(src), Dst: ip(dst)},
		TCP:     &dptest.TCP{Src: sport, Dst: dport, Flags: flags, Seq: seq, Ack: ack},
		Payload: []byte(payload)}
	return fixCsum(f.Bytes())
}

// udp4 builds a UDP frame with a valid checksum, over IPv6 if the
// addresses are IPv6 ones.
func udp4(src, dst string, sport, dport uint16) []byte {
	f := dptest.Frame{Dst: macB, Src: macA, UDP: &dptest.UDP{Src: sport, Dst: dport}, Payload: []byte("data")}
	if ip(src).Is6() {
		f.IPv6 = &dptest.IPv6{Src: ip(src), Dst: ip(dst)}
	} else {
		f.IPv4 = &dptest.IPv4{Src: ip(src), Dst: ip(dst)}
	}
	return f.Checksummed()
}

func udp6(src, dst string, sport, dport uint16) []byte { return udp4(src, dst, sport, dport) }

// icmp4 builds an ICMP message with identifier id and the given payload.
func icmp4(src, dst string, typ, code uint8, id uint16, payload []byte) []byte {
	f := dptest.Frame{Dst: macB, Src: macA,
		IPv4:    &dptest.IPv4{Src: ip(src), Dst: ip(dst)},
		ICMP:    &dptest.ICMP{Type: typ, Code: code},
		Payload: payload}
	b := f.Bytes()
	binary.BigEndian.PutUint16(b[14+20+4:], id)
	return fixCsum(b)
}

func icmp6(src, dst string, typ uint8, id uint16) []byte {
	f := dptest.Frame{Dst: macB, Src: macA,
		IPv6: &dptest.IPv6{Src: ip(src), Dst: ip(dst)},
		ICMP: &dptest.ICMP{Type: typ}}
	b := f.Bytes()
	binary.BigEndian.PutUint16(b[14+40+4:], id)
	return fixCsum(b)
}

// fixCsum fills the transport (and ICMP) checksum of an untagged frame.
func fixCsum(b []byte) []byte {
	var p parsed
	if !parseFrame(b, &p) {
		panic("test frame does not parse")
	}
	if off := csumOff(&p); off >= 0 {
		b[off], b[off+1] = 0, 0
		binary.BigEndian.PutUint16(b[off:], ^fold(l4Sum(b, &p)))
	}
	return b
}

func csumOff(p *parsed) int {
	switch p.proto {
	case protoTCP:
		return p.l4 + 16
	case protoUDP:
		return p.l4 + 6
	case protoICMP, protoICMPv6:
		return p.l4 + 2
	}
	return -1
}

func l4Sum(b []byte, p *parsed) uint32 {
	msg := b[p.l4:p.end]
	var s uint32
	if p.v6 {
		s = pseudoSum(p, uint32(len(msg)))
	} else if p.proto != protoICMP {
		s = sum(0, p.src[:4])
		s = sum(s, p.dst[:4])
		s += uint32(p.proto) + uint32(len(msg))
	}
	return sum(s, msg)
}

// checkCsums fails if the frame's IPv4 header or transport checksums are
// wrong.
func checkCsums(t *testing.T, b []byte) {
	t.Helper()
	var p parsed
	if !parseFrame(b, &p) {
		t.Fatalf("frame does not parse")
	}
	if !p.v6 {
		if s := fold(sum(0, b[p.l3:p.l3+p.ipv4HdrLen])); s != 0xffff {
			t.Errorf("bad IPv4 header checksum (sum %#x)", s)
		}
	}
	if csumOff(&p) >= 0 {
		if s := fold(l4Sum(b, &p)); s != 0xffff {
			t.Errorf("bad %s checksum (sum %#x)", ProtoName(p.proto), s)
		}
	}
}

func addrOf(b []byte, src bool) netip.Addr {
	var p parsed
	parseFrame(b, &p)
	tu := tupleOf(&p.key)
	return tu.Addr(src)
}

func portsOf(b []byte) (uint16, uint16) {
	var p parsed
	parseFrame(b, &p)
	return p.sport, p.dport
}

const (
	fin = dptest.FIN
	syn = dptest.SYN
	rst = dptest.RST
	psh = dptest.PSH
	ack = dptest.ACK
)

// step is one packet of a replayed sequence and the state it must get.
type step struct {
	name  string
	frame []byte
	act   Action
	want  uint8
	after time.Duration // clock advance before the packet
}

func replay(t *testing.T, tr *Tracker, clk *clock, steps []step) {
	t.Helper()
	for _, s := range steps {
		clk.advance(s.after)
		var md Meta
		if err := tr.Execute(s.frame, &md, &s.act, false); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if md.State != s.want {
			t.Errorf("%s: ct_state %s, want %s", s.name, StateString(md.State), StateString(s.want))
		}
	}
}

const (
	trk = StateTracked
	nw  = StateNew
	est = StateEstablished
	rel = StateRelated
	rpl = StateReply
	inv = StateInvalid
)

func TestTCP(t *testing.T) {
	commit := Action{Commit: true}
	look := Action{}
	c, s := "10.0.0.1", "10.0.0.2"
	tests := []struct {
		name  string
		steps []step
		dump  string // the connection's dump after the steps, "" if none
	}{{
		name: "handshake, data, teardown",
		steps: []step{
			{"syn", tcp4(c, s, 40000, 80, syn, 1000, 0, ""), commit, trk | nw, 0},
			{"syn-ack", tcp4(s, c, 80, 40000, syn|ack, 5000, 1001, ""), look, trk | est | rpl, 0},
			{"ack", tcp4(c, s, 40000, 80, ack, 1001, 5001, ""), look, trk | est, 0},
			{"data", tcp4(c, s, 40000, 80, psh|ack, 1001, 5001, "GET /"), look, trk | est, 0},
			{"data ack", tcp4(s, c, 80, 40000, ack, 5001, 1006, ""), look, trk | est | rpl, 0},
			{"retransmit", tcp4(c, s, 40000, 80, psh|ack, 1001, 5001, "GET /"), look, trk | est, 0},
			{"fin", tcp4(c, s, 40000, 80, fin|ack, 1006, 5001, ""), look, trk | est, 0},
			{"fin-ack", tcp4(s, c, 80, 40000, fin|ack, 5001, 1007, ""), look, trk | est | rpl, 0},
			{"last ack", tcp4(c, s, 40000, 80, ack, 1007, 5002, ""), look, trk | est, 0},
		},
		dump: "tcp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=40000,dport=80),reply=(src=10.0.0.2,dst=10.0.0.1,sport=80,dport=40000),protoinfo=(state=TIME_WAIT)",
	}, {
		name: "syn retransmitted before the answer",
		steps: []step{
			{"syn", tcp4(c, s, 40001, 80, syn, 1000, 0, ""), commit, trk | nw, 0},
			{"syn again", tcp4(c, s, 40001, 80, syn, 1000, 0, ""), commit, trk | nw, time.Second},
		},
		dump: "tcp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=40001,dport=80),reply=(src=10.0.0.2,dst=10.0.0.1,sport=80,dport=40001),protoinfo=(state=SYN_SENT)",
	}, {
		name: "data out of window",
		steps: []step{
			{"syn", tcp4(c, s, 40002, 80, syn, 1000, 0, ""), commit, trk | nw, 0},
			{"syn-ack", tcp4(s, c, 80, 40002, syn|ack, 5000, 1001, ""), look, trk | est | rpl, 0},
			{"ack", tcp4(c, s, 40002, 80, ack, 1001, 5001, ""), look, trk | est, 0},
			{"far ahead", tcp4(c, s, 40002, 80, psh|ack, 1001+200000, 5001, "x"), look, trk | inv, 0},
			{"far behind", tcp4(s, c, 80, 40002, psh|ack, 4000000000, 1001, "x"), look, trk | inv, 0},
			{"rst off sequence", tcp4(s, c, 80, 40002, rst|ack, 5001+1000, 1001, ""), look, trk | inv, 0},
			{"still fine", tcp4(s, c, 80, 40002, psh|ack, 5001, 1001, "ok"), look, trk | est | rpl, 0},
		},
		dump: "tcp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=40002,dport=80),reply=(src=10.0.0.2,dst=10.0.0.1,sport=80,dport=40002),protoinfo=(state=ESTABLISHED)",
	}, {
		name: "reset",
		steps: []step{
			{"syn", tcp4(c, s, 40003, 80, syn, 1000, 0, ""), commit, trk | nw, 0},
			{"rst", tcp4(s, c, 80, 40003, rst|ack, 0, 1001, ""), look, trk | est | rpl, 0},
		},
		dump: "tcp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=40003,dport=80),reply=(src=10.0.0.2,dst=10.0.0.1,sport=80,dport=40003),protoinfo=(state=TIME_WAIT)",
	}, {
		name: "not committed, bad flags, syn-ack first",
		steps: []step{
			{"syn without commit", tcp4(c, s, 40004, 80, syn, 1000, 0, ""), look, trk | nw, 0},
			{"syn-ack opens nothing", tcp4(s, c, 80, 40004, syn|ack, 5000, 1001, ""), commit, trk | inv, 0},
			{"syn+fin", tcp4(c, s, 40004, 80, syn|fin, 1000, 0, ""), commit, trk | inv, 0},
			{"no flags", tcp4(c, s, 40004, 80, 0, 1000, 0, ""), commit, trk | inv, 0},
		},
	}, {
		name: "mid-stream pickup",
		steps: []step{
			{"ack opens", tcp4(c, s, 40005, 80, ack, 777777, 888888, ""), commit, trk | nw, 0},
			{"reply", tcp4(s, c, 80, 40005, psh|ack, 888888, 777777, "hi"), look, trk | est | rpl, 0},
		},
		dump: "tcp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=40005,dport=80),reply=(src=10.0.0.2,dst=10.0.0.1,sport=80,dport=40005),protoinfo=(state=ESTABLISHED)",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, clk := newTracker(t)
			replay(t, tr, clk, tc.steps)
			d := tr.Dump(-1)
			if tc.dump == "" {
				if len(d) != 0 {
					t.Errorf("table holds %v, want nothing", d)
				}
				return
			}
			if len(d) != 1 || d[0].String() != tc.dump {
				t.Errorf("dump:\n%v\nwant\n%s", d, tc.dump)
			}
		})
	}
}

func TestTCPLiberal(t *testing.T) {
	tr, clk := newTracker(t)
	tr.SetLiberal(true)
	c, s := "10.0.0.1", "10.0.0.2"
	replay(t, tr, clk, []step{
		{"syn", tcp4(c, s, 40000, 80, syn, 1000, 0, ""), Action{Commit: true}, trk | nw, 0},
		{"syn-ack", tcp4(s, c, 80, 40000, syn|ack, 5000, 1001, ""), Action{}, trk | est | rpl, 0},
		{"far ahead passes", tcp4(c, s, 40000, 80, psh|ack, 1001+200000, 5001, "x"), Action{}, trk | est, 0},
	})
}

func TestTCPTimeouts(t *testing.T) {
	tr, clk := newTracker(t)
	c, s := "10.0.0.1", "10.0.0.2"
	replay(t, tr, clk, []step{
		{"syn", tcp4(c, s, 40000, 80, syn, 1000, 0, ""), Action{Commit: true}, trk | nw, 0},
		{"syn-ack", tcp4(s, c, 80, 40000, syn|ack, 5000, 1001, ""), Action{}, trk | est | rpl, 0},
		{"ack", tcp4(c, s, 40000, 80, ack, 1001, 5001, ""), Action{}, trk | est, 0},
		{"a day less a second later", tcp4(c, s, 40000, 80, ack, 1001, 5001, ""), Action{}, trk | est, 24*time.Hour - time.Second},
	})
	clk.advance(24*time.Hour + time.Second)
	if n := tr.Sweep(); n != 1 || tr.NConns() != 0 {
		t.Errorf("sweep removed %d, %d left; want 1, 0", n, tr.NConns())
	}
}

func TestUDPAndOther(t *testing.T) {
	tr, clk := newTracker(t)
	a, b := "10.0.0.1", "10.0.0.2"
	commit := Action{Commit: true}
	gre := func(src, dst string) []byte {
		return dptest.Frame{Dst: macB, Src: macA, IPv4: &dptest.IPv4{Src: ip(src), Dst: ip(dst), Proto: 47}, Payload: []byte("gre!")}.Bytes()
	}
	replay(t, tr, clk, []step{
		{"first", udp4(a, b, 5000, 53), commit, trk | nw, 0},
		{"second, same way", udp4(a, b, 5000, 53), commit, trk | nw, 0},
		{"reply", udp4(b, a, 53, 5000), commit, trk | est | rpl, 0},
		{"again", udp4(a, b, 5000, 53), commit, trk | est, 0},
		{"v6", udp6("fd00::1", "fd00::2", 1, 2), commit, trk | nw, 0},
		{"v6 reply", udp6("fd00::2", "fd00::1", 2, 1), commit, trk | est | rpl, 0},
		{"gre", gre(a, b), commit, trk | nw, 0},
		{"gre reply", gre(b, a), commit, trk | est | rpl, 0},
		{"arp is invalid", dptest.Frame{Dst: macB, Src: macA, ARP: &dptest.ARP{Op: 1, SPA: ip(a), TPA: ip(b)}}.Bytes(), commit, trk | inv, 0},
	})
	if n := tr.NConns(); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
	// Bidirectional UDP lasts 30 s.
	clk.advance(31 * time.Second)
	replay(t, tr, clk, []step{{"expired", udp4(b, a, 53, 5000), Action{}, trk | nw, 0}})
	tr.Sweep()
	if n := tr.NConns(); n != 0 {
		t.Errorf("%d connections after 31 s, want 0", n)
	}
}

func TestICMP(t *testing.T) {
	tr, clk := newTracker(t)
	a, b := "10.0.0.1", "10.0.0.2"
	commit := Action{Commit: true}
	// The UDP packet a router would quote: what b sent to a.
	udp := udp4(a, b, 5000, 53)
	unreach := icmp4(b, a, icmp4Unreach, 3, 0, udp[14:])
	stray := icmp4(b, a, icmp4Unreach, 3, 0, udp4(a, b, 5001, 53)[14:])
	replay(t, tr, clk, []step{
		{"echo", icmp4(a, b, icmp4Echo, 0, 7, []byte("ping")), commit, trk | nw, 0},
		{"echo again", icmp4(a, b, icmp4Echo, 0, 7, []byte("ping")), commit, trk | nw, 0},
		{"echo reply", icmp4(b, a, icmp4EchoReply, 0, 7, []byte("ping")), commit, trk | est | rpl, 0},
		{"reply without request", icmp4(b, a, icmp4EchoReply, 0, 8, nil), commit, trk | inv, 0},
		{"v6 echo", icmp6("fd00::1", "fd00::2", icmp6Echo, 9), commit, trk | nw, 0},
		{"v6 reply", icmp6("fd00::2", "fd00::1", icmp6EchoReply, 9), commit, trk | est | rpl, 0},
		{"udp", udp, commit, trk | nw, 0},
		{"port unreachable", unreach, commit, trk | rel | rpl, 0},
		{"unrelated error", stray, commit, trk | inv, 0},
	})
	var got []string
	for _, e := range tr.Dump(-1) {
		got = append(got, e.String())
	}
	want := "icmp,orig=(src=10.0.0.1,dst=10.0.0.2,id=7,type=8,code=0),reply=(src=10.0.0.2,dst=10.0.0.1,id=7,type=0,code=0)"
	if !strings.Contains(strings.Join(got, "\n"), want) {
		t.Errorf("dump:\n%s\nlacks\n%s", strings.Join(got, "\n"), want)
	}
}

func TestZonesMarkLabel(t *testing.T) {
	tr, clk := newTracker(t)
	a, b := "10.0.0.1", "10.0.0.2"
	set := Action{Zone: 5, Commit: true, SetMark: true, Mark: 0x2a, MarkMask: ^uint32(0), SetLabel: true}
	set.Label[15], set.LabelMask[15] = 1, 0xff
	replay(t, tr, clk, []step{
		{"zone 5", udp4(a, b, 1, 2), set, trk | nw, 0},
		{"zone 6 is another table", udp4(b, a, 2, 1), Action{Zone: 6}, trk | nw, 0},
	})
	var md Meta
	tr.Execute(udp4(b, a, 2, 1), &md, &Action{Zone: 5}, false)
	if md.State != trk|est|rpl || md.Zone != 5 || md.Mark != 0x2a || md.Label[15] != 1 || !md.OrigValid ||
		md.Orig.SrcPort != 1 || md.Orig.Addr(true) != ip(a) {
		t.Errorf("reply metadata %+v", md)
	}
	d := tr.Dump(5)
	want := "udp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=1,dport=2),reply=(src=10.0.0.2,dst=10.0.0.1,sport=2,dport=1),zone=5,mark=42,labels=0x1"
	if len(d) != 1 || d[0].String() != want {
		t.Errorf("dump %v, want %s", d, want)
	}
	if len(tr.Dump(6)) != 0 {
		t.Errorf("zone 6 has connections")
	}
	tr.Flush(5)
	if tr.NConns() != 0 {
		t.Errorf("flush of zone 5 left %d", tr.NConns())
	}
}

func TestForce(t *testing.T) {
	tr, clk := newTracker(t)
	a, b := "10.0.0.1", "10.0.0.2"
	replay(t, tr, clk, []step{
		{"a to b", udp4(a, b, 1, 2), Action{Commit: true}, trk | nw, 0},
		{"b to a, forced", udp4(b, a, 2, 1), Action{Commit: true, Force: true}, trk | nw, 0},
		{"a to b is now the reply", udp4(a, b, 1, 2), Action{}, trk | est | rpl, 0},
	})
}

func TestLimits(t *testing.T) {
	tr, clk := newTracker(t)
	tr.SetLimits(nil, map[uint16]uint32{3: 2})
	commit := Action{Zone: 3, Commit: true}
	replay(t, tr, clk, []step{
		{"1", udp4("10.0.0.1", "10.0.0.2", 1, 2), commit, trk | nw, 0},
		{"2", udp4("10.0.0.1", "10.0.0.2", 2, 2), commit, trk | nw, 0},
		{"3 not committed", udp4("10.0.0.1", "10.0.0.2", 3, 2), commit, trk | nw, 0},
		{"other zone", udp4("10.0.0.1", "10.0.0.2", 3, 2), Action{Zone: 4, Commit: true}, trk | nw, 0},
	})
	def, zl := tr.Limits([]uint16{3, 4})
	if def != 0 || len(zl) != 2 || zl[0] != (ZoneLimit{Zone: 3, Limit: 2, Count: 2}) || zl[1] != (ZoneLimit{Zone: 4, Limit: 0, Count: 0}) {
		t.Errorf("limits %d %+v", def, zl)
	}
	tr.DelLimits([]uint16{3})
	tr.SetMaxConns(3)
	replay(t, tr, clk, []step{
		{"table full: not committed", udp4("10.0.0.1", "10.0.0.2", 9, 2), commit, trk | nw, 0},
	})
	if tr.NConns() != 3 {
		t.Errorf("%d connections, want 3", tr.NConns())
	}
}

func TestSNAT(t *testing.T) {
	tr, clk := newTracker(t)
	c, s := "10.0.0.1", "10.0.0.2"
	nat := &NATRange{Src: true, MinAddr: a4("192.168.0.1"), MaxAddr: a4("192.168.0.1")}
	act := Action{Commit: true, NAT: nat}
	undo := Action{NAT: &NATRange{}}

	var md Meta
	syn1 := tcp4(c, s, 40000, 80, syn, 1000, 0, "")
	tr.Execute(syn1, &md, &act, false)
	if md.State != trk|nw|StateSrcNAT || addrOf(syn1, true) != ip("192.168.0.1") {
		t.Fatalf("syn: state %s src %v", StateString(md.State), addrOf(syn1, true))
	}
	checkCsums(t, syn1)
	if sp, _ := portsOf(syn1); sp != 40000 {
		t.Errorf("source port %d changed though free", sp)
	}
	// A second client with the same port gets another port.
	syn2 := tcp4("10.0.0.3", s, 40000, 80, syn, 1000, 0, "")
	md = Meta{}
	tr.Execute(syn2, &md, &act, false)
	if sp, _ := portsOf(syn2); sp == 40000 || sp < natMinEphemeral {
		t.Errorf("second client's port %d", sp)
	}
	checkCsums(t, syn2)

	// The reply goes to the NAT address and is translated back.
	sa := tcp4(s, "192.168.0.1", 80, 40000, syn|ack, 5000, 1001, "")
	md = Meta{}
	tr.Execute(sa, &md, &undo, false)
	if md.State != trk|est|rpl|StateDstNAT || addrOf(sa, false) != ip(c) {
		t.Fatalf("syn-ack: state %s dst %v", StateString(md.State), addrOf(sa, false))
	}
	checkCsums(t, sa)
	if md.Orig.Addr(true) != ip(c) {
		t.Errorf("orig tuple %v", md.Orig.Addr(true))
	}

	// An ICMP error from the server's side quotes the translated packet
	// and reaches the client with the original addresses inside.
	quoted := tcp4("192.168.0.1", s, 40000, 80, ack, 1001, 5001, "")
	errf := icmp4(s, "192.168.0.1", icmp4Unreach, 4, 0, quoted[14:])
	md = Meta{}
	tr.Execute(errf, &md, &undo, false)
	if md.State != trk|rel|rpl|StateDstNAT || addrOf(errf, false) != ip(c) {
		t.Fatalf("icmp error: state %s dst %v", StateString(md.State), addrOf(errf, false))
	}
	checkCsums(t, errf)
	var p parsed
	parseFrame(errf, &p)
	if tu := tupleOf(&p.inner.key); tu.Addr(true) != ip(c) || tu.SrcPort != 40000 {
		t.Errorf("quoted packet src %v:%d", tu.Addr(true), tu.SrcPort)
	}
	if s := fold(sum(0, errf[p.inner.l3:p.inner.l3+20])); s != 0xffff {
		t.Errorf("quoted header checksum wrong")
	}

	want := "tcp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=40000,dport=80),reply=(src=10.0.0.2,dst=192.168.0.1,sport=80,dport=40000),protoinfo=(state=ESTABLISHED)"
	found := false
	for _, e := range tr.Dump(-1) {
		found = found || e.String() == want
	}
	if !found {
		t.Errorf("dump %v lacks %s", tr.Dump(-1), want)
	}
	_ = clk
}

func TestDNATAndPartialChecksum(t *testing.T) {
	tr, _ := newTracker(t)
	nat := &NATRange{Dst: true, MinAddr: a4("10.1.0.1"), MaxAddr: a4("10.1.0.2"), MinPort: 8080, MaxPort: 8080}
	act := Action{Commit: true, NAT: nat}
	seen := map[netip.Addr]int{}
	for port := uint16(1000); port < 1064; port++ {
		b := udp4("10.0.0.1", "10.9.9.9", port, 80)
		var md Meta
		tr.Execute(b, &md, &act, false)
		if md.State != trk|nw|StateDstNAT {
			t.Fatalf("state %s", StateString(md.State))
		}
		checkCsums(t, b)
		if _, dp := portsOf(b); dp != 8080 {
			t.Fatalf("dport %d", dp)
		}
		seen[addrOf(b, false)]++
	}
	if len(seen) != 2 {
		t.Errorf("backends used %v, want both", seen)
	}

	// A partial checksum (pseudo-header sum only) follows the address.
	b := udp4("10.0.0.1", "10.9.9.9", 2000, 80)
	var p parsed
	parseFrame(b, &p)
	ps := sum(0, p.src[:4])
	ps = sum(ps, p.dst[:4]) + protoUDP + uint32(p.end-p.l4)
	binary.BigEndian.PutUint16(b[p.l4+6:], fold(ps))
	var md Meta
	tr.Execute(b, &md, &act, true)
	parseFrame(b, &p)
	ps = sum(0, p.src[:4])
	ps = sum(ps, p.dst[:4]) + protoUDP + uint32(p.end-p.l4)
	if got := binary.BigEndian.Uint16(b[p.l4+6:]); got != fold(ps) {
		t.Errorf("partial checksum %#x, want %#x", got, fold(ps))
	}
}

func TestNATExhaustion(t *testing.T) {
	tr, clk := newTracker(t)
	nat := &NATRange{Src: true, MinAddr: a4("192.168.0.1"), MaxAddr: a4("192.168.0.1"), MinPort: 1000, MaxPort: 1001}
	act := Action{Commit: true, NAT: nat}
	replay(t, tr, clk, []step{
		{"1", udp4("10.0.0.1", "10.0.0.2", 5, 53), act, trk | nw | StateSrcNAT, 0},
		{"2", udp4("10.0.0.3", "10.0.0.2", 5, 53), act, trk | nw | StateSrcNAT, 0},
		{"3: no tuple left", udp4("10.0.0.4", "10.0.0.2", 5, 53), act, trk | inv, 0},
	})
	if tr.NConns() != 2 || tr.natExhausted.Load() != 1 {
		t.Errorf("%d connections, %d exhausted", tr.NConns(), tr.natExhausted.Load())
	}
}

// Two ct() in one zone: the second sees the NATed packet and must not
// track it again.
func TestSecondCtSameZone(t *testing.T) {
	tr, _ := newTracker(t)
	act := Action{Commit: true, NAT: &NATRange{Src: true, MinAddr: a4("192.168.0.1"), MaxAddr: a4("192.168.0.1")}}
	b := udp4("10.0.0.1", "10.0.0.2", 5, 53)
	var md Meta
	tr.Execute(b, &md, &act, false)
	tr.Execute(b, &md, &Action{}, false)
	if md.State != trk|nw|StateSrcNAT || tr.NConns() != 1 {
		t.Errorf("state %s, %d connections", StateString(md.State), tr.NConns())
	}
}

func TestConcurrent(t *testing.T) {
	tr, _ := newTracker(t)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				port := uint16(i % 500)
				var md, md2 Meta
				tr.Execute(udp4("10.0.0.1", "10.0.0.2", port, 53), &md, &Action{Commit: true}, false)
				tr.Execute(udp4("10.0.0.2", "10.0.0.1", 53, port), &md2, &Action{}, false)
				if i%700 == 0 {
					tr.Sweep()
					tr.Dump(-1)
				}
			}
		}()
	}
	wg.Wait()
	if n := tr.NConns(); n != 500 {
		t.Errorf("%d connections, want 500", n)
	}
}

func TestLabelString(t *testing.T) {
	var l Label
	if l.String() != "0x0" {
		t.Error(l.String())
	}
	l[0], l[15] = 0x1, 0xab
	if got := l.String(); got != "0x10000000000000000000000000000ab" {
		t.Error(got)
	}
}

func a4(s string) [16]byte {
	var a [16]byte
	v := netip.MustParseAddr(s).As4()
	copy(a[:], v[:])
	return a
}

// A SYN flood fills the table to its bound and no further; a connection
// established before it keeps working, and new ones get in again once
// the flood's half-open connections expire.
func TestSYNFlood(t *testing.T) {
	tr, clk := newTracker(t)
	tr.SetMaxConns(1000)
	c, s := "10.0.0.1", "10.0.0.2"
	replay(t, tr, clk, []step{
		{"syn", tcp4(c, s, 40000, 80, syn, 1000, 0, ""), Action{Commit: true}, trk | nw, 0},
		{"syn-ack", tcp4(s, c, 80, 40000, syn|ack, 5000, 1001, ""), Action{}, trk | est | rpl, 0},
		{"ack", tcp4(c, s, 40000, 80, ack, 1001, 5001, ""), Action{}, trk | est, 0},
	})
	for i := 0; i < 5000; i++ {
		f := tcp4("10.1.0.1", s, uint16(i), 80, syn, uint32(i), 0, "")
		f[14+12+2] = byte(i >> 8) // a source per 256 SYNs
		var md Meta
		tr.Execute(f, &md, &Action{Commit: true}, false)
	}
	if n := tr.NConns(); n != 1000 {
		t.Errorf("%d connections after the flood, want 1000", n)
	}
	if tr.full.Load() != 4001 {
		t.Errorf("%d commits refused, want 4001", tr.full.Load())
	}
	replay(t, tr, clk, []step{
		{"established data", tcp4(c, s, 40000, 80, psh|ack, 1001, 5001, "more"), Action{}, trk | est, 0},
		{"a new connection is not committed", tcp4(c, s, 40001, 80, syn, 1, 0, ""), Action{Commit: true}, trk | nw, 0},
	})
	clk.advance(31 * time.Second) // SYN_SENT lasts 30 s
	tr.Sweep()
	if n := tr.NConns(); n != 1 {
		t.Errorf("%d connections after the half-open ones expired, want 1", n)
	}
	replay(t, tr, clk, []step{
		{"new connection after", tcp4(c, s, 40002, 80, syn, 1, 0, ""), Action{Commit: true}, trk | nw, 0},
	})
}

// TestMemoryPerConnection reports the heap a tracked connection takes.
func TestMemoryPerConnection(t *testing.T) {
	tr, _ := newTracker(t)
	const n = 100000
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = udp4("10.0.0.1", "10.0.0.2", uint16(i), 53)
		frames[i][14+12+2] = byte(i >> 16)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, f := range frames {
		var md Meta
		tr.Execute(f, &md, &Action{Commit: true}, false)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(frames)
	if tr.NConns() != n {
		t.Fatalf("%d connections", tr.NConns())
	}
	t.Logf("%d bytes of heap per connection", (after.HeapAlloc-before.HeapAlloc)/n)
}

func a16(s string) [16]byte { return netip.MustParseAddr(s).As16() }

// IPv6: UDP and ICMPv6 echo SNATed, their checksums (which cover the
// addresses) kept right both ways.
func TestSNATv6(t *testing.T) {
	tr, _ := newTracker(t)
	act := Action{Commit: true, NAT: &NATRange{Src: true, V6: true, MinAddr: a16("fd00::100"), MaxAddr: a16("fd00::100")}}
	undo := Action{NAT: &NATRange{}}
	for _, c := range []struct {
		name       string
		out, reply []byte
	}{
		{"udp", udp6("fd00::1", "fd00::2", 5000, 53), udp6("fd00::2", "fd00::100", 53, 5000)},
		{"icmpv6", icmp6("fd00::1", "fd00::2", icmp6Echo, 9), icmp6("fd00::2", "fd00::100", icmp6EchoReply, 9)},
	} {
		var md Meta
		tr.Execute(c.out, &md, &act, false)
		if md.State != trk|nw|StateSrcNAT || addrOf(c.out, true) != ip("fd00::100") {
			t.Errorf("%s: state %s, source %v", c.name, StateString(md.State), addrOf(c.out, true))
		}
		checkCsums(t, c.out)
		md = Meta{}
		tr.Execute(c.reply, &md, &undo, false)
		if md.State != trk|est|rpl|StateDstNAT || addrOf(c.reply, false) != ip("fd00::1") {
			t.Errorf("%s reply: state %s, destination %v", c.name, StateString(md.State), addrOf(c.reply, false))
		}
		checkCsums(t, c.reply)
	}
}
