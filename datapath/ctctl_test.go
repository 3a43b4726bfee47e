package datapath

import (
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/govs/govs/datapath/conntrack"
)

// The outputs below are Debian's ovs-vswitchd 3.1 (netdev datapath) after
// ovs-ofctl packet-out of the same three packets with the same ct actions.
func TestCtCommands(t *testing.T) {
	dp := newDatapath(nil, nil)
	defer dp.Close()
	label := conntrack.Label{15: 1}
	for _, c := range []struct {
		hex string
		a   conntrack.Action
	}{
		{"02000000000202000000000108004500002800010000400666cd0a0000010a0000029c400050000003e8000000005002fffffb670000",
			conntrack.Action{Commit: true, Zone: 5, SetMark: true, Mark: 42, MarkMask: ^uint32(0), SetLabel: true, Label: label, LabelMask: label}},
		{"02000000000202000000000108004500002400010000400166d60a0000010a00000208003a500007000170696e67706f6e67",
			conntrack.Action{Commit: true}},
		{"02000000000202000000000108004500002800010000400666cb0a0000030a0000029c4101bb000003e8000000005002fffff9f90000",
			conntrack.Action{Commit: true, Zone: 7, NAT: &conntrack.NATRange{Src: true, MinAddr: v4(ipNATlo), MaxAddr: v4(ipNAThi), MinPort: 2000, MaxPort: 2010}}},
	} {
		b, _ := hex.DecodeString(c.hex)
		var md conntrack.Meta
		if err := dp.ct.Execute(b, &md, &c.a, false); err != nil {
			t.Fatal(err)
		}
	}
	run := func(cmd string, args ...string) (string, error) {
		for _, c := range dp.CtCommands() {
			if c.Name == cmd {
				return c.Fn(args)
			}
		}
		t.Fatalf("no command %s", cmd)
		return "", nil
	}
	sorted := func(s string) string {
		l := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
		slices.Sort(l)
		return strings.Join(l, "\n") + "\n"
	}
	// OVS picks the NAT tuple by a hash of its own: the reply's address
	// and port differ.
	natReply := func(s string) string {
		for _, p := range []string{"dst=192.168.0.", "dport=20"} {
			if i := strings.Index(s, p); i >= 0 {
				j := i + len(p)
				for j < len(s) && s[j] >= '0' && s[j] <= '9' {
					j++
				}
				s = s[:i+len(p)] + "N" + s[j:]
			}
		}
		return s
	}
	tcp5 := "tcp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=40000,dport=80),reply=(src=10.0.0.2,dst=10.0.0.1,sport=80,dport=40000),zone=5,mark=42,labels=0x1,protoinfo=(state=SYN_SENT)\n"
	icmp := "icmp,orig=(src=10.0.0.1,dst=10.0.0.2,id=7,type=8,code=0),reply=(src=10.0.0.2,dst=10.0.0.1,id=7,type=0,code=0)\n"
	tcp7 := "tcp,orig=(src=10.0.0.3,dst=10.0.0.2,sport=40001,dport=443),reply=(src=10.0.0.2,dst=192.168.0.N,sport=443,dport=20N),zone=7,protoinfo=(state=SYN_SENT)\n"
	for _, c := range []struct {
		args []string
		want string
		err  string
		sort bool
	}{
		{[]string{"dpctl/dump-conntrack"}, tcp5 + icmp + tcp7, "", true},
		{[]string{"dpctl/dump-conntrack", "zone=5"}, tcp5, "", false},
		{[]string{"dpctl/dump-conntrack", "-m", "-s", "zone=7"}, "tcp,orig=(src=10.0.0.3,dst=10.0.0.2,sport=40001,dport=443),reply=(src=10.0.0.2,dst=192.168.0.N,sport=443,dport=20N),id=0,zone=7,status=0,timeout=29,protoinfo=(state_orig=SYN_SENT,state_reply=CLOSED,flags_orig=0,flags_reply=0)\n", "", false},
		{[]string{"dpctl/dump-conntrack", "-s", "zone=0"}, "icmp,orig=(src=10.0.0.1,dst=10.0.0.2,id=7,type=8,code=0),reply=(src=10.0.0.2,dst=10.0.0.1,id=7,type=0,code=0),timeout=59\n", "", false},
		{[]string{"dpctl/dump-conntrack", "ovs-netdev"}, "", "ovs-vswitchd: datapath not found (Invalid argument)", false},
		{[]string{"dpctl/dump-conntrack", "zone=x"}, "", "ovs-vswitchd: datapath not found (Invalid argument)", false},
		{[]string{"dpctl/dump-conntrack", "-x"}, "", "Unrecognized option -x", false},
		{[]string{"dpctl/ct-stats-show"}, "Connections Stats:\n    Total: 3\n  TCP: 2\n  ICMP: 1\n", "", false},
		{[]string{"dpctl/ct-stats-show", "-m"}, "Connections Stats:\n    Total: 3\n  TCP: 2\n    Conn per TCP states:\n\t  [SYN_SENT]=2\n  ICMP: 1\n", "", false},
		{[]string{"dpctl/ct-stats-show", "zone=5"}, "Connections Stats:\n    Total: 1\n  TCP: 1\n", "", false},
		{[]string{"dpctl/ct-get-nconns"}, "3\n", "", false},
		{[]string{"dpctl/ct-get-maxconns"}, "3000000\n", "", false},
		{[]string{"dpctl/ct-set-maxconns", "10"}, "setting maxconns successful\n", "", false},
		{[]string{"dpctl/ct-get-maxconns"}, "10\n", "", false},
		{[]string{"dpctl/ct-set-maxconns", "x"}, "", "ovs-vswitchd: maxconns missing or malformed (Invalid argument)", false},
		{[]string{"dpctl/ct-get-limits"}, "default limit=0\n", "", false},
		{[]string{"dpctl/ct-get-limits", "zone=5"}, "default limit=0\nzone=5,limit=0,count=0\n", "", false},
		{[]string{"dpctl/ct-set-limits", "default=5", "zone=1,limit=3", "zone=2,limit=4"}, "", "", false},
		{[]string{"dpctl/ct-get-limits"}, "default limit=5\nzone=1,limit=3,count=0\nzone=2,limit=4,count=0\n", "", false},
		{[]string{"dpctl/ct-get-limits", "zone=1,2,7"}, "default limit=5\nzone=1,limit=3,count=0\nzone=2,limit=4,count=0\nzone=7,limit=5,count=0\n", "", false},
		{[]string{"dpctl/ct-set-limits", "zone=1"}, "", "ovs-vswitchd: failed to parse zone limit (Invalid argument)", false},
		{[]string{"dpctl/ct-set-limits", "default=x"}, "", "ovs-vswitchd: invalid default limit (Invalid argument)", false},
		{[]string{"dpctl/ct-set-limits", "zone=x,limit=1"}, "", "ovs-vswitchd: failed to parse field zone (Invalid argument)", false},
		{[]string{"dpctl/ct-del-limits", "zone=1"}, "", "", false},
		{[]string{"dpctl/ct-get-limits"}, "default limit=5\nzone=2,limit=4,count=0\n", "", false},
		{[]string{"dpctl/ct-del-limits", "zone=x"}, "", "ovs-vswitchd: invalid zone (Invalid argument)", false},
		{[]string{"dpctl/ct-del-limits", "foo"}, "", "ovs-vswitchd: invalid argument foo (Invalid argument)", false},
		{[]string{"dpctl/ct-disable-tcp-seq-chk"}, "disabling TCP sequence checking successful\n", "", false},
		{[]string{"dpctl/ct-get-tcp-seq-chk"}, "TCP sequence checking: disabled\n", "", false},
		{[]string{"dpctl/ct-enable-tcp-seq-chk"}, "enabling TCP sequence checking successful\n", "", false},
		{[]string{"dpctl/flush-conntrack", "bogus"}, "", "ovs-vswitchd: field bogus missing value (Invalid argument)", false},
		{[]string{"dpctl/flush-conntrack", "zone=1", "ct_nw_src=10.0.0.1,ct_nw_dst=10.0.0.2,ct_nw_proto=6,ct_tp_src=1,ct_tp_dst=2"}, "", "ovs-vswitchd: failed to flush conntrack (No such file or directory)", false},
		{[]string{"dpctl/flush-conntrack", "zone=5"}, "", "", false},
		{[]string{"dpctl/dump-conntrack"}, icmp + tcp7, "", true},
		{[]string{"dpctl/flush-conntrack", "ct_nw_src=10.0.0.1,ct_nw_dst=10.0.0.2,ct_nw_proto=1,icmp_id=7,icmp_type=8,icmp_code=0"}, "", "", false},
		{[]string{"dpctl/dump-conntrack"}, tcp7, "", false},
		{[]string{"dpctl/flush-conntrack"}, "", "", false},
		{[]string{"dpctl/dump-conntrack"}, "", "", false},
		{[]string{"dpctl/ct-bkts"}, "Total Buckets: 1\nCurrent Connections: 0\n\n", "", false},
	} {
		got, err := run(c.args[0], c.args[1:]...)
		if c.sort {
			got, c.want = sorted(got), sorted(c.want)
		}
		got = natReply(got)
		if errs := ""; err != nil {
			errs = err.Error()
			if errs != c.err {
				t.Errorf("%v: error %q, want %q", c.args, errs, c.err)
			}
		} else if c.err != "" {
			t.Errorf("%v: no error, want %q", c.args, c.err)
		}
		if got != c.want {
			t.Errorf("%v:\n got %q\nwant %q", c.args, got, c.want)
		}
	}
}

// FuzzCtArgs feeds arbitrary arguments to the conntrack commands'
// parsers: a ct-tuple, a zone limit, a zone list. Nothing may panic, and
// what parses must format back to something that parses the same.
func FuzzCtArgs(f *testing.F) {
	for _, s := range []string{
		"ct_nw_src=10.0.0.1,ct_nw_dst=10.0.0.2,ct_nw_proto=6,ct_tp_src=1,ct_tp_dst=2",
		"ct_ipv6_src=fd00::1,ct_ipv6_dst=fd00::2,ct_nw_proto=58,icmp_id=7,icmp_type=128,icmp_code=0",
		"zone=1,limit=3", "zone=1,2,7", "bogus", "zone=x,limit=1", ",,=,", "ct_nw_proto=0x11",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var proto *uint8
		if tu, err := parseCtTuple(s, &proto); err == nil {
			if tu.V6 && (tu.Src != [16]byte{} || tu.Dst != [16]byte{}) && tu.Addr(true).Is4() {
				t.Fatalf("%q: IPv6 tuple with an IPv4 address", s)
			}
		} else if !strings.HasPrefix(err.Error(), "ovs-vswitchd: ") {
			t.Fatalf("%q: error %q lacks the daemon's prefix", s, err)
		}
		if z, l, err := parseZoneLimit(s); err == nil {
			z2, l2, err := parseZoneLimit("zone=" + strconv.Itoa(int(z)) + ",limit=" + strconv.FormatUint(uint64(l), 10))
			if err != nil || z2 != z || l2 != l {
				t.Fatalf("%q: zone %d limit %d does not parse back: %v", s, z, l, err)
			}
		}
		if zs, err := parseZones(s); err == nil && len(zs) == 0 {
			t.Fatalf("%q: no zones and no error", s)
		}
	})
}
