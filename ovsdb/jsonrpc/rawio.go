package jsonrpc

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// Reads and writes of a socket's non-blocking descriptor as raw system
// calls (syscall.RawSyscall), which return at once, data or EAGAIN: the
// ordinary ones (net.Conn's) tell the Go scheduler that they may block, and
// the first such call after the process was idle wakes the runtime's
// monitor thread (sysmon), which then polls every 20 µs for a millisecond.
// A short-lived client's call (ovn-nbctl's four requests) woke it at every
// request: a futex wake-up and ten sleeps per call, about a fifth of the
// server's CPU for such calls. Waiting for the socket still goes through
// the runtime's poller (syscall.RawConn).

// maxRawWrite bounds one raw write: the kernel copies it while the thread
// holds the scheduler's only P, so a large backlog is written in parts.
const maxRawWrite = 256 << 10

// rawReader reads nc's descriptor with raw system calls.
type rawReader struct {
	nc  net.Conn
	raw syscall.RawConn
}

func (r *rawReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var rd rawRead
	return rd.result(r.raw.Read(rd.fn(p)), r.nc)
}

// rawRead is one read(2) of a non-blocking socket, made by the function
// fn returns for a RawConn's Read (or a PollConn's wait): it reports the
// socket empty (wait, then call again) or the read done.
type rawRead struct {
	n     int
	errno syscall.Errno
}

func (rd *rawRead) fn(p []byte) func(fd uintptr) bool {
	return func(fd uintptr) bool {
		for {
			k, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			rd.n, rd.errno = int(k), e
			return true
		}
	}
}

// result is Read's result for the read, given the wait's error: the
// bytes read, io.EOF for none, or the error as net reports it.
func (rd *rawRead) result(err error, nc net.Conn) (int, error) {
	if err == nil && rd.errno != 0 {
		err = os.NewSyscallError("read", rd.errno)
	}
	if err != nil {
		return 0, opError("read", nc, err)
	}
	if rd.n == 0 {
		return 0, io.EOF
	}
	return rd.n, nil
}

// opError wraps err as net.Conn's methods do.
func opError(op string, nc net.Conn, err error) error {
	if _, ok := err.(*net.OpError); ok {
		return err
	}
	return &net.OpError{Op: op, Net: nc.LocalAddr().Network(), Source: nc.LocalAddr(), Addr: nc.RemoteAddr(), Err: err}
}

// rawWrite writes bufs to raw's descriptor with raw system calls, waiting
// for the socket while it is full unless nowait, and returns the bytes
// written. With nowait it stops at a full socket with no error.
func rawWrite(nc net.Conn, raw syscall.RawConn, bufs [][]byte, nowait bool) (int, error) {
	var iov []syscall.Iovec
	var small [8]syscall.Iovec
	total := 0
	var errno syscall.Errno
	err := raw.Write(func(fd uintptr) bool {
		for len(bufs) > 0 {
			iov = iov[:0]
			if iov == nil {
				iov = small[:0]
			}
			size := 0
			for _, b := range bufs {
				if len(b) == 0 {
					continue
				}
				if size+len(b) > maxRawWrite {
					b = b[:max(maxRawWrite-size, 0)]
				}
				if len(b) == 0 || len(iov) == 1024 {
					break
				}
				v := syscall.Iovec{Base: &b[0]}
				v.SetLen(len(b))
				iov = append(iov, v)
				size += len(b)
			}
			if len(iov) == 0 {
				bufs = nil
				break
			}
			k, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
			switch e {
			case 0:
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return nowait
			default:
				errno = e
				return true
			}
			n := int(k)
			total += n
			for n > 0 && len(bufs) > 0 {
				if n >= len(bufs[0]) {
					n -= len(bufs[0])
					bufs = bufs[1:]
				} else {
					bufs[0] = bufs[0][n:]
					n = 0
				}
			}
			for len(bufs) > 0 && len(bufs[0]) == 0 {
				bufs = bufs[1:]
			}
		}
		return true
	})
	if err == nil && errno != 0 {
		err = os.NewSyscallError("writev", errno)
	}
	if err != nil {
		return total, opError("write", nc, err)
	}
	return total, nil
}
