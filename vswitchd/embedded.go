package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/internal/ovsssl"
	"github.com/govs/govs/ovsdb/db"
	"github.com/govs/govs/ovsdb/server"
	"github.com/govs/govs/schema"
)

// dbDir is where the embedded database lives by default: $OVS_DBDIR, or
// /etc/openvswitch as with Open vSwitch.
func dbDir() string {
	if d := os.Getenv("OVS_DBDIR"); d != "" {
		return d
	}
	return "/etc/openvswitch"
}

// startEmbeddedDB runs govs' OVSDB server inside this process, serving file
// (default $OVS_DBDIR/conf.db, created if missing) on
// punix:<rundir>/db.sock for outside clients and on the remotes of the
// Manager table (SSL ones with the SSL table's files), exactly as a separate ovsdb-server started by ovs-ctl
// would. It also answers "ovs-appctl -t ovsdb-server": with --pidfile, an
// ovsdb-server.pid next to the daemon's pidfile, and (unless
// --unixctl=none) a control socket <rundir>/ovsdb-server.<pid>.ctl whose
// "exit" calls exit. It returns the remote the switch itself connects to,
// stop, and release, which only removes that pidfile and socket (for a
// fatal signal, see daemon.AtClose); stop runs release too.
func startEmbeddedDB(file string, opts *daemon.Options, log *daemon.Logger, exit func()) (remote string, stop, release func(), err error) {
	rundir := opts.Rundir
	if file == "" {
		file = filepath.Join(dbDir(), "conf.db")
	}
	if file, err = filepath.Abs(file); err != nil {
		return "", nil, nil, err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return "", nil, nil, err
	}
	sock := filepath.Join(rundir, "db.sock")
	srv := server.New(server.Options{
		Log:     func(m string) server.Logger { return log.Module(m) },
		Remotes: []string{"punix:" + sock, "db:Open_vSwitch,Open_vSwitch,manager_options"},
		// What ovs-ctl gives ovsdb-server, so that pssl: managers
		// work after "ovs-vsctl set-ssl".
		SSL: server.SSLOptions{Settings: ovsssl.Settings{PrivateKey: "db:Open_vSwitch,SSL,private_key",
			Certificate: "db:Open_vSwitch,SSL,certificate", CACert: "db:Open_vSwitch,SSL,ca_cert",
			BootstrapCACert: true}},
	})
	d, err := srv.OpenDatabase(file, schema.VSwitch)
	if err != nil {
		srv.Close()
		return "", nil, nil, err
	}
	if err := initDatabase(d); err != nil {
		srv.Close()
		return "", nil, nil, err
	}
	var pidfile *daemon.Pidfile
	if opts.Pidfile != "" {
		p := filepath.Join(filepath.Dir(opts.Pidfile), "ovsdb-server.pid")
		if pidfile, err = daemon.CreatePidfile(p, opts.OverwritePidfile); err != nil {
			srv.Close()
			return "", nil, nil, err
		}
	}
	var ctl *daemon.UnixctlServer
	if opts.Unixctl != "none" {
		path := filepath.Join(rundir, fmt.Sprintf("ovsdb-server.%d.ctl", os.Getpid()))
		if ctl, err = daemon.ListenUnixctl(path, "ovsdb-server", version, log); err != nil {
			pidfile.Remove()
			srv.Close()
			return "", nil, nil, err
		}
		srv.RegisterCommands(ctl, exit)
	}
	var once sync.Once // release may race stop on a signal
	release = func() {
		once.Do(func() {
			if ctl != nil {
				ctl.Close()
			}
			pidfile.Remove()
		})
	}
	stop = func() {
		release()
		srv.Close()
	}
	if err := srv.Start(); err != nil {
		stop()
		return "", nil, nil, err
	}
	log.Module("ovsdb_server").Infof("embedded database %s serving unix:%s", file, sock)
	return "unix:" + sock, stop, release, nil
}

// initDatabase gives a new database its Open_vSwitch row, as ovs-ctl does
// with "ovs-vsctl init" and db_version, so that a first "ovs-vsctl add-br"
// works on a fresh machine.
func initDatabase(d *db.Database) error {
	ops := []json.RawMessage{
		json.RawMessage(`{"op":"wait","table":"Open_vSwitch","where":[],"until":"==","rows":[],"timeout":0}`),
		json.RawMessage(fmt.Sprintf(`{"op":"insert","table":"Open_vSwitch","row":{"db_version":%q,"ovs_version":%q}}`, d.Schema().Version, version)),
		json.RawMessage(`{"op":"comment","comment":"govs: initialize database"}`),
	}
	res := d.Transact(ops, nil, time.Time{})
	var results []map[string]any
	if err := json.Unmarshal(res.JSON, &results); err != nil {
		return err
	}
	for i, r := range results {
		if e, ok := r["error"]; ok && !(i == 0 && e == "timed out") {
			return fmt.Errorf("initializing database: %v: %v", e, r["details"])
		}
	}
	return nil
}
