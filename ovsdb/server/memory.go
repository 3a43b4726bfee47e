package server

import (
	"maps"
	"slices"

	"github.com/govs/govs/ovsdb/db"
)

// MemoryUsage returns what ovsdb-server's memory/show reports, with the
// keys and the rules for when each appears of OVS 3.1's
// (ovsdb_jsonrpc_server_get_memory_usage, ovsdb_monitor_get_memory_usage,
// ovsdb_get_memory_usage): "monitors" and "n-weak-refs" always, the others
// only when not zero. Debian's server adds "txn-history" and raft figures
// for clustered databases only; govs has none, and its history of recent
// commits for monitor_cond_since (which OVS keeps only when clustered) is
// left out so that the keys match a standalone ovsdb-server's.
//
//	sessions     JSON-RPC client sessions
//	triggers     transactions waiting (a "wait" not yet satisfied)
//	backlog      bytes queued to clients and not yet written
//	monitors     distinct monitored sets (monitors of equal tables, columns
//	             and selects share one, whatever their conditions)
//	cells        rows times columns in every database, _Server included
//	atoms        values in those cells
//	n-weak-refs  weak references between rows
func (s *Server) MemoryUsage() map[string]uint64 {
	usage := map[string]uint64{}
	add := func(k string, n int) {
		if n > 0 {
			usage[k] += uint64(n)
		}
	}
	sessions := s.sessionList()
	s.mu.Lock()
	entries := slices.Collect(maps.Values(s.dbs))
	s.mu.Unlock()

	add("sessions", len(sessions))
	for _, ss := range sessions {
		ss.mu.Lock()
		add("triggers", len(ss.triggers))
		ss.mu.Unlock()
		add("backlog", ss.conn.Backlog())
	}
	monitors, weak := 0, 0
	for _, e := range entries {
		if e.d == nil {
			continue
		}
		keys := map[string]bool{}
		e.d.Read(func(db.Snapshot) {
			for m := range e.monitors {
				keys[dbmonKey(m.tables)] = true
			}
		})
		monitors += len(keys)
		u := e.d.Usage()
		add("cells", u.Cells)
		add("atoms", u.Atoms)
		weak += u.WeakRefs
	}
	usage["monitors"] = uint64(monitors)
	usage["n-weak-refs"] = uint64(weak)
	return usage
}
