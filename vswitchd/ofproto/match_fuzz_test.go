package ofproto

import (
	"errors"
	"strings"
	"testing"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// traceTLVTable maps OVN's option (4 bytes) to tun_metadata0 and two
// long ones to tun_metadata1 and 2, for the trace flow parser.
func traceTLVTable(tb testing.TB) *ofp.TLVTable {
	tb.Helper()
	tab, err := (*ofp.TLVTable)(nil).Apply(&ofp.TLVTableMod{Command: ofp.TLVAdd, Maps: []ofp.TLVMap{
		{Class: 0x102, Type: 0x80, Len: 4, Index: 0}, {Class: 0xffff, Type: 1, Len: 8, Index: 1},
		{Class: 0xffff, Type: 2, Len: 60, Index: 2}, {Class: 0xffff, Type: 3, Len: 124, Index: 3},
		{Class: 0xffff, Type: 4, Len: 60, Index: 4}}}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return tab
}

func tracePort(v string) (*port, int, error) {
	if v == "1" {
		return nil, 1, nil
	}
	return nil, 0, errors.New("unknown port")
}

// TestParseFlowTunnel: the tunnel fields of an ofproto/trace flow, and
// the errors OVS gives for them.
func TestParseFlowTunnel(t *testing.T) {
	tab := traceTLVTable(t)
	k, _, _, err := parseFlow("in_port=1,tun_id=0x99,tun_src=172.31.9.2,tun_dst=172.31.9.1,tun_tos=0x12,tun_ttl=64,tun_flags=oam,tun_metadata1=0x1234,tun_metadata0=0x123456789,tun_metadata9=1", tab, tracePort)
	if err != nil {
		t.Fatal(err)
	}
	opts := []byte{0x01, 0x02, 0x80, 1, 0x23, 0x45, 0x67, 0x89, 0xff, 0xff, 1, 2, 0, 0, 0, 0, 0, 0, 0x12, 0x34}
	if !k.HasTunnel() || k.TunID != 0x99 || k.TunTOS != 0x12 || k.TunTTL != 64 || k.TunFlags != flow.TunFlagOAM || string(k.Options()) != string(opts) {
		t.Errorf("parsed %+v", k)
	}
	got := formatMatch(&k, ptr(packetMask(&k)), "1", false, true, traceTunMD(tab, &k, nil))
	want := "tun_src=172.31.9.2,tun_dst=172.31.9.1,tun_ipv6_src=::,tun_ipv6_dst=::,tun_gbp_id=0,tun_gbp_flags=0,tun_tos=12,tun_ttl=64," +
		"tun_erspan_ver=0,gtpu_flags=0,gtpu_msgtype=0,tun_flags=oam,tun_metadata0=0x23456789,tun_metadata1=0x1234,in_port=1,"
	if !strings.HasPrefix(got, want) {
		t.Errorf("Flow:\n got %s\nwant %s...", got, want)
	}
	// More than 64 bytes of options (76).
	if k, _, _, err := parseFlow("in_port=1,tun_dst=172.31.9.1,tun_metadata2=1,tun_metadata1=1", tab, tracePort); err != nil || k.TunOptsLen != 76 {
		t.Errorf("76 bytes of options: %d, %v", k.TunOptsLen, err)
	}
	for spec, msg := range map[string]string{
		"tun_flags=+oam":                  "bad value for tun_flags (+oam: wildcards not allowed here)",
		"tun_flags=df":                    "bad value for tun_flags (df: unknown tunnel flag(s))",
		"tun_id=0x10000000000000000":      "value too large for 8-byte field tun_id",
		"tun_tos=256":                     "value too large for 1-byte field tun_tos",
		"tun_metadata0=1,tun_metadata0=2": "field tun_metadata0 set multiple times",
		"tun_metadata64=1":                "unknown field tun_metadata64",
		"tun_metadata0=xyz":               "bad syntax for tun_metadata0 value",
		"tun_src=1.2.3":                   "bad value for tun_src (1.2.3: invalid IP address)",
		"tun_metadata2=1,tun_metadata3=1,tun_metadata4=1": "more than the 252 a packet may carry",
		"tun_metadata01=1": "unknown field tun_metadata01",
	} {
		if _, _, _, err := parseFlow(spec, tab, tracePort); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", spec, err, msg)
		}
	}
}

// FuzzParseTraceFlow: ofproto/trace's flow parser never panics, and the
// Geneve options it makes of tun_metadata are well formed.
func FuzzParseTraceFlow(f *testing.F) {
	f.Add("in_port=1,tun_id=5,tun_src=1.2.3.4,tun_dst=5.6.7.8,tun_metadata0=0xa0001,ip,nw_src=10.0.0.1")
	tab := traceTLVTable(f)
	f.Fuzz(func(t *testing.T, spec string) {
		k, _, _, err := parseFlow(spec, tab, tracePort)
		if err != nil {
			return
		}
		if _, err := flow.ParseGeneveOpts(k.Options()); err != nil {
			t.Fatalf("%q: options %x: %v", spec, k.Options(), err)
		}
		m := packetMask(&k)
		formatMatch(&k, &m, "1", false, true, traceTunMD(tab, &k, nil))
	})
}
