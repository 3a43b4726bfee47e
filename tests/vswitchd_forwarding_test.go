package tests

// Traffic through govs' ovs-vswitchd between network namespaces, with the
// namespaces' veths at their default offloads (checksum offload and TSO
// on, which breaks TCP through OVS's own userspace datapath).

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestVswitchdBridge: three namespaces on one bridge reach each other;
// TCP and UDP through iperf3; fdb/show lists the learned MACs.
func TestVswitchdBridge(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	ns := []*vswNS{
		vswAddNS(t, "br-a", "10.94.0.1/24"),
		vswAddNS(t, "br-b", "10.94.0.2/24"),
		vswAddNS(t, "br-c", "10.94.0.3/24"),
	}
	e.mustVsctl("add-br", "gvswbrbr", "--", "add-port", "gvswbrbr", ns[0].Host, "--", "add-port", "gvswbrbr", ns[1].Host)
	ns[0].waitPing("10.94.0.2")
	e.mustVsctl("add-port", "gvswbrbr", ns[2].Host)
	for i, from := range ns {
		for j := range ns {
			if i != j {
				from.waitPing(fmt.Sprintf("10.94.0.%d", j+1))
			}
		}
	}

	tcp := ns[0].iperf(ns[1], "10.94.0.2", "-t", "2")
	t.Logf("iperf3 TCP: %s", vswIperfSummary(tcp))
	udp := ns[2].iperf(ns[1], "10.94.0.2", "-u", "-b", "200M", "-l", "1400", "-t", "1")
	t.Logf("iperf3 UDP: %s", vswIperfSummary(udp))
	if m := regexp.MustCompile(`(\d+)/(\d+) \(([\d.]+)%\)\s+receiver`).FindStringSubmatch(udp); m == nil || m[2] == "0" {
		t.Errorf("iperf3 UDP received nothing:\n%s", udp)
	}

	fdb := e.mustAppctl("fdb/show", "gvswbrbr")
	if !strings.HasPrefix(fdb, " port  VLAN  MAC                Age\n") {
		t.Errorf("fdb/show header:\n%s", fdb)
	}
	for _, n := range ns {
		mac := strings.TrimSpace(n.mustExec("cat", "/sys/class/net/eth0/address"))
		line := regexp.MustCompile(fmt.Sprintf(`(?m)^ +%d +0  %s +\d+$`, e.ofport(n.Host), regexp.QuoteMeta(mac)))
		if !line.MatchString(fdb) {
			t.Errorf("fdb/show lacks %s on port %d:\n%s", mac, e.ofport(n.Host), fdb)
		}
	}
	if out := e.mustAppctl("dpif/show"); !regexp.MustCompile(`hit:\d+ missed:[1-9]`).MatchString(out) {
		t.Errorf("dpif/show counted no misses:\n%s", out)
	}
}

// TestVswitchdVLANs: access ports on different VLANs are isolated; a trunk
// carries both. The kernel here has no VLAN devices, so the trunk joins two
// bridges: a veth whose ends are trunk ports of each, carrying tagged
// frames between them.
func TestVswitchdVLANs(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	a := vswAddNS(t, "vl-a", "10.95.1.1/24") // VLAN 10 on bridge 1
	b := vswAddNS(t, "vl-b", "10.95.1.2/24") // VLAN 20 on bridge 1
	c := vswAddNS(t, "vl-c", "10.95.1.3/24") // VLAN 10 on bridge 2
	d := vswAddNS(t, "vl-d", "10.95.1.4/24") // VLAN 20 on bridge 2
	vswRun("ip", "link", "del", "gvswvlt1")
	if _, err := vswRun("ip", "link", "add", "gvswvlt1", "type", "veth", "peer", "name", "gvswvlt2"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vswRun("ip", "link", "del", "gvswvlt1") })
	vswRun("ip", "link", "set", "gvswvlt1", "up")
	vswRun("ip", "link", "set", "gvswvlt2", "up")
	e.mustVsctl("add-br", "gvswvlb1",
		"--", "add-port", "gvswvlb1", a.Host, "tag=10",
		"--", "add-port", "gvswvlb1", b.Host, "tag=20",
		"--", "add-port", "gvswvlb1", "gvswvlt1", "trunks=10,20",
		"--", "add-br", "gvswvlb2",
		"--", "add-port", "gvswvlb2", c.Host, "tag=10",
		"--", "add-port", "gvswvlb2", d.Host, "tag=20",
		"--", "add-port", "gvswvlb2", "gvswvlt2", "vlan_mode=trunk")

	a.waitPing("10.95.1.3") // VLAN 10 over the trunk
	b.waitPing("10.95.1.4") // VLAN 20 over the trunk
	a.noPing("10.95.1.2")   // same subnet, other VLAN, same bridge
	a.noPing("10.95.1.4")   // other VLAN across the trunk
	fdb := e.mustAppctl("fdb/show", "gvswvlb1")
	trunk := e.ofport("gvswvlt1")
	for _, vid := range []string{"10", "20"} {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^ +%d +%s  `, trunk, vid)).MatchString(fdb) {
			t.Errorf("fdb/show has no VLAN %s entry on the trunk (port %d):\n%s", vid, trunk, fdb)
		}
	}

	// Moving b to VLAN 10 joins it to a, live.
	e.mustVsctl("set", "port", b.Host, "tag=10")
	a.waitPing("10.95.1.2")
	b.waitPing("10.95.1.3")
}

// TestVswitchdPatch: two bridges joined by patch ports.
func TestVswitchdPatch(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	a := vswAddNS(t, "pt-a", "10.96.0.1/24")
	b := vswAddNS(t, "pt-b", "10.96.0.2/24")
	e.mustVsctl("add-br", "gvswptb1", "--", "add-port", "gvswptb1", a.Host,
		"--", "add-br", "gvswptb2", "--", "set", "bridge", "gvswptb2", "datapath_type=netdev", "--", "add-port", "gvswptb2", b.Host,
		"--", "add-port", "gvswptb1", "gvswptp1", "--", "set", "interface", "gvswptp1", "type=patch", "options:peer=gvswptp2",
		"--", "add-port", "gvswptb2", "gvswptp2", "--", "set", "interface", "gvswptp2", "type=patch", "options:peer=gvswptp1")
	a.waitPing("10.96.0.2")
	out := a.iperf(b, "10.96.0.2", "-t", "1")
	t.Logf("iperf3 TCP over patch ports: %s", vswIperfSummary(out))

	// Cutting the patch stops the traffic.
	e.mustVsctl("del-port", "gvswptp1")
	a.noPing("10.96.0.2")
}

// TestVswitchdPortChurn: ports added and removed under traffic cost the
// other ports nothing.
func TestVswitchdPortChurn(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	a := vswAddNS(t, "ch-a", "10.97.0.1/24")
	b := vswAddNS(t, "ch-b", "10.97.0.2/24")
	c := vswAddNS(t, "ch-c", "10.97.0.3/24")
	e.mustVsctl("add-br", "gvswchbr", "--", "add-port", "gvswchbr", a.Host, "--", "add-port", "gvswchbr", b.Host)
	a.waitPing("10.97.0.2")

	// 300 pings 10 ms apart while c comes and goes, with an internal port.
	ctx, cancel := context.WithTimeout(context.Background(), 2*vswTimeout)
	defer cancel()
	ping := exec.CommandContext(ctx, "ip", "netns", "exec", a.Name, "ping", "-n", "-q", "-c", "300", "-i", "0.01", "-w", vswPingDeadline, "10.97.0.2")
	var out strings.Builder
	ping.Stdout, ping.Stderr = &out, &out
	if err := ping.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		e.mustVsctl("add-port", "gvswchbr", c.Host, "--", "add-port", "gvswchbr", "gvswchi", "--", "set", "interface", "gvswchi", "type=internal")
		c.waitPing("10.97.0.1")
		e.mustVsctl("del-port", c.Host, "--", "del-port", "gvswchi")
	}
	err := ping.Wait()
	if err != nil || !strings.Contains(out.String(), " 0% packet loss") {
		t.Errorf("pings between a and b while c churned: %v\n%s", err, out.String())
	}
	t.Logf("ping during churn: %s", vswTail(out.String(), 2))
}

// TestVswitchdVethRecreate: an interface deleted under the switch is
// reported down with an error and re-attached when it comes back.
func TestVswitchdVethRecreate(t *testing.T) {
	t.Parallel()
	e := vswNewEnv(t)
	a := vswAddNS(t, "vr-a", "10.98.0.1/24")
	b := vswAddNS(t, "vr-b", "10.98.0.2/24")
	e.mustVsctl("add-br", "gvswvrbr", "--", "add-port", "gvswvrbr", a.Host, "--", "add-port", "gvswvrbr", b.Host)
	a.waitPing("10.98.0.2")
	ofport := e.ofport(b.Host)

	if _, err := vswRun("ip", "link", "del", b.Host); err != nil {
		t.Fatal(err)
	}
	vswWait(t, vswTimeout, "the deleted interface to be reported", func() bool {
		out, _ := e.vsctl("--columns=error,link_state", "list", "interface", b.Host)
		return strings.Contains(out, "No such device") && strings.Contains(out, "link_state          : down")
	})
	if out, _ := e.appctl("version"); out == "" {
		t.Fatal("switch stopped answering")
	}

	b.addVeth()
	b.mustExec("ip", "addr", "add", "10.98.0.2/24", "dev", "eth0")
	a.mustExec("ip", "neigh", "flush", "all") // b's eth0 has a new MAC
	a.waitPing("10.98.0.2")
	vswWait(t, vswTimeout, "the error to clear", func() bool {
		out, _ := e.vsctl("get", "interface", b.Host, "error")
		return strings.TrimSpace(out) == "[]"
	})
	if got := e.ofport(b.Host); got != ofport {
		t.Errorf("re-attached with ofport %d, had %d", got, ofport)
	}
}
