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
	"time"
)

// An os-ken (OpenStack's OpenFlow framework, Debian's python3-os-ken)
// application drives a govs bridge over OpenFlow 1.3.

const oskenManager = "/usr/bin/osken-manager"

// startOsken runs osken-manager with the app in testdata/osken/app,
// listening on 127.0.0.1:port, and stops it (by the PID started here)
// when the test ends. It returns the manager's log file.
func startOsken(t *testing.T, dir, app string, port int) string {
	t.Helper()
	if _, err := os.Stat(oskenManager); err != nil {
		t.Fatalf("%s is missing: install python3-os-ken", oskenManager)
	}
	appPath, err := filepath.Abs(filepath.Join("testdata", "osken", app))
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "osken.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(oskenManager, "--ofp-listen-host", "127.0.0.1",
		"--ofp-tcp-listen-port", fmt.Sprint(port), appPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	vswWait(t, vswTimeout, "osken-manager to listen", func() bool {
		select {
		case <-done:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("osken-manager exited:\n%s", b)
		default:
		}
		out, _ := vswRun("ss", "-Hltn", fmt.Sprintf("sport = :%d", port))
		return strings.Contains(out, fmt.Sprintf(":%d", port))
	})
	return logPath
}

// TestControllerOsken: a small OpenFlow 1.3 learning switch written on
// os-ken (testdata/osken/simple_switch_13.py) drives a fail_mode=secure
// bridge: the Controller row shows the connection as OVS writes it, two
// namespaces ping and run iperf3 through the flows it installs, and
// ovs-ofctl shows those flows.
func TestControllerOsken(t *testing.T) {
	e := vswNewEnv(t)
	a := vswAddPrefixedNS(t, "gook", "a", "10.78.0.1/24")
	b := vswAddPrefixedNS(t, "gook", "b", "10.78.0.2/24")
	const macA, macB = "02:00:00:78:00:01", "02:00:00:78:00:02"
	a.mustExec("ip", "link", "set", "eth0", "address", macA)
	b.mustExec("ip", "link", "set", "eth0", "address", macB)
	port := ovsdbFreePort(t)
	logPath := startOsken(t, e.dir, "simple_switch_13.py", port)
	target := fmt.Sprintf("tcp:127.0.0.1:%d", port)
	e.mustVsctl("add-br", "gook0", "--", "set", "bridge", "gook0", "fail_mode=secure",
		"--", "add-port", "gook0", a.Host, "--", "set", "interface", a.Host, "ofport_request=1",
		"--", "add-port", "gook0", b.Host, "--", "set", "interface", b.Host, "ofport_request=2",
		"--", "set-controller", "gook0", target)
	var status map[string]string
	vswWait(t, vswTimeout, "Controller.is_connected", func() bool {
		connected, role, st := ctlColumns(e.mustVsctl, target)
		status = st
		return connected && role == "other" && (st["state"] == "ACTIVE" || st["state"] == "IDLE")
	})
	if _, ok := status["sec_since_connect"]; !ok {
		t.Errorf("status %v has no sec_since_connect", status)
	}
	t.Logf("Controller.status: %v", status)

	a.waitPing("10.78.0.2")
	b.waitPing("10.78.0.1")
	t.Logf("iperf3 a->b through the app's flows: %s", vswIperfSummary(a.iperf(b, "10.78.0.2", "-t", "2")))

	out, err := vswRunEnv([]string{"OVS_RUNDIR=" + e.dir}, vswOfctl, "-O", "OpenFlow13", "dump-flows", "gook0")
	if err != nil {
		t.Fatalf("dump-flows: %v\n%s", err, out)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m) priority=0 actions=CONTROLLER:65535$`),
		regexp.MustCompile(`(?m) priority=1,in_port=1,dl_src=` + macA + `,dl_dst=` + macB + ` actions=output:2$`),
		regexp.MustCompile(`(?m) priority=1,in_port=2,dl_src=` + macB + `,dl_dst=` + macA + ` actions=output:1$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("dump-flows -O OpenFlow13 lacks %s:\n%s", want, out)
		}
	}
	t.Logf("dump-flows -O OpenFlow13:\n%s", out)
	log, _ := os.ReadFile(logPath)
	if !strings.Contains(string(log), "learned "+macA+" -> "+macB) || strings.Contains(string(log), "Traceback") {
		t.Errorf("osken-manager's log:\n%s", log)
	}
}
