package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// startEmbedded runs ovs-vswitchd --embedded-db in e.dir, the way "make
// run" does on a fresh machine: no ovsdb-tool create, no ovsdb-server, no
// "ovs-vsctl init".
func (e *vswEnv) startEmbedded() int {
	e.t.Helper()
	env := []string{"OVS_RUNDIR=" + e.dir, "OVS_DBDIR=" + e.dir, "OVS_LOGDIR=" + e.dir}
	if _, err := vswRunEnv(env, e.bin, "--embedded-db", "--pidfile", "--detach", "--no-chdir",
		"--log-file="+e.logPath(), "-vconsole:off"); err != nil {
		e.t.Fatal(err)
	}
	pid := vswReadPid(filepath.Join(e.dir, "ovs-vswitchd.pid"))
	if pid <= 0 {
		e.t.Fatal("ovs-vswitchd --detach returned without a pidfile")
	}
	e.t.Cleanup(func() { vswKill(e.t, pid) })
	return pid
}

func TestVswitchdEmbeddedDB(t *testing.T) {
	vswNeedRoot(t)
	dir, err := os.MkdirTemp("", "gvswemb")
	if err != nil {
		t.Fatal(err)
	}
	e := &vswEnv{t: t, dir: dir, bin: vswBinary(t)}
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(e.logPath()); err == nil {
				t.Logf("ovs-vswitchd.log:\n%s", vswTail(string(b), 60))
			}
		}
		os.RemoveAll(dir)
	})
	e.startEmbedded()

	a := vswAddNS(t, "ema", "10.79.0.1/24")
	b := vswAddNS(t, "emb", "10.79.0.2/24")
	e.mustVsctl("add-br", "gvswem0", "--", "add-port", "gvswem0", a.Host, "--", "add-port", "gvswem0", b.Host)
	a.waitPing("10.79.0.2")
	pa, pb := e.ofport(a.Host), e.ofport(b.Host)

	// Outside clients see the embedded database like any ovsdb-server's.
	out, err := vswRun("ovsdb-client", "dump", "unix:"+e.sock(), "Open_vSwitch", "Bridge", "name")
	if err != nil || !strings.Contains(out, "gvswem0") {
		t.Fatalf("ovsdb-client dump: %v\n%s", err, out)
	}

	// The database file is OVSDB's format, and survives a restart with the
	// same ofports and forwarding.
	e.stopSwitch(false)
	out, err = vswRun("ovsdb-tool", "query", filepath.Join(dir, "conf.db"),
		`["Open_vSwitch",{"op":"select","table":"Bridge","where":[],"columns":["name"]}]`)
	if err != nil || !strings.Contains(out, "gvswem0") {
		t.Fatalf("ovsdb-tool query: %v\n%s", err, out)
	}
	e.startEmbedded()
	a.waitPing("10.79.0.2")
	if e.ofport(a.Host) != pa || e.ofport(b.Host) != pb {
		t.Errorf("ofports changed across restart: %d,%d -> %d,%d", pa, pb, e.ofport(a.Host), e.ofport(b.Host))
	}
	e.mustVsctl("del-br", "gvswem0")
	e.stopSwitch(true)
}
