package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// firstPacketIn starts `ovs-ofctl monitor` on s's bridge with args, makes
// namespace a send ARP requests (a ping to an address nobody has, running
// beside the wait: it is never answered) until one is reported, and
// returns the first report, normalised.
func (s *ofSwitch) firstPacketIn(args ...string) string {
	s.t.Helper()
	return s.firstPacketInOf("", false, args...)
}

// firstPacketInOf is firstPacketIn for the first report whose packet line
// contains filter; purge empties the datapath flow table before each
// ping, so that a drop flow cached before the monitor connected goes.
func (s *ofSwitch) firstPacketInOf(filter string, purge bool, args ...string) string {
	s.t.Helper()
	out := filepath.Join(s.dir, "monitor.out")
	f, err := os.Create(out)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(vswOfctl, append(args, "monitor", s.br, "65534")...)
	cmd.Env = append(os.Environ(), "OVS_RUNDIR="+s.dir)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	// The kernel asks again every retrans_time while the address stays
	// unresolved: 200 ms rather than a second.
	s.a.mustExec("sysctl", "-q", "-w", "net.ipv4.neigh.eth0.retrans_time_ms=200")
	ping := exec.Command("ip", "netns", "exec", s.a.Name, "ping", "-q", "-n", "-i", "0.2", "10.77.0.9")
	if err := ping.Start(); err != nil {
		s.t.Fatal(err)
	}
	defer func() {
		ping.Process.Signal(syscall.SIGTERM)
		ping.Wait()
	}()
	var report string
	vswWait(s.t, vswTimeout, "a packet-in on "+s.br, func() bool {
		if purge {
			s.appctl("revalidator/purge")
		}
		b, _ := os.ReadFile(out)
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			if strings.Contains(l, "PACKET_IN") && i+2 < len(lines) && lines[i+1] != "" && strings.Contains(lines[i+1], filter) {
				report = l + "\n" + lines[i+1]
				return true
			}
		}
		return false
	})
	return s.normalizeOfctl(report)
}

// TestOpenFlowPacketIn: a flow's controller action reaches `ovs-ofctl
// monitor` with the same report (reason, table, cookie, registers,
// in_port, frame) as Debian's ovs-vswitchd gives for the same flow and
// frame, in the Nicira and the OpenFlow 1.3 packet-in formats.
func TestOpenFlowPacketIn(t *testing.T) {
	deb := startDebianSwitch(t)
	deb.setUp("gopd", "10.77.0")
	govs := startGovsSwitch(t)
	govs.setUp("gopo", "10.77.0")
	for _, s := range []*ofSwitch{deb, govs} {
		s.a.mustExec("ip", "link", "set", "eth0", "address", "02:00:00:77:00:01")
		for _, flow := range []string{"cookie=0x7,table=0,arp,actions=load:0x5->NXM_NX_REG1[],resubmit(,3)",
			"table=3,priority=0,actions=controller"} {
			if out, rc := s.ofctl("add-flow", s.br, flow); rc != 0 {
				t.Fatalf("add-flow %s: %s", flow, out)
			}
		}
	}
	for _, args := range [][]string{{"-P", "nxt_packet_in"}, {"-O", "OpenFlow13"}} {
		want := deb.firstPacketIn(args...)
		got := govs.firstPacketIn(args...)
		if got != want {
			t.Errorf("monitor %v: govs:\n%s\nDebian's ovs-vswitchd:\n%s", args, got, want)
		}
		t.Logf("monitor %v:\n%s", args, got)
	}
	// No flow: an OpenFlow 1.0 connection gets the miss (OVS's miss
	// rule). Any packet may miss (IPv6 neighbour discovery too): compare
	// the reports of a's ARP requests. OVS does not revalidate when such
	// a connection comes: its ARP drop flow, cached after del-flows, is
	// purged.
	for _, s := range []*ofSwitch{deb, govs} {
		if out, rc := s.ofctl("del-flows", s.br); rc != 0 {
			t.Fatalf("del-flows: %s", out)
		}
	}
	const arp = "arp_tpa=10.77.0.9"
	want := deb.firstPacketInOf(arp, true, "-O", "OpenFlow10")
	if got := govs.firstPacketInOf(arp, true, "-O", "OpenFlow10"); got != want || !strings.Contains(got, "no_match") {
		t.Errorf("monitor OpenFlow10 on a miss: govs:\n%s\nDebian's ovs-vswitchd:\n%s", got, want)
	}
}

// rxPackets is eth0's received packet count in ns.
func rxPackets(t *testing.T, ns *vswNS) string {
	t.Helper()
	out := ns.mustExec("cat", "/sys/class/net/eth0/statistics/rx_packets")
	return strings.TrimSpace(out)
}

// TestOpenFlowPacketOut: `ovs-ofctl packet-out` gives the same output and
// exit status as on Debian's ovs-vswitchd, for outputs to a port, to the
// tables and refused requests, and the frame reaches the namespace.
func TestOpenFlowPacketOut(t *testing.T) {
	deb := startDebianSwitch(t)
	deb.setUp("gqpd", "10.77.0")
	govs := startGovsSwitch(t)
	govs.setUp("gqpo", "10.77.0")
	// An ARP request from a for b's address.
	frame := "ffffffffffff020000770001080600010800060400010200007700010a4d00010000000000000a4d0002"
	for _, s := range []*ofSwitch{deb, govs} {
		if out, rc := s.ofctl("del-flows", s.br); rc != 0 {
			t.Fatal(out)
		}
		if out, rc := s.ofctl("add-flow", s.br, "in_port=3,actions=output:2"); rc != 0 {
			t.Fatal(out)
		}
	}
	for _, req := range []string{"in_port=1 packet=" + frame + " actions=output:2",
		"in_port=3 packet=" + frame + " actions=table",
		"in_port=CONTROLLER packet=" + frame + " actions=output:2",
		"in_port=LOCAL packet=" + frame + " actions=output:2,output:1",
		"in_port=1 packet=" + frame + " actions=mod_dl_src:02:00:00:00:00:09,output:2",
		"in_port=1 packet=" + frame + " actions=set_field:10.0.0.9->ip_src,output:2"} {
		for _, version := range []string{"OpenFlow10", "OpenFlow13", "OpenFlow15"} {
			before := rxPackets(t, govs.b)
			want, wantRC := deb.ofctl("-O", version, "packet-out", deb.br, req)
			got, gotRC := govs.ofctl("-O", version, "packet-out", govs.br, req)
			if gotRC != wantRC || govs.normalizeOfctl(got) != deb.normalizeOfctl(want) {
				t.Errorf("packet-out %s %q: exit %d:\n%s\nDebian's: exit %d:\n%s", version, req, gotRC, got, wantRC, want)
			}
			t.Logf("packet-out %s %q: exit %d %s", version, req, gotRC, strings.TrimSpace(got))
			if gotRC == 0 {
				vswWait(t, vswTimeout, "the frame in namespace b", func() bool { return rxPackets(t, govs.b) != before })
			}
		}
	}
}

// TestOpenFlowTestcontrollerSwitch: with fail_mode=secure the bridge
// forwards only what Debian's ovs-testcontroller, a learning switch over
// PACKET_IN, PACKET_OUT and FLOW_MOD, tells it to: two namespaces ping.
func TestOpenFlowTestcontrollerSwitch(t *testing.T) {
	e := vswNewEnv(t)
	a := vswAddPrefixedNS(t, "gotc", "a", "10.75.0.1/24")
	b := vswAddPrefixedNS(t, "gotc", "b", "10.75.0.2/24")
	port := ovsdbFreePort(t)
	startTestcontroller(t, e.dir, port)
	e.mustVsctl("add-br", "gotc0", "--", "set", "bridge", "gotc0", "fail_mode=secure",
		"--", "add-port", "gotc0", a.Host, "--", "add-port", "gotc0", b.Host,
		"--", "set-controller", "gotc0", fmt.Sprintf("tcp:127.0.0.1:%d", port))
	a.waitPing("10.75.0.2")
	b.waitPing("10.75.0.1")
	// The controller's OpenFlow 1.0 matches (dl_vlan=0xffff: untagged)
	// decode in Debian's ovs-ofctl from the NXST_FLOW and OF1.3 replies.
	for _, version := range []string{"OpenFlow10", "OpenFlow13"} {
		out, err := vswRunEnv([]string{"OVS_RUNDIR=" + e.dir}, vswOfctl, "-O", version, "dump-flows", "gotc0")
		if err != nil || !strings.Contains(out, "vlan_tci=0x0000") {
			t.Fatalf("dump-flows -O %s: %v\n%s", version, err, out)
		}
		t.Logf("dump-flows -O %s:\n%s", version, out)
	}
}

// TestOpenFlowController2Userdata: controller actions with userdata (as
// ovn-controller's, an opcode in the first bytes) and the other
// NXAST_CONTROLLER2 arguments are stored and dumped as Debian's
// ovs-vswitchd does, and the packet-in in the NXT_PACKET_IN2 format
// carries the userdata as Debian's. (meter_id: TestOpenFlowMeterDifferential.)
func TestOpenFlowController2Userdata(t *testing.T) {
	deb := startDebianSwitch(t)
	deb.setUp("gcud", "10.77.0")
	govs := startGovsSwitch(t)
	govs.setUp("gcuo", "10.77.0")
	dumps := map[*ofSwitch]string{}
	for _, s := range []*ofSwitch{deb, govs} {
		s.a.mustExec("ip", "link", "set", "eth0", "address", "02:00:00:77:00:01")
		for _, flow := range []string{"cookie=0x7,table=0,arp,actions=load:0x5->NXM_NX_REG1[],resubmit(,3)",
			"table=3,priority=0,actions=controller(userdata=00.00.00.0c.01.02.03,max_len=128)",
			"table=5,actions=controller(reason=no_match,id=3,userdata=ff)",
			"table=6,actions=controller(reason=invalid_ttl,max_len=0,userdata=00.00.00.01.00.00.00.00.01.02)"} {
			if out, rc := s.ofctl("add-flow", s.br, flow); rc != 0 {
				t.Fatalf("add-flow %s: %s", flow, out)
			}
		}
		out, rc := s.ofctl("--no-stats", "dump-flows", s.br)
		if rc != 0 {
			t.Fatalf("dump-flows: %s", out)
		}
		dumps[s] = s.normalizeOfctl(out)
	}
	if dumps[govs] != dumps[deb] || !strings.Contains(dumps[govs], "userdata=00.00.00.0c.01.02.03") {
		t.Errorf("dump-flows: govs:\n%s\nDebian's ovs-vswitchd:\n%s", dumps[govs], dumps[deb])
	}
	// ofproto/trace lists the action as OVS's ofpact_format (its indent
	// under a resubmit is govs' own; not compared).
	for _, tbl := range []string{"3", "6"} {
		lines := map[*ofSwitch]string{}
		for _, s := range []*ofSwitch{deb, govs} {
			if tbl == "6" {
				if out, rc := s.ofctl("add-flow", s.br, "priority=9,udp,actions=resubmit(,6)"); rc != 0 {
					t.Fatalf("add-flow: %s", out)
				}
			}
			out := s.appctl("ofproto/trace", s.br, "in_port=1,"+map[string]string{"3": "arp", "6": "udp"}[tbl])
			lines[s] = strings.TrimSpace(regexp.MustCompile(`(?m)^ *controller\(.*$`).FindString(out))
		}
		if lines[govs] != lines[deb] || lines[govs] == "" {
			t.Errorf("ofproto/trace to table %s: govs %q, Debian's %q", tbl, lines[govs], lines[deb])
		}
	}
	want := deb.firstPacketIn("-P", "nxt_packet_in2")
	got := govs.firstPacketIn("-P", "nxt_packet_in2")
	if got != want || !strings.Contains(got, "userdata=00.00.00.0c.01.02.03") {
		t.Errorf("monitor -P nxt_packet_in2: govs:\n%s\nDebian's ovs-vswitchd:\n%s", got, want)
	}
	t.Logf("monitor -P nxt_packet_in2:\n%s", got)
}

// TestOpenFlowControllerPauseResume: a flow pauses its translation at
// controller(pause) after setting a register; the rest of its actions
// (a resubmit to a table that needs the register, then the output) runs
// only when the controller sends the packet back with NXT_RESUME (`ovs-ofctl
// monitor BR resume`): a to b pings only while that monitor runs.
func TestOpenFlowControllerPauseResume(t *testing.T) {
	s := startGovsSwitch(t)
	s.setUp("gcpr", "10.78.0")
	for _, flow := range []string{"priority=10,in_port=1,actions=load:0x2a->NXM_NX_REG2[],controller(userdata=00.00.00.02,pause),resubmit(,1)",
		"table=1,reg2=0x2a,actions=output:2", "priority=10,in_port=2,actions=output:1"} {
		if out, rc := s.ofctl("add-flow", s.br, flow); rc != 0 {
			t.Fatalf("add-flow %s: %s", flow, out)
		}
	}
	if out, _ := s.ofctl("dump-flows", s.br); !strings.Contains(out, "controller(userdata=00.00.00.02,pause)") {
		t.Fatalf("dump-flows:\n%s", out)
	}
	s.a.noPing("10.78.0.2")

	out := filepath.Join(s.dir, "resume.out")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(vswOfctl, "monitor", s.br, "resume")
	cmd.Env = append(os.Environ(), "OVS_RUNDIR="+s.dir)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		}
	}
	defer stop()
	s.a.waitPing("10.78.0.2")
	stop()
	b, _ := os.ReadFile(out)
	if !strings.Contains(string(b), "continuation.") || !strings.Contains(string(b), "NXT_RESUME") ||
		!strings.Contains(string(b), "userdata=00.00.00.02") {
		t.Errorf("monitor resume printed:\n%.3000s", b)
	}
	t.Logf("monitor resume printed:\n%.1500s", b)
	s.a.noPing("10.78.0.2")
}
