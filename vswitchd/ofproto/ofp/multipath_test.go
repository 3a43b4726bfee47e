package ofp

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/govs/govs/datapath/flow"
)

// mpWire is NXAST_MULTIPATH as OVS encodes it (checked with Debian's
// ovs-ofctl ofp-print).
func mpWire(fields, basis, alg, maxLink uint16, arg uint32, ofs, nbits int, h uint32) []byte {
	b := nxActionHeader(nil, 32, nxastMultipath)
	b = binary.BigEndian.AppendUint16(b, fields)
	b = binary.BigEndian.AppendUint16(b, basis)
	b = append(b, 0, 0)
	b = binary.BigEndian.AppendUint16(b, alg)
	b = binary.BigEndian.AppendUint16(b, maxLink)
	b = binary.BigEndian.AppendUint32(b, arg)
	b = append(b, 0, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(ofs<<6|(nbits-1)))
	return binary.BigEndian.AppendUint32(b, h)
}

// bdWire is NXAST_BUNDLE(_LOAD) with members.
func bdWire(sub, alg, fields, basis uint16, ofsNBits uint16, h uint32, members ...uint16) []byte {
	n := (2*len(members) + 7) &^ 7
	b := nxActionHeader(nil, 32+n, sub)
	b = binary.BigEndian.AppendUint16(b, alg)
	b = binary.BigEndian.AppendUint16(b, fields)
	b = binary.BigEndian.AppendUint16(b, basis)
	b = binary.BigEndian.AppendUint32(b, nxmInPort)
	b = binary.BigEndian.AppendUint16(b, uint16(len(members)))
	b = binary.BigEndian.AppendUint16(b, ofsNBits)
	b = binary.BigEndian.AppendUint32(b, h)
	b = append(b, 0, 0, 0, 0)
	for _, p := range members {
		b = binary.BigEndian.AppendUint16(b, p)
	}
	return append(b, make([]byte, n-2*len(members))...)
}

// multipath, bundle and bundle_load decode, encode back the same in every
// version, and are refused as OVS's decode refuses them.
func TestMultipathBundleWire(t *testing.T) {
	reg0 := FieldByID(FieldReg0).header(true)
	inPort := FieldByID(FieldInPort).header(true)
	good := [][]byte{
		mpWire(3, 1024, 3, 4999, 5050, 0, 13, reg0),
		mpWire(6, 0, 2, 1, 0, 4, 1, reg0),
		bdWire(nxastBundle, 1, 0, 3, 0, 0, 4, 8, 0xfffe),
		bdWire(nxastBundleLoad, 0, 1, 60, 16<<6|15, reg0, 1),
		bdWire(nxastBundle, 0, 1, 0, 0, 0),
	}
	for _, wire := range good {
		for _, v := range []Version{V10, V13, V15} {
			acts, err := DecodeActions(v, wire)
			if err != nil {
				t.Fatalf("%v %x: %v", v, wire, err)
			}
			if back := AppendActions(nil, v, acts); !bytes.Equal(back, wire) {
				t.Errorf("%v: encoded\n %x\nwant %x", v, back, wire)
			}
		}
	}
	mod := func(b []byte, f func([]byte)) []byte { b = bytes.Clone(b); f(b); return b }
	for _, tc := range []struct {
		name string
		wire []byte
		want Errno
	}{
		{"multipath fields", mpWire(7, 0, 0, 1, 0, 0, 16, reg0), BadActionArgument},
		{"multipath algorithm", mpWire(0, 0, 4, 1, 0, 0, 16, reg0), BadActionArgument},
		{"multipath too narrow", mpWire(0, 0, 0, 4, 0, 0, 2, reg0), BadActionArgument},
		{"multipath unknown field", mpWire(0, 0, 0, 1, 0, 0, 16, 0x7f7f7f04), BadSetType},
		{"multipath past the field", mpWire(0, 0, 0, 1, 0, 30, 4, reg0), BadSetLen},
		{"multipath read-only", mpWire(0, 0, 0, 1, 0, 0, 8, FieldByID(FieldIPProto).header(true)), BadSetArgument},
		{"multipath length", mpWire(0, 0, 0, 1, 0, 0, 16, reg0)[:24], BadActionLen},
		{"bundle fields", bdWire(nxastBundle, 0, 9, 0, 0, 0, 1), BadActionArgument},
		{"bundle algorithm", bdWire(nxastBundle, 2, 0, 0, 0, 0, 1), BadActionArgument},
		{"bundle member type", mod(bdWire(nxastBundle, 0, 0, 0, 0, 0, 1), func(b []byte) { b[19] = 4 }), BadActionArgument},
		{"bundle reserved", mod(bdWire(nxastBundle, 0, 0, 0, 0, 0, 1), func(b []byte) { b[31] = 1 }), BadActionArgument},
		{"bundle with a destination", bdWire(nxastBundle, 0, 0, 0, 15, reg0, 1), BadActionArgument},
		{"bundle members truncated", mod(bdWire(nxastBundle, 0, 0, 0, 0, 0, 1), func(b []byte) { b[21] = 9 }), BadActionLen},
		{"bundle controller member", bdWire(nxastBundle, 0, 0, 0, 0, 0, 1, 0xfffd), BadOutPort},
		{"bundle reserved member", bdWire(nxastBundle, 0, 0, 0, 0, 0, 0xff00), BadOutPort},
		{"bundle_load narrow", bdWire(nxastBundleLoad, 0, 0, 0, 7, reg0, 1), BadActionArgument},
		{"bundle_load unknown field", bdWire(nxastBundleLoad, 0, 0, 0, 15, 0x7f7f7f04, 1), BadSetType},
		{"bundle_load in_port prerequisites fine, bits past", bdWire(nxastBundleLoad, 0, 0, 0, 8<<6|15, inPort, 1), BadSetLen},
	} {
		if _, err := DecodeActions(V10, tc.wire); err == nil || err.Errno != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
}

// The hash primitives give lookup3's and OVS's published values.
func TestFlowHashPrimitives(t *testing.T) {
	for _, tc := range []struct {
		in    string
		basis uint32
		want  uint32
	}{
		{"", 0, 0xdeadbeef},
		{"Four score and seven years ago", 0, 0x17770551},
		{"Four score and seven years ago", 1, 0xcd628161},
	} {
		if got := jhashBytes([]byte(tc.in), tc.basis); got != tc.want {
			t.Errorf("jhash_bytes(%q, %d) = %#x, want %#x", tc.in, tc.basis, got, tc.want)
		}
	}
}

// The algorithms spread hashes over every link, keep within the links,
// and the symmetric hashes give both directions of a flow one value.
func TestMultipathAlgorithms(t *testing.T) {
	for alg := MultipathModuloN; alg <= MultipathIterHash; alg++ {
		for _, n := range []uint16{1, 2, 7, 64, 65, 5000} {
			m := &Multipath{Algorithm: alg, MaxLink: n - 1, Arg: 5050}
			seen := map[uint16]bool{}
			for i := range uint32(20000) {
				l := m.Link(hash2Words(i, 99))
				if l >= n {
					t.Fatalf("alg %d n %d: link %d", alg, n, l)
				}
				seen[l] = true
			}
			if n <= 64 && len(seen) != int(n) {
				t.Errorf("alg %d n %d: only %d links used", alg, n, len(seen))
			}
		}
	}
	k := flow.Key{EthType: flow.EthTypeIPv4, NwProto: flow.IPProtoTCP, TpSrc: 1234, TpDst: 80,
		IPv4Src: [4]byte{10, 0, 0, 1}, IPv4Dst: [4]byte{10, 0, 0, 2},
		EthSrc: [6]byte{0, 0, 0, 0, 0, 1}, EthDst: [6]byte{0, 0, 0, 0, 0, 2}}
	r := k
	r.IPv4Src, r.IPv4Dst, r.TpSrc, r.TpDst, r.EthSrc, r.EthDst = k.IPv4Dst, k.IPv4Src, k.TpDst, k.TpSrc, k.EthDst, k.EthSrc
	for _, f := range []HashFields{HashSymmetricL4, HashSymmetricL3L4, HashSymmetricL3L4UDP, HashSymmetricL3} {
		if HashFlow(&k, f, 5) != HashFlow(&r, f, 5) {
			t.Errorf("%s is not symmetric", f)
		}
	}
}

// A bundle picks only live members, none when none is, and active_backup
// the first live one.
func TestBundleChoose(t *testing.T) {
	live := map[uint16]bool{2: true, 3: true}
	isLive := func(p uint16) bool { return live[p] }
	ab := &Bundle{Algorithm: BundleActiveBackup, Members: []uint16{1, 3, 2}}
	if got := ab.Choose(0, isLive); got != 3 {
		t.Errorf("active_backup chose %d, want 3", got)
	}
	hrw := &Bundle{Algorithm: BundleHRW, Members: []uint16{1, 2, 3}}
	for h := range uint32(100) {
		if got := hrw.Choose(hash2Words(h, 0), isLive); !live[got] {
			t.Fatalf("hrw chose %d", got)
		}
	}
	if got := hrw.Choose(0, func(uint16) bool { return false }); got != 0xffff {
		t.Errorf("no live member: chose %d", got)
	}
}

// FuzzMultipathBundle: multipath and bundle actions that decode encode to
// bytes that decode and encode the same; what they pick stays in range.
func FuzzMultipathBundle(f *testing.F) {
	reg0 := FieldByID(FieldReg0).header(true)
	f.Add(mpWire(3, 1024, 3, 4999, 5050, 0, 13, reg0))
	f.Add(mpWire(6, 0, 2, 1, 0, 4, 1, reg0))
	f.Add(bdWire(nxastBundle, 1, 0, 3, 0, 0, 4, 8, 0xfffe))
	f.Add(bdWire(nxastBundleLoad, 0, 1, 60, 16<<6|15, reg0, 1))
	f.Fuzz(func(t *testing.T, b []byte) {
		acts, err := DecodeActions(V10, b)
		if err != nil {
			return
		}
		k := flow.Key{EthType: flow.EthTypeIPv6, NwProto: flow.IPProtoUDP}
		for _, a := range acts {
			switch a.Type {
			case ActMultipath:
				if l := a.Multipath.Link(HashFlow(&k, a.Multipath.Fields, a.Multipath.Basis)); l > a.Multipath.MaxLink {
					t.Fatalf("link %d of %d", l, a.Multipath.MaxLink+1)
				}
			case ActBundle:
				a.Bundle.Choose(HashFlow(&k, a.Bundle.Fields, a.Bundle.Basis), func(p uint16) bool { return p%2 == 0 })
			}
		}
		requireRoundTrip(t, V10, b, acts)
	})
}
