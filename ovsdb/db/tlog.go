package db

import "strings"

// DatumString formats a value as ovsdb_datum_to_string does, for logs:
// a single value bare, sets as [a, b], maps as {k=v, k2=v2}, strings quoted
// only when they need it.
func DatumString(t *ColumnType, d Datum) string {
	var b strings.Builder
	brackets := t.Max > 1 || len(d.Keys) == 0
	open, close := "[", "]"
	if t.IsMap() {
		open, close = "{", "}"
	}
	if brackets {
		b.WriteString(open)
	}
	for i, k := range d.Keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(atomString(k))
		if t.IsMap() && i < len(d.Vals) {
			b.WriteByte('=')
			b.WriteString(atomString(d.Vals[i]))
		}
	}
	if brackets {
		b.WriteString(close)
	}
	return b.String()
}
