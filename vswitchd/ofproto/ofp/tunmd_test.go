package ofp

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// ovnTable maps OVN's Geneve option (class 0x102, type 0x80, 4 bytes) to
// tun_metadata0.
func ovnTable(t *testing.T) *TLVTable {
	t.Helper()
	tab, err := (*TLVTable)(nil).Apply(&TLVTableMod{Command: TLVAdd, Maps: []TLVMap{{Class: 0x102, Type: 0x80, Len: 4, Index: 0}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// tun_metadata0=0x1234 as ovs-ofctl sends it without the switch's map
// (2 bytes) is placed at the mapping and encoded back 4 bytes long, as
// OVS's tun_metadata_to_nx_match.
func TestTunMetadataMatch(t *testing.T) {
	tab := ovnTable(t)
	h := nxmHeader(classNXM1, 40, 2)
	b := binary.BigEndian.AppendUint32(nil, h)
	b = append(b, 0x12, 0x34)
	m, err := DecodeNXMatch(b)
	if err != nil {
		t.Fatal(err)
	}
	if e := m.ResolveTunMD(tab); e != nil {
		t.Fatal(e)
	}
	if m.Flow.TunMDPresent != 1 || m.Mask.TunMDPresent != 1 || !bytes.Equal(m.Flow.TunMD[:4], []byte{0, 0, 0x12, 0x34}) ||
		!bytes.Equal(m.Mask.TunMD[:4], []byte{0xff, 0xff, 0xff, 0xff}) {
		t.Fatalf("resolved: %x/%x present %x", m.Flow.TunMD[:4], m.Mask.TunMD[:4], m.Flow.TunMDPresent)
	}
	enc := AppendNXMatch(nil, &m, true)
	want := append(binary.BigEndian.AppendUint32(nil, nxmHeader(classNXM1, 40, 4)), 0, 0, 0x12, 0x34)
	if !bytes.Equal(enc, want) {
		t.Fatalf("encoded %x, want %x", enc, want)
	}
	// Masked.
	b = binary.BigEndian.AppendUint32(nil, nxmHeader(classNXM1, 40, 4)|0x100)
	b = append(b, 0x00, 0x34, 0x00, 0xff)
	m, _ = DecodeNXMatch(b)
	if e := m.ResolveTunMD(tab); e != nil {
		t.Fatal(e)
	}
	enc = AppendNXMatch(nil, &m, true)
	want = append(binary.BigEndian.AppendUint32(nil, nxmHeader(classNXM1, 40, 8)|0x100), 0, 0, 0, 0x34, 0, 0, 0, 0xff)
	if !bytes.Equal(enc, want) {
		t.Fatalf("masked: encoded %x, want %x", enc, want)
	}
	// Unmapped: OVS's NXFMFC_INVALID_TLV_FIELD; longer than the mapping:
	// its first bytes, as OVS's.
	b = append(binary.BigEndian.AppendUint32(nil, nxmHeader(classNXM1, 41, 4)), 0, 0, 0, 1)
	m, _ = DecodeNXMatch(b)
	if e := m.ResolveTunMD(tab); e == nil || e.Errno != InvalidTLVField {
		t.Errorf("unmapped: %v", e)
	}
	b = append(binary.BigEndian.AppendUint32(nil, nxmHeader(classNXM1, 40, 8)), 0, 0, 0, 1, 0, 0, 0, 1)
	m, _ = DecodeNXMatch(b)
	if e := m.ResolveTunMD(tab); e != nil || !bytes.Equal(m.Flow.TunMD[:4], []byte{0, 0, 0, 1}) {
		t.Errorf("too long: %v %x", e, m.Flow.TunMD[:4])
	}
}

// set_field and move on tun_metadata0 read and write the flow through
// its table, and become Geneve options.
func TestTunMetadataActions(t *testing.T) {
	tab := ovnTable(t)
	sf := binary.BigEndian.AppendUint32(nil, nxmHeader(classNXM1, 40, 4))
	sf = append(sf, 0x00, 0x0a, 0x00, 0x01)
	a, err := decodeSetField(V15, sf)
	if err != nil {
		t.Fatal(err)
	}
	mv, err := decodeMove(15, 16, 0, nxmHeader(classNXM1, 40, 4), nxmHeader(classNXM1, 14, 4)) // ->reg14[0..14]
	if err != nil {
		t.Fatal(err)
	}
	acts := []Action{a, mv}
	if e := ResolveActions(acts, tab); e != nil {
		t.Fatal(e)
	}
	f := Flow{TunTab: tab}
	acts[0].Field.SetMasked(&f, acts[0].Value, acts[0].Mask)
	Move(&f, acts[1].Src, acts[1].Dst)
	if f.Regs[14] != 0xa {
		t.Errorf("reg14 %#x after move", f.Regs[14])
	}
	if got, want := TunMDToOpts(&f), []byte{0x01, 0x02, 0x80, 0x01, 0x00, 0x0a, 0x00, 0x01}; !bytes.Equal(got, want) {
		t.Errorf("options %x, want %x", got, want)
	}
	enc := AppendActions(nil, V15, acts)
	back, err := DecodeActions(V15, enc)
	if err != nil || len(back) != 2 || TunMetadataIndex(back[0].Field) != 0 || back[0].Field.Len != 4 {
		t.Fatalf("round trip %x: %+v %v", enc, back, err)
	}
	if !ActionsUseTunMD(acts, 0) || ActionsUseTunMD(acts, 1) {
		t.Error("ActionsUseTunMD")
	}
	unmapped := []Action{{Type: ActSetField, Field: TunMetadataField(3, 4), Value: []byte{0, 0, 0, 1}, Mask: []byte{0xff, 0xff, 0xff, 0xff}}}
	if e := ResolveActions(unmapped, tab); e == nil || e.Errno != InvalidTLVField {
		t.Errorf("unmapped: %v", e)
	}
}

// A packet's options become tun_metadata as OVS's
// tun_metadata_from_geneve_udpif: unknown non-critical options are
// skipped, an unknown critical one or a mapped one of another length is
// refused.
func TestTunMDFromOpts(t *testing.T) {
	tab := ovnTable(t)
	for _, c := range []struct {
		opts []byte
		ok   bool
	}{
		{[]byte{0x01, 0x02, 0x80, 0x01, 0, 0x0a, 0, 0x01}, true},
		{[]byte{0xff, 0xff, 0x00, 0x01, 0, 0, 0, 9, 0x01, 0x02, 0x80, 0x01, 0, 0x0a, 0, 0x01}, true},
		{[]byte{0xff, 0xff, 0x80, 0x00}, false},
		{[]byte{0x01, 0x02, 0x80, 0x02, 0, 0, 0, 0, 0, 0, 0, 0}, false},
	} {
		var f Flow
		err := TunMDFromOpts(&f, tab, c.opts)
		if (err == nil) != c.ok {
			t.Errorf("%x: %v", c.opts, err)
			continue
		}
		if c.ok && (f.TunMDPresent != 1 || !bytes.Equal(f.TunMD[:4], []byte{0, 0x0a, 0, 0x01})) {
			t.Errorf("%x: tun_metadata %x present %x", c.opts, f.TunMD[:4], f.TunMDPresent)
		}
		if c.ok {
			mask := make([]byte, len(c.opts))
			wc := Flow{}
			wc.TunMD[2] = 0xff
			TunMDOptsMask(&wc, tab, c.opts, mask)
			if !bytes.Equal(mask[len(mask)-8:], []byte{0xff, 0xff, 0xff, 0x1f, 0, 0, 0xff, 0}) {
				t.Errorf("%x: mask %x", c.opts, mask)
			}
		}
	}
}
