package conntrack

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/govs/govs/datapath/dptest"
)

// roomy gives a frame spare capacity, as a packet buffer has, so that an
// ALG can lengthen it.
func roomy(b []byte) []byte { return append(b, make([]byte, 64)...)[:len(b)] }

// exec runs a on f and returns the state and the frame as it leaves.
func exec(t *testing.T, tr *Tracker, f []byte, a Action) (uint8, []byte) {
	t.Helper()
	f = roomy(f)
	var md Meta
	n, err := tr.ExecuteSized(tr.clock(), f, &md, &a, false)
	if err != nil {
		t.Fatal(err)
	}
	return md.State, f[:n]
}

func tcpPayload(b []byte) string {
	var p parsed
	parseFrame(b, &p)
	return string(b[p.l4+p.tcpHdrLen : p.end])
}

func tcpSeqAck(b []byte) (uint32, uint32) {
	var p parsed
	parseFrame(b, &p)
	return p.seq, p.ack
}

// ftpSession opens an FTP control connection client:40000 -> server:21
// with act, and returns the client's and server's next sequence numbers.
func ftpSession(t *testing.T, tr *Tracker, c, s string, act, back Action) {
	t.Helper()
	for _, st := range []struct {
		f    []byte
		a    Action
		want uint8
	}{
		{tcp4(c, s, 40000, 21, syn, 1000, 0, ""), act, trk | nw},
		{tcp4(s, c, 21, 40000, syn|ack, 5000, 1001, ""), back, trk | est | rpl},
		{tcp4(c, s, 40000, 21, ack, 1001, 5001, ""), back, trk | est},
	} {
		f := st.f
		if act.NAT != nil && act.NAT.Src && st.want&rpl != 0 {
			// The server answers the translated client.
			f = tcp4(s, "192.168.0.100", 21, 40000, syn|ack, 5000, 1001, "")
		}
		if got, _ := exec(t, tr, f, st.a); got&^(StateSrcNAT|StateDstNAT) != st.want {
			t.Fatalf("handshake: %s, want %s", StateString(got), StateString(st.want))
		}
	}
}

func TestFTPPassive(t *testing.T) {
	tr, _ := newTracker(t)
	c, s := "10.0.0.1", "10.0.0.2"
	act := Action{Commit: true, Helper: HelperFTP, SetMark: true, Mark: 7, MarkMask: 0xff}
	ftpSession(t, tr, c, s, act, Action{})
	st, out := exec(t, tr, tcp4(s, c, 21, 40000, psh|ack, 5001, 1001, "227 Entering Passive Mode (10,0,0,2,200,10).\r\n"), Action{})
	if st != trk|est|rpl || tcpPayload(out) != "227 Entering Passive Mode (10,0,0,2,200,10).\r\n" {
		t.Fatalf("227: %s %q", StateString(st), tcpPayload(out))
	}
	if tr.Expectations() != 1 {
		t.Fatalf("%d expectations after 227", tr.Expectations())
	}
	// The data connection from any client port: +new+rel with the
	// parent's mark and original tuple, before and after it is committed.
	data := tcp4(c, s, 40123, 200<<8|10, syn, 1, 0, "")
	var md Meta
	if err := tr.Execute(roomy(data), &md, &Action{}, false); err != nil || md.State != trk|nw|rel || md.Mark != 7 ||
		md.Orig.DstPort != 21 {
		t.Fatalf("data SYN: %s mark %d orig %+v", StateString(md.State), md.Mark, md.Orig)
	}
	if err := tr.Execute(roomy(data), &md, &Action{Commit: true}, false); err != nil || md.State != trk|nw|rel || md.Mark != 7 {
		t.Fatalf("data SYN committed: %s mark %d", StateString(md.State), md.Mark)
	}
	if tr.Expectations() != 0 {
		t.Errorf("expectation left after its connection: %d", tr.Expectations())
	}
	if st, _ := exec(t, tr, tcp4(s, c, 200<<8|10, 40123, syn|ack, 9, 2, ""), Action{}); st != trk|est|rpl {
		t.Errorf("data SYN-ACK: %s", StateString(st))
	}
	// A port on another data connection is not related.
	if st, _ := exec(t, tr, tcp4(c, s, 40124, 200<<8|11, syn, 1, 0, ""), Action{}); st != trk|nw {
		t.Errorf("unannounced port: %s", StateString(st))
	}
	e := tr.Dump(-1)
	var helpers int
	for _, x := range e {
		if x.Helper == HelperFTP {
			helpers++
		}
	}
	if helpers != 1 {
		t.Errorf("%d connections with helper=ftp, want 1: %+v", helpers, e)
	}
}

// Active FTP through SNAT: the PORT address becomes the translated one,
// the client's later sequence numbers and the server's acknowledgements
// are shifted by the 5 bytes it grew, and the server's data connection
// to the translated address goes back to the client.
func TestFTPActiveSNAT(t *testing.T) {
	tr, _ := newTracker(t)
	c, s, x := "10.0.0.1", "10.0.0.2", "192.168.0.100"
	nat := &NATRange{Src: true, MinAddr: a4(x), MaxAddr: a4(x)}
	act := Action{Commit: true, Helper: HelperFTP, NAT: nat}
	back := Action{NAT: &NATRange{}}
	ftpSession(t, tr, c, s, act, back)

	port := "PORT 10,0,0,1,156,65\r\n"
	st, out := exec(t, tr, tcp4(c, s, 40000, 21, psh|ack, 1001, 5001, port), back)
	want := "PORT 192,168,0,100,156,65\r\n"
	if st != trk|est|StateSrcNAT || tcpPayload(out) != want {
		t.Fatalf("PORT: %s %q", StateString(st), tcpPayload(out))
	}
	checkCsums(t, out)
	if a := addrOf(out, true); a != ip(x) {
		t.Errorf("PORT from %s", a)
	}
	// The server acknowledges the longer segment; the client sees the ack
	// of what it sent.
	end := uint32(1001 + len(want))
	_, out = exec(t, tr, tcp4(s, x, 21, 40000, ack, 5001, end, ""), back)
	if _, a := tcpSeqAck(out); a != uint32(1001+len(port)) {
		t.Errorf("server's ack %d reaches the client as %d, want %d", end, a, 1001+len(port))
	}
	checkCsums(t, out)
	// The client's next segment is shifted forwards.
	next := uint32(1001 + len(port))
	st, out = exec(t, tr, tcp4(c, s, 40000, 21, psh|ack, next, 5001, "RETR f\r\n"), back)
	if sq, _ := tcpSeqAck(out); st&est == 0 || sq != end {
		t.Errorf("client's next seq %d leaves as %d, want %d (%s)", next, sq, end, StateString(st))
	}
	checkCsums(t, out)

	// The server connects from port 20 to the translated address.
	data := tcp4(s, x, 20, 156<<8|65, syn, 1, 0, "")
	st, out = exec(t, tr, data, Action{Commit: true, NAT: &NATRange{}})
	if st != trk|nw|rel|StateDstNAT || addrOf(out, false) != ip(c) {
		t.Fatalf("data SYN: %s to %s", StateString(st), addrOf(out, false))
	}
	checkCsums(t, out)
	st, out = exec(t, tr, tcp4(c, s, 156<<8|65, 20, syn|ack, 9, 2, ""), back)
	if st != trk|est|rpl|StateSrcNAT || addrOf(out, true) != ip(x) {
		t.Errorf("data SYN-ACK: %s from %s", StateString(st), addrOf(out, true))
	}
}

// Passive FTP to a DNATed VIP: the 227 reply's address becomes the VIP.
func TestFTPPassiveDNAT(t *testing.T) {
	tr, _ := newTracker(t)
	c, vip, s := "10.0.0.1", "10.0.0.200", "10.0.0.2"
	act := Action{Commit: true, Helper: HelperFTP, NAT: &NATRange{Dst: true, MinAddr: a4(s), MaxAddr: a4(s)}}
	back := Action{NAT: &NATRange{}}
	for _, st := range []struct {
		f []byte
		a Action
	}{
		{tcp4(c, vip, 40000, 21, syn, 1000, 0, ""), act},
		{tcp4(s, c, 21, 40000, syn|ack, 5000, 1001, ""), back},
		{tcp4(c, vip, 40000, 21, ack, 1001, 5001, ""), back},
	} {
		exec(t, tr, st.f, st.a)
	}
	reply := "227 Entering Passive Mode (10,0,0,2,4,1)\r\n"
	st, out := exec(t, tr, tcp4(s, c, 21, 40000, psh|ack, 5001, 1001, reply), back)
	if want := "227 Entering Passive Mode (10,0,0,200,4,1)\r\n"; tcpPayload(out) != want || st&rpl == 0 {
		t.Fatalf("227: %s %q", StateString(st), tcpPayload(out))
	}
	checkCsums(t, out)
	st, out = exec(t, tr, tcp4(c, vip, 40001, 4<<8|1, syn, 1, 0, ""), Action{Commit: true, NAT: &NATRange{}})
	if st != trk|nw|rel|StateDstNAT || addrOf(out, false) != ip(s) {
		t.Errorf("data SYN: %s to %s", StateString(st), addrOf(out, false))
	}
}

// A PORT naming a third host (an FTP bounce) is invalid and expects
// nothing; so is a malformed one.
func TestFTPBounce(t *testing.T) {
	tr, _ := newTracker(t)
	c, s := "10.0.0.1", "10.0.0.2"
	ftpSession(t, tr, c, s, Action{Commit: true, Helper: HelperFTP}, Action{})
	for i, msg := range []string{"PORT 10,0,0,9,0,25\r\n", "PORT 10,0,0,1,300,1\r\n", "EPRT |2|::1|21|\r\n"} {
		st, _ := exec(t, tr, tcp4(c, s, 40000, 21, psh|ack, 1001+uint32(i*20), 5001, msg), Action{})
		if st&inv == 0 {
			t.Errorf("%q: %s", msg, StateString(st))
		}
	}
	if tr.Expectations() != 0 {
		t.Errorf("%d expectations", tr.Expectations())
	}
}

func TestTFTP(t *testing.T) {
	tr, _ := newTracker(t)
	c, s := "10.0.0.1", "10.0.0.2"
	if st, _ := exec(t, tr, udp4(c, s, 5000, 69), Action{Commit: true, Helper: HelperTFTP}); st != trk|nw {
		t.Fatalf("request: %s", StateString(st))
	}
	if st, _ := exec(t, tr, udp4(s, c, 6000, 5000), Action{Commit: true}); st != trk|nw|rel {
		t.Errorf("reply from another port: %s", StateString(st))
	}
	if st, _ := exec(t, tr, udp4(c, s, 5000, 6000), Action{}); st != trk|est|rpl {
		t.Errorf("client's ack: %s", StateString(st))
	}
	// Without the helper, nothing is expected.
	exec(t, tr, udp4(c, s, 5001, 69), Action{Commit: true})
	if st, _ := exec(t, tr, udp4(s, c, 6001, 5001), Action{}); st != trk|nw {
		t.Errorf("reply without helper: %s", StateString(st))
	}
	if _, err := tr.ExecuteSized(1, udp4(c, s, 1, 2), &Meta{}, &Action{Helper: "sip"}, false); err != ErrUnsupported {
		t.Errorf("helper sip: %v", err)
	}
}

// Expectations are bounded and go with their parent.
func TestExpectationBound(t *testing.T) {
	tr, clk := newTracker(t)
	tr.SetLiberal(true) // the client acknowledges none of the replies
	c, s := "10.0.0.1", "10.0.0.2"
	ftpSession(t, tr, c, s, Action{Commit: true, Helper: HelperFTP}, Action{})
	seq := uint32(5001)
	for p := 1; p <= maxExpectations+100; p++ {
		msg := "227 ok (10,0,0,2," + itoa(p>>8) + "," + itoa(p&0xff) + ")\r\n"
		exec(t, tr, tcp4(s, c, 21, 40000, psh|ack, seq, 1001, msg), Action{})
		seq += uint32(len(msg))
	}
	if n := tr.Expectations(); n != maxExpectations {
		t.Errorf("%d expectations, want the bound %d", n, maxExpectations)
	}
	tr.Flush(-1)
	clk.advance(1)
	tr.Sweep()
	if n := tr.Expectations(); n != 0 {
		t.Errorf("%d expectations after their parent went", n)
	}
}

func itoa(i int) string { return netip.AddrFrom4([4]byte{0, 0, 0, byte(i)}).String()[6:] }

func TestParseFTP(t *testing.T) {
	for _, tc := range []struct {
		msg       string
		v6        bool
		cmd, ok   bool
		port      uint16
		addr      string
		addrField string
	}{
		{"PORT 10,0,0,1,4,1\r\n", false, true, true, 1025, "10.0.0.1", "10,0,0,1"},
		{"port 10,0,0,1,4,1\r\n", false, true, true, 1025, "10.0.0.1", "10,0,0,1"},
		{"227 Entering Passive Mode (192,168,1,20,195,80).\r\n", false, true, true, 50000, "192.168.1.20", "192,168,1,20"},
		{"227 =10,0,0,2,0,21\r\n", false, true, true, 21, "10.0.0.2", "10,0,0,2"},
		{"EPRT |1|10.0.0.1|6275|\r\n", false, true, true, 6275, "10.0.0.1", "10.0.0.1"},
		{"EPRT |2|fd00::1|6275|\r\n", true, true, true, 6275, "fd00::1", "fd00::1"},
		{"229 Entering Extended Passive Mode (|||6446|)\r\n", true, true, true, 6446, "", ""},
		{"229 Entering Extended Passive Mode (!!!6446!)\r\n", false, true, true, 6446, "", ""},
		{"PORT 10,0,0,1,4\r\n", false, true, false, 0, "", ""},
		{"PORT 10,0,0,1,4,256\r\n", false, true, false, 0, "", ""},
		{"PORT 10,0,0,1,0,0\r\n", false, true, false, 0, "", ""},
		{"PORT 1000,0,0,1,4,1\r\n", false, true, false, 0, "", ""},
		{"PORT\r\n10,0,0,1,4,1", false, false, false, 0, "", ""},
		{"EPRT |2|fd00::1|6275|\r\n", false, true, false, 0, "", ""},
		{"EPRT |1|10.0.0.1|99999|\r\n", false, true, false, 0, "", ""},
		{"229 (|||0|)", true, true, false, 0, "", ""},
		{"PORT 10,0,0,1,4,1\r\n", true, false, false, 0, "", ""},
		{"USER anonymous\r\n", false, false, false, 0, "", ""},
		{"", false, false, false, 0, "", ""},
	} {
		m, cmd, ok := parseFTP([]byte(tc.msg), tc.v6)
		if cmd != tc.cmd || ok != tc.ok {
			t.Errorf("%q: cmd %v ok %v, want %v %v", tc.msg, cmd, ok, tc.cmd, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if m.port != tc.port || tc.addr != "" && m.addr != netip.MustParseAddr(tc.addr) ||
			tc.msg[m.addrOff:m.addrOff+m.addrLen] != tc.addrField {
			t.Errorf("%q: port %d addr %s field %q", tc.msg, m.port, m.addr, tc.msg[m.addrOff:m.addrOff+m.addrLen])
		}
	}
}

// FuzzParseFTP: no panic, and what parses names a field inside the
// message.
func FuzzParseFTP(f *testing.F) {
	for _, s := range []string{"PORT 10,0,0,1,4,1\r\n", "227 Entering Passive Mode (192,168,1,20,195,80).\r\n",
		"EPRT |2|fd00::1|6275|\r\n", "EPRT |1|10.0.0.1|6275|\r\n", "229 Entering Extended Passive Mode (|||6446|)\r\n"} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, msg []byte, v6 bool) {
		m, _, ok := parseFTP(msg, v6)
		if !ok {
			return
		}
		if m.port == 0 || m.addrOff < 0 || m.addrOff+m.addrLen > len(msg) {
			t.Fatalf("%q: %+v", msg, m)
		}
	})
}

// FuzzFTPControl sends an arbitrary control segment each way through an
// FTP connection under SNAT: the frame stays well-formed (lengths and
// checksums) and within its buffer.
func FuzzFTPControl(f *testing.F) {
	f.Add([]byte("PORT 10,0,0,1,4,1\r\n"), false)
	f.Add([]byte("227 Entering Passive Mode (10,0,0,2,4,1)\r\n"), true)
	f.Add([]byte("EPRT |1|10.0.0.1|6275|\r\n"), false)
	f.Fuzz(func(t *testing.T, payload []byte, reply bool) {
		if len(payload) > 1400 {
			return
		}
		tr := New(Config{})
		defer tr.Close()
		c, s, x := "10.0.0.1", "10.0.0.2", "192.168.0.100"
		act := Action{Commit: true, Helper: HelperFTP, NAT: &NATRange{Src: true, MinAddr: a4(x), MaxAddr: a4(x)}}
		ftpSession(t, tr, c, s, act, Action{NAT: &NATRange{}})
		fr := tcp4(c, s, 40000, 21, psh|ack, 1001, 5001, string(payload))
		if reply {
			fr = tcp4(s, x, 21, 40000, psh|ack, 5001, 1001, string(payload))
		}
		_, out := exec(t, tr, fr, Action{NAT: &NATRange{}})
		if len(out) > len(fr)+64 {
			t.Fatalf("grew past its buffer")
		}
		if got := int(binary.BigEndian.Uint16(out[16:])); got != len(out)-14 {
			t.Fatalf("IP length %d, frame %d", got, len(out)-14)
		}
		checkCsums(t, out)
		if !bytes.Equal(out[:12], fr[:12]) {
			t.Fatalf("Ethernet header changed")
		}
	})
}

// Execute (ExecuteAt) cannot report a new length: it leaves the PORT
// address alone rather than resize the frame.
func TestFTPExecuteKeepsLength(t *testing.T) {
	tr, _ := newTracker(t)
	c, s, x := "10.0.0.1", "10.0.0.2", "192.168.0.100"
	act := Action{Commit: true, Helper: HelperFTP, NAT: &NATRange{Src: true, MinAddr: a4(x), MaxAddr: a4(x)}}
	ftpSession(t, tr, c, s, act, Action{NAT: &NATRange{}})
	f := roomy(tcp4(c, s, 40000, 21, psh|ack, 1001, 5001, "PORT 10,0,0,1,156,65\r\n"))
	var md Meta
	if err := tr.Execute(f, &md, &Action{NAT: &NATRange{}}, false); err != nil {
		t.Fatal(err)
	}
	if got := tcpPayload(f); got != "PORT 10,0,0,1,156,65\r\n" || md.State&est == 0 {
		t.Errorf("%s %q", StateString(md.State), got)
	}
	checkCsums(t, f)
}

func tcp6(src, dst string, sport, dport uint16, flags uint16, seq, ack uint32, payload string) []byte {
	f := dptest.Frame{Dst: macB, Src: macA,
		IPv6:    &dptest.IPv6{Src: ip(src), Dst: ip(dst)},
		TCP:     &dptest.TCP{Src: sport, Dst: dport, Flags: flags, Seq: seq, Ack: ack},
		Payload: []byte(payload)}
	return f.Checksummed()
}

// Active FTP over IPv6 through SNAT: EPRT's address becomes the
// translated one (the frame grows), the IPv6 payload length and the TCP
// checksum follow, and the server's connection to it is related.
func TestFTPActiveSNAT6(t *testing.T) {
	tr, _ := newTracker(t)
	c, s, x := "fd00::1", "fd00::2", "fd00::abcd:100"
	var xa [16]byte
	copy(xa[:], ip(x).AsSlice())
	act := Action{Commit: true, Helper: HelperFTP, NAT: &NATRange{Src: true, V6: true, MinAddr: xa, MaxAddr: xa}}
	back := Action{NAT: &NATRange{}}
	exec(t, tr, tcp6(c, s, 40000, 21, syn, 1000, 0, ""), act)
	exec(t, tr, tcp6(s, x, 21, 40000, syn|ack, 5000, 1001, ""), back)
	exec(t, tr, tcp6(c, s, 40000, 21, ack, 1001, 5001, ""), back)
	st, out := exec(t, tr, tcp6(c, s, 40000, 21, psh|ack, 1001, 5001, "EPRT |2|fd00::1|6275|\r\n"), back)
	if want := "EPRT |2|fd00::abcd:100|6275|\r\n"; tcpPayload(out) != want || st&est == 0 {
		t.Fatalf("EPRT: %s %q", StateString(st), tcpPayload(out))
	}
	if got := int(binary.BigEndian.Uint16(out[14+4:])); got != len(out)-14-40 {
		t.Errorf("payload length %d, frame %d", got, len(out)-14-40)
	}
	checkCsums(t, out)
	st, out = exec(t, tr, tcp6(s, x, 20, 6275, syn, 1, 0, ""), Action{Commit: true, NAT: &NATRange{}})
	if st != trk|nw|rel|StateDstNAT || addrOf(out, false) != ip(c) {
		t.Errorf("data SYN: %s to %s", StateString(st), addrOf(out, false))
	}
}
