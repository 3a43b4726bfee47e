package tests

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestOpenFlowFragsDifferential: the switch's fragment handling mode
// (`ovs-ofctl set-frags`/`get-frags`, OFPT_SET_CONFIG) and what each mode
// does to IP fragments in the flow tables, against Debian's ovs-vswitchd:
// the same ovs-ofctl output and exit status, and the same ofproto/trace
// (table lines, megaflow, actions) for a first fragment, a later one and
// an unfragmented packet. In "normal", OVS's default, the tables see a
// first fragment's UDP port as 0, so a flow on tp_dst=53 does not take it.
func TestOpenFlowFragsDifferential(t *testing.T) {
	deb, govs := startSwitchPair(t, "gfrd", "10.230.0", "gfro", "10.231.0")
	for _, s := range []*ofSwitch{deb, govs} {
		for _, args := range [][]string{{"del-flows", s.br},
			{"add-flow", s.br, "priority=10,udp,tp_dst=53,actions=output:1"},
			{"add-flow", s.br, "priority=5,udp,actions=output:2"},
			{"add-flow", s.br, "priority=0,actions=drop"}} {
			if out, rc := s.ofctl(args...); rc != 0 {
				t.Fatalf("%v: %s", args, out)
			}
		}
	}
	// An ODP flow entering on OpenFlow port 2, whose datapath number the
	// two switches choose differently.
	trace := func(s *ofSwitch, frag string) string {
		t.Helper()
		names := s.dpPortNames()
		odp := ""
		for n, name := range names {
			if name != s.br && strings.TrimSpace(s.vsctl("get", "interface", name, "ofport")) == "2" {
				odp = n
			}
		}
		if odp == "" {
			t.Fatalf("%s: no datapath port for OpenFlow port 2 in %v", s.br, names)
		}
		l4 := ",udp(src=1,dst=53)"
		if frag == "later" {
			l4 = ""
		}
		out, rc := s.traceArgsRC(fmt.Sprintf("in_port(%s),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800),"+
			"ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=64,frag=%s)%s", odp, frag, l4))
		if rc != 0 {
			t.Fatalf("%s: ofproto/trace: %s", s.br, out)
		}
		out = strings.ReplaceAll(out, `bridge("`+s.br+`")`, `bridge("BR")`)
		m := regexp.MustCompile(`(?m)^Datapath actions: (.*)$`).FindStringSubmatch(out)
		if m != nil {
			acts := strings.Split(m[1], ",")
			for i, a := range acts {
				if n, ok := names[a]; ok {
					acts[i] = n
				}
			}
			out = strings.Replace(out, m[0], "Datapath actions: "+strings.Join(acts, ","), 1)
		}
		return s.normalizeOfctl(out)
	}
	steps := [][]string{{"get-frags", "BR"}}
	for _, mode := range []string{"drop", "reassemble", "nx-match", "bogus", "normal"} {
		steps = append(steps, []string{"set-frags", "BR", mode}, []string{"get-frags", "BR"})
	}
	for i, args := range steps {
		t.Run(fmt.Sprintf("ofctl/%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}
	for _, mode := range []string{"normal", "drop", "nx-match"} {
		for _, s := range []*ofSwitch{deb, govs} {
			if out, rc := s.ofctl("set-frags", s.br, mode); rc != 0 {
				t.Fatalf("%s: set-frags %s: %s", s.br, mode, out)
			}
		}
		for _, frag := range []string{"first", "later", "no"} {
			if got, want := trace(govs, frag), trace(deb, frag); got != want {
				t.Errorf("mode %s, frag=%s: ofproto/trace\ngovs:\n%s\nDebian's ovs-vswitchd:\n%s", mode, frag, got, want)
			}
		}
	}
	// The mode OVS lacks is logged by both, and changes nothing.
	for _, s := range []*ofSwitch{deb, govs} {
		log, _ := os.ReadFile(s.dir + "/ovs-vswitchd.log")
		if want := "|ofproto|WARN|" + s.br + ": unsupported fragment handling mode reassemble"; !strings.Contains(string(log), want) {
			t.Errorf("%s's log lacks %q", s.br, want)
		}
	}
}
