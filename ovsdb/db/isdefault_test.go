package db

import "testing"

// TestIsDefault checks the allocation-free IsDefault against its
// definition: equal to DefaultDatum.
func TestIsDefault(t *testing.T) {
	types := []ColumnType{
		{Key: BaseType{Type: TypeInteger}, Min: 1, Max: 1},
		{Key: BaseType{Type: TypeReal}, Min: 1, Max: 1},
		{Key: BaseType{Type: TypeBoolean}, Min: 1, Max: 1},
		{Key: BaseType{Type: TypeString}, Min: 1, Max: 1},
		{Key: BaseType{Type: TypeUUID}, Min: 1, Max: 1},
		{Key: BaseType{Type: TypeString}, Value: &BaseType{Type: TypeInteger}, Min: 1, Max: 1},
		{Key: BaseType{Type: TypeString}, Min: 0, Max: 1},
	}
	datums := []Datum{
		{}, {Keys: []Atom{}},
		{Keys: []Atom{int64(0)}}, {Keys: []Atom{int64(3)}},
		{Keys: []Atom{float64(0)}}, {Keys: []Atom{1.5}},
		{Keys: []Atom{false}}, {Keys: []Atom{true}},
		{Keys: []Atom{""}}, {Keys: []Atom{"x"}},
		{Keys: []Atom{UUID{}}}, {Keys: []Atom{UUID{1}}},
		{Keys: []Atom{""}, Vals: []Atom{int64(0)}}, {Keys: []Atom{""}, Vals: []Atom{int64(1)}},
		{Keys: []Atom{"x"}, Vals: []Atom{int64(0)}},
		{Keys: []Atom{"", "x"}},
	}
	for i := range types {
		ct := &types[i]
		for _, d := range datums {
			// Only datums of the column's key type are compared.
			if len(d.Keys) > 0 && differentTypes(d.Keys[0], DefaultAtom(ct.Key.Type)) {
				continue
			}
			if len(d.Vals) > 0 && (ct.Value == nil || differentTypes(d.Vals[0], DefaultAtom(ct.Value.Type))) {
				continue
			}
			if got, want := IsDefault(ct, d), d.Equal(DefaultDatum(ct)); got != want {
				t.Errorf("%+v %+v: IsDefault %v, want %v", ct, d, got, want)
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { IsDefault(&types[3], Datum{Keys: []Atom{"x"}}) }); n != 0 {
		t.Errorf("IsDefault allocates %v times", n)
	}
}

// differentTypes reports whether a and b are atoms of different types.
func differentTypes(a, b Atom) bool {
	switch a.(type) {
	case int64:
		_, ok := b.(int64)
		return !ok
	case float64:
		_, ok := b.(float64)
		return !ok
	case bool:
		_, ok := b.(bool)
		return !ok
	case string:
		_, ok := b.(string)
		return !ok
	case UUID:
		_, ok := b.(UUID)
		return !ok
	}
	return true
}
