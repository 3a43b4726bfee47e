package db

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// fastDecode decodes the common subset of JSON that transactions are made of
// — objects, arrays, strings, numbers, literals — to what
// encoding/json's Decoder with UseNumber gives, without its two passes and
// reflection (it was a tenth of the server's CPU under many clients). It
// reports false for anything else (escaped surrogates, invalid UTF-8, control
// characters, bad syntax, trailing bytes, deep nesting), which the caller
// then decodes with encoding/json, so edge cases keep its exact results.
func fastDecode(raw []byte) (any, bool) {
	var stack [16]any
	p := fastParser{b: raw, stack: stack[:0]}
	p.space()
	v, ok := p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	return v, p.i == len(p.b)
}

type fastParser struct {
	b     []byte
	i     int
	stack []any // elements of the arrays being parsed, innermost last
	// slab is where finished arrays' elements go: one allocation for
	// the many small arrays of an operation (its mutations, sets, maps
	// and pairs). An array is cut to its length, so that an append to
	// it copies. The trees are transient: what outlives them (datums,
	// conditions) is copied out.
	slab []any
}

// fastSlab is the size of the arrays' slab, which holds the elements of
// an operation of a few mutations or columns.
const fastSlab = 16

// emptyArray is every empty array, boxed once.
var emptyArray any = []any{}

// array pops the elements above mark off p.stack into an array of their
// own: a slice of the slab for a small one, an allocation for a larger.
func (p *fastParser) array(mark int) []any {
	elems := p.stack[mark:]
	n := len(elems)
	var a []any
	if n > fastSlab/2 {
		a = make([]any, n)
	} else {
		if n > cap(p.slab)-len(p.slab) {
			p.slab = make([]any, 0, fastSlab)
		}
		k := len(p.slab)
		p.slab = p.slab[:k+n]
		a = p.slab[k : k+n : k+n]
	}
	copy(a, elems)
	clear(elems)
	p.stack = p.stack[:mark]
	return a
}

// fastMaxDepth is well under encoding/json's nesting limit; deeper input
// takes the slow path.
const fastMaxDepth = 200

func (p *fastParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *fastParser) value(depth int) (any, bool) {
	if p.i >= len(p.b) || depth > fastMaxDepth {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		m := map[string]any{}
		p.space()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			return m, true
		}
		for {
			p.space()
			k, ok := p.key()
			if !ok {
				return nil, false
			}
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return nil, false
			}
			p.i++
			p.space()
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[k] = v
			if end, ok := p.after('}'); !ok || end {
				return m, ok
			}
		}
	case c == '[':
		p.i++
		p.space()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return emptyArray, true
		}
		// The elements go on the parser's stack, and the array is
		// allocated once at its end, at its size.
		mark := len(p.stack)
		for {
			p.space()
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			p.stack = append(p.stack, v)
			if end, ok := p.after(']'); !ok || end {
				if !ok {
					return nil, false
				}
				return p.array(mark), true
			}
		}
	case c == '"':
		if v, ok := p.common(); ok {
			return v, true
		}
		s, ok := p.str()
		return s, ok
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return true, p.lit("true")
	case c == 'f':
		return false, p.lit("false")
	case c == 'n':
		return nil, p.lit("null")
	}
	return nil, false
}

// after consumes what follows a member or element: the closing byte
// (end) or a comma; ok is false for anything else.
func (p *fastParser) after(closing byte) (end, ok bool) {
	p.space()
	if p.i >= len(p.b) {
		return false, false
	}
	switch p.b[p.i] {
	case closing:
		p.i++
		return true, true
	case ',':
		p.i++
		return false, true
	}
	return false, false
}

func (p *fastParser) lit(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// common returns the string at p.i if it is one of those every
// transaction has (its operations' member names and keywords), boxed
// without allocating.
func (p *fastParser) common() (any, bool) {
	b, ok := p.plainStr()
	if !ok {
		return nil, false
	}
	var v any
	switch string(b) {
	case "set":
		v = "set"
	case "map":
		v = "map"
	case "uuid":
		v = "uuid"
	case "named-uuid":
		v = "named-uuid"
	case "insert":
		v = "insert"
	case "delete":
		v = "delete"
	case "mutate":
		v = "mutate"
	case "update":
		v = "update"
	case "select":
		v = "select"
	case "wait":
		v = "wait"
	case "comment":
		v = "comment"
	case "commit":
		v = "commit"
	case "assert":
		v = "assert"
	case "abort":
		v = "abort"
	case "==":
		v = "=="
	case "!=":
		v = "!="
	case "includes":
		v = "includes"
	case "excludes":
		v = "excludes"
	case "+=":
		v = "+="
	case "-=":
		v = "-="
	case "_uuid":
		v = "_uuid"
	case "external_ids":
		v = "external_ids"
	case "other_config":
		v = "other_config"
	case "Open_vSwitch":
		v = "Open_vSwitch"
	default:
		return nil, false
	}
	p.i += len(b) + 2
	return v, true
}

// key parses an object's member name, without allocating for the names
// transactions' operations have.
func (p *fastParser) key() (string, bool) {
	if b, ok := p.plainStr(); ok {
		var k string
		switch string(b) {
		case "op":
			k = "op"
		case "table":
			k = "table"
		case "where":
			k = "where"
		case "row":
			k = "row"
		case "rows":
			k = "rows"
		case "mutations":
			k = "mutations"
		case "columns":
			k = "columns"
		case "uuid-name":
			k = "uuid-name"
		case "uuid":
			k = "uuid"
		case "comment":
			k = "comment"
		case "durable":
			k = "durable"
		case "timeout":
			k = "timeout"
		case "until":
			k = "until"
		case "lock":
			k = "lock"
		}
		if k != "" {
			p.i += len(b) + 2
			return k, true
		}
	}
	return p.str()
}

// plainStr returns the content of the string at p.i if it is short and
// plain ASCII (no escapes), without consuming it.
func (p *fastParser) plainStr() ([]byte, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	start := p.i + 1
	for j := start; j < len(p.b) && j-start <= 16; j++ {
		switch c := p.b[j]; {
		case c == '"':
			return p.b[start:j], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

// str parses a string without escapes, control characters or invalid UTF-8.
func (p *fastParser) str() (string, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", false
	}
	start := p.i + 1
	ascii := true
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			s := p.b[start:j]
			if !ascii && !utf8.Valid(s) {
				return "", false
			}
			p.i = j + 1
			return string(s), true
		case c == '\\':
			return p.escapedStr(start, j)
		case c < 0x20:
			return "", false
		case c >= 0x80:
			ascii = false
		}
	}
	return "", false
}

// escapedStr continues str at b[j], the string's first backslash: the
// string is unescaped into a copy. Escapes of surrogates (\ud800-\udfff)
// take the slow path, where encoding/json pairs or replaces them. OVN's
// logical flows quote names in their matches ("outport == \"sw0-p1\""),
// so most of ovn-northd's Southbound transactions have escapes.
func (p *fastParser) escapedStr(start, j int) (string, bool) {
	b := p.b
	out := make([]byte, 0, j-start+16)
	out = append(out, b[start:j]...)
	for j < len(b) {
		c := b[j]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return "", false
			}
			p.i = j + 1
			return string(out), true
		case c < 0x20:
			return "", false
		case c != '\\':
			out = append(out, c)
			j++
			continue
		}
		if j+1 >= len(b) {
			return "", false
		}
		switch e := b[j+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if j+6 > len(b) {
				return "", false
			}
			var r rune
			for _, h := range b[j+2 : j+6] {
				switch {
				case h >= '0' && h <= '9':
					r = r<<4 | rune(h-'0')
				case h >= 'a' && h <= 'f':
					r = r<<4 | rune(h-'a'+10)
				case h >= 'A' && h <= 'F':
					r = r<<4 | rune(h-'A'+10)
				default:
					return "", false
				}
			}
			if r >= 0xd800 && r <= 0xdfff {
				return "", false
			}
			out = utf8.AppendRune(out, r)
			j += 6
			continue
		default:
			return "", false
		}
		j += 2
	}
	return "", false
}

// number parses a number by JSON's grammar, as a json.Number.
func (p *fastParser) number() (any, bool) {
	start := p.i
	b := p.b
	i := p.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return nil, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	p.i = i
	return json.Number(b[start:i]), true
}

// opMember numbers an operation's member names, for the sets of them
// fastDecodeOp checks.
var opMember = map[string]uint16{}

// opAllowed is opMembers as sets of opMember bits.
var opAllowed = map[string]uint16{}

func init() {
	for op, names := range opMembers {
		var set uint16
		for _, n := range strings.Fields(names) {
			if opMember[n] == 0 {
				opMember[n] = 1 << len(opMember)
			}
			set |= opMember[n]
		}
		opAllowed[op] = set
	}
	opMember["op"] = 1 << len(opMember)
}

// fastDecodeOp decodes one operation object straight into its members,
// without the map of fastDecode. It reports false for whatever needs the
// general path (decodeJSON, then decodeOp), which gives the exact errors:
// not an object, a member named twice or not allowed for the operation, a
// member of the wrong JSON type, an unknown operation, or a value that
// fastDecode would not take.
func fastDecodeOp(raw []byte) (*opRequest, bool) {
	var stack [16]any
	p := fastParser{b: raw, stack: stack[:0]}
	p.space()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return nil, false
	}
	p.i++
	op := &opRequest{}
	var seen uint16
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
	} else {
		for {
			p.space()
			k, ok := p.key()
			if !ok {
				return nil, false
			}
			bit := opMember[k]
			if bit == 0 || seen&bit != 0 {
				return nil, false
			}
			seen |= bit
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return nil, false
			}
			p.i++
			p.space()
			v, ok := p.value(1)
			if !ok || !op.setMember(k, v) {
				return nil, false
			}
			if end, ok := p.after('}'); !ok {
				return nil, false
			} else if end {
				break
			}
		}
	}
	p.space()
	allowed, known := opAllowed[op.Op]
	if p.i != len(p.b) || !known || seen&^(allowed|opMember["op"]) != 0 {
		return nil, false
	}
	return op, true
}

// setMember sets member name of op to v as decodeOp does, and reports
// false if v has the wrong JSON type for it.
func (op *opRequest) setMember(name string, v any) bool {
	switch name {
	case "op":
		s, ok := v.(string)
		op.Op = s
		return ok
	case "table", "uuid-name", "uuid", "until", "comment", "lock":
		s, ok := v.(string)
		if !ok {
			return false
		}
		switch name {
		case "table":
			op.Table = &s
		case "uuid-name":
			op.UUIDName = &s
		case "uuid":
			op.UUID = &s
		case "until":
			op.Until = &s
		case "comment":
			op.Comment = &s
		case "lock":
			op.Lock = &s
		}
	case "row":
		op.Row = v
	case "rows":
		op.Rows = v
	case "where":
		op.Where = v
	case "mutations":
		op.Mutations = v
	case "columns":
		_, ok := v.([]any)
		op.Columns = v
		return ok
	case "sort":
		a, ok := v.([]any)
		op.Sort = a
		return ok
	case "timeout":
		n, ok := v.(json.Number)
		f, err := n.Float64()
		op.Timeout = &f
		return ok && err == nil
	case "durable":
		b, ok := v.(bool)
		op.Durable = &b
		return ok
	default:
		return false
	}
	return true
}
