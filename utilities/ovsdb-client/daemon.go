package main

import (
	"os"

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
