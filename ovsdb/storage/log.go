// Package storage owns the on-disk format of OVSDB standalone database files,
// the format of Open vSwitch's ovsdb/log.c (see ovsdb(5)), so that files are
// interchangeable with OVS's ovsdb-tool and ovsdb-server: record framing and
// checksums, recovery from a torn tail, the OVS-compatible lock file, appends
// with group-committed fsync, atomic compaction and OVS's compaction schedule.
//
// It stores JSON only. The first record of a file is the schema; every later
// record is a transaction (see Record). Interpreting schemas, rows and diffs is
// the database engine's job.
package storage

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Record is one transaction record:
//
//	{"<table>":{"<row uuid>":<row>,...},...,"_date":<ms>,"_comment":"...","_is_diff":true}
//
// A row that is JSON null deletes the row. A row object for a row that does not
// exist yet holds the new row's columns that differ from their defaults. For an
// existing row it holds the modified columns: whole new values if IsDiff is
// false, otherwise diffs as applied by OVS's ovsdb_datum_apply_diff. OVS 3.1's
// ovsdb-server and ovsdb-tool write "_is_diff":true on every transaction.
type Record struct {
	Tables  map[string]map[string]json.RawMessage // table -> row UUID -> row object or null
	Date    int64                                 // "_date", ms since the epoch; 0 if absent (written: now)
	Comment string                                // "_comment"
	IsDiff  bool                                  // "_is_diff"
	// Compact: every row is already compact JSON, an object or null (as
	// db.AppendRowJSON makes them), and is written as it is rather than
	// compacted again.
	Compact bool
	// Encoded, if not nil, stands for Tables: the tables already encoded
	// as compact JSON object members, each followed by a comma, as
	// db.Commit.AppendRecord writes them.
	Encoded []byte
}

// ErrBadRecord may be wrapped by the error an Open callback returns for a record
// that cannot be applied. Open then treats the record as corrupt: it and
// everything after it are dropped, as ovsdb-server does.
var ErrBadRecord = errors.New("bad record")

// Log is an open, locked database file positioned for appends. Its methods are
// safe for concurrent use.
type Log struct {
	path string
	lock *lockFile

	mu      sync.Mutex
	synced  sync.Cond // signalled (with L = &mu) when an fsync ends
	f       *os.File
	err     error // sticky: the log is closed or unusable
	schema  json.RawMessage
	size    int64
	base    int64       // size after the last compaction, see ShouldCompact
	records int         // records read by Open plus records written since
	seq     uint64      // number of records written through this Log
	durable uint64      // records known to be on disk
	syncing bool        // an fsync runs without mu held
	pending []byte      // framed records of Defer not yet written
	npend   int         // records in pending
	tags    []any       // Defer's tags, one per record in pending
	hasPend atomic.Bool // npend > 0, for Pending without mu
	nextMin time.Time
	nextMax time.Time

	syncFile func(*os.File) error // syncData; replaced by tests
	// writeFile writes at an offset (writeAt); replaced by tests.
	writeFile func(f *os.File, b []byte, off int64) (int, error)
}

func (l *Log) write(b []byte, off int64) (int, error) { return l.writeFile(l.f, b, off) }

func newLog(path string, lk *lockFile, f *os.File) *Log {
	l := &Log{path: path, lock: lk, f: f, syncFile: syncData, writeFile: writeAt}
	l.synced.L = &l.mu
	l.schedule(time.Now(), false)
	return l
}

// Open opens and locks the existing database file at path. It returns the
// schema and calls fn with each transaction record in order. A record that is
// torn or damaged, and everything after it, is truncated away, as ovsdb-server
// does (it drops everything from the first bad record, in the middle of the
// file too); unlike ovsdb-server, the whole file is first copied to
// "<path>.backup<N>". The loss is reported through logf, which should log at
// ERR as OVS does. A bad schema record is an error, and so is an error from fn
// unless it wraps ErrBadRecord. logf and fn may be nil.
func Open(path string, logf func(format string, args ...any), fn func(Record) error) (*Log, json.RawMessage, error) {
	l, err := OpenStream(path, logf, func(json.RawMessage) (func(Record) error, error) { return fn, nil })
	if err != nil {
		return nil, nil, err
	}
	return l, l.schema, nil
}

// OpenStream is Open for a caller that needs the schema before the records,
// to apply each record as it is read rather than hold them all: start is
// called with the schema and returns the function that gets the records
// (nil for none). An error from start fails the open.
func OpenStream(path string, logf func(format string, args ...any), start func(schema json.RawMessage) (func(Record) error, error)) (*Log, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	lk, err := lock(path)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		lk.unlock()
		return nil, err
	}
	l := newLog(path, lk, f)
	if err := l.load(logf, start); err != nil {
		f.Close()
		lk.unlock()
		return nil, err
	}
	return l, nil
}

func (l *Log) load(logf func(string, ...any), start func(json.RawMessage) (func(Record) error, error)) error {
	fi, err := l.f.Stat()
	if err != nil {
		return err
	}
	rd := &recordReader{
		r:    bufio.NewReaderSize(io.NewSectionReader(l.f, 0, fi.Size()), 64<<10),
		size: fi.Size(),
	}
	magic, body, err := rd.next()
	if err == io.EOF {
		return fmt.Errorf("%s: empty file, no schema record", l.path)
	}
	if err != nil {
		return fmt.Errorf("%s: reading schema record: %w", l.path, err)
	}
	if magic == magicCluster {
		return fmt.Errorf("%s: clustered databases are not supported", l.path)
	}
	if magic != magicJSON || !isObject(body) {
		return fmt.Errorf("%s: unexpected file format: first record is not a JSON schema", l.path)
	}
	l.schema = json.RawMessage(bytes.TrimSpace(body))
	l.records = 1
	fn, err := start(l.schema)
	if err != nil {
		return err
	}
	if fn == nil {
		fn = func(Record) error { return nil }
	}

	for {
		off := rd.off
		magic, body, err := rd.next()
		if err == io.EOF {
			break
		}
		var ce *corruptError
		if errors.As(err, &ce) {
			return l.truncate(logf, off, ce.msg)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", l.path, err)
		}
		if magic != magicJSON {
			return l.truncate(logf, off, fmt.Sprintf("record has magic %q", magic))
		}
		r, err := parseRecord(body)
		if err != nil {
			return l.truncate(logf, off, err.Error())
		}
		if err := fn(r); errors.Is(err, ErrBadRecord) {
			return l.truncate(logf, off, err.Error())
		} else if err != nil {
			return fmt.Errorf("%s: record at offset %d: %w", l.path, off, err)
		}
		l.records++
		if l.records == 2 {
			// OVS marks the compaction base after the first transaction
			// (ovsdb/storage.c, ovsdb_storage_read).
			l.base = rd.off
		}
	}
	l.size = rd.off
	return nil
}

// truncate cuts the file at off, where a bad record starts, after copying
// the whole file to a backup.
func (l *Log) truncate(logf func(string, ...any), off int64, why string) error {
	fi, err := l.f.Stat()
	if err != nil {
		return err
	}
	dropped := fi.Size() - off
	n, err := countRecords(io.NewSectionReader(l.f, off, dropped))
	if err != nil {
		return err
	}
	more := ""
	if n > 0 {
		more = fmt.Sprintf(" (including what look like %d more records)", n)
	}
	backup, err := l.backup(fi.Size())
	if err != nil {
		return fmt.Errorf("%s: %d bytes at offset %d are unreadable (%s) and cannot be kept before they are dropped: %w",
			l.path, dropped, off, why, err)
	}
	logf("%s: dropping %d bytes at offset %d to end of file%s: %s; the file as it was is kept as %s",
		l.path, dropped, off, more, why, backup)
	if err := l.f.Truncate(off); err != nil {
		return fmt.Errorf("%s: cannot truncate: %w", l.path, err)
	}
	if err := l.syncFile(l.f); err != nil {
		return fmt.Errorf("%s: fsync after truncation: %w", l.path, err)
	}
	l.size = off
	return nil
}

// countRecords counts the record headers that start a line in r, streaming.
func countRecords(r io.Reader) (int, error) {
	pat := []byte("\n" + headerLead)
	buf := make([]byte, 64<<10)
	n, keep := 0, 0
	for {
		m, err := r.Read(buf[keep:])
		data := buf[:keep+m]
		n += bytes.Count(data, pat)
		// Keep a tail shorter than pat so that a header split between
		// reads is counted once.
		keep = min(len(data), len(pat)-1)
		copy(buf, data[len(data)-keep:])
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// backup copies the first size bytes of the file to the first free
// "<path>.backup<N>" (OVS's start-up script names its upgrade backups
// "<db>.backup<version>-<cksum>") and returns its name.
func (l *Log) backup(size int64) (string, error) {
	for i := 1; ; i++ {
		name := fmt.Sprintf("%s.backup%d", l.path, i)
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = io.Copy(f, io.NewSectionReader(l.f, 0, size))
		if err == nil {
			err = l.syncFile(f)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = syncDir(name)
		}
		if err != nil {
			os.Remove(name)
			return "", err
		}
		return name, nil
	}
}

// Create creates a database file at path holding only the schema record,
// fsyncs it and returns it locked and ready for appends. It fails if the file
// exists.
func Create(path string, schema json.RawMessage) (*Log, error) {
	body, err := marshalSchema(schema)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	lk, err := lock(path)
	if err != nil {
		return nil, err
	}
	// A symlink to a file not yet created (Debian's /etc/openvswitch/conf.db
	// -> /var/lib/openvswitch/conf.db) is followed, as ovsdb-tool create does.
	target := followSymlinks(path)
	f, err := os.OpenFile(target, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640) // OVS's mode
	if err != nil {
		lk.discard()
		return nil, err
	}
	rec := frame(body)
	if _, err = f.WriteAt(rec, 0); err == nil {
		if err = f.Sync(); err == nil {
			err = syncDir(target)
		}
	}
	if err != nil {
		f.Close()
		os.Remove(target)
		lk.discard()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	l := newLog(path, lk, f)
	l.schema = json.RawMessage(bytes.TrimSpace(body))
	l.size = int64(len(rec))
	l.records = 1
	return l, nil
}

// Append writes r to the file with one write(2) before returning, without
// fsync: the record survives a crash of the process but not of the machine.
func (l *Log) Append(r Record) error { return l.Commit(r, false) }

// Commit appends r and, if durable, returns only once it is on disk. Concurrent
// durable commits share fsyncs: one caller syncs for every record written
// before its fsync started, the others wait for it. Records deferred before
// it are written first, with it, in one write; if that write fails, they stay
// deferred (see Flush).
func (l *Log) Commit(r Record, durable bool) error {
	body, err := marshalRecord(&r)
	if err != nil {
		return fmt.Errorf("%s: %w", l.path, err)
	}
	rec := frame(body)

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	if l.npend == 0 {
		if _, err := l.write(rec, l.size); err != nil {
			return l.failedWrite(err)
		}
		l.size += int64(len(rec))
		l.records++
		l.seq++
	} else {
		keep := len(l.pending)
		l.pending = append(l.pending, rec...)
		l.npend++
		l.tags = append(l.tags, nil)
		if err := l.flushLocked(); err != nil {
			l.pending = l.pending[:keep]
			l.npend--
			l.tags = l.tags[:len(l.tags)-1]
			return err
		}
	}
	if !durable {
		return nil
	}
	return l.syncLocked(l.seq)
}

// failedWrite removes what a failed write may have left at the end of the
// file. The log stays usable (a later write may succeed, as once a full disk
// has room again) unless the partial record cannot be removed.
func (l *Log) failedWrite(err error) error {
	if terr := l.f.Truncate(l.size); terr != nil {
		l.err = fmt.Errorf("%s: write failed and cannot remove partial record: %w", l.path, terr)
		return l.err
	}
	return &WriteError{Path: l.path, Err: err}
}

// WriteError is a failed write of records: ovsdb-server's "<path>: write
// failed" I/O error, with the system's error.
type WriteError struct {
	Path string
	Err  error
}

func (e *WriteError) Error() string { return e.Path + ": write failed: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// Defer queues r to be written by the next Flush, Commit or Replace, all
// records queued by then in one write: a server that commits several
// clients' transactions before answering them writes them together, and
// must Flush before it tells anyone of a deferred commit (its reply, or a
// monitor update). tag is the caller's, for PendingTags. An error means the
// log is unusable.
func (l *Log) Defer(r Record, tag any) error {
	body, err := marshalRecord(&r)
	if err != nil {
		return fmt.Errorf("%s: %w", l.path, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	l.pending = appendFrame(l.pending, body)
	l.npend++
	l.tags = append(l.tags, tag)
	l.hasPend.Store(true)
	return nil
}

// Pending reports whether deferred records wait for Flush. It takes no lock.
func (l *Log) Pending() bool { return l.hasPend.Load() }

// PendingTags returns the tags of the deferred records, oldest first.
func (l *Log) PendingTags() []any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.tags)
}

// DiscardPending drops the deferred records: after a failed Flush, the
// caller has undone what they recorded.
func (l *Log) DiscardPending() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dropPending()
}

func (l *Log) dropPending() {
	l.npend = 0
	l.hasPend.Store(false)
	clear(l.tags)
	l.tags = l.tags[:0]
	if cap(l.pending) > maxKeptPending {
		l.pending = nil
	} else {
		l.pending = l.pending[:0]
	}
}

// Flush writes the deferred records, if any, with one write(2), without
// fsync. If the write fails, the records stay deferred: the caller either
// flushes again later or undoes them and calls DiscardPending. The log stays
// usable unless what the failed write left cannot be removed.
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.flushLocked()
}

func (l *Log) flushLocked() error {
	if l.err != nil {
		return l.err
	}
	if l.npend == 0 {
		return nil
	}
	n, err := l.write(l.pending, l.size)
	if err == nil && n < len(l.pending) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return l.failedWrite(err)
	}
	l.size += int64(len(l.pending))
	l.records += l.npend
	l.seq += uint64(l.npend)
	l.dropPending()
	return nil
}

// maxKeptPending is the largest buffer of deferred records kept for reuse.
const maxKeptPending = 1 << 20

// Sync returns once every record written so far is on disk. Deferred
// records are not written: Flush them first.
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	return l.syncLocked(l.seq)
}

// syncLocked waits until record number seq is durable, running an fsync
// itself if none is running. Called and returns with l.mu held.
func (l *Log) syncLocked(seq uint64) error {
	for l.durable < seq {
		if l.err != nil {
			return l.err
		}
		if l.syncing {
			l.synced.Wait()
			continue
		}
		l.syncing = true
		f, upTo := l.f, l.seq
		l.mu.Unlock()
		err := l.syncFile(f)
		l.mu.Lock()
		l.syncing = false
		l.synced.Broadcast()
		if err != nil {
			// After a failed fsync the kernel may have dropped the dirty
			// pages, so a later fsync proves nothing: give up on the log.
			l.err = fmt.Errorf("%s: fsync failed: %w", l.path, err)
			return l.err
		}
		l.durable = max(l.durable, upTo)
	}
	return nil
}

// Size returns the file's size in bytes, deferred records included.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.size + int64(len(l.pending))
}

// Records returns the number of records read by Open (the schema included)
// plus those written (or deferred) since. Like OVS's n_read + n_written,
// Replace does not reset it.
func (l *Log) Records() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.records + l.npend
}

// Replace atomically compacts the file to schema (nil: keep the current one)
// and snapshot, which must hold every row with whole values. It writes them to
// "<path>.tmp", fsyncs it and renames it over the file, as OVS does; the lock
// is on the separate lock file and stays held. Like ovsdb-server, it writes the
// snapshot with "_is_diff":true and, if Comment is empty, "_comment":
// "compacting database online". The caller must not commit between taking
// the snapshot and Replace returning.
func (l *Log) Replace(schema json.RawMessage, snapshot Record) error {
	if snapshot.Comment == "" {
		snapshot.Comment = "compacting database online"
	}
	snapshot.IsDiff = true
	rbody, err := marshalRecord(&snapshot)
	if err != nil {
		return fmt.Errorf("%s: snapshot: %w", l.path, err)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	for l.syncing {
		l.synced.Wait()
	}
	// Deferred records go to the old file first: the snapshot holds
	// them, and a failed compaction keeps the old file.
	if err := l.flushLocked(); err != nil {
		return err
	}
	if schema == nil {
		schema = l.schema
	}
	sbody, err := marshalSchema(schema)
	if err != nil {
		return fmt.Errorf("%s: %w", l.path, err)
	}
	data := append(frame(sbody), frame(rbody)...)

	target := followSymlinks(l.path) // replace a symlink's referent, as OVS does
	f, err := writeTemp(target+".tmp", data)
	if err == nil {
		if err = os.Rename(f.Name(), target); err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}
	if err != nil {
		l.schedule(time.Now(), true)
		return fmt.Errorf("%s: compaction failed: %w", l.path, err)
	}
	syncDir(target) // as OVS, ignore errors: the rename has happened
	l.f.Close()
	l.f = f
	l.schema = json.RawMessage(bytes.TrimSpace(sbody))
	l.size = int64(len(data))
	l.base = l.size
	l.durable = l.seq
	l.schedule(time.Now(), false)
	return nil
}

func writeTemp(name string, data []byte) (*os.File, error) {
	if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return nil, err
	}
	if _, err = f.WriteAt(data, 0); err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		os.Remove(name)
		return nil, err
	}
	return f, nil
}

// Close closes the file and releases the lock. It does not fsync.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.syncing {
		l.synced.Wait()
	}
	if l.f == nil {
		return nil
	}
	var ferr error
	if l.err == nil {
		ferr = l.flushLocked()
	}
	err := errors.Join(ferr, l.f.Close())
	l.f = nil
	l.err = fmt.Errorf("%s: %w", l.path, os.ErrClosed)
	l.lock.unlock()
	return err
}

// OVS's compaction rule for standalone databases (ovsdb/storage.c,
// schedule_next_snapshot and ovsdb_storage_should_snapshot; ovsdb/log.c,
// ovsdb_log_grew_lots): after opening or compacting, wait 10 minutes plus a
// random 0-10 minutes (1 plus 0-1 minutes to retry a failed compaction). Then
// compact if there are at least 100 records and the file is over 10 MiB and
// over twice its size after the last compaction; once 24 hours have passed,
// compact regardless.
const (
	compactDelay     = 10 * time.Minute
	compactMaxDelay  = 24 * time.Hour
	compactMinSize   = 10 << 20
	compactMinRecord = 100
)

func (l *Log) schedule(now time.Time, quick bool) {
	d := compactDelay
	if quick {
		d /= 10
	}
	l.nextMin = now.Add(d + rand.N(d))
	l.nextMax = now.Add(compactMaxDelay)
}

// ShouldCompact reports whether, by OVS's rule, it is time to Replace the log.
func (l *Log) ShouldCompact(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case now.Before(l.nextMin):
		return false
	case now.Before(l.nextMax):
		return l.records >= compactMinRecord && l.size > compactMinSize && l.size/2 > l.base
	default:
		return l.records > 0
	}
}

// syncDir fsyncs the directory holding path, making a new directory entry
// durable.
func syncDir(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
