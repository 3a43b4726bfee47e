package storage

// Interoperability with Open vSwitch's own tools (Debian's openvswitch-common
// and openvswitch-switch packages, OVS 3.1).

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const vswitchSchema = "/usr/share/openvswitch/vswitch.ovsschema"

// need returns the paths of the named OVS programs, skipping the test if one
// is missing.
func need(t *testing.T, progs ...string) []string {
	t.Helper()
	var paths []string
	for _, p := range progs {
		path, err := exec.LookPath(p)
		if err != nil {
			t.Skipf("%s not installed (Debian package openvswitch-switch); skipping OVS interop test", p)
		}
		paths = append(paths, path)
	}
	if _, err := os.Stat(vswitchSchema); err != nil {
		t.Skipf("%s missing; skipping OVS interop test", vswitchSchema)
	}
	return paths
}

func run(t *testing.T, prog string, args ...string) string {
	t.Helper()
	out, err := exec.Command(prog, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", prog, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func readSchema(t *testing.T) json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(vswitchSchema)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

const ovsRow = "5c4b1c1a-8e8e-4a8e-9b7c-0123456789ab"

// makeVswitchDB writes, with this package, an Open_vSwitch database holding
// one Open_vSwitch row.
func makeVswitchDB(t *testing.T) (string, *Log) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "conf.db")
	l, err := Create(path, readSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	ins := Record{Tables: map[string]map[string]json.RawMessage{"Open_vSwitch": {ovsRow: json.RawMessage(
		`{"next_cfg":7,"ovs_version":"govs <test> & co","external_ids":["map",[["hostname","h1"],["system-id","s1"]]]}`)}},
		Comment: "govs: insert", IsDiff: true}
	if err := l.Commit(ins, true); err != nil {
		t.Fatal(err)
	}
	return path, l
}

func selectOVS(t *testing.T, tool, path string) map[string]any {
	t.Helper()
	out := run(t, tool, "query", path,
		`["Open_vSwitch",{"op":"select","table":"Open_vSwitch","where":[],"columns":["_uuid","next_cfg","ovs_version","external_ids"]}]`)
	var res []struct{ Rows []map[string]any }
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 1 || len(res[0].Rows) != 1 {
		t.Fatalf("query output %s (%v)", out, err)
	}
	return res[0].Rows[0]
}

func TestOVSDBToolReadsOurFile(t *testing.T) {
	tool := need(t, "ovsdb-tool")[0]
	path, l := makeVswitchDB(t)
	l.Close()

	out := run(t, tool, "show-log", "-m", path)
	if !strings.Contains(out, `record 1:`) || !strings.Contains(out, `"govs: insert"`) {
		t.Errorf("show-log:\n%s", out)
	}
	row := selectOVS(t, tool, path)
	want := map[string]any{
		"_uuid":        []any{"uuid", ovsRow},
		"next_cfg":     float64(7),
		"ovs_version":  "govs <test> & co",
		"external_ids": []any{"map", []any{[]any{"hostname", "h1"}, []any{"system-id", "s1"}}},
	}
	if !reflect.DeepEqual(row, want) {
		t.Errorf("ovsdb-tool query: %v\nwant %v", row, want)
	}
	if v := strings.TrimSpace(run(t, tool, "db-version", path)); v == "" {
		t.Error("no db-version")
	}
}

func TestOpenOVSDBToolFile(t *testing.T) {
	tool := need(t, "ovsdb-tool")[0]
	path := filepath.Join(t.TempDir(), "conf.db")
	run(t, tool, "create", path, vswitchSchema)
	out := run(t, tool, "transact", path,
		`["Open_vSwitch",{"op":"insert","table":"Open_vSwitch","row":{"next_cfg":1}},
		 {"op":"insert","table":"QoS","row":{"type":"linux-htb"}}]`)
	var res []struct{ UUID []string }
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 2 {
		t.Fatalf("transact output %s", out)
	}
	ovs, qos := res[0].UUID[1], res[1].UUID[1]
	run(t, tool, "transact", path,
		`["Open_vSwitch",{"op":"update","table":"Open_vSwitch","where":[],"row":{"next_cfg":2,"external_ids":["map",[["a","1"],["b","2"]]]}},
		 {"op":"comment","comment":"update one"}]`)
	run(t, tool, "transact", path,
		`["Open_vSwitch",{"op":"update","table":"Open_vSwitch","where":[],"row":{"external_ids":["map",[["a","9"]]]}}]`)
	run(t, tool, "transact", path, `["Open_vSwitch",{"op":"delete","table":"QoS","where":[]}]`)

	var recs []Record
	l, schema, err := Open(path, t.Logf, collect(&recs))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var s struct{ Name string }
	if json.Unmarshal(schema, &s); s.Name != "Open_vSwitch" {
		t.Errorf("schema name %q", s.Name)
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	want := []Record{
		{Tables: map[string]map[string]json.RawMessage{
			"Open_vSwitch": {ovs: raw(`{"next_cfg":1}`)},
			"QoS":          {qos: raw(`{"type":"linux-htb"}`)},
		}},
		{Tables: map[string]map[string]json.RawMessage{
			"Open_vSwitch": {ovs: raw(`{"external_ids":["map",[["a","1"],["b","2"]]],"next_cfg":2}`)},
		}, Comment: "update one"},
		// A map diff: "a" gets a new value, "b" (with its old value) is removed.
		{Tables: map[string]map[string]json.RawMessage{
			"Open_vSwitch": {ovs: raw(`{"external_ids":["map",[["a","9"],["b","2"]]]}`)},
		}},
		{Tables: map[string]map[string]json.RawMessage{"QoS": {qos: raw(`null`)}}},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(want), recs)
	}
	for i, r := range recs {
		if r.Date < time.Now().Add(-time.Hour).UnixMilli() || !r.IsDiff {
			t.Errorf("record %d: _date %d, _is_diff %v (OVS 3.1 writes _is_diff:true)", i, r.Date, r.IsDiff)
		}
		// Compare semantically: OVS orders object members by hash.
		r.Date, r.IsDiff = 0, false
		if !sameJSON(t, r, want[i]) {
			t.Errorf("record %d:\ngot  %+v\nwant %+v", i, r, want[i])
		}
	}
}

func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	norm := func(v any) any {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var out any
		json.Unmarshal(data, &out)
		return out
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

func TestOVSDBToolReadsReplacedFile(t *testing.T) {
	tool := need(t, "ovsdb-tool")[0]
	path, l := makeVswitchDB(t)
	snap := Record{Tables: map[string]map[string]json.RawMessage{"Open_vSwitch": {ovsRow: json.RawMessage(
		`{"next_cfg":8,"ovs_version":"v2","external_ids":["map",[["hostname","h2"]]]}`)}}}
	if err := l.Replace(nil, snap); err != nil {
		t.Fatal(err)
	}
	l.Close()
	out := run(t, tool, "show-log", path)
	if !strings.Contains(out, "record 1:") || strings.Contains(out, "record 2:") {
		t.Errorf("show-log after Replace:\n%s", out)
	}
	row := selectOVS(t, tool, path)
	if row["next_cfg"] != float64(8) || row["ovs_version"] != "v2" {
		t.Errorf("ovsdb-tool query after Replace: %v", row)
	}
	// ovsdb-tool can compact it too, and we can read that.
	run(t, tool, "compact", path)
	var recs []Record
	l2, _, err := Open(path, t.Logf, collect(&recs))
	if err != nil {
		t.Fatal(err)
	}
	l2.Close()
	if len(recs) != 1 || !strings.Contains(recs[0].Comment, "compacted by ovsdb-tool") {
		t.Errorf("after ovsdb-tool compact: %+v", recs)
	}
}

// TestOVSDBToolReadsRepairedFile checks that after we truncate a torn tail and
// append, OVS sees a clean file.
func TestOVSDBToolReadsRepairedFile(t *testing.T) {
	tool := need(t, "ovsdb-tool")[0]
	path, l := makeVswitchDB(t)
	l.Close()
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("OVSDB JSON 500 0123")
	f.Close()
	if _, err := exec.Command(tool, "show-log", path).CombinedOutput(); err == nil {
		t.Fatal("ovsdb-tool accepted a torn file")
	}
	l, _, _ = openAll(t, path)
	upd := Record{Tables: map[string]map[string]json.RawMessage{"Open_vSwitch": {ovsRow: json.RawMessage(`{"next_cfg":9}`)}}, IsDiff: true}
	if err := l.Commit(upd, true); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if row := selectOVS(t, tool, path); row["next_cfg"] != float64(9) {
		t.Errorf("ovsdb-tool query: %v", row)
	}
}

// running reports whether process pid exists and is not a zombie (the
// detached ovsdb-server's parent is init, which may be slow to reap it).
func running(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(data), ") ")
	return !strings.HasPrefix(after, "Z")
}

// TestLockAgainstOVS runs Debian's ovsdb-server on a file we wrote: our Open
// must fail while it runs, naming its pid; it must be able to use our file;
// and OVS's ovsdb-tool must fail to lock a file we hold.
func TestLockAgainstOVS(t *testing.T) {
	progs := need(t, "ovsdb-tool", "ovsdb-server", "ovs-appctl", "ovs-vsctl")
	tool, server, appctl, vsctl := progs[0], progs[1], progs[2], progs[3]
	path, l := makeVswitchDB(t)

	// OVS cannot lock a file we hold.
	out, err := exec.Command(tool, "transact", path, `["Open_vSwitch"]`).CombinedOutput()
	if err == nil || !strings.Contains(string(out), fmt.Sprintf("locked by pid %d", os.Getpid())) {
		t.Errorf("ovsdb-tool transact on our locked file: %v\n%s", err, out)
	}
	t.Logf("ovsdb-tool: %s", out)
	l.Close()

	dir := filepath.Dir(path)
	sock, ctl, pidfile := "unix:"+dir+"/db.sock", dir+"/c.ctl", dir+"/p.pid"
	run(t, server, path, "--remote=p"+sock, "--pidfile="+pidfile, "--unixctl="+ctl,
		"--detach", "--no-chdir", "--log-file="+dir+"/ovsdb-server.log")
	data, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("pidfile: %q", data)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		if exec.Command(appctl, "-t", ctl, "exit").Run() != nil {
			syscall.Kill(pid, syscall.SIGTERM)
		}
		for i := 0; running(pid) && i < 250; i++ {
			if i == 100 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Cleanup(stop)

	_, _, err = Open(path, nil, nil)
	wantErr := fmt.Sprintf("%s is locked by pid %d", filepath.Join(dir, ".conf.db.~lock~"), pid)
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Errorf("Open while ovsdb-server runs: %v, want %q", err, wantErr)
	}
	t.Log(err)
	run(t, vsctl, "--db="+sock, "--no-wait", "add-br", "br0")
	stop()

	var recs []Record
	l, _, err = Open(path, t.Logf, collect(&recs))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	last := recs[len(recs)-1]
	if len(last.Tables["Bridge"]) != 1 || !strings.Contains(last.Comment, "add-br br0") {
		t.Errorf("ovsdb-server's record: %+v", last)
	}
}
