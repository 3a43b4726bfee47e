package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/ovsdb/db"
	"github.com/govs/govs/ovsdb/jsonrpc"
	"github.com/govs/govs/ovsdb/storage"
)

// session is one client connection and the state OVS keeps per session:
// monitors, pending transactions ("triggers") and locks.
type session struct {
	srv  *Server
	conn *jsonrpc.Conn

	// mu serializes everything the session sends, so that monitor updates
	// are flushed before any reply (a transaction's reply follows the
	// updates it caused, as in ovsdb_jsonrpc_session_send), and guards:
	mu          sync.Mutex
	monitors    map[string]*monitor // by compact JSON of the monitor id
	triggers    map[string]*trigger // pending transactions by request id
	changeAware bool                // set_db_change_aware
	closed      bool

	// readOnly reports whether the remote the session came through is
	// read-only now; nil for none. Set before the session serves requests.
	readOnly func() bool

	notifyMu sync.Mutex
	notify   []*session // guarded by notifyMu: sessions with updates from this session's commits
}

type trigger struct {
	cancel chan struct{}
}

func newSession(s *Server, nc net.Conn, name string, probe time.Duration) *session {
	ss := &session{srv: s, monitors: map[string]*monitor{}, triggers: map[string]*trigger{}}
	ss.conn = jsonrpc.NewConn(nc, jsonrpc.Options{
		Name:           name,
		ProbeInterval:  probe,
		MaxMessageSize: s.opts.MaxMessageSize,
		OnIdle:         ss.flush,
		Log:            s.jsonLog,
		Reconnect:      s.reconnLog,
	})
	return ss
}

// run serves the session until its connection closes.
func (ss *session) run() {
	if !ss.srv.addSession(ss) {
		ss.conn.Close()
		return
	}
	ss.conn.Serve(ss.handle)
	ss.close()
	ss.srv.removeSession(ss)
}

// close releases the session's monitors, triggers and locks.
func (ss *session) close() {
	ss.mu.Lock()
	ss.closed = true
	monitors := ss.monitors
	ss.monitors = map[string]*monitor{}
	for _, t := range ss.triggers {
		close(t.cancel)
	}
	ss.triggers = map[string]*trigger{}
	ss.mu.Unlock()
	for _, m := range monitors {
		m.unregister()
	}
	ss.srv.locks.releaseAll(ss)
}

// send queues msg after any pending monitor updates.
func (ss *session) send(msg *jsonrpc.Message) {
	ss.mu.Lock()
	ss.flushLocked()
	ss.conn.Send(msg)
	ss.mu.Unlock()
}

// flush sends pending monitor updates; the connection calls it whenever its
// send queue drains, so a slow client's updates accumulate (merged) in its
// monitors instead of its queue. It then sends the other sessions' updates
// that this session's commits made (sendUpdates).
func (ss *session) flush() {
	ss.mu.Lock()
	ss.flushLocked()
	ss.mu.Unlock()
	ss.sendUpdates()
}

func (ss *session) flushLocked() {
	for _, m := range ss.monitors {
		if msg, b := m.takeUpdate(); msg != nil {
			ss.conn.SendEncoded(msg, b)
		}
	}
}

// maxDirectUpdates is how many sessions' updates a committing goroutine
// writes itself when Go code runs on several threads; writing to 100
// monitoring clients one after another was slower than their writers in
// parallel. On one thread (ovsdb-server's default, see main) it writes
// them all: the writers would run one after another anyway, each after a
// goroutine switch. A client's transaction's reply is written before them
// (session.transact), so it does not wait for 100 monitors' writes.
const maxDirectUpdates = 16

// sendUpdates sends the monitor updates that this session's commits made,
// from the committing goroutine: each connection with nothing queued gets
// its update written at once, without waking its writer goroutine (a
// wake-up per monitoring client per commit otherwise), up to
// maxDirectUpdates of them. A connection that is
// still writing is kicked instead, so a slow client's updates keep merging
// in its monitors until its queue drains, and so is one whose session is
// busy.
func (ss *session) sendUpdates() {
	ss.notifyMu.Lock()
	notify := ss.notify
	ss.notify = nil
	ss.notifyMu.Unlock()
	if len(notify) > maxDirectUpdates && runtime.GOMAXPROCS(0) > 1 {
		// Wake the rest first, so that their writers work on the other
		// CPUs while this goroutine writes.
		for _, o := range notify[maxDirectUpdates:] {
			o.conn.Kick()
		}
		notify = notify[:maxDirectUpdates]
	}
	for _, o := range notify {
		// Never wait here for another session: whoever holds its lock
		// is sending; its writer sends the update instead.
		if !o.conn.Idle() || !o.mu.TryLock() {
			o.conn.Kick()
			continue
		}
		for _, m := range o.monitors {
			if msg, b := m.takeUpdate(); msg != nil {
				o.conn.SendEncodedNow(msg, b)
			}
		}
		o.mu.Unlock()
	}
}

func (ss *session) reply(req *jsonrpc.Message, result any) {
	ss.send(jsonrpc.NewReply(req.ID, result))
}

func (ss *session) replyError(req *jsonrpc.Message, err any) {
	ss.send(jsonrpc.NewError(req.ID, err))
}

// ovsdbError is the JSON-RPC "error" object of ovsdb_error_to_json.
type ovsdbError struct {
	Name    string
	Details string
	Syntax  json.RawMessage // the offending JSON, or nil
}

func (e *ovsdbError) MarshalJSON() ([]byte, error) {
	m := map[string]any{"error": e.Name}
	if e.Details != "" {
		m["details"] = e.Details
	}
	if e.Syntax != nil {
		m["syntax"] = sortedJSON(e.Syntax)
	}
	// "<db-name>" as OVS writes it, not "\u003cdb-name\u003e".
	return jsonrpc.Marshal(m)
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// sortedJSON renders JSON compactly with object keys sorted, as OVS prints
// the "syntax" of an error (json_to_string with JSSF_SORT).
func sortedJSON(raw json.RawMessage) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return compactJSON(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return compactJSON(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func syntaxErr(syntax json.RawMessage, format string, args ...any) *ovsdbError {
	return &ovsdbError{Name: "syntax error", Details: fmt.Sprintf(format, args...), Syntax: syntax}
}

// splitParams splits a request's params, which the decoder validated.
func splitParams(raw json.RawMessage) []json.RawMessage {
	ps, _ := jsonrpc.SplitArray(raw)
	return ps
}

// handle runs one message from the client, in arrival order. A panic in
// a request (a bug) is logged and answered with an error instead of taking
// every other client down with the process; the database stays as it was
// before the request, since transactions only change it when they commit.
func (ss *session) handle(m *jsonrpc.Message) {
	defer func() {
		if r := recover(); r != nil {
			ss.srv.log.Errorf("%s: internal error handling %s %s: %v\n%s", ss.conn.Name(), m.Method, m.Params, r, debug.Stack())
			if m.Type() == jsonrpc.Request {
				ss.replyError(m, &ovsdbError{Name: "internal error", Details: fmt.Sprint(r)})
			}
		}
	}()
	switch m.Type() {
	case jsonrpc.Notification:
		if m.Method == "cancel" {
			ss.cancel(m)
		}
		return
	case jsonrpc.Reply, jsonrpc.Error:
		ss.srv.rpcLog.Warnf("%s: received unexpected %s message", ss.conn.Name(), m.Type())
		ss.conn.Close()
		return
	}
	if strings.HasPrefix(m.Method, "monitor_cond") && ss.srv.noMonitorCond.Load() {
		ss.replyError(m, "unknown method")
		return
	}
	params := splitParams(m.Params)
	switch m.Method {
	case "transact":
		if e := ss.lookupDB(m, params); e != nil {
			ss.transact(m, e, params[1:])
		}
	case "monitor", "monitor_cond", "monitor_cond_since":
		if e := ss.lookupDB(m, params); e != nil {
			ss.monitor(m, e, params)
		}
	case "convert":
		if e := ss.lookupDB(m, params); e != nil {
			ss.convert(m, e, params)
		}
	case "monitor_cond_change":
		ss.monitorCondChange(m, params)
	case "monitor_cancel":
		ss.monitorCancel(m, params)
	case "get_schema":
		if e := ss.lookupDB(m, params); e != nil {
			ss.reply(m, e.d.Schema().JSON())
		}
	case "list_dbs":
		ss.reply(m, ss.srv.DatabaseNames())
	case "get_server_id":
		ss.reply(m, ss.srv.ID())
	case "lock", "steal":
		ss.lock(m, params)
	case "unlock":
		ss.unlock(m, params)
	case "echo":
		ss.reply(m, m.Params)
	case "set_db_change_aware":
		if len(params) != 1 || string(params[0]) != "true" && string(params[0]) != "false" {
			ss.replyError(m, syntaxErr(m.Params, "set_db_change_aware: true or false parameter expected"))
			return
		}
		ss.mu.Lock()
		ss.changeAware = string(params[0]) == "true"
		ss.mu.Unlock()
		ss.reply(m, struct{}{})
	default:
		ss.replyError(m, "unknown method")
	}
}

// lookupDB finds the database named by params[0], replying with OVS's
// errors if there is none.
func (ss *session) lookupDB(m *jsonrpc.Message, params []json.RawMessage) *dbEntry {
	// A name without escapes is its bytes between the quotes (the
	// decoder validated the JSON): looked up without decoding.
	if len(params) > 0 && len(params[0]) >= 2 && params[0][0] == '"' && bytes.IndexByte(params[0], '\\') < 0 {
		if e := ss.srv.entryBytes(params[0][1 : len(params[0])-1]); e != nil {
			return e
		}
	}
	var name string
	if len(params) == 0 || json.Unmarshal(params[0], &name) != nil || params[0][0] != '"' {
		ss.replyError(m, syntaxErr(m.Params, "%s request params must begin with <db-name>", m.Method))
		return nil
	}
	e := ss.srv.entry(name)
	if e == nil {
		ss.replyError(m, &ovsdbError{Name: "unknown database", Syntax: m.Params,
			Details: fmt.Sprintf("%s request specifies unknown database %s", m.Method, name)})
		return nil
	}
	return e
}

// HasLock implements db.LockChecker for the "assert" operation.
func (ss *session) HasLock(name string) bool { return ss.srv.locks.owns(ss, name) }

// ReadOnly reports whether the session may not write (db.LockChecker): a
// backup server's clients may not, nor those of a read-only remote.
func (ss *session) ReadOnly() bool { return ss.srv.IsBackup() || ss.readOnly != nil && ss.readOnly() }

func (ss *session) transact(m *jsonrpc.Message, e *dbEntry, ops []json.RawMessage) {
	// A relay forwards changes, except from a read-only session: those
	// run on the copy, which refuses them as any read-only write.
	if e.relay != nil && !readsOnly(ops) && !ss.ReadOnly() {
		e.relay.forward(ss, m)
		return
	}
	if e == ss.srv.serverDB {
		if res, ok := readOnlyCheck(e, ops); !ok {
			ss.reply(m, res)
			return
		}
	}
	res, logErr := ss.transactLogged(e, ops, time.Time{})
	// The updates for other clients go out once this one's reply is
	// written: the kick, taken after the handler, makes the reader call
	// flush, which sends them (ovsdb-server too answers a client before
	// it runs the sessions whose monitors the commit changed).
	ss.notifyMu.Lock()
	notify := len(ss.notify) > 0
	ss.notifyMu.Unlock()
	if notify {
		ss.conn.Kick()
	}
	if res.WaitUntil.IsZero() {
		ss.finishTransact(m, e, res, logErr)
		return
	}
	// A "wait" operation is not satisfied yet: run the transaction again
	// after each commit until it is, or until its timeout.
	key := compactJSON(m.ID)
	ss.mu.Lock()
	if _, dup := ss.triggers[key]; dup {
		ss.mu.Unlock()
		ss.replyError(m, "duplicate request ID")
		return
	}
	t := &trigger{cancel: make(chan struct{})}
	ss.triggers[key] = t
	ss.mu.Unlock()
	started := time.Now()
	// The request's bytes are in the connection's read buffer, which the
	// next request reuses: the waiting transaction keeps copies.
	m = &jsonrpc.Message{Method: m.Method, ID: bytes.Clone(m.ID)}
	ops = slices.Clone(ops)
	for i := range ops {
		ops[i] = bytes.Clone(ops[i])
	}
	go func() {
		for {
			var commits <-chan struct{}
			e.d.Read(func(db.Snapshot) { commits = e.commits })
			res, logErr := ss.transactLogged(e, ops, started)
			ss.sendUpdates()
			if res.WaitUntil.IsZero() {
				ss.mu.Lock()
				_, live := ss.triggers[key]
				delete(ss.triggers, key)
				ss.mu.Unlock()
				if live {
					ss.finishTransact(m, e, res, logErr)
				}
				return
			}
			timer := time.NewTimer(time.Until(res.WaitUntil))
			select {
			case <-commits:
			case <-timer.C:
			case <-t.cancel:
				timer.Stop()
				return
			case <-ss.srv.done:
				timer.Stop()
				return
			}
			timer.Stop()
		}
	}()
}

// transactLogged runs a transaction and returns once the session's commit, if it made
// one, is in e's log, before anyone hears of it (its updates and its reply).
// The commit hook deferred the record: the goroutine first lets the other
// sessions that are ready run their transactions, so that one write takes
// all their records, as one fsync takes all durable ones. Each returns after
// its record is written, by whichever of them got there first. A
// transaction that made no commit (it read, or failed) waits likewise for
// the commits it may have seen, and runs again if a failed write undid
// some meanwhile: its answer must not show them.
func (ss *session) transactLogged(e *dbEntry, ops []json.RawMessage, started time.Time) (db.Result, error) {
	for try := 0; ; try++ {
		fails := e.failures.Load()
		res := e.d.Transact(ops, ss, started)
		if e.log == nil {
			return res, nil
		}
		if res.Commit != nil {
			ss.srv.gc.note()
			if e.log.Pending() {
				runtime.Gosched()
			}
			return res, e.commitErr(res.Commit)
		}
		e.flushLog()
		if e.failures.Load() == fails {
			return res, nil
		}
		if try == 2 {
			return res, errors.New("the database changed by undoing transactions that could not be written to the log")
		}
	}
}

// finishTransact replies to a transaction, once it is durable if it asked
// to be; logErr is logCommit's.
func (ss *session) finishTransact(m *jsonrpc.Message, e *dbEntry, res db.Result, logErr error) {
	if logErr == nil && res.Durable && e.log != nil {
		if logErr = e.log.Sync(); logErr != nil { // fsync failures are sticky
			ss.srv.log.Errorf("%s: %v", e.name, logErr)
		}
	}
	if logErr != nil {
		// ovsdb-server's ovsdb_io_error: the errno's text in "io-error".
		var we *storage.WriteError
		if errors.As(logErr, &we) {
			ss.reply(m, json.RawMessage(`[{"error":"I/O error","details":`+jsonString(we.Path+": write failed")+
				`,"io-error":`+jsonString(daemon.Strerror(we.Err))+`}]`))
			return
		}
		ss.reply(m, json.RawMessage(`[{"error":"I/O error","details":`+jsonString(logErr.Error())+`}]`))
		return
	}
	ss.reply(m, res.JSON)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// readOnlyCheck refuses changes to the _Server database as ovsdb-server
// does ("not allowed"), answering the operations before the first change.
func readOnlyCheck(e *dbEntry, ops []json.RawMessage) (json.RawMessage, bool) {
	for i, raw := range ops {
		var op struct {
			Op string `json:"op"`
		}
		json.Unmarshal(raw, &op)
		switch op.Op {
		case "insert", "update", "mutate", "delete":
		default:
			continue
		}
		res := e.d.Transact(ops[:i], nil, time.Time{})
		var results []json.RawMessage
		json.Unmarshal(res.JSON, &results)
		if len(results) < i {
			return res.JSON, false
		}
		errJSON, _ := json.Marshal(&ovsdbError{Name: "not allowed",
			Details: fmt.Sprintf("%s operation not allowed on table in reserved database %s", op.Op, e.name)})
		results = append(results[:i], errJSON)
		b, _ := json.Marshal(results)
		return b, false
	}
	return nil, true
}

func (ss *session) cancel(m *jsonrpc.Message) {
	params := splitParams(m.Params)
	if len(params) != 1 {
		return
	}
	key := compactJSON(params[0])
	ss.mu.Lock()
	t := ss.triggers[key]
	delete(ss.triggers, key)
	ss.mu.Unlock()
	if t != nil {
		close(t.cancel)
		ss.send(jsonrpc.NewError(params[0], "canceled"))
	}
}

func isID(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func (ss *session) lockName(m *jsonrpc.Message, params []json.RawMessage) (string, bool) {
	var name string
	if len(params) != 1 || json.Unmarshal(params[0], &name) != nil || params[0][0] != '"' || !isID(name) {
		ss.replyError(m, syntaxErr(m.Params, "%s request params must be <id>", m.Method))
		return "", false
	}
	return name, true
}

func (ss *session) lock(m *jsonrpc.Message, params []json.RawMessage) {
	name, ok := ss.lockName(m, params)
	if !ok {
		return
	}
	owner, victim, dup := ss.srv.locks.lock(ss, name, m.Method == "steal")
	if dup {
		ss.replyError(m, syntaxErr(m.Params, "must issue \"unlock\" before new \"%s\"", m.Method))
		return
	}
	if victim != nil {
		victim.send(jsonrpc.NewNotification("stolen", []string{name}))
	}
	ss.reply(m, map[string]bool{"locked": owner})
}

func (ss *session) unlock(m *jsonrpc.Message, params []json.RawMessage) {
	name, ok := ss.lockName(m, params)
	if !ok {
		return
	}
	next, held := ss.srv.locks.unlock(ss, name)
	if !held {
		ss.replyError(m, syntaxErr(m.Params, "unlock: \"unlock\" without \"lock\" or \"steal\""))
		return
	}
	ss.reply(m, struct{}{})
	if next != nil {
		next.send(jsonrpc.NewNotification("locked", []string{name}))
	}
}

// lockTable is the server's named locks: the first waiter owns a lock.
type lockTable struct {
	mu    sync.Mutex
	locks map[string][]*session // guarded by mu: waiters, owner first
}

// lock adds ss as a waiter, at the front if it steals. It returns whether
// ss now owns the lock, the session it stole from, and whether ss already
// waits for or owns it.
func (lt *lockTable) lock(ss *session, name string, steal bool) (owner bool, victim *session, dup bool) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if lt.locks == nil {
		lt.locks = map[string][]*session{}
	}
	ws := lt.locks[name]
	for _, w := range ws {
		if w == ss {
			return false, nil, true
		}
	}
	if steal {
		if len(ws) > 0 {
			victim = ws[0]
		}
		ws = append([]*session{ss}, ws...)
	} else {
		ws = append(ws, ss)
	}
	lt.locks[name] = ws
	return ws[0] == ss, victim, false
}

// unlock removes ss from the lock's waiters, returning the new owner if
// ownership passed on.
func (lt *lockTable) unlock(ss *session, name string) (next *session, held bool) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	ws := lt.locks[name]
	for i, w := range ws {
		if w != ss {
			continue
		}
		ws = append(ws[:i:i], ws[i+1:]...)
		if len(ws) == 0 {
			delete(lt.locks, name)
		} else {
			lt.locks[name] = ws
		}
		if i == 0 && len(ws) > 0 {
			next = ws[0]
		}
		return next, true
	}
	return nil, false
}

func (lt *lockTable) owns(ss *session, name string) bool {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	ws := lt.locks[name]
	return len(ws) > 0 && ws[0] == ss
}

func (lt *lockTable) releaseAll(ss *session) {
	lt.mu.Lock()
	var names []string
	for name, ws := range lt.locks {
		for _, w := range ws {
			if w == ss {
				names = append(names, name)
			}
		}
	}
	lt.mu.Unlock()
	for _, name := range names {
		if next, _ := lt.unlock(ss, name); next != nil {
			next.send(jsonrpc.NewNotification("locked", []string{name}))
		}
	}
}
