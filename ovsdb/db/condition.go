package db

import (
	"encoding/json"
	"math"
)

// Condition is one clause of a "where" or a monitor_cond condition.
type Condition struct {
	col   *Column
	fn    condFunc
	arg   Datum
	konst int8 // 1 for the literal true, -1 for false, 0 otherwise
}

type condFunc uint8

const (
	condEq condFunc = iota
	condNe
	condLt
	condLe
	condGt
	condGe
	condIncludes
	condExcludes
)

var condFuncs = map[string]condFunc{
	"==": condEq, "!=": condNe, "<": condLt, "<=": condLe, ">": condGt, ">=": condGe,
	"includes": condIncludes, "excludes": condExcludes,
}

// ParseConditions parses a list of conditions on table t. Besides
// [column, function, value] triples it accepts the booleans true and false
// (monitor_cond). Named-uuids resolve through syms, which may be nil.
func ParseConditions(t *Table, raw json.RawMessage, syms *Symbols) ([]Condition, *Error) {
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, syntaxError(raw, "Parse error in condition.")
	}
	return parseConditions(t, v, syms)
}

func parseConditions(t *Table, v any, syms *Symbols) ([]Condition, *Error) {
	list, ok := v.([]any)
	if !ok {
		return nil, syntaxError(v, "Parse error in condition.")
	}
	conds := make([]Condition, 0, len(list))
	for _, c := range list {
		cond, err := parseCondition(t, c, syms)
		if err != nil {
			return nil, err
		}
		conds = append(conds, cond)
	}
	return conds, nil
}

func parseCondition(t *Table, v any, syms *Symbols) (Condition, *Error) {
	if b, ok := v.(bool); ok {
		if b {
			return Condition{konst: 1}, nil
		}
		return Condition{konst: -1}, nil
	}
	triple, ok := v.([]any)
	if !ok || len(triple) != 3 {
		return Condition{}, syntaxError(v, "Parse error in condition.")
	}
	cname, ok1 := triple[0].(string)
	fname, ok2 := triple[1].(string)
	if !ok1 || !ok2 {
		return Condition{}, syntaxError(v, "Parse error in condition.")
	}
	c := t.ByName[cname]
	if c == nil {
		return Condition{}, errorf("unknown column", v, "No column %s in table %s.", cname, t.Name)
	}
	fn, ok := condFuncs[fname]
	if !ok {
		return Condition{}, errorf("unknown function", v, "No function named %s.", fname)
	}
	argType := c.Type
	switch fn {
	case condLt, condLe, condGt, condGe:
		kt := c.Type.Key.Type
		if c.Type.Value != nil || c.Type.Max != 1 || (kt != TypeInteger && kt != TypeReal) {
			return Condition{}, syntaxError(v, "Type mismatch: \"%s\" operator may not be applied to column %s of type %s.", fname, cname, typeString(&c.Type))
		}
	case condIncludes, condExcludes:
		argType.Min, argType.Max = 0, Unlimited
	}
	argType.Key = unconstrained(argType.Key)
	if argType.Value != nil {
		v := unconstrained(*argType.Value)
		argType.Value = &v
	}
	arg, err := parseDatum(&argType, triple[2], syms)
	if err != nil {
		return Condition{}, err
	}
	return Condition{col: c, fn: fn, arg: arg}, nil
}

func unconstrained(bt BaseType) BaseType {
	return BaseType{Type: bt.Type, MinInteger: math.MinInt64, MaxInteger: math.MaxInt64,
		MinReal: -math.MaxFloat64, MaxReal: math.MaxFloat64, MaxLength: math.MaxInt64, RefTable: bt.RefTable, RefWeak: bt.RefWeak}
}

func typeString(t *ColumnType) string {
	switch {
	case t.Value != nil:
		return "map of " + t.Key.Type.String() + " to " + t.Value.Type.String()
	case t.IsScalar():
		return t.Key.Type.String()
	}
	return "set of " + t.Key.Type.String()
}

// Match reports whether row r satisfies every condition: the conjunction
// of a "where" in select, update, delete, mutate and wait.
func Match(conds []Condition, r *Row) bool {
	for i := range conds {
		if !conds[i].eval(r) {
			return false
		}
	}
	return true
}

// MatchAny reports whether row r satisfies any clause of a monitor_cond
// condition, a disjunction: [] and any list holding true match every row,
// [false] none (ovsdb/condition.c ovsdb_condition_match_any_clause).
func MatchAny(conds []Condition, r *Row) bool {
	if len(conds) == 0 {
		return true
	}
	for i := range conds {
		if conds[i].eval(r) {
			return true
		}
	}
	return false
}

func (c *Condition) eval(r *Row) bool {
	if c.konst != 0 {
		return c.konst > 0
	}
	v := r.Get(c.col)
	switch c.fn {
	case condEq:
		return v.Equal(c.arg)
	case condNe:
		return !v.Equal(c.arg)
	case condIncludes:
		return includes(v, c.arg)
	case condExcludes:
		return excludes(v, c.arg)
	}
	if len(v.Keys) != 1 || len(c.arg.Keys) != 1 {
		return false
	}
	cmp := compareAtoms(v.Keys[0], c.arg.Keys[0])
	switch c.fn {
	case condLt:
		return cmp < 0
	case condLe:
		return cmp <= 0
	case condGt:
		return cmp > 0
	}
	return cmp >= 0
}

// includes reports whether every element (pair, for maps) of b is in a.
func includes(a, b Datum) bool {
	for i, k := range b.Keys {
		j := a.find(k)
		if j < 0 || (b.Vals != nil && compareAtoms(a.Vals[j], b.Vals[i]) != 0) {
			return false
		}
	}
	return true
}

// excludes reports whether no element (pair, for maps) of b is in a.
func excludes(a, b Datum) bool {
	for i, k := range b.Keys {
		j := a.find(k)
		if j >= 0 && (b.Vals == nil || compareAtoms(a.Vals[j], b.Vals[i]) == 0) {
			return false
		}
	}
	return true
}

// uuidEquality returns the uuid if conds is exactly [["_uuid","==",U]], the
// form clients use to address one row, so it can be looked up directly.
func uuidEquality(conds []Condition) (UUID, bool) {
	if len(conds) != 1 || conds[0].konst != 0 || conds[0].fn != condEq || conds[0].col.Index != colUUID || len(conds[0].arg.Keys) != 1 {
		return UUID{}, false
	}
	return conds[0].arg.Keys[0].(UUID), true
}
