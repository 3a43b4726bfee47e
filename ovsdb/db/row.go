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
	if t.IsScalar() || t.Max == 1 && t.Value == nil {
		return new
	}
	return merge(t, old, new)
}

// ApplyDiff applies a Diff to old.
func ApplyDiff(t *ColumnType, old, diff Datum) Datum {
	if t.IsScalar() || t.Max == 1 && t.Value == nil {
		return diff
	}
	return merge(t, old, diff)
}

// merge walks the sorted keys of a and b together and keeps what is in
// one only, and b's pair where both have a key with different values: a
// set's symmetric difference, which is both the diff from a to b and b
// applied as a diff to a (a set element or identical pair present in both
// is removed; a pair with another value replaces the old one).
func merge(t *ColumnType, a, b Datum) Datum {
	var n Datum
	n.Keys = make([]Atom, 0, len(a.Keys)+len(b.Keys))
	if t.IsMap() {
		n.Vals = make([]Atom, 0, len(a.Keys)+len(b.Keys))
	}
	i, j := 0, 0
	for i < len(a.Keys) || j < len(b.Keys) {
		var c int
		switch {
		case i == len(a.Keys):
			c = 1
		case j == len(b.Keys):
			c = -1
		default:
			c = compareAtoms(a.Keys[i], b.Keys[j])
		}
		switch {
		case c < 0:
			n.Keys = append(n.Keys, a.Keys[i])
			if t.IsMap() {
				n.Vals = append(n.Vals, a.Vals[i])
			}
			i++
		case c > 0:
			n.Keys = append(n.Keys, b.Keys[j])
			if t.IsMap() {
				n.Vals = append(n.Vals, b.Vals[j])
			}
			j++
		default:
			if t.IsMap() && compareAtoms(a.Vals[i], b.Vals[j]) != 0 {
				n.Keys = append(n.Keys, b.Keys[j])
				n.Vals = append(n.Vals, b.Vals[j])
			}
			i++
			j++
		}
	}
	return n
}

// parseRow parses a row object for insert/update/wait into column values.
// opRaw, for an update, returns the whole operation (decoded only then),
// which OVS quotes in the error for an immutable column.
func parseRow(t *Table, v any, syms *Symbols, forUpdate bool, opRaw func() any) (map[*Column]Datum, *Error) {
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
			return nil, &Error{Name: "constraint violation", Details: fmt.Sprintf("Cannot update immutable column %s in table %s.", n, t.Name), Syntax: opRaw()}
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
