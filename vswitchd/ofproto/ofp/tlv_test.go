package ofp

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"os"
	"path/filepath"
	"testing"

	"github.com/govs/govs/datapath/flow"
)

// tlvModMsg builds an NXT_TLV_TABLE_MOD in version v.
func tlvModMsg(v Version, cmd uint16, maps ...TLVMap) []byte {
	b := newMsg(v, TypeVendor, 7, 0)
	b = put32(b, NiciraVendor)
	b = put32(b, nxtTLVTableMod)
	b = put16(b, cmd)
	b = pad(b, 6)
	return finish(appendTLVMaps(b, maps))
}

func decodeTLVMod(t *testing.T, b []byte) (*TLVTableMod, *Error) {
	t.Helper()
	m, err := Decode(b)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("untyped error %v", err)
		}
		return nil, e
	}
	return m.(*TLVTableMod), nil
}

// TestTLVTableMod follows what Debian's ovs-vswitchd answers to
// ovs-ofctl add-tlv-map and del-tlv-map.
func TestTLVTableMod(t *testing.T) {
	var tab *TLVTable
	apply := func(cmd uint16, inUse func(int) bool, maps ...TLVMap) *Error {
		t.Helper()
		m, err := decodeTLVMod(t, tlvModMsg(V10, cmd, maps...))
		if err != nil {
			return err
		}
		n, err := tab.Apply(m, inUse)
		if err == nil {
			tab = n
		}
		return err
	}
	want := func(e *Error, errno Errno) {
		t.Helper()
		if e == nil && errno != 0 || e != nil && e.Errno != errno {
			t.Fatalf("got %v, want %v", e, errno)
		}
	}
	want(apply(TLVAdd, nil, TLVMap{0xffff, 0, 4, 0}), 0)
	want(apply(TLVAdd, nil, TLVMap{0x102, 0x80, 4, 1}, TLVMap{0xffff, 1, 8, 5}), 0)
	want(apply(TLVAdd, nil, TLVMap{0xffff, 0, 4, 2}), TLVDupEntry)
	want(apply(TLVAdd, nil, TLVMap{0xffff, 9, 4, 0}), TLVAlreadyMapped)
	want(apply(TLVAdd, nil, TLVMap{0xffff, 9, 4, 9}, TLVMap{0xffff, 9, 4, 10}), TLVDupEntry)
	want(apply(TLVAdd, nil, TLVMap{0xffff, 9, 4, 9}, TLVMap{0xffff, 10, 4, 9}), TLVAlreadyMapped)
	want(apply(TLVAdd, nil, TLVMap{0xffff, 9, 124, 9}, TLVMap{0xffff, 10, 124, 10}), TLVTableFull)
	want(apply(TLVAdd, nil, TLVMap{0xffff, 9, 3, 9}), TLVBadOptLen)
	want(apply(TLVAdd, nil, TLVMap{0xffff, 9, 128, 9}), TLVBadOptLen)
	want(apply(TLVAdd, nil, TLVMap{0xffff, 9, 4, 64}), TLVBadFieldIdx)
	want(apply(3, nil), TLVBadCommand)
	if got := tab.Maps(); len(got) != 3 || got[0] != (TLVMap{0xffff, 0, 4, 0}) || got[2] != (TLVMap{0xffff, 1, 8, 5}) {
		t.Fatalf("maps %v", got)
	}
	// A failed mod changes nothing: tun_metadata9 was not added.
	if tab.Loc(9) != nil || bits.OnesCount64(tab.used) != 4 {
		t.Fatalf("a refused mod left tun_metadata9 %v, %d blocks", tab.Loc(9), bits.OnesCount64(tab.used))
	}
	used0 := func(i int) bool { return i == 0 }
	want(apply(TLVDelete, used0, TLVMap{0xffff, 0, 4, 0}), TLVInvalidDel)
	want(apply(TLVDelete, used0, TLVMap{0xffff, 0, 4, 3}), 0) // unmapped: nothing to do
	want(apply(TLVClear, used0), TLVInvalidDel)
	want(apply(TLVDelete, nil, TLVMap{0xffff, 0, 4, 0}), 0)
	if tab.Loc(0) != nil || bits.OnesCount64(tab.used) != 3 {
		t.Fatalf("after delete: %v", tab.Maps())
	}
	// The freed block is reused; the others keep their offsets.
	loc5 := tab.Loc(5).Blocks
	want(apply(TLVAdd, nil, TLVMap{0xffff, 7, 4, 7}), 0)
	if tab.Loc(7).Blocks[0] != 0 || tab.Loc(5).Blocks[1] != loc5[1] {
		t.Fatalf("tun_metadata7 at %v, tun_metadata5 at %v (was %v)", tab.Loc(7).Blocks, tab.Loc(5).Blocks, loc5)
	}
	want(apply(TLVClear, nil), 0)
	if len(tab.Maps()) != 0 || tab.used != 0 {
		t.Fatalf("after clear: %v", tab.Maps())
	}
}

func TestTLVTableReply(t *testing.T) {
	tab, err := (*TLVTable)(nil).Apply(&TLVTableMod{Maps: []TLVMap{{0x102, 0x80, 4, 1}, {0xffff, 0, 4, 0}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := EncodeTLVTableReply(V13, 9, tab)
	h := ParseHeader(b)
	if int(h.Length) != len(b) || len(b) != 16+16+2*8 || h.Xid != 9 {
		t.Fatalf("reply %x", b)
	}
	body := b[16:]
	if binary.BigEndian.Uint32(body) != 256 || binary.BigEndian.Uint16(body[4:]) != 64 {
		t.Fatalf("limits %x", body[:16])
	}
	// By index: tun_metadata0 first.
	if m := body[16:]; binary.BigEndian.Uint16(m) != 0xffff || binary.BigEndian.Uint16(m[12:]) != 1 {
		t.Fatalf("maps %x", m)
	}
	if _, err := Decode(EncodeTLVTableReply(V10, 1, nil)); err == nil {
		t.Fatal("a reply decoded as a request")
	}
}

// FuzzTLVTableMod: decoding never panics, and a table built by any
// sequence of mods allocates each byte of option space at most once.
func FuzzTLVTableMod(f *testing.F) {
	var all []byte
	for _, name := range []string{"tlv-add.bin", "tlv-del.bin", "tlv-clear.bin"} {
		if b, err := os.ReadFile(filepath.Join("testdata", "requests", name)); err == nil {
			f.Add(b)
			all = append(all, b...)
		}
	}
	f.Add(all)
	f.Fuzz(func(t *testing.T, b []byte) {
		var tab *TLVTable
		for len(b) > 0 {
			msg, rest, err := Split(b)
			if err != nil || msg == nil {
				return
			}
			b = rest
			m, err := Decode(msg)
			tm, ok := m.(*TLVTableMod)
			if err != nil || !ok {
				continue
			}
			if n, err := tab.Apply(tm, func(i int) bool { return i == 63 }); err == nil {
				tab = n
			}
			if tab == nil {
				continue
			}
			var seen uint64
			for i := 0; i < TLVMaxFields; i++ {
				loc := tab.Loc(i)
				if loc == nil {
					continue
				}
				if len(loc.Blocks)*4 != int(loc.Len) {
					t.Fatalf("tun_metadata%d: %d blocks for %d bytes", i, len(loc.Blocks), loc.Len)
				}
				for _, off := range loc.Blocks {
					if seen&(1<<(off/4)) != 0 || tab.used&(1<<(off/4)) == 0 {
						t.Fatalf("block %d allocated twice or not marked", off)
					}
					seen |= 1 << (off / 4)
				}
			}
			if seen != tab.used {
				t.Fatalf("blocks %x marked %x", seen, tab.used)
			}
		}
	})
}

// TestTunFlagsMatch: tun_flags=+oam and -oam (as ovs-ofctl sends them,
// value and mask 1) match Geneve's O bit, and nothing else.
func TestTunFlagsMatch(t *testing.T) {
	for _, c := range []struct {
		value uint16
		oam   bool
	}{{1, true}, {0, false}} {
		var b []byte
		b = put32(b, nxmHeader(classNXM1, 104, 4)|0x100)
		b = put16(b, c.value)
		b = put16(b, 1)
		m, err := DecodeNXMatch(b)
		if err != nil {
			t.Fatal(err)
		}
		if m.Mask.TunFlags != flow.TunFlagOAM || (m.Flow.TunFlags == flow.TunFlagOAM) != c.oam {
			t.Fatalf("tun_flags=%d/1: flow %#x mask %#x", c.value, m.Flow.TunFlags, m.Mask.TunFlags)
		}
		var pkt Flow
		pkt.TunFlags = flow.TunFlagKey | flow.TunFlagCsum
		if got := pkt.Masked(&m.Mask) == m.Flow; got == c.oam {
			t.Errorf("tun_flags=%d/1 matched a packet without the O bit: %v", c.value, got)
		}
		pkt.TunFlags |= flow.TunFlagOAM
		if got := pkt.Masked(&m.Mask) == m.Flow; got != c.oam {
			t.Errorf("tun_flags=%d/1 on a packet with the O bit: %v", c.value, got)
		}
		if enc := AppendNXMatch(nil, &m, true); string(enc) != string(b) {
			t.Errorf("encoded %x, want %x", enc, b)
		}
	}
}

// TestTunMetadataDecoded: a tun_metadata field of any length up to 124
// bytes decodes, as long as the wire gives it, for the bridge to place
// through its map; longer is refused.
func TestTunMetadataDecoded(t *testing.T) {
	for _, n := range []int{1, 4, 124} {
		b := put32(nil, nxmHeader(classNXM1, 40+5, n))
		b = append(b, make([]byte, n)...)
		m, err := DecodeNXMatch(b)
		if err != nil || len(m.TunMD) != 1 || m.TunMD[0].Idx != 5 || len(m.TunMD[0].Value) != n {
			t.Fatalf("tun_metadata5 of %d bytes: %+v %v", n, m.TunMD, err)
		}
	}
	b := put32(nil, nxmHeader(classNXM1, 40+5, 125))
	b = append(b, make([]byte, 125)...)
	if _, err := DecodeNXMatch(b); err == nil || err.Errno != BadMatchLen {
		t.Errorf("125 bytes: %v", err)
	}
	if _, ok := (&Error{Errno: BadField}).TunMetadata(); ok {
		t.Error("a plain error names a tun_metadata field")
	}
}
