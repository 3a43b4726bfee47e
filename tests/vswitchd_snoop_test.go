package tests

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSnoop runs Debian's `ovs-ofctl snoop BRIDGE` against govs, as OVS's
// users watch what a controller and the switch say to each other: without
// a controller the snoop socket turns the client away as OVS's does (the
// same text and exit status); with Debian's ovs-testcontroller connected,
// the packet-ins a ping causes and the controller's answers to them show in
// the snoop's output.
func TestSnoop(t *testing.T) {
	if _, err := os.Stat(vswTestcontroller); err != nil {
		t.Fatalf("%s is missing: install openvswitch-testcontroller", vswTestcontroller)
	}
	e := vswNewEnv(t)
	p := vswUniq()
	br := p + "br"
	vswClaim(t, br)
	a := vswAddPrefixedNS(t, p, "a", "10.251.94.1/24")
	b := vswAddPrefixedNS(t, p, "b", "10.251.94.2/24")
	e.mustVsctl("add-br", br, "--", "set", "bridge", br, "datapath_type=netdev",
		"--", "add-port", br, a.Host, "--", "add-port", br, b.Host)
	if fi, err := os.Stat(e.dir + "/" + br + ".snoop"); err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o750 {
		t.Fatalf("%s.snoop: %v %v", br, fi, err)
	}
	env := append(os.Environ(), "OVS_RUNDIR="+e.dir)

	// No controller: as Debian's ovs-vswitchd 3.1 answers (checked by
	// hand, 2026-12-03).
	cmd := exec.Command(vswOfctl, "snoop", br)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if want := "ovs-ofctl: " + br + ": failed to connect to socket (Connection reset by peer)\n"; err == nil || string(out) != want {
		t.Errorf("snoop without a controller: %v %q, want exit 1 and %q", err, out, want)
	} else if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("snoop without a controller: %v, want exit status 1", err)
	}
	vswWait(t, vswTimeout, "the log to say there is nothing to snoop", func() bool {
		log, _ := os.ReadFile(e.logPath())
		return strings.Contains(string(log), "|connmgr|INFO|no controller connection to snoop")
	})

	port := ovsdbFreePort(t)
	target := fmt.Sprintf("tcp:127.0.0.1:%d", port)
	startTestcontroller(t, e.dir, port)
	e.mustVsctl("set-controller", br, target)
	vswWait(t, vswTimeout, "Controller.is_connected", func() bool {
		connected, _, _ := ctlColumns(e.mustVsctl, target)
		return connected
	})

	// ovs-ofctl prints what it snoops on stderr.
	snoop := exec.Command(vswOfctl, "snoop", br)
	snoop.Env = env
	var sout lockedBuffer
	snoop.Stdout, snoop.Stderr = &sout, &sout
	if err := snoop.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- snoop.Wait() }()
	t.Cleanup(func() {
		syscall.Kill(snoop.Process.Pid, syscall.SIGKILL)
		<-done
	})
	vswWait(t, vswTimeout, "the switch to take the snoop client", func() bool {
		log, _ := os.ReadFile(e.logPath())
		return strings.Contains(string(log), "|rconn|INFO|new monitor connection from unix#")
	})

	amac := strings.TrimSpace(a.mustExec("cat", "/sys/class/net/eth0/address"))
	// The learning switch hears of each new flow through a packet-in and
	// answers with a packet-out (and flow mods): all of it shows.
	deadline := time.Now().Add(vswTimeout)
	for {
		a.exec("ping", "-q", "-n", "-c", "1", "-W", "1", "10.251.94.2")
		got := sout.String()
		if strings.Contains(got, "OFPT_PACKET_IN") && strings.Contains(got, "OFPT_FLOW_MOD") && strings.Contains(got, "OFPT_PACKET_OUT") &&
			strings.Contains(got, "icmp,vlan_tci=0x0000,dl_src="+amac) {
			break
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("ovs-ofctl snoop ended: %v\n%s", err, got)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no packet-in, flow mod and packet-out of a ping in the snoop's output:\n%s", vswTail(got, 40))
		}
	}
	a.waitPing("10.251.94.2")

	// The controller goes away: the snoop client is disconnected.
	e.mustVsctl("del-controller", br)
	select {
	case <-done:
		done <- nil
	case <-time.After(vswTimeout):
		t.Fatalf("ovs-ofctl snoop still runs after del-controller")
	}
}
