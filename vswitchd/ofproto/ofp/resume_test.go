package ofp

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// resumeOf turns a paused NXT_PACKET_IN2 into the NXT_RESUME that
// `ovs-ofctl monitor resume` sends back: the same properties under
// subtype NXT_RESUME (without the userdata it drops, harmless here).
func resumeOf(pin []byte) []byte {
	b := bytes.Clone(pin)
	binary.BigEndian.PutUint32(b[12:], nxtResume)
	return b
}

func testPausedPacketIn(v Version) []byte {
	pi := &PacketIn{Reason: PacketInAction, TableID: 1, Cookie: 7, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 8, 0}, TotalLen: 14,
		Cont: &Continuation{Bridge: [16]byte{1, 2, 3}, TableID: 1, Cookie: 7, Stack: make([]byte, 16),
			Actions: []Action{{Type: ActResubmit, Port: PortInPort, Table: 3}, {Type: ActOutput, Port: 2}}}}
	pi.Metadata.InPort, pi.Metadata.Regs[2] = 1, 0x2a
	return EncodePacketIn(v, PacketInNXT2, pi)
}

// A continuation goes up in NXT_PACKET_IN2 and comes back, as NXT_RESUME,
// to the same continuation and metadata; damaged ones are refused with
// OVS's property errors.
func TestResumeCodec(t *testing.T) {
	for _, v := range []Version{V10, V13, V15} {
		msg := resumeOf(testPausedPacketIn(v))
		m, err := Decode(msg)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		r, ok := m.(*Resume)
		if !ok || r.Continuation == nil {
			t.Fatalf("%s: decoded as %#v", v, m)
		}
		c := r.Continuation
		if c.Bridge != [16]byte{1, 2, 3} || c.TableID != 1 || c.Cookie != 7 || len(c.Stack) != 16 || len(c.Actions) != 2 ||
			c.Actions[0].Type != ActResubmit || c.Actions[0].Table != 3 || c.Actions[1].Port != 2 {
			t.Errorf("%s: continuation %+v", v, c)
		}
		if r.Metadata.Flow.InPort != 1 || r.Metadata.Flow.Regs[2] != 0x2a || len(r.Data) != 14 {
			t.Errorf("%s: metadata %+v, %d bytes", v, r.Metadata.Flow, len(r.Data))
		}
	}
	good := resumeOf(testPausedPacketIn(V13))
	for _, tc := range []struct {
		name string
		edit func(b []byte) []byte
		want Errno
	}{
		{"unknown property", func(b []byte) []byte { binary.BigEndian.PutUint16(b[16:], 99); return b }, BadAsyncProp},
		{"property past the end", func(b []byte) []byte { binary.BigEndian.PutUint16(b[18:], 0x4000); return b }, BadAsyncLen},
		{"short property", func(b []byte) []byte { binary.BigEndian.PutUint16(b[18:], 3); return b }, BadAsyncLen},
	} {
		b := tc.edit(bytes.Clone(good))
		_, err := Decode(b)
		if e, ok := err.(*Error); !ok || e.Errno != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
}

func FuzzResume(f *testing.F) {
	f.Add(resumeOf(testPausedPacketIn(V13)))
	f.Add(resumeOf(testPausedPacketIn(V10)))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		r, ok := m.(*Resume)
		if err != nil || !ok || r.Continuation == nil || reEncoded(r.Continuation.Actions, r.Version) {
			return // unsupported actions (refused on resume) are not encoded back
		}
		// What decodes encodes back and decodes the same.
		pi := &PacketIn{Data: r.Data, TotalLen: len(r.Data), Metadata: r.Metadata.Flow, Cont: r.Continuation}
		m2, err := Decode(resumeOf(EncodePacketIn(r.Version, PacketInNXT2, pi)))
		if err != nil {
			t.Fatalf("re-encoded resume: %v", err)
		}
		c2 := m2.(*Resume).Continuation
		if c2.Bridge != r.Continuation.Bridge || len(c2.Actions) != len(r.Continuation.Actions) || !bytes.Equal(c2.Stack, r.Continuation.Stack) {
			t.Fatalf("re-encoded %+v as %+v", r.Continuation, c2)
		}
	})
}
