package db

import "testing"

func TestDatumString(t *testing.T) {
	str := BaseType{Type: TypeString}
	for _, tc := range []struct {
		t    ColumnType
		d    Datum
		want string
	}{
		{ColumnType{Key: str, Min: 1, Max: 1}, Datum{Keys: []Atom{"b0"}}, "b0"},
		{ColumnType{Key: str, Min: 1, Max: 1}, Datum{Keys: []Atom{""}}, `""`},
		{ColumnType{Key: str, Min: 0, Max: 1}, Datum{}, "[]"},
		{ColumnType{Key: BaseType{Type: TypeInteger}, Min: 0, Max: Unlimited}, Datum{Keys: []Atom{int64(1), int64(2)}}, "[1, 2]"},
		{ColumnType{Key: str, Value: &str, Min: 0, Max: Unlimited}, Datum{Keys: []Atom{"a", "c"}, Vals: []Atom{"b", "d e"}}, `{a=b, c="d e"}`},
		{ColumnType{Key: str, Value: &str, Min: 0, Max: Unlimited}, Datum{}, "{}"},
	} {
		if got := DatumString(&tc.t, tc.d); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.d, got, tc.want)
		}
	}
}
