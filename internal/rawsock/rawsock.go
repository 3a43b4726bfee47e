// Package rawsock reads and writes sockets' non-blocking descriptors with
// raw system calls, waiting for them in the Go runtime's poller.
package rawsock

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

// MaxWrite bounds one raw write: the kernel copies it while the thread
// holds the scheduler's only P, so a large backlog is written in parts.
const MaxWrite = 256 << 10

// Reader reads nc's descriptor (raw) with raw system calls, as nc.Read.
type Reader struct {
	NC  net.Conn
	Raw syscall.RawConn
}

func (r *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var rd Read
	return rd.Result(r.Raw.Read(rd.Fn(p)), r.NC)
}

// Read is one read(2) of a non-blocking socket, made by the function
// Fn returns for a RawConn's Read (or a PollConn's wait): it reports the
// socket empty (wait, then call again) or the read done.
type Read struct {
	n     int
	errno syscall.Errno
}

func (rd *Read) Fn(p []byte) func(fd uintptr) bool {
	return func(fd uintptr) bool {
		var done bool
		rd.n, rd.errno, done = ReadFD(fd, p)
		return done
	}
}

// ReadFD is one read(2) of p on the non-blocking socket fd, retried on
// EINTR: done is false when the socket is empty (EAGAIN), else n and
// errno are the read's. For a caller's own closure where Read's would
// escape.
func ReadFD(fd uintptr, p []byte) (n int, errno syscall.Errno, done bool) {
	for {
		k, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, 0, false
		}
		return int(k), e, true
	}
}

// Result is Read's result for the read, given the wait's error: the
// bytes read, io.EOF for none, or the error as net reports it.
func (rd *Read) Result(err error, nc net.Conn) (int, error) {
	return ReadResult(rd.n, rd.errno, err, nc)
}

// ReadResult is Result for a read ReadFD made.
func ReadResult(n int, errno syscall.Errno, err error, nc net.Conn) (int, error) {
	if err == nil && errno != 0 {
		err = os.NewSyscallError("read", errno)
	}
	if err != nil {
		return 0, OpError("read", nc, err)
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// OpError wraps err as net.Conn's methods do.
func OpError(op string, nc net.Conn, err error) error {
	if _, ok := err.(*net.OpError); ok {
		return err
	}
	return &net.OpError{Op: op, Net: nc.LocalAddr().Network(), Source: nc.LocalAddr(), Addr: nc.RemoteAddr(), Err: err}
}

// Write writes bufs to raw's descriptor with raw system calls, waiting
// for the socket while it is full unless nowait, and returns the bytes
// written. With nowait it stops at a full socket with no error.
func Write(nc net.Conn, raw syscall.RawConn, bufs [][]byte, nowait bool) (int, error) {
	var w Writev
	err := raw.Write(func(fd uintptr) bool {
		var e syscall.Errno
		if bufs, e = w.To(fd, bufs); e == syscall.EAGAIN {
			return nowait
		}
		return true
	})
	return w.Result(err, nc)
}

// Writev is a write of buffers to a non-blocking socket with raw writev(2)
// calls, which a RawConn's Write (or a PollConn's wait) repeats while the
// socket is full. Its iovecs are its own: a Writev on the stack writes
// without allocating.
type Writev struct {
	n     int
	errno syscall.Errno
	small [8]syscall.Iovec
}

// To writes bufs to fd until they are written, the socket is full
// (EAGAIN) or an error (kept for Result); it returns what remains and the
// errno that stopped it.
func (w *Writev) To(fd uintptr, bufs [][]byte) ([][]byte, syscall.Errno) {
	iov := w.small[:0]
	for len(bufs) > 0 {
		iov = iov[:0]
		size := 0
		for _, b := range bufs {
			if len(b) == 0 {
				continue
			}
			if size+len(b) > MaxWrite {
				b = b[:max(MaxWrite-size, 0)]
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
			return nil, 0
		}
		k, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
		switch e {
		case 0:
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return bufs, e
		default:
			w.errno = e
			return bufs, e
		}
		n := int(k)
		w.n += n
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
	return bufs, 0
}

// Result is the write's result, given the wait's error: the bytes
// written, and the error as net reports it.
func (w *Writev) Result(err error, nc net.Conn) (int, error) {
	if err == nil && w.errno != 0 {
		err = os.NewSyscallError("writev", w.errno)
	}
	if err != nil {
		return w.n, OpError("write", nc, err)
	}
	return w.n, nil
}
