// Package server is the OVSDB server: it serves databases (package db) over
// JSON-RPC (package jsonrpc) to any number of clients, with the methods of
// RFC 7047 and ovsdb-server(7) — transactions, monitors of every version
// (update, update2, update3 with a transaction history), locks — plus the
// _Server database, storage of commits in database files (package storage),
// and the listeners and connections configured as remotes, including remotes
// read live from a database column ("db:Open_vSwitch,Open_vSwitch,manager_options").
//
// A Server runs inside ovsdb-server, and in ovs-vswitchd with --embedded-db.
package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govs/govs/internal/ovsssl"
	"github.com/govs/govs/ovsdb/db"
	"github.com/govs/govs/ovsdb/jsonrpc"
	"github.com/govs/govs/ovsdb/storage"
	"github.com/govs/govs/schema"
)

// Logger is what the server logs through; *daemon.ModuleLogger satisfies it.
type Logger = jsonrpc.Logger

// Options configure a Server.
type Options struct {
	// Log returns the logger of a vlog module: the server uses
	// "ovsdb_server", "ovsdb_jsonrpc_server", "jsonrpc", "reconnect" and
	// "stream_ssl".
	// Nil discards all logs.
	Log func(module string) Logger
	// Remotes are the initial remotes (see AddRemote).
	Remotes []string
	// MaxMessageSize bounds a received JSON-RPC message
	// (jsonrpc.DefaultMaxMessageSize if 0).
	MaxMessageSize int
	// SSL configures pssl: and ssl: remotes.
	SSL SSLOptions
	// HistoryLength is how many recent commits per database are kept for
	// monitor_cond_since (DefaultHistoryLength if 0, none if negative).
	HistoryLength int
	// NoColumnDiff writes modified rows' changed columns whole, without
	// "_is_diff", as ovsdb-server --disable-file-column-diff does (for
	// readers older than OVS 2.15).
	NoColumnDiff bool
	// GCPercent is the garbage collector's target the process runs with
	// (debug.SetGCPercent), below Go's default; the server raises it to
	// the default while transactions come fast (see gcLoad). 0 leaves
	// the target alone.
	GCPercent int
}

// DefaultHistoryLength is the number of commits kept per database so that a
// reconnecting client gets only what it missed. OVS keeps 100 transactions
// of history for clustered databases (ovsdb/transaction.c) and none for
// standalone ones.
const DefaultHistoryLength = 100

// Server serves databases to JSON-RPC clients.
type Server struct {
	opts Options
	uuid db.UUID
	gc   *gcLoad // nil if Options.GCPercent is 0

	log, rpcLog, jsonLog, reconnLog, txnLog, sslLog Logger

	ssl *ovsssl.Context

	serverDB *dbEntry // the _Server database

	mu       sync.Mutex
	dbs      map[string]*dbEntry // guarded by mu
	remotes  map[string]*remote  // guarded by mu: every open remote
	static   map[string]bool     // guarded by mu: remotes from Options and AddRemote
	sessions map[*session]bool   // guarded by mu
	started  bool                // guarded by mu
	closed   bool                // guarded by mu
	relays   []*relay            // guarded by mu

	locks lockTable
	repl  replication

	noMonitorCond atomic.Bool   // ovsdb-server/disable-monitor-cond
	trimCompacted atomic.Bool   // ovsdb-server/memory-trim-on-compaction
	commits       atomic.Uint64 // commits to every database, for the idle memory release

	reconfig  chan struct{} // kicks the remotes reconfiguration
	dbRemotes atomic.Bool   // some remote is read from a database
	done      chan struct{}
	wg        sync.WaitGroup
}

// dbEntry is one served database with what the server keeps for it.
type dbEntry struct {
	name    string
	d       *db.Database
	log     *storage.Log // nil for in-memory databases
	path    string
	row     db.UUID // its row in _Server.Database
	schemaS string  // schema as the _Server "schema" string
	relay   *relay  // set for a relay database (before it is served)

	// Guarded by the database's lock: changed only inside d.Read or a
	// commit hook.
	monitors map[*monitor]bool
	history  []*db.Commit    // oldest first, at most historyLength
	commits  chan struct{}   // closed and replaced at every commit (wakes triggers)
	detached bool            // no longer served (converted, removed): commits fail
	tlog     map[string]bool // tables whose changes are logged (tlog-set)
	initial  initialCache    // initial contents sent, for identical monitor requests

	// Commits undone after their log write failed (undoPendingLocked), by
	// commit, until their sessions take the error (commitErr); failures
	// counts such writes.
	lostMu   sync.Mutex
	lost     map[*db.Commit]error
	failures atomic.Uint64
	logErrf  func(format string, args ...any)
}

// initialCache keeps the initial contents that monitors were sent, by
// monitor kind (monitor.shareKey), while the database does not change:
// every ovn-nbctl or ovs-vsctl call monitors _Server's Database table the
// same way, whose rows carry each database's schema, and a burst of calls
// that change nothing asks the same of the database too. ovsdb-server
// shares the encoding among equal monitors the same way (its json_cache).
// Guarded by the database's lock.
type initialCache struct {
	gen  uint64 // the database generation (Snapshot.Generation) of m
	m    map[string][]byte
	size int // bytes in m
}

// maxInitialCache bounds the bytes an initialCache keeps; a body larger
// than this is not kept at all.
const maxInitialCache = 256 << 10

// get returns the body cached for key at generation gen.
func (ic *initialCache) get(gen uint64, key string) []byte {
	if ic.gen != gen || ic.m == nil {
		return nil
	}
	return ic.m[key]
}

// put keeps body for key at generation gen, dropping what older
// generations left.
func (ic *initialCache) put(gen uint64, key string, body []byte) {
	if ic.gen != gen {
		ic.gen, ic.m, ic.size = gen, nil, 0
	}
	if ic.size+len(body)+len(key) > maxInitialCache {
		return
	}
	if ic.m == nil {
		ic.m = map[string][]byte{}
	}
	ic.m[key] = body
	ic.size += len(body) + len(key)
}

// New returns a server with no databases; add them with OpenDatabase or
// AddDatabase, then call Start.
func New(opts Options) *Server {
	if opts.Log == nil {
		opts.Log = func(string) Logger { return jsonrpc.NopLogger }
	}
	if opts.HistoryLength == 0 {
		opts.HistoryLength = DefaultHistoryLength
	}
	s := &Server{
		opts:      opts,
		uuid:      db.NewUUID(),
		gc:        newGCLoad(opts.GCPercent),
		log:       opts.Log("ovsdb_server"),
		rpcLog:    opts.Log("ovsdb_jsonrpc_server"),
		jsonLog:   opts.Log("jsonrpc"),
		reconnLog: opts.Log("reconnect"),
		txnLog:    opts.Log("transaction"),
		sslLog:    opts.Log("stream_ssl"),
		dbs:       map[string]*dbEntry{},
		remotes:   map[string]*remote{},
		static:    map[string]bool{},
		sessions:  map[*session]bool{},
		reconfig:  make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	s.ssl = ovsssl.New(s.sslLog, opts.SSL.PeerCACert)
	ss, err := db.ParseSchema(schema.Server)
	if err != nil {
		panic("server: embedded _Server schema: " + err.Error())
	}
	s.serverDB = s.newEntry(db.New(ss))
	s.dbs[ss.Name] = s.serverDB
	s.addServerRow(s.serverDB)
	for _, r := range opts.Remotes {
		s.static[r] = true
	}
	return s
}

// ID returns the server's id, as get_server_id reports it.
func (s *Server) ID() string { return s.uuid.String() }

func (s *Server) newEntry(d *db.Database) *dbEntry {
	e := &dbEntry{name: d.Name(), d: d, row: db.NewUUID(), monitors: map[*monitor]bool{}, commits: make(chan struct{})}
	e.schemaS = canonicalSchema(d.Schema().JSON())
	d.Subscribe(func(c *db.Commit) { s.committed(e, c) })
	return e
}

// flushLog writes e's deferred log records, if there are any, under the
// database's lock. Whatever is about to tell a client of a commit calls it
// first (a transaction's reply, a monitor's update or initial contents), so
// no client hears of a commit that is not in the file: ovsdb-server writes a
// commit's record before the commit takes effect. If the write fails, the
// commits it held are undone, as ovsdb-server aborts a transaction whose
// record it cannot write, and later commits try the file again.
func (e *dbEntry) flushLog() {
	if e.log == nil || !e.log.Pending() {
		return
	}
	e.d.Read(func(db.Snapshot) { e.flushLogLocked() })
}

// flushLogLocked is flushLog under e.d's lock.
func (e *dbEntry) flushLogLocked() {
	if e.log == nil || !e.log.Pending() {
		return
	}
	if err := e.log.Flush(); err != nil {
		e.undoPendingLocked(err)
	}
}

// undoPendingLocked undoes the commits whose records wait in e's log after
// err, a failed write, and drops the records. Called under e.d's lock, so
// that no commit comes between.
func (e *dbEntry) undoPendingLocked(err error) {
	tags := e.log.PendingTags()
	if len(tags) == 0 {
		return
	}
	cs := make([]*db.Commit, len(tags))
	e.lostMu.Lock()
	if e.lost == nil {
		e.lost = map[*db.Commit]error{}
	}
	for i, t := range tags {
		cs[i] = t.(*db.Commit)
		e.lost[cs[i]] = err
	}
	e.lostMu.Unlock()
	// Before the records go: a session that then finds none pending
	// sees the failure count too.
	e.failures.Add(1)
	e.logErrf("%s: %v (%d transactions undone)", e.name, err, len(cs))
	e.d.UndoLocked(cs)
	e.log.DiscardPending()
}

// commitErr returns once c, a session's commit, is in e's log: nil, or the
// error of the write that failed and undid it.
func (e *dbEntry) commitErr(c *db.Commit) error {
	e.flushLog()
	if e.failures.Load() == 0 {
		return nil
	}
	e.lostMu.Lock()
	defer e.lostMu.Unlock()
	err := e.lost[c]
	delete(e.lost, c)
	return err
}

// canonicalSchema renders a schema with sorted keys, as ovsdb-server fills
// _Server's "schema" column; clients compare it with get_schema's answer as
// JSON values.
func canonicalSchema(raw json.RawMessage) string { return sortedJSON(raw) }

// committed runs for every commit of e, in commit order, under e.d's lock.
func (s *Server) committed(e *dbEntry, c *db.Commit) {
	s.commits.Add(1)
	if n := s.opts.HistoryLength; n > 0 {
		if len(e.history) >= n {
			copy(e.history, e.history[1:])
			e.history = e.history[:n-1]
		}
		e.history = append(e.history, c)
	}
	var uc *updateCache
	if len(e.monitors) > 0 {
		uc = &updateCache{}
	}
	var notify []*session
	for m := range e.monitors {
		if m.addCommit(c, uc) && !slices.Contains(notify, m.ss) {
			notify = append(notify, m.ss)
		}
	}
	if by, ok := c.By.(*session); ok && len(notify) > 0 {
		// A client's transaction: its goroutine sends the updates
		// itself once the commit is done (session.sendUpdates).
		by.notifyMu.Lock()
		by.notify = append(by.notify, notify...)
		by.notifyMu.Unlock()
	} else {
		for _, ss := range notify {
			ss.conn.Kick()
		}
	}
	s.logTxn(e, c)
	e.initial = initialCache{} // stale now: no need to keep it
	close(e.commits)
	e.commits = make(chan struct{})
	if e != s.serverDB && s.dbRemotes.Load() {
		s.kickReconfig()
	}
}

// OpenDatabase opens the database file at path, replaying its records, and
// serves it with every commit written to the file. If the file does not
// exist and createSchema is not nil, the file is created with that schema.
func (s *Server) OpenDatabase(path string, createSchema []byte) (*db.Database, error) {
	var d *db.Database
	var l *storage.Log
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && createSchema != nil {
		sch, err := db.ParseSchema(createSchema)
		if err != nil {
			return nil, err
		}
		if l, err = storage.Create(path, sch.JSON()); err != nil {
			return nil, err
		}
		s.log.Infof("%s: created database file from the built-in %s schema (ovsdb-server would require \"ovsdb-tool create\")", path, sch.Name)
		d = db.New(sch)
	} else {
		logf := func(format string, args ...any) { s.log.Errorf(format, args...) }
		d2, l2, err := LoadDatabase(path, logf)
		if err != nil {
			return nil, err
		}
		d = d2
		l = l2
		// Reading a large log leaves a heap of garbage; give it back.
		debug.FreeOSMemory()
	}
	if err := s.AddDatabase(d, l, path); err != nil {
		l.Close()
		return nil, err
	}
	return d, nil
}

// LoadDatabase reads the database file at path into memory and returns it
// with its log, locked and positioned for appends. Each record is applied as
// it is read: holding them all until the end took several times the file's
// size in memory. A record the database refuses is handled as a damaged
// one, as OVS does: it and the rest of the file are dropped (after a
// backup), which logf reports.
func LoadDatabase(path string, logf func(format string, args ...any)) (*db.Database, *storage.Log, error) {
	var d *db.Database
	n := 0
	l, err := storage.OpenStream(path, logf, func(schemaJSON json.RawMessage) (func(storage.Record) error, error) {
		sch, err := db.ParseSchema(schemaJSON)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		d = db.New(sch)
		return func(r storage.Record) error {
			n++
			if err := d.Replay(r.Tables, r.IsDiff); err != nil {
				return fmt.Errorf("record %d cannot be applied: %v: %w", n, err, storage.ErrBadRecord)
			}
			return nil
		}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return d, l, nil
}

// AddDatabase serves d. If l is not nil, every commit is appended to it
// before the transaction is acknowledged, and durable commits are synced.
func (s *Server) AddDatabase(d *db.Database, l *storage.Log, path string) error {
	s.mu.Lock()
	if _, dup := s.dbs[d.Name()]; dup {
		s.mu.Unlock()
		return fmt.Errorf("%s: duplicate database name", d.Name())
	}
	e := s.newEntry(d)
	e.log, e.path = l, path
	e.logErrf = s.log.Errorf
	s.dbs[e.name] = e
	s.mu.Unlock()
	if l != nil {
		sch := d.Schema()
		d.OnCommit(func(c *db.Commit) error {
			if e.detached {
				return errDetached
			}
			rec := storage.Record{Comment: c.Comment, Date: c.Date.UnixMilli(), IsDiff: !s.opts.NoColumnDiff, Compact: true}
			rec.Encoded = c.AppendRecord(nil, sch, rec.IsDiff)
			if len(rec.Encoded) == 0 {
				return nil
			}
			// A client's commit is written with the others made
			// before its session flushes the log (session.logCommit),
			// in one write; any other commit at once, with those.
			if _, ok := c.By.(*session); ok {
				return l.Defer(rec, c)
			}
			if err := l.Commit(rec, false); err != nil {
				e.undoPendingLocked(err)
				return err
			}
			return nil
		})
	}
	s.addServerRow(e)
	s.kickReconfig()
	return nil
}

// addServerRow inserts e's row into _Server.Database.
func (s *Server) addServerRow(e *dbEntry) {
	row := map[string]any{
		"name":      e.name,
		"model":     "standalone",
		"connected": true,
		"leader":    true,
		"schema":    e.schemaS,
	}
	if e.relay != nil {
		row["model"], row["connected"], row["leader"] = "relay", false, false
	}
	op := map[string]any{"op": "insert", "table": "Database", "uuid": e.row.String(), "row": row}
	b, _ := json.Marshal(op)
	res := s.serverDB.d.Transact([]json.RawMessage{b}, nil, time.Time{})
	if res.Commit == nil {
		// Fall back to a generated uuid if the engine rejects "uuid".
		op = map[string]any{"op": "insert", "table": "Database", "row": row}
		b, _ = json.Marshal(op)
		res = s.serverDB.d.Transact([]json.RawMessage{b}, nil, time.Time{})
		if res.Commit == nil {
			s.log.Errorf("cannot add %s to _Server: %s", e.name, res.JSON)
		}
	}
}

// setServerRow updates e's row in _Server.Database.
func (s *Server) setServerRow(e *dbEntry, cols map[string]any) {
	op := map[string]any{"op": "update", "table": "Database",
		"where": []any{[]any{"_uuid", "==", []string{"uuid", e.row.String()}}}, "row": cols}
	b, _ := json.Marshal(op)
	s.serverDB.d.Transact([]json.RawMessage{b}, nil, time.Time{})
}

// Database returns the served database with that name, or nil.
func (s *Server) Database(name string) *db.Database {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.dbs[name]; e != nil {
		return e.d
	}
	return nil
}

func (s *Server) entry(name string) *dbEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dbs[name]
}

// entryBytes is entry for a name as bytes, without allocating.
func (s *Server) entryBytes(name []byte) *dbEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dbs[string(name)]
}

// DatabaseNames returns the served databases' names, sorted, _Server included.
func (s *Server) DatabaseNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.dbs))
	for n := range s.dbs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Start opens the configured remotes and starts serving.
func (s *Server) Start() error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("server already started")
	}
	s.started = true
	s.mu.Unlock()
	err := s.reconfigure()
	for _, r := range s.relays {
		s.wg.Add(1)
		go r.run()
	}
	s.wg.Add(2)
	go s.reconfigLoop()
	go s.maintenanceLoop()
	return err
}

// Close stops listening, closes every session and the database files.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	remotes := s.remotes
	s.remotes = map[string]*remote{}
	sessions := make([]*session, 0, len(s.sessions))
	for ss := range s.sessions {
		sessions = append(sessions, ss)
	}
	s.mu.Unlock()
	close(s.done)
	s.stopReplication()
	for _, r := range remotes {
		r.close()
	}
	for _, ss := range sessions {
		ss.conn.Close()
	}
	s.wg.Wait()
	var errs []error
	s.mu.Lock()
	for _, e := range s.dbs {
		if e.log != nil {
			errs = append(errs, e.log.Flush(), e.log.Sync(), e.log.Close())
		}
	}
	s.mu.Unlock()
	return errors.Join(errs...)
}

// Compact compacts every database file (the ovsdb-server/compact command),
// or only the named ones.
func (s *Server) Compact(names ...string) error {
	s.mu.Lock()
	var entries []*dbEntry
	for _, e := range s.dbs {
		if e.log == nil {
			continue
		}
		if len(names) > 0 && !contains(names, e.name) {
			continue
		}
		entries = append(entries, e)
	}
	s.mu.Unlock()
	var errs []error
	for _, e := range entries {
		s.log.Infof("compacting %s database by user request", e.name)
		errs = append(errs, s.compact(e))
	}
	return errors.Join(errs...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// compact replaces e's file by a snapshot. Commits wait meanwhile: the
// snapshot and the replacement happen under the database lock.
func (s *Server) compact(e *dbEntry) error {
	var err error
	e.d.Read(func(snap db.Snapshot) {
		sch := e.d.Schema()
		c := &db.Commit{Tables: map[string]map[db.UUID]*db.RowChange{}}
		for _, tn := range sch.TableNames() {
			rows := snap.Rows(tn)
			if len(rows) == 0 {
				continue
			}
			m := make(map[db.UUID]*db.RowChange, len(rows))
			for u, r := range rows {
				m[u] = &db.RowChange{New: r}
			}
			c.Tables[tn] = m
		}
		err = e.log.Replace(nil, storage.Record{Tables: c.Record(sch)})
	})
	if err != nil {
		s.log.Errorf("%s: compaction failed: %v", e.name, err)
	} else if s.trimCompacted.Load() {
		// OVS calls malloc_trim(0): the heap the old snapshot
		// and log took goes back to the system now.
		debug.FreeOSMemory()
	}
	return err
}

// maintenanceLoop compacts database files as they grow and refreshes the
// status of remotes configured from the database.
func (s *Server) maintenanceLoop() {
	defer s.wg.Done()
	t := time.NewTicker(statusInterval)
	defer t.Stop()
	var lastCommits uint64
	busy := false
	for {
		select {
		case <-s.done:
			return
		case now := <-t.C:
			// A burst of transactions leaves garbage that Go's scavenger
			// gives back only over minutes: once the databases have been
			// quiet for a tick after one, return it (one GC per burst).
			if n := s.commits.Load(); n != lastCommits {
				lastCommits, busy = n, true
			} else if busy {
				busy = false
				jsonrpc.ReleaseMemory()
			}
			s.mu.Lock()
			var entries []*dbEntry
			for _, e := range s.dbs {
				if e.log != nil {
					entries = append(entries, e)
				}
			}
			s.mu.Unlock()
			for _, e := range entries {
				if e.log.ShouldCompact(now) {
					s.log.Infof("%s: compacting database online", e.name)
					s.compact(e)
				}
			}
			s.updateRemoteStatus()
		}
	}
}

func (s *Server) kickReconfig() {
	select {
	case s.reconfig <- struct{}{}:
	default:
	}
}

func (s *Server) reconfigLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.done:
			return
		case <-s.reconfig:
			s.reconfigure()
		}
	}
}

func (s *Server) addSession(ss *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.sessions[ss] = true
	return true
}

func (s *Server) removeSession(ss *session) {
	s.mu.Lock()
	delete(s.sessions, ss)
	s.mu.Unlock()
}

// Sessions returns the number of connected clients.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}
