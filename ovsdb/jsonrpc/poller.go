package jsonrpc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/govs/govs/internal/rawsock"
)

// Accepting, waiting for and closing unix-socket connections without a
// system call that the Go runtime sees as blocking (syscall.Syscall rather
// than syscall.RawSyscall). The first such call after the process was idle
// wakes the runtime's monitor thread (sysmon), which then polls every 20 µs
// until the process is idle again, and retakes the P of a call that lasts
// over such a tick, waking another thread to run Go code meanwhile. net's
// Accept (accept4, getsockname) and Close (close) are such calls, as was
// the log's write: an ovn-nbctl call cost govs' ovsdb-server three sysmon
// wake-ups and some 13 more context switches than Debian's server, and
// about a quarter more CPU (tests/bench/ovn.sh).
//
// A Poller is an epoll instance of its own, whose descriptor the runtime's
// poller waits for (epoll nests): one goroutine takes its events and wakes
// the connections' goroutines, which read and write with raw system calls.
// A PollListener takes a listener's connections with a raw accept4 and
// registers them with a raw epoll_ctl; a connection's Close is a raw close.

// pollEvents is how many events one epoll_wait takes.
const pollEvents = 64

// epollET is EPOLLET as struct epoll_event's unsigned events (syscall's
// constant is negative).
const epollET = 1 << 31

// A connection's socket is registered edge-triggered for input only
// (pollIn), and for output too (pollInOut) only while a write waits for
// room: the runtime's poller registers both, and every time a client read
// a reply the socket's new room was an event that woke the server for
// nothing, a second sleep and wake-up per request.
const (
	pollIn    = syscall.EPOLLIN | syscall.EPOLLRDHUP | epollET
	pollInOut = pollIn | syscall.EPOLLOUT
)

// Poller waits for the sockets of PollConns.
type Poller struct {
	epfd int
	file *os.File        // epfd's, kept from its finalizer
	raw  syscall.RawConn // file's, waited for by the runtime's poller

	mu    sync.Mutex
	conns map[int32]*PollConn // guarded by mu: by descriptor

	// active counts the connections whose reader is not waiting for
	// input: those serving a request (see PollConn.Read).
	active atomic.Int32
}

var (
	defaultPoller     *Poller
	defaultPollerErr  error
	defaultPollerOnce sync.Once
)

// DefaultPoller returns the process's Poller, started on first use; it
// runs for the process's life.
func DefaultPoller() (*Poller, error) {
	defaultPollerOnce.Do(func() { defaultPoller, defaultPollerErr = NewPoller() })
	return defaultPoller, defaultPollerErr
}

// NewPoller opens an epoll instance and starts its goroutine, which runs
// for the process's life.
func NewPoller() (*Poller, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	// Non-blocking, so that os.NewFile gives it to the runtime's poller.
	if err := syscall.SetNonblock(epfd, true); err != nil {
		syscall.Close(epfd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	f := os.NewFile(uintptr(epfd), "epoll")
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	p := &Poller{epfd: epfd, file: f, raw: raw, conns: map[int32]*PollConn{}}
	go func() {
		err := p.run()
		// Only a bug or a broken kernel gets here: the connections
		// would wait for ever, so fail loudly.
		panic(fmt.Sprintf("jsonrpc: poller: %v", err))
	}()
	return p, nil
}

// epollEvent is struct epoll_event (<sys/epoll.h>), packed on amd64.
type epollEvent = syscall.EpollEvent

// run takes the epoll instance's events and wakes the connections waiting
// for them, for ever.
func (p *Poller) run() error {
	var events [pollEvents]epollEvent
	var errno syscall.Errno
	err := p.raw.Read(func(fd uintptr) bool {
		for {
			n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, fd, uintptr(unsafe.Pointer(&events[0])), pollEvents, 0, 0, 0)
			switch e {
			case 0:
			case syscall.EINTR:
				continue
			default:
				errno = e
				return true
			}
			if n == 0 {
				// Drained: wait for the runtime's poller to see
				// the instance readable again.
				return false
			}
			p.mu.Lock()
			for _, ev := range events[:n] {
				c := p.conns[ev.Fd]
				if c == nil {
					continue
				}
				if ev.Events&(syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 {
					signal(c.readable)
				}
				if ev.Events&(syscall.EPOLLOUT|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 {
					signal(c.writable)
				}
			}
			p.mu.Unlock()
			if n < pollEvents {
				// Drained. Every event from now on makes the
				// instance readable to the runtime's poller
				// again (an edge: each wakes the nesting
				// poller), so an empty epoll_wait is not
				// needed to know it.
				return false
			}
		}
	})
	if err == nil {
		err = os.NewSyscallError("epoll_pwait", errno)
	}
	return err
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// PollListener is a unix-socket listener whose connections are PollConns.
type PollListener struct {
	p   *Poller
	ln  FileListener
	f   *os.File        // a duplicate of ln's descriptor, in the runtime's poller
	raw syscall.RawConn // f's: net's listeners have no raw reads

	mu     sync.Mutex
	closed bool // guarded by mu
}

// FileListener is a listener whose descriptor can be duplicated, as a
// *net.UnixListener's.
type FileListener interface {
	net.Listener
	File() (*os.File, error)
}

// Listen makes ln's connections PollConns of p. The PollListener owns ln:
// its Close closes ln.
func (p *Poller) Listen(ln FileListener) (*PollListener, error) {
	f, err := ln.File()
	if err != nil {
		return nil, err
	}
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &PollListener{p: p, ln: ln, f: f, raw: raw}, nil
}

// Addr returns the listener's address.
func (l *PollListener) Addr() net.Addr { return l.ln.Addr() }

// Close closes the listener (and ln's Close may remove its socket file);
// a waiting Accept returns net.ErrClosed.
func (l *PollListener) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.f.Close()
	return l.ln.Close()
}

// Accept takes the next connection with a raw accept4 and registers it
// with the Poller. Its errors are net's: a closed listener's is
// net.ErrClosed.
func (l *PollListener) Accept() (net.Conn, error) {
	nfd := -1
	var errno syscall.Errno
	err := l.raw.Read(func(fd uintptr) bool {
		for {
			k, _, e := syscall.RawSyscall6(syscall.SYS_ACCEPT4, fd, 0, 0, syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0, 0)
			switch e {
			case 0:
				nfd = int(k)
			case syscall.EINTR, syscall.ECONNABORTED:
				continue
			case syscall.EAGAIN:
				return false
			default:
				errno = e
			}
			return true
		}
	})
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	switch {
	case closed:
		if nfd >= 0 {
			syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(nfd), 0, 0)
		}
		err = net.ErrClosed
	case err == nil && errno != 0:
		err = os.NewSyscallError("accept4", errno)
	}
	if err != nil {
		return nil, &net.OpError{Op: "accept", Net: "unix", Addr: l.ln.Addr(), Err: err}
	}
	c, err := l.p.add(nfd, l.ln.Addr())
	if err != nil {
		return nil, &net.OpError{Op: "accept", Net: "unix", Addr: l.ln.Addr(), Err: err}
	}
	return c, nil
}

// add registers nfd, a connected socket, as a PollConn.
func (p *Poller) add(nfd int, laddr net.Addr) (*PollConn, error) {
	c := &PollConn{
		p:        p,
		fd:       nfd,
		laddr:    laddr,
		raddr:    &net.UnixAddr{Net: "unix"},
		readable: make(chan struct{}, 1),
		writable: make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	// Registered before epoll_ctl, so that no event finds it missing.
	p.mu.Lock()
	p.conns[int32(nfd)] = c
	p.mu.Unlock()
	p.active.Add(1) // until destroy, less while its reader waits
	ev := epollEvent{Events: pollIn, Fd: int32(nfd)}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_CTL, uintptr(p.epfd), syscall.EPOLL_CTL_ADD, uintptr(nfd), uintptr(unsafe.Pointer(&ev)), 0, 0); e != 0 {
		p.mu.Lock()
		delete(p.conns, int32(nfd))
		p.mu.Unlock()
		syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(nfd), 0, 0)
		p.active.Add(-1)
		return nil, os.NewSyscallError("epoll_ctl", e)
	}
	return c, nil
}

// PollConn is a unix-socket connection accepted by a Poller: a net.Conn
// whose SyscallConn waits through the Poller. It has no deadlines.
type PollConn struct {
	p            *Poller
	fd           int
	laddr, raddr net.Addr

	readable, writable chan struct{} // a token when the socket may have become so
	done               chan struct{} // closed by Close

	// drained: the last Read took less than it asked for, so the socket
	// was empty after it: the next Read waits for the Poller's token
	// before reading (see Read). Used by the reading goroutine only.
	drained bool

	mu       sync.Mutex
	refs     int  // guarded by mu: calls using fd
	closing  bool // guarded by mu: Close was called; fd is closed once refs is 0
	outWaits int  // guarded by mu: writes waiting for room (fd registered with pollInOut)
}

var errNoDeadline = errors.New("deadlines are not supported")

// incref takes a reference to c.fd for a call, false if c is closed.
func (c *PollConn) incref() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.refs++
	return true
}

// decref drops a call's reference, closing c.fd after the last if c is
// closing: no call uses a descriptor number that may be another's by then.
func (c *PollConn) decref() {
	c.mu.Lock()
	c.refs--
	last := c.closing && c.refs == 0
	c.mu.Unlock()
	if last {
		c.destroy()
	}
}

// destroy unregisters and closes c.fd, with raw system calls.
func (c *PollConn) destroy() {
	c.p.mu.Lock()
	delete(c.p.conns, int32(c.fd))
	c.p.mu.Unlock()
	c.p.active.Add(-1)
	// close(2) removes it from the epoll instance too; the explicit
	// removal is for a descriptor another process might share.
	syscall.RawSyscall6(syscall.SYS_EPOLL_CTL, uintptr(c.p.epfd), syscall.EPOLL_CTL_DEL, uintptr(c.fd), 0, 0, 0)
	syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(c.fd), 0, 0)
}

// Close closes the connection: calls waiting for the socket return
// net.ErrClosed, and the descriptor is closed once no call uses it.
func (c *PollConn) Close() error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return &net.OpError{Op: "close", Net: "unix", Source: c.laddr, Addr: c.raddr, Err: net.ErrClosed}
	}
	c.closing = true
	last := c.refs == 0
	c.mu.Unlock()
	close(c.done)
	if last {
		c.destroy()
	}
	return nil
}

// wait waits for a token on ch, or Close.
func (c *PollConn) wait(ch chan struct{}) error {
	if ch == c.readable {
		c.p.active.Add(-1)
		defer c.p.active.Add(1)
	}
	select {
	case <-ch:
		return nil
	case <-c.done:
		return net.ErrClosed
	}
}

// SyscallConn returns the connection's raw descriptor access.
func (c *PollConn) SyscallConn() (syscall.RawConn, error) { return pollRawConn{c}, nil }

type pollRawConn struct{ c *PollConn }

func (r pollRawConn) Control(f func(fd uintptr)) error {
	if !r.c.incref() {
		return net.ErrClosed
	}
	defer r.c.decref()
	f(uintptr(r.c.fd))
	return nil
}

func (r pollRawConn) Read(f func(fd uintptr) bool) error { return r.c.rawDo(r.c.readable, f) }

func (r pollRawConn) Write(f func(fd uintptr) bool) error { return r.c.rawDo(r.c.writable, f) }

// rawDo calls f until it returns true, waiting for a token on ch after
// each false, as syscall.RawConn's Read and Write do. A write that waits
// has the socket registered for output meanwhile.
func (c *PollConn) rawDo(ch chan struct{}, f func(fd uintptr) bool) error {
	if !c.incref() {
		return net.ErrClosed
	}
	defer c.decref()
	out := false // this call added to outWaits
	defer func() {
		if out {
			c.waitOut(-1)
		}
	}()
	for !f(uintptr(c.fd)) {
		if ch == c.writable && !out {
			out = true
			// Registering reports room there is already, so a
			// token taken now cannot be missed; an old one only
			// means one more try.
			if err := c.waitOut(1); err != nil {
				return err
			}
			continue
		}
		if err := c.wait(ch); err != nil {
			return err
		}
	}
	return nil
}

// waitOut counts a write starting (+1) or ending (-1) its wait for room,
// registering the socket for output while any waits.
func (c *PollConn) waitOut(d int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.outWaits += d
	events := uint32(pollIn)
	switch {
	case d > 0 && c.outWaits == 1:
		events = pollInOut
	case d < 0 && c.outWaits == 0:
	default:
		return nil
	}
	ev := epollEvent{Events: events, Fd: int32(c.fd)}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_CTL, uintptr(c.p.epfd), syscall.EPOLL_CTL_MOD, uintptr(c.fd), uintptr(unsafe.Pointer(&ev)), 0, 0); e != 0 {
		return os.NewSyscallError("epoll_ctl", e)
	}
	return nil
}

// Read reads with one raw read(2). After a read that left the socket
// empty (it took less than it asked for), while other connections are
// serving requests, the next one first waits for the Poller's token
// instead of trying at once: a client that waits for its reply has sent
// nothing yet, and the read would fail with EAGAIN, a wasted system call
// per request. (Alone, it tries at once: a client that sends its next
// request as soon as it has its reply often has, and the read saves a
// round through the pollers.) No input is missed: the socket is
// registered edge-triggered, so bytes that arrived after the last read
// are an event the Poller has queued or will find, and the token stays
// until taken. Meanwhile the goroutine sleeps until the runtime's poller
// runs, which it does once every ready goroutine has run: the requests of
// every client ready by then are read and answered in one round, as
// ovsdb-server serves every ready client once per poll loop, and their
// commits share a log write (session.logCommit).
func (c *PollConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if c.drained && c.p.active.Load() > 1 {
		c.drained = false
		if err := c.wait(c.readable); err != nil {
			return 0, rawsock.OpError("read", c, err)
		}
	}
	// rawsock.Read's read, in a closure of its own so that nothing
	// escapes.
	var n int
	var errno syscall.Errno
	err := c.rawDo(c.readable, func(fd uintptr) bool {
		var done bool
		n, errno, done = rawsock.ReadFD(fd, b)
		return done
	})
	if n, err = rawsock.ReadResult(n, errno, err, c); err != nil {
		return 0, err
	}
	c.drained = n < len(b)
	return n, nil
}

func (c *PollConn) Write(b []byte) (int, error) {
	one := [1][]byte{b}
	n, err := c.writeBuffers(one[:], false)
	if err == nil && n < len(b) {
		err = rawsock.OpError("write", c, syscall.EPIPE)
	}
	return n, err
}

// writeBuffers is rawsock.Write for c, without allocating: it writes bufs
// (which it consumes) with writev(2), waiting for room unless nowait.
func (c *PollConn) writeBuffers(bufs [][]byte, nowait bool) (int, error) {
	var w rawsock.Writev
	err := c.rawDo(c.writable, func(fd uintptr) bool {
		var e syscall.Errno
		if bufs, e = w.To(fd, bufs); e == syscall.EAGAIN {
			return nowait
		}
		return true
	})
	return w.Result(err, c)
}

func (c *PollConn) LocalAddr() net.Addr  { return c.laddr }
func (c *PollConn) RemoteAddr() net.Addr { return c.raddr }

func (c *PollConn) SetDeadline(time.Time) error {
	return rawsock.OpError("set", c, errNoDeadline)
}

func (c *PollConn) SetReadDeadline(time.Time) error {
	return rawsock.OpError("set", c, errNoDeadline)
}

func (c *PollConn) SetWriteDeadline(time.Time) error {
	return rawsock.OpError("set", c, errNoDeadline)
}
