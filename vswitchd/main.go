// Command ovs-vswitchd is govs' switch daemon: it reads its configuration
// from the Open_vSwitch database, runs every bridge on govs' userspace
// datapath, and writes the switch's state back, compatibly with Open
// vSwitch's tools (ovs-vsctl, ovs-appctl).
//
//	ovs-vswitchd [DATABASE] [--pidfile[=FILE]] [--detach] [--no-chdir]
//	             [--log-file[=FILE]] [-vSPEC] [--unixctl=SOCKET] [--pprof=SOCKET]
//
// DATABASE is unix:PATH, tcp:IP:PORT or ssl:IP:PORT (with --private-key,
// --certificate, --ca-cert or --bootstrap-ca-cert), by default
// unix:$OVS_RUNDIR/db.sock.
// With --embedded-db[=FILE] the switch runs govs' OVSDB server itself,
// serving FILE (default $OVS_DBDIR/conf.db) on unix:$OVS_RUNDIR/db.sock.
// With --pprof=SOCKET it serves Go's runtime profiles (net/http/pprof) on
// that unix socket (mode 0750; relative to the rundir).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/internal/ovsssl"
	"github.com/govs/govs/vswitchd/bridge"
	"github.com/govs/govs/vswitchd/dbclient"
)

const (
	program = "ovs-vswitchd"
	version = "3.1.0"
)

// logModules are this program's vlog modules, registered before the
// command line's -v specs are applied.
var logModules = []string{"bridge", "reconnect", "ovsdb_idl", "netdev_linux", "ofproto_dpif", "dpif_netdev",
	// The embedded database server's modules.
	"ovsdb_server", "ovsdb_jsonrpc_server", "jsonrpc", "ovsdb_storage", "stream_ssl"}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", program, err)
		os.Exit(1)
	}
}

func run() error {
	var embedded *string
	var pprofPath string
	var ssl ovsssl.Options
	opts, args, err := daemon.ParseFlags(program, os.Args[1:], append(ssl.Flags(),
		daemon.Flag{
			Long: "embedded-db", Arg: daemon.OptionalArg,
			Set: func(v string) error { embedded = &v; return nil },
		}, daemon.Flag{
			Long: "pprof", Arg: daemon.RequiredArg,
			Set: func(v string) error { pprofPath = v; return nil },
		})...)
	if err != nil {
		return err
	}
	if opts.Help {
		fmt.Printf("%s: Open vSwitch daemon\nusage: %s [OPTIONS] [DATABASE]\nwhere DATABASE is a socket on which ovsdb-server is listening\n      (default: \"unix:%s\").\n%s",
			program, program, filepath.Join(opts.Rundir, "db.sock"), daemon.Usage(program))
		return nil
	}
	if opts.Version {
		fmt.Println(daemon.VersionString(program, version))
		return nil
	}
	if len(args) > 1 {
		return errors.New("at most one non-option argument accepted; use --help for usage")
	}
	remote := "unix:" + filepath.Join(opts.Rundir, "db.sock")
	if len(args) == 1 {
		remote = args[0]
	}
	remote, err = dbclient.NormalizeRemote(remote)
	if err != nil {
		return err
	}

	log := daemon.NewLogger(os.Stderr)
	for _, m := range logModules {
		log.Module(m)
	}
	d, err := daemon.Start(program, version, opts, log)
	if err != nil {
		return err
	}
	d.HandleSignals(nil)
	sslCtx := ovsssl.New(log.Module("stream_ssl"), ssl.PeerCACert)
	sslCtx.Configure(ssl.Settings)
	dbclient.UseSSL(sslCtx)
	var prof *daemon.PprofServer
	if pprofPath != "" {
		// After Start, so that the --detach child serves it.
		if !filepath.IsAbs(pprofPath) {
			pprofPath = filepath.Join(opts.Rundir, pprofPath)
		}
		if prof, err = daemon.ServePprof(pprofPath); err != nil {
			d.Close()
			return err
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	stopDB := func() {}
	if embedded != nil {
		// After Start, so that a --detach child, not its parent, serves.
		r, stop, err := startEmbeddedDB(*embedded, opts.Rundir, log)
		if err != nil {
			cancel()
			if prof != nil {
				prof.Close()
			}
			d.Close()
			return fmt.Errorf("starting embedded database: %w", err)
		}
		remote, stopDB = r, stop
	}

	plane := newDataplane(log)
	v := newSwitchd(remote, opts.Rundir, log, plane, bridge.KernelDevices{})
	v.registerCommands(d.Unixctl)
	plane.registerFlowCommands(d.Unixctl)
	code := v.run(ctx, d.Ready)
	plane.close()
	stopDB()
	cancel()
	if prof != nil {
		prof.Close()
	}
	d.Exit(code)
	return nil
}
