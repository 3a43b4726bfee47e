package dbtext

import (
	"testing"

	"github.com/govs/govs/ovsdb/db"
)

var (
	intSet    = db.ColumnType{Key: db.BaseType{Type: db.TypeInteger, MinInteger: 0, MaxInteger: 4095}, Min: 0, Max: 4096}
	stringMap = db.ColumnType{Key: db.BaseType{Type: db.TypeString, MaxLength: 1 << 30}, Value: &db.BaseType{Type: db.TypeString, MaxLength: 1 << 30}, Min: 0, Max: db.Unlimited}
	optString = db.ColumnType{Key: db.BaseType{Type: db.TypeString, MaxLength: 1 << 30}, Min: 0, Max: 1}
)

func TestParseDatum(t *testing.T) {
	for _, tc := range []struct {
		typ  *db.ColumnType
		in   string
		want string // DatumString of the result, or the error
	}{
		{&intSet, "1,2,3", "[1, 2, 3]"},
		{&intSet, "[3 1]", "[1, 3]"},
		{&intSet, "1-4", "[1, 2, 3, 4]"},
		{&intSet, "[]", "[]"},
		{&intSet, "", `use "[]" to specify the empty set`},
		{&intSet, "5000", "constraint violation: 5000 is not in the valid range 0 to 4095 (inclusive)"},
		{&intSet, "4-1", `"4-1" is not a valid range. Range end cannot be before start.`},
		{&intSet, "[1,2", `[1,2: missing "]" at end of data`},
		{&intSet, "x", `"x" is not a valid integer or range`},
		{&stringMap, "{a=b, c=\"d e\"}", `{a=b, c="d e"}`},
		{&stringMap, "a=b", "{a=b}"},
		{&stringMap, "{a=b,c}", `c}: syntax error at "}" expecting "="`},
		{&stringMap, "a=b c", `c: syntax error at "`},
		{&stringMap, "{}", "{}"},
		{&stringMap, "a=b a=c", "a=b a=c: map contains duplicate key"},
		{&optString, `"1.2.3.4:5566"`, `"1.2.3.4:5566"`},
		{&optString, "br0", "br0"},
		{&optString, "true", `"true"`},
		{&optString, `"unterminated`, `"unterminated: quoted string extends past end of argument`},
	} {
		d, err := ParseDatum(tc.typ, tc.in, Symbols{})
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = DatumString(d, tc.typ)
		}
		if got != tc.want {
			t.Errorf("ParseDatum(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzParseDatum checks that no input crashes the parser and that what it
// accepts prints to a form it parses back to the same datum.
func FuzzParseDatum(f *testing.F) {
	for _, s := range []string{"1,2,3", "{a=b, c=\"d\"}", "[]", "@row", "\"x\\\"y\"", "1-5", "a=b=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, typ := range []*db.ColumnType{&intSet, &stringMap, &optString} {
			d, err := ParseDatum(typ, s, Symbols{})
			if err != nil {
				continue
			}
			out := DatumString(d, typ)
			if typ.Max == 1 && d.Len() == 0 {
				continue
			}
			back, err := ParseDatum(typ, out, Symbols{})
			if err != nil {
				t.Fatalf("%q parsed, printed as %q, which does not parse: %v", s, out, err)
			}
			if !back.Equal(d) {
				t.Fatalf("%q -> %q -> %v, want %v", s, out, back, d)
			}
		}
	})
}
