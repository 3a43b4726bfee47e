package db

// Helpers for clients (the utilities) that build and compare datums
// outside a transaction.

// CompareAtoms orders two atoms of the same type as OVSDB does.
func CompareAtoms(a, b Atom) int { return compareAtoms(a, b) }

// CheckAtom checks an atom against its base type's constraints (enum,
// range, length) and returns the error OVS reports, or nil.
func CheckAtom(bt *BaseType, a Atom) *Error { return checkAtom(bt, a) }

// SortUnique sorts d by key and reports whether it held duplicate keys.
func (d *Datum) SortUnique() bool { return d.sortUnique() }

// Find returns the index of key k in d, or -1.
func (d Datum) Find(k Atom) int { return d.find(k) }

// CompareDatums orders two datums of one type as ovsdb_datum_compare_3way
// does: by size, then keys, then values.
func CompareDatums(a, b Datum) int {
	if a.Len() != b.Len() {
		if a.Len() < b.Len() {
			return -1
		}
		return 1
	}
	for i := range a.Keys {
		if c := compareAtoms(a.Keys[i], b.Keys[i]); c != 0 {
			return c
		}
	}
	if a.Vals != nil && b.Vals != nil {
		for i := range a.Vals {
			if c := compareAtoms(a.Vals[i], b.Vals[i]); c != 0 {
				return c
			}
		}
	}
	return 0
}
