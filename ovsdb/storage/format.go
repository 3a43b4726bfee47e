package storage

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/govs/govs/ovsdb/db"
	"github.com/govs/govs/ovsdb/jsonrpc"
)

// A record is a header line "OVSDB <magic> <length> <sha1>\n" followed by
// <length> bytes of body whose SHA-1 is <sha1> (40 hex digits). OVS writes
// the body as one line of JSON plus "\n"; the newline is part of the length
// and the hash (ovsdb/log.c, ovsdb_log_compose_record). Standalone databases
// use the magic "JSON"; clustered ones use "CLUSTER".
const (
	headerLead    = "OVSDB "
	magicJSON     = "JSON"
	magicCluster  = "CLUSTER"
	maxHeaderLine = 127 // OVS reads the header with fgets into a 128-byte buffer.
)

// frame returns the header line for body followed by body.
func frame(body []byte) []byte {
	return appendFrame(make([]byte, 0, len(body)+80), body)
}

// appendFrame appends body framed as a record to out.
func appendFrame(out, body []byte) []byte {
	sum := sha1.Sum(body)
	out = append(out, headerLead...)
	out = append(out, magicJSON...)
	out = append(out, ' ')
	out = strconv.AppendInt(out, int64(len(body)), 10)
	out = append(out, ' ')
	out = hex.AppendEncode(out, sum[:])
	out = append(out, '\n')
	return append(out, body...)
}

// marshalSchema returns the record body for a schema: compact JSON object
// plus newline.
func marshalSchema(schema json.RawMessage) ([]byte, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, schema); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if b.Len() == 0 || b.Bytes()[0] != '{' {
		return nil, errors.New("schema is not a JSON object")
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// marshalRecord returns the record body for r. Tables come first (sorted),
// then "_date", "_comment" and "_is_diff". OVS itself emits the members in
// hash order, so no reader depends on the order. A zero Date is stamped with
// the current time: OVS always writes "_date".
func marshalRecord(r *Record) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(recordSize(r))
	b.WriteByte('{')
	b.Write(r.Encoded)
	for _, table := range sortedKeys(r.Tables) {
		if table == "" || table[0] == '_' {
			return nil, fmt.Errorf("invalid table name %q", table)
		}
		appendString(&b, table)
		b.WriteString(":{")
		rows := r.Tables[table]
		for i, id := range sortedKeys(rows) {
			if i > 0 {
				b.WriteByte(',')
			}
			appendString(&b, id)
			b.WriteByte(':')
			if err := appendRow(&b, rows[id], r.Compact); err != nil {
				return nil, fmt.Errorf("table %s row %s: %w", table, id, err)
			}
		}
		b.WriteString("},")
	}
	date := r.Date
	if date == 0 {
		date = time.Now().UnixMilli()
	}
	b.WriteString(`"_date":`)
	var num [20]byte
	b.Write(strconv.AppendInt(num[:0], date, 10))
	if r.Comment != "" {
		b.WriteString(`,"_comment":`)
		appendString(&b, r.Comment)
	}
	if r.IsDiff {
		b.WriteString(`,"_is_diff":true`)
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// sortedKeys returns m's keys in order; a record's tables and rows are
// usually one, which needs no sorting or allocation.
func sortedKeys[V any](m map[string]V) []string {
	switch len(m) {
	case 0: // a record whose tables came encoded
		return nil
	case 1:
		for k := range m {
			return []string{k}
		}
	}
	return slices.Sorted(maps.Keys(m))
}

// recordSize estimates marshalRecord's output for r, so that its buffer
// grows once: the rows' JSON, ids and names, and the comment, each with
// room for its quotes and punctuation.
func recordSize(r *Record) int {
	n := 64 + len(r.Comment) + len(r.Comment)/8 + len(r.Encoded)
	for table, rows := range r.Tables {
		n += len(table) + 8
		for id, raw := range rows {
			n += len(id) + len(raw) + 4
		}
	}
	return n
}

// appendRow appends a row value (object, or null for a deleted row; an empty
// RawMessage counts as null) with insignificant whitespace removed, so the
// body stays on one line; a compact one (see Record.Compact) as it is.
func appendRow(b *bytes.Buffer, raw json.RawMessage, compact bool) error {
	if len(raw) == 0 {
		b.WriteString("null")
		return nil
	}
	start := b.Len()
	if compact {
		b.Write(raw)
	} else if err := json.Compact(b, raw); err != nil {
		return err
	}
	if v := b.Bytes()[start:]; v[0] != '{' && string(v) != "null" {
		return errors.New("row is neither a JSON object nor null")
	}
	return nil
}

// appendString appends s as a JSON string escaped as OVS's json.c does:
// '<', '>', '&' and U+2028/U+2029 as they are (json.Marshal escapes them),
// invalid UTF-8 as U+FFFD. A comment with a quote in it (ovn-nbctl's, of
// the whole command line) no longer goes through an encoding/json
// Encoder, a tenth of the server's CPU for a 200-command transaction.
func appendString(b *bytes.Buffer, s string) {
	b.Write(db.AppendJSONString(b.AvailableBuffer(), s))
}

// corruptError describes a record that cannot be read.
type corruptError struct {
	off int64 // offset of the record's header line
	msg string
}

func (e *corruptError) Error() string { return fmt.Sprintf("offset %d: %s", e.off, e.msg) }

// recordReader reads framed records from the first size bytes of r.
type recordReader struct {
	r    *bufio.Reader
	off  int64 // offset of the next record
	size int64
}

// next returns the magic and body of the next record, io.EOF at a clean end
// of file, a *corruptError for a torn or damaged record, or an I/O error.
func (rd *recordReader) next() (magic string, body []byte, err error) {
	corrupt := func(format string, args ...any) (string, []byte, error) {
		return "", nil, &corruptError{rd.off, fmt.Sprintf(format, args...)}
	}
	line, err := rd.r.ReadSlice('\n')
	switch {
	case err == io.EOF && len(line) == 0:
		return "", nil, io.EOF
	case err == io.EOF:
		return corrupt("incomplete header line (%d bytes)", len(line))
	case errors.Is(err, bufio.ErrBufferFull) || err == nil && len(line) > maxHeaderLine:
		return corrupt("header line longer than %d bytes", maxHeaderLine)
	case err != nil:
		return "", nil, err
	}
	magic, length, sum, ok := parseHeader(line)
	if !ok {
		return corrupt("parse error in header line %q", bytes.TrimSuffix(line, []byte("\n")))
	}
	start := rd.off + int64(len(line))
	if length > rd.size-start {
		return corrupt("record claims %d bytes but only %d remain", length, rd.size-start)
	}
	body = make([]byte, length)
	if _, err := io.ReadFull(rd.r, body); err != nil {
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			return corrupt("file ends inside record")
		}
		return "", nil, err
	}
	if got := sha1.Sum(body); got != sum {
		return corrupt("%d bytes starting at offset %d have SHA-1 hash %x but should have hash %x",
			length, start, got, sum)
	}
	rd.off = start + length
	return magic, body, nil
}

// parseHeader parses "OVSDB <magic> <length> <sha1>\n" with a nonzero length,
// as OVS's parse_header does.
func parseHeader(line []byte) (magic string, length int64, sum [sha1.Size]byte, ok bool) {
	s, found := strings.CutPrefix(string(line), headerLead)
	if !found {
		return
	}
	magic, s, found = strings.Cut(s, " ")
	if !found || magic == "" {
		return
	}
	num, s, found := strings.Cut(s, " ")
	if !found || num == "" || num[0] < '0' || num[0] > '9' {
		return
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n == 0 {
		return
	}
	if len(s) != 2*sha1.Size+1 || s[len(s)-1] != '\n' {
		return
	}
	if _, err := hex.Decode(sum[:], []byte(s[:2*sha1.Size])); err != nil {
		return
	}
	return magic, n, sum, true
}

// parseRecord decodes a transaction record body. Besides tables, OVS knows
// "_date" (an integer), "_comment" (anything; only strings are kept here) and
// "_is_diff" (a boolean); ovsdb/file.c, ovsdb_file_txn_from_json.
func parseRecord(body []byte) (Record, error) {
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' || !json.Valid(body) {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(body, &obj); err != nil {
			return Record{}, fmt.Errorf("not a JSON object: %v", err)
		}
		return Record{}, errors.New("not a JSON object")
	}
	// The body is valid: its members are split without another full
	// parse per level (encoding/json validates again at every Unmarshal,
	// which made reading a large log several times slower). The rows
	// point into body, which the reader allocates per record.
	r := Record{Tables: make(map[string]map[string]json.RawMessage)}
	var err error
	jsonrpc.SplitObject(body, func(k, raw []byte) {
		if err != nil {
			return
		}
		key := unquote(k)
		switch key {
		case "_date":
			n, perr := strconv.ParseInt(string(raw), 10, 64)
			if perr != nil {
				err = fmt.Errorf("_date %s is not an integer", raw)
				return
			}
			r.Date = n
		case "_comment":
			if raw[0] == '"' {
				if uerr := json.Unmarshal(raw, &r.Comment); uerr != nil {
					err = fmt.Errorf("_comment: %v", uerr)
				}
			}
		case "_is_diff":
			switch string(raw) {
			case "true":
				r.IsDiff = true
			case "false":
				r.IsDiff = false
			default:
				err = fmt.Errorf("_is_diff %s is not a boolean", raw)
			}
		default:
			if key == "" || key[0] == '_' {
				err = fmt.Errorf("invalid table name %q", key)
				return
			}
			if raw[0] != '{' {
				err = fmt.Errorf("table %s: not a JSON object", key)
				return
			}
			rows := make(map[string]json.RawMessage)
			jsonrpc.SplitObject(raw, func(id, row []byte) {
				if err == nil && row[0] != '{' && string(row) != "null" {
					err = fmt.Errorf("table %s row %s: neither a JSON object nor null", key, unquote(id))
				}
				rows[unquote(id)] = row
			})
			r.Tables[key] = rows
		}
	})
	if err != nil {
		return Record{}, err
	}
	return r, nil
}

// unquote returns the string a JSON string literal (valid, with its quotes)
// stands for.
func unquote(lit []byte) string {
	if bytes.IndexByte(lit, '\\') < 0 {
		return string(lit[1 : len(lit)-1])
	}
	var s string
	json.Unmarshal(lit, &s)
	return s
}

// isObject reports whether body is one JSON object (with optional whitespace).
func isObject(body []byte) bool {
	t := bytes.TrimLeft(body, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && json.Valid(body)
}
