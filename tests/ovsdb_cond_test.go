package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ovsdbCondSetup gives a server the rows the monitor condition tests
// select from: br0 {k=a}, br1 {k=b}, br2 {}.
func ovsdbCondSetup(p *ovsdbProc) {
	p.mustVsctl("init")
	p.mustVsctl("add-br", "br0", "--", "set", "Bridge", "br0", "external_ids:k=a")
	p.mustVsctl("add-br", "br1", "--", "set", "Bridge", "br1", "external_ids:k=b")
	p.mustVsctl("add-br", "br2")
}

// ovsdbCondChanges are the changes made while monitoring: rows entering
// and leaving conditions, a modify, an insert and a delete. The last one,
// bridge zz, is the sentinel every live condition selects.
var ovsdbCondChanges = [][]string{
	{"set", "Bridge", "br2", "external_ids:k=a"},
	{"remove", "Bridge", "br0", "external_ids", "k"},
	{"add-br", "br3"},
	{"set", "Bridge", "br1", "stp_enable=true"},
	{"set", "Bridge", "br1", "external_ids:k=a"},
	{"del-br", "br1"},
	{"add-br", "zz"},
}

// ovsdbCondConditions are monitor_cond conditions: lists of clauses of
// which any may hold.
var ovsdbCondConditions = []string{
	`[]`,
	`[true]`,
	`[false]`,
	`[false,false]`,
	`[true,false]`,
	`[false,["name","==","br1"]]`,
	`[["name","==","br0"],["name","==","br1"]]`,
	`[["name","==","br0"],["name","!=","br0"]]`,
	`[["external_ids","includes",["map",[["k","a"]]]],["name","==","br1"]]`,
	`[["external_ids","excludes",["map",[["k","a"]]]]]`,
	`[["stp_enable","==",true],["name","==","nope"]]`,
}

// ovsdbBlocks normalises ovsdb-client csv monitor output: uuids become
// <uuid> and the rows of each update (printed in hash order) are sorted.
func ovsdbBlocks(s string) string {
	var out, block []string
	flush := func() {
		sort.Strings(block)
		out = append(out, block...)
		block = nil
	}
	for _, l := range strings.Split(ovsdbNormalize(s, false), "\n") {
		switch {
		case l == "":
		case strings.HasPrefix(l, "row,action"):
			flush()
			out = append(out, l)
		default:
			block = append(block, l)
		}
	}
	flush()
	return strings.Join(out, "\n")
}

// ovsdbMonitorCondFile runs "ovsdb-client --detach monitor-cond" with its
// output in a file: the client detaches once it has printed the initial
// contents. It is stopped by its pid when the test ends.
func ovsdbMonitorCondFile(t *testing.T, p *ovsdbProc, name, cond string) string {
	t.Helper()
	out := filepath.Join(p.dir, name+".out")
	pidf := filepath.Join(p.dir, name+".pid")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t.Cleanup(func() {
		b, _ := os.ReadFile(pidf)
		if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 {
			syscall.Kill(pid, syscall.SIGTERM)
		}
	})
	cmd := exec.Command(ovsdbClient, "--detach", "--no-chdir", "--pidfile="+pidf, "--format=csv",
		"monitor-cond", "unix:"+p.sock, "Open_vSwitch", cond, "Bridge", "name,external_ids,stp_enable")
	// Files, not pipes: the detached client keeps them open.
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		b, _ := os.ReadFile(out)
		t.Fatalf("%s: ovsdb-client monitor-cond %s: %v: %s", p.kind, cond, err, b)
	}
	return out
}

// TestOvsdbMonitorCondDifferential runs the same monitor-cond scenarios
// with Debian's ovsdb-client against Debian's ovsdb-server and govs' and
// requires identical output: the initial rows for each condition, then the
// updates for changes made while monitoring.
func TestOvsdbMonitorCondDifferential(t *testing.T) {
	kinds := []string{"debian", "govs"}
	initial := map[string][]string{}
	live := map[string][]string{}
	for _, kind := range kinds {
		p := ovsdbStart(t, ovsdbOpts{kind: kind})
		ovsdbCondSetup(p)
		var files []string
		for i, cond := range ovsdbCondConditions {
			f := ovsdbMonitorCondFile(t, p, "init"+string(rune('a'+i)), cond)
			b, _ := os.ReadFile(f)
			initial[kind] = append(initial[kind], ovsdbBlocks(string(b)))
			// The live monitor also selects the sentinel bridge zz, whose
			// insert shows that every earlier update has been printed.
			lc := cond
			if cond != "[]" {
				lc = strings.TrimSuffix(cond, "]") + `,["name","==","zz"]]`
			}
			files = append(files, ovsdbMonitorCondFile(t, p, "live"+string(rune('a'+i)), lc))
		}
		for _, c := range ovsdbCondChanges {
			p.mustVsctl(c...)
		}
		for _, f := range files {
			var b []byte
			ovsdbWait(t, 10*time.Second, kind+" sentinel in "+f, func() bool {
				b, _ = os.ReadFile(f)
				return strings.Contains(string(b), ",insert,zz,")
			})
			live[kind] = append(live[kind], ovsdbBlocks(string(b)))
		}
	}
	for i, cond := range ovsdbCondConditions {
		if initial["debian"][i] != initial["govs"][i] {
			t.Errorf("initial rows for %s differ\ndebian:\n%s\ngovs:\n%s", cond, initial["debian"][i], initial["govs"][i])
		}
		if live["debian"][i] != live["govs"][i] {
			t.Errorf("updates for %s (+zz) differ\ndebian:\n%s\ngovs:\n%s", cond, live["debian"][i], live["govs"][i])
		}
	}
}

// ovsdbCondIDLScript drives python3-openvswitch's IDL: it sets conditions
// on Bridge with cond_change, waits for the server to acknowledge each
// (cond_seqno counts the replies to monitor_cond_change), makes changes with ovs-vsctl and waits for them through a
// step counter in the unconditionally monitored Open_vSwitch table, and
// prints the Bridge rows the IDL holds after each step. argv[3] is the
// monitor method: monitor_cond_since, the IDL's own choice, or
// monitor_cond, which it otherwise uses only with servers that lack the
// former.
const ovsdbCondIDLScript = ovsdbIDLPrelude + `
# Reconnections back to back would double the IDL's backoff up to 8 s.
idl._session.reconnect.set_backoff(1000, 1000)
if sys.argv[3] == "monitor_cond":
    send = idl._Idl__send_monitor_request
    idl._Idl__send_monitor_request = lambda *a: send(ovs.db.idl.Monitor.monitor_cond)
methods = set()
send_request = idl.send_request
def record(msg):
    if msg.method.startswith("monitor"):
        methods.add(msg.method)
    return send_request(msg)
idl.send_request = record
def show(what):
    rows = sorted((b.name, sorted(b.external_ids.items())) for b in idl.tables["Bridge"].rows.values())
    print(what, json.dumps(rows))
step = 0
def vsctl(*args):
    global step
    step += 1
    subprocess.run(["ovs-vsctl", "--no-wait", "--db=" + remote] + list(args) +
        ["--", "set", "Open_vSwitch", ".", "external_ids:step=%d" % step], check=True)
    run_until(lambda: any(r.external_ids.get("step") == str(step) for r in idl.tables["Open_vSwitch"].rows.values()))
    show("after " + " ".join(args))
def cond(c):
    # Not cond_change's return value: python3-openvswitch 3.1 adds one too
    # many when nothing is in flight (it tests the method "request").
    seq = idl.cond_seqno + 1
    idl.cond_change("Bridge", c)
    run_until(lambda: idl.cond_seqno >= seq)
    show("cond " + json.dumps(c))
def conds(*cs):
    # Back to back, without waiting: the IDL sends each once the one
    # before is acknowledged; the rows are those of the last.
    for c in cs:
        idl.cond_change("Bridge", c)
    st = idl.tables["Bridge"].condition_state
    run_until(lambda: st.new is None and st.requested is None and st.acked == cs[-1])
    show("conds " + json.dumps(cs))
run_until(lambda: idl.has_ever_connected() and len(idl.tables["Open_vSwitch"].rows) == 1)
show("start")
cond([["name", "==", "br0"], ["name", "==", "br1"]])
vsctl("set", "Bridge", "br1", "external_ids:x=1")
vsctl("add-br", "br3")
cond([False, ["external_ids", "includes", ["map", [["k", "a"]]]]])
vsctl("set", "Bridge", "br2", "external_ids:k=a")
vsctl("remove", "Bridge", "br0", "external_ids", "k")
cond([False])
vsctl("set", "Bridge", "br1", "external_ids:k=a")
cond([["external_ids", "includes", ["map", [["k", "a"]]]], ["name", "==", "br0"], ["name", "==", "br3"]])
vsctl("del-br", "br3")
cond([True])
cond([True, False])
cond([False, ["name", "!=", "br0"]])
vsctl("add-br", "br4")
# [] is [False] to the IDL (its cond_change says so).
cond([])
vsctl("add-br", "br5")
conds([["name", "==", "br5"]], [True], [["name", "==", "br1"], ["name", "==", "br5"], False])
vsctl("set", "Bridge", "br5", "external_ids:k=b", "--", "set", "Bridge", "br4", "external_ids:k=b")
conds([], [["external_ids", "includes", ["map", [["k", "b"]]]]])
# Reconnections: the IDL asks again with its acknowledged condition
# (monitor_cond_since with the last transaction it saw). Changes and a
# condition change made before it reconnects must all show.
def reconnect(c, *args):
    global step
    step += 1
    idl.force_reconnect()
    subprocess.run(["ovs-vsctl", "--no-wait", "--db=" + remote] + list(args) +
        ["--", "set", "Open_vSwitch", ".", "external_ids:step=%d" % step], check=True)
    if c is not None:
        idl.cond_change("Bridge", c)
    st = idl.tables["Bridge"].condition_state
    run_until(lambda: any(r.external_ids.get("step") == str(step) for r in idl.tables["Open_vSwitch"].rows.values())
        and st.new is None and st.requested is None)
    show("reconnect %s after %s" % (json.dumps(c), " ".join(args)))
reconnect(None, "set", "Bridge", "br4", "external_ids:k=c", "--", "add-br", "br6", "--", "set", "Bridge", "br6", "external_ids:k=b")
reconnect([["name", "==", "br0"], ["external_ids", "includes", ["map", [["k", "c"]]]]], "add-br", "br7")
reconnect(None, "set", "Bridge", "br0", "external_ids:k=c", "--", "del-br", "br4")
reconnect([True], "del-br", "br6")
print("methods", sorted(methods))
idl.close()
`

// TestOvsdbMonitorCondIDLDifferential runs the Python IDL's conditional
// monitoring (cond_change with several clauses, [], [True], [False],
// changes back to back, rows entering and leaving the condition,
// reconnections with changes missed) against Debian's server and govs',
// over monitor_cond_since and monitor_cond, and requires the same rows at
// every step. Debian's standalone server answers monitor_cond_since with
// found=false, govs with found=true and only what the client missed.
func TestOvsdbMonitorCondIDLDifferential(t *testing.T) {
	ovsdbNeed(t, ovsdbPython)
	for _, method := range []string{"monitor_cond_since", "monitor_cond"} {
		t.Run(method, func(t *testing.T) {
			// The IDL's reconnections wait out its backoff: the two
			// methods' runs overlap those waits.
			t.Parallel()
			out := map[string]string{}
			for _, kind := range []string{"debian", "govs"} {
				p := ovsdbStart(t, ovsdbOpts{kind: kind})
				ovsdbCondSetup(p)
				f := filepath.Join(p.dir, "cond.py")
				if err := os.WriteFile(f, []byte(ovsdbCondIDLScript), 0o644); err != nil {
					t.Fatal(err)
				}
				r := ovsdbRun(ovsdbPython, f, "unix:"+p.sock, ovsdbVSwitchSch, method)
				if r.code != 0 {
					t.Fatalf("%s: python IDL: exit %d\n%s\n%s", kind, r.code, r.stdout, r.stderr)
				}
				out[kind] = r.stdout
			}
			// The IDL monitors _Server with "monitor", the data with one of
			// the others.
			if !strings.Contains(out["govs"], "'"+method+"'") ||
				strings.Contains(out["govs"], "'monitor_cond_since'") != (method == "monitor_cond_since") {
				t.Errorf("the IDL did not monitor with %s:\n%s", method, out["govs"])
			}
			if out["debian"] != out["govs"] {
				t.Fatalf("IDL rows differ\ndebian:\n%s\ngovs:\n%s", out["debian"], out["govs"])
			}
			t.Logf("IDL steps:\n%s", out["govs"])
		})
	}
}

// ovsdbCondChangeCall sends a request and returns, canonicalised, the
// update2 notifications before its reply and the reply: each table's row
// updates sorted, uuids aside.
func ovsdbCondChangeCall(t *testing.T, c *ovsdbRawConn, method string, params any, id int) []string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"method": method, "params": params, "id": id})
	c.send(string(b))
	var out []string
	for {
		m := c.recv(10 * time.Second)
		if m == nil {
			t.Fatalf("no reply to %s", b)
		}
		var body any = m
		if m["method"] == "update2" {
			body = m["params"].([]any)[1]
		} else if r, ok := m["result"].(map[string]any); ok {
			body = r
		}
		if tables, ok := body.(map[string]any); ok {
			for tn, rows := range tables {
				rm, ok := rows.(map[string]any)
				if !ok {
					continue
				}
				var us []string
				for _, u := range rm {
					j, _ := json.Marshal(u)
					us = append(us, string(j))
				}
				sort.Strings(us)
				tables[tn] = us
			}
		}
		j, _ := json.Marshal(body)
		out = append(out, fmt.Sprint(m["method"], " ", ovsdbNormalize(string(j), false)))
		if m["method"] == nil {
			return out
		}
	}
}

// TestOvsdbMonitorCondChangeSelect checks monitor_cond_change on the wire
// against Debian's server: rows entering the condition are inserts, rows
// leaving are deletes, [] selects every row, and the monitor's "select"
// (insert false) holds back entering rows.
func TestOvsdbMonitorCondChangeSelect(t *testing.T) {
	out := map[string][]string{}
	for _, kind := range []string{"debian", "govs"} {
		p := ovsdbStart(t, ovsdbOpts{kind: kind})
		ovsdbCondSetup(p)
		for i, sel := range []map[string]any{nil, {"insert": false}} {
			c := ovsdbDialRaw(t, p.sock)
			req := map[string]any{"columns": []string{"name"}, "where": []any{[]any{"name", "==", "br0"}}}
			if sel != nil {
				req["select"] = sel
			}
			steps := []struct {
				method string
				params any
			}{
				{"monitor_cond", []any{"Open_vSwitch", "m", map[string]any{"Bridge": []any{req}}}},
				{"monitor_cond_change", []any{"m", "m2", map[string]any{"Bridge": []any{map[string]any{"where": []any{[]any{"name", "==", "br1"}}}}}}},
				{"monitor_cond_change", []any{"m2", "m3", map[string]any{"Bridge": []any{map[string]any{"where": []any{}}}}}},
				{"monitor_cond_change", []any{"m3", "m4", map[string]any{"Bridge": []any{map[string]any{"where": []any{false, []any{"name", "==", "br2"}}}}}}},
			}
			for j, s := range steps {
				for _, l := range ovsdbCondChangeCall(t, c, s.method, s.params, 10*i+j) {
					out[kind] = append(out[kind], fmt.Sprintf("select %v: %s", sel, l))
				}
			}
		}
	}
	if d, g := strings.Join(out["debian"], "\n"), strings.Join(out["govs"], "\n"); d != g {
		t.Fatalf("monitor_cond_change differs\ndebian:\n%s\ngovs:\n%s", d, g)
	}
}
