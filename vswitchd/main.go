// Command ovs-vswitchd is govs' switch daemon: it reads its configuration
// from the Open_vSwitch database, runs every bridge on govs' userspace
// datapath, and writes the switch's state back, compatibly with Open
// vSwitch's tools (ovs-vsctl, ovs-appctl).
//
//	ovs-vswitchd [DATABASE] [--pidfile[=FILE]] [--detach] [--monitor] [--no-chdir]
//	             [--log-file[=FILE]] [-vSPEC] [--unixctl=SOCKET] [--user=USER[:GROUP]]
//	             [--mlockall] [--disable-system] [--disable-system-route]
//	             [--enable-dummy[=system|override]]
//	             [--pprof=SOCKET]
//
// DATABASE is unix:PATH, tcp:IP:PORT or ssl:IP:PORT (with --private-key,
// --certificate, --ca-cert or --bootstrap-ca-cert), by default
// unix:$OVS_RUNDIR/db.sock. The SSL row Open_vSwitch.ssl names, once read,
// takes over from the command line's files, as in OVS.
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
	"github.com/govs/govs/internal/ovsssl"
	"github.com/govs/govs/internal/pprofsock"
	"github.com/govs/govs/netdev/tunnel"
	"github.com/govs/govs/vswitchd/bridge"
	"github.com/govs/govs/vswitchd/dbclient"
	"golang.org/x/sys/unix"
)

const (
	program = "ovs-vswitchd"
	version = "3.1.0"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", program, err)
		os.Exit(1)
	}
}

func run() error {
	var embedded *string
	var pprofPath string
	var mlockall bool
	dummy := bridge.DummyOff
	systemRoutes := true
	var ssl ovsssl.Options
	opts, args, err := daemon.ParseFlags(program, os.Args[1:], append(ssl.Flags(),
		daemon.Flag{
			Long: "embedded-db", Arg: daemon.OptionalArg,
			Set: func(v string) error { embedded = &v; return nil },
		}, daemon.Flag{
			Long: "pprof", Arg: daemon.RequiredArg,
			Set: func(v string) error { pprofPath = v; return nil },
		}, daemon.Flag{
			// Dummy ports and datapaths for tests, as OVS's lib/dummy.c.
			Long: "enable-dummy", Arg: daemon.OptionalArg,
			Set: func(v string) (err error) { dummy, err = bridge.ParseDummyLevel(v); return err },
		}, daemon.Flag{
			// As OVS: the route table holds only ovs/route/add's routes,
			// none read from the kernel (OVS's testsuite passes it).
			Long: "disable-system-route",
			Set:  func(string) error { systemRoutes = false; return nil },
		}, daemon.Flag{
			Long: "mlockall",
			Set:  func(string) error { mlockall = true; return nil },
		}, daemon.Flag{
			// govs never opens the kernel datapath: every bridge, whatever
			// its datapath_type, runs on the userspace datapath, so the
			// system datapath is always disabled already.
			Long: "disable-system",
			Set:  func(string) error { return nil },
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
		fmt.Print(daemon.VersionText(program, version))
		return nil
	}
	if len(args) > 1 {
		return errors.New("at most one non-option argument accepted; use --help for usage")
	}
	if dummy != bridge.DummyOff {
		bridge.EnableDummy(dummy)
	}
	remote := "unix:" + filepath.Join(opts.Rundir, "db.sock")
	if len(args) == 1 {
		remote = args[0]
	}
	remote, err = dbclient.NormalizeRemote(remote)
	if err != nil {
		return err
	}

	// Every vlog module of OVS 3.1's ovs-vswitchd and, for the embedded
	// database, of its ovsdb-server, registered before the -v specs apply.
	log := daemon.NewLogger(os.Stderr)
	daemon.RegisterOVSModules(log, program)
	daemon.RegisterOVSModules(log, "ovsdb-server")
	log.Module("ovsdb_storage")
	// What OVS's ovs-vswitchd keeps with --user: datapath and port access,
	// privileged ports, and locking memory.
	opts.KeepCaps = []uintptr{unix.CAP_NET_ADMIN, unix.CAP_NET_RAW, unix.CAP_NET_BIND_SERVICE, unix.CAP_IPC_LOCK}
	d, err := daemon.Start(program, version, opts, log)
	if err != nil {
		return err
	}
	if mlockall {
		// MCL_ONFAULT locks pages as they are touched: with MCL_FUTURE
		// alone, every heap arena the Go runtime maps would be faulted in
		// whole at once.
		if err := unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE | unix.MCL_ONFAULT); err != nil {
			log.Module("vswitchd").Errorf("mlockall failed: %s", daemon.Strerror(err))
		}
	}
	d.HandleSignals(nil)
	sslCtx := ovsssl.New(log.Module("stream_ssl"), ssl.PeerCACert)
	sslCtx.Configure(ssl.Settings)
	dbclient.UseSSL(sslCtx)
	var prof *pprofsock.Server
	if pprofPath != "" {
		// After Start, so that the --detach child serves it.
		if !filepath.IsAbs(pprofPath) {
			pprofPath = filepath.Join(opts.Rundir, pprofPath)
		}
		if prof, err = pprofsock.Serve(pprofPath); err != nil {
			d.Close()
			return err
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	stopDB := func() {}
	dbExit := make(chan struct{}, 1)
	if embedded != nil {
		// After Start, so that a --detach child, not its parent, serves.
		// "ovs-appctl -t ovsdb-server exit" ends the whole daemon: the
		// switch cannot run without its database.
		r, stop, release, err := startEmbeddedDB(*embedded, opts, log, func() {
			select {
			case dbExit <- struct{}{}:
			default:
			}
		})
		if err != nil {
			cancel()
			if prof != nil {
				prof.Close()
			}
			d.Close()
			return fmt.Errorf("starting embedded database: %w", err)
		}
		remote, stopDB = r, stop
		d.AtClose(release)
	}

	plane := newDataplane(log)
	v := newSwitchd(remote, opts.Rundir, log, plane, bridge.KernelDevices{})
	v.ssl = sslCtx
	go func() {
		if _, ok := <-dbExit; ok {
			v.exit(false)
		}
	}()
	v.registerCommands(d.Unixctl)
	if dummy != bridge.DummyOff {
		registerDummyCommands(d.Unixctl, v.refreshSoon)
	}
	routes := tunnel.NewRouter(tunnel.KernelAddrs)
	if systemRoutes {
		tunnel.Sync(ctx, routes, log.Module("route_table"))
	}
	neigh := tunnel.NewNeighCache(nil)
	go neigh.ExpireEvery(ctx, time.Second)
	plane.ofproto.SetTunnelEnv(tunnelEnv{routes: routes, neigh: neigh})
	v.sw.SetRouter(routes)
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
