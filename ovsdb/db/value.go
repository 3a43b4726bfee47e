package db

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// UUID is an OVSDB uuid atom.
type UUID [16]byte

// NewUUID returns a random (version 4) UUID.
func NewUUID() UUID {
	var u UUID
	if _, err := rand.Read(u[:]); err != nil {
		panic(err)
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// ParseUUID parses the canonical 8-4-4-4-12 hex form.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, fmt.Errorf("%q is not a valid UUID", s)
	}
	h := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	if _, err := hex.Decode(u[:], []byte(h)); err != nil {
		return u, fmt.Errorf("%q is not a valid UUID", s)
	}
	return u, nil
}

func (u UUID) String() string {
	var b [36]byte
	u.encode(&b)
	return string(b[:])
}

func (u UUID) encode(b *[36]byte) {
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], u[10:16])
}

// Append appends the uuid's text form (String) to b without allocating.
func (u UUID) Append(b []byte) []byte {
	var t [36]byte
	u.encode(&t)
	return append(b, t[:]...)
}

// MarshalJSON encodes the uuid as OVSDB's ["uuid", "..."].
func (u UUID) MarshalJSON() ([]byte, error) {
	return []byte(`["uuid","` + u.String() + `"]`), nil
}

// Atom is one atomic value: int64, float64, bool, string or UUID.
type Atom = any

// Datum is a column value: a sorted set of keys, and for maps the values
// paired with them. Datums are immutable once built: operations make new ones.
type Datum struct {
	Keys []Atom
	Vals []Atom // nil for sets
}

// Len is the number of elements.
func (d Datum) Len() int { return len(d.Keys) }

// Error is an OVSDB error as transactions report it: {"error": Name,
// "details": Details, "syntax": Syntax}.
type Error struct {
	Name    string
	Details string
	// Syntax is the offending JSON: a json.RawMessage or a value decoded
	// by decodeJSON; nil for none.
	Syntax any
}

func (e *Error) Error() string {
	if e.Details == "" {
		return e.Name
	}
	return e.Name + ": " + e.Details
}

// Text renders the error as OVS's ovsdb_error_to_string does: the
// offending JSON first, if any.
func (e *Error) Text() string {
	if e.Syntax == nil {
		return e.Error()
	}
	return "syntax \"" + compactString(e.Syntax) + "\": " + e.Error()
}

// MarshalJSON encodes the error object.
func (e *Error) MarshalJSON() ([]byte, error) {
	m := map[string]any{"error": e.Name}
	if e.Details != "" {
		m["details"] = e.Details
	}
	if e.Syntax != nil {
		m["syntax"] = compactString(e.Syntax)
	}
	return json.Marshal(m)
}

// compactString renders v compactly with object keys sorted, as OVS
// prints the "syntax" member of errors.
func compactString(v any) string {
	if raw, ok := v.(json.RawMessage); ok {
		d, err := decodeJSON(raw)
		if err != nil {
			return string(raw)
		}
		v = d
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// decodeJSON parses raw once into a tree of map[string]any, []any, string,
// json.Number, bool and nil, which the parsers below walk.
func decodeJSON(raw []byte) (any, error) {
	if v, ok := fastDecode(raw); ok {
		return v, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// checkSurrogates refuses an operation whose strings hold a lone trailing
// surrogate escape ("\udc00"). OVS's JSON parser turns one into the three
// bytes of its CESU-8 form, which its string atoms then refuse as invalid
// UTF-8; encoding/json would silently store U+FFFD instead. Leading
// surrogates without their pair never get here: the jsonrpc decoder refuses
// them as OVS's parser does. A comment is not an atom and may hold one.
func checkSurrogates(raw []byte, op *opRequest) *Error {
	if bytes.IndexByte(raw, '\\') < 0 {
		return nil
	}
	if op != nil && op.Op == "comment" {
		return nil
	}
	for i := 0; i+1 < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++
		if raw[i] != 'u' || i+4 >= len(raw) {
			continue
		}
		var code rune
		for _, c := range raw[i+1 : i+5] {
			code <<= 4
			switch {
			case c >= '0' && c <= '9':
				code |= rune(c - '0')
			case c >= 'a' && c <= 'f':
				code |= rune(c-'a') + 10
			case c >= 'A' && c <= 'F':
				code |= rune(c-'A') + 10
			}
		}
		i += 4
		switch {
		case code >= 0xd800 && code < 0xdc00:
			i += 6 // its trailing half
		case code >= 0xdc00 && code <= 0xdfff:
			return &Error{Name: "constraint violation",
				Details: fmt.Sprintf("not a valid UTF-8 string: invalid UTF-8 sequence 0xed 0x%02x", 0x80|(code>>6)&0x3f)}
		}
	}
	return nil
}

func errorf(name string, syntax any, format string, args ...any) *Error {
	return &Error{Name: name, Details: fmt.Sprintf(format, args...), Syntax: syntax}
}

func syntaxError(syntax any, format string, args ...any) *Error {
	return errorf("syntax error", syntax, format, args...)
}

// Symbols resolves named-uuids within one transaction.
type Symbols struct {
	m map[string]*symbol
}

type symbol struct {
	uuid    UUID
	created bool // an insert with this uuid-name exists
}

func (s *Symbols) lookup(name string) UUID {
	if s.m == nil {
		s.m = map[string]*symbol{}
	}
	sym := s.m[name]
	if sym == nil {
		sym = &symbol{uuid: NewUUID()}
		s.m[name] = sym
	}
	return sym.uuid
}

func compareAtoms(a, b Atom) int {
	switch x := a.(type) {
	case int64:
		y := b.(int64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case float64:
		y := b.(float64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case bool:
		y := b.(bool)
		if x == y {
			return 0
		}
		if !x {
			return -1
		}
		return 1
	case string:
		return strings.Compare(x, b.(string))
	case UUID:
		y := b.(UUID)
		return bytes.Compare(x[:], y[:])
	}
	panic(fmt.Sprintf("db: bad atom %T", a))
}

// Equal reports whether two datums hold the same elements.
func (d Datum) Equal(o Datum) bool {
	if len(d.Keys) != len(o.Keys) || (d.Vals == nil) != (o.Vals == nil) && len(d.Keys) > 0 {
		return false
	}
	for i := range d.Keys {
		if compareAtoms(d.Keys[i], o.Keys[i]) != 0 {
			return false
		}
		if d.Vals != nil && compareAtoms(d.Vals[i], o.Vals[i]) != 0 {
			return false
		}
	}
	return true
}

// find returns the index of key k, or -1.
func (d Datum) find(k Atom) int {
	i := sort.Search(len(d.Keys), func(i int) bool { return compareAtoms(d.Keys[i], k) >= 0 })
	if i < len(d.Keys) && compareAtoms(d.Keys[i], k) == 0 {
		return i
	}
	return -1
}

// Contains reports whether key k is in the datum.
func (d Datum) Contains(k Atom) bool { return d.find(k) >= 0 }

type datumSorter struct{ d *Datum }

func (s datumSorter) Len() int           { return len(s.d.Keys) }
func (s datumSorter) Less(i, j int) bool { return compareAtoms(s.d.Keys[i], s.d.Keys[j]) < 0 }
func (s datumSorter) Swap(i, j int) {
	s.d.Keys[i], s.d.Keys[j] = s.d.Keys[j], s.d.Keys[i]
	if s.d.Vals != nil {
		s.d.Vals[i], s.d.Vals[j] = s.d.Vals[j], s.d.Vals[i]
	}
}

// sortUnique sorts d and reports whether it had duplicate keys. A datum
// of a few atoms, which most are, is sorted in place by insertion; d itself
// never reaches an interface, so a datum on its caller's stack stays there.
func (d *Datum) sortUnique() (dup bool) {
	if len(d.Keys) <= 12 {
		insertionSort(d.Keys, d.Vals)
	} else {
		sort.Stable(datumSorter{&Datum{Keys: d.Keys, Vals: d.Vals}})
	}
	for i := 1; i < len(d.Keys); i++ {
		if compareAtoms(d.Keys[i-1], d.Keys[i]) == 0 {
			return true
		}
	}
	return false
}

// insertionSort sorts keys, and vals with them if not nil, stably.
func insertionSort(keys, vals []Atom) {
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && compareAtoms(keys[j-1], keys[j]) > 0; j-- {
			keys[j-1], keys[j] = keys[j], keys[j-1]
			if vals != nil {
				vals[j-1], vals[j] = vals[j], vals[j-1]
			}
		}
	}
}

// DefaultAtom is the default value of an atomic type.
func DefaultAtom(t AtomicType) Atom {
	switch t {
	case TypeInteger:
		return int64(0)
	case TypeReal:
		return float64(0)
	case TypeBoolean:
		return false
	case TypeString:
		return ""
	default:
		return UUID{}
	}
}

// DefaultDatum is a column's default: empty if the column may be empty,
// otherwise the key type's default (and value's, for maps).
func DefaultDatum(t *ColumnType) Datum {
	if t.Min == 0 {
		if t.Value != nil {
			return Datum{Keys: []Atom{}, Vals: []Atom{}}
		}
		return Datum{Keys: []Atom{}}
	}
	d := Datum{Keys: []Atom{DefaultAtom(t.Key.Type)}}
	if t.Value != nil {
		d.Vals = []Atom{DefaultAtom(t.Value.Type)}
	}
	return d
}

// IsDefault reports whether d equals the column's default. It does not
// allocate: monitors ask it for every column of every row they send.
func IsDefault(t *ColumnType, d Datum) bool {
	if t.Min == 0 {
		return len(d.Keys) == 0
	}
	if len(d.Keys) != 1 || !isDefaultAtom(d.Keys[0]) {
		return false
	}
	if t.Value == nil {
		return len(d.Vals) == 0
	}
	return len(d.Vals) == 1 && isDefaultAtom(d.Vals[0])
}

// isDefaultAtom reports whether a equals DefaultAtom of its type.
func isDefaultAtom(a Atom) bool {
	switch x := a.(type) {
	case int64:
		return x == 0
	case float64:
		return x == 0
	case bool:
		return !x
	case string:
		return x == ""
	case UUID:
		return x == UUID{}
	}
	return false
}

// ParseAtom parses one atom of base type bt from a decoded JSON value;
// named-uuids resolve through syms (nil: not allowed).
func ParseAtom(bt *BaseType, v any, syms *Symbols) (Atom, *Error) {
	a, err := parseAtomNoCheck(bt.Type, v, syms)
	if err != nil {
		return nil, err
	}
	if err := checkAtom(bt, a); err != nil {
		return nil, err
	}
	return a, nil
}

func parseAtomNoCheck(t AtomicType, v any, syms *Symbols) (Atom, *Error) {
	switch t {
	case TypeInteger:
		if n, ok := v.(json.Number); ok {
			if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
				return i, nil
			}
			// OVS accepts an integer written as a real with no fraction.
			if f, err := strconv.ParseFloat(string(n), 64); err == nil && f == math.Trunc(f) && f >= math.MinInt64 && f <= math.MaxInt64 {
				return int64(f), nil
			}
		}
		return nil, syntaxError(v, "expected integer")
	case TypeReal:
		if n, ok := v.(json.Number); ok {
			if f, err := strconv.ParseFloat(string(n), 64); err == nil {
				return f, nil
			}
		}
		return nil, syntaxError(v, "expected real")
	case TypeBoolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, syntaxError(v, "expected boolean")
	case TypeString:
		if _, ok := v.(string); ok {
			return v, nil // as boxed by the decoder: no copy
		}
		return nil, syntaxError(v, "expected string")
	case TypeUUID:
		const want = "expected [\"uuid\", <string>] or [\"named-uuid\", <string>]"
		pair, ok := v.([]any)
		if !ok || len(pair) != 2 {
			return nil, syntaxError(v, want)
		}
		kind, ok1 := pair[0].(string)
		s, ok2 := pair[1].(string)
		if !ok1 || !ok2 {
			return nil, syntaxError(v, want)
		}
		switch kind {
		case "uuid":
			u, err := ParseUUID(s)
			if err != nil {
				return nil, syntaxError(v, "\"%s\" is not a valid UUID", s)
			}
			return u, nil
		case "named-uuid":
			if syms == nil {
				return nil, syntaxError(v, "named-uuid \"%s\" is not allowed here", s)
			}
			return syms.lookup(s), nil
		}
		return nil, syntaxError(v, want)
	}
	return nil, syntaxError(v, "bad type")
}

// checkAtom checks enum, range and length constraints.
func checkAtom(bt *BaseType, a Atom) *Error {
	if bt.Enum != nil {
		if !bt.Enum.Contains(a) {
			return errorf("constraint violation", nil, "%s is not one of the allowed values ([%s])", atomString(a), enumString(bt.Enum))
		}
		return nil
	}
	switch x := a.(type) {
	case int64:
		if x < bt.MinInteger || x > bt.MaxInteger {
			return rangeError(strconv.FormatInt(x, 10), strconv.FormatInt(bt.MinInteger, 10), strconv.FormatInt(bt.MaxInteger, 10),
				bt.MinInteger != math.MinInt64, bt.MaxInteger != math.MaxInt64)
		}
	case float64:
		if x < bt.MinReal || x > bt.MaxReal {
			return rangeError(realString(x), realString(bt.MinReal), realString(bt.MaxReal),
				bt.MinReal != -math.MaxFloat64, bt.MaxReal != math.MaxFloat64)
		}
	case string:
		n := int64(utf8.RuneCountInString(x))
		if n < bt.MinLength {
			return errorf("constraint violation", nil, "\"%s\" length %d is less than minimum allowed length %d", x, n, bt.MinLength)
		}
		if n > bt.MaxLength {
			return errorf("constraint violation", nil, "\"%s\" length %d is greater than maximum allowed length %d", x, n, bt.MaxLength)
		}
	}
	return nil
}

// rangeError is ovsdb_atom_range_check_size's wording for a number x out
// of [min, max], where hasMin and hasMax say which bounds the schema sets.
func rangeError(x, min, max string, hasMin, hasMax bool) *Error {
	switch {
	case hasMin && hasMax:
		return errorf("constraint violation", nil, "%s is not in the valid range %s to %s (inclusive)", x, min, max)
	case hasMin:
		return errorf("constraint violation", nil, "%s is less than minimum allowed value %s", x, min)
	}
	return errorf("constraint violation", nil, "%s is greater than maximum allowed value %s", x, max)
}

// realString formats a real as OVS's "%.*g" with DBL_DIG (15) digits.
func realString(x float64) string { return strconv.FormatFloat(x, 'g', 15, 64) }

// checkDatum checks every key and value of d against t's constraints.
func checkDatum(t *ColumnType, d Datum) *Error {
	for _, k := range d.Keys {
		if err := checkAtom(&t.Key, k); err != nil {
			return err
		}
	}
	if t.Value != nil {
		for _, v := range d.Vals {
			if err := checkAtom(t.Value, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func enumString(d *Datum) string {
	parts := make([]string, len(d.Keys))
	for i, k := range d.Keys {
		parts[i] = atomString(k)
	}
	return strings.Join(parts, ", ")
}

// atomString formats an atom as OVS's ovsdb_atom_to_string does in error
// messages: strings bare unless they need quoting.
func atomString(a Atom) string {
	switch x := a.(type) {
	case string:
		if needsQuotes(x) {
			return strconv.Quote(x)
		}
		return x
	case UUID:
		return x.String()
	}
	return fmt.Sprint(a)
}

// ParseDatum parses a column value: an atom, ["set", [...]] or
// ["map", [[k, v], ...]], checking atom constraints and the size bounds of t.
func ParseDatum(t *ColumnType, raw json.RawMessage, syms *Symbols) (Datum, *Error) {
	v, err := decodeJSON(raw)
	if err != nil {
		return Datum{}, syntaxError(raw, "%v", err)
	}
	return parseDatum(t, v, syms)
}

func parseDatum(t *ColumnType, v any, syms *Symbols) (Datum, *Error) {
	d, err := parseDatumNoSize(t, v, syms)
	if err != nil {
		return d, err
	}
	if n := len(d.Keys); n < t.Min || n > t.Max {
		return d, syntaxError(v, "%s must have %d to %d members but %d are present", kindName(t), t.Min, uint32Max(t.Max), n)
	}
	return d, nil
}

func kindName(t *ColumnType) string {
	if t.Value != nil {
		return "map"
	}
	return "set"
}

// uint32Max prints an unlimited size as OVS does (UINT_MAX).
func uint32Max(n int) int64 {
	if n == Unlimited {
		return math.MaxUint32
	}
	return int64(n)
}

func parseDatumNoSize(t *ColumnType, v any, syms *Symbols) (Datum, *Error) {
	var d Datum
	arr, isArr := v.([]any)
	var tag string
	if isArr && len(arr) == 2 {
		tag, _ = arr[0].(string)
	}
	if t.Value != nil {
		if tag != "map" {
			return d, syntaxError(v, "expected [\"map\", [...]]")
		}
		pairs, ok := arr[1].([]any)
		if !ok {
			return d, syntaxError(v, "expected array of pairs")
		}
		d.Keys = make([]Atom, 0, len(pairs))
		d.Vals = make([]Atom, 0, len(pairs))
		for _, p := range pairs {
			kv, ok := p.([]any)
			if !ok || len(kv) != 2 {
				return d, syntaxError(p, "expected [key, value] pair")
			}
			k, err := ParseAtom(&t.Key, kv[0], syms)
			if err != nil {
				return d, err
			}
			val, err := ParseAtom(t.Value, kv[1], syms)
			if err != nil {
				return d, err
			}
			d.Keys = append(d.Keys, k)
			d.Vals = append(d.Vals, val)
		}
		if d.sortUnique() {
			return d, &Error{Name: "ovsdb error", Details: "map contains duplicate key"}
		}
		return d, nil
	}
	if tag == "set" {
		elems, ok := arr[1].([]any)
		if !ok {
			return d, syntaxError(v, "expected array of set elements")
		}
		d.Keys = make([]Atom, 0, len(elems))
		for _, e := range elems {
			k, err := ParseAtom(&t.Key, e, syms)
			if err != nil {
				return d, err
			}
			d.Keys = append(d.Keys, k)
		}
		if d.sortUnique() {
			return d, &Error{Name: "ovsdb error", Details: "set contains duplicate"}
		}
		return d, nil
	}
	k, err := ParseAtom(&t.Key, v, syms)
	if err != nil {
		return d, err
	}
	d.Keys = []Atom{k}
	return d, nil
}

// AppendAtomJSON appends the JSON encoding of an atom.
func AppendAtomJSON(b []byte, a Atom) []byte {
	switch x := a.(type) {
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			// Keep reals recognisable as reals, as OVS does ("%.17g" of
			// 1.0 prints "1" too, so plain integers are what OVS sends).
			return strconv.AppendFloat(b, x, 'f', -1, 64)
		}
		return strconv.AppendFloat(b, x, 'g', 17, 64)
	case bool:
		return strconv.AppendBool(b, x)
	case string:
		return appendJSONString(b, x)
	case UUID:
		b = append(b, `["uuid","`...)
		b = x.Append(b)
		return append(b, `"]`...)
	}
	panic(fmt.Sprintf("db: bad atom %T", a))
}

// AppendDatumJSON appends the JSON encoding of a datum: maps as
// ["map",[...]], a single-element set as the bare atom, other sets as
// ["set",[...]] (ovsdb_datum_to_json).
func AppendDatumJSON(b []byte, d Datum, isMap bool) []byte {
	return AppendDatumJSONWith(b, d, isMap, AppendAtomJSON)
}

// AppendDatumJSONWith is AppendDatumJSON with atoms encoded by atom (a
// client names the rows its transaction inserts this way).
func AppendDatumJSONWith(b []byte, d Datum, isMap bool, atom func([]byte, Atom) []byte) []byte {
	if isMap {
		b = append(b, `["map",[`...)
		for i := range d.Keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = atom(b, d.Keys[i])
			b = append(b, ',')
			b = atom(b, d.Vals[i])
			b = append(b, ']')
		}
		return append(b, "]]"...)
	}
	if len(d.Keys) == 1 {
		return atom(b, d.Keys[0])
	}
	b = append(b, `["set",[`...)
	for i, k := range d.Keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = atom(b, k)
	}
	return append(b, "]]"...)
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string, escaped as OVS's json.c
// escapes strings.
func AppendJSONString(b []byte, s string) []byte { return appendJSONString(b, s) }

func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		// A run of bytes that need no escape, copied at once.
		j := i
		for j < len(s) && s[j] >= 0x20 && s[j] != '"' && s[j] != '\\' && s[j] < utf8.RuneSelf {
			j++
		}
		b = append(b, s[i:j]...)
		if i = j; i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

func needsQuotes(s string) bool {
	if s == "" || s == "true" || s == "false" {
		return true
	}
	if c := s[0]; c == '-' || c >= '0' && c <= '9' {
		return true
	}
	for _, c := range s {
		if !(c == '_' || c == '-' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return true
		}
	}
	return false
}

// SyntaxJSON returns the offending JSON compactly with sorted keys, or nil.
func (e *Error) SyntaxJSON() json.RawMessage {
	if e.Syntax == nil {
		return nil
	}
	return json.RawMessage(compactString(e.Syntax))
}
