package storage

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// EncodeSchema returns the framed schema record for schema, as it starts
// a database file.
func EncodeSchema(schema json.RawMessage) ([]byte, error) {
	body, err := marshalSchema(schema)
	if err != nil {
		return nil, err
	}
	return frame(body), nil
}

// EncodeRecord returns the framed transaction record for r.
func EncodeRecord(r *Record) ([]byte, error) {
	body, err := marshalRecord(r)
	if err != nil {
		return nil, err
	}
	return frame(body), nil
}

// ReadStream reads a whole standalone database file from r, which need not
// be seekable (ovsdb-client restore reads a backup from a pipe), as OVS
// reads a file it opened read-only: a torn or damaged record is an error,
// not a tail to drop. start is called with the schema and returns the
// function that gets each transaction record. Errors read as OVS words
// them after its "ovsdb-client: ": "<kind>: <name>: <what>".
func ReadStream(r io.Reader, name string, start func(schema json.RawMessage) (func(Record) error, error)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var off int64
	first := true
	var fn func(Record) error
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == io.EOF && len(line) == 0:
			if first {
				return fmt.Errorf("ovsdb error: %s: cannot identify file type", name)
			}
			return nil
		case err == io.EOF:
			if first {
				return fmt.Errorf("ovsdb error: %s: unexpected file format", name)
			}
			return fmt.Errorf("I/O error: %s: error reading header line at offset %d (End of file)", name, off)
		case errors.Is(err, bufio.ErrBufferFull) || err == nil && len(line) > maxHeaderLine:
			if first {
				return fmt.Errorf("ovsdb error: %s: unexpected file format", name)
			}
			return fmt.Errorf("syntax error: %s: header line at offset %d is too long", name, off)
		case err != nil:
			return fmt.Errorf("I/O error: %s: read failed (%v)", name, err)
		}
		magic, length, sum, ok := parseHeader(line)
		if first && (!ok || magic != magicJSON && magic != magicCluster) {
			return fmt.Errorf("ovsdb error: %s: unexpected file format", name)
		}
		if !ok {
			return fmt.Errorf("syntax error: %s: parse error at offset %d in header line \"%s\"", name, off, shownHeader(line))
		}
		if magic == magicCluster {
			return fmt.Errorf("ovsdb error: %s: clustered databases are not supported", name)
		}
		if magic != magicJSON {
			return fmt.Errorf("syntax error: %s: header line at offset %d has magic %q", name, off, magic)
		}
		bodyOff := off + int64(len(line))
		if length > math.MaxInt32 {
			return fmt.Errorf("syntax error: %s: record at offset %d claims %d bytes", name, off, length)
		}
		body := make([]byte, length)
		if _, err := io.ReadFull(br, body); err != nil {
			if err == io.ErrUnexpectedEOF || err == io.EOF {
				return fmt.Errorf("I/O error: %s: error reading %d bytes starting at offset %d (End of file)", name, length, bodyOff)
			}
			return fmt.Errorf("I/O error: %s: error reading %d bytes starting at offset %d (%v)", name, length, bodyOff, err)
		}
		if got := sha1.Sum(body); got != sum {
			return fmt.Errorf("syntax error: %s: %d bytes starting at offset %d have SHA-1 hash %x but should have hash %x",
				name, length, bodyOff, got, sum)
		}
		if !isObject(body) {
			return fmt.Errorf("syntax error: %s: %d bytes starting at offset %d are not a JSON object", name, length, bodyOff)
		}
		off = bodyOff + length
		if first {
			first = false
			if fn, err = start(json.RawMessage(bytes.TrimSpace(body))); err != nil {
				return err
			}
			if fn == nil {
				fn = func(Record) error { return nil }
			}
			continue
		}
		rec, err := parseRecord(body)
		if err != nil {
			return fmt.Errorf("syntax error: %s: record at offset %d: %v", name, bodyOff, err)
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
}

// shownHeader is the part of a bad header line OVS quotes: up to the end
// of the magic when a space ends it (its parser cuts the line there), else
// the line without its newline.
func shownHeader(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte("\n"))
	if rest, ok := bytes.CutPrefix(line, []byte(headerLead)); ok {
		if i := bytes.IndexByte(rest, ' '); i >= 0 {
			return line[:len(headerLead)+i]
		}
	}
	return line
}
