package jsonrpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"
)

// MaxNesting is the deepest nesting of arrays and objects accepted, as in
// OVS's JSON parser ("input exceeds maximum nesting depth 1000").
const MaxNesting = 1000

// DefaultMaxMessageSize bounds one message. OVS has no limit; 256 MiB is far
// above the largest transaction a real client sends (a full OVN northbound
// database) and keeps a hostile peer from exhausting memory.
const DefaultMaxMessageSize = 256 << 20

// ErrTooLarge is returned when a message exceeds the decoder's size limit.
var ErrTooLarge = errors.New("message too large")

// scanner finds where one JSON value ends in a byte stream, checking its
// syntax incrementally so that malformed input is reported as soon as it
// is known to be malformed, with the error OVS's json_parser_feed reports
// at the same place: a lexer splits the stream into tokens, a parser with
// OVS's states takes them one by one. A number or keyword ends at the
// byte after it, and its errors, and the parser's errors about it, are
// reported there; a string's at its closing quote; a structural byte's at
// itself.
type scanner struct {
	lex     lexState
	parse   parseState
	stack   []byte // the open containers, '{' or '['
	tok     int    // where the number or keyword being read began
	num     numState
	exp     int  // the exponent so far, for its range
	expBig  bool // the exponent is out of range
	numErr  string
	hex     int  // remaining hex digits of a \u escape
	code    rune // value of the \u escape being read
	high    bool // the \u escape being read must be a trailing surrogate
	started bool // a token has begun: the message has
	// strErr is an error in the string being scanned. OVS's lexer finds
	// the end of a string before it unescapes it, so errors in escapes are
	// reported at the closing quote; so are they here.
	strErr error
}

type lexState uint8

const (
	lStart      lexState = iota // between tokens
	lKeyword                    // in a run of letters
	lNumber                     // in a run of number bytes
	lString                     // inside a string
	lStringEsc                  // after a backslash
	lStringHex                  // inside \uXXXX
	lSurrogate                  // after a leading surrogate: '\\' expected
	lSurrogateU                 // after a leading surrogate and '\\': 'u' expected
)

// parseState is OVS's json_parse_state.
type parseState uint8

const (
	pStart       parseState = iota // the message's first token
	pObjectInit                    // after '{': a name or '}'
	pObjectName                    // after ',' in an object
	pObjectColon                   // after a name
	pObjectValue                   // after ':'
	pObjectNext                    // after a member: ',' or '}'
	pArrayInit                     // after '[': a value or ']'
	pArrayValue                    // after ',' in an array
	pArrayNext                     // after an element: ',' or ']'
)

// The tokens the parser takes besides the structural bytes.
const (
	tString = 's'
	tScalar = 'v' // a number, true, false or null
)

// numState follows json_lex_number's reading of a number, to give its
// first error.
type numState uint8

const (
	nSign  numState = iota // after '-'
	nZero                  // after a leading 0
	nInt                   // in integer digits
	nDot                   // after '.'
	nFrac                  // in fraction digits
	nE                     // after 'e'
	nESign                 // after the exponent's sign
	nExp                   // in exponent digits
	nBad                   // numErr is set
)

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+'
}

func (s *scanner) reset() { *s = scanner{stack: s.stack[:0]} }

// input runs OVS's parser (json_parser_input) on one token: a structural
// byte, tString or tScalar. It reports whether the message's outermost
// container closed. Where strings and scalars are taken is scalar's.
func (s *scanner) input(tok byte) (done bool, err error) {
	if (tok == tString || tok == tScalar) && s.scalar(tok == tString) {
		return false, nil
	}
	switch s.parse {
	case pStart:
		if tok == '{' || tok == '[' {
			return false, s.push(tok)
		}
		return false, protocolError("syntax error at beginning of input")
	case pObjectInit, pObjectName:
		if tok == '}' && s.parse == pObjectInit {
			return s.pop(), nil
		}
		return false, protocolError("syntax error parsing object expecting string")
	case pObjectColon:
		if tok != ':' {
			return false, protocolError("syntax error parsing object expecting ':'")
		}
		s.parse = pObjectValue
	case pObjectValue:
		return false, s.value(tok)
	case pObjectNext:
		switch tok {
		case ',':
			s.parse = pObjectName
		case '}':
			return s.pop(), nil
		default:
			return false, protocolError("syntax error expecting '}' or ','")
		}
	case pArrayInit, pArrayValue:
		if tok == ']' && s.parse == pArrayInit {
			return s.pop(), nil
		}
		return false, s.value(tok)
	case pArrayNext:
		switch tok {
		case ',':
			s.parse = pArrayValue
		case ']':
			return s.pop(), nil
		default:
			return false, protocolError("syntax error expecting ']' or ','")
		}
	}
	return false, nil
}

// scalar takes a string (name true) or another scalar where the parser
// expects a member name or a value, as input does, reporting false
// anywhere else (input then gives the error).
func (s *scanner) scalar(name bool) bool {
	switch s.parse {
	case pObjectInit, pObjectName:
		if !name {
			return false
		}
		s.parse = pObjectColon
	case pObjectValue:
		s.parse = pObjectNext
	case pArrayInit, pArrayValue:
		s.parse = pArrayNext
	default:
		return false
	}
	return true
}

// inputErr is input's error for a string or scalar that scalar refused.
func (s *scanner) inputErr(tok byte) error {
	_, err := s.input(tok)
	return err
}

// value takes a structural byte where a value is expected
// (json_parse_value): a container opens, anything else is an error.
func (s *scanner) value(tok byte) error {
	if tok == '{' || tok == '[' {
		return s.push(tok)
	}
	return protocolError("syntax error expecting value")
}

func (s *scanner) push(c byte) error {
	if len(s.stack) >= MaxNesting {
		return protocolError(fmt.Sprintf("input exceeds maximum nesting depth %d", MaxNesting))
	}
	s.stack = append(s.stack, c)
	if c == '{' {
		s.parse = pObjectInit
	} else {
		s.parse = pArrayInit
	}
	return nil
}

// pop closes the innermost container; it reports whether that was the
// message's outermost.
func (s *scanner) pop() bool {
	s.stack = s.stack[:len(s.stack)-1]
	if len(s.stack) == 0 {
		return true
	}
	if s.stack[len(s.stack)-1] == '{' {
		s.parse = pObjectNext
	} else {
		s.parse = pArrayNext
	}
	return false
}

// number follows one more byte c of a number, recording its first error
// as json_lex_number would find it.
func (s *scanner) number(c byte) {
	digit := c >= '0' && c <= '9'
	switch s.num {
	case nSign:
		switch {
		case c == '0':
			s.num = nZero
		case digit:
			s.num = nInt
		default:
			s.bad("'-' must be followed by digit")
		}
	case nZero, nInt:
		switch {
		case digit && s.num == nZero:
			s.bad("leading zeros not allowed")
		case digit:
		case c == '.':
			s.num = nDot
		case c == 'e' || c == 'E':
			s.num = nE
		default:
			s.bad("syntax error in number")
		}
	case nDot:
		if !digit {
			s.bad("decimal point must be followed by digit")
			return
		}
		s.num = nFrac
	case nFrac:
		switch {
		case digit:
		case c == 'e' || c == 'E':
			s.num = nE
		default:
			s.bad("syntax error in number")
		}
	case nE, nESign:
		switch {
		case (c == '+' || c == '-') && s.num == nE:
			s.num = nESign
		case digit:
			s.num, s.exp = nExp, int(c-'0')
		default:
			s.bad("exponent must contain at least one digit")
		}
	case nExp:
		switch {
		case !digit:
			s.bad("syntax error in number")
		case s.exp >= math.MaxInt32/10:
			s.expBig = true
		default:
			s.exp = s.exp*10 + int(c-'0')
		}
	}
}

func (s *scanner) bad(msg string) { s.num, s.numErr = nBad, msg }

// endNumber checks the number text, which ended, as json_lex_number does
// and reports its error.
func (s *scanner) endNumber(text []byte) error {
	switch {
	case s.num == nSign:
		return protocolError("'-' must be followed by digit")
	case s.num == nDot:
		return protocolError("decimal point must be followed by digit")
	case s.num == nE || s.num == nESign:
		return protocolError("exponent must contain at least one digit")
	case s.num == nBad:
		return protocolError(s.numErr)
	case s.expBig:
		return protocolError("exponent outside valid range")
	}
	// str_to_double fails on a number too large for a double.
	if s.num != nZero && s.num != nInt || len(text) > 18 {
		if f, err := strconv.ParseFloat(string(text), 64); err != nil && math.IsInf(f, 0) {
			return protocolError("number outside valid range")
		}
	}
	return nil
}

// feed scans msg[from:], where msg is the message so far (tokens may
// begin before from). It returns the offset in msg up to which it
// scanned, and whether a complete message ends there; an error is at the
// offset returned.
func (s *scanner) feed(msg []byte, from int) (n int, done bool, err error) {
	for i := from; i < len(msg); {
		c := msg[i]
		switch s.lex {
		case lStart:
			switch {
			case isSpace(c):
			case c == ':' && s.parse == pObjectColon:
				s.parse = pObjectValue // the common cases, without a call
			case c == ',' && s.parse == pObjectNext:
				s.parse = pObjectName
			case c == ',' && s.parse == pArrayNext:
				s.parse = pArrayValue
			case c == '{' || c == '[' || c == '}' || c == ']' || c == ':' || c == ',':
				s.started = true
				done, err := s.input(c)
				if err != nil {
					return i, false, err
				}
				if done {
					return i + 1, true, nil
				}
			case c == '"':
				s.started = true
				s.lex, s.strErr = lString, nil
			case c >= 'a' && c <= 'z':
				s.started = true
				s.lex, s.tok = lKeyword, i
			case c == '-' || c >= '0' && c <= '9':
				s.started = true
				s.lex, s.tok, s.exp, s.expBig = lNumber, i, 0, false
				s.num = nSign
				if c == '0' {
					s.num = nZero
				} else if c != '-' {
					s.num = nInt
				}
			case c >= 0x20 && c < 0x7f:
				return i, false, protocolError(fmt.Sprintf("invalid character '%c'", c))
			default:
				return i, false, protocolError(fmt.Sprintf("invalid character U+%04x", c))
			}
			i++
		case lKeyword:
			if isAlpha(c) {
				i++
				continue
			}
			// The keyword ends before c, which is read again.
			s.lex = lStart
			switch kw := msg[s.tok:i]; string(kw) {
			case "true", "false", "null":
			default:
				return i, false, protocolError(fmt.Sprintf("invalid keyword '%s'", kw))
			}
			if !s.scalar(false) {
				return i, false, s.inputErr(tScalar)
			}
		case lNumber:
			if c >= '0' && c <= '9' && (s.num == nInt || s.num == nFrac) {
				// Digits, most of a number, in a tight loop.
				for i++; i < len(msg) && msg[i] >= '0' && msg[i] <= '9'; i++ {
				}
				continue
			}
			if isNumberByte(c) {
				s.number(c)
				i++
				continue
			}
			s.lex = lStart
			if err := s.endNumber(msg[s.tok:i]); err != nil {
				return i, false, err
			}
			if !s.scalar(false) {
				return i, false, s.inputErr(tScalar)
			}
		case lString:
			// A string's plain bytes, most of a message, in a tight
			// loop rather than through the switch one at a time.
			j := i
			for j < len(msg) && msg[j] != '"' && msg[j] != '\\' && msg[j] >= 0x20 {
				j++
			}
			if j == len(msg) {
				return len(msg), false, nil
			}
			i, c = j, msg[j]
			switch {
			case c == '"':
				if s.strErr != nil {
					return i, false, s.strErr
				}
				s.lex = lStart
				if !s.scalar(true) {
					return i, false, s.inputErr(tString)
				}
			case c == '\\':
				s.lex = lStringEsc
			default:
				return i, false, protocolError(fmt.Sprintf("U+%04X must be escaped in quoted string", c))
			}
			i++
		case lStringEsc:
			switch c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.lex = lString
			case 'u':
				s.hex, s.code, s.lex = 4, 0, lStringHex
			default:
				s.stringError(fmt.Sprintf("bad escape \\%c", c))
				s.lex = lString
			}
			i++
		case lStringHex:
			if !isHex(c) {
				if c == '"' {
					s.stringError("quoted string ends within \\u escape")
				} else {
					s.stringError("malformed \\u escape")
				}
				s.high, s.lex = false, lString
				continue // c again, in the string
			}
			i++
			s.code = s.code<<4 | rune(hexValue(c))
			if s.hex--; s.hex > 0 {
				continue
			}
			s.lex = lString
			switch {
			case s.code == 0:
				// OVS's strings are C strings (lib/json.c).
				s.stringError("null bytes not supported in quoted strings")
			case s.high && (s.code < 0xdc00 || s.code > 0xdfff):
				s.stringError("second half of escaped surrogate pair is not trailing surrogate")
			case !s.high && s.code >= 0xd800 && s.code < 0xdc00:
				s.lex = lSurrogate
			}
			s.high = false
		case lSurrogate, lSurrogateU:
			want := byte('\\')
			if s.lex == lSurrogateU {
				want = 'u'
			}
			if c != want {
				s.stringError("malformed escaped surrogate pair")
				if s.lex == lSurrogateU {
					s.lex = lStringEsc
				} else {
					s.lex = lString
				}
				continue // c again
			}
			i++
			if s.lex == lSurrogate {
				s.lex = lSurrogateU
			} else {
				s.hex, s.code, s.high, s.lex = 4, 0, true, lStringHex
			}
		}
	}
	return len(msg), false, nil
}

// stringError records the first error in the current string.
func (s *scanner) stringError(msg string) {
	if s.strErr == nil {
		s.strErr = protocolError(msg)
	}
}

func hexValue(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// Decoder reads JSON-RPC messages from a stream. Messages may arrive split
// across reads or many per read.
type Decoder struct {
	r       io.Reader
	max     int
	buf     []byte
	start   int // first byte of the current message
	scanned int // bytes of buf already fed to sc
	end     int // valid bytes in buf
	sc      scanner
	// lead is the whitespace dropped before the current message began,
	// which an error's position counts as OVS's parser does.
	lead position
	// Received counts bytes read, for activity tracking.
	Received uint64
}

// position is a place in a message: its line and column, both from 0, and
// its byte offset.
type position struct{ line, column, byte int }

// advance moves p past b.
func (p position) advance(b []byte) position {
	p.byte += len(b)
	if k := bytes.LastIndexByte(b, '\n'); k >= 0 {
		p.line += bytes.Count(b, []byte{'\n'})
		p.column = len(b) - 1 - k
	} else {
		p.column += len(b)
	}
	return p
}

// NewDecoder returns a decoder reading from r that rejects messages larger
// than maxSize bytes (DefaultMaxMessageSize if maxSize <= 0).
func NewDecoder(r io.Reader, maxSize int) *Decoder {
	if maxSize <= 0 {
		maxSize = DefaultMaxMessageSize
	}
	return &Decoder{r: r, max: maxSize, buf: make([]byte, minBuffer)}
}

// minBuffer is the decoder's initial buffer; it grows for large messages.
const minBuffer = 4096

// LargeBuffer is the size from which a buffer is not kept once its message
// is done: a connection that once received a 64 MiB message would hold
// 64 MiB (or 128, as buffers double) for its life.
const LargeBuffer = 1 << 20

// shrink drops a large buffer once the message in it has been handed out,
// keeping the bytes after it, and after a spike releases the memory to the
// OS (see ReleaseMemory).
func (d *Decoder) shrink() {
	if len(d.buf) < LargeBuffer || d.end-d.start > len(d.buf)/4 {
		return
	}
	size := max(minBuffer, d.end-d.start)
	nb := make([]byte, size)
	copy(nb, d.buf[d.start:d.end])
	d.end -= d.start
	d.scanned -= d.start
	d.start = 0
	if len(d.buf) >= spikeSize {
		ReleaseMemory()
	}
	d.buf = nb
}

// Buffered returns the size of the decoder's buffer.
func (d *Decoder) Buffered() int { return len(d.buf) }

// Next returns the raw bytes of the next complete message, valid until the
// following call. Errors wrapping ErrProtocol or ErrTooLarge are fatal to
// the stream; io.EOF means the peer closed it between messages.
func (d *Decoder) Next() ([]byte, error) {
	d.shrink()
	for {
		if d.scanned < d.end {
			n, done, err := d.sc.feed(d.buf[d.start:d.end], d.scanned-d.start)
			d.scanned = d.start + n
			if err != nil {
				return nil, &posError{d.lead.advance(d.buf[d.start:d.scanned]), err}
			}
			if d.sc.started && d.scanned-d.start > d.max {
				return nil, ErrTooLarge
			}
			if done {
				msg := d.buf[d.start:d.scanned]
				d.start = d.scanned
				d.sc.reset()
				d.lead = position{}
				// Skip whitespace-only content before the message start.
				for len(msg) > 0 && isSpace(msg[0]) {
					msg = msg[1:]
				}
				if !utf8.Valid(msg) {
					return nil, protocolError("invalid UTF-8 in message")
				}
				return msg, nil
			}
			if !d.sc.started {
				// Only whitespace so far: drop it, counting it.
				d.lead = d.lead.advance(d.buf[d.start:d.scanned])
				d.start = d.scanned
			}
		}
		if d.start == d.end {
			d.start, d.scanned, d.end = 0, 0, 0
		}
		if d.end == len(d.buf) {
			if d.start > 0 {
				copy(d.buf, d.buf[d.start:d.end])
				d.end -= d.start
				d.scanned -= d.start
				d.start = 0
			}
			if d.end == len(d.buf) {
				// One byte past the limit is enough to refuse a
				// message: doubling a 256 MiB buffer would take 512.
				nb := make([]byte, max(min(2*len(d.buf), d.max+1), len(d.buf)+minBuffer))
				copy(nb, d.buf[:d.end])
				d.buf = nb
			}
		}
		n, err := d.r.Read(d.buf[d.end:])
		d.end += n
		d.Received += uint64(n)
		if n > 0 {
			continue
		}
		if err == nil {
			continue
		}
		if err == io.EOF && d.sc.started {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
}

// posError is a syntax error with its place in the message, which OVS's
// parser counts from the message's first byte, the whitespace before it
// included ("line 0, column 36, byte 36").
type posError struct {
	at  position
	err error
}

func (e *posError) Error() string {
	return fmt.Sprintf("line %d, column %d, byte %d: %v", e.at.line, e.at.column, e.at.byte, e.err)
}

func (e *posError) Unwrap() error { return e.err }

// Decode returns the next message, parsed and validated.
func (d *Decoder) Decode() (*Message, error) {
	raw, err := d.Next()
	if err != nil {
		return nil, err
	}
	return parseValid(raw)
}
