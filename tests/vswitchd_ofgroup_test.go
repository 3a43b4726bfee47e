package tests

import (
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sortGroupLines sorts the group lines of dump-groups and
// dump-group-stats output: OVS lists groups in hash order.
func sortGroupLines(out string) string {
	lines := strings.Split(out, "\n")
	var groups, rest []string
	for _, l := range lines {
		if strings.HasPrefix(l, " group_id=") {
			groups = append(groups, l)
		} else {
			rest = append(rest, l)
		}
	}
	slices.Sort(groups)
	if len(rest) == 0 {
		return strings.Join(groups, "\n")
	}
	return strings.Join(slices.Concat(rest[:1], groups, rest[1:]), "\n")
}

// TestOpenFlowGroupDifferential drives groups on govs and on Debian's
// ovs-vswitchd with Debian's ovs-ofctl (OpenFlow 1.1, 1.3 and 1.5) and
// requires the same output and exit status, errors included.
func TestOpenFlowGroupDifferential(t *testing.T) {
	deb := startDebianSwitch(t)
	deb.setUp("ggrd", "10.188.0")
	govs := startGovsSwitch(t)
	govs.setUp("ggro", "10.189.0")
	ofNormalizers = append(ofNormalizers, struct {
		re   *regexp.Regexp
		with string
	}{regexp.MustCompile(`(packet_count|byte_count)=\d+`), "$1=N"})
	t.Cleanup(func() { ofNormalizers = ofNormalizers[:len(ofNormalizers)-1] })

	o13, o15 := []string{"-O", "OpenFlow13"}, []string{"-O", "OpenFlow15"}
	cmds := [][]string{
		append(o13, "add-group", "BR", "group_id=1,type=select,bucket=output:1,bucket=weight:20,output:2"),
		append(o13, "add-group", "BR", "group_id=1,type=all,bucket=output:1"),
		append(o13, "mod-group", "BR", "group_id=7,type=all,bucket=output:1"),
		append(o13, "add-group", "BR", "group_id=3,type=fast_failover,bucket=watch_port:1,output:1,bucket=watch_port:2,output:2"),
		append(o13, "add-group", "BR", "group_id=4,type=all,bucket=group:1"),
		append(o13, "add-group", "BR", "group_id=5,type=indirect,bucket=output:3"),
		append(o13, "add-group", "BR", "group_id=6,type=all,bucket=group:99"),
		append(o15, "add-group", "BR", "group_id=8,type=select,selection_method=hash,fields(ip_src,nw_proto),bucket=bucket_id:5,output:1,bucket=bucket_id:6,output:2"),
		append(o15, "add-group", "BR", "group_id=9,type=select,selection_method=dp_hash,bucket=output:1,bucket=output:2"),
		append(o13, "add-flow", "BR", "in_port=1,actions=group:1"),
		append(o13, "add-flow", "BR", "in_port=2,actions=group:77"),
		{"add-flow", "BR", "in_port=3,actions=group:5"},
		{"-O", "OpenFlow11", "dump-groups", "BR"},
		append(o13, "dump-groups", "BR"),
		append(o15, "dump-groups", "BR"),
		append(o13, "dump-group-stats", "BR"),
		append(o15, "dump-group-stats", "BR"),
		append(o15, "dump-groups", "BR", "3"),
		append(o15, "insert-buckets", "BR", "group_id=8,command_bucket_id=first,bucket=bucket_id:1,output:3"),
		append(o15, "insert-buckets", "BR", "group_id=8,command_bucket_id=last,bucket=bucket_id:1,output:3"),
		append(o15, "insert-buckets", "BR", "group_id=8,command_bucket_id=6,bucket=bucket_id:7,output:3"),
		append(o15, "insert-buckets", "BR", "group_id=8,command_bucket_id=66,bucket=bucket_id:9,output:3"),
		append(o15, "insert-buckets", "BR", "group_id=88,command_bucket_id=first,bucket=bucket_id:9,output:3"),
		append(o15, "dump-groups", "BR", "8"),
		append(o15, "remove-buckets", "BR", "group_id=8,command_bucket_id=5"),
		append(o15, "remove-buckets", "BR", "group_id=8,command_bucket_id=55"),
		append(o15, "remove-buckets", "BR", "group_id=99,command_bucket_id=all"),
		append(o15, "dump-groups", "BR", "8"),
		append(o13, "dump-flows", "--no-stats", "BR", "out_group=1"),
		append(o13, "del-groups", "BR", "group_id=1"),
		append(o13, "dump-flows", "--no-stats", "BR"),
		append(o13, "del-groups", "BR", "group_id=1234"),
		append(o13, "--may-create", "mod-group", "BR", "group_id=12,type=all,bucket=output:2"),
		append(o13, "mod-group", "BR", "group_id=12,type=select,bucket=output:1"),
		append(o13, "add-group", "BR", "group_id=13,type=all,bucket=watch_port:1,output:2"),
		append(o13, "add-group", "BR", "group_id=14,type=indirect"),
		append(o13, "add-group", "BR", "group_id=16,type=all,bucket=actions=set_field:1.2.3.4->ip_dst,output:1"),
		append(o13, "dump-groups", "BR"),
		append(o13, "dump-group-features", "BR"),
		append(o15, "dump-group-features", "BR"),
		{"-O", "OpenFlow12", "dump-group-features", "BR"},
		append(o13, "del-groups", "BR"),
		append(o13, "dump-groups", "BR"),
		append(o13, "dump-flows", "--no-stats", "BR"),
	}
	for i, args := range cmds {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}
}

// snmpCounter reads counter name of protocol proto ("Icmp", "Udp") from
// /proc/net/snmp in ns.
func snmpCounter(t *testing.T, ns *vswNS, proto, name string) int {
	t.Helper()
	out := ns.mustExec("cat", "/proc/net/snmp")
	var head []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] != proto+":" {
			continue
		}
		if head == nil {
			head = f
			continue
		}
		if i := slices.Index(head, name); i > 0 && i < len(f) {
			n, _ := strconv.Atoi(f[i])
			return n
		}
	}
	t.Fatalf("%s: no %s %s in /proc/net/snmp", ns.Name, proto, name)
	return 0
}

// TestOpenFlowGroupTraffic steers traffic from namespace a to two
// namespaces b and c holding the same address and MAC through groups:
// a select group spreads UDP flows over both (each flow on one), an all
// group copies a ping to both, and a fast_failover group moves a running
// ping from b to c when b's port goes down.
func TestOpenFlowGroupTraffic(t *testing.T) {
	start := time.Now()
	s := startGovsSwitch(t)
	s.setUp("ggrt", "10.190.0")
	t.Logf("set up in %v", time.Since(start).Round(time.Millisecond))
	c := vswAddPrefixedNS(t, "ggrt", "c", "10.190.0.2/24")
	s.vsctl("add-port", s.br, c.Host, "--", "set", "interface", c.Host, "ofport_request=4")
	const mac = "02:00:00:00:19:02"
	for _, ns := range []*vswNS{s.b, c} {
		ns.mustExec("ip", "link", "set", "eth0", "address", mac)
	}
	s.a.mustExec("ip", "neigh", "replace", "10.190.0.2", "lladdr", mac, "dev", "eth0")
	ofctl := func(args ...string) {
		t.Helper()
		if out, rc := s.ofctl(append([]string{"-O", "OpenFlow13"}, args...)...); rc != 0 {
			t.Fatalf("ovs-ofctl %v: %s", args, out)
		}
	}
	// Hashing the UDP source port: OVS's default selection (dp_hash of
	// the symmetric L3/L4 fields, TCP's and SCTP's ports only) would
	// send every UDP flow between two addresses one way.
	if out, rc := s.ofctl("-O", "OpenFlow15", "add-group", s.br, "group_id=1,type=select,selection_method=hash,fields(udp_src),bucket=output:2,bucket=output:4"); rc != 0 {
		t.Fatalf("add-group: %s", out)
	}
	ofctl("add-group", s.br, "group_id=2,type=all,bucket=output:2,bucket=output:4")
	ofctl("add-group", s.br, "group_id=3,type=fast_failover,bucket=watch_port:2,output:2,bucket=watch_port:4,output:4")
	ofctl("del-flows", s.br)
	ofctl("add-flow", s.br, "priority=10,in_port=1,ip,actions=group:1")
	ofctl("add-flow", s.br, "priority=10,in_port=1,arp,actions=output:2,output:4")
	ofctl("add-flow", s.br, "priority=10,in_port=2,actions=output:1")
	ofctl("add-flow", s.br, "priority=10,in_port=4,actions=output:1")

	// select: 12 UDP flows (source ports), three datagrams each, to a port
	// nobody listens on; each lands whole in b or in c. The flows' sockets
	// are opened in a once, not by a process per flow.
	// They stay unconnected, as a connected one would fail its next write
	// with the port-unreachable error the last one brought back.
	flows := make([]*net.UDPConn, 12)
	dst := &net.UDPAddr{IP: net.IPv4(10, 190, 0, 2), Port: 9}
	vswInNS(t, s.a.Name, func() {
		for i := range flows {
			conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 190, 0, 1), Port: 41000 + i})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			flows[i] = conn
		}
	})
	perNS := map[string]int{}
	for i, conn := range flows {
		b0, c0 := snmpCounter(t, s.b, "Udp", "NoPorts"), snmpCounter(t, c, "Udp", "NoPorts")
		for range 3 {
			if _, err := conn.WriteToUDP([]byte("x"), dst); err != nil {
				t.Fatalf("UDP flow from port %d: %v", 41000+i, err)
			}
		}
		var db, dc int
		vswWait(t, vswTimeout, fmt.Sprintf("flow %d's datagrams to arrive", i), func() bool {
			db, dc = snmpCounter(t, s.b, "Udp", "NoPorts")-b0, snmpCounter(t, c, "Udp", "NoPorts")-c0
			return db+dc >= 3
		})
		if db != 0 && dc != 0 || db+dc != 3 {
			t.Fatalf("UDP flow from port %d: %d datagrams in b, %d in c; want all 3 in one", 41000+i, db, dc)
		}
		if db > 0 {
			perNS["b"]++
		} else {
			perNS["c"]++
		}
	}
	if perNS["b"] == 0 || perNS["c"] == 0 {
		t.Fatalf("select group sent every flow one way: %v", perNS)
	}
	t.Logf("select group: flows per namespace %v (%v)", perNS, time.Since(start).Round(time.Millisecond))
	if out, rc := s.ofctl("-O", "OpenFlow13", "dump-group-stats", s.br, "group_id=1"); rc != 0 || !strings.Contains(out, "bucket1:packet_count=") {
		t.Fatalf("dump-group-stats: %s", out)
	}

	// all: one ping reaches both.
	ofctl("add-flow", s.br, "priority=20,in_port=1,icmp,actions=group:2")
	b0, c0 := snmpCounter(t, s.b, "Icmp", "InEchos"), snmpCounter(t, c, "Icmp", "InEchos")
	s.a.mustExec("ping", "-q", "-n", "-c", "1", "-W", "5", "10.190.0.2")
	vswWait(t, vswTimeout, "the ping's copies to arrive", func() bool {
		return snmpCounter(t, s.b, "Icmp", "InEchos") > b0 && snmpCounter(t, c, "Icmp", "InEchos") > c0
	})

	t.Logf("all group done (%v)", time.Since(start).Round(time.Millisecond))
	// fast_failover: a ping runs to b; b's port goes down; it goes on to c.
	ofctl("add-flow", s.br, "priority=20,in_port=1,icmp,actions=group:3")
	ping := exec.Command("ip", "netns", "exec", s.a.Name, "ping", "-q", "-n", "-i", "0.1", "10.190.0.2")
	if err := ping.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ping.Process.Signal(syscall.SIGTERM)
		ping.Wait()
	})
	b0 = snmpCounter(t, s.b, "Icmp", "InEchos")
	vswWait(t, vswTimeout, "the ping to reach b", func() bool { return snmpCounter(t, s.b, "Icmp", "InEchos") > b0+2 })
	c0 = snmpCounter(t, c, "Icmp", "InEchos")
	if _, err := vswRun("ip", "link", "set", s.b.Host, "down"); err != nil {
		t.Fatal(err)
	}
	vswWait(t, vswTimeout, "the ping to fail over to c", func() bool { return snmpCounter(t, c, "Icmp", "InEchos") > c0+2 })
	if out, rc := s.ofctl("-O", "OpenFlow13", "dump-group-stats", s.br, "group_id=3"); rc != 0 || !strings.Contains(out, "bucket1:packet_count=") {
		t.Fatalf("dump-group-stats: %s", out)
	}
}
