package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/govs/govs/ovsdb/db"
	"github.com/govs/govs/ovsdb/jsonrpc"
)

// AddDatabaseFile serves one more database file (ovsdb-server/add-db), with
// ovsdb-server's error texts. A backup starts replicating it too.
func (s *Server) AddDatabaseFile(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if _, err := os.Stat(abs); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("I/O error: %s: open failed (%s)", path, errnoText(err))
	}
	s.mu.Lock()
	for _, e := range s.dbs {
		if e.path == abs {
			s.mu.Unlock()
			return fmt.Errorf("ovsdb error: %s: already open", path)
		}
	}
	s.mu.Unlock()
	if _, err := s.OpenDatabase(abs, nil); err != nil {
		return fmt.Errorf("ovsdb error: %v", err)
	}
	s.restartReplication()
	return nil
}

func errnoText(err error) string {
	switch s := err.Error(); s {
	case "no such file or directory":
		return "No such file or directory"
	case "permission denied":
		return "Permission denied"
	default:
		return s
	}
}

// RemoveDatabase stops serving a database (ovsdb-server/remove-db): its
// _Server row goes, clients that said set_db_change_aware get
// "monitor_canceled" for its monitors and others are disconnected, as
// ovsdb-server does, and its file is closed.
func (s *Server) RemoveDatabase(name string) error {
	s.mu.Lock()
	e := s.dbs[name]
	switch {
	case e == nil:
		s.mu.Unlock()
		return errors.New("Failed to find the database.")
	case e == s.serverDB:
		s.mu.Unlock()
		return errors.New("Cannot remove reserved database.")
	}
	delete(s.dbs, name)
	s.mu.Unlock()

	op, _ := json.Marshal(map[string]any{"op": "delete", "table": "Database",
		"where": []any{[]any{"_uuid", "==", []string{"uuid", e.row.String()}}}})
	s.serverDB.d.Transact([]json.RawMessage{op}, nil, time.Time{})

	s.cancelMonitors(e)
	var err error
	if e.log != nil {
		err = errors.Join(e.log.Flush(), e.log.Sync(), e.log.Close())
	}
	s.restartReplication()
	return err
}

// cancelMonitors detaches e, which is no longer served: commits to it fail
// from now on, clients that said set_db_change_aware get
// "monitor_canceled" for its monitors, and other clients with monitors on
// it are disconnected, as ovsdb-server does.
func (s *Server) cancelMonitors(e *dbEntry) {
	var mons []*monitor
	e.d.Read(func(db.Snapshot) {
		e.detached = true
		for m := range e.monitors {
			mons = append(mons, m)
		}
		e.monitors = map[*monitor]bool{}
	})
	for _, m := range mons {
		ss := m.ss
		ss.mu.Lock()
		if !ss.changeAware {
			ss.mu.Unlock()
			ss.conn.Close()
			continue
		}
		for k, sm := range ss.monitors {
			if sm == m {
				delete(ss.monitors, k)
			}
		}
		ss.flushLocked()
		ss.conn.Send(jsonrpc.NewNotification("monitor_canceled", []json.RawMessage{m.id}))
		ss.mu.Unlock()
	}
}

var errDetached = errors.New("database is no longer served")

// restartReplication has a backup start over, so that it replicates the
// databases served now.
func (s *Server) restartReplication() {
	if s.IsBackup() {
		s.ConnectActive()
	}
}

// DisableMonitorCond makes the server answer monitor_cond and
// monitor_cond_since with "unknown method" from now on and disconnects every
// client, so that they reconnect and fall back to "monitor"
// (ovsdb-server/disable-monitor-cond, for testing clients' fallback).
func (s *Server) DisableMonitorCond() {
	s.noMonitorCond.Store(true)
	for _, ss := range s.sessionList() {
		ss.conn.Close()
	}
}

// sessionList returns the client sessions open now.
func (s *Server) sessionList() []*session {
	s.mu.Lock()
	defer s.mu.Unlock()
	sessions := make([]*session, 0, len(s.sessions))
	for ss := range s.sessions {
		sessions = append(sessions, ss)
	}
	return sessions
}
