package connmgr

import (
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// SetRconnLogger sets the logger of controller connections' state
// changes (OVS's "rconn" module); the connmgr logger by default.
func (m *Manager) SetRconnLogger(l Logger) { m.rlog = l }

// SetNotify sets the function called, without locks held, whenever a
// controller's connection state or role changes, so that the caller can
// write Controller.is_connected, role and status back promptly.
func (m *Manager) SetNotify(f func()) { m.notify.Store(&f) }

func (m *Manager) changed() {
	if f := m.notify.Load(); f != nil {
		(*f)()
	}
}

// SetVersions sets the versions new connections may negotiate
// (Bridge.protocols; 0 means all). Connections already up keep theirs, as
// OVS's, which reconnects controllers whose allowed versions change.
func (m *Manager) SetVersions(vs ofp.Versions) {
	if vs == 0 {
		vs = ofp.AllVersions
	}
	if ofp.Versions(m.versions.Swap(uint32(vs))) == vs {
		return
	}
	// Like OVS, drop controller connections negotiated under the old
	// set, so that they come back under the new one.
	m.mu.Lock()
	var drop []*conn
	for c := range m.conns {
		if c.svc != nil && !vs.Has(c.negotiated()) {
			drop = append(drop, c)
		}
	}
	m.mu.Unlock()
	for _, c := range drop {
		c.closeWith(errVersionsChanged)
		c.nc.Close()
	}
}

var errVersionsChanged = ofpError("allowed OpenFlow versions changed")

type ofpError string

func (e ofpError) Error() string { return string(e) }

func (m *Manager) allowedVersions() ofp.Versions { return ofp.Versions(m.versions.Load()) }

// SetFailMode sets whether the bridge's fail_mode is standalone (the
// default) rather than secure.
func (m *Manager) SetFailMode(standalone bool) { m.failMode.Store(standalone) }

// SetControllers makes the bridge's controller connections those of cs
// (one per distinct target): new targets start connecting or listening,
// removed ones are closed, changed ones restart. Unchanged ones keep
// their connections.
func (m *Manager) SetControllers(cs []Controller) {
	want := map[string]Controller{}
	for _, c := range cs {
		if _, dup := want[c.Target]; !dup {
			want[c.Target] = c
		}
	}
	var stale []*service
	changed := false
	m.svcMu.Lock()
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		m.svcMu.Unlock()
		return
	}
	for target, s := range m.services {
		if c, ok := want[target]; ok && reflect.DeepEqual(c, s.cfg) {
			continue
		}
		stale = append(stale, s)
		delete(m.services, target)
	}
	for _, target := range slices.Sorted(maps.Keys(want)) {
		if _, ok := m.services[target]; ok {
			continue
		}
		c := want[target]
		s, err := newService(m, c)
		if err != nil {
			// An unknown connection method is skipped, as OVS.
			m.log.Warnf("%s: unsupported controller \"%s\"", m.bridge, target)
			continue
		}
		m.services[target] = s
		changed = true
		m.log.Infof("%s: added %s controller \"%s\"", m.bridge, kindName(c.Primary), target)
	}
	m.svcMu.Unlock()
	// Closing waits for the services' goroutines, which may be waiting
	// for the caller's locks: not under svcMu.
	for _, s := range stale {
		s.close()
		m.log.Infof("%s: removed %s controller \"%s\"", m.bridge, kindName(s.cfg.Primary), s.cfg.Target)
	}
	if changed || len(stale) > 0 {
		go m.changed()
	}
}

func kindName(primary bool) string {
	if primary {
		return "primary"
	}
	return "service"
}

func (m *Manager) addConn(c *conn) {
	m.mu.Lock()
	m.conns[c] = struct{}{}
	m.mu.Unlock()
	m.updateMiss()
	m.changed()
}

func (m *Manager) delConn(c *conn) {
	m.mu.Lock()
	delete(m.conns, c)
	m.mu.Unlock()
	m.updateMiss()
	if c.svc != nil {
		m.changed()
	}
}

// Reconnect drops the connections to the bridge's controllers, which
// then connect again (`ovs-appctl bridge/reconnect`, OVS's
// connmgr_reconnect).
func (m *Manager) Reconnect() {
	m.svcMu.Lock()
	defer m.svcMu.Unlock()
	for _, s := range m.services {
		s.reconnect()
	}
}

// ControllerStatus reports each configured controller, by target.
func (m *Manager) ControllerStatus() map[string]ControllerStatus {
	m.svcMu.Lock()
	defer m.svcMu.Unlock()
	now := time.Now()
	st := make(map[string]ControllerStatus, len(m.services))
	for target, s := range m.services {
		st[target] = s.status(now)
	}
	return st
}

// HasPrimaryControllers reports whether the bridge has primary
// controllers configured, connected or not: OVS then runs no "NORMAL"
// flow of its own on a standalone bridge.
func (m *Manager) HasPrimaryControllers() bool {
	m.svcMu.Lock()
	defer m.svcMu.Unlock()
	for _, s := range m.services {
		if s.cfg.Primary {
			return true
		}
	}
	return false
}

// FailOpen reports whether OVS's fail-open mode would be active now
// (ofproto/fail-open.c): fail_mode standalone, primary controllers
// configured, and none of them connected for three times the longest
// inactivity probe interval. While it is, the bridge forwards as a
// NORMAL switch whatever the flow table says. The first call that sees it
// change logs it as OVS.
func (m *Manager) FailOpen() bool {
	m.svcMu.Lock()
	var (
		primaries int
		maxProbe  time.Duration
		failed    = time.Duration(1<<63 - 1)
		now       = time.Now()
	)
	for _, s := range m.services {
		if !s.cfg.Primary {
			continue
		}
		primaries++
		maxProbe = max(maxProbe, s.cfg.Probe)
		failed = min(failed, s.failureDuration(now))
	}
	m.svcMu.Unlock()
	open := primaries > 0 && m.failMode.Load() && failed >= 3*maxProbe
	if m.failOpen.Swap(open) != open && primaries > 0 {
		if open {
			m.log.Warnf("Could not connect to controller (or switch failed controller's post-connection admission control policy) for %d seconds, failing open", int(failed/time.Second))
		} else {
			m.log.Warnf("No longer in fail-open mode")
		}
	}
	return open
}

// AsyncTarget is what an asynchronous message's encoder may need to know
// about the connection it encodes for.
type AsyncTarget struct {
	Version ofp.Version
	// MissSendLen is the connection's miss_send_len (SET_CONFIG).
	MissSendLen uint16
	// PacketInFormat is NXPIF_* (NXT_SET_PACKET_IN_FORMAT).
	PacketInFormat uint32
	// ControllerID is NXT_SET_CONTROLLER_ID's value, 0 by default.
	ControllerID uint16
	// NXFormat is whether the connection's flow format is NXM
	// (NXT_SET_FLOW_FORMAT), for OpenFlow 1.0 flow removals.
	NXFormat bool
}

// SendAsync delivers an asynchronous message of type typ for reason (the
// wire reason: OFPR_*, OFPPR_*, OFPRR_*) to every connection whose role
// and asynchronous configuration want it, as OVS's connmgr: a master or
// equal connection by its master masks, a slave by its slave masks
// (by default: packet-ins and flow removals to masters and equals, port
// status to all), and service connections (ovs-ofctl, passive service
// controllers) only once they set a nonzero miss_send_len. encode
// returns the message for one connection (nil: none); it is called from
// the caller's goroutine, once per receiving connection. SendAsync does
// not block on slow connections' writes for longer than the kernel's
// socket buffer allows; it returns the number of connections sent to.
func (m *Manager) SendAsync(typ ofp.AsyncType, reason uint8, encode func(AsyncTarget) []byte) int {
	conns := m.connList()
	slices.SortFunc(conns, func(a, b *conn) int { return int(a.seq) - int(b.seq) })
	n := 0
	for _, c := range conns {
		t, ok := c.wantsAsync(typ, reason)
		if !ok {
			continue
		}
		b := encode(t)
		if b != nil && typ == ofp.AsyncPacketIn && c.pins != nil {
			c.pins.submit(b)
			n++
		} else if b != nil && c.send(b) == nil {
			n++
		}
	}
	return n
}

// wantsAsync reports whether c receives an asynchronous message of typ
// for reason (OVS's ofconn_receives_async_msg), and what its encoder
// needs to know.
func (c *conn) wantsAsync(typ ofp.AsyncType, reason uint8) (AsyncTarget, bool) {
	if reason >= 32 || typ < 0 || typ >= ofp.AsyncTypes {
		return AsyncTarget{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := AsyncTarget{Version: c.version, MissSendLen: c.config.MissSendLen, PacketInFormat: c.pinFormat, ControllerID: c.controllerID,
		NXFormat: c.nxFormat.Load()}
	if c.version == 0 {
		return t, false
	}
	if !c.primary() && c.config.MissSendLen == 0 {
		// Service connections get asynchronous messages only once they
		// ask for them with a nonzero miss_send_len.
		return t, false
	}
	cfg := c.asyncConfigLocked()
	masks := cfg.Master
	if c.role.Load() == ofp.RoleSlave {
		masks = cfg.Slave
	}
	return t, masks[typ]&(1<<reason) != 0
}

// asyncConfigLocked is c's asynchronous configuration: what it set, or
// its version's default (nothing with enable_async_messages=false).
// Caller holds c.mu.
func (c *conn) asyncConfigLocked() ofp.AsyncConfig {
	if c.async != nil {
		return *c.async
	}
	if c.svc != nil && !c.svc.cfg.EnableAsync {
		return ofp.AsyncConfig{}
	}
	return ofp.DefaultAsyncConfig(c.version)
}

// SyncPorts compares the bridge's ports with those last seen and sends
// OFPT_PORT_STATUS for each port added, deleted or modified (its
// configuration, state, address or features) to the connections that
// want it. The first call only records the ports.
func (m *Manager) SyncPorts() {
	ports := map[uint32]ofp.Port{}
	for _, p := range m.src.Ports() {
		ports[p.No] = p
	}
	m.mu.Lock()
	old, known := m.ports, m.portsKnown
	m.ports, m.portsKnown = ports, true
	m.mu.Unlock()
	if !known {
		return
	}
	send := func(reason uint8, p ofp.Port) {
		m.SendAsync(ofp.AsyncPortStatus, reason, func(t AsyncTarget) []byte {
			return ofp.EncodePortStatus(t.Version, reason, &p)
		})
	}
	for _, no := range slices.Sorted(maps.Keys(old)) {
		if _, ok := ports[no]; !ok {
			send(ofp.PortDeleted, old[no])
		}
	}
	for _, no := range slices.Sorted(maps.Keys(ports)) {
		p := ports[no]
		o, ok := old[no]
		switch {
		case !ok:
			send(ofp.PortAdded, p)
		case o != p:
			send(ofp.PortModified, p)
		}
	}
}
