package db

import (
	"encoding/json"
	"fmt"
	"time"
)

// ApplyReplica commits rows copied from an active server (active-backup
// replication, ovsdb/replication.c): tables maps table name to row uuid to
// the row's whole new contents as a JSON object ("new" of a monitor
// <row-update>), or JSON null to delete the row. Every row of the tables in
// reset that tables does not name is deleted first, which turns a monitor's
// initial contents into the database's new state in one commit.
//
// The changes are taken as the active server committed them: constraints
// and references are not checked again, as OVS does not. Commit hooks
// (storage) and subscribers (monitors) see the commit as any other.
func (d *Database) ApplyReplica(tables map[string]map[string]json.RawMessage, reset []string) (*Commit, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	changes := map[string]map[UUID]*RowChange{}
	named := map[string]map[UUID]bool{} // the rows tables names, changed or not
	for _, tname := range sortedKeys(tables) {
		td := d.tables[tname]
		if td == nil {
			return nil, fmt.Errorf("unknown table %s", tname)
		}
		m := map[UUID]*RowChange{}
		named[tname] = map[UUID]bool{}
		for us, raw := range tables[tname] {
			u, old, cols, err := td.recordRow(us, raw)
			if err != nil {
				return nil, err
			}
			named[tname][u] = true
			if cols == nil {
				if old != nil {
					m[u] = &RowChange{Old: old}
				}
				continue
			}
			nr := newRow(td.schema, u)
			for cname, v := range cols {
				col := td.schema.ByName[cname]
				if col == nil || col.Index < 0 {
					// A newer active schema may have more columns
					// (the schema check allowed it); _uuid and
					// _version are the backup's own.
					continue
				}
				datum, perr := parseDatumNoSize(&col.Type, v, nil)
				if perr != nil {
					return nil, fmt.Errorf("table %s row %s column %s: %v", tname, us, cname, perr)
				}
				nr.Cols[col.Index] = datum
			}
			if old != nil && rowsEqual(old, nr) {
				continue
			}
			nr.Version = NewUUID()
			m[u] = &RowChange{Old: old, New: nr}
		}
		if len(m) > 0 {
			changes[tname] = m
		}
	}
	for _, tname := range reset {
		td := d.tables[tname]
		if td == nil {
			continue
		}
		for u, r := range td.rows {
			if named[tname][u] {
				continue
			}
			m := changes[tname]
			if m == nil {
				m = map[UUID]*RowChange{}
				changes[tname] = m
			}
			m[u] = &RowChange{Old: r}
		}
	}
	if len(changes) == 0 {
		return nil, nil
	}
	c := &Commit{TxnID: NewUUID(), Tables: changes, Date: time.Now()}
	for _, h := range d.hooks {
		if err := h(c); err != nil {
			return nil, err
		}
	}
	d.apply(c)
	for _, s := range d.subs {
		s(c)
	}
	return c, nil
}

// TypeEqual reports whether two column types are the same, constraints
// included (ovsdb_type_equals).
func TypeEqual(a, b *ColumnType) bool {
	if a.Min != b.Min || a.Max != b.Max || (a.Value == nil) != (b.Value == nil) {
		return false
	}
	return baseEqual(&a.Key, &b.Key) && (a.Value == nil || baseEqual(a.Value, b.Value))
}

func baseEqual(a, b *BaseType) bool {
	if (a.Enum == nil) != (b.Enum == nil) || a.Enum != nil && !a.Enum.Equal(*b.Enum) {
		return false
	}
	x, y := *a, *b
	x.Enum, y.Enum = nil, nil
	return x == y
}

// SchemaEqual reports whether two schemas are the same, however their JSON
// is written (ovsdb_schema_equal compares them as normalized JSON).
func SchemaEqual(a, b *Schema) bool {
	if a.Name != b.Name || a.Version != b.Version || len(a.Tables) != len(b.Tables) {
		return false
	}
	for name, at := range a.Tables {
		bt := b.Tables[name]
		if bt == nil || at.MaxRows != bt.MaxRows || at.IsRoot != bt.IsRoot ||
			len(at.Columns) != len(bt.Columns) || len(at.Indexes) != len(bt.Indexes) {
			return false
		}
		for i, ac := range at.Columns {
			bc := bt.Columns[i]
			if ac.Name != bc.Name || ac.Mutable != bc.Mutable || ac.Ephemeral != bc.Ephemeral || !TypeEqual(&ac.Type, &bc.Type) {
				return false
			}
		}
		for i, ai := range at.Indexes {
			bi := bt.Indexes[i]
			if len(ai) != len(bi) {
				return false
			}
			for j := range ai {
				if ai[j].Name != bi[j].Name {
					return false
				}
			}
		}
	}
	return true
}

// recordRow decodes one row of a stored record or a replicated update: its
// uuid, the row it replaces (nil if none), and its columns (nil for JSON
// null, a deletion).
func (td *tableData) recordRow(us string, raw json.RawMessage) (UUID, *Row, map[string]any, error) {
	u, err := ParseUUID(us)
	if err != nil {
		return u, nil, nil, fmt.Errorf("table %s: %w", td.schema.Name, err)
	}
	old := td.rows[u]
	if string(raw) == "null" {
		return u, old, nil, nil
	}
	dv, err := decodeJSON(raw)
	cols, ok := dv.(map[string]any)
	if err != nil || !ok {
		return u, old, nil, fmt.Errorf("table %s row %s: row is not a JSON object", td.schema.Name, us)
	}
	return u, old, cols, nil
}
