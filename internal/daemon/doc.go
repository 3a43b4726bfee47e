// Package daemon owns the plumbing that ovsdb-server and ovs-vswitchd share
// and that OVS's own tools depend on:
//
//   - OVS-style command-line parsing of the common daemon and logging options
//     (ParseFlags): --detach, --pidfile[=FILE], --log-file[=FILE], -vSPEC, ...
//   - vlog-compatible logging (Logger, ModuleLogger, RateLimit): per-module,
//     per-destination levels, the "2026-11-29T20:01:50.240Z|00006|module|INFO|text"
//     line format, and the vlog/* unixctl commands.
//   - The unixctl control socket (UnixctlServer, UnixctlCall), wire-compatible
//     with Debian's /usr/bin/ovs-appctl.
//   - Pidfiles held with a POSIX fcntl(F_SETLK) write lock, which is what
//     "ovs-appctl -t PROGRAM" checks before trusting the pid in the file.
//   - --detach by re-executing the program (Go cannot fork), with the parent
//     exiting only once the child calls Daemon.Ready.
//
// A daemon's main uses it like this:
//
//	opts, args, err := daemon.ParseFlags(program, os.Args[1:], extraFlags...)
//	// handle err (print "program: err", exit 1), opts.Help, opts.Version
//	log := daemon.NewLogger(os.Stderr)
//	mod := log.Module("ovsdb_server") // register every module before Start
//	d, err := daemon.Start(program, version, opts, log) // --detach parent exits in here
//	d.Unixctl.Register("exit", "", 0, 0, ...)
//	d.HandleSignals(nil)
//	// ... start serving ...
//	d.Ready()
//	// ... wait for exit ...
//	d.Exit(0)
//
// Nothing here has global state: every Logger and Daemon is independent.
package daemon
