package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/internal/unixsock"
	"github.com/govs/govs/ovsdb/db"
	"github.com/govs/govs/ovsdb/jsonrpc"
)

// statusInterval is how often the status of remotes configured from the
// database is written back, and failed listeners retried (ovsdb-server
// updates remote status every 2.5 seconds).
const statusInterval = 2500 * time.Millisecond

// Active remotes reconnect with exponential backoff, as reconnect.c does
// with its defaults.
const (
	minBackoff = time.Second
	maxBackoff = 8 * time.Second
)

// DefaultPort is the OVSDB port for tcp: and ptcp: without one.
const DefaultPort = 6640

// remoteOptions are the per-remote settings a Manager row may give.
type remoteOptions struct {
	probe    time.Duration
	readOnly bool    // the row's read_only column: sessions may not write
	row      db.UUID // Manager row to write status to, if any
	table    string
}

// remote is one open remote: a listener with its sessions, or an active
// connection kept up with reconnection.
type remote struct {
	srv    *Server
	target string
	ln     net.Listener // nil for active remotes
	port   int          // bound port of a TCP listener

	mu        sync.Mutex
	opts      remoteOptions     // guarded by mu: reconfiguration updates it
	sessions  map[*session]bool // guarded by mu
	connected time.Time         // guarded by mu: active remote's current connection
	state     string            // guarded by mu: active remote's reconnect state
	done      chan struct{}
	closeOnce sync.Once
}

// parseTCP splits "PORT[:IP]" (passive) or "IP[:PORT]" (active).
func listenAddr(spec string) (string, error) {
	port, ip, _ := strings.Cut(spec, ":")
	if port == "" {
		port = strconv.Itoa(DefaultPort)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", fmt.Errorf("%s: bad port number", port)
	}
	ip = strings.TrimSuffix(strings.TrimPrefix(ip, "["), "]")
	return net.JoinHostPort(ip, port), nil
}

func dialAddr(spec string) (string, error) {
	host, port := spec, strconv.Itoa(DefaultPort)
	if i := strings.LastIndex(spec, ":"); i >= 0 && !strings.HasSuffix(spec, "]") {
		host, port = spec[:i], spec[i+1:]
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" {
		return "", errors.New("missing host")
	}
	return net.JoinHostPort(host, port), nil
}

// needsProbes mirrors stream_or_pstream_needs_probes: TCP yes, unix no.
func needsProbes(target string) bool {
	return strings.HasPrefix(target, "tcp:") || strings.HasPrefix(target, "ptcp:") ||
		strings.HasPrefix(target, "ssl:") || strings.HasPrefix(target, "pssl:")
}

// ValidateRemote checks a remote's syntax: punix:, ptcp:, pssl:, unix:,
// tcp:, ssl: or db:DB,TABLE,COLUMN.
func ValidateRemote(target string) error {
	kind, rest, ok := strings.Cut(target, ":")
	if !ok {
		return fmt.Errorf("%s: unknown remote type", target)
	}
	switch kind {
	case "punix", "unix":
		if rest == "" {
			return fmt.Errorf("%s: missing socket path", target)
		}
	case "ptcp", "pssl":
		_, err := listenAddr(rest)
		return err
	case "tcp", "ssl":
		_, err := dialAddr(rest)
		return err
	case "db":
		if len(strings.Split(rest, ",")) != 3 {
			return fmt.Errorf("%q: invalid syntax", target)
		}
	default:
		return fmt.Errorf("%s: unknown remote type %q", target, kind)
	}
	return nil
}

// openRemote opens a remote. Listeners are bound before it returns.
func (s *Server) openRemote(target string, opts remoteOptions) (*remote, error) {
	r := &remote{srv: s, target: target, opts: opts, sessions: map[*session]bool{}, done: make(chan struct{})}
	kind, rest, _ := strings.Cut(target, ":")
	switch kind {
	case "punix":
		// Like ovsdb-server's sockets: owner rw, group r (0750 with x),
		// whatever the umask and from the moment the file exists.
		ln, err := unixsock.Listen(rest, 0o750)
		if err != nil {
			return nil, err
		}
		r.ln = ln
		// Its sessions are taken, waited for and closed without a
		// system call that wakes the runtime's monitor thread (see
		// jsonrpc.Poller): most of what an ovn-nbctl call cost over
		// ovsdb-server's was those wake-ups.
		if p, err := jsonrpc.DefaultPoller(); err != nil {
			s.rpcLog.Warnf("%s: %v", target, err)
		} else if pl, err := p.Listen(ln); err != nil {
			s.rpcLog.Warnf("%s: %v", target, err)
		} else {
			r.ln = pl
		}
	case "ptcp", "pssl":
		addr, err := listenAddr(rest)
		if err != nil {
			return nil, err
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, err
		}
		r.ln = ln
		r.port = ln.Addr().(*net.TCPAddr).Port
		if strings.HasPrefix(rest, "0") || rest == "" || strings.HasPrefix(rest, ":") {
			s.log.Infof("%s: listening on port %d", rest, r.port)
		}
	case "unix", "tcp", "ssl":
	default:
		return nil, fmt.Errorf("%s: unknown remote type", target)
	}
	s.wg.Add(1)
	if r.ln != nil {
		go r.acceptLoop()
	} else {
		go r.connectLoop(kind, rest)
	}
	return r, nil
}

func (r *remote) options() remoteOptions {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.opts
}

func (r *remote) probe() time.Duration {
	if p := r.options().probe; p >= 0 {
		return p
	}
	if needsProbes(r.target) {
		return jsonrpc.DefaultProbeInterval
	}
	return 0
}

func (r *remote) acceptLoop() {
	defer r.srv.wg.Done()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		nc, err := r.ln.Accept()
		if err != nil {
			select {
			case <-r.done:
				return
			default:
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			r.srv.rpcLog.Warnf("%s: accept failed: %v", r.target, err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		name := r.connName(nc)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if strings.HasPrefix(r.target, "pssl:") {
				name = "ssl:" + strings.TrimPrefix(name, "tcp:")
				var err error
				if nc, err = r.srv.sslHandshake(nc, name, false); err != nil {
					return
				}
			}
			r.serve(nc, name)
		}()
	}
}

func (r *remote) connName(nc net.Conn) string {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return "tcp:" + a.String()
	}
	return daemon.UnixConnName()
}

// serve runs one session of this remote.
func (r *remote) serve(nc net.Conn, name string) {
	ss := newSession(r.srv, nc, name, r.probe())
	ss.readOnly = func() bool { return r.options().readOnly }
	r.mu.Lock()
	select {
	case <-r.done:
		r.mu.Unlock()
		nc.Close()
		return
	default:
	}
	r.sessions[ss] = true
	r.mu.Unlock()
	ss.run()
	r.mu.Lock()
	delete(r.sessions, ss)
	r.mu.Unlock()
}

func (r *remote) connectLoop(kind, rest string) {
	defer r.srv.wg.Done()
	network, addr := "unix", rest
	if kind == "tcp" || kind == "ssl" {
		network = "tcp"
		a, err := dialAddr(rest)
		if err != nil {
			r.srv.log.Errorf("%s: %v", r.target, err)
			return
		}
		addr = a
	}
	backoff := time.Duration(0)
	for {
		select {
		case <-r.done:
			return
		case <-time.After(backoff):
		}
		r.setState("CONNECTING", time.Time{})
		nc, err := net.DialTimeout(network, addr, 10*time.Second)
		if err != nil {
			r.srv.reconnLog.Infof("%s: connection attempt failed (%v)", r.target, err)
			backoff = min(max(2*backoff, minBackoff), maxBackoff)
			r.setState("BACKOFF", time.Time{})
			continue
		}
		if kind == "ssl" {
			if nc, err = r.srv.sslHandshake(nc, r.target, true); err != nil {
				backoff = min(max(2*backoff, minBackoff), maxBackoff)
				r.setState("BACKOFF", time.Time{})
				continue
			}
		}
		r.srv.reconnLog.Infof("%s: connected", r.target)
		backoff = 0
		r.setState("ACTIVE", time.Now())
		r.serve(nc, r.target)
		r.setState("BACKOFF", time.Time{})
		backoff = minBackoff
	}
}

func (r *remote) setState(state string, connected time.Time) {
	r.mu.Lock()
	r.state, r.connected = state, connected
	r.mu.Unlock()
}

func (r *remote) close() {
	r.closeOnce.Do(func() {
		close(r.done)
		if r.ln != nil {
			r.ln.Close()
		}
		r.mu.Lock()
		sessions := make([]*session, 0, len(r.sessions))
		for ss := range r.sessions {
			sessions = append(sessions, ss)
		}
		r.mu.Unlock()
		for _, ss := range sessions {
			ss.conn.Close()
		}
	})
}

// AddRemote adds a remote (ovsdb-server/add-remote, or --remote): punix:PATH,
// ptcp:PORT[:IP], pssl:PORT[:IP], unix:PATH, tcp:IP[:PORT], ssl:IP:PORT, or
// db:DB,TABLE,COLUMN to read
// remotes from a column, e.g. db:Open_vSwitch,Open_vSwitch,manager_options.
func (s *Server) AddRemote(target string) error {
	if err := ValidateRemote(target); err != nil {
		return err
	}
	if err := s.CheckDBRemote(target); err != nil {
		return err
	}
	s.mu.Lock()
	s.static[target] = true
	started := s.started
	s.mu.Unlock()
	if started {
		return s.reconfigure()
	}
	return nil
}

// CheckDBRemote checks that a db:DB,TABLE,COLUMN remote names a database,
// table and column the server has, with ovsdb-server's messages; other
// remotes pass.
func (s *Server) CheckDBRemote(target string) error {
	spec, ok := strings.CutPrefix(target, "db:")
	if !ok {
		return nil
	}
	parts := strings.Split(spec, ",")
	if len(parts) != 3 {
		return fmt.Errorf("%q: invalid syntax", target)
	}
	e := s.entry(parts[0])
	if e == nil {
		return fmt.Errorf("%q: no database named %s", target, parts[0])
	}
	t := e.d.Schema().Tables[parts[1]]
	if t == nil {
		return fmt.Errorf("%q: no table named %s", target, parts[1])
	}
	if t.Column(parts[2]) == nil {
		return fmt.Errorf("%q: table %q has no column %q", target, parts[1], parts[2])
	}
	return nil
}

// RemoveRemote removes a remote that AddRemote or Options.Remotes added.
func (s *Server) RemoveRemote(target string) error {
	s.mu.Lock()
	if !s.static[target] {
		s.mu.Unlock()
		return errors.New("no such remote")
	}
	delete(s.static, target)
	started := s.started
	s.mu.Unlock()
	if started {
		s.reconfigure()
	}
	return nil
}

// Remotes returns the configured remotes, sorted (ovsdb-server/list-remotes).
func (s *Server) Remotes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.static))
	for r := range s.static {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// ListeningAddr returns the address a passive remote listens on, or nil.
func (s *Server) ListeningAddr(target string) net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.remotes[target]; r != nil && r.ln != nil {
		return r.ln.Addr()
	}
	return nil
}

var reconfigMu sync.Mutex

// reconfigure opens and closes remotes to match the configuration: the
// static remotes and those read from database columns.
func (s *Server) reconfigure() error {
	reconfigMu.Lock()
	defer reconfigMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	want := map[string]remoteOptions{}
	var dbSpecs []string
	for t := range s.static {
		if strings.HasPrefix(t, "db:") {
			dbSpecs = append(dbSpecs, t)
		} else {
			want[t] = remoteOptions{probe: -1}
		}
	}
	s.mu.Unlock()
	sslRefs := len(sslRefs(&s.opts.SSL)) > 0
	s.dbRemotes.Store(len(dbSpecs) > 0 || sslRefs)
	if sslRefs || s.opts.SSL != (SSLOptions{}) {
		s.configureSSL()
	}
	sort.Strings(dbSpecs)
	for _, spec := range dbSpecs {
		for t, o := range s.remotesFromDB(spec) {
			if _, dup := want[t]; !dup {
				want[t] = o
			}
		}
	}

	s.mu.Lock()
	var toClose []*remote
	for t, r := range s.remotes {
		o, ok := want[t]
		if !ok || o.probe != r.options().probe {
			if !ok {
				s.rpcLog.Infof("%s: remote deconfigured", t)
			}
			toClose = append(toClose, r)
			delete(s.remotes, t)
		} else {
			r.mu.Lock()
			r.opts = o
			r.mu.Unlock()
		}
	}
	var toOpen []string
	for t := range want {
		if s.remotes[t] == nil {
			toOpen = append(toOpen, t)
		}
	}
	s.mu.Unlock()
	for _, r := range toClose {
		r.close()
	}
	sort.Strings(toOpen)
	var errs []error
	for _, t := range toOpen {
		r, err := s.openRemote(t, want[t])
		if err != nil {
			s.rpcLog.Errorf("%s: listen failed: %v", t, err)
			errs = append(errs, fmt.Errorf("%s: %w", t, err))
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			r.close()
			continue
		}
		s.remotes[t] = r
		s.mu.Unlock()
	}
	if len(dbSpecs) > 0 {
		s.updateRemoteStatus()
	}
	return errors.Join(errs...)
}

// remotesFromDB reads remotes from db:DB,TABLE,COLUMN. The column holds
// remote strings, or references to rows whose "target" column does (with
// "inactivity_probe" in milliseconds), like the Manager table.
func (s *Server) remotesFromDB(spec string) map[string]remoteOptions {
	parts := strings.Split(strings.TrimPrefix(spec, "db:"), ",")
	out := map[string]remoteOptions{}
	if len(parts) != 3 {
		return out
	}
	e := s.entry(parts[0])
	if e == nil {
		s.log.Warnf("%s: no database named %s", spec, parts[0])
		return out
	}
	sch := e.d.Schema()
	t := sch.Tables[parts[1]]
	if t == nil {
		s.log.Warnf("%s: no table named %s", spec, parts[1])
		return out
	}
	col := t.Column(parts[2])
	if col == nil {
		s.log.Warnf("%s: no column named %s", spec, parts[2])
		return out
	}
	e.d.Read(func(snap db.Snapshot) {
		for _, row := range snap.Rows(t.Name) {
			v := row.Get(col)
			switch {
			case col.Type.Key.Type == db.TypeString && col.Type.Value == nil:
				for _, k := range v.Keys {
					out[k.(string)] = remoteOptions{probe: -1}
				}
			case col.Type.Key.RefTable != "" && col.Type.Value == nil:
				rt := sch.Tables[col.Type.Key.RefTable]
				target := rt.Column("target")
				if target == nil {
					continue
				}
				probeCol := rt.Column("inactivity_probe")
				rows := snap.Rows(rt.Name)
				for _, k := range v.Keys {
					rr := rows[k.(db.UUID)]
					if rr == nil {
						continue
					}
					tv := rr.Get(target)
					if len(tv.Keys) != 1 {
						continue
					}
					o := remoteOptions{probe: -1, row: rr.UUID, table: rt.Name}
					if c := rt.Column("read_only"); c != nil {
						if rv := rr.Get(c); len(rv.Keys) == 1 {
							o.readOnly, _ = rv.Keys[0].(bool)
						}
					}
					if probeCol != nil {
						if pv := rr.Get(probeCol); len(pv.Keys) == 1 {
							if ms, ok := pv.Keys[0].(int64); ok {
								o.probe = time.Duration(ms) * time.Millisecond
							}
						}
					}
					out[tv.Keys[0].(string)] = o
				}
			}
		}
	})
	return out
}

// updateRemoteStatus writes is_connected and status to the rows that
// configured remotes, as ovsdb-server does for the Manager table.
func (s *Server) updateRemoteStatus() {
	if s.IsBackup() {
		// A backup's databases hold what the active server has.
		return
	}
	s.mu.Lock()
	byDB := map[*dbEntry][]json.RawMessage{}
	for _, r := range s.remotes {
		o := r.options()
		if o.table == "" {
			continue
		}
		e := s.findTableEntry(o.table)
		if e == nil {
			continue
		}
		t := e.d.Schema().Tables[o.table]
		row := map[string]any{}
		status := r.status()
		r.mu.Lock()
		n := len(r.sessions)
		r.mu.Unlock()
		if t.Column("is_connected") != nil {
			row["is_connected"] = n > 0
		}
		if t.Column("status") != nil {
			pairs := make([][2]string, 0, len(status))
			keys := make([]string, 0, len(status))
			for k := range status {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				pairs = append(pairs, [2]string{k, status[k]})
			}
			row["status"] = []any{"map", pairs}
		}
		op, _ := json.Marshal(map[string]any{"op": "update", "table": o.table,
			"where": []any{[]any{"_uuid", "==", []string{"uuid", o.row.String()}}}, "row": row})
		byDB[e] = append(byDB[e], op)
	}
	s.mu.Unlock()
	for e, ops := range byDB {
		e.d.Transact(ops, nil, time.Time{})
	}
}

// findTableEntry returns the non-_Server database with a table of that
// name. Called with s.mu held.
func (s *Server) findTableEntry(table string) *dbEntry {
	for _, e := range s.dbs {
		if e != s.serverDB && e.d.Schema().Tables[table] != nil {
			return e
		}
	}
	return nil
}

// status is what ovsdb-server reports in a Manager row's status column.
func (r *remote) status() map[string]string {
	st := map[string]string{}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln != nil {
		if r.port != 0 {
			st["bound_port"] = strconv.Itoa(r.port)
		}
		if n := len(r.sessions); n > 1 {
			st["n_connections"] = strconv.Itoa(n)
		}
		st["sec_since_connect"] = "0"
		st["sec_since_disconnect"] = "0"
		return st
	}
	if r.state != "" {
		st["state"] = r.state
	}
	if !r.connected.IsZero() {
		st["sec_since_connect"] = strconv.Itoa(int(time.Since(r.connected).Seconds()))
	}
	return st
}
