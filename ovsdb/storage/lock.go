package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// OVS (lib/lockfile.c) never locks the database file itself. It takes a POSIX
// fcntl(F_SETLK) write lock over the whole of "<dir>/.<name>.~lock~" (created
// with mode 0600 and never removed), where <dir>/<name> is the database path
// with symlinks followed. Because fcntl locks belong to a process, two opens in
// one process would not conflict, so like OVS we also keep a registry of the
// lock files this process holds. Caveat of POSIX locks: closing any descriptor
// of a held lock file in this process releases the lock, so nothing else may
// open it.

type fileID struct{ dev, ino uint64 }

var held = struct {
	sync.Mutex
	ids map[fileID]bool
}{ids: make(map[fileID]bool)}

type lockFile struct {
	f       *os.File
	id      fileID
	name    string
	created bool // lock took the file into existence
}

// lockName returns the lock file path OVS uses for the database at path.
func lockName(path string) string {
	dir, base := filepath.Split(followSymlinks(path))
	return dir + "." + base + ".~lock~"
}

// followSymlinks resolves path as OVS's follow_symlinks does: through up to 10
// levels of symlinks, accepting a dangling final link.
func followSymlinks(path string) string {
	for range 10 {
		target, err := os.Readlink(path)
		if err != nil {
			return path
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = target
	}
	return path
}

func idOf(fi os.FileInfo) fileID {
	st := fi.Sys().(*syscall.Stat_t)
	return fileID{uint64(st.Dev), uint64(st.Ino)}
}

// lock takes the OVS lock for the database at dbPath.
func lock(dbPath string) (*lockFile, error) {
	name := lockName(dbPath)
	held.Lock()
	defer held.Unlock()

	// Check before opening: closing a second descriptor would drop our lock.
	if fi, err := os.Stat(name); err == nil && held.ids[idOf(fi)] {
		return nil, fmt.Errorf("%s: database is in use: %s is locked by this process", dbPath, name)
	}
	created := true
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		created = false
		f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: cannot open lock file: %w", dbPath, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", dbPath, err)
	}
	fd := f.Fd()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart}
	if err := syscall.FcntlFlock(fd, syscall.F_SETLK, &lk); err != nil {
		defer f.Close()
		if created {
			os.Remove(name)
		}
		if !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EACCES) {
			return nil, fmt.Errorf("%s: cannot lock %s: %w", dbPath, name, err)
		}
		holder := "another process"
		q := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart}
		if syscall.FcntlFlock(fd, syscall.F_GETLK, &q) == nil && q.Type != syscall.F_UNLCK && q.Pid > 0 {
			holder = fmt.Sprintf("pid %d", q.Pid)
		}
		return nil, fmt.Errorf("%s: database is in use: %s is locked by %s", dbPath, name, holder)
	}
	id := idOf(fi)
	held.ids[id] = true
	return &lockFile{f: f, id: id, name: name, created: created}, nil
}

// discard releases the lock and, if taking it created the lock file,
// removes the file: a failed create leaves nothing behind.
func (l *lockFile) discard() {
	if l.created {
		os.Remove(l.name)
	}
	l.unlock()
}

func (l *lockFile) unlock() {
	held.Lock()
	defer held.Unlock()
	delete(held.ids, l.id)
	l.f.Close() // releases the fcntl lock
}
