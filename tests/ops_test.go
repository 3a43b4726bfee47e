package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpsMakeRunLayout starts ovs-vswitchd --embedded-db as "make run" does
// on a machine where Debian's OVS is installed: conf.db is a symlink to a
// file not yet created, the log goes to $OVS_LOGDIR/ovs-vswitchd.log, and
// the embedded database answers "ovs-appctl -t ovsdb-server".
func TestOpsMakeRunLayout(t *testing.T) {
	vswNeedRoot(t)
	bin := vswBinary(t)
	dir, err := os.MkdirTemp("", "gvsops")
	if err != nil {
		t.Fatal(err)
	}
	etc, lib, run, logdir := filepath.Join(dir, "etc"), filepath.Join(dir, "lib"), filepath.Join(dir, "run"), filepath.Join(dir, "log")
	for _, d := range []string{etc, lib, run, logdir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Debian's openvswitch-switch leaves exactly these two links.
	os.Symlink(filepath.Join(lib, "conf.db"), filepath.Join(etc, "conf.db"))
	os.Symlink(filepath.Join(lib, ".conf.db.~lock~"), filepath.Join(etc, ".conf.db.~lock~"))
	logFile := filepath.Join(logdir, "ovs-vswitchd.log")
	env := []string{"OVS_RUNDIR=" + run, "OVS_DBDIR=" + etc, "OVS_LOGDIR=" + logdir}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ovs-vswitchd.log:\n%s", vswTail(readFileString(logFile), 40))
		}
		os.RemoveAll(dir)
	})
	if _, err := vswRunEnv(env, bin, "--embedded-db", "--pidfile", "--detach", "--log-file", "-vconsole:off"); err != nil {
		t.Fatal(err)
	}
	pid := vswReadPid(filepath.Join(run, "ovs-vswitchd.pid"))
	if pid <= 0 {
		t.Fatal("no pidfile")
	}
	t.Cleanup(func() { vswKill(t, pid) })

	if fi, err := os.Lstat(filepath.Join(etc, "conf.db")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("conf.db symlink replaced: %v", err)
	}
	if _, err := os.Stat(filepath.Join(lib, "conf.db")); err != nil {
		t.Errorf("database not created at the symlink's target: %v", err)
	}
	vswWait(t, vswTimeout, "the start-up line in the log", func() bool {
		return strings.Contains(readFileString(logFile), "|bridge|INFO|ovs-vswitchd (Open vSwitch) 3.1.0\n")
	})

	appctl := func(target string, args ...string) (string, error) {
		return vswRunEnv([]string{"OVS_RUNDIR=" + run}, vswAppctl, append([]string{"--timeout=10", "-t", target}, args...)...)
	}
	for _, c := range []struct{ target, cmd, want string }{
		{"ovsdb-server", "version", "ovsdb-server (Open vSwitch) 3.1.0\n"},
		{"ovs-vswitchd", "version", "ovs-vswitchd (Open vSwitch) 3.1.0\n"},
		{"ovsdb-server", "ovsdb-server/list-remotes", "db:Open_vSwitch,Open_vSwitch,manager_options\npunix:" + filepath.Join(run, "db.sock") + "\n"},
	} {
		if out, err := appctl(c.target, c.cmd); err != nil || out != c.want {
			t.Errorf("ovs-appctl -t %s %s: %q %v, want %q", c.target, c.cmd, out, err, c.want)
		}
	}
	if out, err := appctl("ovsdb-server", "vlog/set", "raft:file:dbg"); err != nil || out != "" {
		t.Errorf("vlog/set raft:file:dbg: %q %v", out, err)
	}

	// logrotate: move the log away, vlog/reopen starts a new file.
	if err := os.Rename(logFile, logFile+".1"); err != nil {
		t.Fatal(err)
	}
	if _, err := appctl("ovs-vswitchd", "vlog/reopen"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(readFileString(logFile), "|vlog|INFO|opened log file "+logFile+"\n") {
		t.Errorf("vlog/reopen: new log file holds %q", readFileString(logFile))
	}

	// "exit" to the embedded ovsdb-server ends the daemon, pidfiles gone.
	if _, err := appctl("ovsdb-server", "exit"); err != nil {
		t.Fatal(err)
	}
	vswWaitGone(t, pid)
	for _, p := range []string{"ovs-vswitchd.pid", "ovsdb-server.pid"} {
		if _, err := os.Stat(filepath.Join(run, p)); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", p, err)
		}
	}
}

func readFileString(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// opsVlogModules returns the module names of an "ovs-appctl vlog/list".
func opsVlogModules(out string) map[string]bool {
	m := map[string]bool{}
	lines := strings.Split(out, "\n")
	if len(lines) > 2 {
		for _, l := range lines[2:] {
			if f := strings.Fields(l); len(f) > 0 {
				m[f[0]] = true
			}
		}
	}
	return m
}

// TestOpsVswitchdVlogModules: every vlog module Debian's ovs-vswitchd lists
// is one govs' ovs-vswitchd lists and accepts in vlog/set, so scripts that
// set levels for them (-vvconn:file:dbg, -vofproto_dpif) work.
func TestOpsVswitchdVlogModules(t *testing.T) {
	vswNeedRoot(t)
	db := ovsdbStart(t, ovsdbOpts{kind: "debian"})
	debCtl := filepath.Join(db.dir, "deb-vswitchd.ctl")
	debPidfile := filepath.Join(db.dir, "deb-vswitchd.pid")
	if r := opsRun([]string{"OVS_RUNDIR=" + db.dir, "OVS_LOGDIR=" + db.dir}, "/usr/sbin/ovs-vswitchd", "unix:"+db.sock,
		"--pidfile="+debPidfile, "--unixctl="+debCtl, "--detach", "--no-chdir", "--disable-system", "-vconsole:off",
		"--log-file="+filepath.Join(db.dir, "deb-vswitchd.log")); r.code != 0 {
		t.Fatalf("Debian's ovs-vswitchd: exit %d %s", r.code, r.stderr)
	}
	debPid := vswReadPid(debPidfile)
	t.Cleanup(func() { vswKill(t, debPid) })
	r := opsRun(nil, vswAppctl, "-t", debCtl, "vlog/list")
	deb := opsVlogModules(r.stdout)
	if len(deb) < 100 {
		t.Fatalf("Debian's ovs-vswitchd vlog/list has %d modules: %s", len(deb), r.stderr)
	}

	e := &vswEnv{t: t, dir: t.TempDir(), bin: vswBinary(t)}
	e.startEmbedded()
	gov := opsVlogModules(e.mustAppctl("vlog/list"))
	for m := range deb {
		if !gov[m] {
			t.Errorf("vlog module %s: Debian's ovs-vswitchd has it, govs' does not", m)
		}
	}
	if _, err := e.appctl("vlog/set", "vconn:file:dbg", "ofproto_dpif:console:warn", "raft:off"); err != nil {
		t.Error(err)
	}
	e.stopSwitch(false)
}
