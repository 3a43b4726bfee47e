package db

import "math"

type mutator uint8

const (
	mutAdd mutator = iota
	mutSub
	mutMul
	mutDiv
	mutMod
	mutInsert
	mutDelete
)

var mutators = map[string]mutator{
	"+=": mutAdd, "-=": mutSub, "*=": mutMul, "/=": mutDiv, "%=": mutMod,
	"insert": mutInsert, "delete": mutDelete,
}

type mutation struct {
	col  *Column
	name string
	op   mutator
	arg  Datum // for insert/delete
	atom Atom  // for arithmetic
}

// mapTagged reports whether v is ["map", ...] with two elements, the
// only JSON parseDatum may take as a map.
func mapTagged(v any) bool {
	arr, ok := v.([]any)
	if !ok || len(arr) != 2 {
		return false
	}
	tag, _ := arr[0].(string)
	return tag == "map"
}

func parseMutations(t *Table, v any, syms *Symbols) ([]mutation, *Error) {
	list, ok := v.([]any)
	if !ok {
		return nil, syntaxError(v, "Parse error in mutation.")
	}
	muts := make([]mutation, 0, len(list))
	for _, m := range list {
		triple, ok := m.([]any)
		if !ok || len(triple) != 3 {
			return nil, syntaxError(m, "Parse error in mutation.")
		}
		cname, ok1 := triple[0].(string)
		mname, ok2 := triple[1].(string)
		if !ok1 || !ok2 {
			return nil, syntaxError(m, "Parse error in mutation.")
		}
		c := t.ByName[cname]
		if c == nil {
			return nil, errorf("unknown column", m, "No column %s in table %s.", cname, t.Name)
		}
		if !c.Mutable || c.Index < 0 {
			return nil, errorf("constraint violation", m, "Cannot mutate immutable column %s in table %s.", cname, t.Name)
		}
		op, ok := mutators[mname]
		if !ok {
			return nil, syntaxError(m, "Unknown mutator \"%s\".", mname)
		}
		mu := mutation{col: c, name: mname, op: op}
		switch op {
		case mutInsert, mutDelete:
			at := c.Type
			// As OVS: an insert's value obeys the column's maximum size.
			at.Min = 0
			if op == mutDelete {
				at.Max = Unlimited
				at.Key = unconstrained(at.Key)
				if at.Value != nil {
					v := unconstrained(*at.Value)
					at.Value = &v
				}
			}
			var d Datum
			var err *Error
			if op != mutDelete || c.Type.Value == nil || mapTagged(triple[2]) {
				d, err = parseDatum(&at, triple[2], syms)
			}
			if (err != nil || !mapTagged(triple[2])) && op == mutDelete && c.Type.Value != nil {
				// Deleting from a map also takes a set of keys. (A
				// value not ["map", ...] fails as a map at once: it
				// is not tried, nor its error made.)
				kt := ColumnType{Key: at.Key, Min: 0, Max: Unlimited}
				d, err = parseDatum(&kt, triple[2], syms)
			}
			if err != nil {
				return nil, err
			}
			mu.arg = d
		default:
			kt := c.Type.Key.Type
			if c.Type.Value != nil || (kt != TypeInteger && kt != TypeReal) || (op == mutMod && kt != TypeInteger) {
				return nil, syntaxError(m, "Type mismatch: \"%s\" operator may not be applied to column %s of type %s.", mname, cname, typeString(&c.Type))
			}
			a, err := parseAtomNoCheck(kt, triple[2], nil)
			if err != nil {
				return nil, err
			}
			if op == mutDiv || op == mutMod {
				if (kt == TypeInteger && a.(int64) == 0) || (kt == TypeReal && a.(float64) == 0) {
					return nil, &Error{Name: "domain error", Details: "Division by zero."}
				}
			}
			mu.atom = a
		}
		muts = append(muts, mu)
	}
	return muts, nil
}

// apply returns the column value after the mutation.
func (m *mutation) apply(t *Table, v Datum) (Datum, *Error) {
	ct := &m.col.Type
	var n Datum
	switch m.op {
	case mutInsert:
		// Both are sorted without duplicates: merged in one pass, a
		// key already there keeping its value. Sized for the result at
		// once, not grown by appends.
		size := len(v.Keys) + len(m.arg.Keys)
		n = Datum{Keys: make([]Atom, 0, size)}
		if ct.Value != nil {
			n.Vals = make([]Atom, 0, size)
		}
		for i, j := 0, 0; i < len(v.Keys) || j < len(m.arg.Keys); {
			from, k := v, i
			switch {
			case j == len(m.arg.Keys):
				i++
			case i == len(v.Keys):
				from, k = m.arg, j
				j++
			default:
				switch c := compareAtoms(v.Keys[i], m.arg.Keys[j]); {
				case c < 0:
					i++
				case c == 0:
					i, j = i+1, j+1
				default:
					from, k = m.arg, j
					j++
				}
			}
			n.Keys = append(n.Keys, from.Keys[k])
			if ct.Value != nil {
				n.Vals = append(n.Vals, from.Vals[k])
			}
		}
	case mutDelete:
		n = Datum{Keys: make([]Atom, 0, len(v.Keys))}
		if ct.Value != nil {
			n.Vals = make([]Atom, 0, len(v.Keys))
		}
		for i, k := range v.Keys {
			j := m.arg.find(k)
			if j >= 0 && (m.arg.Vals == nil || compareAtoms(m.arg.Vals[j], v.Vals[i]) == 0) {
				continue
			}
			n.Keys = append(n.Keys, k)
			if ct.Value != nil {
				n.Vals = append(n.Vals, v.Vals[i])
			}
		}
	default:
		n = Datum{Keys: make([]Atom, len(v.Keys))}
		for i, k := range v.Keys {
			r, err := m.arith(k)
			if err != nil {
				return n, err
			}
			if err := checkAtom(&ct.Key, r); err != nil {
				return n, err
			}
			n.Keys[i] = r
		}
		if n.sortUnique() {
			return n, &Error{Name: "constraint violation", Details: "Result of \"" + m.name + "\" operation contains duplicate values."}
		}
	}
	if n.Len() < ct.Min || n.Len() > ct.Max {
		return n, errorf("constraint violation", nil, "Attempted to store %d elements in %s.", n.Len(), typeEnglish(ct))
	}
	return n, nil
}

// typeEnglish describes a column type as ovsdb_type_to_english does:
// "set of 1 to 3 integers", "map of up to 2 (string, integer) pairs".
func typeEnglish(ct *ColumnType) string {
	if ct.IsScalar() {
		return ct.Key.Type.String()
	}
	s := "set"
	if ct.Value != nil {
		s = "map"
	}
	switch {
	case ct.Max == Unlimited && ct.Min > 0:
		s += " of " + itoa(ct.Min) + " or more"
	case ct.Max == Unlimited:
		s += " of"
	case ct.Min > 0:
		s += " of " + itoa(ct.Min) + " to " + itoa(ct.Max)
	default:
		s += " of up to " + itoa(ct.Max)
	}
	if ct.Value != nil {
		return s + " (" + ct.Key.Type.String() + ", " + ct.Value.Type.String() + ") pairs"
	}
	return s + " " + ct.Key.Type.String() + "s"
}

func itoa(i int) string { return string(AppendAtomJSON(nil, int64(i))) }

func (m *mutation) arith(a Atom) (Atom, *Error) {
	rangeErr := &Error{Name: "range error", Details: "Result of \"" + m.name + "\" operation is out of range."}
	switch x := a.(type) {
	case int64:
		y := m.atom.(int64)
		switch m.op {
		case mutAdd:
			r := x + y
			if (y > 0 && r < x) || (y < 0 && r > x) {
				return nil, rangeErr
			}
			return r, nil
		case mutSub:
			r := x - y
			if (y < 0 && r < x) || (y > 0 && r > x) {
				return nil, rangeErr
			}
			return r, nil
		case mutMul:
			if x != 0 && y != 0 {
				r := x * y
				if r/y != x || (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) {
					return nil, rangeErr
				}
				return r, nil
			}
			return int64(0), nil
		case mutDiv:
			if x == math.MinInt64 && y == -1 {
				return nil, rangeErr
			}
			return x / y, nil
		case mutMod:
			if y == -1 {
				return int64(0), nil
			}
			return x % y, nil
		}
	case float64:
		y := m.atom.(float64)
		var r float64
		switch m.op {
		case mutAdd:
			r = x + y
		case mutSub:
			r = x - y
		case mutMul:
			r = x * y
		case mutDiv:
			r = x / y
		}
		if math.IsInf(r, 0) || math.IsNaN(r) {
			return nil, rangeErr
		}
		return r, nil
	}
	return nil, rangeErr
}
