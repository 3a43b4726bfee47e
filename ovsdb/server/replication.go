package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govs/govs/ovsdb/db"
	"github.com/govs/govs/ovsdb/jsonrpc"
)

// Active-backup replication (ovsdb-server(1) "ACTIVE-BACKUP", OVS's
// ovsdb/replication.c): a backup server connects to the active one, checks
// it is not itself (get_server_id), lists its databases, fetches the schema
// of each database both serve, monitors every table not excluded, and
// applies what it receives to its own databases and files. A backup is
// read-only to its clients and serves reads and monitors; promoted (made
// active), it keeps what it has replicated.

// DefaultReplicationProbe is OVS's REPLICATION_DEFAULT_PROBE_INTERVAL.
const DefaultReplicationProbe = 60 * time.Second

type replState int

const (
	replInit replState = iota
	replServerIDRequested
	replDBRequested
	replSchemaRequested
	replMonitorRequested
	replReplicating
	replErr
)

// replication is the server's replication configuration and state.
type replication struct {
	backup atomic.Bool // the server is a backup: clients may not write

	mu       sync.Mutex
	syncFrom string        // guarded by mu: the active server, "" if none
	exclude  []string      // guarded by mu: "db:table" entries, sorted, as parsed
	probe    time.Duration // guarded by mu: inactivity probe of the connection
	run      *replRun      // guarded by mu: the running replication, or nil
}

// replRun is one replication from one active server, from
// connect-active-ovsdb-server (or start-up) to disconnection or failure.
type replRun struct {
	srv     *Server
	target  string
	exclude []string
	probe   time.Duration
	done    chan struct{}
	stopped sync.Once

	mu      sync.Mutex
	state   replState // guarded by mu
	dbs     []string  // guarded by mu: databases being replicated
	conn    *jsonrpc.Conn
	nextID  int
	pending map[string]string     // request id -> database name ("" for none)
	schemas map[string]*db.Schema // database -> schema to monitor with
	initial map[string]bool       // databases whose monitor reply has come
	failed  bool                  // ended in replErr
}

// ParseSyncExclude parses --sync-exclude-tables and set-sync-exclude-tables:
// DB:TABLE entries separated by commas or spaces. Like ovsdb-server, it
// refuses nothing: an entry without a colon excludes an empty table name.
func ParseSyncExclude(spec string) []string {
	set := map[string]bool{}
	for _, f := range strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == ' ' }) {
		set[excludeEntry(f)] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// excludeEntry normalizes one entry as ovsdb-server's strtok_r split does:
// leading colons stay in the database name, which ends at the next colon.
func excludeEntry(f string) string {
	lead := len(f) - len(strings.TrimLeft(f, ":"))
	if i := strings.IndexByte(f[lead:], ':'); i >= 0 {
		return f[:lead+i] + ":" + f[lead+i+1:]
	}
	return f + ":"
}

func excluded(list []string, dbName, table string) bool {
	for _, e := range list {
		if e == dbName+":"+table {
			return true
		}
	}
	return false
}

// CheckSyncFrom refuses active servers the backup cannot connect to.
func CheckSyncFrom(target string) error {
	kind, rest, _ := strings.Cut(target, ":")
	switch kind {
	case "unix":
		if rest != "" {
			return nil
		}
	case "tcp", "ssl":
		if _, err := dialAddr(rest); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%s: active server must be unix:FILE, tcp:HOST[:PORT] or ssl:HOST[:PORT]", target)
}

// SetSyncFrom sets the active server to replicate from (--sync-from,
// ovsdb-server/set-active-ovsdb-server). It takes effect at the next
// ConnectActive.
func (s *Server) SetSyncFrom(target string) error {
	if err := CheckSyncFrom(target); err != nil {
		return err
	}
	s.repl.mu.Lock()
	s.repl.syncFrom = target
	s.repl.mu.Unlock()
	return nil
}

// SyncFrom returns the active server set with SetSyncFrom.
func (s *Server) SyncFrom() string {
	s.repl.mu.Lock()
	defer s.repl.mu.Unlock()
	return s.repl.syncFrom
}

// SetSyncExclude sets the tables not replicated (--sync-exclude-tables,
// ovsdb-server/set-sync-exclude-tables); a running replication restarts
// with them.
func (s *Server) SetSyncExclude(spec string) {
	s.repl.mu.Lock()
	s.repl.exclude = ParseSyncExclude(spec)
	restart := s.repl.run != nil
	s.repl.mu.Unlock()
	if restart {
		s.ConnectActive()
	}
}

// SyncExclude returns the excluded tables as get-sync-exclude-tables prints
// them.
func (s *Server) SyncExclude() string {
	s.repl.mu.Lock()
	defer s.repl.mu.Unlock()
	return strings.Join(s.repl.exclude, ",")
}

// SetReplicationProbe sets the inactivity probe of the connection to the
// active server (0 disables it); a running replication restarts with it.
func (s *Server) SetReplicationProbe(d time.Duration) {
	s.repl.mu.Lock()
	s.repl.probe = d
	s.repl.mu.Unlock()
}

// IsBackup reports whether the server is a backup.
func (s *Server) IsBackup() bool { return s.repl.backup.Load() }

// ErrNoActive is ConnectActive's error without an active server.
var ErrNoActive = errors.New("Unable to connect: active server is not specified.")

// ConnectActive makes the server a backup of the active server set with
// SetSyncFrom, (re)starting replication from it.
func (s *Server) ConnectActive() error {
	s.repl.mu.Lock()
	defer s.repl.mu.Unlock()
	if s.repl.syncFrom == "" {
		return ErrNoActive
	}
	if s.repl.run != nil {
		s.repl.run.stop()
	}
	probe := s.repl.probe
	if probe == 0 {
		probe = DefaultReplicationProbe
	}
	if probe < 0 {
		probe = 0
	}
	r := &replRun{srv: s, target: s.repl.syncFrom, exclude: s.repl.exclude, probe: probe, done: make(chan struct{})}
	s.repl.run = r
	s.repl.backup.Store(true)
	s.wg.Add(1)
	go r.loop()
	return nil
}

// DisconnectActive stops replication and makes the server active.
func (s *Server) DisconnectActive() {
	s.repl.mu.Lock()
	defer s.repl.mu.Unlock()
	if s.repl.run != nil {
		s.repl.run.stop()
		s.repl.run = nil
	}
	s.repl.backup.Store(false)
}

// SyncStatus returns ovsdb-server/sync-status's text.
func (s *Server) SyncStatus() string {
	s.repl.mu.Lock()
	r := s.repl.run
	backup := s.repl.backup.Load()
	s.repl.mu.Unlock()
	if !backup || r == nil {
		return "state: active\n"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	b.WriteString("state: backup\n")
	switch r.state {
	case replReplicating:
		fmt.Fprintf(&b, "replicating: %s\ndatabase: %s", r.target, strings.Join(r.dbs, ", "))
		if len(r.exclude) > 0 {
			fmt.Fprintf(&b, "\nexclude: %s", strings.Join(r.exclude, ","))
		}
	case replErr:
		fmt.Fprintf(&b, "Replication to (%s) failed\n", r.target)
	default:
		fmt.Fprintf(&b, "connecting: %s", r.target)
	}
	return b.String()
}

// stopReplication ends replication when the server closes.
func (s *Server) stopReplication() {
	s.repl.mu.Lock()
	if s.repl.run != nil {
		s.repl.run.stop()
	}
	s.repl.mu.Unlock()
}

func (r *replRun) stop() {
	r.stopped.Do(func() {
		close(r.done)
		r.mu.Lock()
		if r.conn != nil {
			r.conn.Close()
		}
		r.mu.Unlock()
	})
}

// fail ends the replication: the server becomes active, as ovsdb-server
// does when replication is no longer alive.
func (r *replRun) fail(format string, args ...any) {
	r.srv.opts.Log("ovsdb_error").Errorf("unexpected ovsdb error: "+format, args...)
	r.failLogged()
}

func (r *replRun) failLogged() {
	r.state = replErr
	r.failed = true
	if r.conn != nil {
		r.conn.Close()
	}
}

// loop connects to the active server, reconnecting with backoff, until the
// replication stops or fails.
func (r *replRun) loop() {
	defer r.srv.wg.Done()
	rlog := r.srv.reconnLog
	backoff := time.Duration(0)
	for {
		select {
		case <-r.done:
			return
		case <-r.srv.done:
			return
		case <-time.After(backoff):
		}
		rlog.Infof("%s: connecting...", r.target)
		kind, rest, _ := strings.Cut(r.target, ":")
		network, addr := "unix", rest
		if kind == "tcp" || kind == "ssl" {
			network = "tcp"
			addr, _ = dialAddr(rest)
		}
		nc, err := net.DialTimeout(network, addr, 10*time.Second)
		if err == nil && kind == "ssl" {
			// The handshake logs why it failed, as stream-ssl does.
			nc, err = r.srv.sslHandshake(nc, r.target, true)
		}
		if err != nil {
			rlog.Infof("%s: connection attempt failed (%s)", r.target, dialErrText(err))
			backoff = min(max(2*backoff, minBackoff), maxBackoff)
			if backoff > minBackoff {
				rlog.Infof("%s: waiting %d seconds before reconnect", r.target, backoff/time.Second)
			}
			continue
		}
		rlog.Infof("%s: connected", r.target)
		backoff = minBackoff
		conn := jsonrpc.NewConn(nc, jsonrpc.Options{
			Name:           r.target,
			ProbeInterval:  r.probe,
			MaxMessageSize: r.srv.opts.MaxMessageSize,
			Log:            r.srv.jsonLog,
			Reconnect:      rlog,
		})
		r.mu.Lock()
		select {
		case <-r.done:
			r.mu.Unlock()
			conn.Close()
			return
		default:
		}
		r.conn = conn
		r.pending = map[string]string{}
		r.state = replServerIDRequested
		r.request("get_server_id", []any{}, "")
		r.mu.Unlock()
		err = conn.Serve(r.handle)
		r.mu.Lock()
		r.conn = nil
		failed := r.failed
		r.mu.Unlock()
		if failed {
			r.srv.replicationFailed(r)
			return
		}
		select {
		case <-r.done:
			return
		default:
		}
		if errors.Is(err, io.EOF) {
			rlog.Infof("%s: connection closed by peer", r.target)
		}
	}
}

func dialErrText(err error) string {
	var se interface{ Unwrap() error }
	for errors.As(err, &se) {
		inner := se.Unwrap()
		if inner == nil {
			break
		}
		err = inner
	}
	s := err.Error()
	if s == "no such file or directory" {
		return "No such file or directory"
	}
	if s == "connection refused" {
		return "Connection refused"
	}
	return s
}

// replicationFailed makes the server active after r failed.
func (s *Server) replicationFailed(r *replRun) {
	s.repl.mu.Lock()
	if s.repl.run == r {
		s.repl.backup.Store(false)
	}
	s.repl.mu.Unlock()
}

// request sends a request; called with r.mu held.
func (r *replRun) request(method string, params any, dbName string) {
	r.nextID++
	id := strconv.Itoa(r.nextID)
	r.pending[id] = dbName
	r.conn.Send(jsonrpc.NewRequest(method, params, r.nextID))
}

// handle runs each message from the active server, in order, on the
// connection's reader: the messages' bytes are only valid meanwhile.
func (r *replRun) handle(m *jsonrpc.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == replErr {
		return
	}
	switch m.Type() {
	case jsonrpc.Notification:
		if m.Method != "update" {
			return
		}
		params := splitParams(m.Params)
		var name string
		if len(params) != 2 || json.Unmarshal(params[0], &name) != nil {
			return
		}
		if e := r.srv.entry(name); e != nil && r.schemas[name] != nil && r.initial[name] {
			if err := r.apply(e, params[1], false); err != nil {
				r.fail("%v", err)
			}
		}
		return
	case jsonrpc.Reply, jsonrpc.Error:
	default:
		return
	}
	key := compactJSON(m.ID)
	dbName, ok := r.pending[key]
	if !ok {
		r.srv.opts.Log("replication").Warnf("received unexpected reply")
		return
	}
	delete(r.pending, key)
	if m.Type() == jsonrpc.Error {
		r.fail("%s failed: %s", r.stateRequest(), m.Error)
		return
	}
	switch r.state {
	case replServerIDRequested:
		var id string
		u, err := db.UUID{}, error(nil)
		if json.Unmarshal(m.Result, &id) == nil {
			u, err = db.ParseUUID(id)
		}
		if id == "" || err != nil {
			r.fail("get_server_id failed: Server ID is not valid UUID")
			return
		}
		if u == r.srv.uuid {
			r.fail("Server ID check failed: Self replicating is not allowed")
			return
		}
		r.state = replDBRequested
		r.request("list_dbs", []any{}, "")
	case replDBRequested:
		var names []json.RawMessage
		if len(m.Result) == 0 || m.Result[0] != '[' || json.Unmarshal(m.Result, &names) != nil {
			r.fail("list_dbs failed: list_dbs response is not array")
			return
		}
		r.schemas = map[string]*db.Schema{}
		r.initial = map[string]bool{}
		for _, raw := range names {
			var name string
			if json.Unmarshal(raw, &name) != nil || name == r.srv.serverDB.name || r.srv.entry(name) == nil {
				continue
			}
			r.request("get_schema", []string{name}, name)
		}
		r.state = replSchemaRequested
		if len(r.pending) == 0 {
			// ovsdb-server waits here forever, a backup "connecting"
			// that replicates nothing; so does govs, saying why.
			r.srv.opts.Log("replication").Warnf("%s serves none of this server's databases: nothing to replicate", r.target)
		}
	case replSchemaRequested:
		r.schemaReply(dbName, m.Result)
	case replMonitorRequested:
		e := r.srv.entry(dbName)
		if e == nil {
			r.fail("%s: database removed while replicating", dbName)
			return
		}
		r.srv.opts.Log("replication").Infof("Monitor request received. Resetting the database")
		if err := r.apply(e, m.Result, true); err != nil {
			r.fail("%v", err)
			return
		}
		r.initial[dbName] = true
		if len(r.pending) == 0 {
			r.state = replReplicating
		}
	}
}

func (r *replRun) stateRequest() string {
	switch r.state {
	case replServerIDRequested:
		return "get_server_id"
	case replDBRequested:
		return "list_dbs"
	case replSchemaRequested:
		return "get_schema"
	}
	return "monitor"
}

func (r *replRun) nothingToReplicate() {
	r.srv.opts.Log("replication").Warnf("Nothing to replicate.")
	r.failLogged()
}

// schemaReply checks an active database's schema against the local one as
// ovsdb-server 3.1 does: a different schema can still be replicated if every
// table and column the active has is here with the same type.
func (r *replRun) schemaReply(name string, raw json.RawMessage) {
	rlog := r.srv.opts.Log("replication")
	e := r.srv.entry(name)
	remote, err := db.ParseSchema(raw)
	switch {
	case err != nil:
		r.fail("%v", err)
		return
	case e == nil || remote.Name != name:
		rlog.Warnf("unexpected schema %s", remote.Name)
		r.failLogged()
		return
	}
	local := e.d.Schema()
	use := local
	if !db.SchemaEqual(local, remote) {
		rlog.Infof("Schema version mismatch, checking if %s can still be replicated or not.", name)
		if replicable(rlog, local, remote) {
			rlog.Infof("%s can be replicated.", name)
			use = remote
		} else {
			rlog.Infof("%s cannot be replicated.", name)
			use = nil
		}
	}
	if use != nil {
		r.schemas[name] = use
	}
	if len(r.pending) > 0 {
		return
	}
	if len(r.schemas) == 0 {
		r.nothingToReplicate()
		return
	}
	r.dbs = r.dbs[:0]
	for n := range r.schemas {
		r.dbs = append(r.dbs, n)
	}
	sort.Strings(r.dbs)
	for _, n := range r.dbs {
		reqs := map[string][]struct{}{}
		for _, tn := range r.schemas[n].TableNames() {
			if !excluded(r.exclude, n, tn) {
				reqs[tn] = []struct{}{{}}
			}
		}
		r.request("monitor", []any{n, n, reqs}, n)
	}
	r.state = replMonitorRequested
}

// replicable is ovsdb-server's is_replication_possible.
func replicable(rlog Logger, local, remote *db.Schema) bool {
	for _, tn := range remote.TableNames() {
		lt := local.Tables[tn]
		if lt == nil {
			rlog.Infof("Table %s not present in the local db schema", tn)
			return false
		}
		for _, rc := range remote.Tables[tn].Columns {
			lc := lt.Column(rc.Name)
			if lc == nil {
				rlog.Infof("Column %s not present in the local db schema table %s.", rc.Name, tn)
				return false
			}
			if !db.TypeEqual(&lc.Type, &rc.Type) {
				rlog.Infof("Column %s mismatch in local db schema table %s.", rc.Name, tn)
				return false
			}
		}
	}
	return true
}

// apply commits table-updates (monitor version 1) from the active server.
// With initial, they are the monitor's whole contents: every row of the
// local tables not excluded that the active does not have goes.
func (r *replRun) apply(e *dbEntry, raw json.RawMessage, initial bool) error {
	if len(raw) == 0 || raw[0] != '{' {
		return errors.New("<table-updates> is not an object")
	}
	tables := map[string]map[string]json.RawMessage{}
	var perr error
	jsonrpc.SplitObject(raw, func(k, v []byte) {
		var tn string
		if json.Unmarshal(k, &tn) != nil || perr != nil {
			return
		}
		if len(v) == 0 || v[0] != '{' {
			perr = errors.New("Not a JSON object: <table-update> for table is not object")
			return
		}
		rows := map[string]json.RawMessage{}
		jsonrpc.SplitObject(v, func(uk, rv []byte) {
			var us string
			json.Unmarshal(uk, &us)
			var ru struct {
				New json.RawMessage `json:"new"`
			}
			if len(rv) == 0 || rv[0] != '{' || json.Unmarshal(rv, &ru) != nil {
				perr = errors.New("Not a JSON object: <row-update> is not object")
				return
			}
			if ru.New == nil {
				rows[us] = json.RawMessage("null")
			} else {
				rows[us] = ru.New
			}
		})
		tables[tn] = rows
	})
	if perr != nil {
		return perr
	}
	var reset []string
	if initial {
		for _, tn := range e.d.Schema().TableNames() {
			if !excluded(r.exclude, e.name, tn) {
				reset = append(reset, tn)
			}
		}
	}
	_, err := e.d.ApplyReplica(tables, reset)
	return err
}
