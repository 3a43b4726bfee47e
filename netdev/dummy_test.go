package netdev

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govs/govs/datapath/packet"
)

// Frames Debian's ovs-vswitchd --enable-dummy (OVS 3.1) wrote to its pcap
// files for the same netdev-dummy/receive arguments.
var ovsComposed = []struct {
	flow string
	len  int
	hex  string
}{
	{
		flow: "in_port(1),eth(src=50:54:00:00:00:05,dst=ff:ff:ff:ff:ff:ff),eth_type(0x0800),ipv4(src=192.168.0.1,dst=192.168.0.2,proto=1,tos=0,ttl=64,frag=no),icmp(type=8,code=0)",
		hex: "ffffffffffff505400000005080045000 05c00000000400 1f94dc0a80001c0a80002080013fc00000000" +
			"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
	},
	{
		flow: "eth(src=50:54:00:00:00:07,dst=50:54:00:00:00:05),eth_type(0x0800),ipv4(src=192.168.0.2,dst=192.168.0.1,proto=17,tos=0,ttl=64,frag=no),udp(src=1,dst=2)",
		len:  100,
		hex:  "505400000005505400000007080045000056000000004011f943c0a80002c0a800010001000200 7c7dd9" + strings.Repeat("00", 58),
	},
	{
		flow: "eth(src=50:54:00:00:00:05,dst=ff:ff:ff:ff:ff:ff),eth_type(0x0806),arp(sip=1.1.1.1,tip=1.1.1.2,op=1,sha=50:54:00:00:00:05,tha=00:00:00:00:00:00)",
		hex:  "ffffffffffff5054000000050806000108000604000150540000000501010101000000000000 01010102",
	},
	{flow: "", hex: "000000000000000000000000000e"},
	{
		flow: "eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x86dd),ipv6(src=fe80::1,dst=fe80::2,label=5,proto=58,tclass=3,hlimit=255,frag=no),icmpv6(type=135,code=0)",
		hex:  "00000000000200000000000186dd6030000500183afffe800000000000000000000000000001fe80000000000000000000000000000287007ba80000000000000000000000000000000000000000",
	},
	{
		flow: "eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800),ipv4(src=1.2.3.4,dst=5.6.7.8,proto=6,tos=0xfd,ttl=64,frag=no),tcp(src=1,dst=2),tcp_flags(ack|psh)",
		hex: "000000000002000000000001080045fd00680000000040066980010203040506070800010002000000000000000050180000bb72" +
			"0000000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
	},
	{
		flow: "eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800),ipv4(src=1.2.3.4,dst=5.6.7.8,proto=17,tos=0,ttl=64,frag=later),udp(src=1,dst=2)",
		hex:  "0000000000020000000000010800450000140000206440114a620102030405060708",
	},
	{
		flow: "eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x88a8),vlan(vid=5,pcp=1),encap(eth_type(0x8100),vlan(vid=7),encap(eth_type(0x0806),arp(sip=1.1.1.1,tip=2.2.2.2,op=2,sha=00:00:00:00:00:01,tha=00:00:00:00:00:02)))",
		hex:  "00000000000200000000000188a820058100",
	},
	{
		flow: "eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800),ipv4(src=1.2.3.4,dst=5.6.7.8,proto=132,tos=0,ttl=64,frag=no),sctp(src=1,dst=2)",
		hex:  "0000000000020000000000010800450000200000000040846a470102030405060708000100020000000000000000",
	},
}

func TestParseDummyFlowAsOVS(t *testing.T) {
	for _, c := range ovsComposed {
		want, err := hex.DecodeString(strings.ReplaceAll(c.hex, " ", ""))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseDummyFlow(c.flow, c.len)
		if err != nil {
			t.Fatalf("%s: %v", c.flow, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %x\nwant %x", c.flow, got, want)
		}
	}
}

func TestParseDummyFlowShapes(t *testing.T) {
	for _, c := range []struct {
		flow string
		len  int
		ok   bool
	}{
		{"eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02)", 0, true},
		{"eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x8100),vlan(vid=10,pcp=3),encap(eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=6,tos=0,ttl=64,frag=no),tcp(src=80,dst=8080),tcp_flags(syn|ack))", 0, true},
		{"eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x86dd),ipv6(src=fe80::1,dst=fe80::2,label=0,proto=58,tclass=0,hlimit=255,frag=no),icmpv6(type=128,code=0)", 0, true},
		{"eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x86dd),ipv6(src=::1,dst=::2,proto=17),udp(src=1,dst=2)", 1000, true},
		{"eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,frag=later)", 0, true},
		{"garbage", 0, false},
		{"eth(src=00:00:00:00:00:01", 0, false},
		{"eth(src=1.2.3.4)", 0, false},
		{"eth_type(0x0800),ipv4(src=::1)", 0, false},
		{"eth_type(0x0800),ipv4(proto=6),udp(src=1,dst=2)", 0, false},
		{"eth_type(0x0800),ipv4(src=10.0.0.1/255.0.0.0)", 0, false},
		{"eth_type(0x0800),ipv4(proto=17),udp(src=1,dst=2)", 61, true},
		{"eth_type(0x86dd),ipv6(proto=6),tcp(src=1,dst=2)", 60, false}, // 74 bytes of headers
		{"", 0, true},
	} {
		b, err := ParseDummyFlow(c.flow, c.len)
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v, want ok=%v", c.flow, err, c.ok)
		}
		if err == nil && c.len > 0 && len(b) != c.len {
			t.Errorf("%s: %d bytes, want %d", c.flow, len(b), c.len)
		}
	}
}

func TestDummyFrameFromHex(t *testing.T) {
	if b, ok := DummyFrameFromHex("0000000000 01 000000000002 0800"); !ok || len(b) != 14 {
		t.Errorf("got %x %v", b, ok)
	}
	for _, s := range []string{"00", "eth(src=00:00:00:00:00:01)", "000000000001000000000002080", "zz"} {
		if _, ok := DummyFrameFromHex(s); ok {
			t.Errorf("%q taken as hex", s)
		}
	}
}

// TestDummyPortPcap: frames received and sent go to the pcap files as OVS
// writes them, options:pcap's one file getting both in order.
func TestDummyPortPcap(t *testing.T) {
	dir := t.TempDir()
	p, err := OpenDummy("dummytest0", "dummy")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	both := filepath.Join(dir, "both.pcap")
	if err := p.SetPcap(both, both); err != nil {
		t.Fatal(err)
	}
	if err := DummyReceive([]string{"dummytest0", "--qid", "0", ovsComposed[0].flow, ovsComposed[1].flow, "--len", "100"}); err != nil {
		t.Fatal(err)
	}
	pkts := []*packet.Packet{packet.New(), packet.New(), packet.New()}
	n, err := p.Read(pkts)
	if err != nil || n != 2 {
		t.Fatalf("Read: %d, %v", n, err)
	}
	if sent, err := p.Write(pkts[:1]); sent != 1 || err != nil {
		t.Fatalf("Write: %d, %v", sent, err)
	}
	st := p.Stats()
	if st.RxPackets != 2 || st.RxBytes != 206 || st.TxPackets != 1 || st.TxBytes != 106 {
		t.Errorf("stats %+v", st)
	}
	f, err := os.Open(both)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	frames, err := ReadPcap(f)
	if err != nil || len(frames) != 3 || len(frames[0]) != 106 || len(frames[1]) != 100 || !bytes.Equal(frames[2], frames[0]) {
		t.Fatalf("pcap: %d frames, %v", len(frames), err)
	}
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"nosuch", "00"}, "no such dummy netdev"},
		{[]string{"dummytest0", "--qid", "1", "00"}, "bad rx queue id."},
		{[]string{"dummytest0", ovsComposed[0].flow, "--len", "10"}, "too small packet len"},
		{[]string{"dummytest0", "garbage"}, "syntax error at garbage"},
		{[]string{"dummytest0", "00 11"}, "syntax error at 00 11"},
		{[]string{"dummytest0", "in_port(1),eth(src=00:00:00:00:00:01"}, "syntax error at eth(src=00:00:00:00:00:01"},
		{[]string{"dummytest0", "eth_type(0x86dd),ipv6(proto=6),tcp(src=1,dst=2)", "--len", "60"}, ""},
		{[]string{"dummytest0", "eth_type(0x8100),vlan(vid=1),encap(eth_type(0x0800),ipv4(src=::1)),in_port(1)"}, "syntax error at ipv4(src=::1)),in_port(1)"},
	} {
		if err := DummyReceive(c.args); err == nil || err.Error() != c.err {
			t.Errorf("%q: %v, want %q", c.args, err, c.err)
		}
	}
}

func FuzzParseDummyFlow(f *testing.F) {
	for _, c := range ovsComposed {
		f.Add(c.flow, c.len)
	}
	f.Fuzz(func(t *testing.T, s string, size int) {
		if size < 0 || size > 9000 {
			return
		}
		b, err := ParseDummyFlow(s, size)
		if err == nil && (len(b) < 14 || size > 0 && len(b) != size) {
			t.Fatalf("%q: %d bytes", s, len(b))
		}
	})
}

func FuzzReadPcap(f *testing.F) {
	dir := f.TempDir()
	w, err := openPcap(filepath.Join(dir, "seed.pcap"))
	if err != nil {
		f.Fatal(err)
	}
	w.write(bytes.Repeat([]byte{1}, 60))
	w.close()
	seed, _ := os.ReadFile(filepath.Join(dir, "seed.pcap"))
	f.Add(seed)
	f.Fuzz(func(t *testing.T, b []byte) {
		frames, _ := ReadPcap(bytes.NewReader(b))
		total := 0
		for _, fr := range frames {
			total += len(fr) + 16
		}
		if total > len(b) {
			t.Fatalf("read %d bytes of frames from %d", total, len(b))
		}
	})
}

func TestODPFlowMatch(t *testing.T) {
	in, ok, m, err := ODPFlowMatch("in_port(2)," + ovsComposed[1].flow)
	want := "dl_src=50:54:00:00:00:07,dl_dst=50:54:00:00:00:05,dl_type=0x0800,nw_src=192.168.0.2,nw_dst=192.168.0.1," +
		"nw_proto=17,nw_tos=0,nw_ecn=0,nw_ttl=64,nw_frag=no,tp_src=1,tp_dst=2"
	if err != nil || !ok || in != 2 || m != want {
		t.Errorf("got %d %v %q %v\nwant %q", in, ok, m, err, want)
	}
	if _, ok, _, err := ODPFlowMatch(ovsComposed[2].flow); err != nil || ok {
		t.Errorf("no in_port: ok %v, %v", ok, err)
	}
}
