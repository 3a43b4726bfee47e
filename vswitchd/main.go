// Command ovs-vswitchd is govs' switch daemon: it reads its configuration
// from the Open_vSwitch database, runs every bridge on govs' userspace
// datapath, and writes the switch's state back, compatibly with Open
// vSwitch's tools (ovs-vsctl, ovs-appctl).
//
//	ovs-vswitchd [DATABASE] [--pidfile[=FILE]] [--detach] [--no-chdir]
//	             [--log-file[=FILE]] [-vSPEC] [--unixctl=SOCKET] [--pprof=SOCKET]
//
// DATABASE is unix:PATH or tcp:IP:PORT, by default unix:$OVS_RUNDIR/db.sock.
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
	"time"

	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/netdev/tunnel"
	"github.com/govs/govs/vswitchd/bridge"
	"github.com/govs/govs/vswitchd/dbclient"
)

const (
	program = "ovs-vswitchd"
	version = "3.1.0"
)

// logModules are this program's vlog modules, registered before the
// command line's -v specs are applied.
var logModules = []string{"bridge", "reconnect", "ovsdb_idl", "netdev_linux", "ofproto_dpif", "dpif_netdev", "route_table",
	// The embedded database server's modules.
	"ovsdb_server", "ovsdb_jsonrpc_server", "jsonrpc", "ovsdb_storage"}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", program, err)
		os.Exit(1)
	}
}

func run() error {
	var embedded *string
	var pprofPath string
	opts, args, err := daemon.ParseFlags(program, os.Args[1:], daemon.Flag{
		Long: "embedded-db", Arg: daemon.OptionalArg,
		Set: func(v string) error { embedded = &v; return nil },
	}, daemon.Flag{
		Long: "pprof", Arg: daemon.RequiredArg,
		Set: func(v string) error { pprofPath = v; return nil },
	})
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
	routes := tunnel.NewRouter(tunnel.KernelAddrs)
	tunnel.Sync(ctx, routes, log.Module("route_table"))
	neigh := tunnel.NewNeighCache(nil)
	go neigh.ExpireEvery(ctx, time.Second)
	registerTunnelCommands(d.Unixctl, routes, neigh)
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
