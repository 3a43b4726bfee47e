package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/govs/govs/internal/unixsock"
	"github.com/govs/govs/ovsdb/db"
	"github.com/govs/govs/ovsdb/jsonrpc"
)

// relay keeps a copy of one database of another server (its source) and
// serves it, as ovsdb-server's relay mode (ovsdb/relay.c): the copy
// follows a monitor of every table; reads and monitors are served from
// it; transactions are forwarded to the source and its answer returned.
type relay struct {
	srv     *Server
	name    string
	sources []string
	log     Logger

	mu      sync.Mutex
	conn    *jsonrpc.Conn                    // guarded by mu: session to the source, nil while down
	pending map[string]chan *jsonrpc.Message // guarded by mu: forwarded requests by id
	nextID  int                              // guarded by mu
	e       *dbEntry                         // guarded by mu: nil until the first schema
	synced  chan struct{}                    // closed by the reader once the initial rows are in
	passive map[string]*passiveSource        // guarded by mu: listeners of passive sources, by name
}

// passiveSource is a relay source given as punix:, ptcp: or pssl:: the
// relay listens and the source connects to it, as jsonrpc_session does
// with a passive name (lib/jsonrpc.c). The relay still speaks first on the
// accepted connection (get_schema, monitor_cond); a newer connection
// replaces the current one. The listener stays open for the relay's life.
type passiveSource struct {
	ln       net.Listener
	accepted chan net.Conn // from the accept loop to the relay's sessions
	next     net.Conn      // guarded by relay.mu: a connection that replaced the current one
}

// relayMonitorID names the relay's monitor in the source.
const relayMonitorID = `"relay"`

// ParseRelay splits "relay:DB:REMOTE[,REMOTE]..." into the database name
// and its sources: active remotes (unix:, tcp:, ssl:) the relay connects
// to, or passive ones (punix:, ptcp:, pssl:) it listens on.
func ParseRelay(arg string) (string, []string, error) {
	rest, ok := strings.CutPrefix(arg, "relay:")
	if !ok {
		return "", nil, fmt.Errorf("%s: not a relay database", arg)
	}
	name, list, ok := strings.Cut(rest, ":")
	if !ok {
		return "", nil, fmt.Errorf("ovsdb error: %s: invalid syntax", arg)
	}
	if name == "" || list == "" {
		// ovsdb-server retries such a relay forever; refused here.
		return "", nil, fmt.Errorf("%s: invalid syntax (relay:DB_NAME:REMOTE[,REMOTE]...)", arg)
	}
	var sources []string
	for _, r := range strings.Split(list, ",") {
		if strings.HasPrefix(r, "db:") {
			return "", nil, fmt.Errorf("%s: %s: a relay source is a remote, not a db: reference", arg, r)
		}
		if err := ValidateRemote(r); err != nil {
			return "", nil, fmt.Errorf("%s: %v", arg, err)
		}
		sources = append(sources, r)
	}
	return name, sources, nil
}

// AddRelay serves database name as a relay of sources, tried in turn. The
// database appears once the first source has sent its schema.
func (s *Server) AddRelay(name string, sources []string) {
	r := &relay{srv: s, name: name, sources: sources, log: s.opts.Log("relay"), pending: map[string]chan *jsonrpc.Message{}}
	s.mu.Lock()
	s.relays = append(s.relays, r)
	started := s.started
	s.mu.Unlock()
	if started {
		s.wg.Add(1)
		go r.run()
	}
}

func (r *relay) run() {
	defer r.srv.wg.Done()
	backoff := time.Duration(0)
	for i := 0; ; i++ {
		src := r.sources[i%len(r.sources)]
		if isPassive(src) {
			// Waiting for the source to connect paces this one.
			backoff = 0
		}
		select {
		case <-r.srv.done:
			return
		case <-time.After(backoff):
		}
		select {
		case <-r.srv.done:
			return
		default:
		}
		synced, err := r.session(src)
		r.log.Infof("%s: %s", src, err)
		if synced {
			backoff = minBackoff
		} else {
			backoff = min(max(2*backoff, minBackoff), maxBackoff)
		}
	}
}

// session runs one connection to src: schema, monitor, then updates until
// the connection ends, which it returns as an error; synced tells whether
// the copy was loaded.
func (r *relay) session(src string) (synced bool, err error) {
	err = r.session1(src, &synced)
	return synced, err
}

func (r *relay) session1(src string, done *bool) error {
	var nc net.Conn
	var p *passiveSource
	var err error
	if isPassive(src) {
		if p, err = r.listen(src); err != nil {
			return err
		}
		if nc, err = r.accept(p); err != nil {
			return err
		}
	} else if nc, err = r.dial(src); err != nil {
		return err
	}
	probe := time.Duration(0)
	if needsProbes(src) {
		probe = jsonrpc.DefaultProbeInterval
	}
	c := jsonrpc.NewConn(nc, jsonrpc.Options{Name: src, ProbeInterval: probe, Log: r.srv.jsonLog, Reconnect: r.srv.reconnLog})
	syncedCh := make(chan struct{})
	r.mu.Lock()
	r.conn, r.synced = c, syncedCh
	r.mu.Unlock()
	served := make(chan struct{})
	go func() {
		c.Serve(r.handle)
		close(served)
	}()
	defer func() {
		c.Close()
		<-served
		r.mu.Lock()
		r.conn = nil
		for id, ch := range r.pending {
			close(ch)
			delete(r.pending, id)
		}
		e := r.e
		r.mu.Unlock()
		if e != nil {
			r.srv.setServerRow(e, map[string]any{"connected": false})
		}
	}()
	stop := func() { c.Close() }
	var accepted chan net.Conn // nil, never ready, for an active source
	if p != nil {
		accepted = p.accepted
	}
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-r.srv.done:
			stop()
		case nc := <-accepted:
			r.log.Infof("%s: new connection replacing active connection", src)
			r.mu.Lock()
			p.next = nc
			r.mu.Unlock()
			stop()
		case <-served:
		}
	}()
	// The watcher is done before the next session's accept: one that had
	// taken a connection but not yet stored it in p.next when this
	// session ended left that accept waiting for a third connection.
	defer func() {
		stop()
		<-watched
	}()

	reply, err := r.call(c, "get_schema", []any{r.name})
	if err != nil {
		return err
	}
	if err := r.ensureDB(reply.Result); err != nil {
		return err
	}
	r.mu.Lock()
	sch := r.e.d.Schema()
	r.mu.Unlock()
	req := map[string]any{}
	for _, t := range sch.TableNames() {
		req[t] = map[string]any{}
	}
	monitor := &jsonrpc.Message{Method: "monitor_cond", Params: mustJSON([]any{r.name, json.RawMessage(relayMonitorID), req}),
		ID: json.RawMessage(relayMonitorID)}
	c.Send(monitor)
	select {
	case <-syncedCh:
		*done = true
	case <-served:
		return errors.New("connection closed before the monitor started")
	}
	r.log.Infof("%s: relay database %s connected", src, r.name)
	r.srv.setServerRow(r.e, map[string]any{"connected": true})
	<-served
	return fmt.Errorf("connection closed (%v)", c.Err())
}

func isPassive(src string) bool {
	kind, _, _ := strings.Cut(src, ":")
	return kind == "punix" || kind == "ptcp" || kind == "pssl"
}

// dial connects to an active source.
func (r *relay) dial(src string) (net.Conn, error) {
	kind, rest, _ := strings.Cut(src, ":")
	network, addr := "unix", rest
	if kind != "unix" {
		a, err := dialAddr(rest)
		if err != nil {
			return nil, err
		}
		network, addr = "tcp", a
	}
	nc, err := net.DialTimeout(network, addr, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("connection attempt failed (%v)", err)
	}
	if kind == "ssl" {
		if nc, err = r.srv.sslHandshake(nc, src, true); err != nil {
			return nil, fmt.Errorf("connection attempt failed (%v)", err)
		}
	}
	return nc, nil
}

// listen opens a passive source's listener the first time and starts its
// accept loop, which the server's exit ends.
func (r *relay) listen(src string) (*passiveSource, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.passive[src]; p != nil {
		return p, nil
	}
	kind, rest, _ := strings.Cut(src, ":")
	var ln net.Listener
	var err error
	if kind == "punix" {
		ln, err = unixsock.Listen(rest, 0o750)
	} else {
		var addr string
		if addr, err = listenAddr(rest); err == nil {
			ln, err = net.Listen("tcp", addr)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: listen failed (%v)", src, err)
	}
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		r.log.Infof("%s: listening on port %d", src, a.Port)
	}
	p := &passiveSource{ln: ln, accepted: make(chan net.Conn)}
	if r.passive == nil {
		r.passive = map[string]*passiveSource{}
	}
	r.passive[src] = p
	r.srv.wg.Add(2)
	go func() {
		defer r.srv.wg.Done()
		<-r.srv.done
		ln.Close()
	}()
	go r.acceptLoop(src, p)
	return p, nil
}

func (r *relay) acceptLoop(src string, p *passiveSource) {
	defer r.srv.wg.Done()
	for {
		nc, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			r.log.Warnf("%s: accept failed: %v", src, err)
			select {
			case <-r.srv.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		if strings.HasPrefix(src, "pssl:") {
			if nc, err = r.srv.sslHandshake(nc, "ssl:"+nc.RemoteAddr().String(), false); err != nil {
				continue
			}
		}
		select {
		case p.accepted <- nc:
		case <-r.srv.done:
			nc.Close()
			return
		}
	}
}

// accept waits for the source to connect to a passive source, or takes
// the connection that replaced the last one.
func (r *relay) accept(p *passiveSource) (net.Conn, error) {
	r.mu.Lock()
	nc := p.next
	p.next = nil
	r.mu.Unlock()
	if nc != nil {
		return nc, nil
	}
	select {
	case nc = <-p.accepted:
		return nc, nil
	case <-r.srv.done:
		return nil, errors.New("server exiting")
	}
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// ensureDB creates the relay's database from the source's schema the
// first time, and checks it did not change after.
func (r *relay) ensureDB(raw json.RawMessage) error {
	sch, err := db.ParseSchema(raw)
	if err != nil {
		return fmt.Errorf("bad schema from source: %v", err)
	}
	if sch.Name != r.name {
		return fmt.Errorf("source sent schema of %s, not %s", sch.Name, r.name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.e != nil {
		if sch.Version != r.e.d.Schema().Version {
			return fmt.Errorf("source schema version %s differs from the relay's %s (restart the relay to convert)",
				sch.Version, r.e.d.Schema().Version)
		}
		return nil
	}
	s := r.srv
	d := db.New(sch)
	s.mu.Lock()
	if _, dup := s.dbs[r.name]; dup {
		s.mu.Unlock()
		return fmt.Errorf("%s: duplicate database name", r.name)
	}
	e := s.newEntry(d)
	e.relay = r
	s.dbs[r.name] = e
	s.mu.Unlock()
	s.addServerRow(e)
	r.e = e
	return nil
}

// call sends a request to the source and waits for its answer.
func (r *relay) call(c *jsonrpc.Conn, method string, params any) (*jsonrpc.Message, error) {
	r.mu.Lock()
	r.nextID++
	id := fmt.Sprintf(`"relay-%d"`, r.nextID)
	ch := make(chan *jsonrpc.Message, 1)
	r.pending[id] = ch
	r.mu.Unlock()
	c.Send(&jsonrpc.Message{Method: method, Params: mustJSON(params), ID: json.RawMessage(id)})
	var m *jsonrpc.Message
	select {
	case m = <-ch:
	case <-c.Done():
		r.mu.Lock()
		delete(r.pending, id)
		r.mu.Unlock()
		select {
		case m = <-ch: // answered just before the close
		default:
		}
	}
	if m == nil {
		return nil, errors.New("connection closed")
	}
	if m.Error != nil && string(m.Error) != "null" {
		return m, fmt.Errorf("%s failed: %s", method, m.Error)
	}
	return m, nil
}

// handle runs in the source connection's reader, in arrival order.
func (r *relay) handle(m *jsonrpc.Message) {
	switch {
	case m.Method == "update2":
		var params []json.RawMessage
		if json.Unmarshal(m.Params, &params) == nil && len(params) == 2 {
			r.apply(params[1], false)
		}
	case m.Type() == jsonrpc.Reply || m.Type() == jsonrpc.Error:
		id := string(m.ID)
		if id == relayMonitorID {
			if m.Type() == jsonrpc.Error {
				r.log.Warnf("%s: monitor refused: %s", r.name, m.Error)
				r.mu.Lock()
				c := r.conn
				r.mu.Unlock()
				if c != nil {
					c.Close()
				}
				return
			}
			r.apply(m.Result, true)
			r.mu.Lock()
			close(r.synced)
			r.mu.Unlock()
			return
		}
		r.mu.Lock()
		ch := r.pending[id]
		delete(r.pending, id)
		r.mu.Unlock()
		if ch != nil {
			// The message's bytes belong to the reader's buffer.
			ch <- &jsonrpc.Message{Result: bytes.Clone(m.Result), Error: bytes.Clone(m.Error), ID: bytes.Clone(m.ID)}
		}
	}
}

// apply mirrors table-updates2 into the copy. The initial contents of a
// new session replace the copy: rows the source no longer has are
// deleted, changed ones rewritten, the others left alone, so that clients
// monitoring the relay see only what changed while it was away.
func (r *relay) apply(raw json.RawMessage, initial bool) {
	r.mu.Lock()
	e := r.e
	r.mu.Unlock()
	var updates map[string]map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &updates); err != nil {
		r.log.Warnf("%s: bad update from source: %v", r.name, err)
		return
	}
	rec := map[string]map[string]json.RawMessage{}
	for t, rows := range updates {
		rec[t] = map[string]json.RawMessage{}
		for u, ch := range rows {
			for kind, v := range ch {
				switch kind {
				case "initial", "insert", "modify":
					rec[t][u] = v
				case "delete":
					rec[t][u] = json.RawMessage("null")
				}
			}
		}
	}
	var err error
	if initial {
		err = e.d.MirrorReset(rec)
	} else {
		err = e.d.Mirror(rec, true)
	}
	if err != nil {
		r.log.Errorf("%s: cannot apply update from source: %v", r.name, err)
	}
}

// readsOnly reports whether a transaction cannot change the database, so
// that a relay runs it on its copy, as OVS's relay does, instead of
// forwarding it.
func readsOnly(ops []json.RawMessage) bool {
	for _, raw := range ops {
		var op struct {
			Op string `json:"op"`
		}
		if json.Unmarshal(raw, &op) != nil {
			return false
		}
		switch op.Op {
		case "select", "wait", "comment", "assert", "abort":
		default:
			return false
		}
	}
	return true
}

// forward sends a client's transaction to the source and relays the
// answer, in the background so that the client's session goes on.
func (r *relay) forward(ss *session, m *jsonrpc.Message) {
	id := bytes.Clone(m.ID)
	params := bytes.Clone(m.Params)
	go func() {
		r.mu.Lock()
		c := r.conn
		r.mu.Unlock()
		if c == nil {
			ss.send(jsonrpc.NewError(id, &ovsdbError{Name: "not connected",
				Details: fmt.Sprintf("relay database %s has no connection to its source", r.name)}))
			return
		}
		reply, err := r.call(c, "transact", json.RawMessage(params))
		switch {
		case reply == nil:
			ss.send(jsonrpc.NewError(id, &ovsdbError{Name: "not connected",
				Details: fmt.Sprintf("relay database %s lost its source: %v", r.name, err)}))
		case err != nil:
			ss.send(&jsonrpc.Message{Error: reply.Error, ID: id})
		default:
			ss.send(&jsonrpc.Message{Result: reply.Result, ID: id})
		}
	}()
}
