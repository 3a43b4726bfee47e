package db

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govs/govs/schema"
)

func newTestDB(t testing.TB) *Database {
	t.Helper()
	s, err := ParseSchema(schema.VSwitch)
	if err != nil {
		t.Fatal(err)
	}
	return New(s)
}

// tx runs a transaction given as a JSON array of operations and returns the
// decoded result array.
func tx(t testing.TB, d *Database, ops string) []map[string]any {
	t.Helper()
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(ops), &raw); err != nil {
		t.Fatalf("bad test ops: %v", err)
	}
	res := d.Transact(raw, nil, time.Time{})
	var out []map[string]any
	if err := json.Unmarshal(res.JSON, &out); err != nil {
		t.Fatalf("result %s: %v", res.JSON, err)
	}
	return out
}

func lastError(res []map[string]any) string {
	for _, r := range res {
		if r != nil && r["error"] != nil {
			return r["error"].(string) + ": " + str(r["details"])
		}
	}
	return ""
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

const initOVS = `[{"op":"insert","table":"Open_vSwitch","row":{},"uuid-name":"ovs"}]`

// addBrOps adds bridge NAME with a port and an interface of that name.
const addBrOps = `[
	{"op":"insert","table":"Interface","row":{"name":"NAME"},"uuid-name":"i"},
	{"op":"insert","table":"Port","row":{"name":"NAME","interfaces":["named-uuid","i"]},"uuid-name":"p"},
	{"op":"insert","table":"Bridge","row":{"name":"NAME","ports":["named-uuid","p"]},"uuid-name":"b"},
	{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["bridges","insert",["named-uuid","b"]]]}]`

func TestTransactions(t *testing.T) {
	tests := []struct {
		name    string
		setup   []string
		ops     string
		wantErr string // prefix of "error: details"; "" for success
	}{
		{"insert root", nil, initOVS, ""},
		{"maxRows", []string{initOVS}, initOVS, "constraint violation: transaction causes \"Open_vSwitch\" table to contain 2 rows"},
		{"dangling strong ref", []string{initOVS}, `[{"op":"insert","table":"Bridge","row":{"name":"br0","ports":["named-uuid","nope"]}}]`, "referential integrity violation: Table Bridge column ports row"},
		{"bridge and port in one txn", []string{initOVS}, `[
			{"op":"insert","table":"Interface","row":{"name":"br0","type":"internal"},"uuid-name":"i"},
			{"op":"insert","table":"Port","row":{"name":"br0","interfaces":["named-uuid","i"]},"uuid-name":"p"},
			{"op":"insert","table":"Bridge","row":{"name":"br0","ports":["named-uuid","p"]},"uuid-name":"b"},
			{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["bridges","insert",["set",[["named-uuid","b"]]]]]}]`, ""},
		{"unknown table", nil, `[{"op":"insert","table":"Nope","row":{}}]`, "syntax error: Parsing ovsdb operation 1 of 1 failed: No table named Nope."},
		{"unknown column", nil, `[{"op":"insert","table":"Bridge","row":{"nope":1}}]`, "unknown column: No column nope in table Bridge."},
		{"type mismatch", nil, `[{"op":"insert","table":"Bridge","row":{"name":1}}]`, "syntax error: expected string"},
		{"enum", []string{initOVS}, `[{"op":"insert","table":"Bridge","row":{"name":"b","fail_mode":"bogus"}}]`, "constraint violation: bogus is not one of the allowed values ([secure, standalone])"},
		{"range", nil, `[{"op":"insert","table":"Interface","row":{"name":"i","ofport_request":70000}}]`, "constraint violation: 70000 is not in the valid range 1 to 65279 (inclusive)"},
		{"division by zero", []string{initOVS}, `[{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["next_cfg","/=",0]]}]`, "domain error: Division by zero."},
		{"overflow", []string{initOVS, `[{"op":"update","table":"Open_vSwitch","where":[],"row":{"next_cfg":9223372036854775807}}]`}, `[{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["next_cfg","+=",1]]}]`, "range error: Result of \"+=\" operation is out of range."},
		{"immutable", nil, `[{"op":"update","table":"Bridge","where":[],"row":{"_uuid":["uuid","550e8400-e29b-41d4-a716-446655440000"]}}]`, "constraint violation: Cannot update immutable column _uuid in table Bridge."},
		{"abort", nil, `[{"op":"abort"}]`, "aborted: aborted by request"},
		{"wait fails", nil, `[{"op":"wait","table":"Bridge","where":[],"until":"==","rows":[{"name":"q"}],"timeout":0}]`, "timed out: \"where\" clause test failed"},
		{"wait holds", nil, `[{"op":"wait","table":"Bridge","where":[],"until":"==","rows":[],"timeout":0}]`, ""},
		{"assert without lock", nil, `[{"op":"assert","lock":"x"}]`, "not owner: Asserted lock x not held."},
		{"bad op", nil, `[{"op":"bogus"}]`, "syntax error: Parsing ovsdb operation 1 of 1 failed: No operation \"bogus\""},
		// Debian's ovsdb-server 3.1 answers a lone trailing surrogate so.
		{"lone surrogate", []string{initOVS}, `[{"op":"update","table":"Open_vSwitch","where":[],"row":{"external_ids":["map",[["k","a\udc00b"]]]}}]`, "constraint violation: not a valid UTF-8 string: invalid UTF-8 sequence 0xed 0xb0"},
		{"lone surrogate last", []string{initOVS}, `[{"op":"update","table":"Open_vSwitch","where":[],"row":{"external_ids":["map",[["k","\\\uDFFF"]]]}}]`, "constraint violation: not a valid UTF-8 string: invalid UTF-8 sequence 0xed 0xbf"},
		{"surrogate pair", []string{initOVS}, `[{"op":"update","table":"Open_vSwitch","where":[],"row":{"external_ids":["map",[["k","\ud83d\ude00 \\udc00"]]]}}, {"op":"comment","comment":"\udc00"}]`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newTestDB(t)
			for _, s := range tc.setup {
				if e := lastError(tx(t, d, s)); e != "" {
					t.Fatalf("setup: %s", e)
				}
			}
			got := lastError(tx(t, d, tc.ops))
			if tc.wantErr == "" && got != "" || tc.wantErr != "" && !strings.HasPrefix(got, tc.wantErr) {
				t.Errorf("got %q, want %q", got, tc.wantErr)
			}
		})
	}
}

func countRows(d *Database, table string) int {
	n := 0
	d.Read(func(s Snapshot) { n = len(s.Rows(table)) })
	return n
}

func TestGarbageCollectionAndIndexes(t *testing.T) {
	d := newTestDB(t)
	addBr := addBrOps
	tx(t, d, initOVS)
	if e := lastError(tx(t, d, strings.ReplaceAll(addBr, "NAME", "br0"))); e != "" {
		t.Fatal(e)
	}
	// An unreferenced non-root row is collected at once.
	tx(t, d, `[{"op":"insert","table":"Bridge","row":{"name":"orphan"}}]`)
	if n := countRows(d, "Bridge"); n != 1 {
		t.Fatalf("%d bridges, want 1", n)
	}
	// A second bridge with the same name violates the index.
	e := lastError(tx(t, d, strings.ReplaceAll(addBr, "NAME", "br0")))
	if !strings.HasPrefix(e, "constraint violation: Transaction causes multiple rows in \"Bridge\" table to have identical values (br0)") {
		t.Fatalf("got %q", e)
	}
	// Removing the bridge from Open_vSwitch collects bridge, port and interface.
	e = lastError(tx(t, d, `[{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["bridges","delete",["set",[]]]]},
		{"op":"update","table":"Open_vSwitch","where":[],"row":{"bridges":["set",[]]}}]`))
	if e != "" {
		t.Fatal(e)
	}
	for _, tbl := range []string{"Bridge", "Port", "Interface"} {
		if n := countRows(d, tbl); n != 0 {
			t.Errorf("%s has %d rows after del-br, want 0", tbl, n)
		}
	}
	// Deleting a root row that another row references strongly fails.
	tx(t, d, `[{"op":"insert","table":"Queue","row":{},"uuid-name":"q"},
		{"op":"insert","table":"QoS","row":{"type":"linux-htb","queues":["map",[[0,["named-uuid","q"]]]]}}]`)
	e = lastError(tx(t, d, `[{"op":"delete","table":"Queue","where":[]}]`))
	if !strings.HasPrefix(e, "referential integrity violation: cannot delete Queue row") {
		t.Fatalf("got %q", e)
	}
}

func TestMutateMapsAndSets(t *testing.T) {
	d := newTestDB(t)
	tx(t, d, initOVS)
	tx(t, d, `[{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["external_ids","insert",["map",[["a","1"],["b","2"]]]]]}]`)
	tx(t, d, `[{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["external_ids","insert",["map",[["a","9"],["c","3"]]]],["external_ids","delete",["set",["b"]]]]}]`)
	res := tx(t, d, `[{"op":"select","table":"Open_vSwitch","where":[["external_ids","includes",["map",[["a","1"]]]]],"columns":["external_ids"]}]`)
	rows := res[0]["rows"].([]any)
	if len(rows) != 1 {
		t.Fatalf("rows %v", rows)
	}
	got, _ := json.Marshal(rows[0])
	if string(got) != `{"external_ids":["map",[["a","1"],["c","3"]]]}` {
		t.Errorf("got %s", got)
	}
	tx(t, d, `[{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["external_ids","delete",["map",[["a","2"],["c","3"]]]]]}]`)
	res = tx(t, d, `[{"op":"select","table":"Open_vSwitch","where":[],"columns":["external_ids"]}]`)
	got, _ = json.Marshal(res[0]["rows"])
	if string(got) != `[{"external_ids":["map",[["a","1"]]]}]` {
		t.Errorf("got %s", got)
	}
}

func TestDiffRoundTrip(t *testing.T) {
	mt := &ColumnType{Key: BaseType{Type: TypeString}, Value: &BaseType{Type: TypeString}, Min: 0, Max: Unlimited}
	st := &ColumnType{Key: BaseType{Type: TypeInteger}, Min: 0, Max: Unlimited}
	ot := &ColumnType{Key: BaseType{Type: TypeInteger}, Min: 0, Max: 1}
	m := func(kv ...string) Datum {
		d := Datum{Keys: []Atom{}, Vals: []Atom{}}
		for i := 0; i < len(kv); i += 2 {
			d.Keys = append(d.Keys, kv[i])
			d.Vals = append(d.Vals, kv[i+1])
		}
		return d
	}
	s := func(v ...int64) Datum {
		d := Datum{Keys: []Atom{}}
		for _, x := range v {
			d.Keys = append(d.Keys, x)
		}
		return d
	}
	for _, c := range []struct {
		t        *ColumnType
		old, new Datum
	}{
		{mt, m("a", "1", "b", "2"), m("a", "1", "b", "3", "c", "4")},
		{mt, m("a", "1"), m()},
		{st, s(1, 2, 3), s(2, 4)},
		{st, s(), s(5)},
		{ot, s(5), s(7)},
		{ot, s(5), s()},
		{ot, s(), s(7)},
	} {
		got := ApplyDiff(c.t, c.old, Diff(c.t, c.old, c.new))
		if !got.Equal(c.new) {
			t.Errorf("ApplyDiff(%v, Diff(..., %v)) = %v", c.old, c.new, got)
		}
	}
}

func TestRecordReplay(t *testing.T) {
	d := newTestDB(t)
	var records []map[string]map[string]json.RawMessage
	d.OnCommit(func(c *Commit) error {
		records = append(records, c.Record(d.Schema()))
		return nil
	})
	tx(t, d, initOVS)
	tx(t, d, `[{"op":"insert","table":"Bridge","row":{"name":"br0"},"uuid-name":"b"},
		{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["bridges","insert",["named-uuid","b"]],["next_cfg","+=",1]]}]`)
	tx(t, d, `[{"op":"update","table":"Bridge","where":[],"row":{"other_config":["map",[["k","v"]]]}}]`)

	d2 := newTestDB(t)
	for _, r := range records {
		if err := d2.Replay(r, true); err != nil {
			t.Fatal(err)
		}
	}
	a := tx(t, d, `[{"op":"select","table":"Bridge","where":[],"columns":["_uuid","name","other_config"]}]`)
	b := tx(t, d2, `[{"op":"select","table":"Bridge","where":[],"columns":["_uuid","name","other_config"]}]`)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("replayed %s, want %s", jb, ja)
	}
}

// TestOptionalDiffIsNewValue checks the update2 encoding of a change to an
// optional column: Debian's ovsdb-server sends {"modify":{"ofport":7}} when
// ofport goes from 5 to 7.
func TestOptionalDiffIsNewValue(t *testing.T) {
	ct := &ColumnType{Key: BaseType{Type: TypeInteger}, Min: 0, Max: 1}
	d := Diff(ct, Datum{Keys: []Atom{int64(5)}}, Datum{Keys: []Atom{int64(7)}})
	if got := string(AppendDatumJSON(nil, d, false)); got != "7" {
		t.Errorf("diff encodes as %s, want 7", got)
	}
}

func TestBadOperationShapes(t *testing.T) {
	d := newTestDB(t)
	for _, c := range []struct{ ops, want string }{
		{`[5]`, "syntax error: Parsing ovsdb operation 1 of 1 failed: Object expected."},
		{`[{"op":"insert","table":"Bridge","row":{},"uuid-name":""}]`, "syntax error: Parsing ovsdb operation 1 of 1 failed: Type mismatch for member 'uuid-name'."},
		{`[{"op":"insert","table":"Bridge","row":{},"uuid-name":"1a"}]`, "syntax error: Parsing ovsdb operation 1 of 1 failed: Type mismatch for member 'uuid-name'."},
		{`[{"op":"insert","table":"Bridge","row":{},"uuid-name":"a","uuid":5}]`, "syntax error"},
		// What the fast decoding leaves to the general path.
		{`[{"op":"delete","table":"Bridge","where":[],"row":{}}]`, "syntax error: Parsing ovsdb operation 1 of 1 failed: Member 'row' is present but not allowed here."},
		{`[{"op":"select","table":5,"where":[]}]`, "syntax error: Parsing ovsdb operation 1 of 1 failed: Type mismatch for member 'table'."},
		{`[{"op":"commit","durable":1}]`, "syntax error: Parsing ovsdb operation 1 of 1 failed: Type mismatch for member 'durable'."},
		{`[{"op":"comment","comment":"a"},{"op":"select","table":"Bridge","table":"Nope","where":[]}]`, "syntax error: Parsing ovsdb operation 2 of 2 failed: No table named Nope."},
		{`[{"table":"Bridge","where":[]}]`, "syntax error: Parsing ovsdb operation 1 of 1 failed: Required 'op' member is missing."},
	} {
		if got := lastError(tx(t, d, c.ops)); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.ops, got, c.want)
		}
	}
}

// TestFastOpErrorsQuoteTheOperation: an operation decoded straight into its
// members that then fails quotes the whole operation in the error's
// "syntax", as the general path does.
func TestFastOpErrorsQuoteTheOperation(t *testing.T) {
	d := newTestDB(t)
	for _, op := range []string{
		`{"op":"update","table":"Bridge","where":[]}`,
		`{"op":"update","table":"Bridge","where":[],"row":{"name":"x"}}`,
		`{"op":"wait","table":"Bridge","where":[],"rows":[],"until":"<"}`,
	} {
		if _, ok := fastDecodeOp([]byte(op)); !ok {
			t.Fatalf("%s: not decoded by the fast path", op)
		}
		res := tx(t, d, "["+op+"]")
		want, _ := slowDecode([]byte(op))
		var got any
		if len(res) > 0 {
			syntax, _ := res[len(res)-1]["syntax"].(string)
			got, _ = slowDecode([]byte(syntax))
		}
		if len(res) == 0 || res[len(res)-1]["error"] == nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want an error quoting the operation", op, res)
		}
	}
}

// TestMatchAnyAndAll checks that a monitor condition is a disjunction and a
// "where" a conjunction of the same clauses.
func TestMatchAnyAndAll(t *testing.T) {
	d := newTestDB(t)
	tx(t, d, `[{"op":"insert","table":"Open_vSwitch","row":{"bridges":["named-uuid","br"]}},
		{"op":"insert","table":"Bridge","row":{"name":"br0"},"uuid-name":"br"}]`)
	var br *Row
	d.Read(func(s Snapshot) {
		for _, r := range s.Rows("Bridge") {
			br = r
		}
	})
	tbl := d.Schema().Tables["Bridge"]
	tests := []struct {
		cond     string
		any, all bool
	}{
		{`[]`, true, true},
		{`[true]`, true, true},
		{`[false]`, false, false},
		{`[false,["name","==","br0"]]`, true, false},
		{`[["name","==","br0"],["name","==","br1"]]`, true, false},
		{`[["name","==","br1"],["name","==","br2"]]`, false, false},
		{`[["name","==","br0"],["stp_enable","==",false]]`, true, true},
		{`[true,false]`, true, false},
	}
	for _, tt := range tests {
		conds, err := ParseConditions(tbl, json.RawMessage(tt.cond), nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.cond, err)
		}
		if got := MatchAny(conds, br); got != tt.any {
			t.Errorf("MatchAny(%s) = %v, want %v", tt.cond, got, tt.any)
		}
		if got := Match(conds, br); got != tt.all {
			t.Errorf("Match(%s) = %v, want %v", tt.cond, got, tt.all)
		}
	}
}

// TestUndoLocked: undoing commits puts rows, references and indexes back as
// they were before the first, and subscribers see the undoing commit.
func TestUndoLocked(t *testing.T) {
	d := newTestDB(t)
	addBr := addBrOps
	tx(t, d, initOVS)
	tx(t, d, strings.ReplaceAll(addBr, "NAME", "br0"))
	before := d.SnapshotRecord()
	var undone []*Commit
	d.OnCommit(func(c *Commit) error { undone = append(undone, c); return nil })
	var seen []*Commit
	d.Subscribe(func(c *Commit) { seen = append(seen, c) })
	tx(t, d, strings.ReplaceAll(addBr, "NAME", "br1"))
	tx(t, d, `[{"op":"update","table":"Bridge","where":[["name","==","br0"]],"row":{"stp_enable":true}}]`)
	// br0 leaves Open_vSwitch: it, its port and interface are collected.
	tx(t, d, `[{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["bridges","delete",["set",[]]]]},
		{"op":"update","table":"Open_vSwitch","where":[],"row":{"bridges":["set",[]]}}]`)
	if len(undone) != 3 {
		t.Fatalf("%d commits, want 3", len(undone))
	}
	d.Read(func(Snapshot) { d.UndoLocked(undone) })
	if got := d.SnapshotRecord(); !jsonEqual(t, got, before) {
		t.Fatalf("after undo:\n%v\nwant\n%v", got, before)
	}
	if len(seen) != 4 || len(seen[3].Tables) == 0 {
		t.Fatalf("subscribers saw %d commits, want 4 (the last the undo)", len(seen))
	}
	// The index and references are back: br0's name is taken, br1's is
	// free, and once Open_vSwitch lets go of both, both are collected with
	// their ports and interfaces.
	if e := lastError(tx(t, d, strings.ReplaceAll(addBr, "NAME", "br0"))); !strings.HasPrefix(e, "constraint violation") {
		t.Fatalf("br0 again: %q, want a constraint violation", e)
	}
	if e := lastError(tx(t, d, strings.ReplaceAll(addBr, "NAME", "br1"))); e != "" {
		t.Fatalf("br1 after its undo: %s", e)
	}
	tx(t, d, `[{"op":"update","table":"Open_vSwitch","where":[],"row":{"bridges":["set",[]]}}]`)
	for _, tbl := range []string{"Bridge", "Port", "Interface"} {
		if n := countRows(d, tbl); n != 0 {
			t.Errorf("%s has %d rows, want 0: the references were not restored", tbl, n)
		}
	}
}

func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	var va, vb any
	json.Unmarshal(ja, &va)
	json.Unmarshal(jb, &vb)
	return reflect.DeepEqual(va, vb)
}

type testLocks struct{}

func (testLocks) HasLock(string) bool { return true }
func (testLocks) ReadOnly() bool      { return false }

// TestCommitForgetsCommitter: hooks and subscribers see who committed, but
// the commit handed back (and kept in the server's history) no longer
// refers to it, so a closed session's buffers are not kept alive by the
// last commits it made.
func TestCommitForgetsCommitter(t *testing.T) {
	d := newTestDB(t)
	var hooked, subscribed LockChecker
	d.OnCommit(func(c *Commit) error { hooked = c.By; return nil })
	var kept *Commit
	d.Subscribe(func(c *Commit) { subscribed, kept = c.By, c })
	var raw []json.RawMessage
	json.Unmarshal([]byte(initOVS), &raw)
	res := d.Transact(raw, testLocks{}, time.Time{})
	if hooked == nil || subscribed == nil {
		t.Fatalf("hook saw %v, subscriber %v; want the committer", hooked, subscribed)
	}
	if res.Commit == nil || res.Commit != kept || kept.By != nil {
		t.Fatalf("commit after the subscribers: %+v; want By nil", kept)
	}
}

// TestCommitKeepsCounts: after each commit the reference counts and
// indexes are what the rows give, whether a commit moves index keys
// between rows, changes only columns without references, or drops a
// reference and so collects a row.
func TestCommitKeepsCounts(t *testing.T) {
	d := newTestDB(t)
	for i, ops := range []string{
		`[{"op":"insert","table":"Open_vSwitch","row":{"manager_options":["named-uuid","m1"]}},
		  {"op":"insert","table":"Manager","row":{"target":"a"},"uuid-name":"m1"}]`,
		`[{"op":"update","table":"Manager","where":[["target","==","a"]],"row":{"target":"b"}}]`,
		`[{"op":"insert","table":"Manager","row":{"target":"a"},"uuid-name":"m2"},
		  {"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["manager_options","insert",["set",[["named-uuid","m2"]]]]]}]`,
		`[{"op":"update","table":"Manager","where":[["target","==","b"]],"row":{"target":"c"}},
		  {"op":"update","table":"Manager","where":[["target","==","a"]],"row":{"target":"b"}}]`,
		`[{"op":"update","table":"Open_vSwitch","where":[],"row":{"external_ids":["map",[["k","v"]]]}},
		  {"op":"update","table":"Manager","where":[],"row":{"external_ids":["map",[["k","v"]]]}}]`,
		`[{"op":"update","table":"Open_vSwitch","where":[],"row":{"manager_options":["set",[]]}}]`,
	} {
		if e := lastError(tx(t, d, ops)); e != "" {
			t.Fatalf("transaction %d: %s", i, e)
		}
		checkCounts(t, d)
	}
	if n := countRows(d, "Manager"); n != 0 {
		t.Errorf("%d Manager rows left, want 0 (collected)", n)
	}
}

// TestAppendRecord: the log's encoding of a commit is Record's maps
// written out in order, for inserts, modifications (as diffs, and whole
// with diffs false), deletions and a modification that stores nothing.
func TestAppendRecord(t *testing.T) {
	d := newTestDB(t)
	var commits []*Commit
	d.OnCommit(func(c *Commit) error { commits = append(commits, c); return nil })
	tx(t, d, initOVS)
	tx(t, d, strings.ReplaceAll(addBrOps, "NAME", "br0"))
	tx(t, d, strings.ReplaceAll(addBrOps, "NAME", "br1"))
	tx(t, d, `[{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["external_ids","insert",["map",[["a","1"],["b","2"]]]]]},
		{"op":"update","table":"Bridge","where":[["name","==","br0"]],"row":{"stp_enable":true,"other_config":["map",[["x","y"]]]}}]`)
	tx(t, d, `[{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["external_ids","delete",["set",["a"]]]]}]`)
	tx(t, d, `[{"op":"update","table":"Open_vSwitch","where":[],"row":{"bridges":["set",[]]}}]`)
	if len(commits) != 6 {
		t.Fatalf("%d commits, want 6", len(commits))
	}
	for i, c := range commits {
		rec := c.Record(d.Schema())
		var want []byte
		for _, tname := range slices.Sorted(maps.Keys(rec)) {
			want = append(want, `"`+tname+`":{`...)
			for j, u := range slices.Sorted(maps.Keys(rec[tname])) {
				if j > 0 {
					want = append(want, ',')
				}
				want = append(want, `"`+u+`":`...)
				want = append(want, rec[tname][u]...)
			}
			want = append(want, '}', ',')
		}
		if got := c.AppendRecord(nil, d.Schema(), true); string(got) != string(want) {
			t.Errorf("commit %d:\n got %s\nwant %s", i, got, want)
		}
		// Whole values: the diff of a map is what it gained and lost.
		if i == 4 {
			whole := string(c.AppendRecord(nil, d.Schema(), false))
			if !strings.Contains(whole, `"external_ids":["map",[["b","2"]]]`) {
				t.Errorf("whole record: %s", whole)
			}
			if diff := string(c.AppendRecord(nil, d.Schema(), true)); !strings.Contains(diff, `"external_ids":["map",[["a","1"]]]`) {
				t.Errorf("diff record: %s", diff)
			}
		}
	}
	// A change that stores nothing (the row as it was) encodes to nothing.
	noop := &Commit{Tables: map[string]map[UUID]*RowChange{}}
	for tname, rows := range commits[1].Tables {
		for u, ch := range rows {
			if ch.New != nil {
				noop.Tables[tname] = map[UUID]*RowChange{u: {Old: ch.New, New: ch.New}}
			}
		}
	}
	if got := noop.AppendRecord(nil, d.Schema(), true); len(got) != 0 {
		t.Errorf("unchanged rows: %s", got)
	}
}
