package tests

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

func ovsdbSortLines(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestOvsdbClientDifferential compares Debian's ovsdb-client against both
// servers after the same changes.
func TestOvsdbClientDifferential(t *testing.T) {
	servers := []*ovsdbProc{ovsdbStart(t, ovsdbOpts{kind: "debian"}), ovsdbStart(t, ovsdbOpts{kind: "govs"})}
	for _, p := range servers {
		p.mustVsctl("init")
		p.mustVsctl("add-br", "br0", "--", "add-port", "br0", "p1", "--", "set", "Port", "p1", "tag=3")
		p.mustVsctl("set", "Bridge", "br0", "external_ids:a=b")
	}
	tests := []struct {
		name   string
		args   []string
		sorted bool
		json   bool
	}{
		{name: "list-dbs", args: []string{"list-dbs"}},
		{name: "list-tables", args: []string{"list-tables", "Open_vSwitch"}, sorted: true},
		{name: "list-columns", args: []string{"list-columns", "Open_vSwitch", "Bridge"}, sorted: true},
		{name: "get-schema-version", args: []string{"get-schema-version", "Open_vSwitch"}},
		{name: "get-schema-cksum", args: []string{"get-schema-cksum", "Open_vSwitch"}},
		{name: "get-schema", args: []string{"get-schema", "Open_vSwitch"}, json: true},
		{name: "get-schema nope", args: []string{"get-schema", "nope"}},
		{name: "dump", args: []string{"dump", "Open_vSwitch", "Bridge", "Port"}, sorted: true},
		{name: "dump Interface", args: []string{"--format=csv", "dump", "Open_vSwitch", "Interface", "name", "type"}, sorted: true},
		{name: "transact select", args: []string{"transact", `["Open_vSwitch",{"op":"select","table":"Bridge","where":[],"columns":["name","external_ids"]}]`}},
		{name: "transact errors", args: []string{"transact", `["Open_vSwitch",{"op":"insert","table":"Bridge","row":{"name":"br0"}},{"op":"comment","comment":"x"}]`}},
		{name: "transact mutate", args: []string{"transact", `["Open_vSwitch",{"op":"mutate","table":"Bridge","where":[["name","==","br0"]],"mutations":[["external_ids","insert",["map",[["c","d"]]]]]},{"op":"select","table":"Bridge","where":[["name","==","br0"]],"columns":["external_ids"]}]`}},
		{name: "transact wait timeout", args: []string{"transact", `["Open_vSwitch",{"op":"wait","timeout":0,"table":"Bridge","where":[],"columns":["name"],"until":"==","rows":[]}]`}},
		{name: "transact unknown db", args: []string{"transact", `["Nope"]`}},
		{name: "transact _Server", args: []string{"transact", `["_Server",{"op":"delete","table":"Database","where":[]}]`}},
		{name: "query", args: []string{"query", `["Open_vSwitch",{"op":"select","table":"Port","where":[["name","==","p1"]],"columns":["name","tag"]}]`}},
		{name: "dump _Server", args: []string{"--format=csv", "dump", "_Server", "Database", "name", "model", "connected", "leader", "cid", "sid", "index"}, sorted: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var res [2]ovsdbResult
			for i, p := range servers {
				args := append([]string{}, tc.args[:1]...)
				if tc.args[0] == "--format=csv" {
					args = append(args, tc.args[1], "unix:"+p.sock)
					args = append(args, tc.args[2:]...)
				} else {
					args = append(args, "unix:"+p.sock)
					args = append(args, tc.args[1:]...)
				}
				r := p.client(args...)
				r.stdout = ovsdbNormalize(r.stdout, false)
				r.stderr = ovsdbNormalize(r.stderr, false)
				if tc.sorted {
					r.stdout = ovsdbSortLines(r.stdout)
				}
				res[i] = r
			}
			if tc.json {
				var a, b any
				if json.Unmarshal([]byte(res[0].stdout), &a) != nil || json.Unmarshal([]byte(res[1].stdout), &b) != nil {
					t.Fatalf("not JSON:\n%s\n%s", res[0].stdout, res[1].stdout)
				}
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("schemas differ:\ndebian: %s\ngovs:   %s", res[0].stdout, res[1].stdout)
				}
				return
			}
			if res[0] != res[1] {
				t.Fatalf("differs\ndebian: exit %d\n%s\n%s\ngovs: exit %d\n%s\n%s",
					res[0].code, res[0].stdout, res[0].stderr, res[1].code, res[1].stdout, res[1].stderr)
			}
		})
	}
}

// ovsdbMonitor runs "ovsdb-client --format=csv ARGS" in the background and
// returns its output lines as they come.
func ovsdbMonitor(t *testing.T, args ...string) <-chan string {
	t.Helper()
	cmd := exec.Command(ovsdbClient, append([]string{"--format=csv"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "" {
				continue
			}
			lines <- ovsdbNormalize(sc.Text(), false)
		}
		close(lines)
	}()
	return lines
}

func ovsdbExpectLines(t *testing.T, who string, lines <-chan string, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("%s: monitor exited, want %q", who, w)
			}
			if l != w {
				t.Fatalf("%s: got %q, want %q", who, l, w)
			}
		case <-time.After(vswTimeout):
			t.Fatalf("%s: timed out waiting for %q", who, w)
		}
	}
}

// TestOvsdbClientMonitor has one client monitor while another changes the
// database, with each monitor protocol version, on both servers.
func TestOvsdbClientMonitor(t *testing.T) {
	for _, kind := range []string{"debian", "govs"} {
		t.Run(kind, func(t *testing.T) {
			p := ovsdbStart(t, ovsdbOpts{kind: kind})
			p.mustVsctl("init")
			p.mustVsctl("add-br", "br0")
			db := "unix:" + p.sock
			m1 := ovsdbMonitor(t, "monitor", db, "Open_vSwitch", "Bridge", "name,stp_enable")
			// br0 is in m2's condition only so that its initial line shows
			// the monitor is in place before br1 is added.
			m2 := ovsdbMonitor(t, "monitor-cond", db, "Open_vSwitch", `[["name","==","br1"],["name","==","br0"]]`, "Bridge", "name,stp_enable")
			m3 := ovsdbMonitor(t, "monitor-cond-since", db, "Open_vSwitch", "[true]", "Bridge", "name")
			ovsdbExpectLines(t, "monitor", m1, "row,action,name,stp_enable", "<uuid>,initial,br0,false")
			ovsdbExpectLines(t, "monitor-cond-since", m3, "found: false, last_id: <uuid>", "row,action,name", "<uuid>,initial,br0")
			ovsdbExpectLines(t, "monitor-cond", m2, "row,action,name,stp_enable", "<uuid>,initial,br0,")
			p.mustVsctl("add-br", "br1")
			ovsdbExpectLines(t, "monitor", m1, "row,action,name,stp_enable", "<uuid>,insert,br1,false")
			ovsdbExpectLines(t, "monitor-cond", m2, "row,action,name,stp_enable", "<uuid>,insert,br1,")
			ovsdbExpectLines(t, "monitor-cond-since", m3, "last_id: <uuid>", "row,action,name", "<uuid>,insert,br1")
			p.mustVsctl("set", "Bridge", "br1", "stp_enable=true")
			ovsdbExpectLines(t, "monitor", m1, "row,action,name,stp_enable", "<uuid>,old,,false", ",new,br1,true")
			ovsdbExpectLines(t, "monitor-cond", m2, "row,action,name,stp_enable", "<uuid>,modify,,true")
			p.mustVsctl("del-br", "br1")
			ovsdbExpectLines(t, "monitor", m1, "row,action,name,stp_enable", "<uuid>,delete,br1,true")
			ovsdbExpectLines(t, "monitor-cond", m2, "row,action,name,stp_enable", "<uuid>,delete,,")
			ovsdbExpectLines(t, "monitor-cond-since", m3, "last_id: <uuid>", "row,action,name", "<uuid>,delete,")
		})
	}
}

// ovsdbIDLPrelude starts a python3-openvswitch IDL script: an Idl on
// argv[1] (remote) for every table of argv[2] (schema), and run_until,
// which runs it until a condition holds or about 30 s have passed.
const ovsdbIDLPrelude = `
import json, subprocess, sys, ovs.db.idl, ovs.poller
remote, schema = sys.argv[1], sys.argv[2]
helper = ovs.db.idl.SchemaHelper(schema)
helper.register_all()
idl = ovs.db.idl.Idl(remote, helper)
def run_until(cond):
    for _ in range(3000):
        idl.run()
        if cond():
            return
        p = ovs.poller.Poller(); idl.wait(p); p.timer_wait(10); p.block()
    sys.exit("timeout")
`

// TestOvsdbPythonIDL reads and writes through python3-openvswitch's IDL.
func TestOvsdbPythonIDL(t *testing.T) {
	ovsdbNeed(t, ovsdbPython)
	script := ovsdbIDLPrelude + `
run_until(lambda: idl.has_ever_connected() and len(idl.tables["Open_vSwitch"].rows) == 1)
print("bridges", sorted(b.name for b in idl.tables["Bridge"].rows.values()))
txn = ovs.db.idl.Transaction(idl)
ovsrow = next(iter(idl.tables["Open_vSwitch"].rows.values()))
br = txn.insert(idl.tables["Bridge"])
br.name = "pybr"
br.external_ids = {"from": "python"}
ovsrow.addvalue("bridges", br.uuid)
ovsrow.verify("bridges")
status = txn.commit_block()
print("commit", ovs.db.idl.Transaction.status_to_string(status))
run_until(lambda: any(b.name == "pybr" for b in idl.tables["Bridge"].rows.values()))
print("bridges", sorted(b.name for b in idl.tables["Bridge"].rows.values()))
idl.close()
`
	for _, kind := range []string{"debian", "govs"} {
		t.Run(kind, func(t *testing.T) {
			p := ovsdbStart(t, ovsdbOpts{kind: kind})
			p.mustVsctl("init")
			p.mustVsctl("add-br", "br0")
			f := filepath.Join(p.dir, "idl.py")
			if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
				t.Fatal(err)
			}
			r := ovsdbRun(ovsdbPython, f, "unix:"+p.sock, ovsdbVSwitchSch)
			want := "bridges ['br0']\ncommit success\nbridges ['br0', 'pybr']\n"
			if r.code != 0 || r.stdout != want {
				t.Fatalf("python IDL: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if got := p.mustVsctl("get", "Bridge", "pybr", "external_ids"); got != "{from=python}\n" {
				t.Fatalf("external_ids written by python: %q", got)
			}
		})
	}
}

// TestOvsdbMonitorCondSinceFound checks that govs answers found=true with
// only the missed changes when the client's last transaction is in its
// history (Debian's standalone ovsdb-server always answers found=false).
func TestOvsdbMonitorCondSinceFound(t *testing.T) {
	p := ovsdbStart(t, ovsdbOpts{})
	p.mustVsctl("init")
	p.mustVsctl("add-br", "br0")
	c := ovsdbDialRaw(t, p.sock)
	mreq := map[string]any{"Bridge": []any{map[string]any{"columns": []string{"name"}}}}
	r := c.call("monitor_cond_since", []any{"Open_vSwitch", "m", mreq, "00000000-0000-0000-0000-000000000000"}, 1)
	res := r["result"].([]any)
	if res[0] != false || len(res[2].(map[string]any)["Bridge"].(map[string]any)) != 1 {
		t.Fatalf("first monitor_cond_since: %v", r)
	}
	last := res[1].(string)
	p.mustVsctl("add-br", "br1")
	p.mustVsctl("del-br", "br0")
	c2 := ovsdbDialRaw(t, p.sock)
	r = c2.call("monitor_cond_since", []any{"Open_vSwitch", "m", mreq, last}, 1)
	res = r["result"].([]any)
	if res[0] != true || res[1] == last {
		t.Fatalf("second monitor_cond_since: %v", r)
	}
	rows := res[2].(map[string]any)["Bridge"].(map[string]any)
	var kinds []string
	for _, v := range rows {
		for k := range v.(map[string]any) {
			kinds = append(kinds, k)
		}
	}
	sort.Strings(kinds)
	if strings.Join(kinds, ",") != "delete,insert" {
		t.Fatalf("missed changes: %v", rows)
	}
	// The first client got the same changes as update3 notifications.
	seen := map[string]bool{}
	for len(seen) < 2 {
		m := c.recv(vswTimeout)
		if m == nil {
			t.Fatalf("no update3; saw %v", seen)
		}
		if m["method"] != "update3" {
			continue
		}
		for _, v := range m["params"].([]any)[2].(map[string]any)["Bridge"].(map[string]any) {
			for k := range v.(map[string]any) {
				seen[k] = true
			}
		}
	}
}
