package main

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/govs/govs/ovsdb/db"
	"github.com/govs/govs/utilities/internal/ovsdbc"
)

// row is one row of the working copy a run of commands edits.
type row struct {
	t    *db.Table
	uuid db.UUID
	orig []db.Datum // as the server has it; nil for an inserted row
	cur  []db.Datum
	// inserted rows are sent as insert operations, in order.
	inserted bool
	deleted  bool
	// whole marks the columns written whole; muts holds the mutations of
	// columns changed only by add and remove.
	whole map[int]bool
	muts  map[int][]mutation
	// verified marks the columns the transaction requires unchanged.
	verified map[int]bool
}

// mutation is one insert or delete mutation of a set or map column.
type mutation struct {
	op    string
	d     db.Datum
	isMap bool // d is a map (else a set, of keys for a map column)
}

func (r *row) get(c *db.Column) db.Datum {
	if c.Index < 0 {
		return db.Datum{Keys: []db.Atom{r.uuid}}
	}
	return r.cur[c.Index]
}

func (r *row) col(name string) *db.Column { return r.t.ByName[name] }

// str returns a string column's single value, or "".
func (r *row) str(name string) string {
	d := r.get(r.col(name))
	if d.Len() == 0 {
		return ""
	}
	s, _ := d.Keys[0].(string)
	return s
}

// integer returns an optional integer column's value.
func (r *row) integer(name string) (int64, bool) {
	d := r.get(r.col(name))
	if d.Len() == 0 {
		return 0, false
	}
	i, ok := d.Keys[0].(int64)
	return i, ok
}

func (r *row) boolean(name string) bool {
	d := r.get(r.col(name))
	if d.Len() == 0 {
		return false
	}
	b, _ := d.Keys[0].(bool)
	return b
}

// txn is a working copy of the database and the changes made to it.
type txn struct {
	schema   *db.Schema
	rows     map[string]map[db.UUID]*row
	inserted []*row
	deleted  []*row
	// verified lists the rows whose columns (r.verified) the commands
	// read and rely on, in the order first verified; the transaction
	// waits for them to be as read, as ovsdb_idl_txn_verify does.
	verified []*row
}

func newTxn(rep *ovsdbc.Replica) *txn {
	t := &txn{schema: rep.Schema, rows: map[string]map[db.UUID]*row{}}
	for name, rows := range rep.Rows {
		m := make(map[db.UUID]*row, len(rows))
		for u, cols := range rows {
			cur := make([]db.Datum, len(cols))
			copy(cur, cols)
			m[u] = &row{t: rep.Schema.Tables[name], uuid: u, orig: cols, cur: cur}
		}
		t.rows[name] = m
	}
	return t
}

// list returns a table's rows in UUID order.
func (t *txn) list(table string) []*row {
	m := t.rows[table]
	out := make([]*row, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].uuid[:], out[j].uuid[:]) < 0 })
	return out
}

func (t *txn) byUUID(table string, u db.UUID) *row { return t.rows[table][u] }

// refs returns the rows a reference column of r points to.
func (t *txn) refs(r *row, col string) []*row {
	c := r.col(col)
	d := r.get(c)
	var out []*row
	for _, k := range d.Keys {
		if u, ok := k.(db.UUID); ok {
			if x := t.byUUID(c.Type.Key.RefTable, u); x != nil {
				out = append(out, x)
			}
		}
	}
	return out
}

func (t *txn) write(r *row, col string, d db.Datum) { t.writeColumn(r, r.col(col), d) }

func (t *txn) writeColumn(r *row, c *db.Column, d db.Datum) {
	if r.whole == nil {
		r.whole = map[int]bool{}
	}
	r.whole[c.Index] = true
	delete(r.muts, c.Index)
	r.cur[c.Index] = d
}

// mutate changes a column by mutations, result being the value they give.
// A new row or a column already written whole just gets the value.
func (t *txn) mutate(r *row, c *db.Column, muts []mutation, result db.Datum) {
	if r.inserted || r.whole[c.Index] {
		t.writeColumn(r, c, result)
		return
	}
	if r.muts == nil {
		r.muts = map[int][]mutation{}
	}
	r.muts[c.Index] = append(r.muts[c.Index], muts...)
	r.cur[c.Index] = result
}

// verify requires that column c of r still be as read when the transaction
// commits; if another client changed it, the commit fails with "timed out"
// and the commands run again on the new contents.
func (t *txn) verify(r *row, c *db.Column) {
	if r.inserted || c.Index < 0 {
		return
	}
	if r.verified == nil {
		r.verified = map[int]bool{}
		t.verified = append(t.verified, r)
	}
	r.verified[c.Index] = true
}

// setKey is set_column with a key: a mutation that replaces one key of a
// map column, so that clients setting other keys do not conflict. A column
// this transaction already changed is verified and written whole instead,
// as OVS does.
func (t *txn) setKey(r *row, c *db.Column, k, v db.Atom) {
	old := r.get(c)
	d := db.Datum{Keys: []db.Atom{k}, Vals: []db.Atom{v}}
	for i := range old.Keys {
		if db.CompareAtoms(old.Keys[i], k) != 0 {
			d.Keys = append(d.Keys, old.Keys[i])
			d.Vals = append(d.Vals, old.Vals[i])
		}
	}
	d.SortUnique()
	if r.inserted || r.whole[c.Index] || len(r.muts[c.Index]) > 0 {
		t.verify(r, c)
		t.writeColumn(r, c, d)
		return
	}
	var muts []mutation
	if old.Find(k) >= 0 {
		muts = append(muts, mutation{"delete", db.Datum{Keys: []db.Atom{k}}, false})
	}
	muts = append(muts, mutation{"insert", db.Datum{Keys: []db.Atom{k}, Vals: []db.Atom{v}}, true})
	t.mutate(r, c, muts, d)
}

func (t *txn) setString(r *row, col, v string) {
	t.write(r, col, db.Datum{Keys: []db.Atom{v}})
}

func (t *txn) setRefs(r *row, col string, rows []*row) {
	d := db.Datum{Keys: make([]db.Atom, len(rows))}
	for i, x := range rows {
		d.Keys[i] = x.uuid
	}
	d.SortUnique()
	t.write(r, col, d)
}

func (t *txn) clear(r *row, col string) {
	c := r.col(col)
	t.writeColumn(r, c, db.DefaultDatum(&c.Type))
}

// insert adds a row with every column at its default; uuid may be preset
// (a --id symbol's).
func (t *txn) insert(table string, uuid *db.UUID) *row {
	tb := t.schema.Tables[table]
	r := &row{t: tb, inserted: true, cur: make([]db.Datum, len(tb.Columns))}
	if uuid != nil {
		r.uuid = *uuid
	} else {
		r.uuid = db.NewUUID()
	}
	for i, c := range tb.Columns {
		r.cur[i] = db.DefaultDatum(&c.Type)
	}
	t.rows[table][r.uuid] = r
	t.inserted = append(t.inserted, r)
	return r
}

func (t *txn) delete(r *row) {
	if r.deleted {
		return
	}
	r.deleted = true
	delete(t.rows[r.t.Name], r.uuid)
	t.deleted = append(t.deleted, r)
}

// namedUUID is the uuid-name an inserted row is sent with.
func namedUUID(u db.UUID) string { return "row" + strings.ReplaceAll(u.String(), "-", "_") }

// ops turns the changes into transact operations: waits for the verified
// columns (the first nWaits operations), inserts, updates of the changed
// columns, deletes of root rows (the server collects the others).
func (t *txn) ops() (ops []json.RawMessage, nWaits int, changed bool) {
	for _, r := range t.verified {
		var cols, vals bytes.Buffer
		for i, c := range r.t.Columns {
			if !r.verified[i] {
				continue
			}
			if cols.Len() > 0 {
				cols.WriteByte(',')
				vals.WriteByte(',')
			}
			cols.WriteString(quote(c.Name))
			vals.WriteString(quote(c.Name) + ":")
			vals.Write(appendDatum(nil, c, r.orig[i], nil))
		}
		ops = append(ops, json.RawMessage(`{"op":"wait","table":`+quote(r.t.Name)+`,"timeout":0,"where":`+whereUUID(r.uuid)+
			`,"until":"==","columns":[`+cols.String()+`],"rows":[{`+vals.String()+`}]}`))
	}
	nWaits = len(ops)
	newRows := map[db.UUID]bool{}
	for _, r := range t.inserted {
		if !r.deleted {
			newRows[r.uuid] = true
		}
	}
	for _, r := range t.inserted {
		if r.deleted {
			continue
		}
		row, _ := columnsJSON(r, newRows, func(i int, c *db.Column) bool { return !db.IsDefault(&c.Type, r.cur[i]) })
		ops = append(ops, json.RawMessage(`{"op":"insert","table":`+quote(r.t.Name)+`,"uuid-name":`+quote(namedUUID(r.uuid))+`,"row":{`+row+`}}`))
		changed = true
	}
	for _, name := range t.schema.TableNames() {
		for _, r := range t.list(name) {
			if r.inserted {
				continue
			}
			row, n := columnsJSON(r, newRows, func(i int, _ *db.Column) bool { return r.whole[i] && !r.cur[i].Equal(r.orig[i]) })
			if n > 0 {
				ops = append(ops, json.RawMessage(`{"op":"update","table":`+quote(name)+`,"where":`+whereUUID(r.uuid)+`,"row":{`+row+`}}`))
				changed = true
			}
			var m bytes.Buffer
			for i, c := range r.t.Columns {
				for _, mu := range r.muts[i] {
					if m.Len() > 0 {
						m.WriteByte(',')
					}
					m.WriteString(`[` + quote(c.Name) + `,` + quote(mu.op) + `,`)
					mc := *c
					if !mu.isMap {
						mc.Type = db.ColumnType{Key: c.Type.Key, Min: 0, Max: db.Unlimited}
					}
					m.Write(appendMutationArg(&mc, mu.d, newRows))
					m.WriteByte(']')
				}
			}
			if m.Len() > 0 {
				ops = append(ops, json.RawMessage(`{"op":"mutate","table":`+quote(name)+`,"where":`+whereUUID(r.uuid)+`,"mutations":[`+m.String()+`]}`))
				changed = true
			}
		}
	}
	for _, r := range t.deleted {
		if r.inserted {
			continue
		}
		changed = true
		if r.t.IsRoot {
			ops = append(ops, json.RawMessage(`{"op":"delete","table":`+quote(r.t.Name)+`,"where":`+whereUUID(r.uuid)+`}`))
		}
	}
	return ops, nWaits, changed
}

func whereUUID(u db.UUID) string { return `[["_uuid","==",["uuid","` + u.String() + `"]]]` }

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// appendDatum encodes d, naming the rows this transaction inserts.
func appendDatum(b []byte, c *db.Column, d db.Datum, newRows map[db.UUID]bool) []byte {
	return db.AppendDatumJSONWith(b, d, c.Type.IsMap(), func(b []byte, a db.Atom) []byte {
		if u, ok := a.(db.UUID); ok && newRows[u] {
			return append(b, `["named-uuid",`+quote(namedUUID(u))+`]`...)
		}
		return db.AppendAtomJSON(b, a)
	})
}

// appendMutationArg encodes a mutation's argument: always a "set" (or
// "map") so that a one-element set is not sent as a bare atom's scalar.
func appendMutationArg(c *db.Column, d db.Datum, newRows map[db.UUID]bool) []byte {
	return appendDatum(nil, c, d, newRows)
}

// columnsJSON encodes the columns of r that want selects as the members of
// an operation's "row", and says how many there are.
func columnsJSON(r *row, newRows map[db.UUID]bool, want func(int, *db.Column) bool) (string, int) {
	var b bytes.Buffer
	n := 0
	for i, c := range r.t.Columns {
		if !want(i, c) {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(quote(c.Name) + ":")
		b.Write(appendDatum(nil, c, r.cur[i], newRows))
	}
	return b.String(), n
}
