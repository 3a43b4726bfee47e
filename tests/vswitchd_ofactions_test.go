package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// traceNested returns ofproto/trace's "Datapath actions" of pkt with
// datapath port numbers mapped to port names at every nesting level (a
// port is a number between "(" or "," and "," or ")").
func (s *ofSwitch) traceNested(pkt string) string {
	s.t.Helper()
	names := s.dpPortNames()
	out := s.appctl("ofproto/trace", s.br, pkt)
	m := regexp.MustCompile(`(?m)^Datapath actions: (.*)$`).FindStringSubmatch(out)
	if m == nil {
		s.t.Fatalf("ofproto/trace %s:\n%s", pkt, out)
	}
	res := regexp.MustCompile(`(^|[(,])(\d+)($|[,)])`).ReplaceAllStringFunc(m[1], func(tok string) string {
		sub := regexp.MustCompile(`^([(,]?)(\d+)([,)]?)$`).FindStringSubmatch(tok)
		if n, ok := names[sub[2]]; ok {
			return sub[1] + n + sub[3]
		}
		return tok
	})
	// A second pass for numbers whose delimiter the first consumed.
	res = regexp.MustCompile(`(^|[(,])(\d+)($|[,)])`).ReplaceAllStringFunc(res, func(tok string) string {
		sub := regexp.MustCompile(`^([(,]?)(\d+)([,)]?)$`).FindStringSubmatch(tok)
		if n, ok := names[sub[2]]; ok {
			return sub[1] + n + sub[3]
		}
		return tok
	})
	return s.normalizeOfctl(res)
}

// TestOpenFlowCheckPktLarger: check_pkt_larger (OVN's router MTU check)
// loads, dumps and is refused as on Debian's ovs-vswitchd, traces to the
// same check_pkt_len datapath action, and steers real traffic by length:
// pings larger than the limit take one port, smaller ones another.
func TestOpenFlowCheckPktLarger(t *testing.T) {
	deb, govs := startSwitchPair(t, "gckd", "10.188.0", "gcko", "10.189.0")
	flows := filepath.Join(t.TempDir(), "cpl")
	if err := os.WriteFile(flows, []byte(`table=0,priority=100,in_port=1,ip,actions=check_pkt_larger(600)->NXM_NX_REG0[3],resubmit(,1)
table=0,priority=90,in_port=2,ip,actions=load:0x5->NXM_NX_REG1[],check_pkt_larger(64)->NXM_NX_XXREG1[100],goto_table:2
table=0,priority=80,in_port=3,ip,actions=output:1,check_pkt_larger(1000)->NXM_NX_REG0[0]
table=0,priority=70,in_port=3,arp,actions=resubmit(,3),output:1
table=0,priority=0,actions=NORMAL
table=1,priority=10,reg0=0x8/0x8,actions=output:3
table=1,priority=5,actions=output:2
table=2,priority=10,xxreg1=0x10000000000000000000000000/0x10000000000000000000000000,actions=output:3
table=2,priority=5,reg1=5,actions=mod_dl_src:00:00:00:00:00:09,output:1
table=3,actions=check_pkt_larger(100)->NXM_NX_REG2[1],output:2
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, args := range [][]string{
		{"add-flows", "BR", flows},
		{"dump-flows", "--no-stats", "--rsort", "BR"},
		{"-O", "OpenFlow13", "dump-flows", "--no-stats", "--rsort", "BR"},
		{"-O", "OpenFlow15", "dump-flows", "--no-stats", "--rsort", "BR"},
		{"add-flow", "BR", "ip,actions=check_pkt_larger(100)->NXM_NX_REG0[0..1]"},
		{"add-flow", "BR", "ip,actions=check_pkt_larger(100)->NXM_NX_REG0[32]"},
		{"add-flow", "BR", "ip,actions=check_pkt_larger(70000)->NXM_NX_REG0[1]"},
	} {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}
	for _, pkt := range []string{"in_port=1,icmp,nw_src=10.0.0.1", "in_port=2,udp,nw_src=10.0.0.2",
		"in_port=3,tcp", "in_port=3,arp"} {
		if want, got := deb.traceNested(pkt), govs.traceNested(pkt); got != want {
			t.Errorf("ofproto/trace %s: govs %q, Debian's %q", pkt, got, want)
		}
	}

	// Traffic: a's ICMP requests larger than 600 bytes go to the internal
	// port and are lost, smaller ones reach b; then the other way round.
	steer := func(gt, le string) {
		t.Helper()
		govs.replaceFlows("table=0,priority=100,in_port=1,icmp,actions=check_pkt_larger(600)->NXM_NX_REG0[3],resubmit(,1)",
			"table=0,priority=0,actions=NORMAL",
			"table=1,priority=10,reg0=0x8/0x8,actions=output:"+gt, "table=1,priority=5,actions=output:"+le)
	}
	pingSize := func(size string) error {
		_, err := govs.a.exec("ping", "-q", "-n", "-c", "3", "-i", "0.05", "-s", size, "-w", vswPingDeadline, "10.189.0.2")
		return err
	}
	noPingSize := func(size string) bool {
		_, err := govs.a.exec("ping", "-q", "-n", "-c", "2", "-i", "0.2", "-W", "1", "-s", size, "10.189.0.2")
		return err != nil
	}
	steer("3", "2")
	govs.a.waitPing("10.189.0.2")
	if !noPingSize("1000") {
		t.Error("a 1000-byte ping reached b; check_pkt_larger(600) sends it to the internal port")
	}
	steer("2", "3")
	if err := pingSize("1000"); err != nil {
		t.Errorf("a 1000-byte ping with larger packets steered to b: %v", err)
	}
	govs.a.noPing("10.189.0.2")
}
