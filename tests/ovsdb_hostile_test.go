package tests

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

var ovsdbParseErrRe = regexp.MustCompile(`\|jsonrpc\|WARN\|unix#\d+: (error parsing stream: .*)`)

// TestOvsdbNulStringRefused stores strings OVS cannot hold on both servers:
// a NUL ("\u0000") and a leading surrogate without its pair end the
// connection with no reply and the parser's error in the log; a lone
// trailing surrogate is refused by the transaction. Before govs refused
// them, a NUL string reached the database file and Debian's ovs-vsctl,
// ovsdb-client and ovsdb-tool could no longer read it. Everything
// committed before and after stays readable by Debian's tools, across a
// restart.
func TestOvsdbNulStringRefused(t *testing.T) {
	const set = `{"method":"transact","params":["Open_vSwitch",{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["external_ids","insert",["map",[["bad",%s]]]]]}],"id":1}`
	refusedByParser := []string{`"a\u0000b"`, `"a\ud800b"`, `"\ud800\u0041"`}
	for _, kind := range []string{"debian", "govs"} {
		t.Run(kind, func(t *testing.T) {
			p := ovsdbStart(t, ovsdbOpts{kind: kind})
			p.mustVsctl("init", "--", "set", "Open_vSwitch", ".", "external_ids:before=1")
			for _, s := range refusedByParser {
				if out := ovsdbExchange(t, p.sock, strings.Replace(set, "%s", s, 1)); len(out) != 1 || out[0] != "EOF" {
					t.Errorf("%s: got %v, want the connection closed without a reply", s, out)
				}
			}
			out := ovsdbExchange(t, p.sock, strings.Replace(set, "%s", `"a\udc00b"`, 1))
			if want := `{"error":null,"id":1,"result":[{"details":"not a valid UTF-8 string: invalid UTF-8 sequence 0xed 0xb0","error":"constraint violation"}]}`; len(out) != 1 || out[0] != want {
				t.Errorf("lone trailing surrogate: got %v, want %s", out, want)
			}
			p.mustVsctl("set", "Open_vSwitch", ".", "external_ids:after=2")

			// The first refusal is logged as OVS logs it (OVS rate-limits
			// the later ones).
			if m := ovsdbParseErrRe.FindStringSubmatch(p.readLog()); m == nil || m[1] != "error parsing stream: line 0, column 157, byte 157: null bytes not supported in quoted strings" {
				t.Errorf("log: %q\n%s", m, p.readLog())
			}
			check := func(when string) {
				t.Helper()
				if v := p.mustVsctl("get", "Open_vSwitch", ".", "external_ids"); v != "{after=\"2\", before=\"1\"}\n" {
					t.Errorf("%s: ovs-vsctl get: %q", when, v)
				}
				if r := p.client("dump", "unix:"+p.sock, "Open_vSwitch", "Open_vSwitch", "external_ids"); r.code != 0 || !strings.Contains(r.stdout, `{after="2", before="1"}`) {
					t.Errorf("%s: ovsdb-client dump: %+v", when, r)
				}
			}
			check("running")
			p.stop()
			if r := ovsdbRun(ovsdbTool, "show-log", p.db); r.code != 0 || strings.Contains(r.stdout, "bad") {
				t.Errorf("ovsdb-tool show-log: %+v", r)
			}
			p.start()
			check("after a restart")
		})
	}
}

// TestOvsdbCorruptMiddleKept damages a record in the middle of govs' database
// file. Like ovsdb-server, govs drops it and every later record, logging at
// ERR; unlike it, it first keeps the whole file as <db>.backup1, which the
// log line names, so that nothing is lost for good.
func TestOvsdbCorruptMiddleKept(t *testing.T) {
	p := ovsdbStart(t, ovsdbOpts{})
	p.mustVsctl("init")
	for _, k := range []string{"a", "b", "c"} {
		p.mustVsctl("set", "Open_vSwitch", ".", "external_ids:"+k+"=1")
	}
	p.stop()
	data, err := os.ReadFile(p.db)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte(`"b","1"`))
	if i < 0 {
		t.Fatalf("no record setting b in\n%s", data)
	}
	bad := bytes.Clone(data)
	bad[i+1] = 'X'
	if err := os.WriteFile(p.db, bad, 0o640); err != nil {
		t.Fatal(err)
	}
	p.start()
	if v := p.mustVsctl("get", "Open_vSwitch", ".", "external_ids"); v != "{a=\"1\"}\n" {
		t.Errorf("after the damage: %q", v)
	}
	if b, err := os.ReadFile(p.db + ".backup1"); err != nil || !bytes.Equal(b, bad) {
		t.Errorf("backup: %v (%d bytes, want %d)", err, len(b), len(bad))
	}
	if !regexp.MustCompile(`\|ERR\|` + regexp.QuoteMeta(p.db) + `: dropping \d+ bytes at offset \d+ to end of file \(including what look like 1 more records\): .*SHA-1.*; the file as it was is kept as ` + regexp.QuoteMeta(p.db+".backup1") + "\n").MatchString(p.readLog()) {
		t.Errorf("no ERR line naming the backup in the log:\n%s", p.readLog())
	}
	// Debian's tool reads what is left.
	if r := ovsdbRun(ovsdbTool, "show-log", p.db); r.code != 0 {
		t.Errorf("ovsdb-tool show-log: %+v", r)
	}
}
