package jsonrpc

import (
	"encoding/json"
	"errors"
)

// Splitting of already validated JSON: the decoder has checked the syntax of
// every message, so members and elements can be found without a second
// full parse (encoding/json re-validates everything it unmarshals).

// skipValue returns the index just past the JSON value starting at b[i]
// (after whitespace). b must be valid JSON.
func skipValue(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	default:
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && !isSpace(b[i]) {
			i++
		}
		return i
	}
}

// skipString returns the index just past the string starting at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

var errNotArray = errors.New("not a JSON array")

// SplitArray returns the elements of a JSON array. The input must be valid
// JSON, such as a message's params.
func SplitArray(b []byte) ([]json.RawMessage, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, errNotArray
	}
	i = skipSpace(b, i+1)
	var out []json.RawMessage
	if i < len(b) && b[i] == ']' {
		return out, nil
	}
	// Room for a request's usual params (a database and a few
	// operations) at once, rather than growing 1, 2, 4.
	out = make([]json.RawMessage, 0, 4)
	for i < len(b) {
		start := skipSpace(b, i)
		end := skipValue(b, start)
		out = append(out, json.RawMessage(b[start:end:end]))
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ',' {
			break
		}
		i++
	}
	return out, nil
}

// SplitObject calls fn for each member of a valid JSON object; key is the
// raw key including quotes.
func SplitObject(b []byte, fn func(key, value []byte)) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return
	}
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] == '"' {
		kend := skipString(b, i)
		key := b[i:kend]
		i = skipSpace(b, kend)
		if i >= len(b) || b[i] != ':' {
			return
		}
		vstart := skipSpace(b, i+1)
		vend := skipValue(b, vstart)
		fn(key, b[vstart:vend:vend])
		i = skipSpace(b, vend)
		if i >= len(b) || b[i] != ',' {
			return
		}
		i = skipSpace(b, i+1)
	}
}
