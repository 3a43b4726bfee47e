package tests

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestOpenFlowOutputTrunc sends real pings of 1000 bytes from a through
// output(port=2,max_len=100), loaded with Debian's ovs-ofctl, followed by
// a set and a plain output to the internal port: b's stack gets frames of 100
// bytes, which it counts as truncated IP datagrams and drops (the pings
// go unanswered), while the internal port gets them whole.
func TestOpenFlowOutputTrunc(t *testing.T) {
	s := startGovsSwitch(t)
	s.setUp("gotr", "10.75.0")
	// The internal port's kernel device takes only frames to its own
	// MAC (govs does not write it others), hence the mod_dl_dst.
	imac, err := vswRun("cat", "/sys/class/net/"+s.intf+"/address")
	if err != nil {
		t.Fatal(err)
	}
	s.replaceFlows("table=0,priority=100,arp,actions=NORMAL",
		"table=0,priority=90,in_port=1,icmp,actions=output(port=2,max_len=100),mod_dl_dst:"+strings.TrimSpace(imac)+",output:3",
		"table=0,priority=1,actions=NORMAL")
	// Pings of 56 bytes fit in 100: the path works, and a and b know
	// each other's addresses.
	s.a.waitPing("10.75.0.2")
	truncated := func() int {
		return netstatField(t, s.b.mustExec("cat", "/proc/net/netstat"), "IpExt:", "InTruncatedPkts")
	}
	intfRx := func() int {
		out, err := vswRun("cat", "/sys/class/net/"+s.intf+"/statistics/rx_bytes")
		n, perr := strconv.Atoi(strings.TrimSpace(out))
		if err != nil || perr != nil {
			t.Fatalf("rx_bytes of %s: %q, %v", s.intf, out, err)
		}
		return n
	}
	t0, i0 := truncated(), intfRx()
	if _, err := s.a.exec("ping", "-q", "-n", "-c", "5", "-i", "0.2", "-W", "1", "-s", "1000", "10.75.0.2"); err == nil {
		t.Errorf("pings of 1000 bytes were answered through output(port=2,max_len=100)")
	}
	// 5 pings in 1042-byte frames reach the internal port whole.
	vswWait(t, vswTimeout, "the internal port to receive 5 frames of 1042 bytes", func() bool { return intfRx()-i0 >= 5*1042 })
	vswWait(t, vswTimeout, "b to count 5 truncated datagrams", func() bool { return truncated()-t0 >= 5 })
	if flows := s.appctl("dpctl/dump-flows"); !regexp.MustCompile(`actions:trunc\(100\),\d+,set\(eth\(dst=`).MatchString(flows) {
		t.Errorf("no datapath flow truncates:\n%s", flows)
	}
}

// netstatField is the value of field in /proc/net/netstat (or snmp)
// text out, under the line pair whose first word is section.
func netstatField(t *testing.T, out, section, field string) int {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i := 0; i+1 < len(lines); i++ {
		names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(names) == 0 || names[0] != section || len(values) != len(names) {
			continue
		}
		for j, n := range names {
			if n == field {
				v, err := strconv.Atoi(values[j])
				if err != nil {
					t.Fatalf("%s %s: %q", section, field, values[j])
				}
				return v
			}
		}
	}
	t.Fatalf("no %s %s in:\n%s", section, field, out)
	return 0
}
