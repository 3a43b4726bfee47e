package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
)

// ovsdbLogQuery selects what the log-size workload writes.
const ovsdbLogQuery = `["Open_vSwitch",{"op":"select","table":"Port","where":[],"columns":["name","external_ids"]},` +
	`{"op":"select","table":"Interface","where":[],"columns":["name","type","external_ids"]},` +
	`{"op":"select","table":"Bridge","where":[],"columns":["name","external_ids"]}]`

// ovsdbToolQuery runs Debian's "ovsdb-tool query" on a database file and
// returns each table's rows, sorted, uuids aside.
func ovsdbToolQuery(t *testing.T, file string) string {
	t.Helper()
	r := ovsdbRun(ovsdbTool, "query", file, ovsdbLogQuery)
	if r.code != 0 {
		t.Fatalf("ovsdb-tool query %s: %s", file, r.stderr)
	}
	var res []struct {
		Rows []json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("ovsdb-tool query %s: %v: %s", file, err, r.stdout)
	}
	var out []string
	for _, tbl := range res {
		var rows []string
		for _, row := range tbl.Rows {
			rows = append(rows, string(row))
		}
		sort.Strings(rows)
		out = append(out, fmt.Sprint(rows))
	}
	return ovsdbNormalize(fmt.Sprint(out), false)
}

// TestOvsdbLogDiffRecords runs the same ovs-vsctl workload on Debian's
// server and govs' (a bridge whose ports set grows to 60 and shrinks,
// growing maps) and checks that govs' log, written as "_is_diff" records,
// is no more than 1.2 times Debian's, reads back the same in Debian's
// ovsdb-tool, Debian's ovsdb-server and govs' own.
func TestOvsdbLogDiffRecords(t *testing.T) {
	var size [2]int64
	var query [2]string
	var servers [2]*ovsdbProc
	// The two servers run the workload at once (nearly 200 ovs-vsctl
	// runs): it is the same either way, and takes half the time.
	var errs [2]error
	var wg sync.WaitGroup
	for i, kind := range []string{"debian", "govs"} {
		p := ovsdbStart(t, ovsdbOpts{kind: kind})
		servers[i] = p
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = ovsdbLogWorkload(p)
		}()
	}
	wg.Wait()
	for i, p := range servers {
		if errs[i] != nil {
			t.Fatalf("%s: %v", p.kind, errs[i])
		}
		p.stop()
		st, err := os.Stat(p.db)
		if err != nil {
			t.Fatal(err)
		}
		size[i] = st.Size()
		query[i] = ovsdbToolQuery(t, p.db)
	}
	t.Logf("log file after the workload: Debian %d bytes, govs %d bytes (%.2fx)", size[0], size[1], float64(size[1])/float64(size[0]))
	if float64(size[1]) > 1.2*float64(size[0]) {
		t.Errorf("govs' log is %d bytes, more than 1.2 times Debian's %d", size[1], size[0])
	}
	if query[0] != query[1] {
		t.Fatalf("ovsdb-tool query of govs' file differs from Debian's:\ndebian: %s\ngovs:   %s", query[0], query[1])
	}
	if r := ovsdbRun(ovsdbTool, "show-log", servers[1].db); r.code != 0 {
		t.Fatalf("ovsdb-tool show-log of govs' file: %s", r.stderr)
	}
	want := ovsdbNormalize(servers[0].vsctlListAfterRestart(t, "debian"), true)
	for _, kind := range []string{"govs", "debian"} {
		if got := ovsdbNormalize(servers[1].vsctlListAfterRestart(t, kind), true); got != want {
			t.Errorf("%s ovsdb-server reading govs' file: Port rows differ\n%s\nwant\n%s", kind, got, want)
		}
	}
}

// ovsdbLogWorkload runs TestOvsdbLogDiffRecords' transactions against p,
// one ovs-vsctl each, from any goroutine: it returns the first failure
// instead of failing the test.
func ovsdbLogWorkload(p *ovsdbProc) error {
	var cmds [][]string
	cmds = append(cmds, []string{"init"}, []string{"add-br", "br0"})
	for j := 1; j <= 60; j++ {
		n := fmt.Sprintf("p%d", j)
		cmds = append(cmds, []string{"add-port", "br0", n, "--", "set", "Interface", n, "type=internal", "external_ids:k=v" + n})
	}
	for j := 1; j <= 20; j++ {
		cmds = append(cmds, []string{"set", "Bridge", "br0", fmt.Sprintf("external_ids:x%d=%d", j, j)})
	}
	for j := 1; j <= 15; j++ {
		cmds = append(cmds, []string{"del-port", "br0", fmt.Sprintf("p%d", j)})
	}
	for _, c := range cmds {
		if r := p.vsctl(append([]string{"--no-wait"}, c...)...); r.code != 0 {
			return fmt.Errorf("ovs-vsctl %s: exit %d: %s", strings.Join(c, " "), r.code, r.stderr)
		}
	}
	return nil
}

// vsctlListAfterRestart starts a server of the given kind on p's database
// file and lists its ports.
func (p *ovsdbProc) vsctlListAfterRestart(t *testing.T, kind string) string {
	t.Helper()
	q := ovsdbStart(t, ovsdbOpts{kind: kind, dir: p.dir})
	defer q.stop()
	return q.mustVsctl("--columns=name,external_ids", "list", "Port")
}

// TestOvsdbLogNoColumnDiff runs a small workload on Debian's server and
// govs', both with --disable-file-column-diff: neither file then holds an
// "_is_diff" record, the files are of like size, and Debian's ovsdb-tool
// reads the same rows from both.
func TestOvsdbLogNoColumnDiff(t *testing.T) {
	var size [2]int64
	var query [2]string
	for i, kind := range []string{"debian", "govs"} {
		p := ovsdbStart(t, ovsdbOpts{kind: kind, extra: []string{"--disable-file-column-diff"}})
		p.mustVsctl("init")
		p.mustVsctl("add-br", "br0")
		for j := 1; j <= 10; j++ {
			n := fmt.Sprintf("p%d", j)
			p.mustVsctl("add-port", "br0", n, "--", "set", "Interface", n, "type=internal", "external_ids:k=v"+n)
		}
		for j := 1; j <= 5; j++ {
			p.mustVsctl("set", "Bridge", "br0", fmt.Sprintf("external_ids:x%d=%d", j, j))
		}
		for j := 1; j <= 3; j++ {
			p.mustVsctl("del-port", "br0", fmt.Sprintf("p%d", j))
		}
		p.stop()
		b, err := os.ReadFile(p.db)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), `"_is_diff"`); n != 0 {
			t.Errorf("%s: %d \"_is_diff\" records with --disable-file-column-diff", kind, n)
		}
		size[i] = int64(len(b))
		query[i] = ovsdbToolQuery(t, p.db)
	}
	t.Logf("log file: Debian %d bytes, govs %d bytes (%.2fx)", size[0], size[1], float64(size[1])/float64(size[0]))
	if float64(size[1]) > 1.2*float64(size[0]) || float64(size[1]) < 0.8*float64(size[0]) {
		t.Errorf("govs' log is %d bytes, Debian's %d", size[1], size[0])
	}
	if query[0] != query[1] {
		t.Errorf("ovsdb-tool query of govs' file differs from Debian's:\ndebian: %s\ngovs:   %s", query[0], query[1])
	}
}
