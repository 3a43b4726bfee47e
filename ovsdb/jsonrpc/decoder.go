package jsonrpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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
// syntax incrementally so that malformed input is reported as soon as the
// offending byte arrives (like OVS's json_parser_feed), not when a closing
// brace that may never come arrives.
type scanner struct {
	state   scanState
	stack   []byte // '{' or '['
	lit     string // remaining bytes of true/false/null
	hex     int    // remaining hex digits of a \u escape
	code    rune   // value of the \u escape being read
	high    bool   // the \u escape being read must be a trailing surrogate
	started bool
	// strErr is an error in the string being scanned. OVS's lexer finds
	// the end of a string before it unescapes it, so errors in escapes are
	// reported at the closing quote; so are they here.
	strErr error
}

type scanState uint8

const (
	sTop        scanState = iota // before the message: whitespace, then '{'
	sValue                       // a value is expected
	sValueOrEnd                  // after '[': a value or ']'
	sKeyOrEnd                    // after '{': a key or '}'
	sKey                         // after ',' in an object: a key
	sColon                       // after a key
	sAfterValue                  // after a value in a container: ',' or close
	sString                      // inside a string
	sStringEsc                   // after a backslash
	sStringHex                   // inside \uXXXX
	sSurrogate                   // after a leading surrogate: '\\' expected
	sSurrogateU                  // after a leading surrogate and '\\': 'u' expected
	sLiteral                     // inside true/false/null
	sNumNeg                      // after '-'
	sNumZero                     // after a leading 0
	sNumInt                      // in integer digits
	sNumDot                      // after '.'
	sNumFrac                     // in fraction digits
	sNumE                        // after 'e'
	sNumESign                    // after 'e+' or 'e-'
	sNumExp                      // in exponent digits
)

// keyString marks a string that is an object key, so that sColon follows it.
// It is kept on the stack as a pseudo container.
const keyString = 'k'

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *scanner) reset() { *s = scanner{stack: s.stack[:0]} }

// endValue moves past a completed value. It reports whether the whole
// message is complete.
func (s *scanner) endValue() bool {
	if len(s.stack) == 0 {
		return true
	}
	if s.stack[len(s.stack)-1] == keyString {
		s.stack = s.stack[:len(s.stack)-1]
		s.state = sColon
		return false
	}
	s.state = sAfterValue
	return false
}

// feed scans data. It returns the number of bytes consumed and whether a
// complete value ends at data[n-1].
func (s *scanner) feed(data []byte) (n int, done bool, err error) {
	for i := 0; i < len(data); i++ {
		c := data[i]
	again:
		switch s.state {
		case sTop:
			if isSpace(c) {
				continue
			}
			if c != '{' {
				return i, false, protocolError("message is not a JSON object")
			}
			s.started = true
			s.stack = append(s.stack, '{')
			s.state = sKeyOrEnd
		case sValue, sValueOrEnd:
			if isSpace(c) {
				continue
			}
			if c == ']' && s.state == sValueOrEnd {
				s.stack = s.stack[:len(s.stack)-1]
				if s.endValue() {
					return i + 1, true, nil
				}
				continue
			}
			switch {
			case c == '{' || c == '[':
				if len(s.stack) >= MaxNesting {
					return i, false, protocolError(fmt.Sprintf("input exceeds maximum nesting depth %d", MaxNesting))
				}
				s.stack = append(s.stack, c)
				if c == '{' {
					s.state = sKeyOrEnd
				} else {
					s.state = sValueOrEnd
				}
			case c == '"':
				s.state = sString
			case c == 't':
				s.lit, s.state = "rue", sLiteral
			case c == 'f':
				s.lit, s.state = "alse", sLiteral
			case c == 'n':
				s.lit, s.state = "ull", sLiteral
			case c == '-':
				s.state = sNumNeg
			case c == '0':
				s.state = sNumZero
			case c >= '1' && c <= '9':
				s.state = sNumInt
			default:
				return i, false, syntaxError(c)
			}
		case sKeyOrEnd, sKey:
			if isSpace(c) {
				continue
			}
			if c == '}' && s.state == sKeyOrEnd {
				s.stack = s.stack[:len(s.stack)-1]
				if s.endValue() {
					return i + 1, true, nil
				}
				continue
			}
			if c != '"' {
				return i, false, protocolError("syntax error parsing object expecting string")
			}
			s.stack = append(s.stack, keyString)
			s.state = sString
		case sColon:
			if isSpace(c) {
				continue
			}
			if c != ':' {
				return i, false, protocolError("syntax error parsing object expecting ':'")
			}
			s.state = sValue
		case sAfterValue:
			if isSpace(c) {
				continue
			}
			top := s.stack[len(s.stack)-1]
			switch {
			case c == ',' && top == '{':
				s.state = sKey
			case c == ',' && top == '[':
				s.state = sValue
			case c == '}' && top == '{', c == ']' && top == '[':
				s.stack = s.stack[:len(s.stack)-1]
				if s.endValue() {
					return i + 1, true, nil
				}
			default:
				return i, false, syntaxError(c)
			}
		case sString:
			// A string's plain bytes, most of a message, in a tight
			// loop rather than through the switch one at a time.
			if c != '"' && c != '\\' && c >= 0x20 {
				j := i + 1
				for j < len(data) && data[j] != '"' && data[j] != '\\' && data[j] >= 0x20 {
					j++
				}
				if j == len(data) {
					return len(data), false, nil
				}
				i, c = j, data[j]
			}
			switch {
			case c == '"':
				if s.strErr != nil {
					return i, false, s.strErr
				}
				if s.endValue() {
					return i + 1, true, nil
				}
			case c == '\\':
				s.state = sStringEsc
			case c < 0x20:
				return i, false, protocolError(fmt.Sprintf("U+%04X must be escaped in quoted string", c))
			}
		case sStringEsc:
			switch c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.state = sString
			case 'u':
				s.hex, s.code, s.state = 4, 0, sStringHex
			default:
				s.stringError(fmt.Sprintf("bad escape \\%c", c))
				s.state = sString
			}
		case sStringHex:
			if !isHex(c) {
				if c == '"' {
					s.stringError("quoted string ends within \\u escape")
				} else {
					s.stringError("malformed \\u escape")
				}
				s.high, s.state = false, sString
				goto again
			}
			s.code = s.code<<4 | rune(hexValue(c))
			if s.hex--; s.hex > 0 {
				break
			}
			s.state = sString
			switch {
			case s.code == 0:
				// OVS's strings are C strings (lib/json.c).
				s.stringError("null bytes not supported in quoted strings")
			case s.high && (s.code < 0xdc00 || s.code > 0xdfff):
				s.stringError("second half of escaped surrogate pair is not trailing surrogate")
			case !s.high && s.code >= 0xd800 && s.code < 0xdc00:
				s.state = sSurrogate
			}
			s.high = false
		case sSurrogate, sSurrogateU:
			want := byte('\\')
			if s.state == sSurrogateU {
				want = 'u'
			}
			if c != want {
				s.stringError("malformed escaped surrogate pair")
				if s.state == sSurrogateU {
					s.state = sStringEsc
				} else {
					s.state = sString
				}
				goto again
			}
			if s.state == sSurrogate {
				s.state = sSurrogateU
			} else {
				s.hex, s.code, s.high, s.state = 4, 0, true, sStringHex
			}
		case sLiteral:
			if c != s.lit[0] {
				return i, false, protocolError("invalid keyword")
			}
			if s.lit = s.lit[1:]; s.lit == "" {
				if s.endValue() {
					return i + 1, true, nil
				}
			}
		case sNumNeg:
			switch {
			case c == '0':
				s.state = sNumZero
			case c >= '1' && c <= '9':
				s.state = sNumInt
			default:
				return i, false, protocolError("'-' must be followed by digit")
			}
		case sNumZero, sNumInt:
			switch {
			case c >= '0' && c <= '9' && s.state == sNumInt:
			case c >= '0' && c <= '9':
				return i, false, protocolError("leading zeros not allowed")
			case c == '.':
				s.state = sNumDot
			case c == 'e' || c == 'E':
				s.state = sNumE
			default:
				s.endValue()
				goto again
			}
		case sNumDot:
			if c < '0' || c > '9' {
				return i, false, protocolError("decimal point must be followed by digit")
			}
			s.state = sNumFrac
		case sNumFrac:
			switch {
			case c >= '0' && c <= '9':
			case c == 'e' || c == 'E':
				s.state = sNumE
			default:
				s.endValue()
				goto again
			}
		case sNumE:
			switch {
			case c == '+' || c == '-':
				s.state = sNumESign
			case c >= '0' && c <= '9':
				s.state = sNumExp
			default:
				return i, false, protocolError("exponent must contain at least one digit")
			}
		case sNumESign:
			if c < '0' || c > '9' {
				return i, false, protocolError("exponent must contain at least one digit")
			}
			s.state = sNumExp
		case sNumExp:
			if c < '0' || c > '9' {
				s.endValue()
				goto again
			}
		}
	}
	return len(data), false, nil
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

func syntaxError(c byte) error {
	if c >= 0x20 && c < 0x7f {
		return protocolError(fmt.Sprintf("syntax error at '%c'", c))
	}
	return protocolError(fmt.Sprintf("syntax error at byte 0x%02x", c))
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
			n, done, err := d.sc.feed(d.buf[d.scanned:d.end])
			d.scanned += n
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
