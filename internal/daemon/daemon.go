package daemon

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Daemon is a started daemon: its options, logger, pidfile and unixctl
// server.
type Daemon struct {
	Program string
	Version string
	Options *Options
	Log     *Logger
	Unixctl *UnixctlServer // nil with --unixctl=none

	pidfile   *Pidfile
	ready     *os.File // readiness pipe of a detached or monitored child, until Ready
	detach    bool     // --detach: Ready detaches (chdir, stdio to /dev/null)
	mod       *ModuleLogger
	readyOnce sync.Once
	closeOnce sync.Once
	mu        sync.Mutex
	atClose   []func() // AtClose's functions
}

// Start sets the process up as opts says, in OVS's order:
//
//  1. With --detach, the calling process re-executes itself and exits inside
//     Start once the child calls Ready (status 0) or dies (non-zero). So call
//     Start before anything with side effects, and register the daemon's log
//     modules on log before it. With --monitor, the (detached) process then
//     becomes the monitor: it never returns from Start, but runs the daemon
//     as its child and restarts it after a crash (see runMonitor). --user
//     applies to the first re-executed process.
//  2. Applies the -v specs, then opens --log-file (a failure is logged as a
//     warning, like OVS, and logging to the file is retried on vlog/reopen).
//  3. Creates the rundir, then the locked pidfile if --pidfile was given.
//  4. Listens on the unixctl socket, by default <rundir>/<program>.<pid>.ctl.
//
// A nil log means NewLogger(os.Stderr). Errors are meant to be printed as
// "PROGRAM: ERROR" before exiting 1.
func Start(program, version string, opts *Options, log *Logger) (*Daemon, error) {
	if opts == nil {
		opts = &Options{Rundir: Rundir(), Logdir: Logdir()}
	}
	if log == nil {
		log = NewLogger(os.Stderr)
	}
	d := &Daemon{Program: program, Version: version, Options: opts, Log: log,
		mod: log.Module("daemon_unix")}
	monitored := takeMonitored()
	if opts.Detach || monitored {
		d.ready = takeReadyPipe()
	}
	cred, err := resolveUser(opts.User)
	if err != nil {
		return nil, err
	}
	if opts.Detach && d.ready == nil {
		detachParent(program, cred, opts.KeepCaps)
	}
	if opts.Monitor && !monitored {
		if err := d.applyLogOptions(); err != nil {
			return nil, err
		}
		runMonitor(program, opts, log, d.ready, cred, opts.KeepCaps)
	}
	if cred != nil {
		// Go cannot change the user of a running process with its
		// capabilities kept; the re-executed child of --detach or
		// --monitor is started as the user instead.
		return nil, fmt.Errorf("--user %s: changing user needs --detach or --monitor", opts.User)
	}
	d.detach = opts.Detach
	if err := d.applyLogOptions(); err != nil {
		return nil, err
	}
	rundir := opts.Rundir
	if rundir == "" {
		rundir = Rundir()
	}
	if err := os.MkdirAll(rundir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", rundir, errnoOf(err))
	}
	if opts.Pidfile != "" {
		p, err := CreatePidfile(opts.Pidfile, opts.OverwritePidfile)
		if err != nil {
			return nil, err
		}
		d.pidfile = p
	}
	if opts.Unixctl != "none" {
		path := opts.Unixctl
		if path == "" {
			path = filepath.Join(rundir, fmt.Sprintf("%s.%d.ctl", program, os.Getpid()))
		}
		s, err := ListenUnixctl(path, program, version, log)
		if err != nil {
			d.pidfile.Remove()
			return nil, err
		}
		d.Unixctl = s
	}
	return d, nil
}

// applyLogOptions applies the -v specs, then opens --log-file (a failure is
// logged as a warning, like OVS).
func (d *Daemon) applyLogOptions() error {
	d.Log.SetProgram(d.Program)
	if d.Options.SyslogMethod != "" {
		if err := d.Log.SetSyslogMethod(d.Options.SyslogMethod); err != nil {
			return err
		}
	}
	if d.Options.SyslogTarget != "" {
		if err := d.Log.SetSyslogTarget(d.Options.SyslogTarget); err != nil {
			d.Log.self.Warnf("%v", err)
		}
	}
	for _, spec := range d.Options.Verbose {
		if err := d.Log.Set(spec); err != nil {
			return fmt.Errorf("processing \"%s\": %v", spec, err)
		}
	}
	if d.Options.LogFile != "" {
		if err := d.Log.SetLogFile(d.Options.LogFile); err != nil {
			d.Log.self.Warnf("%v", err)
		}
	}
	return nil
}

// Ready reports that the daemon is up (e.g. listening). For a --detach
// child, it lets the waiting parent exit 0, chdirs to "/" (unless
// --no-chdir), points stdin/stdout/stderr at /dev/null and turns console
// logging off, as OVS's daemonize_complete does. Otherwise it does nothing.
// Only the first call has an effect.
func (d *Daemon) Ready() {
	d.readyOnce.Do(func() {
		if d.ready == nil {
			return
		}
		if !d.detach {
			// Started by a --monitor without --detach: only report.
			d.ready.Write([]byte{'R'})
			d.ready.Close()
			d.ready = nil
			return
		}
		err := completeDetach(d.ready, d.Options.NoChdir, d.Options.SaveFDs)
		d.ready = nil
		d.Log.SetConsoleOff()
		if err != nil {
			d.mod.Warnf("completing detach: %v", err)
		}
	})
}

// Close is the clean shutdown sequence: it closes the unixctl server
// (removing its socket, after in-flight replies are sent), removes the
// pidfile and closes the log file. It is idempotent. Do not call it from a
// unixctl handler (see UnixctlServer.Close).
func (d *Daemon) Close() {
	d.closeOnce.Do(func() {
		d.mu.Lock()
		fns := d.atClose
		d.mu.Unlock()
		for _, fn := range fns {
			fn()
		}
		if d.Unixctl != nil {
			d.Unixctl.Close()
		}
		if err := d.pidfile.Remove(); err != nil {
			d.mod.Warnf("%v", err)
		}
		d.Log.Close()
	})
}

// AtClose has Close, and so a fatal SIGTERM or SIGINT, run fn first: for
// files the daemon owns besides its own pidfile and control socket (the
// embedded database's), which must not outlive it. fn must be idempotent
// and quick.
func (d *Daemon) AtClose(fn func()) {
	d.mu.Lock()
	d.atClose = append(d.atClose, fn)
	d.mu.Unlock()
}

// Exit runs Close and exits with status code.
func (d *Daemon) Exit(code int) {
	d.Close()
	os.Exit(code)
}

// Pidfile returns the pidfile, or nil without --pidfile.
func (d *Daemon) Pidfile() *Pidfile { return d.pidfile }

// HandleSignals arranges for SIGTERM and SIGINT to shut the daemon down. It
// logs "terminating with signal N (NAME)" at WARN like OVS, then calls fn
// (in its own goroutine) if fn is not nil; otherwise it runs Close and
// re-raises the signal, so that the process dies of it as OVS daemons do.
func (d *Daemon) HandleSignals(fn func(os.Signal)) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for sig := range ch {
			if s, ok := sig.(syscall.Signal); ok {
				d.Log.Module("fatal_signal").Warnf("terminating with signal %d (%s)", int(s), signalName(s))
			}
			if fn != nil {
				fn(sig)
				continue
			}
			d.Close()
			signal.Reset(sig)
			if s, ok := sig.(syscall.Signal); ok {
				// Signal this thread, so the signal is taken when tgkill returns.
				runtime.LockOSThread()
				unix.Tgkill(os.Getpid(), unix.Gettid(), s)
				time.Sleep(time.Second)
			}
			os.Exit(1) // not reached unless the signal is blocked
		}
	}()
}

func signalName(s syscall.Signal) string {
	n := s.String()
	if n == "" {
		return "unknown"
	}
	// Go's names are lower-case ("terminated"); OVS prints strsignal's.
	return strings.ToUpper(n[:1]) + n[1:]
}
