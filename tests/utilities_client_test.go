package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestUtilitiesClientDifferential runs the same ovsdb-client commands with
// Debian's tool and govs' own against the same server, Debian's and govs',
// and requires the same stdout, stderr and exit status. Where OVS prints in
// hash order (list-tables, list-columns, a whole dump's tables) the lines
// are compared sorted.
func TestUtilitiesClientDifferential(t *testing.T) {
	ours := govsUtility(t, "ovsdb-client")
	type step struct {
		args   []string
		sorted bool
	}
	sel := func(table, col string) string {
		return fmt.Sprintf(`["Open_vSwitch",{"op":"select","table":"%s","where":[],"columns":["%s"]}]`, table, col)
	}
	// A schema with one more column, to convert the database to.
	newSchema := filepath.Join(t.TempDir(), "new.ovsschema")
	var sch map[string]any
	data, err := os.ReadFile(ovsdbVSwitchSch)
	if err == nil {
		err = json.Unmarshal(data, &sch)
	}
	if err != nil {
		t.Fatal(err)
	}
	sch["version"] = "99.0.0"
	sch["tables"].(map[string]any)["Bridge"].(map[string]any)["columns"].(map[string]any)["zz"] = map[string]any{"type": "string"}
	data, _ = json.Marshal(sch)
	if err := os.WriteFile(newSchema, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"debian", "govs"} {
		p := ovsdbStart(t, ovsdbOpts{kind: kind})
		p.mustVsctl("add-br", "br0", "--", "add-port", "br0", "p1", "--", "set", "Port", "p1", "tag=5", "trunks=1,2",
			"--", "set", "Interface", "p1", "options:remote_ip=\"1.2.3.4\"", "--", "set-manager", "ptcp:1:127.0.0.1")
		db := "unix:" + p.sock
		steps := []step{
			{[]string{"list-dbs", db}, false},
			{[]string{"get-schema", db}, false},
			{[]string{"get-schema", db, "_Server"}, false},
			{[]string{"get-schema-version", db}, false},
			{[]string{"get-schema-version", db, "Open_vSwitch"}, false},
			{[]string{"list-tables", db}, true},
			{[]string{"list-columns", db, "Open_vSwitch", "Port"}, true},
			{[]string{"list-columns", db, "Bridge"}, true},
			{[]string{"list-columns", db}, true},
			{[]string{"list-columns", db, "Open_vSwitch", "Nope"}, false},
			{[]string{"transact", db, sel("Bridge", "name")}, false},
			{[]string{"transact", db, `["Open_vSwitch",{"op":"bogus"}]`}, false},
			{[]string{"query", db, sel("Manager", "target")}, false},
			{[]string{"dump", db, "Open_vSwitch", "Manager", "target", "inactivity_probe"}, false},
			{[]string{"dump", db, "Port", "name", "tag", "trunks"}, false},
			{[]string{"--format=list", "dump", db, "Port", "name", "tag", "trunks"}, false},
			{[]string{"--format=csv", "dump", db, "Interface", "name", "options"}, false},
			{[]string{"--format=json", "dump", db, "Interface", "name", "options"}, false},
			{[]string{"--format=json", "--pretty", "dump", db, "Port", "name", "trunks"}, false},
			{[]string{"--format=html", "dump", db, "Interface", "name", "options"}, false},
			{[]string{"--bare", "dump", db, "Port", "name", "trunks"}, false},
			{[]string{"--data=json", "dump", db, "Port", "name", "tag", "trunks"}, false},
			{[]string{"--no-headings", "dump", db, "Bridge", "name"}, false},
			{[]string{"dump", db, "Open_vSwitch"}, true},
			{[]string{"dump", db, "_Server", "Database", "name", "model"}, false},
			{[]string{"dump", db, "Nope"}, false},
			{[]string{"dump", db, "Bridge", "nope"}, false},
			{[]string{"list-tables", db, "Open_vSwitch", "extra"}, false},
			{[]string{"monitor", db, "Nope"}, false},
			{[]string{"monitor", db, "Bridge", "name,nope"}, false},
			{[]string{"monitor", db, "Bridge", "name", "name"}, false},
			{[]string{"monitor-cond", db, "[]", "Nope"}, false},
			{[]string{"monitor-cond", db, `[["nope","==",1]]`, "Bridge"}, false},
			{[]string{"bogus", db}, false},
			{[]string{"needs-conversion", db, newSchema}, false},
			{[]string{"needs-conversion", db, "/nonexistent.ovsschema"}, false},
			{[]string{"wait", db, "Open_vSwitch", "added"}, false},
			{[]string{"wait", db, "Open_vSwitch", "connected"}, false},
			{[]string{"wait", db, "Nope", "removed"}, false},
			{[]string{"wait", db, "Open_vSwitch", "bogus"}, false},
			{[]string{"wait", db, "Open_vSwitch"}, false},
			// Debian's converts, then ours finds nothing to do.
			{[]string{"convert", db, newSchema}, false},
			{[]string{"needs-conversion", db, newSchema}, false},
		}
		for _, st := range steps {
			var res [2]ovsdbResult
			for j, tool := range []string{ovsdbClient, ours} {
				r := ovsdbRun(tool, st.args...)
				r.stdout = ovsdbNormalize(r.stdout, false)
				r.stderr = ovsdbNormalizeLog(r.stderr)
				if st.sorted {
					lines := strings.Split(r.stdout, "\n")
					sort.Strings(lines)
					r.stdout = strings.Join(lines, "\n")
				}
				res[j] = r
			}
			if res[0] != res[1] {
				t.Errorf("%s server: ovsdb-client %s differs\ndebian's: exit %d\nstdout:\n%s\nstderr:\n%s\ngovs': exit %d\nstdout:\n%s\nstderr:\n%s",
					kind, strings.Join(st.args, " "), res[0].code, res[0].stdout, res[0].stderr, res[1].code, res[1].stdout, res[1].stderr)
			}
		}
	}
}
