package stp

import (
	"strings"
	"testing"
)

// end is one side of a link: a bridge and its port number.
type end struct{ br, port int }

// lan is bridges joined by links, delivering BPDUs in memory.
type lan struct {
	brs   []*STP
	links map[end]end
	queue []struct {
		to   end
		bpdu []byte
	}
}

func newNet(t *testing.T, macs ...byte) *lan {
	n := &lan{links: map[end]end{}}
	for i, m := range macs {
		i := i
		s := New("br"+string(rune('a'+i)), NewID(0, [6]byte{2, 0, 0, 0, 0, m}), func(no int, b []byte) {
			if peer, ok := n.links[end{i, no}]; ok {
				n.queue = append(n.queue, struct {
					to   end
					bpdu []byte
				}{peer, b})
			}
		}, nil)
		s.SetTimes(1000, 6000, 4000)
		n.brs = append(n.brs, s)
	}
	return n
}

func (n *lan) link(a, b end) {
	n.links[a], n.links[b] = b, a
	for _, e := range []end{a, b} {
		p := n.brs[e.br].Port(e.port)
		p.SetName("p" + string(rune('0'+e.port)))
		p.Enable()
	}
}

// run advances every bridge by ms in steps of 100 ms, delivering BPDUs.
func (n *lan) run(t *testing.T, ms int) {
	for range ms / 100 {
		for _, s := range n.brs {
			s.Tick(100)
		}
		for len(n.queue) > 0 {
			q := n.queue[0]
			n.queue = n.queue[1:]
			// Through a frame and back, as on the wire.
			payload, ok := Payload(Frame([6]byte{2}, q.bpdu))
			if !ok {
				t.Fatal("Payload refused a frame")
			}
			if err := n.brs[q.to.br].Received(q.to.port, payload); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestLoopBlocksOnePort: three bridges in a triangle elect the lowest ID
// as root; once converged exactly one port in the ring blocks, and every
// other port forwards.
func TestLoopBlocksOnePort(t *testing.T) {
	n := newNet(t, 1, 2, 3)
	n.link(end{0, 0}, end{1, 0})
	n.link(end{1, 1}, end{2, 0})
	n.link(end{2, 1}, end{0, 1})
	n.run(t, 15000)
	for i, s := range n.brs {
		if s.DesignatedRoot() != n.brs[0].BridgeID() {
			t.Errorf("bridge %d: root %s, want %s", i, s.DesignatedRoot(), n.brs[0].BridgeID())
		}
	}
	blocking := 0
	for i, s := range n.brs {
		for _, no := range []int{0, 1} {
			switch st := s.Port(no).State(); st {
			case Blocking:
				blocking++
				if r := s.Port(no).Role(); r != RoleAlternate {
					t.Errorf("bridge %d port %d: blocking with role %s", i, no, r)
				}
			case Forwarding:
			default:
				t.Errorf("bridge %d port %d: %s", i, no, st)
			}
		}
	}
	if blocking != 1 {
		t.Errorf("%d blocking ports, want 1", blocking)
	}
	if !n.brs[0].IsRoot() || n.brs[1].Port(0).Role() != RoleRoot {
		t.Errorf("roles: root %v, bridge 1 port 0 %s", n.brs[0].IsRoot(), n.brs[1].Port(0).Role())
	}
	var w strings.Builder
	n.brs[1].Show(&w)
	if !strings.Contains(w.String(), "  root-port       p0\n  root-path-cost  19\n") ||
		!strings.Contains(w.String(), "  p0         root       forwarding 19    128.1\n") {
		t.Errorf("stp/show:\n%s", w.String())
	}

	// The root goes away (its ports disabled): the others elect bridge
	// 1 and unblock the ring's last link.
	n.brs[0].Port(0).Disable()
	n.brs[0].Port(1).Disable()
	delete(n.links, end{1, 0})
	delete(n.links, end{2, 1})
	n.run(t, 20000)
	for i, s := range n.brs[1:] {
		if s.DesignatedRoot() != n.brs[1].BridgeID() {
			t.Errorf("bridge %d: root %s after the root left", i+1, s.DesignatedRoot())
		}
	}
	if st := n.brs[2].Port(0).State(); st != Forwarding {
		t.Errorf("bridge 2 port 0: %s", st)
	}
}

// TestStatesProgress: a lone port goes listening, learning, forwarding,
// one forward delay apart, and only forwarding forwards.
func TestStatesProgress(t *testing.T) {
	s := New("br0", NewID(0, [6]byte{2}), nil, nil)
	s.SetTimes(1000, 6000, 4000)
	p := s.Port(0)
	p.Enable()
	want := []State{Listening, Listening, Learning, Learning, Forwarding}
	for i, st := range want {
		if p.State() != st {
			t.Fatalf("after %d s: %s, want %s", 2*i, p.State(), st)
		}
		s.Tick(2000)
	}
	if !Forwarding.Forwards() || Learning.Forwards() || !Learning.Learns() || Blocking.Learns() || !Disabled.Forwards() {
		t.Error("gate predicates")
	}
	if got := s.TakeChanged(); len(got) != 1 || got[0] != 0 {
		t.Errorf("TakeChanged: %v", got)
	}
	if s.BridgeID().String() != "8000.020000000000" {
		t.Errorf("bridge ID %s", s.BridgeID())
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, c := range []struct {
		b   []byte
		err string
	}{
		{[]byte{0, 0}, "received runt 2-byte BPDU"},
		{[]byte{0, 1, 0, 0}, "received BPDU with unexpected protocol ID 1"},
		{[]byte{0, 0, 0, 0, 0}, "received config BPDU with invalid size 5"},
		{[]byte{0, 0, 0, 0x80, 0}, "received TCN BPDU with invalid size 5"},
		{[]byte{0, 0, 0, 2}, "received BPDU of unexpected type 2"},
	} {
		if _, err := Decode(c.b); err == nil || err.Error() != c.err {
			t.Errorf("Decode(%x): %v, want %s", c.b, err, c.err)
		}
	}
	s := New("br0", 0, nil, nil)
	s.Port(3).Enable()
	if err := s.Received(3, []byte{1}); err == nil {
		t.Error("runt accepted")
	}
	if tx, rx, errs := s.Port(3).Counts(); rx != 0 || errs != 1 || tx != 0 {
		t.Errorf("counts %d %d %d", tx, rx, errs)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(BPDU{Type: TypeConfig, Flags: FlagTopologyChange, RootID: 1 << 60, BridgeID: 2, PortID: 0x8001, MaxAge: 6 << 8}.Encode())
	f.Add(BPDU{Type: TypeTCN}.Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		if p, ok := Payload(b); ok {
			Decode(p)
		}
		got, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Decode(got.Encode())
		if err != nil || again != got {
			t.Fatalf("re-decoding %+v: %+v, %v", got, again, err)
		}
		s := New("b", NewID(0, [6]byte{2}), func(int, []byte) {}, nil)
		s.Port(0).Enable()
		s.Received(0, b)
		s.Tick(3000)
	})
}

// TestShowAsDebian: stp/show of a lone root bridge reads as Debian's
// ovs-vswitchd 3.1 printed it for the same settings.
func TestShowAsDebian(t *testing.T) {
	s := New("br0", NewID(32768, [6]byte{2, 0, 0, 0, 0, 1}), nil, nil)
	s.SetTimes(1000, 6000, 4000)
	for no, name := range []string{"p0", "p1"} {
		p := s.Port(no)
		p.SetName(name)
		p.Enable()
		p.SetPathCost(2)
	}
	var w strings.Builder
	s.Show(&w)
	want := `---- br0 ----
Root ID:
  stp-priority  32768
  stp-system-id   02:00:00:00:00:01
  stp-hello-time  1s
  stp-max-age     6s
  stp-fwd-delay   4s
  This bridge is the root

Bridge ID:
  stp-priority  32768
  stp-system-id   02:00:00:00:00:01
  stp-hello-time  1s
  stp-max-age     6s
  stp-fwd-delay   4s

  Interface  Role       State      Cost  Pri.Nbr 
  ---------- ---------- ---------- ----- -------
  p0         designated listening  2     128.1
  p1         designated listening  2     128.2

`
	if w.String() != want {
		t.Errorf("stp/show:\n%s\nwant:\n%s", w.String(), want)
	}
}
