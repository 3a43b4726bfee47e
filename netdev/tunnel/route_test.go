package tunnel

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// testRouter mirrors the namespace the Debian reference ran in: d0 with
// 10.1.1.1/24, 10.1.1.5/16 and 2001:db8::1/64; lo with 127.0.0.1/8, ::1.
func testRouter(t *testing.T) *Router {
	t.Helper()
	devs := map[string][]netip.Prefix{
		"d0": {netip.MustParsePrefix("10.1.1.1/24"), netip.MustParsePrefix("10.1.1.5/16"), netip.MustParsePrefix("2001:db8::1/64")},
		"lo": {netip.MustParsePrefix("127.0.0.1/8"), netip.MustParsePrefix("::1/128")},
		"d1": nil,
	}
	r := NewRouter(func(dev string) ([]netip.Prefix, error) {
		p, ok := devs[dev]
		if !ok {
			return nil, errors.New("no such device")
		}
		return p, nil
	})
	kernel := []struct {
		dst   string
		local bool
		dev   string
		gw    string
	}{
		{"10.1.1.1/32", true, "d0", ""},
		{"10.1.1.5/32", true, "d0", ""},
		{"127.0.0.1/32", true, "lo", ""},
		{"127.0.0.0/8", true, "lo", ""},
		{"::1/128", true, "lo", ""},
		{"2001:db8::1/128", true, "d0", ""},
		{"10.1.1.0/24", false, "d0", ""},
		{"10.1.0.0/16", false, "d0", ""},
		{"192.168.7.0/24", false, "d0", "10.1.1.254"},
		{"2001:db8::/64", false, "d0", ""},
	}
	for _, k := range kernel {
		dst, plen, _, err := ParseCIDR(k.dst)
		if err != nil {
			t.Fatal(err)
		}
		var gw netip.Addr
		if k.gw != "" {
			gw = netip.MustParseAddr(k.gw)
		}
		if err := r.InsertKernel(0, dst, plen, k.local, k.dev, gw); err != nil {
			t.Fatalf("%s: %v", k.dst, err)
		}
	}
	return r
}

// cmdStep is one unixctl command and what it must answer: out, or the
// error text err.
type cmdStep struct{ cmd, args, out, err string }

// runSteps runs steps through cmds (by command name) in order.
func runSteps(t *testing.T, cmds map[string]func([]string) (string, error), steps []cmdStep) {
	t.Helper()
	for _, s := range steps {
		out, err := cmds[s.cmd](strings.Fields(s.args))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if out != s.out || got != s.err {
			t.Errorf("%s %s: got %q, %q; want %q, %q", s.cmd, s.args, out, got, s.out, s.err)
		}
	}
}

// The expected texts are Debian ovs-vswitchd 3.1's for the same commands.
func TestRouteCommands(t *testing.T) {
	r := testRouter(t)
	steps := []cmdStep{
		{"add", "10.2.0.0/16 d0", "", "Error while inserting route."},
		{"add", "10.3.0.0/16 d0 10.1.1.200", "OK\n", ""},
		{"add", "10.4.0.0/16 d0 10.1.1.200 pkt_mark=7", "OK\n", ""},
		{"add", "10.5.0.0/16 d0 src=10.1.1.5", "", "Invalid pkt_mark or gateway"},
		{"add", "10.7.0.0/16 d1", "", "Error while inserting route."},
		{"add", "10.7.0.0/16 nosuch", "", "Error while inserting route."},
		{"add", "bogus d0", "", "Invalid parameters"},
		{"add", "10.8.0.0/33 d0", "", "Invalid parameters"},
		{"add", "10.8.0.0/16 d0 junk", "", "Invalid pkt_mark or gateway"},
		{"add", "10.8.0.1/16 d0", "", "Error while inserting route."},
		{"add", "2001:db9::/32 d0 2001:db8::fe", "OK\n", ""},
		{"add", "2001:dba::/32 d0 src=2001:db8::1", "", "Invalid pkt_mark or IPv6 gateway"},
		{"add", "2001:dba::/32 d0 10.1.1.1", "", "Invalid pkt_mark or IPv6 gateway"},
		{"add", "10.9.0.0/16 d0 pkt_mark=0x10", "", "Error while inserting route."},
		{"add", "10.9.0.0/16 d0 pkt_mark=abc", "", "Invalid pkt_mark or gateway"},
		{"add", "0.0.0.0/0 d0 10.1.1.254", "OK\n", ""},
		{"lookup", "10.2.3.4", "src 10.1.1.1\ngateway 10.1.1.254\ndev d0\n", ""},
		{"lookup", "10.4.3.4", "src 10.1.1.1\ngateway 10.1.1.254\ndev d0\n", ""},
		{"lookup", "10.4.3.4 pkt_mark=7", "src 10.1.1.1\ngateway 10.1.1.200\ndev d0\n", ""},
		{"lookup", "192.168.7.9", "src 10.1.1.1\ngateway 10.1.1.254\ndev d0\n", ""},
		{"lookup", "10.1.1.1", "src 10.1.1.1\ngateway ::\ndev d0\n", ""},
		{"lookup", "2001:db9::5", "src 2001:db8::1\ngateway 2001:db8::fe\ndev d0\n", ""},
		{"lookup", "2001:db8::5", "src 2001:db8::1\ngateway ::\ndev d0\n", ""},
		{"lookup", "10.2.3.4/24", "", "Invalid parameters"},
		{"lookup", "10.2.3.4/32", "src 10.1.1.1\ngateway 10.1.1.254\ndev d0\n", ""},
		{"lookup", "nonsense", "", "Invalid parameters"},
		{"lookup", "8.8.8.8 pkt_mark=x", "", "Invalid pkt_mark"},
		{"lookup", "::1", "src ::1\ngateway ::\ndev lo\n", ""},
		{"lookup", "8.8.8.8 pkt_mark=9", "", "Not found"},
		{"del", "10.2.0.0/16", "", "Not found"},
		{"del", "10.4.0.0/16", "", "Not found"},
		{"del", "10.4.0.0/16 pkt_mark=7", "OK\n", ""},
		{"del", "192.168.7.0/24", "", "Not found"},
		{"del", "bogus", "", "Invalid parameters"},
		{"del", "10.9.0.0/16 pkt_mark=zz", "", "Invalid pkt_mark"},
	}
	runSteps(t, map[string]func([]string) (string, error){"add": r.AddCmd, "del": r.DelCmd, "lookup": r.LookupCmd}, steps)
	want := `Route Table:
Cached: 10.1.1.1/32 dev d0 SRC 10.1.1.1 local
Cached: 10.1.1.5/32 dev d0 SRC 10.1.1.1 local
Cached: 127.0.0.1/32 dev lo SRC 127.0.0.1 local
Cached: ::1/128 dev lo SRC ::1 local
Cached: 2001:db8::1/128 dev d0 SRC 2001:db8::1 local
Cached: 127.0.0.0/8 dev lo SRC 127.0.0.1 local
User: 10.3.0.0/16 dev d0 GW 10.1.1.200 SRC 10.1.1.1
Cached: 10.1.0.0/16 dev d0 SRC 10.1.1.5
User: 0.0.0.0/0 dev d0 GW 10.1.1.254 SRC 10.1.1.1
Cached: 10.1.1.0/24 dev d0 SRC 10.1.1.1
Cached: 192.168.7.0/24 dev d0 GW 10.1.1.254 SRC 10.1.1.1
User: 2001:db9::/32 dev d0 GW 2001:db8::fe SRC 2001:db8::1
Cached: 2001:db8::/64 dev d0 SRC 2001:db8::1
`
	if got := r.Show(); got != want {
		t.Errorf("show:\n%s\nwant:\n%s", got, want)
	}
	r.FlushCached()
	want = `Route Table:
User: 10.3.0.0/16 dev d0 GW 10.1.1.200 SRC 10.1.1.1
User: 0.0.0.0/0 dev d0 GW 10.1.1.254 SRC 10.1.1.1
User: 2001:db9::/32 dev d0 GW 2001:db8::fe SRC 2001:db8::1
`
	if got := r.Show(); got != want {
		t.Errorf("show after flush:\n%s\nwant:\n%s", got, want)
	}
}

func TestParseCIDR(t *testing.T) {
	for _, c := range []struct {
		in   string
		plen int
		ok   bool
	}{
		{"10.0.0.0/8", 104, true}, {"10.0.0.1", 128, true}, {"10.0.0.0/255.0.0.0", 104, true},
		{"10.0.0.0/255.0.255.0", 0, false}, {"10.0.0.0/33", 0, false}, {"10.0.0.0/-1", 0, false},
		{"10.0.0.0/", 0, false}, {"::/0", 0, true}, {"fe80::1%eth0/64", 0, false}, {"2001:db8::/129", 0, false},
		{"10.0.0.0/+8", 0, false},
	} {
		_, plen, _, err := ParseCIDR(c.in)
		if (err == nil) != c.ok || (c.ok && plen != c.plen) {
			t.Errorf("%q: plen %d err %v", c.in, plen, err)
		}
	}
}

func TestScanMark(t *testing.T) {
	for _, c := range []struct {
		in string
		v  uint32
		ok bool
	}{
		{"pkt_mark=7", 7, true}, {"pkt_mark=0x10", 16, true}, {"pkt_mark=010", 8, true},
		{"pkt_mark=-1", 0xffffffff, true}, {"pkt_mark=5x", 5, true}, {"pkt_mark=", 0, false},
		{"pkt_mark=x", 0, false}, {"mark=1", 0, false}, {"pkt_mark=0", 0, true},
	} {
		v, ok := scanMark(c.in)
		if ok != c.ok || v != c.v {
			t.Errorf("%q: %d %v", c.in, v, ok)
		}
	}
}

func FuzzRouteCommands(f *testing.F) {
	for _, s := range []string{"10.0.0.0/8 d0 10.1.1.254 pkt_mark=3", "2001:db8::/32 d0", "1.2.3.4/255.255.0.0 d0", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := testRouter(t)
		args := strings.Fields(s)
		if len(args) < 2 || len(args) > 4 {
			return
		}
		if out, err := r.AddCmd(args); err == nil {
			if out != "OK\n" {
				t.Fatalf("add %q: %q", s, out)
			}
			if _, err := r.DelCmd([]string{args[0]}); err != nil && len(args) < 3 {
				t.Fatalf("del after add %q: %v", s, err)
			}
		}
		_, _ = r.LookupCmd(args[:1])
		_ = r.Show()
	})
}
