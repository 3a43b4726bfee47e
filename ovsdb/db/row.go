package db

import (
	"fmt"
	"sort"
)

// Row is one row. Rows are immutable once committed: a transaction that
// changes a row makes a new one.
type Row struct {
	UUID    UUID
	Version UUID
	Cols    []Datum // indexed by Column.Index
}

// Get returns the value of column c, including _uuid and _version.
func (r *Row) Get(c *Column) Datum {
	switch c.Index {
	case colUUID:
		return Datum{Keys: []Atom{r.UUID}}
	case colVersion:
		return Datum{Keys: []Atom{r.Version}}
	}
	return r.Cols[c.Index]
}

func (r *Row) clone() *Row {
	n := &Row{UUID: r.UUID, Version: r.Version, Cols: make([]Datum, len(r.Cols))}
	copy(n.Cols, r.Cols)
	return n
}

func newRow(t *Table, u UUID) *Row {
	r := &Row{UUID: u, Cols: make([]Datum, len(t.Columns))}
	for i, c := range t.Columns {
		r.Cols[i] = DefaultDatum(&c.Type)
	}
	return r
}

// AppendRowJSON appends {"col": value, ...} for cols (all user columns
// if cols is nil).
func AppendRowJSON(b []byte, t *Table, r *Row, cols []*Column) []byte {
	if cols == nil {
		cols = t.Columns
	}
	b = append(b, '{')
	for i, c := range cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, c.Name)
		b = append(b, ':')
		b = AppendDatumJSON(b, r.Get(c), c.Type.IsMap())
	}
	return append(b, '}')
}

// Diff returns the update2-style difference from old to new for a column of
// type t: the new value for scalars; for sets the symmetric difference; for
// maps the pairs added or changed (with their new values) and the pairs
// removed (with their old values). ApplyDiff(old, Diff(old, new)) == new.
//
// A set of at most one element is diffed as ovsdb-server does, in monitors
// and in its log alike: the new value, empty or not. Clients such as
// libovsdb cannot take a two-element diff for such a column.
func Diff(t *ColumnType, old, new Datum) Datum {
	if t.IsScalar() {
		return new
	}
	if t.Max == 1 && t.Value == nil {
		return new
	}
	var d Datum
	if t.IsMap() {
		d.Vals = []Atom{}
	}
	d.Keys = []Atom{}
	i, j := 0, 0
	for i < len(old.Keys) || j < len(new.Keys) {
		var c int
		switch {
		case i == len(old.Keys):
			c = 1
		case j == len(new.Keys):
			c = -1
		default:
			c = compareAtoms(old.Keys[i], new.Keys[j])
		}
		switch {
		case c < 0:
			d.Keys = append(d.Keys, old.Keys[i])
			if t.IsMap() {
				d.Vals = append(d.Vals, old.Vals[i])
			}
			i++
		case c > 0:
			d.Keys = append(d.Keys, new.Keys[j])
			if t.IsMap() {
				d.Vals = append(d.Vals, new.Vals[j])
			}
			j++
		default:
			if t.IsMap() && compareAtoms(old.Vals[i], new.Vals[j]) != 0 {
				d.Keys = append(d.Keys, new.Keys[j])
				d.Vals = append(d.Vals, new.Vals[j])
			}
			i++
			j++
		}
	}
	return d
}

// ApplyDiff applies a Diff to old.
func ApplyDiff(t *ColumnType, old, diff Datum) Datum {
	if t.IsScalar() {
		return diff
	}
	if t.Max == 1 && t.Value == nil {
		return diff
	}
	var n Datum
	n.Keys = make([]Atom, 0, len(old.Keys)+len(diff.Keys))
	if t.IsMap() {
		n.Vals = make([]Atom, 0, len(old.Keys)+len(diff.Keys))
	}
	i, j := 0, 0
	for i < len(old.Keys) || j < len(diff.Keys) {
		var c int
		switch {
		case i == len(old.Keys):
			c = 1
		case j == len(diff.Keys):
			c = -1
		default:
			c = compareAtoms(old.Keys[i], diff.Keys[j])
		}
		switch {
		case c < 0:
			n.Keys = append(n.Keys, old.Keys[i])
			if t.IsMap() {
				n.Vals = append(n.Vals, old.Vals[i])
			}
			i++
		case c > 0:
			n.Keys = append(n.Keys, diff.Keys[j])
			if t.IsMap() {
				n.Vals = append(n.Vals, diff.Vals[j])
			}
			j++
		default:
			// Present in both: a set element or an identical pair is
			// removed; a pair with another value replaces the old one.
			if t.IsMap() && compareAtoms(old.Vals[i], diff.Vals[j]) != 0 {
				n.Keys = append(n.Keys, diff.Keys[j])
				n.Vals = append(n.Vals, diff.Vals[j])
			}
			i++
			j++
		}
	}
	return n
}

// parseRow parses a row object for insert/update/wait into column values.
// opRaw, for an update, is the whole operation, which OVS quotes in the
// error for an immutable column.
func parseRow(t *Table, v any, syms *Symbols, forUpdate bool, opRaw any) (map[*Column]Datum, *Error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, syntaxError(v, "Row must be JSON object.")
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make(map[*Column]Datum, len(m))
	for _, n := range names {
		c := t.ByName[n]
		if c == nil {
			return nil, errorf("unknown column", v, "No column %s in table %s.", n, t.Name)
		}
		if forUpdate && (!c.Mutable || c.Index < 0) {
			return nil, &Error{Name: "constraint violation", Details: fmt.Sprintf("Cannot update immutable column %s in table %s.", n, t.Name), Syntax: opRaw}
		}
		if c.Index < 0 {
			return nil, errorf("syntax error", v, "Cannot set column %s in table %s.", n, t.Name)
		}
		d, err := parseDatum(&c.Type, m[n], syms)
		if err != nil {
			return nil, err
		}
		out[c] = d
	}
	return out, nil
}
