package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	opsDateRe  = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}`)
	opsUUID8Re = regexp.MustCompile(`\b[0-9a-f]{8}\b`)
)

// TestOpsOvsdbToolDifferential runs one script of ovsdb-tool commands with
// Debian's ovsdb-tool in one directory and govs' in another and requires the
// same output and exit statuses (uuids, dates and the directory aside);
// then each tool reads the other's files.
func TestOpsOvsdbToolDifferential(t *testing.T) {
	ovsdbNeed(t, ovsdbTool, ovsdbVSwitchSch)
	ours := opsUtility(t, "ovsdb-tool")
	root, err := os.MkdirTemp("", "gvstool")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	sch := ovsdbVSwitchSch
	const (
		insOVS   = `["Open_vSwitch",{"op":"insert","table":"Open_vSwitch","row":{"ovs_version":"x"}}]`
		selOVS   = `["Open_vSwitch",{"op":"select","table":"Open_vSwitch","where":[],"columns":["ovs_version","bridges"]}]`
		insBr    = `["Open_vSwitch",{"op":"insert","table":"Bridge","row":{"name":"br0"},"uuid-name":"b"},{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["bridges","insert",["set",[["named-uuid","b"]]]]]}]`
		updBr    = `["Open_vSwitch",{"op":"update","table":"Bridge","where":[],"row":{"stp_enable":true}},{"op":"comment","comment":"stp on"}]`
		selBr    = `["Open_vSwitch",{"op":"select","table":"Bridge","where":[],"columns":["name","stp_enable"]}]`
		tooMany  = `["Open_vSwitch",{"op":"insert","table":"Open_vSwitch","row":{}}]`
		noDBName = `[{"op":"select","table":"Bridge","where":[]}]`
	)
	script := [][]string{
		{"create", "D/conf.db", sch},
		{"create", "D/conf.db", sch},
		{"db-version", "D/conf.db"}, {"db-cksum", "D/conf.db"}, {"db-name", "D/conf.db"},
		{"schema-version", sch}, {"schema-cksum", sch}, {"schema-name", sch},
		{"needs-conversion", "D/conf.db", sch},
		{"transact", "D/conf.db", insOVS},
		{"query", "D/conf.db", selOVS},
		{"query", "D/conf.db", tooMany},
		{"query", "D/conf.db", noDBName},
		{"transact", "D/conf.db", insBr},
		{"transact", "D/conf.db", updBr},
		{"query", "D/conf.db", selBr},
		{"show-log", "D/conf.db"},
		{"show-log", "-m", "D/conf.db"},
		{"compact", "D/conf.db"},
		{"show-log", "D/conf.db"},
		{"query", "D/conf.db", selBr},
		{"convert", "D/conf.db", sch, "D/out.db"},
		{"show-log", "D/out.db"},
		{"query", "D/out.db", selBr},
		{"convert", "D/conf.db", sch},
		{"show-log", "D/conf.db"},
		{"db-is-standalone", "D/conf.db"}, {"db-is-clustered", "D/conf.db"}, {"check-cluster", "D/conf.db"},
		{"db-version", "D/nonexistent.db"}, {"db-version", "D/garbage.db"}, {"show-log", "D/garbage.db"},
		{"db-version", "a", "b"}, {"bogus"}, {},
		{"schema-version", "D/nonexistent.ovsschema"},
	}
	dirs := map[string]string{"debian": filepath.Join(root, "d"), "govs": filepath.Join(root, "g")}
	bins := map[string]string{"debian": ovsdbTool, "govs": ours}
	for _, d := range dirs {
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "garbage.db"), []byte("garbage\n"), 0o644)
	}
	norm := func(s, dir string) string {
		s = strings.ReplaceAll(s, dir, "D")
		s = ovsdbUUIDRe.ReplaceAllString(s, "<uuid>")
		s = opsUUID8Re.ReplaceAllString(s, "<uuid8>")
		return opsDateRe.ReplaceAllString(s, "<date>")
	}
	for _, step := range script {
		var got [2]ovsdbResult
		for i, who := range []string{"debian", "govs"} {
			args := make([]string, len(step))
			for j, a := range step {
				args[j] = strings.ReplaceAll(a, "D/", dirs[who]+"/")
			}
			r := opsRun([]string{"OVS_DBDIR=" + dirs[who]}, bins[who], args...)
			r.stdout, r.stderr = norm(r.stdout, dirs[who]), norm(r.stderr, dirs[who])
			got[i] = r
		}
		if got[0] != got[1] {
			t.Errorf("ovsdb-tool %q:\ndebian: exit %d stdout %q stderr %q\ngovs:   exit %d stdout %q stderr %q",
				step, got[0].code, got[0].stdout, got[0].stderr, got[1].code, got[1].stdout, got[1].stderr)
		}
	}
	// Each reads the other's files.
	for who, dir := range dirs {
		for other, bin := range bins {
			if other == who {
				continue
			}
			for _, f := range []string{"conf.db", "out.db"} {
				r := opsRun(nil, bin, "query", filepath.Join(dir, f), selBr)
				if r.code != 0 || !strings.Contains(r.stdout, `"name":"br0","stp_enable":true`) {
					t.Errorf("%s's ovsdb-tool reading %s's %s: exit %d %q %q", other, who, f, r.code, r.stdout, r.stderr)
				}
			}
		}
	}
}
