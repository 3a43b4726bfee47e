package daemon

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Pidfile is a pidfile holding this process's pid, write-locked with a
// classic POSIX fcntl(F_SETLK) lock for as long as the process runs.
// "ovs-appctl -t PROGRAM" only trusts a pidfile whose lock F_GETLK reports
// as held by the pid written in it; flock and OFD locks fail that check.
//
// POSIX locks belong to the process and are dropped when it closes any
// descriptor of the file, so this process must not open the pidfile
// otherwise (in particular, never call ReadPidfile on it), and the Pidfile
// must stay reachable until Remove.
type Pidfile struct {
	path string
	f    *os.File
}

// CreatePidfile writes and locks the pidfile at path, as OVS's make_pidfile
// does: it locks "PATH.tmp" (which serializes concurrent starts), checks
// that no live process holds PATH (unless overwrite), writes "PID\n" and
// renames the temporary file to PATH.
func CreatePidfile(path string, overwrite bool) (*Pidfile, error) {
	tmp := path + ".tmp"
	if overwrite {
		tmp = fmt.Sprintf("%s.tmp%d", path, os.Getpid())
	}
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: create failed: %w", tmp, errnoOf(err))
	}
	if err := lockFile(f, unix.F_SETLK); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: fcntl(F_SETLK) failed: %w", tmp, err)
	}
	fail := func(err error) (*Pidfile, error) {
		os.Remove(tmp)
		f.Close()
		return nil, err
	}
	if !overwrite {
		pid, err := readPidfile(path, true)
		switch {
		case err == nil:
			return fail(fmt.Errorf("%s: already running as pid %d, aborting", path, pid))
		case !errors.Is(err, os.ErrNotExist):
			return fail(fmt.Errorf("%s: pidfile check failed (%w), aborting", path, err))
		}
	}
	if err := f.Truncate(0); err != nil {
		return fail(fmt.Errorf("%s: truncate failed: %w", tmp, errnoOf(err)))
	}
	if _, err := fmt.Fprintf(f, "%d\n", os.Getpid()); err != nil {
		return fail(fmt.Errorf("%s: write failed: %w", tmp, errnoOf(err)))
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(fmt.Errorf("failed to rename %q to %q: %w", tmp, path, errnoOf(err)))
	}
	return &Pidfile{path: path, f: f}, nil
}

// Path returns the pidfile's path.
func (p *Pidfile) Path() string { return p.path }

// Remove deletes the pidfile and releases its lock. It is idempotent.
func (p *Pidfile) Remove() error {
	if p == nil || p.f == nil {
		return nil
	}
	err := os.Remove(p.path)
	p.f.Close()
	p.f = nil
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	return err
}

// ReadPidfile returns the pid of the live process that holds the pidfile at
// path, checked like OVS's read_pidfile: the file must be write-locked
// (F_GETLK) by the pid it contains. An unlocked (stale) pidfile gives
// ESRCH, as it does for ovs-appctl. Never use it on a pidfile that this
// process holds: see Pidfile.
func ReadPidfile(path string) (int, error) {
	return readPidfile(path, false)
}

func readPidfile(path string, deleteIfStale bool) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, errnoOf(err)
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil {
		return 0, fmt.Errorf("fcntl(F_GETLK): %w", err)
	}
	if lk.Type == unix.F_UNLCK {
		if deleteIfStale {
			// Like OVS, delete it only if it is still the file we checked.
			if cur, err1 := os.Stat(path); err1 == nil {
				if st, err2 := f.Stat(); err2 == nil && os.SameFile(cur, st) {
					os.Remove(path)
				}
			}
			return 0, os.ErrNotExist
		}
		return 0, unix.ESRCH
	}
	buf := make([]byte, 32)
	n, _ := f.Read(buf)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("%s: parse failed", path)
	}
	if int(lk.Pid) != pid {
		return 0, fmt.Errorf("%s: locked by pid %d but contains pid %d", path, lk.Pid, pid)
	}
	return pid, nil
}

func lockFile(f *os.File, cmd int) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	return unix.FcntlFlock(f.Fd(), cmd, &lk)
}

// errnoOf strips the *os.PathError wrapping of err, keeping the errno.
func errnoOf(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Strerror returns err's text as C's strerror writes it ("Operation not
// permitted"; Go's errno texts are lower-case).
func Strerror(err error) string {
	s := errnoOf(err).Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
