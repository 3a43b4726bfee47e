// Package unixsock opens listening unix sockets with a fixed mode.
package unixsock

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxPath is the longest socket path Linux binds (sun_path less its NUL).
const maxPath = 107

var tmpSeq atomic.Uint64

// Listener is a listening unix socket whose Close removes its socket
// file, unless another listener has replaced the file since.
type Listener struct {
	*net.UnixListener
	path string
	fi   os.FileInfo
}

// Addr returns the socket's path, where clients connect.
func (l *Listener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

// Close removes the socket file and closes the listener: in that order,
// so that a client finds either no file or a listening socket.
func (l *Listener) Close() error {
	if fi, err := os.Lstat(l.path); err == nil && os.SameFile(fi, l.fi) {
		os.Remove(l.path)
	}
	return l.UnixListener.Close()
}

// Listen listens on path with the socket file's mode set to perm whatever
// the umask, replacing a stale socket file (but nothing else). The file is
// removed when the listener is closed. Linux limits socket paths to 107
// bytes.
//
// The file appears at path only once the socket listens: it is bound under
// a temporary name in the same directory and renamed, so a client that
// finds the file is never refused (a socket between bind(2) and listen(2)
// refuses connections, and ovn-controller connects to a bridge's management
// socket the moment it has asked for the bridge). When path is too long
// for a temporary name beside it, the socket is bound at path directly.
//
// The mode is set on the socket before bind(2): Linux creates the file with
// the socket inode's mode less the umask, so the file is never more open
// than perm, not even between bind and the chmod that follows (which only
// undoes a stricter umask).
func Listen(path string, perm os.FileMode) (*Listener, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket == 0 {
		return nil, fmt.Errorf("%s: exists and is not a socket", path)
	}
	bind := filepath.Join(filepath.Dir(path), fmt.Sprintf(".%d.%d.sock", os.Getpid(), tmpSeq.Add(1)))
	if len(bind) > maxPath {
		bind = path
	}
	if bind == path {
		os.Remove(path)
	} else {
		os.Remove(bind)
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = unix.Fchmod(int(fd), uint32(perm.Perm()))
		}); cerr != nil {
			return cerr
		}
		if err != nil {
			return fmt.Errorf("fchmod: %w", err)
		}
		return nil
	}}
	ln, err := lc.Listen(context.Background(), "unix", bind)
	if err != nil {
		if bind != path {
			// Report the path asked for, not the temporary name.
			err = fmt.Errorf("listen unix %s: %w", path, unwrapOp(err))
		}
		return nil, err
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	fail := func(err error) (*Listener, error) {
		ul.Close()
		os.Remove(bind)
		return nil, err
	}
	if err := os.Chmod(bind, perm.Perm()); err != nil {
		return fail(fmt.Errorf("%s: chmod: %w", path, err))
	}
	if bind != path {
		if err := os.Rename(bind, path); err != nil {
			return fail(fmt.Errorf("%s: %w", path, err))
		}
	}
	fi, err := os.Lstat(path)
	if err != nil {
		ul.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Listener{UnixListener: ul, path: path, fi: fi}, nil
}

// unwrapOp returns the system error under a net.OpError.
func unwrapOp(err error) error {
	if oe, ok := err.(*net.OpError); ok && oe.Err != nil {
		return oe.Err
	}
	return err
}
