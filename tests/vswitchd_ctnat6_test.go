package tests

import (
	"encoding/json"
	"strings"
	"testing"
)

// udp6ProbeScript sends "probe" from a connected UDP socket to host:port
// and prints what comes back: the server's answer, or "refused" if an
// ICMPv6 port unreachable was delivered to the socket.
const udp6ProbeScript = `import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.settimeout(3)
s.connect((sys.argv[1], int(sys.argv[2]))); s.send(b"probe")
try:
    print(s.recv(100).decode())
except ConnectionRefusedError:
    print("refused")
except socket.timeout:
    print("timeout")`

// udp6EchoPeerScript answers each datagram with its sender's address.
const udp6EchoPeerScript = `import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.bind((sys.argv[1], int(sys.argv[2])))
while True:
    d, a = s.recvfrom(100); s.sendto(a[0].encode(), a)`

// udp6NameScript answers each datagram with argv[3], bound to argv[1]
// port argv[2].
const udp6NameScript = `import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.bind((sys.argv[1], int(sys.argv[2])))
while True:
    d, a = s.recvfrom(100); s.sendto(sys.argv[3].encode(), a)`

// udp6SpreadScript sends one datagram to argv[1] port argv[2] from each
// of argv[3] fresh sockets and prints the distinct answers and from
// where they came, sorted.
const udp6SpreadScript = `import socket, sys
seen = set()
for i in range(int(sys.argv[3])):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.settimeout(1)
    s.sendto(b"probe", (sys.argv[1], int(sys.argv[2])))
    try:
        d, a = s.recvfrom(100); seen.add(d.decode() + " from " + a[0])
    except socket.timeout:
        seen.add("timeout")
    s.close()
print(" ".join(sorted(seen)))`

// TestOpenFlowCtNAT6 SNATs namespace a (fd87::1) to fd87::100 on its way
// to b (fd87::2), with Debian's ovs-ofctl flows on govs: ping6 passes, b
// sees UDP and TCP from fd87::100, and the ICMPv6 port unreachable b sends
// to fd87::100 reaches a's socket, its inner header translated back. In
// another zone, a virtual address fd87::200 is DNATed to b, and b's
// answers come back from the virtual address; a second virtual address
// fd87::300 is a load balancer: a select group DNATs each connection to
// one of two backends (fd87::2 and fd87::3), and both answer. (As in
// OVN's load balancer groups, a bucket's ct() continues in a table: a
// bucket is an action set, which runs only its output when it has one.)
func TestOpenFlowCtNAT6(t *testing.T) {
	s := startGovsSwitch(t)
	s.setUp("gn6o", "10.245.0")
	s.a.mustExec("ip", "-6", "addr", "add", "fd87::1/64", "dev", "eth0", "nodad")
	s.b.mustExec("ip", "-6", "addr", "add", "fd87::2/64", "dev", "eth0", "nodad")
	s.b.mustExec("ip", "-6", "addr", "add", "fd87::3/64", "dev", "eth0", "nodad")
	// b reaches the translated address through a's port.
	amac := strings.TrimSpace(s.a.mustExec("cat", "/sys/class/net/eth0/address"))
	s.b.mustExec("ip", "-6", "neigh", "replace", "fd87::100", "lladdr", amac, "dev", "eth0", "nud", "permanent")
	bmac := strings.TrimSpace(s.b.mustExec("cat", "/sys/class/net/eth0/address"))
	s.a.mustExec("ip", "-6", "neigh", "replace", "fd87::200", "lladdr", bmac, "dev", "eth0", "nud", "permanent")
	s.a.mustExec("ip", "-6", "neigh", "replace", "fd87::300", "lladdr", bmac, "dev", "eth0", "nud", "permanent")
	// Hashing the UDP source port, as OVN's selection_fields: OVS's
	// default selection (dp_hash of the symmetric L3/L4 fields) leaves
	// UDP ports out, so it would send every connection between two
	// addresses to one backend.
	if out, rc := s.ofctl("-O", "OpenFlow15", "add-group", s.br, "group_id=1,type=select,selection_method=hash,fields(ipv6_src,udp_src),"+
		"bucket=actions=ct(commit,zone=10,table=2,nat(dst=fd87::2)),"+
		"bucket=actions=ct(commit,zone=10,table=2,nat(dst=fd87::3))"); rc != 0 {
		t.Fatalf("add-group: %s", out)
	}
	s.replaceFlows("table=0,priority=95,ipv6,in_port=1,ipv6_dst=fd87::300,actions=group:1",
		"table=0,priority=95,ipv6,in_port=1,ipv6_dst=fd87::200,actions=ct(commit,zone=10,nat(dst=fd87::2)),output:2",
		"table=0,priority=95,ipv6,in_port=2,ipv6_dst=fd87::1,actions=ct(zone=10,nat,table=1)",
		"table=0,priority=100,icmp6,icmp_type=135,actions=NORMAL",
		"table=0,priority=100,icmp6,icmp_type=136,actions=NORMAL",
		"table=0,priority=90,ipv6,in_port=1,actions=ct(commit,zone=9,nat(src=fd87::100)),output:2",
		"table=0,priority=90,ipv6,in_port=2,actions=ct(zone=9,nat,table=1)",
		"table=1,priority=100,ct_state=+trk+est,actions=output:1",
		"table=1,priority=100,ct_state=+trk+rel,actions=output:1",
		"table=1,priority=1,actions=drop",
		"table=2,priority=1,actions=output:2",
		"table=0,priority=1,actions=drop")
	s.a.waitPing("fd87::2")
	startInNS(t, s.b, nil, debPython, "-c", udp6EchoPeerScript, "fd87::2", "7701")
	waitListening(t, s.b, "u", 7701)
	if got := strings.TrimSpace(s.a.mustExec(debPython, "-c", udp6ProbeScript, "fd87::2", "7701")); got != "fd87::100" {
		t.Errorf("UDP: b saw the source %q, want fd87::100\n%s", got, s.appctl("dpctl/dump-conntrack"))
	}
	// Port 7702 is closed: b's ICMPv6 error goes to fd87::100 and must be
	// translated, outer and inner header, back to a's socket.
	if got := strings.TrimSpace(s.a.mustExec(debPython, "-c", udp6ProbeScript, "fd87::2", "7702")); got != "refused" {
		t.Errorf("UDP to a closed port: %q, want refused (the ICMPv6 error NATed back)\n%s", got, s.appctl("dpctl/dump-conntrack"))
	}
	if got := strings.TrimSpace(s.a.mustExec(debPython, "-c", udp6ProbeScript, "fd87::200", "7701")); got != "fd87::1" {
		t.Errorf("UDP to the DNATed fd87::200: %q, want b's answer fd87::1 from fd87::200\n%s", got, s.appctl("dpctl/dump-conntrack"))
	}
	for _, be := range []string{"fd87::2", "fd87::3"} {
		startInNS(t, s.b, nil, debPython, "-c", udp6NameScript, be, "7704", "backend-"+be)
	}
	vswWait(t, vswTimeout, "two UDP backends in b", func() bool {
		o, _ := s.b.exec("ss", "-Hlun", "sport = :7704")
		return strings.Count(o, "7704") == 2
	})
	// 16 connections from as many source ports: with two buckets, the
	// chance that one backend gets none is 2^-15.
	if got := strings.TrimSpace(s.a.mustExec(debPython, "-c", udp6SpreadScript, "fd87::300", "7704", "16")); got != "backend-fd87::2 from fd87::300 backend-fd87::3 from fd87::300" {
		t.Errorf("UDP to the load-balanced fd87::300 got answers %q, want both backends, from fd87::300\n%s\n%s", got, s.appctl("dpctl/dump-conntrack", "zone=10"),
			s.appctl("ofproto/trace", s.br, "in_port=1,udp6,ipv6_src=fd87::1,ipv6_dst=fd87::300,udp_src=1000,udp_dst=7704"))
	}
	holdServer(t, s.b, "fd87::2", 7703)
	if got := connectEach(t, s.a, "fd87::2", 3, 7703); got != "ok" {
		t.Errorf("TCP through SNAT: %s\n%s", got, s.appctl("dpctl/dump-conntrack"))
	}
	if got := connectEach(t, s.a, "fd87::200", 3, 7703); got != "ok" {
		t.Errorf("TCP through DNAT: %s\n%s", got, s.appctl("dpctl/dump-conntrack"))
	}
	// iperf3 TCP through the SNAT and the DNAT: the bytes arrive
	// (issue 14).
	startInNS(t, s.b, nil, "iperf3", "-s")
	waitListening(t, s.b, "t", 5201)
	for _, dst := range []string{"fd87::2", "fd87::200"} {
		out, err := s.a.exec("timeout", "30", "iperf3", "-c", dst, "-t", "1", "-J")
		var r struct {
			End struct {
				Sent     struct{ Bytes uint64 } `json:"sum_sent"`
				Received struct{ Bytes uint64 } `json:"sum_received"`
			} `json:"end"`
		}
		if jerr := json.Unmarshal([]byte(out), &r); err != nil || jerr != nil || r.End.Received.Bytes == 0 {
			t.Errorf("iperf3 to %s: %v %v, received %d bytes\n%s\n%s", dst, err, jerr, r.End.Received.Bytes, vswTail(out, 20), s.appctl("dpctl/dump-conntrack"))
			continue
		}
		t.Logf("iperf3 TCP to %s through NAT: %d bytes sent, %d received", dst, r.End.Sent.Bytes, r.End.Received.Bytes)
	}
	if dump := s.appctl("dpctl/dump-conntrack", "zone=9"); !strings.Contains(dump, "tcp,orig=(src=fd87::1,dst=fd87::2,") || !strings.Contains(dump, "reply=(src=fd87::2,dst=fd87::100,") {
		t.Errorf("dump-conntrack zone=9 lacks the translated TCP connection:\n%s", dump)
	}
	if dump := s.appctl("dpctl/dump-conntrack", "zone=10"); !strings.Contains(dump, "tcp,orig=(src=fd87::1,dst=fd87::200,") || !strings.Contains(dump, "reply=(src=fd87::2,dst=fd87::1,") {
		t.Errorf("dump-conntrack zone=10 lacks the translated TCP connection:\n%s", dump)
	}
}
