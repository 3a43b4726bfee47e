package daemon

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govs/govs/internal/unixsock"
)

// UnixctlHandler runs one unixctl command. Its result is sent as the reply's
// "result" and a non-nil error's text as its "error"; a newline is appended
// to either if it is non-empty and lacks one, as OVS does.
type UnixctlHandler func(args []string) (string, error)

type unixctlCommand struct {
	usage    string
	min, max int
	fn       UnixctlHandler
}

// UnixctlServer serves OVS's unixctl protocol on a Unix socket, so that
// ovs-appctl can drive the daemon. Requests on one connection are handled in
// order, but handlers for different connections run concurrently: handlers
// must be safe for concurrent use.
type UnixctlServer struct {
	path string
	ln   *unixsock.Listener
	log  *ModuleLogger

	mu       sync.Mutex
	cmds     map[string]unixctlCommand
	conns    map[net.Conn]struct{}
	closed   bool
	inflight sync.WaitGroup
}

// closeGrace bounds how long Close waits for in-flight requests, so that
// e.g. the reply to "exit" still reaches ovs-appctl.
const closeGrace = 5 * time.Second

// ListenUnixctl listens on path (mode 0750, replacing a stale socket) and
// registers the built-in commands: list-commands, version (replying
// VersionString(program, version)) and, if log is not nil, vlog/list,
// vlog/list-pattern, vlog/set, vlog/reopen and vlog/close. The socket is
// served until Close. Linux limits socket paths to 107 bytes.
func ListenUnixctl(path, program, version string, log *Logger) (*UnixctlServer, error) {
	ln, err := unixsock.Listen(path, 0o750)
	if err != nil {
		return nil, fmt.Errorf("could not initialize control socket %s: %w", path, err)
	}
	s := &UnixctlServer{
		path:  path,
		ln:    ln,
		cmds:  make(map[string]unixctlCommand),
		conns: make(map[net.Conn]struct{}),
	}
	if log != nil {
		s.log = log.Module("unixctl")
	}
	s.registerBuiltins(program, version, log)
	go s.acceptLoop()
	return s, nil
}

// Path returns the socket path.
func (s *UnixctlServer) Path() string { return s.path }

// Register adds command name, taking minArgs to maxArgs arguments (use
// math.MaxInt for no limit); usage is shown by list-commands. Registering a
// name twice panics. Commands may be registered at any time.
func (s *UnixctlServer) Register(name, usage string, minArgs, maxArgs int, fn UnixctlHandler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.cmds[name]; dup {
		panic("unixctl: command registered twice: " + name)
	}
	s.cmds[name] = unixctlCommand{usage: usage, min: minArgs, max: maxArgs, fn: fn}
}

// Close stops listening, removes the socket, waits (briefly) for requests
// being handled to send their replies, and closes all connections. Do not
// call it from a handler: signal another goroutine instead.
func (s *UnixctlServer) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	err := s.ln.Close()

	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeGrace):
	}

	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	return err
}

func (s *UnixctlServer) acceptLoop() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warnf("%s: accept failed: %v", s.path, err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		name := UnixConnName()
		s.mu.Unlock()
		go s.serveConn(c, name)
	}
}

func (s *UnixctlServer) serveConn(c net.Conn, name string) {
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	dec := newMessageDecoder(c)
	w := bufio.NewWriter(c)
	for {
		req, err := dec.next()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Warnf("%s: %v", name, err)
			}
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		s.inflight.Add(1)
		s.mu.Unlock()

		result, errText := s.dispatch(req)
		err = writeReply(w, req.ID, result, errText)
		s.inflight.Done()
		if err != nil {
			s.log.Debugf("%s: send reply: %v", name, err)
			return
		}
	}
}

// dispatch runs req; it returns the reply's result, or its error text when
// isErr is true.
func (s *UnixctlServer) dispatch(req *unixctlRequest) (text string, isErr bool) {
	if s.log.Enabled(LevelDbg) {
		s.log.Debugf("received request %s%s, id=%s", req.Method, jsonParams(req.Params), req.ID)
	}
	args, err := req.stringParams()
	if err == nil {
		s.mu.Lock()
		cmd, ok := s.cmds[req.Method]
		s.mu.Unlock()
		switch {
		case !ok:
			err = fmt.Errorf("\"%s\" is not a valid command (use \"list-commands\" to see a list of valid commands)", req.Method)
		case len(args) < cmd.min:
			err = fmt.Errorf("\"%s\" command requires at least %d arguments", req.Method, cmd.min)
		case len(args) > cmd.max:
			err = fmt.Errorf("\"%s\" command takes at most %d arguments", req.Method, cmd.max)
		default:
			text, err = cmd.fn(args)
		}
	}
	if err != nil {
		text = err.Error()
	}
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if err != nil {
		s.log.Debugf("replying with error, id=%s: \"%s\"", req.ID, text)
	} else {
		s.log.Debugf("replying with success, id=%s: \"%s\"", req.ID, text)
	}
	return text, err != nil
}

func jsonParams(p []json.RawMessage) string {
	b, _ := json.Marshal(p)
	return string(b)
}

func (s *UnixctlServer) registerBuiltins(program, version string, log *Logger) {
	s.Register("list-commands", "", 0, 0, func([]string) (string, error) {
		s.mu.Lock()
		names := make([]string, 0, len(s.cmds))
		for n := range s.cmds {
			names = append(names, n)
		}
		sort.Strings(names)
		var b strings.Builder
		b.WriteString("The available commands are:\n")
		for _, n := range names {
			fmt.Fprintf(&b, "  %-23s %s\n", n, s.cmds[n].usage)
		}
		s.mu.Unlock()
		return b.String(), nil
	})
	s.Register("version", "", 0, 0, func([]string) (string, error) {
		return VersionString(program, version), nil
	})
	if log == nil {
		return
	}
	s.Register("vlog/list", "", 0, 0, func([]string) (string, error) {
		return log.ListLevels(), nil
	})
	s.Register("vlog/list-pattern", "", 0, 0, func([]string) (string, error) {
		return log.ListPatterns(), nil
	})
	s.Register("vlog/set", "{spec | PATTERN:destination:pattern}", 0, math.MaxInt, func(args []string) (string, error) {
		for _, a := range args {
			if err := log.Set(a); err != nil {
				return "", err
			}
		}
		return "", nil
	})
	s.Register("vlog/enable-rate-limit", "[module]...", 0, math.MaxInt, func(args []string) (string, error) {
		return "", log.SetRateLimits(args, true)
	})
	s.Register("vlog/disable-rate-limit", "[module]...", 0, math.MaxInt, func(args []string) (string, error) {
		return "", log.SetRateLimits(args, false)
	})
	s.Register("vlog/reopen", "", 0, 0, func([]string) (string, error) {
		return "", log.Reopen()
	})
	s.Register("vlog/close", "", 0, 0, func([]string) (string, error) {
		log.CloseLogFile()
		return "", nil
	})
}

// unixctlRequest is a decoded JSON-RPC 1.0 request.
type unixctlRequest struct {
	Method string
	Params []json.RawMessage
	ID     json.RawMessage
}

// stringParams returns the params, which unixctl requires to be strings.
func (r *unixctlRequest) stringParams() ([]string, error) {
	args := make([]string, len(r.Params))
	for i, p := range r.Params {
		if err := json.Unmarshal(p, &args[i]); err != nil || p[0] != '"' {
			return nil, fmt.Errorf("command has non-string argument: %s", p)
		}
	}
	return args, nil
}

// rpcMessage is any JSON-RPC 1.0 message; absent members stay nil.
type rpcMessage struct {
	Method json.RawMessage `json:"method"`
	Params json.RawMessage `json:"params"`
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// messageDecoder reads concatenated JSON objects from a stream.
type messageDecoder struct{ dec *json.Decoder }

func newMessageDecoder(r io.Reader) *messageDecoder {
	return &messageDecoder{dec: json.NewDecoder(bufio.NewReader(r))}
}

// next returns the next request. Anything else (a reply, a notification, a
// malformed message) is an error after which the stream is unusable.
func (d *messageDecoder) next() (*unixctlRequest, error) {
	var raw json.RawMessage
	if err := d.dec.Decode(&raw); err != nil {
		return nil, err
	}
	return decodeRequest(raw)
}

// decodeRequest validates one JSON-RPC request for unixctl.
func decodeRequest(raw []byte) (*unixctlRequest, error) {
	var m rpcMessage
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, errors.New("message is not a JSON object")
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("bad JSON-RPC message: %w", err)
	}
	if m.Method == nil {
		return nil, errors.New("received unexpected reply")
	}
	req := &unixctlRequest{ID: m.ID}
	if err := json.Unmarshal(m.Method, &req.Method); err != nil || m.Method[0] != '"' {
		return nil, errors.New("\"method\" is not a string")
	}
	if isNull(m.ID) {
		return nil, errors.New("received unexpected notification")
	}
	if m.Result != nil || m.Error != nil {
		return nil, errors.New("request has \"result\" or \"error\" member")
	}
	if err := json.Unmarshal(m.Params, &req.Params); err != nil || m.Params[0] != '[' {
		return nil, errors.New("\"params\" is not an array")
	}
	return req, nil
}

func isNull(raw json.RawMessage) bool {
	return raw == nil || string(raw) == "null"
}

func writeReply(w *bufio.Writer, id json.RawMessage, text string, isErr bool) error {
	reply := struct {
		ID     json.RawMessage `json:"id"`
		Result *string         `json:"result"`
		Error  *string         `json:"error"`
	}{ID: id}
	if isErr {
		reply.Error = &text
	} else {
		reply.Result = &text
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(reply); err != nil {
		return err
	}
	return w.Flush()
}

// UnixctlError is the "error" text of a unixctl reply.
type UnixctlError struct{ Text string }

func (e *UnixctlError) Error() string { return strings.TrimSuffix(e.Text, "\n") }

// UnixctlCall sends one command to the unixctl socket at path and returns
// the reply's result. A reply carrying an error returns a *UnixctlError.
// It has no timeout.
func UnixctlCall(path, method string, args ...string) (string, error) {
	c, err := net.Dial("unix", path)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if args == nil {
		args = []string{}
	}
	req := struct {
		Method string   `json:"method"`
		Params []string `json:"params"`
		ID     int      `json:"id"`
	}{method, args, 0}
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return "", err
	}
	var reply rpcMessage
	if err := json.NewDecoder(c).Decode(&reply); err != nil {
		return "", fmt.Errorf("%s: transaction error: %w", path, err)
	}
	if !isNull(reply.Error) {
		var text string
		if err := json.Unmarshal(reply.Error, &text); err != nil {
			text = string(reply.Error)
		}
		return "", &UnixctlError{Text: text}
	}
	var result string
	if err := json.Unmarshal(reply.Result, &result); err != nil {
		return "", fmt.Errorf("%s: unexpected result %s", path, reply.Result)
	}
	return result, nil
}

// unixConns counts the connections the process accepted on unix sockets.
var unixConns atomic.Uint64

// UnixConnName names a connection accepted on a unix socket as OVS's
// punix_accept does: "unix#N", N counting from 0 over every such
// connection of the process, unixctl, database and OpenFlow sockets alike
// (one counter in OVS too).
func UnixConnName() string { return "unix#" + strconv.FormatUint(unixConns.Add(1)-1, 10) }
