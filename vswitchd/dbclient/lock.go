package dbclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/govs/govs/vswitchd/bridge"
)

// LockState is the switch's hold on the database lock.
type LockState int

const (
	// LockUnknown: no session to the server, so no lock either way.
	LockUnknown LockState = iota
	// LockContended: another client holds the lock; this one waits.
	LockContended
	// LockHeld: this switch holds the lock and may configure.
	LockHeld
)

func (s LockState) String() string {
	switch s {
	case LockUnknown:
		return "unknown"
	case LockContended:
		return "contended"
	case LockHeld:
		return "held"
	}
	return "invalid"
}

// Lock holds an OVSDB lock (RFC 7047 section 4.1.8) on a JSON-RPC session
// of its own, since libovsdb's client has no lock support. The server
// releases the lock when the session ends, so a switch that dies frees it
// for the next one. Run keeps the session up and reports state changes.
type Lock struct {
	remote, name string
	log          Logger // module "reconnect": the session's life, in OVS's words

	mu    sync.Mutex // guards state
	state LockState

	changed chan struct{}
}

// NewLock returns a lock named name on the database at remote.
func NewLock(remote, name string, log Logger) *Lock {
	return &Lock{remote: remote, name: name, log: log, changed: make(chan struct{}, 1)}
}

// State returns the current state.
func (l *Lock) State() LockState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}

// Changed receives a value after the state changed (coalesced).
func (l *Lock) Changed() <-chan struct{} { return l.changed }

func (l *Lock) set(s LockState) {
	l.mu.Lock()
	old := l.state
	l.state = s
	l.mu.Unlock()
	if old != s {
		select {
		case l.changed <- struct{}{}:
		default:
		}
	}
}

// Run keeps a session to the server and the lock requested on it until
// ctx ends.
func (l *Lock) Run(ctx context.Context) {
	b := newBackoff()
	for ctx.Err() == nil {
		l.log.Infof("%s: connecting...", l.remote)
		conn, err := dial(ctx, l.remote)
		if err != nil {
			wait := b.NextBackOff()
			l.log.Infof("%s: connection attempt failed (%s)", l.remote, bridge.Strerror(err))
			l.log.Infof("%s: waiting %.3g seconds before reconnect", l.remote, wait.Seconds())
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
			continue
		}
		l.log.Infof("%s: connected", l.remote)
		b.Reset()
		err = l.session(ctx, conn)
		l.set(LockUnknown)
		if ctx.Err() == nil {
			l.log.Infof("%s: %s", l.remote, closeReason(err))
		}
	}
}

func dial(ctx context.Context, remote string) (net.Conn, error) {
	var d net.Dialer
	d.Timeout = 5 * time.Second
	switch {
	case strings.HasPrefix(remote, "unix:"):
		return d.DialContext(ctx, "unix", strings.TrimPrefix(remote, "unix:"))
	case strings.HasPrefix(remote, "tcp:"):
		return d.DialContext(ctx, "tcp", strings.TrimPrefix(remote, "tcp:"))
	case strings.HasPrefix(remote, "ssl:"):
		return dialSSL(ctx, &d, strings.TrimPrefix(remote, "ssl:"))
	}
	return nil, fmt.Errorf("%s: unsupported remote", remote)
}

// rpcMessage is any JSON-RPC 1.0 message of the OVSDB protocol.
type rpcMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

func (l *Lock) session(ctx context.Context, conn net.Conn) error {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()

	var wmu sync.Mutex
	enc := json.NewEncoder(conn)
	send := func(v any) error {
		wmu.Lock()
		defer wmu.Unlock()
		return enc.Encode(v)
	}
	if err := send(map[string]any{"id": "lock", "method": "lock", "params": []string{l.name}}); err != nil {
		return err
	}
	dec := json.NewDecoder(conn)
	for {
		var m rpcMessage
		if err := dec.Decode(&m); err != nil {
			return err
		}
		switch {
		case m.Method == "echo" && !isNull(m.ID):
			if err := send(map[string]any{"id": m.ID, "result": m.Params, "error": nil}); err != nil {
				return err
			}
		case m.Method == "locked":
			l.set(LockHeld)
		case m.Method == "stolen":
			l.set(LockContended)
		case m.Method == "" && string(m.ID) == `"lock"`:
			var res struct {
				Locked bool `json:"locked"`
			}
			if !isNull(m.Error) {
				// A server without locks cannot arbitrate between
				// switches; run rather than wait forever.
				l.log.Warnf("%s: server refused lock request (%s), running without the lock", l.remote, m.Error)
				l.set(LockHeld)
				continue
			}
			if err := json.Unmarshal(m.Result, &res); err != nil {
				return err
			}
			if res.Locked {
				l.set(LockHeld)
			} else {
				l.set(LockContended)
			}
		}
	}
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

func closeReason(err error) string {
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return "connection closed by peer"
	}
	return fmt.Sprintf("connection dropped (%s)", bridge.Strerror(err))
}
