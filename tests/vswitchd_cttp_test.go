package tests

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// udpOnceScript sends one datagram from host:port to each dst:port given.
const udpOnceScript = `import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((sys.argv[1], int(sys.argv[2])))
for p in sys.argv[4:]:
    s.sendto(b"govs", (sys.argv[3], int(p)))`

// TestOpenFlowCtTimeoutPolicy gives zone 5 a timeout policy of 1-2 s
// through the database (`ovs-vsctl add-zone-tp`), on Debian's
// ovs-vswitchd (netdev) and on govs: a commit in zone 5 carries the
// policy to the datapath as `ct(commit,zone=5,timeout=1)`, a commit in
// zone 0 carries none, and a UDP datagram's connection in zone 5 expires
// from `dpctl/dump-conntrack` while the one in zone 0 (the default policy,
// 60 s) stays.
func TestOpenFlowCtTimeoutPolicy(t *testing.T) {
	deb, govs := startSwitchPair(t, "gtpd", "10.241.0", "gtpo", "10.242.0")
	actions := map[*ofSwitch]string{}
	for _, sw := range []*ofSwitch{deb, govs} {
		net := "10.241.0"
		if sw == govs {
			net = "10.242.0"
		}
		sw.vsctl("--", "--id=@dp", "create", "Datapath", "datapath_version=0", "--", "set", "Open_vSwitch", ".", "datapaths:netdev=@dp")
		sw.vsctl("add-zone-tp", "netdev", "zone=5", "udp_first=2", "udp_single=2", "udp_multiple=2", "icmp_first=1", "icmp_reply=1")
		if got := strings.TrimSpace(sw.vsctl("list-zone-tp", "netdev")); got != "Zone:5, Timeout Policies: icmp_first=1 icmp_reply=1 udp_first=2 udp_multiple=2 udp_single=2" {
			t.Errorf("%s: list-zone-tp: %q", sw.br, got)
		}
		sw.replaceFlows("table=0,priority=100,arp,actions=NORMAL",
			"table=0,priority=100,icmp,actions=NORMAL",
			"table=0,priority=90,udp,in_port=1,tp_dst=7501,actions=ct(commit,zone=5),output:2",
			"table=0,priority=90,udp,in_port=1,tp_dst=7502,actions=ct(commit),output:2",
			"table=0,priority=1,actions=drop")
		// The policy reaches the switch after the database: wait for the
		// translation to carry it.
		pkt := "in_port=1,udp,nw_src=" + net + ".1,nw_dst=" + net + ".2,udp_src=7500,udp_dst=7501"
		vswWait(t, vswTimeout, sw.br+" to translate with zone 5's policy", func() bool {
			return strings.Contains(sw.traceActions(pkt), "timeout=")
		})
		actions[sw] = sw.traceActions(pkt) + " | " +
			sw.traceActions("in_port=1,udp,nw_src="+net+".1,nw_dst="+net+".2,udp_src=7500,udp_dst=7502")

		sw.noTxChecksum()
		sw.a.waitPing(net + ".2")
		var dump string
		vswWait(t, vswTimeout, sw.br+" to track both datagrams", func() bool {
			sw.a.mustExec(debPython, "-c", udpOnceScript, net+".1", "7500", net+".2", "7501", "7502")
			dump = sw.appctl("dpctl/dump-conntrack", "-m", "-s")
			return regexp.MustCompile(`dport=7501\),.*zone=5,`).MatchString(dump) && strings.Contains(dump, "dport=7502),")
		})
		// -s shows the seconds left: at most the policy's 2 in zone 5,
		// the default 60 (more than 30 left) in zone 0.
		for _, c := range []struct {
			port     string
			min, max int
		}{{"7501", 0, 2}, {"7502", 30, 60}} {
			m := regexp.MustCompile(`dport=` + c.port + `\),[^\n]*timeout=(\d+)`).FindStringSubmatch(dump)
			if m == nil {
				t.Errorf("%s: no timeout for port %s:\n%s", sw.br, c.port, dump)
				continue
			}
			if n, _ := strconv.Atoi(m[1]); n < c.min || n > c.max {
				t.Errorf("%s: port %s: timeout=%d, want %d..%d:\n%s", sw.br, c.port, n, c.min, c.max, dump)
			}
		}
		vswWait(t, vswTimeout, sw.br+"'s zone 5 connection to expire", func() bool {
			dump = sw.appctl("dpctl/dump-conntrack")
			return !strings.Contains(dump, "dport=7501)")
		})
		if !strings.Contains(dump, "dport=7502)") {
			t.Errorf("%s: the default zone's connection is gone with zone 5's:\n%s", sw.br, dump)
		}
	}
	if actions[govs] != actions[deb] {
		t.Errorf("datapath actions (zone 5 | zone 0):\ngovs:   %s\nDebian: %s", actions[govs], actions[deb])
	}
	if !strings.Contains(actions[govs], "ct(commit,zone=5,timeout=1)") {
		t.Errorf("datapath actions: %s, want ct(commit,zone=5,timeout=1)", actions[govs])
	}
}

// noTxChecksum turns the namespaces' checksum offload off: Debian's
// netdev datapath takes a veth's partial checksums for bad ones (+inv,
// nothing committed); both switches get the same.
func (s *ofSwitch) noTxChecksum() {
	for _, ns := range []*vswNS{s.a, s.b} {
		ns.mustExec("ethtool", "-K", "eth0", "tx", "off")
	}
}
