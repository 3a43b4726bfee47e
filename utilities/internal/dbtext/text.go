// Package dbtext owns the text forms of OVSDB data that the command-line
// utilities read and print (lib/ovsdb-data.c's *_from_string, *_to_string
// and *_to_bare): atoms and datums as users type them ("{k=v}", "[1, 2]",
// "@name"), and the string and bare forms the tools print.
package dbtext

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/govs/govs/ovsdb/db"
)

// Symbol is a row id ("@name") of one ovs-vsctl or ovsdb-client run.
type Symbol struct {
	UUID      db.UUID
	Created   bool // a --id option defined it
	StrongRef bool // a strong reference to it was written
	WeakRef   bool
}

// Symbols maps row ids to their symbols; nil refuses "@name" atoms.
type Symbols map[string]*Symbol

// Get returns the symbol named name, creating it with a fresh UUID.
func (s Symbols) Get(name string) *Symbol {
	sym := s[name]
	if sym == nil {
		sym = &Symbol{UUID: db.NewUUID()}
		s[name] = sym
	}
	return sym
}

// isDelim reports whether c ends an unquoted token (ovsdb_token_is_delim).
func isDelim(c byte) bool { return strings.IndexByte(":=, []{}!<>", c) >= 0 }

// ParseToken reads one token from the front of s: a run of characters up
// to a delimiter, where backslash escapes a character and a double-quoted
// part may hold delimiters. It returns the token and the rest of s.
func ParseToken(s string) (tok, rest string, err error) {
	var b strings.Builder
	inQuotes := false
	i := 0
	for i < len(s) {
		c := s[i]
		i++
		switch {
		case c == '\\':
			if inQuotes {
				b.WriteByte('\\')
			}
			if i >= len(s) {
				return "", "", fmt.Errorf("%s: backslash at end of argument", s)
			}
			b.WriteByte(s[i])
			i++
		case !inQuotes && isDelim(c):
			i--
			return b.String(), s[i:], nil
		default:
			b.WriteByte(c)
			if c == '"' {
				inQuotes = !inQuotes
			}
		}
	}
	if inQuotes {
		return "", "", fmt.Errorf("%s: quoted string extends past end of argument", s)
	}
	return b.String(), "", nil
}

// parseInt is str_to_llong: a whole decimal integer with optional sign.
func parseInt(s string) (int64, bool) {
	v, err := strconv.ParseInt(skipSpaces(s), 10, 64)
	return v, err == nil
}

// parseRange is str_to_llong_range: "A-B".
func parseRange(s string) (int64, int64, bool) {
	for i := 1; i < len(s); i++ {
		if s[i] == '-' {
			a, ok1 := parseInt(s[:i])
			b, ok2 := parseInt(s[i+1:])
			if ok1 && ok2 {
				return a, b, true
			}
		}
	}
	return 0, 0, false
}

// maxRange is the largest integer range an atom may expand to.
const maxRange = 4096

// ParseAtom parses one atom of base type bt from its text form
// (ovsdb_atom_from_string). With allowRange an integer may be "A-B", and
// the atoms of the whole range are returned.
func ParseAtom(bt *db.BaseType, s string, syms Symbols, allowRange bool) ([]db.Atom, error) {
	var a db.Atom
	switch bt.Type {
	case db.TypeInteger:
		if lo, hi, ok := parseRange(s); allowRange && ok {
			if hi < lo {
				return nil, fmt.Errorf("\"%s\" is not a valid range. Range end cannot be before start.", s)
			}
			if hi-lo >= maxRange {
				return nil, fmt.Errorf("Range \"%d-%d\" is too big. Maximum allowed size is %d.", lo, hi, maxRange)
			}
			atoms := make([]db.Atom, 0, hi-lo+1)
			for i := lo; ; i++ {
				if err := db.CheckAtom(bt, i); err != nil {
					return nil, errors(err)
				}
				atoms = append(atoms, i)
				if i == hi {
					break
				}
			}
			return atoms, nil
		}
		v, ok := parseInt(s)
		if !ok {
			return nil, fmt.Errorf("\"%s\" is not a valid integer or range", s)
		}
		a = v
	case db.TypeReal:
		v, err := strconv.ParseFloat(strings.TrimLeft(s, " \t\n"), 64)
		if err != nil && !isRangeErr(err) {
			return nil, fmt.Errorf("\"%s\" is not a valid real number", s)
		}
		if v == 0 {
			v = 0 // no negative zero, as OVS's JSON input
		}
		a = v
	case db.TypeBoolean:
		switch s {
		case "true", "yes", "on", "1":
			a = true
		case "false", "no", "off", "0":
			a = false
		default:
			return nil, fmt.Errorf("\"%s\" is not a valid boolean (use \"true\" or \"false\")", s)
		}
	case db.TypeString:
		switch {
		case s == "":
			return nil, fmt.Errorf("An empty string is not valid as input; use \"\" to represent the empty string")
		case s[0] == '"':
			if len(s) < 2 || s[len(s)-1] != '"' {
				return nil, fmt.Errorf("%s: missing quote at end of quoted string", s)
			}
			var v string
			if err := json.Unmarshal([]byte(s), &v); err != nil {
				return nil, fmt.Errorf("%s: %s", s, "invalid string escape")
			}
			a = v
		default:
			a = s
		}
	case db.TypeUUID:
		if s != "" && s[0] == '@' && syms != nil {
			sym := syms.Get(s)
			if bt.RefTable != "" {
				if bt.RefWeak {
					sym.WeakRef = true
				} else {
					sym.StrongRef = true
				}
			}
			a = sym.UUID
		} else {
			u, err := db.ParseUUID(s)
			if err != nil {
				return nil, fmt.Errorf("\"%s\" is not a valid UUID", s)
			}
			a = u
		}
	default:
		return nil, fmt.Errorf("bad type")
	}
	if str, ok := a.(string); ok && !utf8.ValidString(str) {
		for i := 0; i < len(str); {
			r, n := utf8.DecodeRuneInString(str[i:])
			if r == utf8.RuneError && n == 1 {
				return nil, fmt.Errorf("constraint violation: not a valid UTF-8 string: invalid UTF-8 sequence 0x%02x", str[i])
			}
			i += n
		}
	}
	if err := db.CheckAtom(bt, a); err != nil {
		return nil, errors(err)
	}
	return []db.Atom{a}, nil
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// errors renders a constraint error as ovsdb_error_to_string does.
func errors(e *db.Error) error {
	return fmt.Errorf("%s", e.Error())
}

func skipSpaces(s string) string { return strings.TrimLeft(s, " \t\n\v\f\r") }

// ParseDatum parses a datum of type t from its text form
// (ovsdb_datum_from_string): atoms or key=value pairs separated by spaces
// or commas, optionally in [] (sets) or {} (maps).
func ParseDatum(t *db.ColumnType, s string, syms Symbols) (db.Datum, error) {
	isMap := t.IsMap()
	d := db.Datum{Keys: []db.Atom{}}
	if isMap {
		d.Vals = []db.Atom{}
	}
	open, close := byte('['), byte(']')
	if isMap {
		open, close = '{', '}'
	}
	p := skipSpaces(s)
	var end byte
	switch {
	case p != "" && p[0] == open:
		end = close
		p = skipSpaces(p[1:])
	case p == "":
		if isMap {
			return d, fmt.Errorf("use \"{}\" to specify the empty map")
		}
		return d, fmt.Errorf("use \"[]\" to specify the empty set")
	}
	for p != "" && p[0] != end {
		if isDelim(p[0]) {
			return d, fmt.Errorf("%s: unexpected \"%c\" parsing %s", s, p[0], English(t))
		}
		start := p
		tok, rest, err := ParseToken(p)
		if err != nil {
			return d, err
		}
		keys, err := ParseAtom(&t.Key, tok, syms, true)
		if err != nil {
			return d, err
		}
		p = rest
		if isMap {
			p = skipSpaces(p)
			if p == "" || p[0] != '=' {
				if p == "" {
					// OVS formats the NUL at the end with %c, which
					// ends its message there.
					return d, fmt.Errorf("%s: syntax error at \"", start)
				}
				return d, fmt.Errorf("%s: syntax error at \"%c\" expecting \"=\"", start, p[0])
			}
			p = skipSpaces(p[1:])
			tok, rest, err := ParseToken(p)
			if err != nil {
				return d, err
			}
			vals, err := ParseAtom(t.Value, tok, syms, false)
			if err != nil {
				return d, err
			}
			p = rest
			for _, k := range keys {
				d.Keys = append(d.Keys, k)
				d.Vals = append(d.Vals, vals[0])
			}
		} else {
			d.Keys = append(d.Keys, keys...)
		}
		p = skipSpaces(p)
		if p != "" && p[0] == ',' {
			p = skipSpaces(p[1:])
		}
	}
	if end != 0 {
		if p == "" {
			return d, fmt.Errorf("%s: missing \"%c\" at end of data", s, end)
		}
		if skipSpaces(p[1:]) != "" {
			return d, fmt.Errorf("%s: trailing garbage after \"%c\"", s, end)
		}
	}
	what := "value(s)"
	if isMap {
		what = "pair(s)"
	}
	if n := d.Len(); n < t.Min {
		return d, fmt.Errorf("%s: %d %s specified but the minimum number is %d", s, n, what, t.Min)
	} else if n > t.Max {
		return d, fmt.Errorf("%s: %d %s specified but the maximum number is %d", s, n, what, MaxCount(t.Max))
	}
	if d.SortUnique() {
		if isMap {
			return d, fmt.Errorf("%s: map contains duplicate key", s)
		}
		return d, fmt.Errorf("%s: set contains duplicate value", s)
	}
	return d, nil
}

// English describes a type as ovsdb_type_to_english does.
func English(t *db.ColumnType) string {
	key := baseEnglish(&t.Key)
	if t.IsScalar() {
		return key
	}
	var s string
	if t.IsMap() {
		val := baseEnglish(t.Value)
		s = fmt.Sprintf("map of %s-%s", key, val)
		if t.Min == 0 && t.Max == db.Unlimited {
			return s + " pairs"
		}
	} else {
		if t.Min == 0 && t.Max == 1 {
			return "optional " + key
		}
		s = "set of " + key
		if t.Min == 0 && t.Max == db.Unlimited {
			return s + "s"
		}
	}
	switch {
	case t.Min == 0:
		return fmt.Sprintf("%s of up to %d %ss", s, t.Max, key)
	case t.Max == db.Unlimited:
		return fmt.Sprintf("%s of %d or more %ss", s, t.Min, key)
	}
	return fmt.Sprintf("%s of %d to %d %ss", s, t.Min, t.Max, key)
}

func baseEnglish(bt *db.BaseType) string {
	if bt.Type == db.TypeUUID && bt.RefTable != "" {
		if bt.RefWeak {
			return "weak reference to " + bt.RefTable
		}
		return "reference to " + bt.RefTable
	}
	return bt.Type.String()
}

// needsQuotes is string_needs_quotes: a string prints bare only if it
// looks like an identifier that is neither a boolean nor a UUID.
func needsQuotes(s string) bool {
	if s == "" {
		return true
	}
	c := s[0]
	if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		return true
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '-' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return true
		}
	}
	if s == "true" || s == "false" {
		return true
	}
	_, err := db.ParseUUID(s)
	return err == nil
}

// QuoteJSON renders s as a JSON string the way OVS's json_to_ds does.
func QuoteJSON(s string) string {
	return string(db.AppendDatumJSON(nil, db.Datum{Keys: []db.Atom{s}}, false))
}

// RealString formats a real as "%.*g" with DBL_DIG digits.
func RealString(x float64) string {
	s := strconv.FormatFloat(x, 'g', 15, 64)
	// C writes exponents with at least two digits: 1e+20, 1e-05.
	if i := strings.IndexByte(s, 'e'); i >= 0 && len(s)-i == 3 {
		s = s[:i+2] + "0" + s[i+2:]
	}
	if math.IsInf(x, 1) {
		return "inf"
	} else if math.IsInf(x, -1) {
		return "-inf"
	}
	return s
}

// AtomString is ovsdb_atom_to_string.
func AtomString(a db.Atom) string {
	switch x := a.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return RealString(x)
	case bool:
		return strconv.FormatBool(x)
	case string:
		if needsQuotes(x) {
			return QuoteJSON(x)
		}
		return x
	case db.UUID:
		return x.String()
	}
	return fmt.Sprint(a)
}

// AtomBare is ovsdb_atom_to_bare: strings unquoted.
func AtomBare(a db.Atom) string {
	if s, ok := a.(string); ok {
		return s
	}
	return AtomString(a)
}

// DatumString is ovsdb_datum_to_string: sets in [], maps in {}, a scalar
// or optional value bare.
func DatumString(d db.Datum, t *db.ColumnType) string {
	var b strings.Builder
	brackets := t.Max > 1 || d.Len() == 0
	if brackets {
		if t.IsMap() {
			b.WriteByte('{')
		} else {
			b.WriteByte('[')
		}
	}
	for i, k := range d.Keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(AtomString(k))
		if t.IsMap() {
			b.WriteByte('=')
			b.WriteString(AtomString(d.Vals[i]))
		}
	}
	if brackets {
		if t.IsMap() {
			b.WriteByte('}')
		} else {
			b.WriteByte(']')
		}
	}
	return b.String()
}

// DatumBare is ovsdb_datum_to_bare: elements separated by spaces.
func DatumBare(d db.Datum, t *db.ColumnType) string {
	var b strings.Builder
	for i, k := range d.Keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(AtomBare(k))
		if t.IsMap() {
			b.WriteByte('=')
			b.WriteString(AtomBare(d.Vals[i]))
		}
	}
	return b.String()
}

// MaxCount prints a column's maximum size as OVS does: unlimited is UINT_MAX.
func MaxCount(n int) int64 {
	if n == db.Unlimited {
		return math.MaxUint32
	}
	return int64(n)
}
