package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOvsdbConvert compares online schema conversion (the "convert"
// method, ovsdb-client convert) on Debian's server and govs': rows keep
// the columns both schemas have, the new schema is served and in the file,
// a set_db_change_aware client's monitor is canceled, and a schema for
// another database is refused with the same error.
func TestOvsdbConvert(t *testing.T) {
	ovsdbNeed(t, ovsdbNBSchema)
	raw, err := os.ReadFile(ovsdbVSwitchSch)
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	json.Unmarshal(raw, &s)
	s["version"] = "8.99.0"
	bridge := s["tables"].(map[string]any)["Bridge"].(map[string]any)["columns"].(map[string]any)
	delete(bridge, "flood_vlans")
	bridge["newcol"] = map[string]any{"type": map[string]any{"key": "integer", "min": 0, "max": 1}}
	newSchema := filepath.Join(t.TempDir(), "new.ovsschema")
	b, _ := json.Marshal(s)
	os.WriteFile(newSchema, b, 0o644)
	nbRaw, _ := os.ReadFile(ovsdbNBSchema)

	var outs [2]string
	for i, kind := range []string{"debian", "govs"} {
		p := ovsdbStart(t, ovsdbOpts{kind: kind})
		p.mustVsctl("init", "--", "add-br", "br0", "--", "set", "bridge", "br0", "flood_vlans=1,2", "other_config:a=b")
		c := ovsdbDialRaw(t, p.sock)
		c.call("set_db_change_aware", []any{true}, 1)
		c.call("monitor_cond", []any{"Open_vSwitch", "m", map[string]any{"Bridge": []any{map[string]any{"columns": []string{"name"}}}}}, 2)
		var out strings.Builder
		r := p.client("convert", "unix:"+p.sock, newSchema)
		fmt.Fprintf(&out, "convert: %d %q %q\n", r.code, r.stdout, r.stderr)
		r = p.client("get-schema-version", "unix:"+p.sock, "Open_vSwitch")
		fmt.Fprintf(&out, "version: %s", r.stdout)
		r = p.client("dump", "unix:"+p.sock, "Open_vSwitch", "Bridge", "name", "other_config", "newcol")
		fmt.Fprintf(&out, "dump: %s", ovsdbNormalize(r.stdout, false))
		m := c.recv(vswTimeout)
		fmt.Fprintf(&out, "client: %v %v\n", m["method"], m["params"])
		reply := ovsdbDialRaw(t, p.sock).call("convert", []any{"Open_vSwitch", json.RawMessage(nbRaw)}, 3)
		fmt.Fprintf(&out, "mismatch: %v\n", reply["error"])
		p.mustVsctl("add-br", "br1")
		if kind == "govs" {
			p.stop()
			if r := ovsdbRun(ovsdbTool, "db-version", p.db); r.stdout != "8.99.0\n" {
				t.Errorf("file's schema version %q", r.stdout)
			}
			p.start()
			if got := p.mustVsctl("list-br"); got != "br0\nbr1\n" {
				t.Errorf("bridges after restart %q", got)
			}
		}
		outs[i] = out.String()
	}
	if outs[0] != outs[1] {
		t.Errorf("debian:\n%s\ngovs:\n%s", outs[0], outs[1])
	}
}
