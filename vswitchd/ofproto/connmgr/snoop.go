package connmgr

import (
	"errors"
	"io"
	"net"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/internal/unixsock"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
	"golang.org/x/sys/unix"
)

// Snoop sockets, as OVS's: every bridge listens on <rundir>/<bridge>.snoop,
// and a client there (`ovs-ofctl snoop BRIDGE`) gets a copy of every
// OpenFlow message the bridge sends to or receives from one of its active
// controllers, the one with the highest role (OVS's add_snooper and
// rconn_add_monitor). Copies are the messages' bytes as they crossed the
// controller connection, whatever version the snoop client negotiated.
// With no active controller the client is disconnected at once.

// snoopMax is how many snoop clients one controller takes (OVS's rconn
// keeps 8 monitors); more are disconnected.
const snoopMax = 8

// snoopQueue is how many copies may wait for a slow snoop client; more are
// dropped for it, as OVS drops a copy its monitor cannot take at once.
const snoopQueue = 256

// snoopRL limits the log of clients turned away (OVS's connmgr rl: one a
// minute, bursts of five).
var snoopRL = daemon.NewRateLimit(1, 5)

// snooper is one snoop client.
type snooper struct {
	nc   net.Conn
	name string
	q    chan []byte
	// up is closed when the client's HELLO has been read: copies before
	// it are dropped, as OVS's vconn_send fails until the handshake.
	up   chan struct{}
	done chan struct{}
	once sync.Once
}

func (sn *snooper) close() {
	sn.once.Do(func() {
		close(sn.done)
		sn.nc.Close()
	})
}

// ListenSnoop listens for snoop clients at path until Close.
func (m *Manager) ListenSnoop(path string) error {
	ln, err := unixsock.Listen(path, SocketMode)
	if err != nil {
		return err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		ln.Close()
		return net.ErrClosed
	}
	m.snoopLn = ln
	m.wg.Add(1)
	m.mu.Unlock()
	go m.acceptSnoops(ln)
	return nil
}

func (m *Manager) acceptSnoops(ln *unixsock.Listener) {
	defer m.wg.Done()
	for {
		nc, err := ln.AcceptUnix()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				m.log.Warnf("%s: accept failed: %v", ln.Addr(), err)
			}
			return
		}
		name := daemon.UnixConnName()
		s := m.snoopTarget()
		if s == nil {
			if ok, dropped := snoopRL.Allow(); ok {
				if dropped != "" {
					m.log.Infof("%s", dropped)
				}
				m.log.Infof("no controller connection to snoop")
			}
			m.wg.Add(1)
			go func() {
				defer m.wg.Done()
				closeAfterHello(nc)
			}()
			continue
		}
		s.addSnooper(nc, name)
	}
}

// closeAfterHello closes a client's connection once its HELLO has arrived
// (or after a second), unread: the client then sees "Connection reset by
// peer", as from OVS, which closes the snoop connection without reading it.
func closeAfterHello(nc *net.UnixConn) {
	defer nc.Close()
	rc, err := nc.SyscallConn()
	if err != nil {
		return
	}
	nc.SetReadDeadline(time.Now().Add(time.Second))
	var b [1]byte
	rc.Read(func(fd uintptr) bool {
		_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		return err != unix.EAGAIN
	})
}

// snoopTarget returns the active controller to snoop on: the one whose
// connection has the highest role (master, then equal, then slave, then
// none connected), nil if the bridge has no active controller.
func (m *Manager) snoopTarget() *service {
	m.svcMu.Lock()
	var svcs []*service
	for _, s := range m.services {
		if !s.ep.passive {
			svcs = append(svcs, s)
		}
	}
	m.svcMu.Unlock()
	sort.Slice(svcs, func(i, j int) bool { return svcs[i].cfg.Target < svcs[j].cfg.Target })
	var best *service
	bestPref := -1
	for _, s := range svcs {
		if p := s.snoopPreference(); p > bestPref {
			best, bestPref = s, p
		}
	}
	return best
}

// snoopPreference is OVS's snoop_preference: 3 for a master connection, 2
// equal, 1 slave, 0 without a connection.
func (s *service) snoopPreference() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		switch c.role.Load() {
		case ofp.RoleMaster:
			return 3
		case ofp.RoleEqual:
			return 2
		case ofp.RoleSlave:
			return 1
		}
	}
	return 0
}

// addSnooper attaches a snoop client to s until either ends.
func (s *service) addSnooper(nc *net.UnixConn, name string) {
	sn := &snooper{nc: nc, name: name, q: make(chan []byte, snoopQueue), up: make(chan struct{}), done: make(chan struct{})}
	s.mu.Lock()
	if s.ctx.Err() != nil || len(s.snoopers) >= snoopMax {
		s.mu.Unlock()
		s.m.rlog.Debugf("too many monitor connections, discarding %s", name)
		nc.Close()
		return
	}
	s.snoopers = append(s.snoopers, sn)
	all := append([]*snooper(nil), s.snoopers...)
	s.snoops.Store(&all)
	s.mu.Unlock()
	s.m.rlog.Infof("new monitor connection from %s", name)
	s.m.wg.Add(2)
	go func() {
		defer s.m.wg.Done()
		sn.read(s.m)
		sn.close()
		s.dropSnooper(sn)
	}()
	go func() {
		defer s.m.wg.Done()
		sn.write()
		sn.close()
	}()
}

// dropSnooper detaches sn from s.
func (s *service) dropSnooper(sn *snooper) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.snoopers {
		if x == sn {
			s.snoopers = append(s.snoopers[:i:i], s.snoopers[i+1:]...)
			break
		}
	}
	all := append([]*snooper(nil), s.snoopers...)
	s.snoops.Store(&all)
}

// closeSnoopers disconnects s's snoop clients (the controller is gone).
func (s *service) closeSnoopers() {
	s.mu.Lock()
	sns := s.snoopers
	s.mu.Unlock()
	for _, sn := range sns {
		sn.close()
	}
}

// copyToSnoopers queues a copy of b, a message that crossed a connection
// of s, for each of its snoop clients that has said HELLO and has room.
func (s *service) copyToSnoopers(b []byte) {
	p := s.snoops.Load()
	if p == nil || len(*p) == 0 {
		return
	}
	var cp []byte
	for _, sn := range *p {
		select {
		case <-sn.up:
		default:
			continue
		}
		if cp == nil {
			cp = append([]byte(nil), b...)
		}
		select {
		case sn.q <- cp:
		default:
		}
	}
}

// read sends the switch's HELLO, settles the version with the client's
// (as any OpenFlow connection of the bridge) and then reads and drops
// whatever the client sends, as OVS's rconn does with its monitors', until
// the connection ends.
func (sn *snooper) read(m *Manager) {
	versions := m.allowedVersions()
	if _, err := sn.nc.Write(ofp.EncodeHello(versions, 0)); err != nil {
		return
	}
	buf := make([]byte, 2*ofp.MaxLen)
	start, end := 0, 0
	hello := false
	for {
		n, err := sn.nc.Read(buf[end:])
		end += n
		for {
			msg, _, ferr := ofp.Split(buf[start:end])
			if ferr != nil {
				m.log.Warnf("%s: %v, closing monitor connection", sn.name, ferr)
				return
			}
			if msg == nil {
				break
			}
			start += len(msg)
			if hello {
				continue
			}
			hm, derr := ofp.Decode(msg)
			if negotiate(m.log, sn.name, versions, ofp.ParseHeader(msg), hm, derr, func(b []byte) { sn.nc.Write(b) }) == 0 {
				return
			}
			hello = true
			close(sn.up)
		}
		if len(buf)-end < ofp.MaxLen {
			end = copy(buf, buf[start:end])
			start = 0
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, syscall.ECONNRESET) {
				m.rlog.Debugf("%s: %v", sn.name, err)
			}
			return
		}
	}
}

// write sends the queued copies until the connection ends.
func (sn *snooper) write() {
	for {
		select {
		case <-sn.done:
			return
		case b := <-sn.q:
			if _, err := sn.nc.Write(b); err != nil {
				return
			}
		}
	}
}
