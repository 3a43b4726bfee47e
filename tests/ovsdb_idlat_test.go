package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// The cases of OVS 3.1's own IDL test suite (tests/ovsdb-idl.at in
// Debian's openvswitch-source tarball) written with OVSDB_CHECK_IDL and
// OVSDB_CHECK_IDL_TRACK, conditional monitoring among them, run with OVS's
// own drivers, tests/test-ovsdb (the C IDL, built from the tarball by
// testdata/cidl/build.sh) and tests/test-ovsdb.py (python3-openvswitch's
// IDL), against Debian's ovsdb-server and govs'. The command lines are the
// ones the .at file's macros run; the outputs, sorted and with uuids
// numbered as the suite's uuidfilt does, must be equal, and Debian's must
// be the .at file's expected output (else this harness runs a case
// differently from OVS's suite).

var (
	idlAtOnce sync.Once
	idlAtSrc  string
	idlAtErr  error
)

// idlAtSource builds test-ovsdb once per test binary (a cached build makes
// this quick) and returns the unpacked OVS source tree.
func idlAtSource(t *testing.T) string {
	t.Helper()
	idlAtOnce.Do(func() {
		cmd := exec.Command("bash", "testdata/cidl/build.sh")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			idlAtErr = fmt.Errorf("testdata/cidl/build.sh cannot build OVS's test-ovsdb (needs openvswitch-source and build-essential): %v\n%s", err, stderr.String())
			return
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		idlAtSrc = lines[len(lines)-1]
	})
	if idlAtErr != nil {
		t.Fatal(idlAtErr)
	}
	return idlAtSrc
}

// idlAtCase is one OVSDB_CHECK_IDL or OVSDB_CHECK_IDL_TRACK invocation.
type idlAtCase struct {
	title string
	track bool     // OVSDB_CHECK_IDL_TRACK: test-ovsdb -c, C only
	pre   string   // a transaction run before the IDL starts, or ""
	cmds  []string // test-ovsdb idl's commands
	want  string   // expected output, sorted and uuid-filtered
}

// idlAtCases returns the cases of ovsdb-idl.at and how many of them set a
// condition.
func idlAtCases(t *testing.T, src string) ([]idlAtCase, int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(src, "tests", "ovsdb-idl.at"))
	if err != nil {
		t.Fatal(err)
	}
	cases, err := idlAtParse(string(b))
	if err != nil {
		t.Fatalf("ovsdb-idl.at: %v", err)
	}
	conds := 0
	for _, c := range cases {
		for _, cmd := range c.cmds {
			if strings.HasPrefix(cmd, "condition ") {
				conds++
				break
			}
		}
	}
	return cases, conds
}

// idlAtNotCompared says why a case's outputs are not compared, or "".
// After a reconnection Debian's standalone server answers
// monitor_cond_since with found=false and resends every row, which the
// change-tracking IDL reports as inserted again; govs answers found=true
// with only the changes missed, as OVS's clustered servers do, and the IDL
// reports nothing new. A transaction sent without waiting ("+") right after
// another may reach the IDL in the same run or the next, and the tracked
// changes it prints differ (OVS's suite relies on an idle machine).
func idlAtNotCompared(c idlAtCase) string {
	if !c.track {
		return ""
	}
	for i, cmd := range c.cmds {
		if cmd == "reconnect" {
			return "change tracking across a reconnection (monitor_cond_since found=true)"
		}
		if i > 0 && strings.HasPrefix(cmd, "+[") && strings.HasPrefix(c.cmds[i-1], "[") {
			return "change tracking of two transactions sent back to back (timing)"
		}
	}
	return ""
}

// idlAtParse extracts the OVSDB_CHECK_IDL and OVSDB_CHECK_IDL_TRACK
// invocations of an autotest file: m4 macro calls whose arguments are
// [quoted] and hold shell words.
func idlAtParse(text string) ([]idlAtCase, error) {
	var cases []idlAtCase
	for _, macro := range []string{"OVSDB_CHECK_IDL", "OVSDB_CHECK_IDL_TRACK"} {
		rest := text
		for {
			i := strings.Index(rest, "\n"+macro+"(")
			if i < 0 {
				break
			}
			rest = rest[i+len(macro)+2:]
			args, err := m4Args(rest)
			if err != nil {
				return nil, fmt.Errorf("%s at %q: %v", macro, firstLine(rest), err)
			}
			if len(args) < 4 {
				return nil, fmt.Errorf("%s at %q: %d arguments, want 4", macro, firstLine(rest), len(args))
			}
			if len(args) > 5 && args[5] != "" {
				// A sixth argument filters the output: not modelled.
				continue
			}
			pre, err := shellWords(args[1])
			if err != nil || len(pre) > 1 {
				return nil, fmt.Errorf("%s %q: transaction %q: %v", macro, args[0], args[1], err)
			}
			cmds, err := shellWords(args[2])
			if err != nil {
				return nil, fmt.Errorf("%s %q: commands: %v", macro, args[0], err)
			}
			c := idlAtCase{title: args[0], track: macro == "OVSDB_CHECK_IDL_TRACK", cmds: append([]string{}, cmds...), want: args[3]}
			if len(pre) == 1 {
				c.pre = pre[0]
			}
			cases = append(cases, c)
		}
	}
	return cases, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// m4Args splits the arguments of a macro call, s starting just after its
// "(", and removes their quotes as m4 would when the macro passes them on
// to AT_CHECK: [x] is x and [[x]] is x too (the second level is the one
// AT_CHECK's own argument quoting removes).
func m4Args(s string) ([]string, error) {
	var args []string
	i := 0
	for {
		for i < len(s) && strings.ContainsRune(" \t\n", rune(s[i])) {
			i++
		}
		if i >= len(s) {
			return nil, fmt.Errorf("unterminated call")
		}
		if s[i] == ')' {
			return args, nil
		}
		if s[i] != '[' {
			return nil, fmt.Errorf("unquoted argument at %q", firstLine(s[i:]))
		}
		end, ok := m4Close(s, i)
		if !ok {
			return nil, fmt.Errorf("unbalanced quotes")
		}
		a := s[i+1 : end]
		if len(a) >= 2 && a[0] == '[' {
			if e, ok := m4Close(a, 0); ok && e == len(a)-1 {
				a = a[1:e]
			}
		}
		args = append(args, a)
		i = end + 1
		for i < len(s) && strings.ContainsRune(" \t\n", rune(s[i])) {
			i++
		}
		if i < len(s) && s[i] == ',' {
			i++
		}
	}
}

// m4Close returns the index of the "]" that closes the "[" at s[open].
func m4Close(s string, open int) (int, bool) {
	depth := 0
	for j := open; j < len(s); j++ {
		switch s[j] {
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				return j, true
			}
		}
	}
	return 0, false
}

// shellWords splits the shell text of a macro argument: words in single
// quotes, or bare, separated by blanks and backslash-newlines.
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated quote")
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i++
			fallthrough
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '"' || c == '\\' || c == '$' || c == '`':
			return nil, fmt.Errorf("shell syntax %q not modelled", c)
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// idlAtUUIDRe is uuidfilt.py's: a uuid, but not one of all-f's first word.
var (
	idlAtUUIDRe = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)
	idlAtSetRe  = regexp.MustCompile(`\["set",\[(,?\["uuid","<\d+>"\])+\]\]`)
	idlAtIntRe  = regexp.MustCompile(`\d+`)
)

// idlAtFilter is what the .at file compares: the output lines sorted
// ("sort stdout | uuidfilt"), uuids numbered in order of appearance, and
// sets of numbered uuids sorted.
func idlAtFilter(out string) string {
	lines := strings.SplitAfter(out, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	sort.Strings(lines)
	ids := map[string]int{}
	for i, l := range lines {
		l = idlAtUUIDRe.ReplaceAllStringFunc(l, func(u string) string {
			if strings.HasPrefix(u, "ffffffff") {
				return u
			}
			n, ok := ids[u]
			if !ok {
				n = len(ids)
				ids[u] = n
			}
			return fmt.Sprintf("<%d>", n)
		})
		lines[i] = idlAtSetRe.ReplaceAllStringFunc(l, func(s string) string {
			var ns []int
			for _, d := range idlAtIntRe.FindAllString(s, -1) {
				var n int
				fmt.Sscan(d, &n)
				ns = append(ns, n)
			}
			sort.Ints(ns)
			var parts []string
			for _, n := range ns {
				parts = append(parts, fmt.Sprintf(`["uuid","<%d>"]`, n))
			}
			return `["set",[` + strings.Join(parts, ",") + `]]`
		})
	}
	return strings.Join(lines, "")
}

// idlAtServer starts a server of the given kind on a fresh database of
// schema, as ovsdb_start_idltest does. The cases share it: idlAtPrepare
// empties it before each.
func idlAtServer(t *testing.T, kind, schema string) *ovsdbProc {
	t.Helper()
	ovsdbNeed(t, ovsdbDebianServer, ovsdbClient, ovsdbTool)
	dir := ovsdbKeptDir(t, "idlat-", kind+" server")
	p := &ovsdbProc{t: t, kind: kind, dir: dir, db: filepath.Join(dir, "db"),
		sock: filepath.Join(dir, "socket"), ctl: filepath.Join(dir, "ovsdb-server.ctl"),
		pidf: filepath.Join(dir, "ovsdb-server.pid"), log: filepath.Join(dir, "ovsdb-server.log")}
	if out, err := exec.Command(ovsdbTool, "create", p.db, schema).CombinedOutput(); err != nil {
		t.Fatalf("ovsdb-tool create: %v\n%s", err, out)
	}
	p.binary = ovsdbDebianServer
	if kind == "govs" {
		p.binary = ovsdbGovsServer(t)
	}
	p.args = []string{p.db, "-vconsole:warn", "--remote=punix:" + p.sock, "--pidfile=" + p.pidf,
		"--unixctl=" + p.ctl, "--log-file=" + p.log, "--detach", "--no-chdir"}
	p.start()
	t.Cleanup(p.stop)
	return p
}

// idlAtEmpty returns a transaction that deletes every row of schema's
// tables: a case then starts from an empty database, as on a fresh server
// (starting two servers per case would take most of the test's time).
func idlAtEmpty(t *testing.T, schema string) string {
	t.Helper()
	b, err := os.ReadFile(schema)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Name   string                     `json:"name"`
		Tables map[string]json.RawMessage `json:"tables"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", schema, err)
	}
	ops := []any{s.Name}
	for name := range s.Tables {
		ops = append(ops, map[string]any{"op": "delete", "table": name, "where": []any{}})
	}
	j, _ := json.Marshal(ops)
	return string(j)
}

// idlAtPrepare empties the server's database and runs the case's
// transaction, as OVSDB_CHECK_IDL does before it starts the IDL.
func idlAtPrepare(p *ovsdbProc, empty string, c idlAtCase) error {
	for _, txn := range []string{empty, c.pre} {
		if txn == "" {
			continue
		}
		// The case's own transaction may fail on purpose (the .at file
		// ignores its output); emptying may not.
		r := p.client("transact", "unix:"+p.sock, txn)
		if r.code != 0 || (txn == empty && strings.Contains(r.stdout, `"error"`)) {
			return fmt.Errorf("%s %q: ovsdb-client transact %s: exit %d: %s%s", p.kind, c.title, txn, r.code, r.stdout, r.stderr)
		}
	}
	return nil
}

// idlAtCompare checks the outputs of one case.
func idlAtCompare(t *testing.T, lang string, c idlAtCase, out map[string]string) {
	t.Helper()
	if why := idlAtNotCompared(c); why != "" {
		t.Logf("%s %q: outputs not compared: %s", lang, c.title, why)
		return
	}
	deb, govs := idlAtFilter(out["debian"]), idlAtFilter(out["govs"])
	if deb != c.want {
		t.Errorf("%s %q: Debian's server does not give ovsdb-idl.at's output (the harness runs the case differently)\nwant:\n%s\ndebian:\n%s", lang, c.title, c.want, deb)
	}
	if govs != deb {
		t.Errorf("%s %q: govs differs from Debian's server\ncommands: %q\ndebian:\n%s\ngovs:\n%s", lang, c.title, c.cmds, deb, govs)
	}
}

// TestOvsdbIDLAtC runs ovsdb-idl.at's cases with OVS's C IDL (test-ovsdb
// idl, -c for the change-tracking cases).
func TestOvsdbIDLAtC(t *testing.T) {
	src := idlAtSource(t)
	bin := filepath.Join(src, "tests", "test-ovsdb")
	schema := filepath.Join(src, "tests", "idltest.ovsschema")
	cases, conds := idlAtCases(t, src)
	if conds < 10 {
		t.Fatalf("only %d conditional cases found in ovsdb-idl.at", conds)
	}
	empty := idlAtEmpty(t, schema)
	servers := map[string]*ovsdbProc{}
	for _, kind := range []string{"debian", "govs"} {
		servers[kind] = idlAtServer(t, kind, schema)
	}
	for _, c := range cases {
		// Both servers at once: the case takes half the time.
		var mu sync.Mutex // guards out
		out := map[string]string{}
		var wg sync.WaitGroup
		for kind, p := range servers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := idlAtPrepare(p, empty, c); err != nil {
					t.Error(err)
					return
				}
				args := []string{"-vconsole:off", "-t20"}
				if c.track {
					args = append(args, "-c")
				}
				args = append(args, "idl", "unix:"+p.sock)
				r := ovsdbRun(bin, append(args, c.cmds...)...)
				if r.code != 0 {
					t.Errorf("%s %q: test-ovsdb: exit %d\n%s\n%s", kind, c.title, r.code, r.stdout, r.stderr)
				}
				mu.Lock()
				out[kind] = r.stdout
				mu.Unlock()
			}()
		}
		wg.Wait()
		idlAtCompare(t, "C IDL", c, out)
	}
	t.Logf("%d cases of ovsdb-idl.at, %d of them conditional", len(cases), conds)
}

// idlAtPyDriver runs test-ovsdb.py's "idl" command for several cases in
// one interpreter (importing the ovs package is most of a run's time):
// argv[1] is test-ovsdb.py, argv[2] a JSON list of runs, each with the
// transactions that prepare the database (by ovsdb-client, as the .at file
// does), do_idl's arguments and the file its output goes to.
const idlAtPyDriver = `
import importlib.util, json, subprocess, sys, traceback
spec = importlib.util.spec_from_file_location("test_ovsdb", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
stdout = sys.stdout
for c in json.load(open(sys.argv[2])):
    for txn in c["prepare"]:
        subprocess.run(["ovsdb-client", "transact", c["remote"], txn], check=True, stdout=subprocess.DEVNULL)
    sys.stdout = open(c["out"], "w")
    try:
        m.do_idl(c["schema"], c["remote"], *c["cmds"])
    except BaseException:
        traceback.print_exc(file=sys.stdout)
    sys.stdout.close()
    sys.stdout = stdout
`

// TestOvsdbIDLAtPython runs ovsdb-idl.at's cases that the suite runs for
// Python too (OVSDB_CHECK_IDL's) with test-ovsdb.py.
func TestOvsdbIDLAtPython(t *testing.T) {
	ovsdbNeed(t, ovsdbPython)
	src := idlAtSource(t)
	schema := filepath.Join(src, "tests", "idltest.ovsschema")
	var cases []idlAtCase
	all, _ := idlAtCases(t, src)
	conds := 0
	for _, c := range all {
		if !c.track {
			cases = append(cases, c)
			if strings.Contains(strings.Join(c.cmds, "\n"), "condition ") {
				conds++
			}
		}
	}
	if conds < 5 {
		t.Fatalf("only %d conditional Python cases found in ovsdb-idl.at", conds)
	}
	type run struct {
		Prepare []string `json:"prepare"`
		Schema  string   `json:"schema"`
		Remote  string   `json:"remote"`
		Cmds    []string `json:"cmds"`
		Out     string   `json:"out"`
	}
	empty := idlAtEmpty(t, schema)
	dir := ovsdbKeptDir(t, "idlatpy-", "python driver")
	driver := filepath.Join(dir, "driver.py")
	if err := os.WriteFile(driver, []byte(idlAtPyDriver), 0o644); err != nil {
		t.Fatal(err)
	}
	// One driver per server, both at once.
	cmds := map[string]*exec.Cmd{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, kind := range []string{"debian", "govs"} {
		p := idlAtServer(t, kind, schema)
		var runs []run
		for i, c := range cases {
			prep := []string{empty}
			if c.pre != "" {
				prep = append(prep, c.pre)
			}
			runs = append(runs, run{prep, schema, "unix:" + p.sock, c.cmds, filepath.Join(dir, fmt.Sprintf("%d-%s.out", i, kind))})
		}
		j, _ := json.Marshal(runs)
		jf := filepath.Join(dir, kind+".json")
		if err := os.WriteFile(jf, j, 0o644); err != nil {
			t.Fatal(err)
		}
		cmds[kind] = exec.CommandContext(ctx, ovsdbPython, driver, filepath.Join(src, "tests", "test-ovsdb.py"), jf)
	}
	var wg sync.WaitGroup
	for kind, cmd := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := ovsdbRunCmd(cmd); r.code != 0 {
				t.Errorf("%s: python driver: exit %d\n%s\n%s", kind, r.code, r.stdout, r.stderr)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for i, c := range cases {
		out := map[string]string{}
		for _, kind := range []string{"debian", "govs"} {
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d-%s.out", i, kind)))
			if err != nil {
				t.Fatal(err)
			}
			out[kind] = string(b)
		}
		idlAtCompare(t, "Python IDL", c, out)
	}
	t.Logf("%d cases of ovsdb-idl.at, %d of them conditional", len(cases), conds)
}

// FuzzIdlAtParse feeds the .at parser arbitrary text: it may refuse it but
// must not panic, and single-quoted words come back as they were.
func FuzzIdlAtParse(f *testing.F) {
	f.Add("\nOVSDB_CHECK_IDL([t],\n  [['[\"idltest\"]']],\n  [['condition simple []' \\\n    'condition simple [true]']],\n  [[000: empty\n]])\n")
	f.Add("\nOVSDB_CHECK_IDL_TRACK([t], [], [['a' b]], [[x]], [], [sed s/x/y/])\n")
	f.Add("\nOVSDB_CHECK_IDL([[unbalanced]")
	f.Fuzz(func(t *testing.T, text string) {
		idlAtParse(text)
		idlAtFilter(text)
		if strings.ContainsRune(text, '\'') {
			return
		}
		words, err := shellWords("'" + text + "' \\\n  '" + text + "'")
		if err != nil || len(words) != 2 || words[0] != text || words[1] != text {
			t.Fatalf("shellWords of %q quoted twice: %q, %v", text, words, err)
		}
	})
}
