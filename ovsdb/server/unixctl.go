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
}

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
