package main

import (
	"os"
	"strings"
	"testing"

	"github.com/govs/govs/ovsdb/db"
	"github.com/govs/govs/utilities/internal/ovsdbc"
)

// TestTxnVerifyAndSetKey checks the operations OVS 3.1's ovs-vsctl sends
// (as seen with Debian's ovs-vsctl -vjsonrpc:dbg): a key set by delete and
// insert mutations, waits for the verified columns first, and a column
// changed twice verified and written whole.
func TestTxnVerifyAndSetKey(t *testing.T) {
	raw, err := os.ReadFile("../../schema/vswitch.ovsschema")
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.ParseSchema(raw)
	if err != nil {
		t.Fatal(err)
	}
	u := db.NewUUID()
	rep := &ovsdbc.Replica{Schema: s, Rows: map[string]map[db.UUID][]db.Datum{}}
	for name := range s.Tables {
		rep.Rows[name] = map[db.UUID][]db.Datum{}
	}
	br := s.Tables["Bridge"]
	cols := make([]db.Datum, len(br.Columns))
	for i, c := range br.Columns {
		cols[i] = db.DefaultDatum(&c.Type)
	}
	ext := br.ByName["external_ids"]
	cols[ext.Index] = db.Datum{Keys: []db.Atom{"k"}, Vals: []db.Atom{"v"}}
	rep.Rows["Bridge"][u] = cols

	tx := newTxn(rep)
	r := tx.byUUID("Bridge", u)
	tx.setKey(r, ext, "new", "1")
	tx.setKey(r, br.ByName["other_config"], "k", "x")
	ops, nWaits, changed := tx.ops()
	if !changed || nWaits != 0 || len(ops) != 1 {
		t.Fatalf("set of new keys: changed %v, %d waits, ops %s", changed, nWaits, ops)
	}
	if got := string(ops[0]); !strings.Contains(got, `["external_ids","insert",["map",[["new","1"]]]]`) ||
		!strings.Contains(got, `["other_config","insert",["map",[["k","x"]]]]`) || strings.Contains(got, `"delete"`) {
		t.Fatalf("set of new keys: %s", got)
	}

	tx = newTxn(rep)
	r = tx.byUUID("Bridge", u)
	tx.setKey(r, ext, "k", "w")
	ops, _, _ = tx.ops()
	if got := string(ops[0]); !strings.Contains(got, `"mutations":[["external_ids","delete","k"],["external_ids","insert",["map",[["k","w"]]]]]`) {
		t.Fatalf("set of an existing key: %s", got)
	}

	tx = newTxn(rep)
	r = tx.byUUID("Bridge", u)
	tx.setKey(r, ext, "k", "w")
	tx.setKey(r, ext, "q", "1")
	tx.verify(r, br.ByName["ports"])
	ops, nWaits, _ = tx.ops()
	if nWaits != 1 || len(ops) != 2 {
		t.Fatalf("key set twice: %d waits, ops %s", nWaits, ops)
	}
	if got := string(ops[0]); !strings.Contains(got, `"op":"wait"`) || !strings.Contains(got, `"timeout":0`) ||
		!strings.Contains(got, `"until":"=="`) || !strings.Contains(got, `"columns":["external_ids","ports"]`) ||
		!strings.Contains(got, `"rows":[{"external_ids":["map",[["k","v"]]],"ports":["set",[]]}]`) {
		t.Fatalf("wait: %s", got)
	}
	if got := string(ops[1]); !strings.Contains(got, `"op":"update"`) || !strings.Contains(got, `"external_ids":["map",[["k","w"],["q","1"]]]`) {
		t.Fatalf("whole write: %s", got)
	}
}
