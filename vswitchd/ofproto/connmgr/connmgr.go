// Package connmgr is a bridge's OpenFlow management channel (OVS's
// ofproto/connmgr.c for service connections): it listens on
// <rundir>/<bridge>.mgmt, negotiates a version with each client, and
// answers its requests in order, one goroutine per connection, from what
// a Source reports about the bridge. Requests the switch does not
// implement get the OFPT_ERROR OVS sends for them and the connection
// stays up: nothing is accepted that would not be enforced.
package connmgr

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Source is what a bridge's OpenFlow connections report. Its methods are
// called from the connections' goroutines, concurrently; after the
// bridge is gone they may return nothing.
type Source interface {
	// DatapathID is the bridge's datapath ID.
	DatapathID() uint64
	// Ports are the bridge's ports, its local port (ofp.PortLocal)
	// included.
	Ports() []ofp.Port
	// PortStats are the ports' counters.
	PortStats() []ofp.PortStats
	// Flows are the flows of every table.
	Flows() []ofp.FlowStats
	// FlowMod changes the flow tables, or returns the error to refuse
	// the change with.
	FlowMod(fm *ofp.FlowMod) *ofp.Error
	// Barrier returns when every earlier flow table change is in effect
	// for every packet.
	Barrier()
}

// Logger is the vlog module logger connections write to.
type Logger interface {
	Warnf(format string, args ...any)
	Infof(format string, args ...any)
	Debugf(format string, args ...any)
}

// Manager serves one bridge's management socket.
type Manager struct {
	bridge string
	path   string
	src    Source
	log    Logger
	ln     *net.UnixListener
	seq    atomic.Uint64 // connection numbers, for log names
	wg     sync.WaitGroup

	mu    sync.Mutex // guards the fields below
	conns map[*conn]struct{}
	// electionID is the highest generation ID a master or slave role
	// request has carried, valid if haveElection.
	electionID   uint64
	haveElection bool
	closed       bool
}

// SocketMode is the management socket's permission bits, as OVS's.
const SocketMode = 0o750

// Listen serves bridge's management socket at path (replacing a stale
// socket file there) until Close.
func Listen(bridge, path string, src Source, log Logger) (*Manager, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: removing stale socket: %w", path, err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(path, SocketMode); err != nil {
		ln.Close()
		return nil, err
	}
	m := &Manager{bridge: bridge, path: path, src: src, log: log, ln: ln, conns: map[*conn]struct{}{}}
	m.wg.Add(1)
	go m.accept()
	return m, nil
}

// Path returns the socket's path.
func (m *Manager) Path() string { return m.path }

func (m *Manager) accept() {
	defer m.wg.Done()
	for {
		nc, err := m.ln.AcceptUnix()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				m.log.Warnf("%s: accept failed: %v", m.path, err)
			}
			return
		}
		c := newConn(m, nc, fmt.Sprintf("%s<->unix#%d", m.bridge, m.seq.Add(1)))
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			nc.Close()
			return
		}
		m.conns[c] = struct{}{}
		m.wg.Add(1)
		m.mu.Unlock()
		go func() {
			defer m.wg.Done()
			c.run()
			m.mu.Lock()
			delete(m.conns, c)
			m.mu.Unlock()
		}()
	}
}

// Close stops listening, removes the socket and closes every connection.
// It does not wait for the connections' goroutines (they may be waiting
// on the Source's caller); Wait does.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	conns := make([]*conn, 0, len(m.conns))
	for c := range m.conns {
		conns = append(conns, c)
	}
	m.mu.Unlock()
	m.ln.Close()
	for _, c := range conns {
		c.nc.Close()
	}
}

// Wait waits, after Close, for every goroutine of m to end.
func (m *Manager) Wait() { m.wg.Wait() }

// FlowRemoved sends f to every connection (ofproto.AsyncSink).
func (m *Manager) FlowRemoved(f *ofp.FlowRemoved) {
	for _, c := range m.connList() {
		if v := ofp.Version(c.negotiated.Load()); v != 0 {
			c.send(ofp.EncodeFlowRemoved(v, c.nxFormat.Load(), f))
		}
	}
}

// connList returns the connections.
func (m *Manager) connList() []*conn {
	m.mu.Lock()
	defer m.mu.Unlock()
	conns := make([]*conn, 0, len(m.conns))
	for c := range m.conns {
		conns = append(conns, c)
	}
	return conns
}

// setRole applies a role request of c as OVS's handle_role_request: a
// master or slave request must not carry a generation ID older than the
// newest seen, and a new master makes the others slaves.
func (m *Manager) setRole(c *conn, role uint32, genID uint64) *ofp.Error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if role == ofp.RoleNoChange {
		return nil
	}
	if role != ofp.RoleEqual {
		if m.haveElection && int64(genID-m.electionID) < 0 {
			return &ofp.Error{Errno: ofp.RoleStale, Name: "OFPT_ROLE_REQUEST", Detail: fmt.Sprintf("generation ID %d is older than %d", genID, m.electionID)}
		}
		m.electionID, m.haveElection = genID, true
	}
	if role == ofp.RoleMaster {
		for o := range m.conns {
			if o != c && o.role.Load() == ofp.RoleMaster {
				o.role.Store(ofp.RoleSlave)
			}
		}
	}
	c.role.Store(role)
	return nil
}

// generation returns the generation ID a role reply carries.
func (m *Manager) generation() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.haveElection {
		return 0
	}
	return m.electionID
}
