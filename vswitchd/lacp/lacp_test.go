package lacp

import (
	"strings"
	"testing"
	"time"
)

func TestPDURoundTrip(t *testing.T) {
	p := PDU{
		Actor:   Info{SysPriority: 65534, SysID: [6]byte{2, 0, 0, 0, 0, 1}, Key: 3, PortPriority: 65535, PortID: 3, State: 0x3f},
		Partner: Info{SysPriority: 100, SysID: [6]byte{2, 0, 0, 0, 0, 2}, Key: 7, PortPriority: 1, PortID: 9, State: 0x45},
	}
	f := p.Frame([6]byte{2, 1, 2, 3, 4, 5})
	if len(f) != 14+PDULen {
		t.Fatalf("frame of %d bytes", len(f))
	}
	b, err := ParseFrame(f)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil || got != p {
		t.Fatalf("Decode: %+v, %v; want %+v", got, err, p)
	}
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"short", b[:PDULen-1], ErrShort},
		{"marker", append([]byte{SubtypeMarker}, b[1:]...), ErrMarker},
		{"bad actor tlv", append(append([]byte{}, b[:3]...), append([]byte{19}, b[4:]...)...), ErrInvalid},
	} {
		if _, err := Decode(c.b); err != c.want {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// pair runs two instances joined member to member (a0-b0, a1-b1), each
// PDU delivered at once; it returns after n rounds of one second.
type pair struct {
	a, b *LACP
	now  time.Time
	// cut stops delivery on link i.
	cut [2]bool
	// mute stops b from sending.
	mute bool
}

func (p *pair) round(t *testing.T) {
	t.Helper()
	p.now = p.now.Add(time.Second)
	p.a.Run(p.now, func(m string, pdu PDU) {
		i := int(m[1] - '0')
		if !p.cut[i] {
			if _, err := p.b.Process("b"+m[1:], pdu.Encode(), p.now); err != nil {
				t.Fatal(err)
			}
		}
	})
	p.b.Run(p.now, func(m string, pdu PDU) {
		i := int(m[1] - '0')
		if !p.cut[i] && !p.mute {
			if _, err := p.a.Process("a"+m[1:], pdu.Encode(), p.now); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func newPair(fallback bool) *pair {
	p := &pair{now: time.Unix(1000, 0)}
	p.a = New(Settings{Name: "bonda", SysID: [6]byte{2, 0, 0, 0, 0, 1}, SysPriority: 65534, Active: true, Fast: true, FallbackAB: fallback}, nil)
	p.b = New(Settings{Name: "bondb", SysID: [6]byte{2, 0, 0, 0, 0, 2}, SysPriority: 65534, Active: true}, nil)
	for i, n := range []string{"0", "1"} {
		p.a.Register("a"+n, MemberSettings{PortID: uint16(i + 1), PortPriority: 65535}, p.now)
		p.b.Register("b"+n, MemberSettings{PortID: uint16(i + 5), PortPriority: 65535}, p.now)
	}
	return p
}

func TestNegotiation(t *testing.T) {
	p := newPair(false)
	for range 3 {
		p.round(t)
	}
	for _, l := range []*LACP{p.a, p.b} {
		if l.Status() != Negotiated {
			t.Fatalf("%s: %v", l.s.Name, l.Status())
		}
	}
	for _, m := range []string{"a0", "a1"} {
		if !p.a.MayEnable(m) || !p.a.IsCurrent(m) {
			t.Errorf("%s: may_enable %t current %t", m, p.a.MayEnable(m), p.a.IsCurrent(m))
		}
	}
	var w strings.Builder
	p.a.Show(&w)
	for _, s := range []string{"  status: active negotiated\n", "\nmember: a0: current attached\n",
		"  actor state: activity timeout aggregation synchronized collecting distributing\n",
		"  partner sys_id: 02:00:00:00:00:02\n", "  aggregation key: 1\n", "  lacp_time: fast\n"} {
		if !strings.Contains(w.String(), s) {
			t.Errorf("lacp/show lacks %q:\n%s", s, w.String())
		}
	}

	// Link 0 loses its PDUs: expired after 3 s, defaulted 3 s later,
	// and then no longer enabled; link 1 carries on.
	p.cut[0] = true
	for range 7 {
		p.round(t)
	}
	if p.a.MayEnable("a0") || p.a.IsCurrent("a0") || !p.a.MayEnable("a1") || p.a.Status() != Negotiated {
		var w strings.Builder
		p.a.Show(&w)
		t.Errorf("after link 0 was cut:\n%s", w.String())
	}
	w.Reset()
	p.a.ShowStats(&w)
	if !strings.Contains(w.String(), "member: a0:\n") || !strings.Contains(w.String(), "  Link Expired: 1\n  Link Defaulted: 1\n") {
		t.Errorf("lacp/show-stats:\n%s", w.String())
	}
}

func TestSilentPartner(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		p := newPair(fallback)
		p.mute = true
		for range 8 {
			p.round(t)
		}
		if got := p.a.MayEnable("a0"); got != fallback {
			t.Errorf("fallback %t: may_enable %t", fallback, got)
		}
		if p.a.IsCurrent("a0") {
			t.Errorf("fallback %t: current without a partner", fallback)
		}
		// A member attached by fallback-ab does not make LACP negotiated.
		if p.a.Status() != Configured {
			t.Errorf("fallback %t: status %v", fallback, p.a.Status())
		}
	}
}

func FuzzDecode(f *testing.F) {
	p := PDU{Actor: Info{SysPriority: 1, Key: 2, PortID: 3, State: 0x3d}, Partner: Info{SysID: [6]byte{1, 2, 3, 4, 5, 6}}}
	f.Add(p.Encode())
	f.Add([]byte{SubtypeMarker})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Decode(got.Encode())
		if err != nil || again != got {
			t.Fatalf("re-decoding %+v: %+v, %v", got, again, err)
		}
		l := New(Settings{Name: "b", SysID: [6]byte{2}, SysPriority: 1, Active: true}, nil)
		now := time.Unix(0, 0)
		l.Register("m", MemberSettings{PortID: 1}, now)
		l.Process("m", b, now)
		l.Run(now, func(string, PDU) {})
	})
}

// TestPartnerViewSettles: once negotiated, each side's view of the other
// carries no expired or defaulted bit (the PDUs after the first ones say
// current).
func TestPartnerViewSettles(t *testing.T) {
	p := newPair(false)
	for range 3 {
		p.round(t)
	}
	for _, c := range []struct {
		l *LACP
		m string
	}{{p.a, "a0"}, {p.a, "a1"}, {p.b, "b0"}, {p.b, "b1"}} {
		if st := c.l.members[c.m].partner.State; st&(StateExpired|StateDefaulted) != 0 || st&StateSync == 0 {
			var w strings.Builder
			c.l.Show(&w)
			t.Errorf("%s's partner state%s\n%s", c.m, stateString(st), w.String())
		}
	}
}
