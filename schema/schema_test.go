package schema

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

// TestSameAsOVS checks that our Open_vSwitch schema is the one Debian's OVS
// ships, table for table and column for column.
func TestSameAsOVS(t *testing.T) {
	const ovs = "/usr/share/openvswitch/vswitch.ovsschema"
	theirs, err := os.ReadFile(ovs)
	if err != nil {
		t.Fatalf("%v (install openvswitch-common; .ci/run does)", err)
	}
	var a, b map[string]any
	if err := json.Unmarshal(VSwitch, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(theirs, &b); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "version", "tables"} {
		if !reflect.DeepEqual(a[k], b[k]) {
			t.Errorf("schema member %q differs from %s", k, ovs)
		}
	}
}

func TestServerSchemaParses(t *testing.T) {
	var s struct {
		Name   string                     `json:"name"`
		Tables map[string]json.RawMessage `json:"tables"`
	}
	if err := json.Unmarshal(Server, &s); err != nil || s.Name != "_Server" || s.Tables["Database"] == nil {
		t.Fatalf("bad _Server schema: %v %+v", err, s)
	}
}
