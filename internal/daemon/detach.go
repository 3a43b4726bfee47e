package daemon

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// readyFDEnv marks the re-executed child of --detach and names the
// descriptor of the pipe on which it reports readiness.
const readyFDEnv = "GOVS_DAEMON_READY_FD"

// takeReadyPipe returns the readiness pipe if this process is a detached
// child, and removes the marker so that its own children do not see it.
func takeReadyPipe() *os.File {
	v, ok := os.LookupEnv(readyFDEnv)
	if !ok {
		return nil
	}
	os.Unsetenv(readyFDEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil
	}
	return os.NewFile(uintptr(fd), "ready-pipe")
}

// detachParent re-executes this program as a child in a new session (as
// cred, keeping caps, when cred is not nil) and
// exits once the child is ready (status 0) or has died (the child's status,
// at least 1). It never returns.
//
// The child gets the same arguments, stdin from /dev/null and the parent's
// stdout and stderr, so its startup errors reach the user; Daemon.Ready
// redirects them to /dev/null.
func detachParent(program string, cred *syscall.Credential, caps []uintptr) {
	exe, err := os.Executable()
	if err != nil {
		fatalf(program, "--detach: cannot find own executable: %v", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		fatalf(program, "--detach: pipe: %v", err)
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Env = append(os.Environ(), readyFDEnv+"=3") // ExtraFiles[0] is fd 3
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = userAttr(cred, caps)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
	if err := cmd.Start(); err != nil {
		fatalf(program, "--detach: could not start child: %v", err)
	}
	w.Close()
	var b [1]byte
	if n, _ := r.Read(b[:]); n == 1 {
		os.Exit(0)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() > 0 {
		os.Exit(ee.ExitCode())
	}
	fatalf(program, "fork child died before signaling startup (%v)", cmd.ProcessState)
}

func fatalf(program, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s: %s\n", program, fmt.Sprintf(format, args...))
	os.Exit(1)
}

// completeDetach tells the parent that the child is ready, then (unless
// noChdir) changes to "/" and points stdin, stdout and stderr, but those in
// save, at /dev/null.
func completeDetach(ready *os.File, noChdir bool, save []int) error {
	_, werr := ready.Write([]byte{'R'})
	ready.Close()
	if !noChdir {
		if err := os.Chdir("/"); err != nil {
			return err
		}
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer null.Close()
	for fd := 0; fd <= 2; fd++ {
		if slices.Contains(save, fd) {
			continue
		}
		if err := unix.Dup3(int(null.Fd()), fd, 0); err != nil {
			return err
		}
	}
	return werr
}
