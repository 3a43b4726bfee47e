// Command ovsdb-server is govs' OVSDB server, a drop-in for Open vSwitch's:
//
//	ovsdb-server [DATABASE...] --remote=REMOTE... [--pidfile[=FILE]] [--detach]
//	             [--no-chdir] [--log-file[=FILE]] [--unixctl=SOCKET] [-vSPEC]...
//
// Each DATABASE is a database file in OVSDB's standalone format; the
// default is $OVS_DBDIR/conf.db (/etc/openvswitch/conf.db). Unlike
// ovsdb-server, a missing database file is created from the built-in
// Open_vSwitch schema.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/ovsdb/server"
	"github.com/govs/govs/schema"
	"golang.org/x/sys/unix"
)

// gcPercent is the garbage collector's target unless GOGC is set.
const gcPercent = 50

const (
	program = "ovsdb-server"
	version = "3.1.0"
)

func main() {
	// One thread runs Go code, as OVS's ovsdb-server is one thread: the
	// server's work is mostly serialized by the database lock anyway, and
	// with more, requests woke a second thread to run their goroutines
	// (with one, an ovn-nbctl call cost the NB server 27-30% less CPU on
	// 2 cores, tests/bench/ovn.sh).
	// GOMAXPROCS in the environment still decides.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	// Collect at half the default heap growth: the server's live heap is
	// small (an OVN NB of 200 switches, 1-2 MB) and Go's floor of a 4 MB
	// heap goal left the NB server 0.6 MB larger at rest after a burst of
	// calls (tests/bench/ovn.sh), for a collection every 5 or so
	// ovn-nbctl calls instead of every 10. GOGC in the environment still
	// decides.
	// While transactions come fast the server raises it to Go's default
	// (server.Options.GCPercent).
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", program, err)
		os.Exit(1)
	}
}

func dbDir() string {
	if d := os.Getenv("OVS_DBDIR"); d != "" {
		return d
	}
	return "/etc/openvswitch"
}

func usage(rundir string) string {
	return fmt.Sprintf(`%s: Open vSwitch database server
usage: %s [OPTIONS] [DATABASE...]
where each DATABASE is a database file in ovsdb format,
or relay:DB:REMOTE[,REMOTE]... to relay database DB of the server at REMOTE.
The default DATABASE, if none is given, is
%s.

JSON-RPC options (may be specified any number of times):
  --remote=REMOTE         connect or listen to REMOTE

Active JSON-RPC connection methods:
  tcp:HOST:PORT           PORT at remote HOST
  ssl:HOST:PORT           SSL PORT at remote HOST
  unix:FILE               Unix domain socket named FILE
Passive JSON-RPC connection methods:
  ptcp:PORT[:IP]          listen to TCP PORT on IP
  pssl:PORT[:IP]          listen for SSL on PORT on IP
  punix:FILE              listen on Unix domain socket FILE
Remotes from the database:
  db:DB,TABLE,COLUMN      remotes in COLUMN of TABLE (e.g. Open_vSwitch,Open_vSwitch,manager_options)
PKI configuration (required to use SSL; each FILE may be db:DB,TABLE,COLUMN):
  -p, --private-key=FILE  file with private key
  -c, --certificate=FILE  file with certificate for private key
  -C, --ca-cert=FILE      file with peer CA certificate
  --bootstrap-ca-cert=FILE  file with peer CA certificate to read or create
  --peer-ca-cert=FILE     file with extra certificates to send to the peer
  --ssl-protocols=PROTOS  list of SSL protocols to enable
  --ssl-ciphers=CIPHERS   list of SSL ciphers to enable

`, program, program, filepath.Join(dbDir(), "conf.db")) + syncUsage + daemon.Usage(program)
}

func run() error {
	var remotes []string
	var sync syncConfig
	var runCmd runCommand
	var ssl server.SSLOptions
	noColumnDiff := false
	opts, args, err := daemon.ParseFlags(program, os.Args[1:], append(append(append(append(ssl.Flags(), sync.flags()...), runCmd.flag()), unsupportedFlags()...),
		daemon.Flag{Long: "remote", Arg: daemon.RequiredArg, Set: func(v string) error {
			remotes = append(remotes, v)
			return nil
		}},
		daemon.Flag{Long: "disable-file-column-diff", Arg: daemon.NoArg, Set: func(string) error {
			noColumnDiff = true
			return nil
		}},
	)...)
	if err != nil {
		return err
	}
	if opts.Help {
		fmt.Print(usage(opts.Rundir))
		return nil
	}
	if opts.Version {
		fmt.Print(daemon.VersionText(program, version))
		return nil
	}
	for _, r := range remotes {
		if err := server.ValidateRemote(r); err != nil {
			return err
		}
	}
	if err := sync.check(); err != nil {
		return err
	}
	if len(args) == 0 {
		args = []string{filepath.Join(dbDir(), "conf.db")}
	}
	type relayDB struct {
		name    string
		sources []string
	}
	var relays []relayDB
	var files []string
	for _, a := range args {
		if !strings.HasPrefix(a, "relay:") {
			files = append(files, a)
			continue
		}
		name, sources, err := server.ParseRelay(a)
		if err != nil {
			return err
		}
		relays = append(relays, relayDB{name, sources})
	}

	// Registered before daemon.Start so that -v specs apply: every module
	// Debian's ovsdb-server 3.1 has, so that scripts setting levels for
	// them (-vraft:file:dbg) still work, and govs' own.
	log := daemon.NewLogger(os.Stderr)
	daemon.RegisterOVSModules(log, program)
	log.Module("ovsdb_storage")
	opts.KeepCaps = []uintptr{unix.CAP_NET_BIND_SERVICE}
	d, err := daemon.Start(program, version, opts, log)
	if err != nil {
		return err
	}
	mod := log.Module("ovsdb_server")

	srv := server.New(server.Options{
		Log:          func(m string) server.Logger { return log.Module(m) },
		Remotes:      remotes,
		SSL:          ssl,
		NoColumnDiff: noColumnDiff,
		GCPercent:    serverGCPercent(),
	})
	for _, r := range relays {
		srv.AddRelay(r.name, r.sources)
	}
	for _, path := range files {
		abs, _ := filepath.Abs(path)
		if _, err := srv.OpenDatabase(abs, schema.VSwitch); err != nil {
			mod.Errorf("%v", err)
			d.Close()
			return err
		}
	}
	for _, r := range remotes {
		if err := srv.CheckDBRemote(r); err != nil {
			d.Close()
			// ovsdb-server ends this message with a blank line.
			return fmt.Errorf("%w\n", err)
		}
	}
	if err := srv.CheckSSLRefs(); err != nil {
		d.Close()
		return fmt.Errorf("%w\n", err)
	}
	if err := srv.Start(); err != nil {
		// A remote that cannot listen is logged and retried, as in OVS.
		mod.Warnf("%v", err)
	}

	exit := make(chan struct{}, 1)
	if u := d.Unixctl; u != nil {
		srv.RegisterCommands(u, func() {
			select {
			case exit <- struct{}{}:
			default:
			}
		})
		registerSyncCommands(u, srv)
		registerDBCommands(u, srv)
		registerRefusedCommands(u)
	}
	memStop := make(chan struct{})
	defer close(memStop)
	daemon.MemoryMonitor(log, d.Unixctl, srv.MemoryUsage, memStop)
	d.HandleSignals(func(os.Signal) {
		select {
		case exit <- struct{}{}:
		default:
		}
	})
	d.Ready()
	// Replication starts detached, as in OVS: its connection logs go to
	// the log file only. CheckSyncFrom passed, so it cannot fail.
	sync.apply(srv)
	exitCode := 0
	if err := runCmd.start(func(code int) {
		exitCode = code
		exit <- struct{}{}
	}); err != nil {
		srv.Close()
		d.Close()
		return err
	}
	// Logged once detached, as OVS does: only the log file gets it, and
	// scripts that read a detaching server's stderr see nothing.
	mod.Infof("%s", daemon.VersionString(program, version))
	dropStartupPages()
	<-exit
	if err := srv.Close(); err != nil {
		mod.Errorf("%v", err)
	}
	d.Exit(exitCode)
	return nil
}

// serverGCPercent is the GC target the server may raise under load: ours,
// unless GOGC in the environment decided.
func serverGCPercent() int {
	if os.Getenv("GOGC") != "" {
		return 0
	}
	return gcPercent
}
