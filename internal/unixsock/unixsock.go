// Package unixsock opens listening unix sockets with a fixed mode.
package unixsock

import (
	"context"
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Listen listens on path with the socket file's mode set to perm whatever
// the umask, replacing a stale socket file (but nothing else). The file is
// removed when the listener is closed.
//
// The mode is set on the socket before bind(2): Linux creates the file with
// the socket inode's mode less the umask, so the file is never more open
// than perm, not even between bind and the chmod that follows (which only
// undoes a stricter umask). Linux limits socket paths to 107 bytes.
func Listen(path string, perm os.FileMode) (*net.UnixListener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s: exists and is not a socket", path)
		}
		os.Remove(path)
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
	ln, err := lc.Listen(context.Background(), "unix", path)
	if err != nil {
		return nil, err
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(true)
	if err := os.Chmod(path, perm.Perm()); err != nil {
		ul.Close()
		return nil, fmt.Errorf("%s: chmod: %w", path, err)
	}
	return ul, nil
}
