package storage

import (
	"bytes"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/iotest"
	"time"
)

const testSchema = `{"name":"T","version":"1.0.0","tables":{"A":{"columns":{
	"n":{"type":"integer"},
	"m":{"type":{"key":"string","value":"string","min":0,"max":"unlimited"}}}}}}`

const (
	uuid1 = "11111111-1111-4111-8111-111111111111"
	uuid2 = "22222222-2222-4222-8222-222222222222"
)

func testRecords() []Record {
	return []Record{
		{Tables: map[string]map[string]json.RawMessage{"A": {
			uuid1: json.RawMessage(`{"n":1,"m":["map",[["k","v"]]]}`),
			uuid2: json.RawMessage(`{"n":2}`),
		}}, Date: 1700000000000, Comment: "insert <two> & \"quote\"\n", IsDiff: true},
		{Tables: map[string]map[string]json.RawMessage{"A": {
			uuid1: json.RawMessage(`{"m":["map",[["k","v"],["x","y"]]]}`),
		}}, Date: 1700000000001, IsDiff: true},
		{Tables: map[string]map[string]json.RawMessage{"A": {uuid2: json.RawMessage(`null`)}}, Date: 1700000000002},
		{Tables: map[string]map[string]json.RawMessage{}, Date: 1700000000003, Comment: "empty"},
	}
}

// collect returns an Open callback that appends records to *recs.
func collect(recs *[]Record) func(Record) error {
	return func(r Record) error { *recs = append(*recs, r); return nil }
}

func compact(t testing.TB, raw string) json.RawMessage {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(raw)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// makeDB creates a database in a new directory with testSchema and recs.
func makeDB(t testing.TB, recs []Record) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.db")
	l, err := Create(path, json.RawMessage(testSchema))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// openAll opens path, returning the log, the records and the warnings.
func openAll(t testing.TB, path string) (*Log, []Record, []string) {
	t.Helper()
	var recs []Record
	var warnings []string
	logf := func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }
	l, _, err := Open(path, logf, collect(&recs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, recs, warnings
}

func TestRoundTrip(t *testing.T) {
	want := testRecords()
	path := makeDB(t, want)

	var got []Record
	l, schema, err := Open(path, t.Logf, collect(&got))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !bytes.Equal(schema, compact(t, testSchema)) {
		t.Errorf("schema = %s", schema)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("records:\ngot  %+v\nwant %+v", got, want)
	}
	if l.Records() != 1+len(want) {
		t.Errorf("Records() = %d", l.Records())
	}
	fi, _ := os.Stat(path)
	if l.Size() != fi.Size() {
		t.Errorf("Size() = %d, file has %d bytes", l.Size(), fi.Size())
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, OVS uses 0640", fi.Mode())
	}
}

func TestRecordBytes(t *testing.T) {
	path := makeDB(t, testRecords()[1:2])
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	wantBody := `{"A":{"` + uuid1 + `":{"m":["map",[["k","v"],["x","y"]]]}},"_date":1700000000001,"_is_diff":true}` + "\n"
	wantHeader := fmt.Sprintf("OVSDB JSON %d %x\n", len(wantBody), sha1Sum(wantBody))
	if len(lines) != 5 || lines[2] != wantHeader || lines[3] != wantBody || lines[4] != "" {
		t.Errorf("file:\n%s\nwant record:\n%s%s", data, wantHeader, wantBody)
	}
}

func sha1Sum(s string) [sha1.Size]byte { return sha1.Sum([]byte(s)) }

func TestCreateExisting(t *testing.T) {
	path := makeDB(t, nil)
	if _, err := Create(path, json.RawMessage(testSchema)); err == nil {
		t.Fatal("Create over an existing file succeeded")
	}
	if _, err := Create(filepath.Join(t.TempDir(), "x.db"), json.RawMessage(`[1]`)); err == nil {
		t.Fatal("Create with a non-object schema succeeded")
	}
}

func TestAppendRejectsBadRecords(t *testing.T) {
	path := makeDB(t, nil)
	l, _, _ := openAll(t, path)
	for _, r := range []Record{
		{Tables: map[string]map[string]json.RawMessage{"_date": {}}},
		{Tables: map[string]map[string]json.RawMessage{"A": {uuid1: json.RawMessage(`[1]`)}}},
		{Tables: map[string]map[string]json.RawMessage{"A": {uuid1: json.RawMessage(`{`)}}},
	} {
		if err := l.Append(r); err == nil {
			t.Errorf("Append(%v) succeeded", r)
		}
	}
	if err := l.Append(Record{}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	_, recs, _ := openAll(t, path)
	if len(recs) != 1 || recs[0].Date == 0 {
		t.Errorf("records %+v, want one with _date stamped", recs)
	}
}

// damage describes a way to break the last record of a file.
var damages = []struct {
	name string
	fn   func(data []byte) []byte
}{
	{"torn body", func(d []byte) []byte { return d[:len(d)-5] }},
	{"torn header", func(d []byte) []byte { return append(d, "OVSDB JSON 12"...) }},
	{"garbage", func(d []byte) []byte { return append(d, "xyz garbage\n"...) }},
	{"bad sha1", func(d []byte) []byte {
		d = bytes.Clone(d)
		i := bytes.LastIndex(d, []byte("OVSDB JSON "))
		i += bytes.IndexByte(d[i+11:], ' ') + 12
		if d[i] == '0' { // change the first hex digit of the hash
			d[i] = '1'
		} else {
			d[i] = '0'
		}
		return d
	}},
	{"bad json", func(d []byte) []byte { return append(d, frame([]byte("{\"A\":\n"))...) }},
	{"not an object", func(d []byte) []byte { return append(d, frame([]byte("[1]\n"))...) }},
	{"row not an object", func(d []byte) []byte { return append(d, frame([]byte(`{"A":{"x":1}}`+"\n"))...) }},
	{"other magic", func(d []byte) []byte {
		return append(d, bytes.Replace(frame([]byte("{}\n")), []byte("JSON"), []byte("CLUSTER"), 1)...)
	}},
}

func TestTornLastRecord(t *testing.T) {
	recs := testRecords()
	for _, tc := range damages {
		t.Run(tc.name, func(t *testing.T) {
			path := makeDB(t, recs)
			good, _ := os.ReadFile(path)
			bad := tc.fn(good)
			if err := os.WriteFile(path, bad, 0o640); err != nil {
				t.Fatal(err)
			}
			l, got, warnings := openAll(t, path)

			keep := len(good)
			wantRecs := recs
			if !bytes.HasPrefix(bad, good) { // the last record itself was damaged
				keep = bytes.LastIndex(good, []byte("OVSDB JSON "))
				wantRecs = recs[:len(recs)-1]
			}
			if !reflect.DeepEqual(got, wantRecs) {
				t.Errorf("got %d records, want %d", len(got), len(wantRecs))
			}
			wantWarn := fmt.Sprintf("dropping %d bytes at offset %d", len(bad)-keep, keep)
			if len(warnings) != 1 || !strings.Contains(warnings[0], wantWarn) {
				t.Errorf("warnings %q, want one containing %q", warnings, wantWarn)
			}
			t.Log(warnings)
			if data, _ := os.ReadFile(path); !bytes.Equal(data, good[:keep]) {
				t.Errorf("file not truncated to %d bytes (has %d)", keep, len(data))
			}
			if l.Size() != int64(keep) {
				t.Errorf("Size() = %d, want %d", l.Size(), keep)
			}
			extra := Record{Tables: map[string]map[string]json.RawMessage{}, Date: 1, Comment: "after"}
			if err := l.Commit(extra, true); err != nil {
				t.Fatal(err)
			}
			l.Close()
			_, got, warnings = openAll(t, path)
			if !reflect.DeepEqual(got, append(wantRecs[:len(wantRecs):len(wantRecs)], extra)) || len(warnings) != 0 {
				t.Errorf("after append: %d records, warnings %q", len(got), warnings)
			}
		})
	}
}

// TestCorruptMiddle checks that, like ovsdb-server (OVS 3.1, verified), a bad
// record in the middle of the file loses it and everything after it.
func TestCorruptMiddle(t *testing.T) {
	recs := testRecords()
	path := makeDB(t, recs)
	data, _ := os.ReadFile(path)
	second := 0
	for range 2 { // header of the second transaction
		second += bytes.Index(data[second+1:], []byte("OVSDB JSON ")) + 1
	}
	bad := bytes.Clone(data)
	bad[second+len("OVSDB JSON ")] = 'X'
	os.WriteFile(path, bad, 0o640)

	l, got, warnings := openAll(t, path)
	if !reflect.DeepEqual(got, recs[:1]) {
		t.Errorf("got %d records, want 1", len(got))
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "2 more records") {
		t.Errorf("warnings %q", warnings)
	}
	if fi, _ := os.Stat(path); fi.Size() != int64(second) {
		t.Errorf("size %d, want %d", fi.Size(), second)
	}
	// The file as it was is kept, and the log line says where.
	if b, err := os.ReadFile(path + ".backup1"); err != nil || !bytes.Equal(b, bad) {
		t.Errorf("backup: %v, %d bytes, want the %d bytes of the damaged file", err, len(b), len(bad))
	}
	if !strings.HasSuffix(warnings[0], "kept as "+path+".backup1") {
		t.Errorf("warning %q does not name the backup", warnings[0])
	}
	// A second damage keeps a second copy.
	l.Close()
	os.WriteFile(path, bad, 0o640)
	openAll(t, path)
	if b, err := os.ReadFile(path + ".backup2"); err != nil || !bytes.Equal(b, bad) {
		t.Errorf("second backup: %v", err)
	}
}

func TestCountRecords(t *testing.T) {
	pat := "\n" + headerLead
	data := strings.Repeat("x", 64<<10-3) + pat + strings.Repeat(pat+"y", 3) + "OVSDB JSON"
	if n, err := countRecords(iotest.OneByteReader(strings.NewReader(data))); n != 4 || err != nil {
		t.Fatalf("one byte at a time: %d, %v", n, err)
	}
	if n, err := countRecords(strings.NewReader(data)); n != 4 || err != nil {
		t.Fatalf("%d, %v", n, err)
	}
}

func TestCallbackErrors(t *testing.T) {
	recs := testRecords()
	path := makeDB(t, recs)
	before, _ := os.ReadFile(path)

	boom := errors.New("boom")
	n := 0
	_, _, err := Open(path, t.Logf, func(Record) error {
		if n++; n == 2 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Open error %v, want boom", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("failed Open changed the file")
	}

	n = 0
	var warned bool
	l, _, err := Open(path, func(string, ...any) { warned = true }, func(Record) error {
		if n++; n == 2 {
			return fmt.Errorf("no such table: %w", ErrBadRecord)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	_, got, _ := openAll(t, path)
	if !warned || !reflect.DeepEqual(got, recs[:1]) {
		t.Errorf("ErrBadRecord: warned %v, %d records left", warned, len(got))
	}
}

func TestBadSchema(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string][]byte{
		"empty":     nil,
		"garbage":   []byte("hello\n"),
		"torn":      frame([]byte(testSchema + "\n"))[:50],
		"array":     frame([]byte("[]\n")),
		"clustered": bytes.Replace(frame([]byte("{}\n")), []byte("JSON"), []byte("CLUSTER"), 1),
	} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, data, 0o640)
		if _, _, err := Open(path, nil, nil); err == nil {
			t.Errorf("%s: Open succeeded", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	if _, _, err := Open(filepath.Join(dir, "missing"), nil, nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestLockInProcess(t *testing.T) {
	path := makeDB(t, nil)
	l, _, _ := openAll(t, path)
	lockPath := filepath.Join(filepath.Dir(path), ".test.db.~lock~")
	if _, err := os.Stat(lockPath); err != nil {
		t.Fatalf("lock file: %v", err)
	}
	_, _, err := Open(path, nil, nil)
	if err == nil || !strings.Contains(err.Error(), lockPath) || !strings.Contains(err.Error(), "this process") {
		t.Fatalf("second Open: %v", err)
	}
	// Through a symlink the lock file is the target's.
	link := filepath.Join(t.TempDir(), "link.db")
	os.Symlink(path, link)
	if _, _, err := Open(link, nil, nil); err == nil {
		t.Fatal("Open through a symlink succeeded")
	}
	l.Close()
	l2, _, _ := openAll(t, link)
	l2.Close()
}

func TestReplace(t *testing.T) {
	path := makeDB(t, testRecords())
	l, _, _ := openAll(t, path)
	snap := Record{Tables: map[string]map[string]json.RawMessage{"A": {
		uuid1: json.RawMessage(`{"n":1,"m":["map",[["k","v"],["x","y"]]]}`),
	}}, Date: 5}
	if err := l.Replace(nil, snap); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary file left: %v", err)
	}
	if _, _, err := Open(path, nil, nil); err == nil {
		t.Fatal("lock lost by Replace")
	}
	next := Record{Tables: map[string]map[string]json.RawMessage{"A": {uuid1: json.RawMessage(`{"n":7}`)}}, Date: 6, IsDiff: true}
	if err := l.Commit(next, true); err != nil {
		t.Fatal(err)
	}
	l.Close()

	_, got, warnings := openAll(t, path)
	snap.Comment, snap.IsDiff = "compacting database online", true
	if !reflect.DeepEqual(got, []Record{snap, next}) || len(warnings) != 0 {
		t.Errorf("after Replace: %+v %q", got, warnings)
	}
}

func TestShouldCompact(t *testing.T) {
	path := makeDB(t, testRecords())
	l, _, _ := openAll(t, path)
	now := time.Now()
	if l.ShouldCompact(now) {
		t.Error("compaction due right after Open")
	}
	if !l.ShouldCompact(now.Add(25 * time.Hour)) {
		t.Error("no compaction after 24 hours")
	}
	later := now.Add(21 * time.Minute)
	if l.ShouldCompact(later) {
		t.Error("small file due for compaction")
	}
	big := Record{Comment: strings.Repeat("x", 110<<10)}
	for range 99 {
		if err := l.Append(big); err != nil {
			t.Fatal(err)
		}
	}
	if !l.ShouldCompact(later) {
		t.Errorf("not due with %d records, %d bytes", l.Records(), l.Size())
	}
	if err := l.Replace(nil, Record{}); err != nil {
		t.Fatal(err)
	}
	if l.ShouldCompact(later) || l.ShouldCompact(time.Now().Add(9*time.Minute)) {
		t.Error("due right after Replace")
	}
}

// TestGroupCommit checks that every durable Commit returns only after an fsync
// that started after its record was written, and that fsyncs are shared.
func TestGroupCommit(t *testing.T) {
	path := makeDB(t, nil)
	l, _, _ := openAll(t, path)
	var syncs atomic.Int64
	var durableSize atomic.Int64 // file size at the start of the last finished fsync
	l.syncFile = func(f *os.File) error {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		time.Sleep(time.Millisecond) // a slow disk, so that commits queue behind the fsync
		if err := f.Sync(); err != nil {
			return err
		}
		syncs.Add(1)
		for {
			old := durableSize.Load()
			if fi.Size() <= old || durableSize.CompareAndSwap(old, fi.Size()) {
				return nil
			}
		}
	}
	const workers, commits = 8, 40
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range commits {
				tag := fmt.Sprintf("w%d-%d|", w, i)
				if err := l.Commit(Record{Comment: tag}, i%4 != 3); err != nil {
					t.Error(err)
					return
				}
				if i%4 == 3 {
					continue
				}
				data, err := os.ReadFile(path)
				if err != nil {
					t.Error(err)
					return
				}
				end := bytes.Index(data, []byte(tag)) + len(tag)
				if end < len(tag) || int64(end) > durableSize.Load() {
					t.Errorf("%s returned before an fsync covered it", tag)
				}
			}
		})
	}
	wg.Wait()
	if n := syncs.Load(); n >= workers*commits*3/4 {
		t.Errorf("%d fsyncs for %d durable commits: no group commit", n, workers*commits*3/4)
	} else {
		t.Logf("%d fsyncs for %d durable commits", n, workers*commits*3/4)
	}
	l.Close()
	_, got, _ := openAll(t, path)
	if len(got) != workers*commits {
		t.Errorf("%d records, want %d", len(got), workers*commits)
	}
}

func TestSyncError(t *testing.T) {
	path := makeDB(t, nil)
	l, _, _ := openAll(t, path)
	l.syncFile = func(*os.File) error { return errors.New("EIO") }
	if err := l.Commit(Record{}, true); err == nil {
		t.Fatal("durable Commit succeeded despite fsync failure")
	}
	if err := l.Append(Record{}); err == nil {
		t.Fatal("log usable after fsync failure")
	}
}

func benchmarkCommit(b *testing.B, durable bool) {
	path := makeDB(b, nil)
	l, _, err := Open(path, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	r := Record{Tables: map[string]map[string]json.RawMessage{"A": {
		uuid1: json.RawMessage(`{"n":1,"m":["map",[["k","v"],["x","y"]]]}`),
	}}, IsDiff: true}
	b.SetParallelism(4) // 4 goroutines per CPU: concurrent clients
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := l.Commit(r, durable); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkCommitDurable(b *testing.B)    { benchmarkCommit(b, true) }
func BenchmarkCommitNonDurable(b *testing.B) { benchmarkCommit(b, false) }

// TestCreateThroughSymlink: Debian leaves /etc/openvswitch/conf.db as a
// symlink to a file not yet created; Create follows it as ovsdb-tool create
// does, the lock file sits next to the target, and a failed Create leaves
// no lock file behind.
func TestCreateThroughSymlink(t *testing.T) {
	etc, lib := t.TempDir(), t.TempDir()
	link := filepath.Join(etc, "conf.db")
	target := filepath.Join(lib, "conf.db")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	l, err := Create(link, json.RawMessage(testSchema))
	if err != nil {
		t.Fatalf("Create through a dangling symlink: %v", err)
	}
	l.Close()
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced: %v %v", fi, err)
	}
	l2, schema, err := Open(link, nil, func(Record) error { return nil })
	if err != nil || !bytes.Equal(schema, compact(t, testSchema)) {
		t.Fatalf("reopening through the symlink: %v", err)
	}
	l2.Close()
	if _, err := os.Stat(filepath.Join(lib, ".conf.db.~lock~")); err != nil {
		t.Errorf("lock file not next to the target: %v", err)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "x.db")
	os.WriteFile(path, []byte("not a database"), 0o640)
	if _, err := Create(path, json.RawMessage(testSchema)); err == nil {
		t.Fatal("Create over an existing file succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, ".x.db.~lock~")); !os.IsNotExist(err) {
		t.Errorf("failed Create left its lock file: %v", err)
	}
}

// TestDeferFlush: deferred records reach the file only at Flush, in one
// write with those deferred after them, in order with Commit's (which
// writes the deferred ones first), and Close writes them too; Sync does not.
func TestDeferFlush(t *testing.T) {
	want := testRecords()
	path := makeDB(t, nil)
	l, _, err := Open(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	fileSize := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := fileSize()
	if err := l.Defer(want[0], nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Defer(want[1], nil); err != nil {
		t.Fatal(err)
	}
	if !l.Pending() || fileSize() != before {
		t.Fatalf("deferred records written before Flush (pending %v, size %d -> %d)", l.Pending(), before, fileSize())
	}
	if l.Records() != 3 || l.Size() <= before {
		t.Errorf("Records() = %d, Size() = %d with two deferred records", l.Records(), l.Size())
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if l.Pending() || fileSize() != l.Size() {
		t.Fatalf("after Flush: pending %v, file %d bytes, Size() %d", l.Pending(), fileSize(), l.Size())
	}
	if err := l.Defer(want[2], nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(want[3], false); err != nil {
		t.Fatal(err)
	}
	if l.Pending() || fileSize() != l.Size() {
		t.Fatalf("after Commit: pending %v, file %d bytes, Size() %d", l.Pending(), fileSize(), l.Size())
	}
	if err := l.Defer(want[0], nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil || !l.Pending() {
		t.Fatalf("Sync: %v, pending %v (want true)", err, l.Pending())
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := l.Defer(want[1], nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	_, got, warnings := openAll(t, path)
	want = append(want, want[0], want[1])
	if !reflect.DeepEqual(got, want) || len(warnings) > 0 {
		t.Errorf("records:\ngot  %+v\nwant %+v\nwarnings %q", got, want, warnings)
	}
}

// TestDeferReplace: a compaction writes the deferred records to the old
// file first and leaves nothing pending for the new one.
func TestDeferReplace(t *testing.T) {
	path := makeDB(t, nil)
	l, _, err := Open(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	recs := testRecords()
	if err := l.Defer(recs[0], nil); err != nil {
		t.Fatal(err)
	}
	snap := Record{Tables: map[string]map[string]json.RawMessage{"A": {uuid1: json.RawMessage(`{"n":1}`)}}}
	if err := l.Replace(nil, snap); err != nil {
		t.Fatal(err)
	}
	if l.Pending() {
		t.Fatal("deferred record pending after Replace")
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	if fi.Size() != l.Size() {
		t.Fatalf("file %d bytes, Size() %d", fi.Size(), l.Size())
	}
}

// TestFlushFailure: a failed write leaves the deferred records pending and
// nothing of them in the file (a partial write is cut off); the log stays
// usable, as once a full disk has room again, and the caller may write the
// records later or drop them. Commit's own record is not left pending.
func TestFlushFailure(t *testing.T) {
	path := makeDB(t, nil)
	l, _, err := Open(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fail := true
	l.writeFile = func(f *os.File, b []byte, off int64) (int, error) {
		if fail {
			n, _ := f.WriteAt(b[:len(b)/2], off) // a partial write, then ENOSPC
			return n, syscall.ENOSPC
		}
		return writeAt(f, b, off)
	}
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	recs := testRecords()
	if err := l.Defer(recs[0], "a"); err != nil {
		t.Fatal(err)
	}
	if err := l.Defer(recs[1], "b"); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Flush: %v, want ENOSPC", err)
	}
	if !l.Pending() || !reflect.DeepEqual(l.PendingTags(), []any{"a", "b"}) || size() != before {
		t.Fatalf("after a failed Flush: pending %v, tags %v, file %d -> %d bytes", l.Pending(), l.PendingTags(), before, size())
	}
	if err := l.Commit(recs[2], false); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Commit: %v, want ENOSPC", err)
	}
	if !reflect.DeepEqual(l.PendingTags(), []any{"a", "b"}) || size() != before {
		t.Fatalf("after a failed Commit: tags %v, file %d -> %d bytes", l.PendingTags(), before, size())
	}
	fail = false
	if err := l.Flush(); err != nil {
		t.Fatalf("Flush once writes succeed: %v", err)
	}
	if err := l.Defer(recs[2], "c"); err != nil {
		t.Fatal(err)
	}
	fail = true
	if err := l.Flush(); err == nil {
		t.Fatal("Flush succeeded")
	}
	l.DiscardPending()
	if l.Pending() || len(l.PendingTags()) != 0 {
		t.Fatal("records pending after DiscardPending")
	}
	fail = false
	if err := l.Commit(recs[3], false); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	_, got, warnings := openAll(t, path)
	if want := []Record{recs[0], recs[1], recs[3]}; !reflect.DeepEqual(got, want) || len(warnings) > 0 {
		t.Errorf("records:\ngot  %+v\nwant %+v\nwarnings %q", got, want, warnings)
	}
}
