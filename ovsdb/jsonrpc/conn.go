package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/govs/govs/internal/rawsock"
)

// Logger is the logging a connection needs; *logrus.Entry satisfies it.
type Logger interface {
	Debugf(format string, args ...any)
	Infof(format string, args ...any)
	Warnf(format string, args ...any)
	Errorf(format string, args ...any)
}

type nopLogger struct{}

func (nopLogger) Debugf(string, ...any) {}
func (nopLogger) Infof(string, ...any)  {}
func (nopLogger) Warnf(string, ...any)  {}
func (nopLogger) Errorf(string, ...any) {}

// NopLogger discards everything.
var NopLogger Logger = nopLogger{}

// DefaultProbeInterval is OVS's RECONNECT_DEFAULT_PROBE_INTERVAL, applied to
// TCP connections; unix sockets are not probed (stream_or_pstream_needs_probes).
const DefaultProbeInterval = 5 * time.Second

// DefaultMaxBacklog is the send backlog beyond which a connection is dropped.
// Monitor updates are held back while anything is queued (see Options.OnIdle),
// and reading stops past readPauseBacklog for every message, so the backlog
// is at most that plus one reply. This limit is the last resort.
const DefaultMaxBacklog = 512 << 20

// readPauseBacklog stops reading requests while this much output is queued,
// like ovsdb-server, which reads only with an empty backlog; a little slack
// keeps pipelining clients fast.
const readPauseBacklog = 1 << 20

// Options configure a connection.
type Options struct {
	// Name identifies the connection in logs, like OVS's "unix#3" or
	// "tcp:127.0.0.1:5000".
	Name string
	// ProbeInterval is the inactivity probe: after this long without input
	// an echo request is sent, and after as long again the connection is
	// closed. Zero disables it.
	ProbeInterval time.Duration
	// MaxMessageSize bounds a received message (DefaultMaxMessageSize if 0).
	MaxMessageSize int
	// MaxBacklog bounds queued output in bytes (DefaultMaxBacklog if 0).
	MaxBacklog int
	// OnIdle is called once the send queue is empty after each Kick,
	// without locks held, from the writer, or from the reader after the
	// handler (a Kick during the handler); it may call Send.
	OnIdle func()
	// Log is the "jsonrpc" module's logger; Reconnect the "reconnect"
	// module's (connection drops and probes). Nil discards.
	Log, Reconnect Logger
}

// Conn is one JSON-RPC connection. Send never blocks on the network: output
// is queued and written by a goroutine of the connection.
type Conn struct {
	nc   net.Conn
	raw  syscall.RawConn // nc's, for writes that must not block; nil if it has none (TLS)
	opts Options
	dec  *Decoder

	lastActivity atomic.Int64 // UnixNano of the last input (or probe sent)
	probeSent    atomic.Bool

	mu        sync.Mutex
	cond      *sync.Cond // signalled when the queue shrinks or the conn closes
	out       [][]byte   // guarded by mu: queued messages
	taken     [][]byte   // guarded by mu: the queue taken for writing (takeLocked)
	spare     [][]byte   // guarded by mu: an empty slice for the next queue
	backlog   int        // guarded by mu: bytes in out
	kicked    bool       // guarded by mu: OnIdle requested
	writing   bool       // guarded by mu: a goroutine is writing taken output
	inHandler bool       // guarded by mu: the reader runs the handler and will write the queue itself
	closed    bool       // guarded by mu
	err       error      // guarded by mu: why the connection closed

	wake chan struct{} // wakes the writer
	done chan struct{} // closed on Close
}

// ErrClosed is returned by Send after the connection has closed.
var ErrClosed = errors.New("connection closed")

// NewConn wraps nc.
func NewConn(nc net.Conn, opts Options) *Conn {
	if opts.MaxBacklog <= 0 {
		opts.MaxBacklog = DefaultMaxBacklog
	}
	if opts.Log == nil {
		opts.Log = NopLogger
	}
	if opts.Reconnect == nil {
		opts.Reconnect = NopLogger
	}
	if opts.Name == "" {
		opts.Name = nc.RemoteAddr().String()
	}
	c := &Conn{
		nc:   nc,
		opts: opts,
		wake: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
	c.cond = sync.NewCond(&c.mu)
	c.lastActivity.Store(time.Now().UnixNano())
	if sc, ok := nc.(syscall.Conn); ok {
		c.raw, _ = sc.SyscallConn()
	}
	if pc, ok := nc.(*PollConn); ok {
		c.dec = NewDecoder(pc, opts.MaxMessageSize)
	} else if c.raw != nil {
		c.dec = NewDecoder(&rawsock.Reader{NC: nc, Raw: c.raw}, opts.MaxMessageSize)
	} else {
		c.dec = NewDecoder(nc, opts.MaxMessageSize)
	}
	return c
}

// Name returns the connection's name.
func (c *Conn) Name() string { return c.opts.Name }

// Done is closed when the connection closes.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection closed (nil while open, io.EOF for a
// clean close by the peer).
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Backlog returns the bytes queued and not yet written.
func (c *Conn) Backlog() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.backlog
}

// Send queues m. It returns ErrClosed if the connection is closed, and
// closes the connection if the backlog exceeds its limit.
func (c *Conn) Send(m *Message) error {
	if c.opts.Log != NopLogger {
		c.opts.Log.Debugf("%s: send %s", c.opts.Name, m)
	}
	return c.SendRaw(m.Append(nil))
}

// SendEncoded queues b, the encoding of m (m.Append), which may be shared
// with other connections: it is only read. m is for the debug log.
func (c *Conn) SendEncoded(m *Message, b []byte) error {
	if c.opts.Log != NopLogger {
		c.opts.Log.Debugf("%s: send %s", c.opts.Name, m)
	}
	return c.SendRaw(b)
}

// Idle reports whether nothing is queued or being written.
func (c *Conn) Idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.out) == 0 && !c.writing && !c.closed
}

// SendEncodedNow is SendEncoded, but if nothing is queued or being written
// and the reader is not running the handler, it writes b on the caller's
// goroutine, as far as the socket takes it without blocking; the writer
// goroutine is woken only for a rest. This saves a goroutine wake-up when
// another connection's goroutine sends, as a commit's monitor updates are.
func (c *Conn) SendEncodedNow(m *Message, b []byte) error {
	c.mu.Lock()
	now := c.raw != nil && !c.closed && !c.writing && !c.inHandler && len(c.out) == 0
	if now {
		c.writing = true
		c.backlog += len(b)
	}
	c.mu.Unlock()
	if !now {
		return c.SendEncoded(m, b)
	}
	if c.opts.Log != NopLogger {
		c.opts.Log.Debugf("%s: send %s", c.opts.Name, m)
	}
	// Never wait for the socket: the writer does.
	n, werr := c.writeNow(b)
	c.mu.Lock()
	if werr == nil && n < len(b) && !c.closed {
		// The rest goes first: whatever was queued meanwhile came later.
		c.out = append([][]byte{b[n:]}, c.out...)
	}
	c.doneWritingLocked(n)
	return c.wroteLocked(werr)
}

// SendReply queues the reply to the request with id whose result is the
// concatenation of parts, valid JSON together. The parts are written as
// they are, not copied into the message (a monitor's initial contents
// are most of their reply), so they may be shared but must not change.
func (c *Conn) SendReply(id json.RawMessage, parts ...[]byte) error {
	if c.opts.Log != NopLogger {
		c.opts.Log.Debugf("%s: send %s", c.opts.Name, &Message{ID: id, Result: bytes.Join(parts, nil)})
	}
	if id == nil {
		id = nullJSON
	}
	head := make([]byte, 0, len(id)+16)
	head = append(append(append(head, `{"id":`...), id...), `,"result":`...)
	bufs := make([][]byte, 0, len(parts)+2)
	bufs = append(append(append(bufs, head), parts...), replyTail)
	return c.sendRaw(bufs...)
}

// replyTail ends a reply of SendReply.
var replyTail = []byte(`,"error":null}`)

// SendRaw queues one already encoded message.
func (c *Conn) SendRaw(b []byte) error { return c.sendRaw(b) }

// sendRaw queues one already encoded message in parts.
func (c *Conn) sendRaw(parts ...[]byte) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	for _, b := range parts {
		c.out = append(c.out, b)
		c.backlog += len(b)
	}
	over := c.backlog > c.opts.MaxBacklog
	n, backlog := len(c.out), c.backlog
	deferred := c.inHandler
	c.mu.Unlock()
	if over {
		c.opts.Log.Warnf("sending backlog exceeded maximum size (%d > %d bytes), disconnecting, jsonrpc: %s.",
			backlog, c.opts.MaxBacklog, c.opts.Name)
		c.closeWith(fmt.Errorf("backlog of %d messages, %d bytes: %w", n, backlog, errBacklog))
		return ErrClosed
	}
	if !deferred {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

var errBacklog = errors.New("send backlog too large")

// Kick asks the writer to call OnIdle as soon as the queue is empty. While
// the reader runs the handler, the reader does it after the handler's
// output is written, without waking the writer.
func (c *Conn) Kick() {
	c.mu.Lock()
	c.kicked = true
	deferred := c.inHandler
	c.mu.Unlock()
	if deferred {
		return
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Close closes the connection; queued output is discarded.
func (c *Conn) Close() { c.closeWith(io.EOF) }

// CloseAfterFlush closes the connection once queued output is written or
// the timeout passes.
func (c *Conn) CloseAfterFlush(timeout time.Duration) {
	c.flushBeforeClose(timeout)
	c.Close()
}

func (c *Conn) flushBeforeClose(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.backlog > 0 && !c.closed && time.Now().Before(deadline) {
		c.mu.Unlock()
		time.Sleep(time.Millisecond)
		c.mu.Lock()
	}
}

func (c *Conn) closeWith(err error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.err = err
	c.out = nil
	c.backlog = 0
	c.cond.Broadcast()
	c.mu.Unlock()
	close(c.done)
	c.nc.Close()
}

// Serve runs the connection until it closes: it writes queued output, probes
// an idle peer, answers echo requests, swallows replies to its own probes,
// and passes every other message to handle, one at a time in arrival order.
// It returns the reason the connection closed (io.EOF for a clean close).
func (c *Conn) Serve(handle func(*Message)) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.writer()
	}()
	if c.opts.ProbeInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.prober()
		}()
	}
	err := c.reader(handle)
	if !errors.Is(err, io.EOF) {
		// Replies to the messages before a bad one still go out, as
		// OVS writes each reply as it is sent.
		c.flushBeforeClose(time.Second)
	}
	c.closeWith(err)
	wg.Wait()
	if c.dec.Buffered() >= spikeSize {
		// A refused oversized message, or a peer gone mid-message.
		ReleaseMemory()
	}
	return c.Err()
}

func (c *Conn) reader(handle func(*Message)) error {
	var last uint64
	for {
		raw, err := c.dec.Next()
		if c.dec.Received != last {
			last = c.dec.Received
			c.activity()
		}
		if err != nil {
			c.mu.Lock()
			closed := c.closed
			c.mu.Unlock()
			if closed {
				return c.Err()
			}
			switch {
			case errors.Is(err, io.EOF):
				return io.EOF
			case errors.Is(err, ErrProtocol):
				c.opts.Log.Warnf("%s: error parsing stream: %v", c.opts.Name, err)
				c.opts.Reconnect.Warnf("%s: connection dropped (Protocol error)", c.opts.Name)
			case errors.Is(err, ErrTooLarge):
				c.opts.Log.Warnf("%s: message exceeds maximum size of %d bytes", c.opts.Name, c.dec.max)
				c.opts.Reconnect.Warnf("%s: connection dropped (Message too long)", c.opts.Name)
			default:
				c.opts.Reconnect.Warnf("%s: connection dropped (%v)", c.opts.Name, err)
			}
			return err
		}
		m, err := parseValid(raw)
		if err != nil {
			c.opts.Log.Warnf("%s: received bad JSON-RPC message: %v", c.opts.Name, err)
			c.opts.Reconnect.Warnf("%s: connection dropped (Protocol error)", c.opts.Name)
			return err
		}
		if c.opts.Log != NopLogger {
			c.opts.Log.Debugf("%s: received %s", c.opts.Name, m)
		}
		// Every request waits for the backlog, echo too: a peer that
		// pipelines echo requests without reading would otherwise have
		// its replies queued up to MaxBacklog.
		c.waitBacklog()
		switch {
		case m.Type() == Request && m.Method == "echo":
			c.Send(&Message{Result: m.Params, ID: m.ID})
			continue
		case m.Type() == Reply && bytes.Equal(m.ID, echoID):
			continue
		}
		c.mu.Lock()
		c.inHandler = true
		c.mu.Unlock()
		handle(m)
		// Write what the handler queued from this goroutine, as OVS
		// sends a reply as soon as it is made: handing it to the writer
		// goroutine would cost a wake-up per request.
		if err := c.afterHandler(); err != nil {
			return err
		}
	}
}

// afterHandler ends the handler's turn on the reader: it writes what the
// handler queued and, once the queue is empty, calls OnIdle if a Kick asked
// for it, writing what that queues too. The writer goroutine is woken only
// if another goroutine is writing (it then leaves the rest to the writer).
func (c *Conn) afterHandler() error {
	c.mu.Lock()
	for !c.closed && !c.writing {
		if len(c.out) > 0 {
			bufs, n := c.takeLocked()
			c.mu.Unlock()
			err := c.write(bufs)
			c.mu.Lock()
			c.doneWritingLocked(n)
			if err != nil {
				c.inHandler = false
				c.mu.Unlock()
				c.opts.Log.Warnf("%s: send error: %v", c.opts.Name, err)
				c.closeWith(err)
				return err
			}
			continue
		}
		if !c.kicked || c.opts.OnIdle == nil {
			break
		}
		c.kicked = false
		c.mu.Unlock()
		c.opts.OnIdle()
		c.mu.Lock()
	}
	c.inHandler = false
	wake := !c.closed && (c.kicked || len(c.out) > 0)
	c.mu.Unlock()
	if wake {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// wroteLocked ends a write made outside the writer goroutine: it closes the
// connection on err, or wakes the writer if output or OnIdle is due. Called
// with c.mu held; returns with it released.
func (c *Conn) wroteLocked(err error) error {
	wake := c.kicked || len(c.out) > 0
	c.mu.Unlock()
	if err != nil {
		c.opts.Log.Warnf("%s: send error: %v", c.opts.Name, err)
		c.closeWith(err)
		return err
	}
	if wake {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// writeNow writes as much of b as the socket takes without waiting.
func (c *Conn) writeNow(b []byte) (int, error) {
	if pc, ok := c.nc.(*PollConn); ok {
		one := [1][]byte{b}
		return pc.writeBuffers(one[:], true)
	}
	return rawsock.Write(c.nc, c.raw, [][]byte{b}, true)
}

// write writes bufs whole, waiting for the socket as needed. It consumes
// bufs (not the bytes). A PollConn's write allocates nothing.
func (c *Conn) write(bufs net.Buffers) error {
	if pc, ok := c.nc.(*PollConn); ok {
		_, err := pc.writeBuffers(bufs, false)
		return err
	}
	return c.writeOther(slices.Clone(bufs))
}

func (c *Conn) writeOther(bufs net.Buffers) error {
	if c.raw != nil {
		_, err := rawsock.Write(c.nc, c.raw, bufs, false)
		return err
	}
	_, err := bufs.WriteTo(c.nc)
	return err
}

// maxSpare bounds the queue slice kept for reuse.
const maxSpare = 1024

// takeLocked takes the queued output for writing; the caller gives the
// slice back with doneWritingLocked. The queue and the taken slice swap
// places, so that writing allocates no new slice each time.
func (c *Conn) takeLocked() (net.Buffers, int) {
	bufs := c.out
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	c.out, c.taken = c.spare[:0], bufs
	c.spare = nil
	c.writing = true
	return bufs, n
}

func (c *Conn) doneWritingLocked(n int) {
	c.writing = false
	if c.taken != nil {
		clear(c.taken[:cap(c.taken)])
		if cap(c.taken) <= maxSpare {
			c.spare = c.taken[:0]
		}
		c.taken = nil
	}
	if !c.closed {
		c.backlog -= n
	}
	c.cond.Broadcast()
	if n >= spikeSize {
		ReleaseMemory()
	}
}

// waitBacklog blocks while too much output is queued.
func (c *Conn) waitBacklog() {
	c.mu.Lock()
	for c.backlog > readPauseBacklog && !c.closed {
		c.cond.Wait()
	}
	c.mu.Unlock()
}

func (c *Conn) activity() {
	c.lastActivity.Store(time.Now().UnixNano())
	c.probeSent.Store(false)
}

var echoID = json.RawMessage(`"echo"`)

func (c *Conn) writer() {
	for {
		c.mu.Lock()
		for (len(c.out) == 0 || c.writing || c.inHandler) && !c.closed {
			if len(c.out) == 0 && !c.writing && c.kicked && c.opts.OnIdle != nil {
				c.kicked = false
				c.mu.Unlock()
				c.opts.OnIdle()
				c.mu.Lock()
				continue
			}
			c.mu.Unlock()
			select {
			case <-c.wake:
			case <-c.done:
			}
			c.mu.Lock()
		}
		if c.closed {
			c.mu.Unlock()
			return
		}
		bufs, n := c.takeLocked()
		c.mu.Unlock()

		err := c.write(bufs)

		c.mu.Lock()
		c.doneWritingLocked(n)
		c.mu.Unlock()
		if err != nil {
			c.opts.Log.Warnf("%s: send error: %v", c.opts.Name, err)
			c.closeWith(err)
			return
		}
	}
}

func (c *Conn) prober() {
	interval := c.opts.ProbeInterval
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		idle := time.Since(time.Unix(0, c.lastActivity.Load()))
		if idle < interval {
			t.Reset(interval - idle)
			continue
		}
		if !c.probeSent.Load() {
			c.opts.Reconnect.Debugf("%s: idle %d ms, sending inactivity probe", c.opts.Name, idle.Milliseconds())
			c.probeSent.Store(true)
			c.lastActivity.Store(time.Now().UnixNano())
			c.Send(&Message{Method: "echo", Params: json.RawMessage("[]"), ID: echoID})
			t.Reset(interval)
			continue
		}
		c.opts.Reconnect.Errorf("%s: no response to inactivity probe after %.3g seconds, disconnecting",
			c.opts.Name, interval.Seconds())
		c.closeWith(errProbe)
		return
	}
}

var errProbe = errors.New("inactivity probe timed out")
