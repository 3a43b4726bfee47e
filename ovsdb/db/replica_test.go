package db

import (
	"encoding/json"
	"os"
	"testing"
)

func TestSchemaEqualIgnoresJSONForm(t *testing.T) {
	raw, err := os.ReadFile("/usr/share/openvswitch/vswitch.ovsschema")
	if err != nil {
		t.Fatalf("Debian's vswitch.ovsschema is required (openvswitch-common): %v", err)
	}
	a, err := ParseSchema(raw)
	if err != nil {
		t.Fatal(err)
	}
	// The same schema as another server's get_schema writes it.
	var v any
	json.Unmarshal(raw, &v)
	again, _ := json.Marshal(v)
	b, err := ParseSchema(again)
	if err != nil {
		t.Fatal(err)
	}
	if !SchemaEqual(a, b) {
		t.Error("a schema differs from itself re-encoded")
	}
	v.(map[string]any)["version"] = "0.0.1"
	other, _ := json.Marshal(v)
	c, _ := ParseSchema(other)
	if SchemaEqual(a, c) {
		t.Error("schemas of different versions are equal")
	}
}

func TestApplyReplica(t *testing.T) {
	s, err := ParseSchema([]byte(`{"name":"T","version":"1.0.0","tables":{"A":{"columns":{"n":{"type":"integer"},"s":{"type":{"key":"string","min":0,"max":"unlimited"}}},"isRoot":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	d := New(s)
	var commits int
	d.Subscribe(func(*Commit) { commits++ })
	u1, u2 := NewUUID().String(), NewUUID().String()
	tables := func(m map[string]string) map[string]map[string]json.RawMessage {
		rows := map[string]json.RawMessage{}
		for k, v := range m {
			rows[k] = json.RawMessage(v)
		}
		return map[string]map[string]json.RawMessage{"A": rows}
	}
	if _, err := d.ApplyReplica(tables(map[string]string{u1: `{"n":1,"s":["set",["a","b"]]}`, u2: `{"n":2}`}), nil); err != nil {
		t.Fatal(err)
	}
	// The initial contents of a new monitor: u2 is gone, u1 unchanged.
	c, err := d.ApplyReplica(tables(map[string]string{u1: `{"n":1,"s":["set",["a","b"]]}`}), []string{"A"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Tables["A"]) != 1 || commits != 2 {
		t.Fatalf("reset commit %v, %d commits", c.Tables, commits)
	}
	d.Read(func(snap Snapshot) {
		if rows := snap.Rows("A"); len(rows) != 1 {
			t.Errorf("%d rows after reset", len(rows))
		}
	})
	if _, err := d.ApplyReplica(tables(map[string]string{u1: `{"n":"x"}`}), nil); err == nil {
		t.Error("a bad value was applied")
	}
	if _, err := d.ApplyReplica(map[string]map[string]json.RawMessage{"B": {}}, nil); err == nil {
		t.Error("an unknown table was applied")
	}
}
