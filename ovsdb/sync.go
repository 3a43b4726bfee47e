package main

import (
	"strconv"
	"time"

	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/ovsdb/server"
)

// syncConfig is the active-backup replication configuration from the
// command line (ovsdb-server(1) "Syncing options").
type syncConfig struct {
	from    string
	exclude string
	active  bool
}

const syncUsage = `Syncing options:
  --sync-from=SERVER      sync DATABASE from active SERVER and start in
                          backup mode (except with --active)
  --sync-exclude-tables=DB:TABLE,...
                          exclude the TABLE in DB from syncing
  --active                with --sync-from, start in active mode

`

func (c *syncConfig) flags() []daemon.Flag {
	return []daemon.Flag{
		{Long: "sync-from", Arg: daemon.RequiredArg, Set: func(v string) error { c.from = v; return nil }},
		{Long: "sync-exclude-tables", Arg: daemon.RequiredArg, Set: func(v string) error { c.exclude = v; return nil }},
		{Long: "active", Arg: daemon.NoArg, Set: func(string) error { c.active = true; return nil }},
	}
}

// check refuses what cannot work before the server detaches.
func (c *syncConfig) check() error {
	if c.from == "" {
		return nil
	}
	return server.CheckSyncFrom(c.from)
}

// apply configures srv once its databases are open: with --sync-from and
// without --active, the server starts as a backup.
func (c *syncConfig) apply(srv *server.Server) error {
	srv.SetSyncExclude(c.exclude)
	if c.from == "" {
		return nil
	}
	if err := srv.SetSyncFrom(c.from); err != nil {
		return err
	}
	if !c.active {
		return srv.ConnectActive()
	}
	return nil
}

// registerSyncCommands registers ovsdb-server's replication commands, with
// its texts (ovsdb/ovsdb-server.c).
func registerSyncCommands(u *daemon.UnixctlServer, srv *server.Server) {
	u.Register("ovsdb-server/set-active-ovsdb-server", "", 1, 1, func(args []string) (string, error) {
		return "", srv.SetSyncFrom(args[0])
	})
	u.Register("ovsdb-server/get-active-ovsdb-server", "", 0, 0, func([]string) (string, error) {
		return srv.SyncFrom(), nil
	})
	u.Register("ovsdb-server/connect-active-ovsdb-server", "", 0, 0, func([]string) (string, error) {
		if err := srv.ConnectActive(); err != nil {
			// ovsdb-server answers this as a success, with the text.
			return err.Error() + "\n", nil
		}
		return "", nil
	})
	u.Register("ovsdb-server/disconnect-active-ovsdb-server", "", 0, 0, func([]string) (string, error) {
		srv.DisconnectActive()
		return "", nil
	})
	u.Register("ovsdb-server/set-active-ovsdb-server-probe-interval", "", 1, 1, func(args []string) (string, error) {
		ms, err := strconv.ParseInt(args[0], 10, 32)
		if err != nil {
			return "Invalid probe interval, integer value expected", nil
		}
		d := time.Duration(ms) * time.Millisecond
		switch {
		case ms <= 0:
			d = -1 // disabled
		case d < time.Second:
			d = time.Second // reconnect.c's minimum
		}
		srv.SetReplicationProbe(d)
		return "", nil
	})
	u.Register("ovsdb-server/set-sync-exclude-tables", "", 1, 1, func(args []string) (string, error) {
		srv.SetSyncExclude(args[0])
		return "", nil
	})
	u.Register("ovsdb-server/get-sync-exclude-tables", "", 0, 0, func([]string) (string, error) {
		return srv.SyncExclude(), nil
	})
	u.Register("ovsdb-server/sync-status", "", 0, 0, func([]string) (string, error) {
		return srv.SyncStatus(), nil
	})
}
