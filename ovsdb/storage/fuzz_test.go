package storage

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzOpen opens arbitrary bytes as a database file. Open must not panic; if it
// succeeds, the file must be left as a prefix of the input that reopens
// cleanly to the same schema and records. The seed corpus in
// testdata/fuzz/FuzzOpen holds valid files (ours and ovsdb-tool's) and broken
// ones.
func FuzzOpen(f *testing.F) {
	f.Add(append(frame([]byte(testSchema+"\n")), frame([]byte(`{"A":{"x":null},"_date":1}`+"\n"))...))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "db")
		if err := os.WriteFile(path, data, 0o640); err != nil {
			t.Fatal(err)
		}
		var recs []Record
		l, schema, err := Open(path, nil, collect(&recs))
		if err != nil {
			return
		}
		size := l.Size()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if !json.Valid(schema) {
			t.Fatalf("invalid schema %q", schema)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(got)) != size || !bytes.HasPrefix(data, got) {
			t.Fatalf("file is not a %d-byte prefix of the input", size)
		}

		var again []Record
		warned := false
		l, schema2, err := Open(path, func(string, ...any) { warned = true }, collect(&again))
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer l.Close()
		if warned || !bytes.Equal(schema, schema2) || !reflect.DeepEqual(recs, again) {
			t.Fatalf("reopen differs: warned %v, %d vs %d records", warned, len(recs), len(again))
		}
		// What we read, we can write back.
		for _, r := range recs {
			if err := l.Append(r); err != nil {
				t.Fatalf("Append(%+v): %v", r, err)
			}
		}
	})
}

// FuzzReadStream reads arbitrary bytes as a backup stream. ReadStream must
// not panic; if it accepts the input, the schema must be valid JSON and
// every record it returned must have had a header of its own.
// The seed corpus in testdata/fuzz/FuzzReadStream holds a valid backup and
// broken ones (torn, bad hash, bad header, not an object).
func FuzzReadStream(f *testing.F) {
	f.Add(append(frame([]byte(testSchema+"\n")), frame([]byte(`{"A":{"x":null},"_date":1}`+"\n"))...))
	f.Fuzz(func(t *testing.T, data []byte) {
		var schema json.RawMessage
		var recs []Record
		err := ReadStream(bytes.NewReader(data), "fuzz", func(s json.RawMessage) (func(Record) error, error) {
			schema = s
			return collect(&recs), nil
		})
		if err != nil {
			if schema == nil && len(recs) > 0 {
				t.Fatal("records before the schema")
			}
			return
		}
		if !json.Valid(schema) {
			t.Fatalf("invalid schema %q", schema)
		}
		// Every record is framed, so an accepted stream holds at least
		// one header per record read plus the schema's.
		if n := bytes.Count(data, []byte(headerLead)); n < len(recs)+1 {
			t.Fatalf("%d records and a schema from %d headers", len(recs), n)
		}
	})
}
