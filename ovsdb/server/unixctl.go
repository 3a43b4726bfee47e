package server

import (
	"errors"
	"strings"

	"github.com/govs/govs/internal/daemon"
)

// RegisterCommands registers ovsdb-server's unixctl commands on u: exit
// (which calls exit) and the ovsdb-server/* commands.
func (s *Server) RegisterCommands(u *daemon.UnixctlServer, exit func()) {
	u.Register("exit", "", 0, 0, func([]string) (string, error) {
		exit()
		return "", nil
	})
	u.Register("ovsdb-server/compact", "", 0, 1, func(args []string) (string, error) {
		if len(args) == 1 && args[0] == "_Server" {
			return "", errors.New("cannot compact built-in databases")
		}
		if len(args) == 1 && s.Database(args[0]) == nil {
			return "", errors.New("no database by that name")
		}
		return "", s.Compact(args...)
	})
	u.Register("ovsdb-server/add-remote", "REMOTE", 1, 1, func(args []string) (string, error) {
		return "", s.AddRemote(args[0])
	})
	u.Register("ovsdb-server/remove-remote", "REMOTE", 1, 1, func(args []string) (string, error) {
		return "", s.RemoveRemote(args[0])
	})
	u.Register("ovsdb-server/list-remotes", "", 0, 0, func([]string) (string, error) {
		return joinLines(s.Remotes()), nil
	})
	u.Register("ovsdb-server/list-dbs", "", 0, 0, func([]string) (string, error) {
		return joinLines(s.DatabaseNames()), nil
	})
	u.Register("ovsdb-server/get-db-storage-status", "DB", 1, 1, func(args []string) (string, error) {
		// A standalone or in-memory database's storage has no state
		// but "ok" (raft's are what OVS reports more of).
		if s.Database(args[0]) == nil {
			return "", errors.New("Failed to find the database.")
		}
		return "status: ok\n", nil
	})
	u.Register("ovsdb-server/memory-trim-on-compaction", "on|off", 1, 1, func(args []string) (string, error) {
		switch args[0] {
		case "on", "off":
		default:
			return "", errors.New("invalid argument")
		}
		on := args[0] == "on"
		s.trimCompacted.Store(on)
		s.log.Infof("memory trimming after compaction %s.", map[bool]string{true: "enabled", false: "disabled"}[on])
		return "", nil
	})
	u.Register("ovsdb-server/reconnect", "", 0, 0, func([]string) (string, error) {
		s.Reconnect()
		return "", nil
	})
	// OVS's perf counters exist only on x86 builds with the cycle counter
	// (ovsdb-server's perf-counter.c); Debian's answers this way too.
	u.Register("ovsdb-server/perf-counters-show", "", 0, 0, func([]string) (string, error) {
		return "performance counter is not supported on this platform\n", nil
	})
	u.Register("ovsdb-server/perf-counters-clear", "", 0, 0, func([]string) (string, error) {
		return "", nil
	})
}

// Reconnect drops every client session, as ovsdb-server/reconnect does:
// clients connect again (and sessions of active remotes are reopened).
func (s *Server) Reconnect() {
	for _, ss := range s.sessionList() {
		s.rpcLog.Infof("%s: disconnecting (user ran ovsdb-server/reconnect)", ss.conn.Name())
		ss.conn.Close()
	}
}

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
