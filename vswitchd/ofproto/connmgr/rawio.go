package connmgr

import (
	"net"
	"syscall"

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
