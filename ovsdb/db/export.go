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
