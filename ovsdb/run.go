package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/ovsdb/server"
)

// runCommand is --run=COMMAND: the server runs COMMAND with /bin/sh once it
// serves, and exits when COMMAND does: with status 0 if it succeeded, else
// 1 after saying how it ended, as ovsdb-server does.
type runCommand struct {
	cmd string
}

func (r *runCommand) flag() daemon.Flag {
	return daemon.Flag{Long: "run", Arg: daemon.RequiredArg, Set: func(v string) error { r.cmd = v; return nil }}
}

// start runs the command; done gets the server's exit status when it ends.
func (r *runCommand) start(done func(code int)) error {
	if r.cmd == "" {
		return nil
	}
	c := exec.Command("/bin/sh", "-c", r.cmd)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := c.Start(); err != nil {
		return fmt.Errorf("%s: process failed to start (%v)", r.cmd, err)
	}
	go func() {
		err := c.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			done(0)
			return
		}
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			sig := ws.Signal()
			fmt.Fprintf(os.Stderr, "%s: %s: child exited, killed (%s)\n", program, r.cmd, signalText(sig))
		} else {
			fmt.Fprintf(os.Stderr, "%s: %s: child exited, exit status %d\n", program, r.cmd, ws.ExitStatus())
		}
		done(1)
	}()
	return nil
}

// signalText is strsignal's name for a signal ("Killed" for SIGKILL).
func signalText(s syscall.Signal) string {
	t := s.String()
	if t == "" {
		return fmt.Sprintf("signal %d", int(s))
	}
	return string(t[0]-'a'+'A') + t[1:]
}

// unsupportedFlags are ovsdb-server 3.1 options govs does not honour: each
// is refused by name rather than ignored.
func unsupportedFlags() []daemon.Flag {
	refuse := func(name string) func(string) error {
		return func(string) error { return fmt.Errorf("--%s is not supported by govs' ovsdb-server", name) }
	}
	var fs []daemon.Flag
	for _, n := range []string{"record", "replay"} {
		fs = append(fs, daemon.Flag{Long: n, Arg: daemon.OptionalArg, Set: refuse(n)})
	}
	return fs
}

// registerDBCommands registers add-db, remove-db, tlog-set, tlog-list and
// disable-monitor-cond.
func registerDBCommands(u *daemon.UnixctlServer, srv *server.Server) {
	u.Register("ovsdb-server/add-db", "DB", 1, 1, func(args []string) (string, error) {
		return "", srv.AddDatabaseFile(args[0])
	})
	u.Register("ovsdb-server/remove-db", "DB", 1, 1, func(args []string) (string, error) {
		return "", srv.RemoveDatabase(args[0])
	})
	u.Register("ovsdb-server/tlog-set", "DB:TABLE on|off", 2, 2, func(args []string) (string, error) {
		return "", srv.SetTxnLog(args[0], args[1])
	})
	u.Register("ovsdb-server/tlog-list", "", 0, 0, func([]string) (string, error) {
		return srv.TxnLogList(), nil
	})
	u.Register("ovsdb-server/disable-monitor-cond", "", 0, 0, func([]string) (string, error) {
		srv.DisableMonitorCond()
		return "", nil
	})
}

// registerRefusedCommands registers the commands of Debian's ovsdb-server
// 3.1 that govs does not have, each refused by name: govs' ovsdb-server
// keeps no coverage counters.
func registerRefusedCommands(u *daemon.UnixctlServer) {
	for _, c := range []struct {
		name, usage string
		min, max    int
	}{
		{"coverage/show", "", 0, 0},
		{"coverage/read-counter", "COUNTER", 1, 1},
	} {
		u.Register(c.name, c.usage, c.min, c.max, func([]string) (string, error) {
			return "", fmt.Errorf("%s is not supported by govs' ovsdb-server", c.name)
		})
	}
}
