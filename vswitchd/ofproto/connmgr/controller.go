package connmgr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/internal/unixsock"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Controller is one Controller row of a bridge, parsed.
type Controller struct {
	// Target is the row's target, as written (the status key).
	Target string
	// Primary is false for a service controller: Controller.type, by
	// default primary for active targets and service for passive ones.
	Primary bool
	// MaxBackoff caps the wait between connection attempts (max_backoff,
	// default 8 s, at least 1 s).
	MaxBackoff time.Duration
	// Probe is the inactivity probe interval (inactivity_probe, default
	// 5 s, at least 5 s as OVS's rconn); 0 disables probes.
	Probe time.Duration
	// EnableAsync is enable_async_messages (default true).
	EnableAsync bool
	// RateLimit and BurstLimit limit packet-ins (WithRateLimit; 0: no
	// limit).
	RateLimit, BurstLimit int
}

// Defaults of a Controller row, as OVS's bridge.c and rconn.c.
const (
	DefaultMaxBackoff = 8 * time.Second
	DefaultProbe      = 5 * time.Second
	minProbe          = 5 * time.Second
	// DefaultPort is OpenFlow's IANA port, what tcp:, ssl:, ptcp: and
	// pssl: targets use without one.
	DefaultPort = 6653
)

// ParseController returns c with its numeric columns normalised as OVS
// does: milliseconds to whole seconds, defaults and minimums applied.
func ParseController(target, typ string, maxBackoffMS, probeMS *int, enableAsync *bool) Controller {
	c := Controller{Target: target, MaxBackoff: DefaultMaxBackoff, Probe: DefaultProbe, EnableAsync: true}
	switch typ {
	case "primary":
		c.Primary = true
	case "service":
	default:
		c.Primary = !isPassive(target)
	}
	if maxBackoffMS != nil {
		c.MaxBackoff = max(time.Duration(*maxBackoffMS/1000)*time.Second, time.Second)
	}
	if probeMS != nil {
		c.Probe = time.Duration(*probeMS/1000) * time.Second
		if c.Probe != 0 {
			c.Probe = max(c.Probe, minProbe)
		}
	}
	if enableAsync != nil {
		c.EnableAsync = *enableAsync
	}
	return c
}

func isPassive(target string) bool {
	return strings.HasPrefix(target, "ptcp:") || strings.HasPrefix(target, "punix:") || strings.HasPrefix(target, "pssl:")
}

// endpoint is a parsed target: network and address for net.Dial or
// net.Listen.
type endpoint struct {
	passive bool
	network string // "tcp", "tcp4" or "unix"
	addr    string
}

// errNoProtocol is what an ssl: or pssl: target fails with while govs has
// no SSL: OVS's stream_ssl fails the same way (ENOPROTOOPT, "Protocol not
// available") when no SSL is configured.
var errNoProtocol = syscall.ENOPROTOOPT

// errBadTarget is an unknown connection method (OVS: EAFNOSUPPORT).
var errBadTarget = syscall.EAFNOSUPPORT

// parseTarget parses a controller target; unix paths are relative to
// rundir.
func parseTarget(target, rundir string) (endpoint, error) {
	method, rest, _ := strings.Cut(target, ":")
	switch method {
	case "tcp":
		host, port, err := splitHostPort(rest, false)
		if err != nil {
			return endpoint{}, err
		}
		return endpoint{network: "tcp", addr: net.JoinHostPort(host, port)}, nil
	case "ptcp":
		// ptcp:[PORT][:IP]
		port, host, _ := strings.Cut(rest, ":")
		if port == "" {
			port = strconv.Itoa(DefaultPort)
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return endpoint{}, fmt.Errorf("%s: bad port number %q", target, port)
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		network := "tcp"
		if host == "" {
			// No address: IPv4 only, as OVS.
			host, network = "0.0.0.0", "tcp4"
		}
		return endpoint{passive: true, network: network, addr: net.JoinHostPort(host, port)}, nil
	case "unix", "punix":
		if rest == "" {
			return endpoint{}, fmt.Errorf("%s: missing path", target)
		}
		if !filepath.IsAbs(rest) {
			rest = filepath.Join(rundir, rest)
		}
		return endpoint{passive: method == "punix", network: "unix", addr: rest}, nil
	case "ssl", "pssl":
		return endpoint{passive: method == "pssl"}, errNoProtocol
	}
	return endpoint{}, errBadTarget
}

// splitHostPort splits HOST[:PORT] or [IPV6][:PORT], the port defaulting
// to 6653.
func splitHostPort(s string, _ bool) (host, port string, err error) {
	port = strconv.Itoa(DefaultPort)
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return "", "", fmt.Errorf("%s: missing ']'", s)
		}
		host, s = s[1:end], s[end+1:]
		if p, ok := strings.CutPrefix(s, ":"); ok && p != "" {
			port = p
		}
	} else {
		h, p, ok := strings.Cut(s, ":")
		host = h
		if ok && p != "" {
			port = p
		}
	}
	if host == "" {
		return "", "", fmt.Errorf("%s: missing host", s)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", "", fmt.Errorf("%s: bad port number %q", s, port)
	}
	return host, port, nil
}

// Connection states, as OVS's rconn names them in Controller.status.
const (
	stateVoid       = "VOID"
	stateBackoff    = "BACKOFF"
	stateConnecting = "CONNECTING"
	stateActive     = "ACTIVE"
	stateIdle       = "IDLE"
)

// service is one controller target: an active connection kept up with
// backoff (OVS's rconn) or a listener whose accepted connections are
// controllers.
type service struct {
	m    *Manager
	cfg  Controller
	ep   endpoint
	name string // "<bridge><->TARGET", the log name
	ctx  context.Context
	stop context.CancelFunc
	done chan struct{}

	mu sync.Mutex // guards the fields below
	ln net.Listener
	// state is the active connection's rconn state.
	state string
	// lastConnected and lastDisconnected are zero if it never happened;
	// lastError is the last connection error, nil if none.
	lastConnected, lastDisconnected time.Time
	lastError                       error
	// lastAdmitted is when a connection was last up (or when the service
	// began), for fail-open's failure duration.
	lastAdmitted time.Time
	conns        map[*conn]struct{}
	// reconnecting: Reconnect closed the active connection, which is
	// then no error (OVS's rconn_reconnect, disconnect with error 0).
	reconnecting bool
	// snoopers are the snoop clients watching this controller (snoop.go);
	// snoops is a copy the connections read without the lock.
	snoopers []*snooper
	snoops   atomic.Pointer[[]*snooper]
}

func newService(m *Manager, cfg Controller) (*service, error) {
	ep, err := parseTarget(cfg.Target, m.rundir)
	if errors.Is(err, errBadTarget) {
		return nil, fmt.Errorf("unknown connection method")
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &service{m: m, cfg: cfg, name: m.bridge + "<->" + cfg.Target, ctx: ctx, stop: stop, ep: ep,
		done: make(chan struct{}), state: stateVoid, lastAdmitted: time.Now(), conns: map[*conn]struct{}{}}
	switch {
	case err != nil && ep.passive:
		// A listener that cannot exist: OVS logs it and keeps the row.
		m.log.Errorf("%s: %s: failed to listen (%s)", m.bridge, cfg.Target, strerror(err))
		s.lastError = err
		close(s.done)
	case ep.passive:
		go s.listen()
	default:
		go s.connectLoop(err)
	}
	return s, nil
}

// shutdown stops the service and closes its connections without
// waiting for its goroutines.
func (s *service) shutdown() {
	s.stop()
	s.mu.Lock()
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.closeSnoopers()
}

// reconnect drops an active service's connection, which then connects
// again after its backoff (OVS's rconn_reconnect, for bridge/reconnect).
// A passive service's connections stay.
func (s *service) reconnect() {
	if s.ep.passive {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		s.m.rlog.Infof("%s: disconnecting", s.name)
		s.reconnecting = true
		c.nc.Close()
	}
}

// close stops the service and its connections, and waits for it.
func (s *service) close() {
	s.shutdown()
	<-s.done
}

func (s *service) setState(st string) {
	s.mu.Lock()
	changed := s.state != st
	s.state = st
	s.mu.Unlock()
	if changed {
		s.m.rlog.Debugf("%s: entering %s", s.name, st)
		s.m.changed()
	}
}

// connectLoop keeps the active connection up, waiting between attempts
// as OVS's rconn: 1, 2, 4... seconds up to max_backoff, back to 1 after a
// connection that lasted longer than the wait before it. badTarget, if
// not nil, fails every attempt (an unknown method, or ssl: without SSL).
func (s *service) connectLoop(badTarget error) {
	defer close(s.done)
	var (
		backoff  time.Duration
		deadline time.Time // backoff resets after it
	)
	maxBackoff := s.cfg.MaxBackoff
	for {
		logAttempts := backoff < maxBackoff
		logf := s.m.rlog.Infof
		warnf := s.m.rlog.Warnf
		if !logAttempts {
			logf, warnf = s.m.rlog.Debugf, s.m.rlog.Debugf
		}
		logf("%s: connecting...", s.name)
		s.setState(stateConnecting)
		err := badTarget
		var nc net.Conn
		if err == nil {
			d := net.Dialer{Timeout: max(time.Second, backoff)}
			nc, err = d.DialContext(s.ctx, s.ep.network, s.ep.addr)
		}
		if s.ctx.Err() != nil {
			if nc != nil {
				nc.Close()
			}
			return
		}
		wasUp := false
		if err != nil {
			// A failed attempt never resets the backoff.
			deadline = time.Unix(1<<62, 0)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				logf("%s: connection timed out", s.name)
				err = syscall.ETIMEDOUT
			} else {
				warnf("%s: connection failed (%s)", s.name, strerror(err))
			}
		} else {
			s.m.rlog.Infof("%s: connected", s.name)
			now := time.Now()
			s.mu.Lock()
			s.lastConnected = now
			s.mu.Unlock()
			deadline = now.Add(backoff)
			c := newConn(s.m, nc, s.name, s)
			err = s.serve(c)
			wasUp = true
			if s.ctx.Err() != nil {
				return
			}
			s.mu.Lock()
			asked := s.reconnecting
			s.reconnecting = false
			s.mu.Unlock()
			switch {
			case asked:
				err = nil
			case errors.Is(err, io.EOF):
				s.m.rlog.Infof("%s: connection closed by peer", s.name)
			default:
				s.m.rlog.Warnf("%s: connection dropped (%s)", s.name, strerror(err))
			}
		}
		now := time.Now()
		s.mu.Lock()
		s.lastError = err
		if wasUp {
			s.lastDisconnected = now
		}
		s.mu.Unlock()
		switch {
		case !now.Before(deadline):
			backoff = time.Second
		case backoff < maxBackoff/2:
			backoff = max(time.Second, 2*backoff)
		default:
			if backoff < maxBackoff {
				s.m.rlog.Infof("%s: continuing to retry connections in the background but suppressing further logging", s.name)
			}
			backoff = maxBackoff
		}
		if backoff < maxBackoff {
			s.m.rlog.Infof("%s: waiting %d seconds before reconnect", s.name, int(backoff/time.Second))
		}
		deadline = now.Add(backoff)
		s.setState(stateBackoff)
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
}

// listen accepts controller connections on a passive target.
func (s *service) listen() {
	defer close(s.done)
	var ln net.Listener
	var err error
	if s.ep.network == "unix" {
		ln, err = unixsock.Listen(s.ep.addr, SocketMode)
	} else {
		ln, err = net.Listen(s.ep.network, s.ep.addr)
	}
	if err != nil {
		s.m.log.Errorf("%s: %s: failed to listen (%s)", s.m.bridge, s.cfg.Target, strerror(err))
		s.mu.Lock()
		s.lastError = err
		s.mu.Unlock()
		s.m.changed()
		return
	}
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		ln.Close()
		return
	}
	s.ln = ln
	s.mu.Unlock()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.m.log.Warnf("%s: accept failed: %v", s.cfg.Target, err)
			}
			return
		}
		peer := daemon.UnixConnName()
		if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
			peer = "tcp:" + a.String()
		}
		name := s.m.bridge + "<->" + peer
		s.m.rlog.Infof("%s: connected", name)
		s.mu.Lock()
		s.lastConnected = time.Now()
		s.mu.Unlock()
		c := newConn(s.m, nc, name, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.serve(c); s.ctx.Err() == nil {
				if errors.Is(err, io.EOF) {
					s.m.rlog.Infof("%s: connection closed by peer", name)
				} else {
					s.m.rlog.Warnf("%s: connection dropped (%s)", name, strerror(err))
				}
				s.mu.Lock()
				s.lastDisconnected = time.Now()
				s.lastError = err
				s.mu.Unlock()
				s.m.changed()
			}
		}()
	}
}

// serve runs c until it closes and returns why it closed.
func (s *service) serve(c *conn) error {
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		c.nc.Close()
		return net.ErrClosed
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	s.m.addConn(c)
	s.setState(stateActive)
	stop := make(chan struct{})
	if s.cfg.Probe > 0 {
		go c.probe(s.cfg.Probe, stop)
	}
	c.run()
	close(stop)
	s.m.delConn(c)
	if c.pins != nil {
		c.pins.stop()
	}
	s.mu.Lock()
	delete(s.conns, c)
	n := len(s.conns)
	s.lastAdmitted = time.Now()
	s.mu.Unlock()
	if n == 0 && !s.ep.passive {
		s.setState(stateBackoff)
	}
	return c.closeErr()
}

// ControllerStatus is what the switch writes back to one Controller row
// (OVS's bridge.c refresh_controller_status and connmgr.c
// connmgr_get_controller_info).
type ControllerStatus struct {
	Target      string
	IsConnected bool
	// Role is "master", "slave" or "other"; "" clears the column.
	Role string
	// Status is the status column; nil clears it.
	Status map[string]string
}

// status reports s as OVS's connmgr_get_controller_info and
// refresh_controller_status do: an active target's state, last_error,
// sec_since_connect and sec_since_disconnect, and the role of its
// connection while it is up. A passive target has no rconn of its own
// and reports nothing.
func (s *service) status(now time.Time) ControllerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := ControllerStatus{Target: s.cfg.Target}
	if s.ep.passive {
		return st
	}
	var c *conn
	for o := range s.conns {
		c = o
	}
	state := s.state
	if c != nil {
		st.IsConnected = true
		st.Role = roleName(c.role.Load())
		state = c.rconnState()
	}
	st.Status = map[string]string{"state": state}
	if s.lastError != nil {
		st.Status["last_error"] = strerror(s.lastError)
	}
	if !s.lastConnected.IsZero() {
		st.Status["sec_since_connect"] = strconv.Itoa(int(now.Sub(s.lastConnected) / time.Second))
	}
	if !s.lastDisconnected.IsZero() {
		st.Status["sec_since_disconnect"] = strconv.Itoa(int(now.Sub(s.lastDisconnected) / time.Second))
	}
	return st
}

// failureDuration is how long the service has been without a connection
// (0 while it has one), for fail-open.
func (s *service) failureDuration(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.conns) > 0 {
		return 0
	}
	return now.Sub(s.lastAdmitted)
}

func roleName(role uint32) string {
	switch role {
	case ofp.RoleMaster:
		return "master"
	case ofp.RoleSlave:
		return "slave"
	}
	return "other"
}

// strerror renders a connection error as OVS's ovs_strerror: the C
// library's text for an errno, "End of file" for EOF.
func strerror(err error) string {
	var errno syscall.Errno
	switch {
	case errors.Is(err, io.EOF):
		return "End of file"
	case errors.As(err, &errno):
		msg := errno.Error()
		if msg == "" {
			return msg
		}
		return strings.ToUpper(msg[:1]) + msg[1:]
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "Address family not supported by protocol"
	}
	return err.Error()
}
