package flow

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
)

func TestParseGeneveOpts(t *testing.T) {
	for _, c := range []struct {
		opts []byte
		n    int
		err  error
	}{
		{nil, 0, nil},
		{[]byte{1, 2, 0x80, 1, 0, 0xa, 0, 1}, 1, nil},
		{[]byte{1, 2, 0x80, 0, 0xff, 0xff, 0x01, 0x02, 0, 0, 0, 0, 0, 0, 0, 0}, 2, nil},
		{[]byte{1, 2, 0x80}, 0, ErrGeneveOptTruncated},
		{[]byte{1, 2, 0x80, 2, 0, 0, 0, 0}, 0, ErrGeneveOptTruncated},
		{make([]byte, TunOptsMax+4), 0, ErrGeneveOptsTooLong},
	} {
		n, err := ParseGeneveOpts(c.opts)
		if n != c.n || err != c.err {
			t.Errorf("ParseGeneveOpts(%x) = %d, %v; want %d, %v", c.opts, n, err, c.n, c.err)
		}
	}
	var b []byte
	b = AppendGeneveOpt(b, GeneveOpt{Class: 0x102, Type: 0x80, Data: []byte{0, 0xa, 0, 1}})
	if o, rest := NextGeneveOpt(b); o.Class != 0x102 || o.Type != 0x80 || !bytes.Equal(o.Data, []byte{0, 0xa, 0, 1}) || len(rest) != 0 {
		t.Errorf("round trip: %+v %x", o, rest)
	}
}

// Geneve options print as OVS's format_geneve_opts, in keys and masked in
// datapath flow dumps (its tunnel-push-pop tests' output).
func TestFormatGeneve(t *testing.T) {
	opts := []byte{0xff, 0xff, 0x80, 1, 0, 0, 0, 0xa, 0xff, 0xff, 0, 1, 0, 0, 0, 0x14}
	if got, want := FormatGeneveOpts(opts), "{class=0xffff,type=0x80,len=4,0xa}{class=0xffff,type=0,len=4,0x14}"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	mask := []byte{0xff, 0xff, 0xff, 0x1f, 0, 0, 0, 0xf, 0xff, 0xff, 0xff, 0x1f, 0, 0, 0, 0}
	var b strings.Builder
	formatGeneve(&b, opts, mask, false)
	if got, want := b.String(), "{class=0xffff,type=0x80,len=4,0xa/0xf}{class=0xffff,type=0,len=4}"; got != want {
		t.Errorf("masked: got %s, want %s", got, want)
	}
	if got := FormatGeneveOpts([]byte{0, 0, 0, 0}); got != "{class=0,type=0,len=0}" {
		t.Errorf("empty option: %s", got)
	}

	k := Key{InPort: 3, EthType: EthTypeIPv4, TunID: 0x7b, TunFlags: TunFlagKey}
	k.TunSrc = netip.MustParseAddr("::ffff:1.1.2.92").As16()
	k.TunDst = netip.MustParseAddr("::ffff:1.1.2.88").As16()
	k.TunOptsLen = uint8(copy(k.TunOpts[:], opts))
	var m Mask
	m.TunID = ^uint64(0)
	m.TunSrc, m.TunDst = Exact().TunSrc, Exact().TunDst
	m.TunFlags = TunFlagDontFragment | TunFlagCsum | TunFlagKey
	m.TunOptsLen = 0xff
	copy(m.TunOpts[:], mask)
	got := FormatODP(&k, &m, ODPFormat{})
	want := "tunnel(tun_id=0x7b,src=1.1.2.92,dst=1.1.2.88,geneve({class=0xffff,type=0x80,len=4,0xa/0xf}{class=0xffff,type=0,len=4}),flags(-df-csum+key)),recirc_id(0),in_port(3),"
	if !strings.HasPrefix(got, want) {
		t.Errorf("got  %s\nwant %s...", got, want)
	}
}

// FuzzGeneveOpts: the option parser accepts whole TLVs only, and what it
// accepts walks and formats without panicking.
func FuzzGeneveOpts(f *testing.F) {
	f.Add([]byte{1, 2, 0x80, 1, 0, 0xa, 0, 1})
	f.Add([]byte{0xff, 0xff, 0x80, 1, 0, 0, 0, 0xa, 0xff, 0xff, 0, 1, 0, 0, 0, 0x14})
	f.Add([]byte{1, 2, 0x80, 2, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ParseGeneveOpts(b)
		if err != nil {
			return
		}
		var re []byte
		rest := b
		for i := 0; i < n; i++ {
			var o GeneveOpt
			o, rest = NextGeneveOpt(rest)
			if o.Type != b[len(re)+2] {
				t.Fatalf("option %d type %#x", i, o.Type)
			}
			re = AppendGeneveOpt(re, o)
		}
		if len(rest) != 0 {
			t.Fatalf("%d bytes left after %d options", len(rest), n)
		}
		// The reserved bits of the length byte are not kept.
		for i := 0; i < len(b); {
			b[i+3] &= 0x1f
			i += 4 + int(b[i+3])*4
		}
		if !bytes.Equal(re, b) {
			t.Fatalf("re-encoded %x, want %x", re, b)
		}
		FormatGeneveOpts(b)
		var m Mask
		var sb strings.Builder
		formatGeneve(&sb, b, m.TunOpts[:len(b)], true)
	})
}
