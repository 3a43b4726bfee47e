package tests

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestOpsTcpdump runs Debian's ovs-tcpdump, the operator's way to watch one
// port of a switch, against govs: it makes a tap (this kernel has no dummy
// driver), adds it to the port's bridge as mi<port>, points a Mirror at it
// that selects the port's traffic both ways, runs tcpdump on the tap and,
// when tcpdump ends, removes the mirror, the port and the tap again. The
// pings between two namespaces must show in tcpdump's output, both ways,
// and nothing ovs-tcpdump made may be left behind.
func TestOpsTcpdump(t *testing.T) {
	for _, f := range []string{"/usr/bin/ovs-tcpdump", "/usr/bin/tcpdump"} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s: %v (packages openvswitch-switch, tcpdump; .ci/run installs them)", f, err)
		}
	}
	e := vswNewEnv(t)
	p := vswUniq()
	br := p + "br"
	a := vswAddPrefixedNS(t, p, "a", "10.251.93.1/24")
	b := vswAddPrefixedNS(t, p, "b", "10.251.93.2/24")
	mi := "mi" + a.Host
	vswClaim(t, br, mi)
	t.Cleanup(func() { vswRun("ip", "link", "del", mi) })
	e.mustVsctl("add-br", br, "--", "set", "bridge", br, "datapath_type=netdev",
		"--", "add-port", br, a.Host, "--", "add-port", br, b.Host)
	a.waitPing("10.251.93.2")

	// -c 4: tcpdump (and with it ovs-tcpdump) ends after two echo
	// requests and their replies. -l: Debian's ovs-tcpdump stops reading
	// tcpdump's output as soon as tcpdump has exited (it polls the child
	// before each readline), so lines tcpdump buffered for the pipe and
	// flushed at exit were lost (the reply, in 1 CI run of 3); line
	// buffered, each line is read while tcpdump waits for the next packet.
	cmd := exec.Command("/usr/bin/ovs-tcpdump", "--db-sock", "unix:"+e.sock(), "-i", a.Host, "-n", "-l", "-c", "4", "icmp")
	cmd.Env = append(os.Environ(), "OVS_RUNDIR="+e.dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var mu sync.Mutex
	var out, errOut strings.Builder
	listening := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			mu.Lock()
			out.WriteString(sc.Text() + "\n")
			mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			errOut.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.HasPrefix(sc.Text(), "listening on "+mi) {
				once.Do(func() { close(listening) })
			}
		}
	}()
	go func() { wg.Wait(); done <- cmd.Wait() }()
	finished := false
	t.Cleanup(func() {
		if !finished {
			// SIGTERM lets ovs-tcpdump's exit hook tear its mirror down.
			syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
			}
		}
	})
	report := func() string {
		mu.Lock()
		defer mu.Unlock()
		return "stdout:\n" + out.String() + "stderr:\n" + errOut.String()
	}
	select {
	case <-listening:
	case err := <-done:
		finished = true
		t.Fatalf("ovs-tcpdump ended before tcpdump listened: %v\n%s", err, report())
	case <-time.After(30 * time.Second):
		t.Fatalf("tcpdump did not start listening on %s within 30 s\n%s", mi, report())
	}
	if got := e.mustVsctl("--bare", "--columns=name,output_port", "list", "mirror"); !strings.Contains(got, "m_"+a.Host) {
		t.Fatalf("no mirror m_%s: %q", a.Host, got)
	}
	if got := e.mustVsctl("get", "interface", mi, "error"); got != "[]" {
		t.Fatalf("interface %s: error %s", mi, got)
	}

	// Ping until tcpdump has seen its four packets: the mirror may take a
	// moment to reach the datapath after its row appears.
	deadline := time.Now().Add(30 * time.Second)
	for finished = false; !finished; {
		a.exec("ping", "-c", "1", "-W", "1", "10.251.93.2")
		select {
		case err := <-done:
			finished = true
			if err != nil {
				t.Fatalf("ovs-tcpdump: %v\n%s", err, report())
			}
		default:
			if time.Now().After(deadline) {
				t.Fatalf("tcpdump did not see 4 ICMP packets within 30 s\n%s", report())
			}
		}
	}
	got := report()
	for _, want := range []string{"10.251.93.1 > 10.251.93.2: ICMP echo request", "10.251.93.2 > 10.251.93.1: ICMP echo reply"} {
		if !strings.Contains(got, want) {
			t.Errorf("tcpdump's output lacks %q\n%s", want, got)
		}
	}
	if !strings.Contains(got, "4 packets captured") {
		t.Errorf("tcpdump did not report its 4 packets\n%s", got)
	}

	// ovs-tcpdump's exit hook removed what it made.
	if got := e.mustVsctl("--bare", "--columns=_uuid", "list", "mirror"); got != "" {
		t.Errorf("mirror left behind: %q", got)
	}
	if got := e.mustVsctl("list-ports", br); strings.Contains(got, mi) {
		t.Errorf("port %s left behind: %q", mi, got)
	}
	if _, err := vswRun("ip", "link", "show", mi); err == nil {
		t.Errorf("tap %s left behind", mi)
	}
	a.waitPing("10.251.93.2")
}
