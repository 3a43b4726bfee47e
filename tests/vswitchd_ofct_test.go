package tests

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// compareOfctl runs ovs-ofctl args ("BR" standing for the bridge) against
// Debian's switch and govs and requires the same normalised output and
// exit status.
func compareOfctl(t *testing.T, deb, govs *ofSwitch, args []string, norms ...func(string) string) {
	t.Helper()
	sub := func(s *ofSwitch) []string {
		out := slices.Clone(args)
		for i, a := range out {
			if a == "BR" {
				out[i] = s.br
			}
		}
		return out
	}
	want, wantRC := deb.ofctl(sub(deb)...)
	got, gotRC := govs.ofctl(sub(govs)...)
	g, w := sortGroupLines(govs.normalizeOfctl(got)), sortGroupLines(deb.normalizeOfctl(want))
	for _, n := range norms {
		g, w = n(g), n(w)
	}
	if gotRC != wantRC || g != w {
		t.Errorf("ovs-ofctl %v: exit %d, Debian's %d\ngovs:\n%s\nDebian's ovs-vswitchd:\n%s", args, gotRC, wantRC, g, w)
	}
}

// TestOpenFlowCtDifferential loads flows matching the conntrack fields,
// with ct_clear, into govs and into Debian's ovs-vswitchd with Debian's
// ovs-ofctl, and requires the same dump-flows output, the same errors for
// matches without their prerequisites, and the same ofproto/trace
// datapath actions.
func TestOpenFlowCtDifferential(t *testing.T) {
	deb, govs := startSwitchPair(t, "gctd", "10.186.0", "gcto", "10.187.0")

	flows := filepath.Join(t.TempDir(), "ct")
	if err := os.WriteFile(flows, []byte(`table=0,priority=100,ct_state=-trk,ip,actions=ct_clear,resubmit(,1)
table=0,priority=90,ct_state=+trk+est,ip,actions=output:2
table=0,priority=80,ct_state=+trk+new,ct_nw_proto=6,ct_tp_dst=80,ct_mark=1/1,ip,actions=output:3
table=0,priority=70,ct_state=-inv+trk,ipv6,ct_ipv6_src=2001:db8::1,ct_nw_proto=17,ct_tp_src=0x100/0xff00,actions=drop
table=0,priority=60,ct_state=+rpl+trk,ct_zone=5,ct_label=0x1/0x1,ct_nw_src=10.0.0.0/8,ct_nw_dst=10.1.2.3,ip,actions=drop
table=0,priority=50,ct_state=new|trk,actions=drop
table=0,priority=0,actions=NORMAL
table=1,priority=2,ct_state=-trk,actions=output:3
table=1,priority=1,actions=output:2
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, args := range [][]string{
		{"add-flows", "BR", flows},
		{"dump-flows", "--no-stats", "BR"},
		{"-O", "OpenFlow13", "dump-flows", "--no-stats", "BR"},
		{"-O", "OpenFlow15", "dump-flows", "--no-stats", "BR"},
		{"add-flow", "BR", "ct_nw_proto=6,actions=drop"},
		{"add-flow", "BR", "ct_state=+trk,ct_nw_proto=6,actions=drop"},
		{"add-flow", "BR", "ct_state=+est,ipv6,ct_nw_src=1.2.3.4,actions=drop"},
		{"-O", "OpenFlow13", "add-flow", "BR", "ct_state=+est,ip,ct_ipv6_dst=::1,actions=drop"},
		{"del-flows", "BR", "ct_state=+trk+est,ip"},
		{"dump-flows", "--no-stats", "BR", "table=0"},
	} {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}
	// An untracked packet: ct_clear needs no datapath action, the second
	// lookup sees -trk.
	for _, pkt := range []string{"in_port=1,tcp,nw_src=10.0.0.1,tp_dst=80", "in_port=2,udp,nw_src=10.0.0.2"} {
		want, got := deb.traceActions(pkt), govs.traceActions(pkt)
		if got != want {
			t.Errorf("ofproto/trace %s: govs %q, Debian's %q", pkt, got, want)
		}
	}

	// The ct and nat actions: the same flows shown back the same in every
	// version, and the same datapath actions in ofproto/trace, for the
	// first pass and for the recirculation it forks.
	ctFlows := filepath.Join(t.TempDir(), "ctact")
	if err := os.WriteFile(ctFlows, []byte(`table=0,priority=200,ip,nw_dst=10.9.9.9,actions=ct(commit,zone=5,table=2,exec(set_field:1->ct_mark),nat(src=10.0.0.1-10.0.0.9:1000-2000,random))
table=0,priority=190,tcp,actions=load:0x7->NXM_NX_REG0[0..15],ct(zone=NXM_NX_REG0[0..15],table=1,nat)
table=0,priority=180,ipv6,actions=ct(commit,force,exec(load:0x5->NXM_NX_CT_LABEL[0..7]),nat(dst=[2001:db8::1]:80))
table=0,priority=170,udp,actions=ct(commit,exec(set_field:0x3/0xff->ct_mark)),ct_clear,output:2
table=0,priority=160,icmp,actions=ct(nat),output:1
table=0,priority=150,ip,actions=ct(commit,nat(dst=10.1.1.1:8080,persistent,hash),table=3)
table=1,priority=10,ct_state=+trk+new,tcp,reg0=7,actions=output:2
table=2,priority=10,ct_state=+trk,ct_mark=1,ip,actions=ct_clear,output:3
table=3,priority=10,ip,actions=ct(table=4)
table=4,priority=10,ct_state=+trk,ip,actions=output:1
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, args := range [][]string{
		{"del-flows", "BR"},
		{"add-flows", "BR", ctFlows},
		// Debian's switch dumps a table in its hash order: sorted here.
		{"dump-flows", "--no-stats", "--rsort", "BR"},
		{"-O", "OpenFlow13", "dump-flows", "--no-stats", "--rsort", "BR"},
		{"-O", "OpenFlow15", "dump-flows", "--no-stats", "--rsort", "BR"},
		{"add-flow", "BR", "actions=ct(commit)"},
		{"add-flow", "BR", "ip,actions=nat"},
		{"add-flow", "BR", "ip,actions=set_field:1->ct_mark"},
		{"add-flow", "BR", "ip,actions=ct(exec(set_field:1->ct_mark))"},
		{"add-flow", "BR", "ip,actions=ct(commit,exec(output:1))"},
		{"add-flow", "BR", "ipv6,actions=ct(commit,nat(src=10.0.0.1))"},
		{"add-flow", "BR", "ct_state=+inv+trk,ip,actions=ct(commit)"},
		{"add-flow", "BR", "ip,actions=ct(zone=NXM_NX_REG0[0..7])"},
		{"-O", "OpenFlow13", "add-flow", "BR", "ip,actions=ct(force)"},
		{"ct-flush-zone", "BR", "3"},
		{"ct-flush", "BR"},
		{"ct-flush", "BR", "zone=4", "ct_nw_src=10.0.0.1,ct_nw_dst=10.0.0.2,ct_nw_proto=6,ct_tp_src=1,ct_tp_dst=2"},
	} {
		t.Run(fmt.Sprintf("ct%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}
	for _, pkt := range []string{"in_port=1,ip,nw_src=10.0.0.1,nw_dst=10.9.9.9", "in_port=1,tcp,nw_src=10.0.0.1,tp_dst=80",
		"in_port=2,udp,nw_src=10.0.0.2", "in_port=2,icmp,nw_src=10.0.0.2", "in_port=1,ip,nw_src=10.0.0.1,nw_proto=47",
		"in_port=1,ipv6,ipv6_src=2001:db8::2"} {
		want, got := deb.traceAllActions(pkt), govs.traceAllActions(pkt)
		if got != want {
			t.Errorf("ofproto/trace %s: govs %q, Debian's %q", pkt, got, want)
		}
	}
	// Helpers: accepted for their protocol, and translated the same.
	for i, args := range [][]string{
		{"add-flow", "BR", "priority=300,tcp,tp_dst=21,actions=ct(commit,alg=ftp,table=1)"},
		{"add-flow", "BR", "priority=300,udp,tp_dst=69,actions=ct(commit,alg=tftp),output:2"},
		{"add-flow", "BR", "udp,actions=ct(commit,alg=ftp)"},
		{"add-flow", "BR", "tcp,actions=ct(alg=tftp)"},
		{"dump-flows", "--no-stats", "--rsort", "BR", "tcp"},
	} {
		t.Run(fmt.Sprintf("alg%02d", i), func(t *testing.T) { compareOfctl(t, deb, govs, args) })
	}
	for _, pkt := range []string{"in_port=1,tcp,nw_src=10.0.0.1,tp_dst=21", "in_port=1,udp,nw_src=10.0.0.1,udp_dst=69"} {
		want, got := deb.traceAllActions(pkt), govs.traceAllActions(pkt)
		if got != want {
			t.Errorf("ofproto/trace %s: govs %q, Debian's %q", pkt, got, want)
		}
	}
}

// traceAllActions returns every "Datapath actions" line of ofproto/trace
// of pkt (the first pass, then each recirculation), ports replaced by
// neutral names and recirculation IDs by their order of appearance.
func (s *ofSwitch) traceAllActions(pkt string) string {
	s.t.Helper()
	names := s.dpPortNames()
	out := s.appctl("ofproto/trace", s.br, pkt)
	var lines []string
	for _, m := range regexp.MustCompile(`(?m)^Datapath actions: (.*)$`).FindAllStringSubmatch(out, -1) {
		parts := regexp.MustCompile(`,(?:[^,()]|\([^()]*(?:\([^()]*\))?[^()]*\))+|^(?:[^,()]|\([^()]*(?:\([^()]*\))?[^()]*\))+`).FindAllString(m[1], -1)
		for i, p := range parts {
			p = strings.TrimPrefix(p, ",")
			if n, ok := names[p]; ok {
				p = n
			}
			parts[i] = p
		}
		lines = append(lines, strings.Join(parts, ","))
	}
	ids := map[string]string{}
	res := regexp.MustCompile(`recirc\((0x[0-9a-f]+)\)|recirc_id=(0x[0-9a-f]+)`).ReplaceAllStringFunc(strings.Join(lines, "\n"), func(m string) string {
		id := regexp.MustCompile(`0x[0-9a-f]+`).FindString(m)
		if ids[id] == "" {
			ids[id] = fmt.Sprintf("R%d", len(ids)+1)
		}
		return strings.Replace(m, id, ids[id], 1)
	})
	return s.normalizeOfctl(res)
}

// replaceFlows makes flows the switch's flow table with ovs-ofctl
// replace-flows (OpenFlow 1.3).
func (s *ofSwitch) replaceFlows(flows ...string) {
	s.t.Helper()
	file := filepath.Join(s.t.TempDir(), "flows")
	if err := os.WriteFile(file, []byte(strings.Join(flows, "\n")+"\n"), 0o644); err != nil {
		s.t.Fatal(err)
	}
	if out, rc := s.ofctl("-O", "OpenFlow13", "replace-flows", s.br, file); rc != 0 {
		s.t.Fatalf("replace-flows: %s", out)
	}
}

// tcpServer listens in ns on ip:port (python3, so that the peer's
// address can be read) for one connection; the returned function waits
// for it and returns the peer address the server saw ("" if none came
// before the server was stopped at the test's end).
func tcpServer(t *testing.T, ns *vswNS, ip string, port int) func() string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	script := `import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1)
c, a = s.accept(); c.sendall(b"govs"); c.close(); print(a[0], flush=True)`
	srv := exec.CommandContext(ctx, "ip", "netns", "exec", ns.Name, debPython, "-c", script, ip, strconv.Itoa(port))
	var out bytes.Buffer
	srv.Stdout, srv.Stderr = &out, &out
	if err := srv.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Wait(); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	vswWait(t, vswTimeout, fmt.Sprintf("a server on %s:%d", ip, port), func() bool {
		o, _ := ns.exec("ss", "-Hltn", fmt.Sprintf("sport = :%d", port))
		return strings.Contains(o, strconv.Itoa(port))
	})
	return func() string {
		select {
		case <-done:
		case <-time.After(vswTimeout):
		}
		return strings.TrimSpace(out.String())
	}
}

// tcpConnect connects from ns to ip:port and reports whether the
// server's greeting arrived within secs seconds.
func tcpConnect(ns *vswNS, ip string, port, secs int) bool {
	out, err := ns.exec(debPython, "-c", `import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=float(sys.argv[3]))
print(c.recv(4).decode())`, ip, strconv.Itoa(port), strconv.Itoa(secs))
	return err == nil && strings.Contains(out, "govs")
}

// TestOpenFlowCtTraffic runs real traffic through OpenFlow ct() flows
// loaded with Debian's ovs-ofctl: a stateful firewall (a may open
// connections to b, b's replies pass, b may not open any to a), then
// SNAT of a to a second address and DNAT of a VIP to b, seen in
// dpctl/dump-conntrack and by the server.
func TestOpenFlowCtTraffic(t *testing.T) {
	s := startGovsSwitch(t)
	s.setUp("gofc", "10.83.0")
	load := s.replaceFlows
	load("table=0,priority=100,arp,actions=NORMAL",
		"table=0,priority=90,ip,actions=ct(table=1,zone=1)",
		"table=1,priority=100,ct_state=+trk+new,ip,in_port=1,actions=ct(commit,zone=1,exec(set_field:0x2a->ct_mark)),output:2",
		"table=1,priority=100,ct_state=+trk+est,ip,in_port=1,actions=output:2",
		"table=1,priority=100,ct_state=+trk+est,ip,in_port=2,actions=output:1",
		"table=1,priority=1,actions=drop")
	s.a.waitPing("10.83.0.2")
	s.b.noPing("10.83.0.1")
	wait := tcpServer(t, s.b, "10.83.0.2", 7001)
	if !tcpConnect(s.a, "10.83.0.2", 7001, 10) {
		t.Fatalf("a could not connect to b through the firewall\n%s", s.appctl("dpctl/dump-conntrack"))
	}
	if peer := wait(); peer != "10.83.0.1" {
		t.Errorf("b's server saw %q", peer)
	}
	tcpServer(t, s.a, "10.83.0.1", 7002)
	if tcpConnect(s.b, "10.83.0.1", 7002, 2) {
		t.Errorf("b opened a connection to a through the firewall")
	}
	if ct := s.appctl("dpctl/dump-conntrack", "zone=1"); !strings.Contains(ct, "dport=7001),reply=(") || !strings.Contains(ct, "mark=42") ||
		strings.Contains(ct, "dport=7002") {
		t.Errorf("conntrack after the firewall test:\n%s", ct)
	}
	// NXT_CT_FLUSH_ZONE from ovs-ofctl empties zone 1.
	if out, rc := s.ofctl("ct-flush-zone", s.br, "1"); rc != 0 {
		t.Fatalf("ct-flush-zone: %s", out)
	}
	if ct := s.appctl("dpctl/dump-conntrack", "zone=1"); strings.TrimSpace(ct) != "" {
		t.Errorf("zone 1 after ct-flush-zone:\n%s", ct)
	}

	// NAT: a's connections to b leave as 10.83.0.100; the VIP .200 goes
	// to b. Neither address answers ARP, so each side knows the other's
	// MAC for it.
	amac := strings.TrimSpace(s.a.mustExec("cat", "/sys/class/net/eth0/address"))
	bmac := strings.TrimSpace(s.b.mustExec("cat", "/sys/class/net/eth0/address"))
	s.a.mustExec("ip", "neigh", "replace", "10.83.0.200", "lladdr", bmac, "dev", "eth0", "nud", "permanent")
	s.b.mustExec("ip", "neigh", "replace", "10.83.0.100", "lladdr", amac, "dev", "eth0", "nud", "permanent")
	load("table=0,priority=100,arp,actions=NORMAL",
		"table=0,priority=90,ip,actions=ct(table=1,zone=2,nat)",
		"table=1,priority=100,ct_state=+trk+new,ip,in_port=1,nw_dst=10.83.0.200,actions=ct(commit,zone=2,nat(dst=10.83.0.2)),output:2",
		"table=1,priority=100,ct_state=+trk+new,ip,in_port=1,nw_dst=10.83.0.2,actions=ct(commit,zone=2,nat(src=10.83.0.100)),output:2",
		"table=1,priority=100,ct_state=+trk+est,ip,in_port=1,actions=output:2",
		"table=1,priority=100,ct_state=+trk+est,ip,in_port=2,actions=output:1",
		"table=1,priority=1,actions=drop")
	wait = tcpServer(t, s.b, "10.83.0.2", 7003)
	if !tcpConnect(s.a, "10.83.0.2", 7003, 10) {
		t.Fatalf("SNAT: no connection\n%s", s.appctl("dpctl/dump-conntrack"))
	}
	if peer := wait(); peer != "10.83.0.100" {
		t.Errorf("SNAT: b's server saw the client as %q, want 10.83.0.100", peer)
	}
	wait = tcpServer(t, s.b, "10.83.0.2", 7004)
	if !tcpConnect(s.a, "10.83.0.200", 7004, 10) {
		t.Fatalf("DNAT: no connection to the VIP\n%s", s.appctl("dpctl/dump-conntrack"))
	}
	if peer := wait(); peer != "10.83.0.1" {
		t.Errorf("DNAT: b's server saw %q", peer)
	}
	ct := s.appctl("dpctl/dump-conntrack", "zone=2")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`tcp,orig=\(src=10\.83\.0\.1,dst=10\.83\.0\.2,sport=\d+,dport=7003\),reply=\(src=10\.83\.0\.2,dst=10\.83\.0\.100,sport=7003,dport=\d+\),zone=2`),
		regexp.MustCompile(`tcp,orig=\(src=10\.83\.0\.1,dst=10\.83\.0\.200,sport=\d+,dport=7004\),reply=\(src=10\.83\.0\.2,dst=10\.83\.0\.1,sport=7004,dport=\d+\),zone=2`),
	} {
		if !want.MatchString(ct) {
			t.Errorf("dump-conntrack zone=2 lacks %s:\n%s", want, ct)
		}
	}
	// NXT_CT_FLUSH from ovs-ofctl ct-flush empties zone 2.
	if out, rc := s.ofctl("ct-flush", s.br, "zone=2"); rc != 0 {
		t.Fatalf("ct-flush: %s", out)
	}
	if ct := s.appctl("dpctl/dump-conntrack", "zone=2"); strings.TrimSpace(ct) != "" {
		t.Errorf("zone 2 after ct-flush:\n%s", ct)
	}
}
