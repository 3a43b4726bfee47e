package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const opsOvsCtl = "/usr/share/openvswitch/scripts/ovs-ctl"

// TestOpsOvsCtl installs govs with "make install" into a scratch root and
// drives Debian's ovs-ctl, unchanged, through the OVS_* variables so that
// nothing under the machine's /etc or /var is touched: start (database
// created, both daemons under --monitor, system ids recorded), status, a
// transaction that waits for the switch, and stop.
func TestOpsOvsCtl(t *testing.T) {
	vswNeedRoot(t)
	ovsdbNeed(t, opsOvsCtl, ovsdbVsctl)
	root, err := os.MkdirTemp("", "gvsctl")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("make", "-C", "..", "install", "DESTDIR="+root, "PREFIX=/usr").CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	dirs := map[string]string{"OVS_RUNDIR": "run", "OVS_LOGDIR": "log", "OVS_DBDIR": "db", "OVS_SYSCONFDIR": "etc",
		"OVS_BINDIR": "usr/bin", "OVS_SBINDIR": "usr/sbin"}
	var env []string
	for k, d := range dirs {
		p := filepath.Join(root, d)
		os.MkdirAll(p, 0o755)
		env = append(env, k+"="+p)
	}
	os.MkdirAll(filepath.Join(root, "etc", "openvswitch"), 0o755) // for system-id.conf
	run := filepath.Join(root, "run")
	var pids []int // daemons and their monitors, to stop if the test fails
	t.Cleanup(func() {
		for _, p := range pids {
			vswKill(t, p)
		}
		if t.Failed() {
			for _, l := range []string{"ovsdb-server.log", "ovs-vswitchd.log"} {
				t.Logf("%s:\n%s", l, vswTail(readFileString(filepath.Join(root, "log", l)), 30))
			}
		}
		os.RemoveAll(root)
	})
	ctl := func(args ...string) ovsdbResult { return opsRun(env, opsOvsCtl, args...) }

	r := ctl("--system-id=random", "--no-record-hostname", "start")
	if r.code != 0 || !strings.Contains(r.stdout, "Starting ovsdb-server") || !strings.Contains(r.stdout, "Starting ovs-vswitchd") ||
		strings.Contains(r.stdout, "failed") {
		t.Fatalf("ovs-ctl start: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, prog := range []string{"ovsdb-server", "ovs-vswitchd"} {
		pid := vswReadPid(filepath.Join(run, prog+".pid"))
		if pid <= 0 {
			t.Fatalf("%s: no pidfile", prog)
		}
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if exe != filepath.Join(root, "usr/sbin", prog) {
			t.Errorf("%s runs %s, not the installed govs", prog, exe)
		}
		monitor := opsParent(pid)
		pids = append(pids, monitor, pid)
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", monitor)); strings.TrimSpace(string(comm)) != prog {
			t.Errorf("%s (pid %d): parent %d is %q, want its --monitor process", prog, pid, monitor, comm)
		}
	}
	if r := ctl("status"); r.code != 0 || !strings.Contains(r.stdout, "ovs-vswitchd is running with pid") {
		t.Errorf("ovs-ctl status: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	db := "--db=unix:" + filepath.Join(run, "db.sock")
	// Without --no-wait: returns only once ovs-vswitchd has caught up.
	if r := opsRun(nil, ovsdbVsctl, db, "--timeout=60", "set", "Open_vSwitch", ".", "external_ids:govs-ops=1"); r.code != 0 {
		t.Errorf("ovs-vsctl set: exit %d %s", r.code, r.stderr)
	}
	if r := opsRun(nil, ovsdbVsctl, db, "get", "Open_vSwitch", ".", "ovs_version"); strings.TrimSpace(r.stdout) != `"3.1.0"` {
		t.Errorf("ovs_version recorded by ovs-ctl: %q %s", r.stdout, r.stderr)
	}

	r = ctl("stop")
	if r.code != 0 || !strings.Contains(r.stdout, "Exiting ovs-vswitchd") || strings.Contains(r.stdout, "Killing") {
		t.Errorf("ovs-ctl stop: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, p := range pids {
		vswWaitGone(t, p)
	}
	if r := ctl("status"); r.code == 0 || !strings.Contains(r.stdout, "ovsdb-server is not running") {
		t.Errorf("ovs-ctl status after stop: exit %d\n%s", r.code, r.stdout)
	}
	if log := readFileString(filepath.Join(root, "log", "ovs-vswitchd.log")); !strings.Contains(log, "|bridge|INFO|ovs-vswitchd (Open vSwitch) 3.1.0\n") {
		t.Errorf("ovs-vswitchd.log lacks the start-up line")
	}
}

// opsParent returns pid's parent pid, or 0.
func opsParent(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	var state byte
	var ppid int
	fmt.Sscanf(s[strings.LastIndexByte(s, ')')+1:], " %c %d", &state, &ppid)
	return ppid
}
