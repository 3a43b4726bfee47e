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

	"github.com/govs/govs/ovsdb/jsonrpc"
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
// of its own, since libovsdb's client has no lock support; it speaks through
// the server's codec, ovsdb/jsonrpc. The server
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

// lockID is the id of the session's one request.
const lockID = `"lock"`

// session requests the lock on conn and follows the replies and
// notifications, in the server's own codec (ovsdb/jsonrpc), as the
// utilities do: libovsdb's client has no lock support. Only this goroutine
// writes: the request and the replies to the server's echo requests.
func (l *Lock) session(ctx context.Context, conn net.Conn) error {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()

	send := func(m *jsonrpc.Message) error {
		_, err := conn.Write(m.Append(nil))
		return err
	}
	if err := send(jsonrpc.NewRequest("lock", []string{l.name}, json.RawMessage(lockID))); err != nil {
		return err
	}
	dec := jsonrpc.NewDecoder(conn, 0)
	for {
		m, err := dec.Decode()
		if err != nil {
			return err
		}
		switch m.Type() {
		case jsonrpc.Request:
			if m.Method == "echo" {
				params := m.Params
				if params == nil {
					params = json.RawMessage("[]")
				}
				if err := send(jsonrpc.NewReply(m.ID, params)); err != nil {
					return err
				}
			}
		case jsonrpc.Notification:
			switch m.Method {
			case "locked":
				l.set(LockHeld)
			case "stolen":
				l.set(LockContended)
			}
		case jsonrpc.Error:
			if string(m.ID) != lockID {
				continue
			}
			// A server without locks cannot arbitrate between
			// switches; run rather than wait forever.
			l.log.Warnf("%s: server refused lock request (%s), running without the lock", l.remote, m.Error)
			l.set(LockHeld)
		case jsonrpc.Reply:
			if string(m.ID) != lockID {
				continue
			}
			var res struct {
				Locked bool `json:"locked"`
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

func closeReason(err error) string {
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return "connection closed by peer"
	}
	return fmt.Sprintf("connection dropped (%s)", bridge.Strerror(err))
}
