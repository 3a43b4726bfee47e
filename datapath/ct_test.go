package datapath

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"

	"github.com/govs/govs/datapath/conntrack"
	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
)

var (
	hostA   = dptest.MAC("02:00:00:00:00:0a")
	hostB   = dptest.MAC("02:00:00:00:00:0b")
	ipA     = netip.MustParseAddr("10.0.0.1")
	ipB     = netip.MustParseAddr("10.0.0.2")
	ipNAT   = netip.MustParseAddr("192.168.0.100")
	ipNATlo = netip.MustParseAddr("192.168.0.1")
	ipNAThi = netip.MustParseAddr("192.168.0.2")
)

func tcpFrame(src, dst netip.Addr, sport, dport, flags uint16, seq, ack uint32) []byte {
	s, d := hostA, hostB
	if src != ipA {
		s, d = hostB, hostA
	}
	return dptest.Frame{Src: s, Dst: d, IPv4: &dptest.IPv4{Src: src, Dst: dst},
		TCP: &dptest.TCP{Src: sport, Dst: dport, Flags: flags, Seq: seq, Ack: ack}}.Checksummed()
}

// firewall is the translation of a stateful firewall as OVS would emit
// it: IP packets go through ct(zone=1) and come back with recirc_id 1;
// then new connections from port 1 are committed and forwarded, packets
// of established connections pass both ways, the rest is dropped.
// Non-IP frames are forwarded. nat, if set, is the commit's NAT and
// every ct() translates (ct(nat) for the packets of NATed connections).
func firewall(nat *conntrack.NATRange) func(k *flow.Key) (Actions, flow.Mask) {
	return func(k *flow.Key) (Actions, flow.Mask) {
		m := flow.Mask{EthType: 0xffff}
		other := uint32(3) - k.InPort
		if k.EthType != flow.EthTypeIPv4 {
			return Actions{Output(other)}, m
		}
		var natAll *conntrack.NATRange
		if nat != nil {
			natAll = &conntrack.NATRange{}
		}
		if k.RecircID == 0 {
			return Actions{CT(conntrack.Action{Zone: 1, NAT: natAll}), Recirc(1)}, m
		}
		m.CtState = conntrack.StateTracked | conntrack.StateNew | conntrack.StateEstablished | conntrack.StateInvalid
		switch {
		case k.CtState&conntrack.StateInvalid != 0:
			return nil, m
		case k.CtState&conntrack.StateEstablished != 0:
			return Actions{Output(other)}, m
		case k.CtState&conntrack.StateNew != 0 && k.InPort == 1:
			return Actions{CT(conntrack.Action{Zone: 1, Commit: true, NAT: nat}), Output(other)}, m
		}
		return nil, m
	}
}

func TestConntrackFirewall(t *testing.T) {
	r := newRig(t, 2)
	r.dp.SetUpcall(newProg(firewall(nil)))
	type step struct {
		name    string
		in      uint32
		frame   []byte
		through bool
	}
	steps := []step{
		{"syn from A", 1, tcpFrame(ipA, ipB, 40000, 80, dptest.SYN, 1000, 0), true},
		{"syn-ack from B", 2, tcpFrame(ipB, ipA, 80, 40000, dptest.SYN|dptest.ACK, 5000, 1001), true},
		{"ack from A", 1, tcpFrame(ipA, ipB, 40000, 80, dptest.ACK, 1001, 5001), true},
		{"data from B", 2, tcpFrame(ipB, ipA, 80, 40000, dptest.PSH|dptest.ACK, 5001, 1001), true},
		{"syn from B", 2, tcpFrame(ipB, ipA, 22, 40000, dptest.SYN, 1, 0), false},
		{"stray ack from B", 2, tcpFrame(ipB, ipA, 23, 40000, dptest.ACK, 1, 1), false},
		{"data out of window from A", 1, dptest.Frame{Src: hostA, Dst: hostB, IPv4: &dptest.IPv4{Src: ipA, Dst: ipB},
			TCP: &dptest.TCP{Src: 40000, Dst: 80, Flags: dptest.PSH | dptest.ACK, Seq: 1001 + 1<<30, Ack: 5001}, Payload: []byte("x")}.Checksummed(), false},
		{"fin from A", 1, tcpFrame(ipA, ipB, 40000, 80, dptest.FIN|dptest.ACK, 1001, 5001), true},
	}
	var rx [3]uint64
	for _, s := range steps {
		out := 3 - s.in
		before := r.ports[out].NumSent()
		r.ports[s.in].Inject(s.frame)
		rx[s.in]++
		r.rxDone(t, s.in, rx[s.in])
		got := r.ports[out].NumSent() - before
		if s.through && got != 1 || !s.through && got != 0 {
			t.Errorf("%s: %d frames out of port %d, want through=%v", s.name, got, out, s.through)
		}
		if s.through && got == 1 {
			sent := r.ports[out].Sent()
			if !bytes.Equal(sent[len(sent)-1], s.frame) {
				t.Errorf("%s: frame changed on the way", s.name)
			}
		}
	}
	d := r.dp.Conntrack().Dump(-1)
	want := "tcp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=40000,dport=80),reply=(src=10.0.0.2,dst=10.0.0.1,sport=80,dport=40000),zone=1,protoinfo=(state=CLOSING)"
	if len(d) != 1 || d[0].String() != want {
		t.Errorf("conntrack %v, want %s", d, want)
	}

	// The datapath flows show the recirculation as OVS prints it.
	var lines []string
	for _, f := range r.dp.Flows() {
		lines = append(lines, flow.FormatODP(&f.Key, &f.Mask, flow.ODPFormat{})+" actions:"+f.Actions.String())
	}
	all := strings.Join(lines, "\n")
	for _, w := range []string{
		"recirc_id(0),in_port(1),packet_type(ns=0,id=0),eth_type(0x0800) actions:ct(zone=1),recirc(0x1)",
		"ct_state(+new-est-inv+trk),recirc_id(0x1),in_port(1),packet_type(ns=0,id=0),eth_type(0x0800) actions:ct(commit,zone=1),2",
		"ct_state(-new+est-inv+trk),recirc_id(0x1),in_port(2),packet_type(ns=0,id=0),eth_type(0x0800) actions:1",
		"ct_state(+new-est-inv+trk),recirc_id(0x1),in_port(2),packet_type(ns=0,id=0),eth_type(0x0800) actions:drop",
	} {
		if !strings.Contains(all, w) {
			t.Errorf("flows lack %s:\n%s", w, all)
		}
	}
}

// SNAT: A's connections leave with the NAT address, the replies come
// back to A.
func TestConntrackSNAT(t *testing.T) {
	r := newRig(t, 2)
	nat := &conntrack.NATRange{Src: true, MinAddr: v4(ipNAT), MaxAddr: v4(ipNAT)}
	r.dp.SetUpcall(newProg(firewall(nat)))

	r.ports[1].Inject(tcpFrame(ipA, ipB, 40000, 80, dptest.SYN, 1000, 0))
	r.rxDone(t, 1, 1)
	sent := r.ports[2].Sent()
	if len(sent) != 1 {
		t.Fatalf("%d frames at B, want 1", len(sent))
	}
	if src := netip.AddrFrom4([4]byte(sent[0][14+12 : 14+16])); src != ipNAT {
		t.Errorf("B sees the SYN from %v, want %v", src, ipNAT)
	}
	checkTCPChecksum(t, sent[0])

	r.ports[2].Inject(tcpFrame(ipB, ipNAT, 80, 40000, dptest.SYN|dptest.ACK, 5000, 1001))
	r.rxDone(t, 2, 1)
	back := r.ports[1].Sent()
	if len(back) != 1 {
		t.Fatalf("%d frames at A, want 1", len(back))
	}
	if dst := netip.AddrFrom4([4]byte(back[0][14+16 : 14+20])); dst != ipA {
		t.Errorf("A gets the SYN-ACK for %v, want %v", dst, ipA)
	}
	checkTCPChecksum(t, back[0])
	d := r.dp.Conntrack().Dump(1)
	want := "tcp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=40000,dport=80),reply=(src=10.0.0.2,dst=192.168.0.100,sport=80,dport=40000),zone=1,protoinfo=(state=ESTABLISHED)"
	if len(d) != 1 || d[0].String() != want {
		t.Errorf("conntrack %v, want %s", d, want)
	}
}

// A translation that recirculates forever loses the packet, not the
// worker.
func TestRecircDepth(t *testing.T) {
	r := newRig(t, 2)
	r.dp.SetUpcall(newProg(func(k *flow.Key) (Actions, flow.Mask) {
		return Actions{Recirc(k.RecircID + 1)}, flow.Mask{}
	}))
	r.ports[1].Inject(tcpFrame(ipA, ipB, 1, 2, dptest.SYN, 1, 0))
	r.rxDone(t, 1, 1)
	if n := r.dp.recircDrops.Load(); n != 1 {
		t.Errorf("%d recirculation drops, want 1", n)
	}
}

func TestCTActionFormat(t *testing.T) {
	lab := conntrack.Label{15: 1}
	for _, c := range []struct {
		a    Action
		want string
	}{
		{CT(conntrack.Action{}), "ct"},
		{CT(conntrack.Action{Commit: true, Zone: 5, SetMark: true, Mark: 1, MarkMask: ^uint32(0)}), "ct(commit,zone=5,mark=0x1/0xffffffff)"}, // as Debian's ovs-vswitchd traces it
		{CT(conntrack.Action{Commit: true, SetMark: true, Mark: 1, MarkMask: 0xff, SetLabel: true, Label: lab, LabelMask: lab}), "ct(commit,mark=0x1/0xff,label=0x1/0x1)"},
		{CT(conntrack.Action{Commit: true, Force: true, NAT: &conntrack.NATRange{}}), "ct(force_commit,nat)"},
		{CT(conntrack.Action{Commit: true, NAT: &conntrack.NATRange{Src: true, MinAddr: v4(ipA), MaxAddr: v4(ipB), MinPort: 1024, MaxPort: 2048, Random: true}}),
			"ct(commit,nat(src=10.0.0.1-10.0.0.2:1024-2048,random))"},
		{CT(conntrack.Action{Commit: true, NAT: &conntrack.NATRange{Dst: true, MinAddr: v4(ipA), MaxAddr: v4(ipA)}}), "ct(commit,nat(dst=10.0.0.1))"},
		{CTClear(), "ct_clear"},
		{Recirc(0x1f), "recirc(0x1f)"},
	} {
		if got := c.a.String(); got != c.want {
			t.Errorf("%s, want %s", got, c.want)
		}
	}
	a, b := CT(conntrack.Action{Zone: 1, NAT: &conntrack.NATRange{}}), CT(conntrack.Action{Zone: 1, NAT: &conntrack.NATRange{}})
	if !(Actions{a}).Equal(Actions{b}) || (Actions{a}).Equal(Actions{CT(conntrack.Action{Zone: 1})}) {
		t.Error("ct actions compare by pointer")
	}
}

func v4(a netip.Addr) [16]byte {
	var r [16]byte
	b := a.As4()
	copy(r[:], b[:])
	return r
}

func checkTCPChecksum(t *testing.T, b []byte) {
	t.Helper()
	ip := b[14:]
	ihl := int(ip[0]&15) * 4
	tot := int(binary.BigEndian.Uint16(ip[2:]))
	if dptest.Checksum(ip[:ihl]) != 0 {
		t.Errorf("bad IPv4 header checksum")
	}
	seg := ip[ihl:tot]
	pseudo := append(append([]byte{}, ip[12:20]...), 0, 6, byte(len(seg)>>8), byte(len(seg)))
	if dptest.Checksum(append(pseudo, seg...)) != 0 {
		t.Errorf("bad TCP checksum")
	}
}

// BenchmarkConntrackFirewall is the stateful firewall's path for packets
// of known connections: a batch of 32 UDP frames of 8 connections, each
// through ct(zone=1), a recirculation (cache hit) and ct(commit) before
// its output, the tracker finding the connection every time.
func BenchmarkConntrackFirewall(b *testing.B) {
	w, _ := benchWorker(b, 2, newProg(firewall(nil)))
	var frames [32][]byte
	for i := range frames {
		frames[i] = dptest.Frame{Src: hostA, Dst: hostB, IPv4: &dptest.IPv4{Src: ipA, Dst: ipB},
			UDP: &dptest.UDP{Src: uint16(1000 + i%8), Dst: 53}, Payload: []byte("data")}.Checksummed()
	}
	fill := func() {
		for i, f := range frames {
			w.rx[i].SetLen(copy(w.rx[i].Tail(), f))
		}
	}
	fill()
	w.batch(len(frames)) // translate, commit and cache
	b.ReportAllocs()
	for b.Loop() {
		fill()
		w.batch(len(frames))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(frames)), "ns/pkt")
}

// Fragments are held until their datagram is whole, tracked as one, and
// forwarded with its state and its NAT; the reply passes as established.
func TestConntrackFragments(t *testing.T) {
	r := newRig(t, 2)
	nat := &conntrack.NATRange{Src: true, MinAddr: v4(ipNAT), MaxAddr: v4(ipNAT)}
	r.dp.SetUpcall(newProg(firewall(nat)))
	big := dptest.Frame{Src: hostA, Dst: hostB, IPv4: &dptest.IPv4{Src: ipA, Dst: ipB, ID: 9},
		UDP: &dptest.UDP{Src: 5000, Dst: 53}, Payload: bytes.Repeat([]byte("fragment"), 500)}.Checksummed()
	frags := dptest.Fragment4(big, 1480)
	r.ports[1].Inject(frags[2], frags[0])
	r.rxDone(t, 1, 2)
	if n := r.ports[2].NumSent(); n != 0 {
		t.Fatalf("%d frames out before the datagram was whole", n)
	}
	r.ports[1].Inject(frags[1])
	r.rxDone(t, 1, 3)
	sent := r.ports[2].Sent()
	if len(sent) != 3 {
		t.Fatalf("%d fragments out, want 3", len(sent))
	}
	var payload []byte
	for i, f := range sent {
		if src := netip.AddrFrom4([4]byte(f[14+12 : 14+16])); src != ipNAT {
			t.Errorf("fragment %d from %v, want %v", i, src, ipNAT)
		}
		if dptest.Checksum(f[14:34]) != 0 {
			t.Errorf("fragment %d: bad IPv4 header checksum", i)
		}
		payload = append(payload, f[34:]...)
	}
	// The UDP checksum in the first fragment covers the NATed datagram.
	pseudo := append(append([]byte{}, sent[0][14+12:14+20]...), 0, 17, byte(len(payload)>>8), byte(len(payload)))
	if dptest.Checksum(append(pseudo, payload...)) != 0 {
		t.Error("bad UDP checksum of the reassembled datagram")
	}
	reply := dptest.Frame{Src: hostB, Dst: hostA, IPv4: &dptest.IPv4{Src: ipB, Dst: ipNAT},
		UDP: &dptest.UDP{Src: 53, Dst: 5000}, Payload: []byte("ok")}.Checksummed()
	r.ports[2].Inject(reply)
	r.rxDone(t, 2, 1)
	if back := r.ports[1].Sent(); len(back) != 1 || netip.AddrFrom4([4]byte(back[0][14+16:14+20])) != ipA {
		t.Errorf("reply: %d frames back to A", len(back))
	}
}

// A flow that only commits (OpenFlow's actions=ct(commit) and nothing
// after) still commits.
func TestConntrackCommitOnly(t *testing.T) {
	r := newRig(t, 2)
	r.dp.SetUpcall(newProg(func(k *flow.Key) (Actions, flow.Mask) {
		return Actions{CT(conntrack.Action{Commit: true, Zone: 3})}, flow.Mask{}
	}))
	r.ports[1].Inject(tcpFrame(ipA, ipB, 1, 2, dptest.SYN, 1, 0))
	r.rxDone(t, 1, 1)
	if n := r.dp.Conntrack().NConns(); n != 1 || r.ports[2].NumSent() != 0 {
		t.Errorf("%d connections, %d frames out; want 1, 0", n, r.ports[2].NumSent())
	}
}

// pmd-stats-show counts the recirculations as OVS does.
func TestRecircStats(t *testing.T) {
	r := newRig(t, 2)
	r.dp.SetUpcall(newProg(firewall(nil)))
	r.ports[1].Inject(tcpFrame(ipA, ipB, 40000, 80, dptest.SYN, 1000, 0), tcpFrame(ipA, ipB, 40000, 80, dptest.SYN, 1000, 0))
	r.rxDone(t, 1, 2)
	out, _ := r.dp.PMDStatsShowCommand(nil)
	for _, want := range []string{"packets received: 2\n", "packet recirculations: 2\n", "avg. datapath passes per packet: 2.00\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("pmd-stats-show lacks %q:\n%s", want, out)
		}
	}
}
