package packet

import (
	"bytes"
	"testing"
)

func TestPacketFrame(t *testing.T) {
	p := New()
	if p.Len() != 0 || p.Headroom() != Headroom || len(p.Tail()) != MaxFrame {
		t.Fatalf("new packet: len %d headroom %d tail %d", p.Len(), p.Headroom(), len(p.Tail()))
	}
	copy(p.Tail(), "abcdef")
	p.SetLen(6)
	copy(p.Push(2), "xy")
	if got := string(p.Data()); got != "xyabcdef" {
		t.Fatalf("after Push: %q", got)
	}
	p.Pull(3)
	if got := string(p.Data()); got != "bcdef" {
		t.Fatalf("after Pull: %q", got)
	}
}

func TestSetDataCopyFrom(t *testing.T) {
	p := New()
	p.Offload = Offload{Flags: NeedsCsum, CsumStart: 34, CsumOffset: 16}
	p.InPort = 3
	p.Push(5)
	src := []byte("hello, frame")
	p.SetData(src)
	src[0] = 'X'
	if string(p.Data()) != "hello, frame" || p.Headroom() != Headroom || p.InPort != 3 || p.Offload.CsumStart != 34 {
		t.Fatalf("SetData: %q headroom %d in_port %d", p.Data(), p.Headroom(), p.InPort)
	}
	q := New()
	q.CopyFrom(p)
	if !bytes.Equal(q.Data(), p.Data()) || q.Offload != p.Offload || q.InPort != p.InPort {
		t.Fatal("CopyFrom: not a copy")
	}
	q.Data()[0] = 'J'
	if p.Data()[0] != 'h' {
		t.Fatal("CopyFrom shares the buffer")
	}
	defer func() {
		if recover() == nil {
			t.Error("SetData of an oversize frame did not panic")
		}
	}()
	p.SetData(make([]byte, MaxFrame+1))
}

func TestInsertVLAN(t *testing.T) {
	for _, tc := range []struct {
		name    string
		o, want Offload
	}{
		{"plain", Offload{}, Offload{}},
		{"partial", Offload{Flags: NeedsCsum, HdrLen: 54, CsumStart: 34, CsumOffset: 16},
			Offload{Flags: NeedsCsum, HdrLen: 58, CsumStart: 38, CsumOffset: 16}},
		{"gso", Offload{Flags: NeedsCsum, GSO: GSOTCPv4, GSOSize: 1448, HdrLen: 54, CsumStart: 34, CsumOffset: 16},
			Offload{Flags: NeedsCsum, GSO: GSOTCPv4, GSOSize: 1448, HdrLen: 58, CsumStart: 38, CsumOffset: 16}},
		{"valid", Offload{Flags: CsumValid}, Offload{Flags: CsumValid}},
	} {
		p := New()
		frame := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x08, 0x00, 0x45}
		p.SetData(frame)
		p.Offload = tc.o
		if !p.InsertVLAN(0x88a8, 0x1234) {
			t.Fatalf("%s: InsertVLAN failed", tc.name)
		}
		want := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x88, 0xa8, 0x12, 0x34, 0x08, 0x00, 0x45}
		if !bytes.Equal(p.Data(), want) {
			t.Errorf("%s: % x", tc.name, p.Data())
		}
		if p.Offload != tc.want {
			t.Errorf("%s: offload %+v, want %+v", tc.name, p.Offload, tc.want)
		}
	}
	p := New()
	p.SetData(make([]byte, 11))
	if p.InsertVLAN(0x8100, 1) || p.Len() != 11 {
		t.Error("InsertVLAN on a runt frame")
	}
	p.SetData(make([]byte, 20))
	p.Pull(0)
	p.Push(Headroom - 2)
	if p.InsertVLAN(0x8100, 1) {
		t.Error("InsertVLAN without headroom")
	}
}

func TestPool(t *testing.T) {
	var pl Pool
	p := pl.Get()
	p.SetData([]byte("dirty"))
	p.Push(4)
	p.Offload.GSO = GSOTCPv6
	p.InPort = 9
	pl.Put(p)
	for range 100 {
		q := pl.Get()
		if q.Len() != 0 || q.Headroom() != Headroom || q.Offload != (Offload{}) || q.InPort != 0 {
			t.Fatalf("Get returned a packet not reset: len %d headroom %d %+v", q.Len(), q.Headroom(), q.Offload)
		}
		defer pl.Put(q)
	}
	batch := make([]*Packet, 8)
	pl.GetBatch(batch)
	for _, b := range batch {
		if b == nil {
			t.Fatal("GetBatch left a hole")
		}
	}
	pl.PutBatch(batch)
	for _, b := range batch {
		if b != nil {
			t.Fatal("PutBatch did not clear the slice")
		}
	}
}

func BenchmarkPool(b *testing.B) {
	var pl Pool
	pl.Put(New())
	b.ReportAllocs()
	for b.Loop() {
		pl.Put(pl.Get())
	}
}

// extOwner is an External that counts its calls.
type extOwner struct{ copies, releases int }

func (o *extOwner) CopyExternal(dst, src []byte) { o.copies++; copy(dst, src) }
func (o *extOwner) ReleaseExternal()             { o.releases++ }

func externalPacket(head, tail string) (*Packet, *extOwner) {
	p := New()
	p.SetLen(copy(p.Tail(), head))
	o := &extOwner{}
	p.SetExternal([]byte(tail), o)
	return p, o
}

func TestExternalTail(t *testing.T) {
	p, o := externalPacket("head:", "tail")
	if p.Len() != 9 || string(p.Head()) != "head:" || string(p.Ext()) != "tail" {
		t.Fatalf("len %d head %q ext %q", p.Len(), p.Head(), p.Ext())
	}
	b := make([]byte, 9)
	if n := p.CopyTo(b); n != 9 || string(b) != "head:tail" || o.releases != 0 {
		t.Fatalf("CopyTo: %d %q, %d releases", n, b, o.releases)
	}
	q := New()
	q.CopyFrom(p)
	if q.Ext() != nil || string(q.Data()) != "head:tail" || o.releases != 0 || p.Ext() == nil {
		t.Fatalf("CopyFrom: %q ext %q, %d releases", q.Head(), q.Ext(), o.releases)
	}
	if string(p.Data()) != "head:tail" || p.Ext() != nil || o.releases != 1 {
		t.Fatalf("Data: %q ext %q, %d releases", p.Head(), p.Ext(), o.releases)
	}
	p.Reset()
	if o.releases != 1 {
		t.Fatalf("released %d times", o.releases)
	}

	p, o = externalPacket("head:", "tail")
	p.Reset()
	p.Reset()
	if o.releases != 1 || o.copies != 0 || p.Len() != 0 {
		t.Fatalf("Reset: %d releases, %d copies, len %d", o.releases, o.copies, p.Len())
	}
	p, o = externalPacket("head:", "tail")
	p.SetData([]byte("new"))
	if o.releases != 1 || string(p.Data()) != "new" {
		t.Fatalf("SetData: %d releases, %q", o.releases, p.Data())
	}
	p, o = externalPacket("head:", "")
	if o.releases != 1 || p.Ext() != nil {
		t.Fatalf("empty tail: %d releases", o.releases)
	}
}

// A frame whose head starts past the standard headroom still linearizes
// when its tail fills the rest of a full-size frame.
func TestLinearizeFullFrame(t *testing.T) {
	tail := bytes.Repeat([]byte{'t'}, MaxFrame-16)
	p := New()
	p.Pull(100)
	p.SetLen(copy(p.Tail(), "0123456789abcdef"))
	o := &extOwner{}
	p.SetExternal(tail, o)
	p.Linearize()
	got := p.Data()
	if len(got) != MaxFrame || string(got[:16]) != "0123456789abcdef" || !bytes.Equal(got[16:], tail) || o.releases != 1 || o.copies != 1 {
		t.Fatalf("linearized %d bytes %q..., %d releases", len(got), got[:16], o.releases)
	}
}

// A full-size frame with a tag pushed in front and its tail external is
// copied whole.
func TestCopyFromLongest(t *testing.T) {
	tail := bytes.Repeat([]byte{'t'}, MaxFrame-16)
	p := New()
	p.SetLen(copy(p.Tail(), "0123456789abcdef"))
	o := &extOwner{}
	p.SetExternal(tail, o)
	if !p.InsertVLAN(0x8100, 5) || p.Len() != MaxFrame+4 {
		t.Fatalf("len %d after a tag", p.Len())
	}
	q := New()
	q.CopyFrom(p)
	want := make([]byte, p.Len())
	p.CopyTo(want)
	if !bytes.Equal(q.Data(), want) || o.releases != 0 {
		t.Fatalf("copy of %d bytes, want %d; %d releases", q.Len(), len(want), o.releases)
	}
}

// Reserve moves a frame back in its buffer to make more headroom than
// Headroom, keeping its bytes; a frame that would not fit stays put.
func TestReserve(t *testing.T) {
	p := New()
	f := []byte("0123456789abcdef")
	p.SetData(f)
	if !p.Reserve(Headroom) || p.Headroom() != Headroom {
		t.Fatalf("Reserve(Headroom): headroom %d", p.Headroom())
	}
	if !p.Reserve(400) || p.Headroom() != 400 || !bytes.Equal(p.Data(), f) {
		t.Fatalf("Reserve(400): headroom %d, frame %q", p.Headroom(), p.Data())
	}
	if h := p.Push(400); len(h) != 400 || p.Len() != 416 {
		t.Fatalf("Push after Reserve: %d, len %d", len(h), p.Len())
	}
	q := New()
	q.SetData(make([]byte, MaxFrame))
	if q.Reserve(Headroom+1) || q.Headroom() != Headroom || q.Len() != MaxFrame {
		t.Errorf("Reserve of a full buffer: headroom %d, len %d", q.Headroom(), q.Len())
	}
}
