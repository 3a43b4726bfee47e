package daemon

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// monitoredEnv marks a daemon started by a --monitor process, so that it
// serves instead of monitoring in turn.
const monitoredEnv = "GOVS_DAEMON_MONITORED"

// restartInterval is the least time between two restarts of a crashing
// daemon, as in OVS's daemon_monitor.
const restartInterval = 10 * time.Second

// takeMonitored reports whether this process was started by a monitor, and
// removes the marker so that its own children do not see it.
func takeMonitored() bool {
	_, ok := os.LookupEnv(monitoredEnv)
	os.Unsetenv(monitoredEnv)
	return ok
}

// crashSignals are the signals after which the monitor restarts the daemon
// (OVS's should_restart); a daemon that dumped core is restarted too. Go
// panics count: the monitor starts the daemon with GOTRACEBACK=crash, which
// makes a fatal panic abort with SIGABRT.
var crashSignals = []syscall.Signal{syscall.SIGABRT, syscall.SIGALRM, syscall.SIGBUS, syscall.SIGFPE,
	syscall.SIGILL, syscall.SIGPIPE, syscall.SIGSEGV, syscall.SIGXCPU, syscall.SIGXFSZ}

func isCrash(ws syscall.WaitStatus) bool {
	if !ws.Signaled() {
		return false
	}
	if ws.CoreDump() {
		return true
	}
	for _, s := range crashSignals {
		if ws.Signal() == s {
			return true
		}
	}
	return false
}

// statusMessage describes how a process ended, in OVS's process_status_msg
// words ("killed (Aborted), core dumped", "exit status 1").
func statusMessage(ws syscall.WaitStatus) string {
	switch {
	case ws.Exited():
		return fmt.Sprintf("exit status %d", ws.ExitStatus())
	case ws.Signaled():
		s := fmt.Sprintf("killed (%s)", signalName(ws.Signal()))
		if ws.CoreDump() {
			s += ", core dumped"
		}
		return s
	}
	return fmt.Sprintf("terminated abnormally (%x)", uint32(ws))
}

// runMonitor is the --monitor process (OVS's daemon_monitor): it starts the
// daemon as a child, waits until the child is ready, reports readiness
// upstream (to a --detach parent, then detaches itself), and restarts the
// child whenever it crashes, at most once per restartInterval. When the
// child exits otherwise, the monitor exits with its status. It never
// returns.
func runMonitor(program string, opts *Options, log *Logger, upstream *os.File, cred *syscall.Credential, caps []uintptr) {
	log.SetSubprogram("monitor")
	mod := log.Module("daemon_unix")
	var lastRestart time.Time
	crashes := 0
	for first := true; ; first = false {
		cmd, ready, err := startMonitored(cred, caps)
		if err != nil {
			mod.Errorf("could not start daemon: %v", err)
			fatalf(program, "--monitor: could not start daemon: %v", err)
		}
		if ready && upstream != nil {
			if err := completeDetach(upstream, opts.NoChdir, opts.SaveFDs); err != nil {
				mod.Warnf("completing detach: %v", err)
			}
			upstream = nil
			log.SetConsoleOff()
		}
		if ready && log.LogFileName() != "" {
			// As OVS's monitor: the log file stays free for logrotate
			// while the daemon runs; it is reopened to report a crash.
			log.self.Infof("closing log file")
			log.CloseLogFile()
		}
		err = cmd.Wait()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		msg := fmt.Sprintf("pid %d died, %s", cmd.Process.Pid, statusMessage(ws))
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			mod.Errorf("waiting for pid %d: %v", cmd.Process.Pid, err)
		}
		if log.LogFileName() != "" {
			log.Reopen()
		}
		if (first && !ready) || !isCrash(ws) {
			mod.Infof("%s, exiting", msg)
			code := ws.ExitStatus()
			if ws.Signaled() || (code == 0 && !ready) {
				code = 1
			}
			os.Exit(code)
		}
		if wait := restartInterval - time.Since(lastRestart); wait > 0 {
			mod.Warnf("%s, waiting until 10 seconds since last restart", msg)
			time.Sleep(wait) // the monitor has nothing else to do
		}
		lastRestart = time.Now()
		crashes++
		mod.Errorf("%d crashes: %s, restarting", crashes, msg)
	}
}

// startMonitored starts this program again as the monitored daemon and
// waits until it is ready (true) or has died (false).
func startMonitored(cred *syscall.Credential, caps []uintptr) (*exec.Cmd, bool, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, false, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, false, err
	}
	defer r.Close()
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Env = append(os.Environ(), readyFDEnv+"=3", monitoredEnv+"=1")
	if _, ok := os.LookupEnv("GOTRACEBACK"); !ok {
		cmd.Env = append(cmd.Env, "GOTRACEBACK=crash")
	}
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = userAttr(cred, caps)
	err = cmd.Start()
	w.Close()
	if err != nil {
		return nil, false, err
	}
	var b [1]byte
	n, _ := r.Read(b[:])
	return cmd, n == 1, nil
}

// userAttr returns the attributes that start a child as cred, keeping caps
// (CAP_* numbers) as ambient capabilities, or nil to start it as this
// process.
func userAttr(cred *syscall.Credential, caps []uintptr) *syscall.SysProcAttr {
	if cred == nil {
		return nil
	}
	return &syscall.SysProcAttr{Credential: cred, AmbientCaps: caps}
}

// resolveUser parses --user's "USER[:GROUP]" as OVS does. It returns nil
// when the process already runs as that user and group, so nothing needs
// to change; only root may change to another user. The supplementary
// groups are the user's own (the group's alone when GROUP is given).
func resolveUser(spec string) (*syscall.Credential, error) {
	if spec == "" {
		return nil, nil
	}
	name, group, hasGroup := strings.Cut(spec, ":")
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%s: invalid user name", spec)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	var groups []uint32
	if hasGroup {
		g, err := user.LookupGroup(group)
		if err != nil {
			return nil, fmt.Errorf("%s: invalid group name", spec)
		}
		gid, _ = strconv.ParseUint(g.Gid, 10, 32)
		groups = []uint32{uint32(gid)}
	} else if ids, err := u.GroupIds(); err == nil {
		for _, id := range ids {
			if n, err := strconv.ParseUint(id, 10, 32); err == nil {
				groups = append(groups, uint32(n))
			}
		}
	}
	if uint64(os.Getuid()) == uid && uint64(os.Getgid()) == gid {
		return nil, nil
	}
	if os.Getuid() != 0 {
		return nil, fmt.Errorf("%s: only root can use --user option", spec)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}, nil
}
