package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/govs/govs/internal/daemon"
)

// daemonize is OVS's daemonize_start for the commands that run until
// stopped (monitor, monitor-cond, monitor-cond-since, lock, steal,
// unlock): with --detach the process re-executes itself in the
// background and this returns in the child only; the parent exits once
// the child calls Ready, with the child's status if it dies first. It
// writes --pidfile even without --detach. A detached client keeps the
// descriptors in save (its stdout, where it prints) and answers unixctl
// "exit" on <rundir>/ovsdb-client.<pid>.ctl. The result is nil when no
// daemon option was given.
func (c *client) daemonize(save ...int) *daemon.Daemon {
	o := &c.daemonOpts
	if !o.Detach && !o.Monitor && o.Pidfile == "" {
		return nil
	}
	o.SaveFDs = save
	if !o.Detach {
		o.Unixctl = "none"
	}
	d, err := daemon.Start(program, ovsVersion, o, daemon.NewLogger(os.Stderr))
	if err != nil {
		die("%v", err)
	}
	if d.Unixctl != nil {
		exit := make(chan struct{}, 1)
		d.Unixctl.Register("exit", "", 0, 0, func([]string) (string, error) {
			exit <- struct{}{}
			return "", nil
		})
		go func() {
			<-exit
			d.Exit(0)
		}()
	}
	onDie = d.Close
	d.HandleSignals(nil)
	return d
}

// ready is OVS's daemonize_complete: a detached parent may now exit.
func ready(d *daemon.Daemon) {
	if d != nil {
		d.Ready()
	}
}

// blocker holds a detached monitor's processing while unixctl
// "ovsdb-client/block" is in force, as OVS's: what arrives meanwhile waits
// until "ovsdb-client/unblock".
type blocker struct {
	mu      sync.Mutex
	cond    sync.Cond
	blocked bool // guarded by mu
}

// wait returns once the monitor is not blocked.
func (b *blocker) wait() {
	if b == nil {
		return
	}
	b.mu.Lock()
	for b.blocked {
		b.cond.Wait()
	}
	b.mu.Unlock()
}

func (b *blocker) set(blocked bool) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.blocked == blocked {
		if blocked {
			return "already blocking", nil
		}
		return "already unblocked", nil
	}
	b.blocked = blocked
	b.cond.Broadcast()
	return "", nil
}

// monitorCommands registers a detached monitor's unixctl commands:
// ovsdb-client/block, /unblock and /cond_change TABLE COND (which sends
// monitor_cond_change for the monitor, as OVS's, replying with OVS's
// words; a COND that is not JSON is refused, where OVS sends the parse
// error as the condition). It returns nil when there is no unixctl server.
func (c *client) monitorCommands(d *daemon.Daemon) *blocker {
	if d == nil || d.Unixctl == nil {
		return nil
	}
	b := &blocker{}
	b.cond.L = &b.mu
	d.Unixctl.Register("ovsdb-client/block", "", 0, 0, func([]string) (string, error) { return b.set(true) })
	d.Unixctl.Register("ovsdb-client/unblock", "", 0, 0, func([]string) (string, error) { return b.set(false) })
	d.Unixctl.Register("ovsdb-client/cond_change", "TABLE COND", 2, 2, func(args []string) (string, error) {
		if !json.Valid([]byte(args[1])) {
			return "", fmt.Errorf("%s: invalid JSON", args[1])
		}
		reqs := map[string]any{args[0]: []any{map[string]any{"where": json.RawMessage(args[1])}}}
		if _, err := c.conn.Send("monitor_cond_change", []any{nil, nil, reqs}); err != nil {
			return "", err
		}
		return "condition changed", nil
	})
	return b
}
