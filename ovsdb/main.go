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
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/ovsdb/server"
	"github.com/govs/govs/schema"
)

const (
	program = "ovsdb-server"
	version = "3.1.0"
)

// logModules are registered before daemon.Start so that -v specs apply:
// govs' own and every module Debian's ovsdb-server 3.1 lists in vlog/list,
// so that scripts setting levels for them (-vraft:file:dbg) still work.
var logModules = []string{"ovsdb_server", "ovsdb_jsonrpc_server", "jsonrpc", "reconnect", "ovsdb_storage",
	"backtrace", "bundle", "command_line", "conntrack", "conntrack_tp", "coverage", "ct_dpif", "daemon",
	"daemon_unix", "dns_resolve", "dpdk", "dpif", "dpif_lookup_autovalidator", "dpif_lookup_generic",
	"dpif_mfex_extract_study", "dpif_netdev", "dpif_netdev_extract", "dpif_netdev_impl", "dpif_netdev_lookup",
	"dpif_netlink", "dpif_netlink_rtnl", "entropy", "fatal_signal", "flow", "hmap", "ipf", "lockfile", "memory",
	"meta_flow", "native_tnl", "netdev", "netdev_afxdp", "netdev_linux", "netdev_offload", "netdev_offload_tc",
	"netdev_vport", "netlink", "netlink_conntrack", "netlink_notifier", "netlink_socket", "nx_match",
	"odp_execute", "odp_execute_impl", "odp_util", "ofp_actions", "ofp_bundle", "ofp_connection", "ofp_errors",
	"ofp_flow", "ofp_group", "ofp_match", "ofp_meter", "ofp_monitor", "ofp_msgs", "ofp_packet", "ofp_port",
	"ofp_protocol", "ofp_queue", "ofp_table", "ofp_util", "ovs_numa", "ovs_rcu", "ovs_replay", "ovs_router",
	"ovs_thread", "ovsdb", "ovsdb_cs", "ovsdb_error", "ovsdb_file", "ovsdb_idl", "ovsdb_log", "ovsdb_monitor",
	"ovsdb_rbac", "ovsdb_util", "ox_stat", "pmd_perf", "poll_loop", "process", "raft", "raft_rpc", "relay",
	"replication", "route_table", "sha1", "signals", "socket_util", "socket_util_unix", "storage", "stream",
	"stream_fd", "stream_replay", "stream_ssl", "stream_tcp", "stream_unix", "svec", "tc", "timeval",
	"transaction", "transaction_forward", "trigger", "unixctl", "userspace_tso", "util", "uuid", "vlog"}

func main() {
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

`, program, program, filepath.Join(dbDir(), "conf.db")) + daemon.Usage(program)
}

func run() error {
	var remotes []string
	var ssl server.SSLOptions
	ignored := func(string) error { return nil }
	opts, args, err := daemon.ParseFlags(program, os.Args[1:], append(ssl.Flags(),
		daemon.Flag{Long: "remote", Arg: daemon.RequiredArg, Set: func(v string) error {
			remotes = append(remotes, v)
			return nil
		}},
		daemon.Flag{Long: "disable-file-column-diff", Arg: daemon.NoArg, Set: ignored},
	)...)
	if err != nil {
		return err
	}
	if opts.Help {
		fmt.Print(usage(opts.Rundir))
		return nil
	}
	if opts.Version {
		fmt.Println(daemon.VersionString(program, version))
		return nil
	}
	for _, r := range remotes {
		if err := server.ValidateRemote(r); err != nil {
			return err
		}
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

	log := daemon.NewLogger(os.Stderr)
	for _, m := range logModules {
		log.Module(m)
	}
	d, err := daemon.Start(program, version, opts, log)
	if err != nil {
		return err
	}
	mod := log.Module("ovsdb_server")

	srv := server.New(server.Options{
		Log:     func(m string) server.Logger { return log.Module(m) },
		Remotes: remotes,
		SSL:     ssl,
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
		registerCommands(u, srv, exit)
	}
	d.HandleSignals(func(os.Signal) {
		select {
		case exit <- struct{}{}:
		default:
		}
	})
	d.Ready()
	// Logged once detached, as OVS does: only the log file gets it, and
	// scripts that read a detaching server's stderr see nothing.
	mod.Infof("%s", daemon.VersionString(program, version))
	<-exit
	if err := srv.Close(); err != nil {
		mod.Errorf("%v", err)
	}
	d.Exit(0)
	return nil
}

func registerCommands(u *daemon.UnixctlServer, srv *server.Server, exit chan struct{}) {
	u.Register("exit", "", 0, 0, func([]string) (string, error) {
		select {
		case exit <- struct{}{}:
		default:
		}
		return "", nil
	})
	u.Register("ovsdb-server/compact", "", 0, 1, func(args []string) (string, error) {
		if len(args) == 1 && args[0] == "_Server" {
			return "", errors.New("cannot compact built-in databases")
		}
		if len(args) == 1 && srv.Database(args[0]) == nil {
			return "", errors.New("no database by that name")
		}
		return "", srv.Compact(args...)
	})
	u.Register("ovsdb-server/add-remote", "REMOTE", 1, 1, func(args []string) (string, error) {
		return "", srv.AddRemote(args[0])
	})
	u.Register("ovsdb-server/remove-remote", "REMOTE", 1, 1, func(args []string) (string, error) {
		return "", srv.RemoveRemote(args[0])
	})
	u.Register("ovsdb-server/list-remotes", "", 0, 0, func([]string) (string, error) {
		return joinLines(srv.Remotes()), nil
	})
	u.Register("ovsdb-server/list-dbs", "", 0, 0, func([]string) (string, error) {
		return joinLines(srv.DatabaseNames()), nil
	})
}

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
