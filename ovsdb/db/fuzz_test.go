package db

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzTransact runs arbitrary operation lists against a populated database:
// the executor must never panic and must always produce a JSON array.
func FuzzTransact(f *testing.F) {
	for _, seed := range []string{
		initOVS,
		`[{"op":"insert","table":"Bridge","row":{"name":"b","ports":["set",[["named-uuid","p"]]]}},{"op":"insert","table":"Port","row":{"name":"p"},"uuid-name":"p"}]`,
		`[{"op":"mutate","table":"Open_vSwitch","where":[["_uuid","!=",["uuid","00000000-0000-0000-0000-000000000000"]]],"mutations":[["next_cfg","*=",3],["external_ids","delete",["set",["x"]]]]}]`,
		`[{"op":"select","table":"Interface","where":[["ofport",">=",1],["name","includes","x"]],"columns":["name","_version"]}]`,
		`[{"op":"wait","table":"Open_vSwitch","where":[],"columns":["next_cfg"],"until":"!=","rows":[{"next_cfg":0}],"timeout":0},{"op":"commit","durable":false},{"op":"comment","comment":"c"}]`,
		`[{"op":"delete","table":"Open_vSwitch","where":[true]},{"op":"abort"}]`,
		`[{"op":"update","table":"Open_vSwitch","where":[],"row":{"other_config":["map",[["a","b"],["a","c"]]]}}]`,
		`[1,"x",null,{"op":null},{"op":"insert"}]`,
		`[{"op":"select","table":"Interface","where":[],"columns":["name"],"sort":["ofport","name"]},{"op":"select","table":"Port","where":[],"sort":[1,"name","name"]}]`,
		`[{"op":"insert","table":"Interface","row":{"name":"x","ofport_request":0}},{"op":"insert","table":"Port","row":{"name":"y"},"uuid":"11111111-1111-1111-1111-111111111111"}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var ops []json.RawMessage
		if json.Unmarshal(data, &ops) != nil {
			return
		}
		d := newTestDB(t)
		tx(t, d, `[{"op":"insert","table":"Open_vSwitch","row":{"bridges":["named-uuid","b"]}},
			{"op":"insert","table":"Bridge","row":{"name":"br0","ports":["named-uuid","p"]},"uuid-name":"b"},
			{"op":"insert","table":"Port","row":{"name":"br0","interfaces":["named-uuid","i"]},"uuid-name":"p"},
			{"op":"insert","table":"Interface","row":{"name":"br0","ofport":1},"uuid-name":"i"}]`)
		res := d.Transact(ops, nil, time.Time{})
		if res.WaitUntil.IsZero() && !json.Valid(res.JSON) {
			t.Fatalf("invalid result %q", res.JSON)
		}
		checkCounts(t, d)
	})
}

// checkCounts fails t unless d's reference counts and indexes are what its
// rows give, counted again from scratch: what commits keep up to date
// incrementally (apply skips the rows whose references and keys did not
// change).
func checkCounts(t *testing.T, d *Database) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	refs := map[string]map[UUID]int{}
	for _, td := range d.tables {
		for _, r := range td.rows {
			td.forEachStrongRef(r, func(rt string, ru UUID) {
				if refs[rt] == nil {
					refs[rt] = map[UUID]int{}
				}
				refs[rt][ru]++
			})
		}
	}
	for name, td := range d.tables {
		for u, n := range td.refs {
			if n != refs[name][u] {
				t.Fatalf("%s row %s: %d references counted, %d made", name, u, n, refs[name][u])
			}
		}
		for u, n := range refs[name] {
			if td.refs[u] != n {
				t.Fatalf("%s row %s: %d references made, %d counted", name, u, n, td.refs[u])
			}
		}
		for i, cols := range td.schema.Indexes {
			if len(td.indexes[i]) != len(td.rows) {
				t.Fatalf("%s index %d: %d keys for %d rows", name, i, len(td.indexes[i]), len(td.rows))
			}
			for u, r := range td.rows {
				if owner := td.indexes[i][indexKey(cols, r)]; owner != u {
					t.Fatalf("%s index %d: row %s's key belongs to %s", name, i, u, owner)
				}
			}
		}
	}
}

func BenchmarkTransactMutate(b *testing.B) {
	d := newTestDB(b)
	tx(b, d, initOVS)
	ops := []json.RawMessage{
		json.RawMessage(`{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["external_ids","insert",["map",[["k","v"]]]],["next_cfg","+=",1]]}`),
		json.RawMessage(`{"op":"comment","comment":"ovs-vsctl set"}`),
	}
	b.ReportAllocs()
	for b.Loop() {
		d.Transact(ops, nil, time.Time{})
	}
}
