package db

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// RowChange is one row's change in a commit: Old is nil for an insert, New
// is nil for a delete.
type RowChange struct {
	Old, New *Row
}

// Commit is what one transaction changed, handed to commit hooks and
// subscribers in commit order.
type Commit struct {
	TxnID   UUID
	Tables  map[string]map[UUID]*RowChange
	Comment string
	Durable bool
	Date    time.Time
	// By is the LockChecker of the Transact call that made the commit
	// (nil for other commits), so that hooks and subscribers can tell
	// who committed; nil again once they have run.
	By LockChecker
}

type tableData struct {
	schema *Table
	rows   map[UUID]*Row
	// refs counts the strong references to each row from other rows,
	// for referential integrity and garbage collection.
	refs map[UUID]int
	// indexes maps each index's encoded key to the row holding it.
	indexes []map[string]UUID
}

// Database is one database: its schema, its committed rows, and the hooks
// that see each commit. It is safe for concurrent use; transactions are
// serialized.
type Database struct {
	schema *Schema
	// weakTables are the tables with weak references, in name order:
	// those whose rows a commit may have to drop references from. Set
	// by New.
	weakTables []*tableData

	mu       sync.Mutex // guards everything below
	tables   map[string]*tableData
	hooks    []func(*Commit) error
	subs     []func(*Commit)
	lastTxn  UUID
	gen      uint64 // changes at every change of the rows (apply)
	nCommits uint64
}

// New returns an empty database with schema s.
func New(s *Schema) *Database {
	d := &Database{schema: s, tables: map[string]*tableData{}}
	for name, t := range s.Tables {
		td := &tableData{schema: t, rows: map[UUID]*Row{}, refs: map[UUID]int{}}
		for range t.Indexes {
			td.indexes = append(td.indexes, map[string]UUID{})
		}
		d.tables[name] = td
	}
	for _, name := range s.TableNames() {
		if td := d.tables[name]; len(td.schema.weak) > 0 {
			d.weakTables = append(d.weakTables, td)
		}
	}
	return d
}

// Schema returns the database's schema.
func (d *Database) Schema() *Schema { return d.schema }

// Name returns the database's name.
func (d *Database) Name() string { return d.schema.Name }

// OnCommit registers a hook called with each commit, in commit order, while
// the database is locked and before the commit is applied; an error aborts
// the transaction (with an "I/O error"). Storage uses it.
func (d *Database) OnCommit(fn func(*Commit) error) {
	d.mu.Lock()
	d.hooks = append(d.hooks, fn)
	d.mu.Unlock()
}

// Subscribe registers fn to be called with each applied commit, in commit
// order, while the database is locked: fn must not block or call back into
// the database. Monitors use it.
func (d *Database) Subscribe(fn func(*Commit)) {
	d.mu.Lock()
	d.subs = append(d.subs, fn)
	d.mu.Unlock()
}

// Snapshot gives read access to committed rows inside Read.
type Snapshot struct{ d *Database }

// Rows returns the committed rows of a table. The map and rows must not be
// modified or retained after Read returns (rows themselves are immutable and
// may be retained).
func (s Snapshot) Rows(table string) map[UUID]*Row {
	if t := s.d.tables[table]; t != nil {
		return t.rows
	}
	return nil
}

// Generation returns a number that changes whenever the rows change, so
// that something derived from the rows can be kept until they do.
func (s Snapshot) Generation() uint64 { return s.d.gen }

// LastTxnID returns the id of the latest commit (zero before any).
func (s Snapshot) LastTxnID() UUID { return s.d.lastTxn }

// Read calls fn with a consistent view of the database, under its lock:
// no commit happens while fn runs, so a monitor can send initial contents
// and subscribe without missing or repeating a change.
func (d *Database) Read(fn func(Snapshot)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fn(Snapshot{d})
}

// UndoLocked undoes cs, commits that were applied but whose records the
// storage then failed to write, oldest first: one commit with a fresh
// transaction id puts back every row they changed as it was before the first
// of them. Subscribers get it as any other commit; hooks do not (there is
// nothing to store: the rows are as storage has them). The database must be
// locked (call it inside Read or from a hook), and every commit applied after
// the first of cs must be in cs.
func (d *Database) UndoLocked(cs []*Commit) {
	undo := &Commit{TxnID: NewUUID(), Tables: map[string]map[UUID]*RowChange{}, Comment: "undo after storage failure", Date: time.Now()}
	for _, c := range cs {
		for tname, rows := range c.Tables {
			m := undo.Tables[tname]
			if m == nil {
				m = map[UUID]*RowChange{}
				undo.Tables[tname] = m
			}
			for u, ch := range rows {
				// Old: the row now (after the last commit); New: the row
				// before the first one.
				if prev := m[u]; prev != nil {
					prev.Old = ch.New
				} else {
					m[u] = &RowChange{Old: ch.New, New: ch.Old}
				}
			}
		}
	}
	for tname, rows := range undo.Tables {
		for u, ch := range rows {
			if ch.Old == ch.New {
				delete(rows, u)
			}
		}
		if len(rows) == 0 {
			delete(undo.Tables, tname)
		}
	}
	if len(undo.Tables) == 0 {
		return
	}
	d.apply(undo)
	for _, s := range d.subs {
		s(undo)
	}
}

func (d *Database) apply(c *Commit) {
	d.gen++
	type rowOf struct {
		td *tableData
		u  UUID
	}
	var deleted []rowOf
	for tname, rows := range c.Tables {
		td := d.tables[tname]
		for u, ch := range rows {
			if ch.Old != nil && ch.New != nil {
				// A modified row: its index keys and references
				// change only if their columns did.
				if !td.sameIndexKeys(ch.Old, ch.New) {
					td.unindex(ch.Old)
					td.index(ch.New)
				}
				if !sameRefs(td.schema, ch.Old, ch.New) {
					td.forEachStrongRef(ch.Old, func(rt string, ru UUID) { d.tables[rt].refs[ru]-- })
					td.forEachStrongRef(ch.New, func(rt string, ru UUID) { d.tables[rt].refs[ru]++ })
				}
				td.rows[u] = ch.New
				continue
			}
			if ch.Old != nil {
				td.unindex(ch.Old)
				td.forEachStrongRef(ch.Old, func(rt string, ru UUID) { d.tables[rt].refs[ru]-- })
			}
			if ch.New != nil {
				td.rows[u] = ch.New
				td.index(ch.New)
				td.forEachStrongRef(ch.New, func(rt string, ru UUID) { d.tables[rt].refs[ru]++ })
			} else {
				delete(td.rows, u)
				deleted = append(deleted, rowOf{td, u})
			}
		}
	}
	// Once every row's references are counted: a deleted row that no
	// row refers to any more needs no count.
	for _, r := range deleted {
		if r.td.refs[r.u] == 0 {
			delete(r.td.refs, r.u)
		}
	}
	d.lastTxn = c.TxnID
	d.nCommits++
}

// forEachStrongRef calls fn for each strong reference r makes to another
// row. A row's references to itself do not count, so that garbage
// collection removes a non-root row referenced only by itself, as OVS does.
func (td *tableData) forEachStrongRef(r *Row, fn func(table string, u UUID)) {
	self := func(table string, u UUID) bool { return table == td.schema.Name && u == r.UUID }
	for _, c := range td.schema.refs {
		v := r.Cols[c.Index]
		if kt := c.Type.Key; kt.RefTable != "" && !kt.RefWeak {
			for _, k := range v.Keys {
				if !self(kt.RefTable, k.(UUID)) {
					fn(kt.RefTable, k.(UUID))
				}
			}
		}
		if vt := c.Type.Value; vt != nil && vt.RefTable != "" && !vt.RefWeak {
			for _, k := range v.Vals {
				if !self(vt.RefTable, k.(UUID)) {
					fn(vt.RefTable, k.(UUID))
				}
			}
		}
	}
}

func indexKey(cols []*Column, r *Row) string {
	var b []byte
	for _, c := range cols {
		b = AppendDatumJSON(b, r.Cols[c.Index], c.Type.IsMap())
		b = append(b, 0)
	}
	return string(b)
}

func (td *tableData) index(r *Row) {
	for i, cols := range td.schema.Indexes {
		td.indexes[i][indexKey(cols, r)] = r.UUID
	}
}

// sameIndexKeys reports whether rows a and b have the same key in every
// index of the table.
func (td *tableData) sameIndexKeys(a, b *Row) bool {
	for _, cols := range td.schema.Indexes {
		for _, c := range cols {
			if !a.Cols[c.Index].Equal(b.Cols[c.Index]) {
				return false
			}
		}
	}
	return true
}

func (td *tableData) unindex(r *Row) {
	for i, cols := range td.schema.Indexes {
		k := indexKey(cols, r)
		if td.indexes[i][k] == r.UUID {
			delete(td.indexes[i], k)
		}
	}
}

// Record encodes a commit as an "_is_diff" record of the OVSDB log, as
// ovsdb-server 3.1 writes them: whole values of the columns a new row does
// not have at their defaults, null for a deleted row, and for a modified
// row its changed columns as diffs (Diff: what a set or map gained and
// lost, a scalar's new value). A column whose old value is the default is
// written whole: readers, OVS's included, take such a value as it is
// (ovsdb/file.c ovsdb_file_update_row_from_json). Ephemeral columns are
// not stored.
func (c *Commit) Record(s *Schema) map[string]map[string]json.RawMessage {
	out := make(map[string]map[string]json.RawMessage, len(c.Tables))
	for tname, rows := range c.Tables {
		t := s.Tables[tname]
		m := make(map[string]json.RawMessage, len(rows))
		for u, ch := range rows {
			if b, ok := appendRecordRow(nil, t, ch, true); ok {
				m[u.String()] = b
			}
		}
		if len(m) > 0 {
			out[tname] = m
		}
	}
	return out
}

// AppendRecord appends the commit's tables as Record encodes them, as the
// members of a JSON object, each followed by a comma: `"T":{"U":row,...},`,
// tables and rows in order; nothing if no row has anything to store. It is
// Record without the maps and strings in between, for the log
// (storage.Record.Encoded). With diffs false a modified row's changed
// columns carry their whole new values, as ovsdb-server
// --disable-file-column-diff writes them (a record without "_is_diff").
func (c *Commit) AppendRecord(b []byte, s *Schema, diffs bool) []byte {
	tnames := slices.Collect(maps.Keys(c.Tables))
	slices.Sort(tnames)
	for _, tname := range tnames {
		t := s.Tables[tname]
		rows := c.Tables[tname]
		uuids := make([]UUID, 0, len(rows))
		for u := range rows {
			uuids = append(uuids, u)
		}
		slices.SortFunc(uuids, func(a, b UUID) int { return bytes.Compare(a[:], b[:]) })
		start, n := len(b), 0
		b = appendJSONString(b, tname)
		b = append(b, ':', '{')
		for _, u := range uuids {
			mark := len(b)
			if n > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = u.Append(b)
			b = append(b, '"', ':')
			var ok bool
			if b, ok = appendRecordRow(b, t, rows[u], diffs); !ok {
				b = b[:mark]
				continue
			}
			n++
		}
		if n == 0 {
			b = b[:start]
			continue
		}
		b = append(b, '}', ',')
	}
	return b
}

// appendRecordRow appends a changed row as a record stores it: null if
// deleted, its columns not at their defaults if new, its changed columns
// (as diffs if diffs) if modified; ok is false, and b as it was, for a
// modified row with no stored column changed.
func appendRecordRow(b []byte, t *Table, ch *RowChange, diffs bool) ([]byte, bool) {
	if ch.New == nil {
		return append(b, "null"...), true
	}
	var colBuf [16]*Column
	cols := colBuf[:0]
	for _, col := range t.Columns {
		if col.Ephemeral {
			continue
		}
		v := ch.New.Cols[col.Index]
		if ch.Old == nil && !IsDefault(&col.Type, v) || ch.Old != nil && !ch.Old.Cols[col.Index].Equal(v) {
			cols = append(cols, col)
		}
	}
	if ch.Old != nil && len(cols) == 0 {
		return b, false
	}
	if ch.Old == nil {
		return AppendRowJSON(b, t, ch.New, cols), true
	}
	// The changed columns, encoded as AppendRowJSON would a row of their
	// diffs, without making that row.
	for i, col := range cols {
		old, nv := ch.Old.Cols[col.Index], ch.New.Cols[col.Index]
		if diffs && !IsDefault(&col.Type, old) {
			nv = Diff(&col.Type, old, nv)
		}
		if i == 0 {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = appendJSONString(b, col.Name)
		b = append(b, ':')
		b = AppendDatumJSON(b, nv, col.Type.IsMap())
	}
	return append(b, '}'), true
}

// SnapshotRecord encodes the whole database as one log record's tables, for
// compaction.
func (d *Database) SnapshotRecord() map[string]map[string]json.RawMessage {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := &Commit{Tables: map[string]map[UUID]*RowChange{}}
	for tname, td := range d.tables {
		if len(td.rows) == 0 {
			continue
		}
		m := make(map[UUID]*RowChange, len(td.rows))
		for u, r := range td.rows {
			m[u] = &RowChange{New: r}
		}
		c.Tables[tname] = m
	}
	return c.Record(d.schema)
}

// Replay applies one stored log record, as read from a database file. With
// isDiff, a modified row's columns are update2-style diffs. References and
// constraints are not re-checked, as OVS does not on reading its own log.
func (d *Database) Replay(tables map[string]map[string]json.RawMessage, isDiff bool) error {
	return d.replay(tables, isDiff, false, false)
}

// Mirror applies changes made elsewhere (a relay's source), given as in a
// database file's record, as one commit that monitors see.
func (d *Database) Mirror(tables map[string]map[string]json.RawMessage, isDiff bool) error {
	return d.replay(tables, isDiff, true, false)
}

// MirrorReset makes the database hold exactly the given rows (whole rows,
// columns left out at their defaults), as one commit that monitors see:
// rows not given are deleted, rows that did not change are left alone.
func (d *Database) MirrorReset(tables map[string]map[string]json.RawMessage) error {
	return d.replay(tables, false, true, true)
}

func (d *Database) replay(tables map[string]map[string]json.RawMessage, isDiff, notify, reset bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if reset {
		full := make(map[string]map[string]json.RawMessage, len(d.tables))
		for tname, td := range d.tables {
			m := map[string]json.RawMessage{}
			for u := range td.rows {
				m[u.String()] = json.RawMessage("null")
			}
			for us, raw := range tables[tname] {
				m[us] = raw
			}
			full[tname] = m
		}
		tables = full
	}
	c := &Commit{TxnID: NewUUID(), Tables: map[string]map[UUID]*RowChange{}}
	for _, tname := range sortedKeys(tables) {
		td := d.tables[tname]
		if td == nil {
			return fmt.Errorf("record names unknown table %s", tname)
		}
		m := map[UUID]*RowChange{}
		for us, raw := range tables[tname] {
			u, old, cols, err := td.recordRow(us, raw)
			if err != nil {
				return err
			}
			if cols == nil {
				if old != nil {
					m[u] = &RowChange{Old: old}
				}
				continue
			}
			var nr *Row
			if old != nil && !reset {
				nr = old.clone()
			} else {
				nr = newRow(td.schema, u)
			}
			nr.Version = NewUUID()
			for cname, v := range cols {
				col := td.schema.ByName[cname]
				if col == nil || col.Index < 0 {
					// OVS ignores columns a newer schema dropped.
					continue
				}
				// A diff applies to a value that is not the default; over
				// a default the record holds the whole new value, as
				// ovsdb_file_update_row_from_json takes it.
				applyDiff := isDiff && old != nil && !IsDefault(&col.Type, old.Cols[col.Index])
				vt := col.Type
				if applyDiff {
					vt.Min, vt.Max = 0, Unlimited
				}
				datum, perr := parseDatumNoSize(&vt, v, nil)
				if perr != nil {
					return fmt.Errorf("table %s row %s column %s: %v", tname, us, cname, perr)
				}
				if applyDiff {
					datum = ApplyDiff(&col.Type, old.Cols[col.Index], datum)
				}
				nr.Cols[col.Index] = datum
			}
			if reset && old != nil && rowsEqual(old, nr) {
				continue
			}
			m[u] = &RowChange{Old: old, New: nr}
		}
		c.Tables[tname] = m
	}
	d.apply(c)
	if notify {
		c.Date = time.Now()
		for _, s := range d.subs {
			s(c)
		}
	}
	return nil
}

// SetTxnID sets the id of the latest commit, e.g. after replaying a log.
func (d *Database) SetTxnID(u UUID) {
	d.mu.Lock()
	d.lastTxn = u
	d.mu.Unlock()
}
