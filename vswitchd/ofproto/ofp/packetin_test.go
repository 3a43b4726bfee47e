package ofp

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestEncodePacketIn checks each format's fixed part: unbuffered, the
// total length, the reason as the version reports it, the table, the
// cookie, the metadata match and the frame last.
func TestEncodePacketIn(t *testing.T) {
	frame := bytes.Repeat([]byte{0xab}, 60)
	pi := &PacketIn{Reason: PacketInAction, ExplicitMiss: true, TableID: 3, Cookie: 7, Data: frame, TotalLen: 64}
	pi.Metadata.InPort = 1
	pi.Metadata.Regs[1] = 5

	b := EncodePacketIn(V10, PacketInStandard, pi)
	if b[1] != TypePacketIn || int(binary.BigEndian.Uint16(b[2:])) != len(b) || len(b) != 18+60 ||
		binary.BigEndian.Uint32(b[8:]) != NoBuffer || binary.BigEndian.Uint16(b[12:]) != 64 ||
		binary.BigEndian.Uint16(b[14:]) != 1 || b[16] != PacketInAction {
		t.Errorf("OpenFlow 1.0: % x", b[:18])
	}

	b = EncodePacketIn(V13, PacketInStandard, pi)
	if b[1] != TypePacketIn || b[14] != PacketInNoMatch || b[15] != 3 || binary.BigEndian.Uint64(b[16:]) != 7 {
		t.Errorf("OpenFlow 1.3 (explicit miss is no_match): % x", b[:24])
	}
	// ofp_match: type 1, in_port (8 bytes) and reg1 (8 bytes) entries.
	if mlen := int(binary.BigEndian.Uint16(b[26:])); mlen != 4+8+8 || !bytes.Equal(b[len(b)-60:], frame) ||
		len(b) != 24+24+2+60 {
		t.Errorf("OpenFlow 1.3 match/data: len %d, % x", len(b), b[24:])
	}

	b = EncodePacketIn(V10, PacketInNXT, pi)
	if b[1] != TypeVendor || binary.BigEndian.Uint32(b[12:]) != nxtPacketIn || b[22] != PacketInAction ||
		!bytes.Equal(b[len(b)-60:], frame) {
		t.Errorf("NXT_PACKET_IN: % x", b)
	}

	b = EncodePacketIn(V13, PacketInNXT2, pi)
	if binary.BigEndian.Uint32(b[12:]) != nxtPacketIn2 || binary.BigEndian.Uint16(b[16:]) != nxpintPacket ||
		!bytes.Equal(b[20:80], frame) || int(binary.BigEndian.Uint16(b[2:])) != len(b) || len(b)%8 != 0 {
		t.Errorf("NXT_PACKET_IN2: % x", b)
	}
}
