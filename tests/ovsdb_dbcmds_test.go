package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const ovsdbNBSchema = "/usr/share/ovn/ovn-nb.ovsschema"

// TestOvsdbAddRemoveDB compares ovsdb-server/tlog-set, tlog-list, add-db,
// remove-db and list-dbs of Debian's server and govs', and what their clients see when a database
// goes: a set_db_change_aware client gets monitor_canceled, another is
// disconnected. After disable-monitor-cond, monitor_cond is an unknown
// method and ovn-nbctl still works (it falls back to monitor).
func TestOvsdbAddRemoveDB(t *testing.T) {
	ovsdbNeed(t, ovsdbNBSchema)
	servers := []*ovsdbProc{ovsdbStart(t, ovsdbOpts{kind: "debian"}), ovsdbStart(t, ovsdbOpts{kind: "govs"})}
	// Each server its own copies: a file is locked by the server using it.
	var dirs [2]string
	for i := range servers {
		dirs[i] = t.TempDir()
		for _, f := range []string{"nb.db", "nb2.db"} {
			if r := ovsdbRun(ovsdbTool, "create", filepath.Join(dirs[i], f), ovsdbNBSchema); r.code != 0 {
				t.Fatal(r.stderr)
			}
		}
		os.WriteFile(filepath.Join(dirs[i], "bad.db"), []byte("garbage\n"), 0o644)
	}
	step := func(args ...string) {
		t.Helper()
		var outs [2]string
		for i, p := range servers {
			a := append([]string(nil), args...)
			for j := range a {
				a[j] = strings.ReplaceAll(a[j], "FILES", dirs[i])
			}
			r := p.appctl(a...)
			out := strings.ReplaceAll(fmt.Sprintf("%s|%s|%d", r.stdout, r.stderr, r.code), p.ctl, "CTL")
			outs[i] = strings.ReplaceAll(out, dirs[i], "FILES")
		}
		if outs[0] != outs[1] {
			t.Errorf("ovs-appctl %s:\ndebian: %q\ngovs:   %q", strings.Join(args, " "), outs[0], outs[1])
		}
	}
	nb, nb2 := "FILES/nb.db", "FILES/nb2.db"
	step("ovsdb-server/tlog-list")
	for _, a := range [][]string{{"Nope:Bridge", "maybe"}, {"OpenBridge", "on"}, {"a:b:c", "on"}, {"Nope:Bridge", "on"},
		{"Open_vSwitch:Nope", "off"}, {"Open_vSwitch:Bridge", "ON"}, {"_Server:Database", "on"}} {
		step(append([]string{"ovsdb-server/tlog-set"}, a...)...)
	}
	step("ovsdb-server/tlog-list")
	for _, p := range servers {
		p.mustVsctl("init", "--", "add-br", "tl0")
		ovsdbWait(t, vswTimeout, p.kind+" transaction log", func() bool {
			return strings.Contains(p.readLog(), "|transaction|INFO|table:Bridge,op:inserted,")
		})
	}
	step("ovsdb-server/tlog-set", "Open_vSwitch:Bridge", "off")
	step("ovsdb-server/add-db", nb)
	step("ovsdb-server/add-db", nb)
	step("ovsdb-server/add-db", "FILES/nonexistent.db")
	step("ovsdb-server/list-dbs")
	// A bad file is refused by both (with different details).
	for i, p := range servers {
		bad := filepath.Join(dirs[i], "bad.db")
		if r := p.appctl("ovsdb-server/add-db", bad); r.code != 2 || !strings.HasPrefix(r.stderr, "ovsdb error: "+bad+": ") {
			t.Errorf("%s: add-db of a bad file: %d %q", p.kind, r.code, r.stderr)
		}
	}

	var aware, plain [2]*ovsdbRawConn
	for i, p := range servers {
		aware[i], plain[i] = ovsdbDialRaw(t, p.sock), ovsdbDialRaw(t, p.sock)
		aware[i].call("set_db_change_aware", []any{true}, 1)
		for _, c := range []*ovsdbRawConn{aware[i], plain[i]} {
			if r := c.call("monitor_cond", []any{"OVN_Northbound", "m", map[string]any{"Logical_Switch": []any{map[string]any{}}}}, 2); r["error"] != nil {
				t.Fatalf("%s: monitor_cond: %v", p.kind, r)
			}
		}
	}
	step("ovsdb-server/remove-db", "OVN_Northbound")
	step("ovsdb-server/remove-db", "OVN_Northbound")
	step("ovsdb-server/remove-db", "_Server")
	step("ovsdb-server/list-dbs")
	for i, p := range servers {
		m := aware[i].recv(vswTimeout)
		if m == nil || m["method"] != "monitor_canceled" || fmt.Sprint(m["params"]) != "[m]" {
			t.Errorf("%s: change-aware client got %v, want monitor_canceled [m]", p.kind, m)
		}
		if !plain[i].closed(vswTimeout) {
			t.Errorf("%s: a client not change-aware stays connected", p.kind)
		}
	}
	step("ovsdb-server/add-db", nb)
	step("ovsdb-server/disable-monitor-cond")
	for _, p := range servers {
		c := ovsdbDialRaw(t, p.sock)
		r := c.call("monitor_cond", []any{"OVN_Northbound", "m", map[string]any{"Logical_Switch": []any{map[string]any{}}}}, 1)
		if r["error"] != "unknown method" {
			t.Errorf("%s: monitor_cond after disable-monitor-cond: %v", p.kind, r)
		}
		out, err := exec.Command("ovn-nbctl", "--db=unix:"+p.sock, "--timeout=20", "ls-add", "sw0", "--", "ls-list").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "(sw0)") {
			t.Errorf("%s: ovn-nbctl without monitor_cond: %v %s", p.kind, err, out)
		}
	}
	// Last: Debian's server stops serving OVN_Northbound over JSON-RPC
	// after this failure (its list-dbs command still lists it).
	step("ovsdb-server/add-db", nb2)
}

// TestOvsdbRunCommand compares --run: the server exits when the command
// does, with status 0 after a success and 1 (saying why) after a failure.
func TestOvsdbRunCommand(t *testing.T) {
	for _, cmd := range []string{"ovs-vsctl --db=unix:$SOCK --no-wait init", "exit 3", "kill -9 $$"} {
		var outs [2]string
		for i, kind := range []string{"debian", "govs"} {
			dir := t.TempDir()
			db := filepath.Join(dir, "conf.db")
			if r := ovsdbRun(ovsdbTool, "create", db, ovsdbVSwitchSch); r.code != 0 {
				t.Fatal(r.stderr)
			}
			bin := ovsdbDebianServer
			if kind == "govs" {
				bin = ovsdbGovsServer(t)
			}
			sock := filepath.Join(dir, "db.sock")
			c := exec.Command(bin, db, "--remote=punix:"+sock, "--unixctl="+filepath.Join(dir, "ctl"), "--no-chdir", "--run="+cmd)
			c.Env = append(os.Environ(), "SOCK="+sock)
			done := make(chan struct{})
			var out []byte
			var err error
			go func() {
				out, err = c.CombinedOutput()
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(vswTimeout):
				c.Process.Kill()
				<-done
				t.Fatalf("%s: --run=%q: server did not exit", kind, cmd)
			}
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			// Only the last line: the servers log different versions.
			lines := strings.Split(strings.TrimSpace(ovsdbLogStampRe.ReplaceAllString(string(out), "")), "\n")
			outs[i] = fmt.Sprintf("%d %s", code, lines[len(lines)-1])
			if l := lines[len(lines)-1]; l == "" || strings.Contains(l, "ovsdb_server|INFO|") {
				outs[i] = fmt.Sprintf("%d", code)
			}
		}
		if outs[0] != outs[1] {
			t.Errorf("--run=%q:\ndebian: %q\ngovs:   %q", cmd, outs[0], outs[1])
		}
	}
}
