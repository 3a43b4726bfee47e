package rstp

import (
	"bytes"
	"strings"
	"testing"
)

func TestBPDURoundTrip(t *testing.T) {
	for _, m := range []BPDU{
		{Version: 2, Type: TypeRST, Flags: FlagProposal | bpduRoleDesignated<<roleShift,
			Vector: Vector{RootID: 0x1000_000000000001, RootPathCost: 2000, DesignatedBridgeID: 0x8000_000000000002, DesignatedPortID: 0x8001},
			Times:  Times{MessageAge: 1, MaxAge: 20, HelloTime: 2, ForwardDelay: 15}},
		{Type: TypeConfig, Flags: FlagTC, Times: Times{MaxAge: 20, HelloTime: 2, ForwardDelay: 15}},
		{Type: TypeTCN},
	} {
		src := [6]byte{2, 0, 0, 0, 0, 1}
		f := Frame(src, m.Encode())
		b, err := ParseFrame(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(b)
		if err != nil || got != m {
			t.Errorf("Decode(Encode(%+v)) = %+v, %v", m, got, err)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	rst := BPDU{Version: 2, Type: TypeRST, Times: Times{MaxAge: 20}}.Encode()
	cfg := BPDU{Type: TypeConfig, Times: Times{MessageAge: 20, MaxAge: 20}}.Encode()
	for _, c := range []struct {
		b   []byte
		err error
	}{
		{[]byte{0, 0}, ErrShort},
		{[]byte{0, 1, 0, 0x80}, ErrProtocol},
		{[]byte{0, 0, 0, 0x33}, ErrType},
		{rst[:35], ErrShort},
		{cfg, ErrAge},
	} {
		if _, err := Decode(c.b); err != c.err {
			t.Errorf("Decode(%x) = %v, want %v", c.b, err, c.err)
		}
	}
	if _, err := ParseFrame(bytes.Repeat([]byte{1}, 20)); err == nil {
		t.Error("ParseFrame takes a frame not to the bridge group address")
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(BPDU{Version: 2, Type: TypeRST, Times: Times{MaxAge: 20}}.Encode())
	f.Add(BPDU{Type: TypeConfig, Times: Times{MaxAge: 20}}.Encode())
	f.Add(BPDU{Type: TypeTCN}.Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Decode(m.Encode())
		if err != nil || again != m {
			t.Fatalf("%x: decoded %+v, re-encoded it decodes as %+v, %v", b, m, again, err)
		}
		// A bridge takes whatever decodes without falling over.
		n := New("br0", DefaultConfig([6]byte{0, 0, 0, 0, 0, 1}), nil, nil)
		n.SetPort("p", PortConfig{Priority: 128, PathCost: 2000, AutoEdge: true})
		n.SetEnabled("p", true)
		if err := n.Receive("p", b); err != nil && !strings.Contains(err.Error(), "looped") {
			t.Fatal(err)
		}
		n.Tick()
	})
}

func TestShow(t *testing.T) {
	n := loop(t)
	var w strings.Builder
	n.bridges["b"].Show(&w)
	want := `---- b ----
Root ID:
  stp-priority    4096
  stp-system-id   00:00:00:00:00:01
  stp-hello-time  2s
  stp-max-age     20s
  stp-fwd-delay   15s
  root-port       p1
  root-path-cost  2000

Bridge ID:
  stp-priority    32768
  stp-system-id   00:00:00:00:00:02
  stp-hello-time  2s
  stp-max-age     20s
  stp-fwd-delay   15s

` + "  Interface  Role       State      Cost     Pri.Nbr \n" + // OVS pads the last title too
		`  ---------- ---------- ---------- -------- -------
  p1         Root       Forwarding 2000     128.1
  p2         Alternate  Discarding 2000     128.2

`
	if w.String() != want {
		t.Errorf("Show:\n%q\nwant:\n%q", w.String(), want)
	}
}
