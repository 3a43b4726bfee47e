// Package connmgr is a bridge's OpenFlow connections (OVS's
// ofproto/connmgr.c and lib/rconn.c): it listens on
// <rundir>/<bridge>.mgmt, keeps the connections to the controllers of
// Bridge.controller up (active targets with backoff and inactivity
// probes, passive ones as listeners), negotiates a version with each
// peer within Bridge.protocols, and answers its requests in order, one
// goroutine per connection, from what a Source reports about the bridge.
// It keeps the controllers' roles and asynchronous configurations and
// delivers asynchronous messages (SendAsync) to the connections that
// want them. Requests the switch does not implement get the OFPT_ERROR
// OVS sends for them and the connection stays up: nothing is accepted
// that would not be enforced.
package connmgr

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/internal/unixsock"
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
	// Flows are the flows of every table (see FlowWalker).
	Flows() []ofp.FlowStats
	// FlowMod changes the flow tables, or returns the error to refuse
	// the change with. It keeps no reference to fm, which is reused
	// once it returns (ofp.ReleaseFlowMod; what fm refers to, its
	// actions, may be kept).
	FlowMod(fm *ofp.FlowMod) *ofp.Error
	// Barrier returns when every earlier flow table change is in effect
	// for every packet.
	Barrier()
}

// FragHandler is a Source with OVS's switch-wide fragment handling mode
// (ofp.FragNormal, FragDrop, FragNXMatch), which OFPT_SET_CONFIG sets. A
// mode the switch does not support changes nothing (the switch logs it).
type FragHandler interface {
	FragHandling() uint8
	SetFragHandling(mode uint8)
}

// TableConfigurer is a Source with per-table settings: it applies
// OFPT_TABLE_MOD and reports them (OFPMP_TABLE_DESC, table statistics).
type TableConfigurer interface {
	TableMod(m *ofp.TableMod) *ofp.Error
	TableDescs() []ofp.TableDesc
	TableMiss(id uint8) uint8
}

// PortModifier is a Source that applies OFPT_PORT_MOD.
type PortModifier interface {
	// ModifyPort applies m's configuration bits under its mask to the
	// port, or returns the error to refuse it with (OFPPMFC_BAD_PORT,
	// OFPPMFC_BAD_HW_ADDR, OFPPMFC_BAD_CONFIG). Ports then reports the
	// new configuration.
	ModifyPort(m *ofp.PortMod) *ofp.Error
}

// TableCounter is a Source that counts its tables' lookups.
type TableCounter interface {
	// TableCounts returns table id's lookup and matched packet counts.
	TableCounts(id uint8) (lookups, matched uint64)
}

// PacketOuter is a Source that executes packet-outs.
type PacketOuter interface {
	// PacketOut executes po, or returns the error to refuse it with.
	PacketOut(po *ofp.PacketOut) *ofp.Error
	// Resume executes an NXT_RESUME, or returns the error to refuse
	// it with.
	Resume(r *ofp.Resume) *ofp.Error
}

// CTFlusher is a Source whose connection tracker controllers may flush
// (NXT_CT_FLUSH_ZONE, NXT_CT_FLUSH).
type CTFlusher interface {
	FlushConntrackZone(zone uint16)
	FlushConntrack(m *ofp.CTFlush)
}

// TLVMapper is a Source that keeps a Geneve option map for its
// tun_metadata fields (NXT_TLV_TABLE_MOD and _REQUEST).
type TLVMapper interface {
	// TLVTableMod applies m, or returns the error to refuse it with.
	TLVTableMod(m *ofp.TLVTableMod) *ofp.Error
	// TLVTable returns the current map.
	TLVTable() *ofp.TLVTable
}

// Logger is the vlog module logger connections write to.
type Logger interface {
	Errorf(format string, args ...any)
	Warnf(format string, args ...any)
	Infof(format string, args ...any)
	Debugf(format string, args ...any)
}

// Manager serves one bridge's OpenFlow connections.
type Manager struct {
	bridge string
	path   string
	rundir string // unix: and punix: targets are relative to it
	src    Source

	missMu                sync.Mutex // serializes updateMiss; guards the two below
	missKnown, missWanted bool
	log                   Logger
	rlog                  Logger // the rconn module's, for controller connections
	ln                    *unixsock.Listener
	snoopLn               *unixsock.Listener // nil until ListenSnoop; guarded by mu
	seq                   atomic.Uint64      // connection numbers, for log names
	wg                    sync.WaitGroup
	// versions is Bridge.protocols (ofp.Versions), what new connections
	// may negotiate.
	versions atomic.Uint32
	// notify, if set, is called (without locks held) when a
	// controller's connection state or role changes, for the write-back.
	notify atomic.Pointer[func()]

	// svcMu guards services; held while services start and stop.
	svcMu    sync.Mutex
	services map[string]*service // by target
	failMode atomic.Bool         // fail_mode is standalone
	failOpen atomic.Bool         // fail-open is active (logged once per change)

	mu    sync.Mutex // guards the fields below
	conns map[*conn]struct{}
	// ports are the ports last reported to connections (SyncPorts).
	ports      map[uint32]ofp.Port
	portsKnown bool
	// electionID is the highest generation ID a master or slave role
	// request has carried, valid if haveElection.
	electionID   uint64
	haveElection bool
	closed       bool

	// pinQ queues packet-ins for sendPacketIns, so that a slow
	// connection never stalls the datapath; pinDone ends it.
	pinQ     chan *ofp.PacketIn
	pinDone  chan struct{}
	pinDrops atomic.Uint64

	// nMonitors counts the connections' flow monitors (monitor.go).
	nMonitors atomic.Int32
}

// pinQueueLen is how many packet-ins may wait for slow connections before
// more are dropped (OVS's rconn_send_with_limit allows 100 per connection).
const pinQueueLen = 256

// SocketMode is the management socket's permission bits, as OVS's.
const SocketMode = 0o750

// Listen serves bridge's management socket at path (replacing a stale
// socket file there) until Close.
func Listen(bridge, path string, src Source, log Logger) (*Manager, error) {
	ln, err := unixsock.Listen(path, SocketMode)
	if err != nil {
		return nil, err
	}
	m := &Manager{bridge: bridge, path: path, rundir: filepath.Dir(path), src: src, log: log, rlog: log, ln: ln,
		conns: map[*conn]struct{}{}, services: map[string]*service{},
		pinQ: make(chan *ofp.PacketIn, pinQueueLen), pinDone: make(chan struct{})}
	m.versions.Store(uint32(ofp.AllVersions))
	m.failMode.Store(true)
	m.wg.Add(2)
	go m.accept()
	go m.sendPacketIns()
	return m, nil
}

// Bridge returns the bridge's name.
func (m *Manager) Bridge() string { return m.bridge }

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
		c := newConn(m, nc, m.bridge+"<->"+daemon.UnixConnName(), nil)
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
			m.delConn(c)
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
	close(m.pinDone)
	conns := make([]*conn, 0, len(m.conns))
	for c := range m.conns {
		conns = append(conns, c)
	}
	snoopLn := m.snoopLn
	m.mu.Unlock()
	m.ln.Close()
	if snoopLn != nil {
		snoopLn.Close()
	}
	for _, c := range conns {
		c.nc.Close()
	}
	m.svcMu.Lock()
	svcs := m.services
	m.services = map[string]*service{}
	m.svcMu.Unlock()
	for _, s := range svcs {
		s.shutdown()
	}
}

// Wait waits, after Close, for every goroutine of m to end.
func (m *Manager) Wait() { m.wg.Wait() }

// FlowRemoved sends f to every connection whose role and asynchronous
// configuration want it (ofproto.AsyncSink).
func (m *Manager) FlowRemoved(f *ofp.FlowRemoved) {
	m.SendAsync(ofp.AsyncFlowRemoved, f.Reason, func(t AsyncTarget) []byte {
		return ofp.EncodeFlowRemoved(t.Version, t.NXFormat, f)
	})
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
	m.becomeLocked(c, role)
	return nil
}

// setRoleNX applies an NXT_ROLE_REQUEST: as an OpenFlow 1.2 request
// without a generation ID.
func (m *Manager) setRoleNX(c *conn, role uint32) {
	m.mu.Lock()
	m.becomeLocked(c, role)
	m.mu.Unlock()
}

// becomeLocked gives c role; a new master demotes the old one to slave,
// telling it with OFPT_ROLE_STATUS on OpenFlow 1.4+. Caller holds mu.
func (m *Manager) becomeLocked(c *conn, role uint32) {
	if role == ofp.RoleMaster {
		for o := range m.conns {
			if o != c && o.role.Load() == ofp.RoleMaster {
				o.role.Store(ofp.RoleSlave)
				if v := o.negotiated(); v >= ofp.V14 {
					gen := uint64(0)
					if m.haveElection {
						gen = m.electionID
					}
					go o.send(ofp.EncodeRoleStatus(v, ofp.RoleSlave, ofp.RoleReasonMasterRequest, gen))
				}
			}
		}
	}
	if c.role.Swap(role) != role || role == ofp.RoleMaster {
		go m.changed()
	}
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

// PacketIn sends pi to every connection with its controller ID whose role
// and asynchronous configuration want it (ofproto.PacketInSink), as OVS's
// connmgr_send_async_msg: unbuffered, cut to the controller action's
// max_len for OFPR_ACTION and to the connection's miss_send_len for the
// other reasons.
func (m *Manager) PacketIn(pi *ofp.PacketIn) {
	select {
	case m.pinQ <- pi:
	default:
		if n := m.pinDrops.Add(1); n&(n-1) == 0 {
			m.log.Infof("%s: dropping packet-in due to queue overflow (%d dropped)", m.bridge, n)
		}
	}
}

// sendPacketIns sends the queued packet-ins until Close.
func (m *Manager) sendPacketIns() {
	defer m.wg.Done()
	for {
		select {
		case <-m.pinDone:
			return
		case pi := <-m.pinQ:
			m.sendPacketIn(pi)
		}
	}
}

func (m *Manager) sendPacketIn(pi *ofp.PacketIn) {
	m.SendAsync(ofp.AsyncPacketIn, pi.WireReason(ofp.V13), func(t AsyncTarget) []byte {
		if t.ControllerID != pi.ControllerID || pi.ImplicitMiss && !wantsImplicitMiss(t.Version) {
			return nil
		}
		out := *pi
		limit := t.MissSendLen
		if pi.WireReason(t.Version) == ofp.PacketInAction {
			limit = pi.MaxLen
		}
		if len(out.Data) > int(limit) {
			out.Data = out.Data[:limit]
		}
		return ofp.EncodePacketIn(t.Version, t.PacketInFormat, &out)
	})
}
