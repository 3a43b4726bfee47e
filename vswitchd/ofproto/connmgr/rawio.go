package connmgr

import (
	"io"
	"net"
	"syscall"
	"unsafe"
)

// rawIO reads and writes a connection's socket with raw system calls
// (syscall.RawSyscall), which the Go scheduler is not told about. The
// socket does not block: a read or write that would waits in Go's
// network poller, as nc.Read and nc.Write do. A system call announced
// to the scheduler wakes its monitor thread (sysmon) whenever the process
// was idle, and a request-reply client such as ovs-ofctl add-flows (a
// flow mod and a barrier per round trip) leaves the switch idle between
// requests: the monitor's wake-ups and its short sleeps after each were
// 15% of the switch's CPU in a `perf record` of add-flows, each a
// context switch, and with writes that the woken client preempts, the
// monitor also handed the connection's P to another thread and back.
type rawIO struct {
	rc syscall.RawConn
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
	return &rawIO{rc: rc}
}

// Read reads into b as nc.Read.
func (r *rawIO) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n uintptr
	var errno syscall.Errno
	if err := r.rc.Read(func(fd uintptr) bool {
		for {
			n, _, errno = syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch errno {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // the network poller waits
			}
			return true
		}
	}); err != nil {
		return 0, err
	}
	switch {
	case errno != 0:
		return 0, errno
	case n == 0:
		return 0, io.EOF
	}
	return int(n), nil
}

// write writes all of b, as nc.Write.
func (r *rawIO) write(b []byte) error {
	var errno syscall.Errno
	if err := r.rc.Write(func(fd uintptr) bool {
		for len(b) > 0 {
			var n uintptr
			n, _, errno = syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch errno {
			case 0:
				b = b[n:]
			case syscall.EINTR:
			case syscall.EAGAIN:
				errno = 0
				return false // the network poller waits until it may write
			default:
				return true
			}
		}
		return true
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}
