package connmgr

import (
	"net"
	"syscall"
	"time"

	"github.com/govs/govs/internal/rawsock"
)

// rawIO reads and writes a connection's socket with raw system calls
// (internal/rawsock), which the Go scheduler is not told about; waiting
// for the socket still goes through its network poller. A system call
// announced to the scheduler wakes its monitor thread (sysmon) whenever
// the process was idle, and a request-reply client such as ovs-ofctl
// add-flows (a flow mod and a barrier per round trip) leaves the switch
// idle between requests: the monitor's wake-ups and its short sleeps
// after each were 15% of the switch's CPU in a `perf record` of
// add-flows, each a context switch, and with writes that the woken client
// preempts, the monitor also handed the connection's P to another thread
// and back.
type rawIO struct {
	rawsock.Reader
	one [1][]byte // write's buffer list, kept to spare an allocation per message (writes are serialised)
}

// newRawIO returns nc's rawIO, or nil if nc is not a socket of its own
// (a TLS connection), for nc.Read and nc.Write.
func newRawIO(nc net.Conn) *rawIO {
	switch nc.(type) {
	case *net.UnixConn, *net.TCPConn:
	default:
		return nil
	}
	rc, err := nc.(syscall.Conn).SyscallConn()
	if err != nil {
		return nil
	}
	return &rawIO{Reader: rawsock.Reader{NC: nc, Raw: rc}}
}

// write writes all of b, as nc.Write.
func (r *rawIO) write(b []byte) error {
	r.one[0] = b
	_, err := rawsock.Write(r.NC, r.Raw, r.one[:], false)
	r.one[0] = nil
	return err
}

// spinFor is how long readSpin polls an empty socket before it waits
// through the runtime's poller: about a client's turnaround after a reply.
const spinFor = 20 * time.Microsecond

// readSpin is Read that, if the socket is empty, polls it for spinFor
// before waiting: a request-reply client answered a moment ago (ovs-ofctl
// add-flows sends its next flow mod as soon as it has the barrier's reply)
// is read without the park and wake-up of the connection's goroutine.
func (r *rawIO) readSpin(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	var deadline time.Time
	err := r.Raw.Read(func(fd uintptr) bool {
		var done bool
		if n, errno, done = rawsock.ReadFD(fd, p); done {
			return true
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(spinFor)
			for time.Now().Before(deadline) {
				if n, errno, done = rawsock.ReadFD(fd, p); done {
					return true
				}
			}
		}
		return false
	})
	return rawsock.ReadResult(n, errno, err, r.NC)
}
