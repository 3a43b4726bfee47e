package server

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/govs/govs/ovsdb/db"
	"github.com/govs/govs/ovsdb/jsonrpc"
	"github.com/govs/govs/ovsdb/storage"
)

// convert handles the "convert" method, [<db-name>, <schema>]: online schema
// conversion (ovsdb-client convert). The rows are copied into a database
// with the new schema, columns the new schema has keeping their values
// (converted through JSON, as ovsdb_datum_convert does) and new ones their
// defaults; the file is rewritten with the new schema and a snapshot; the
// old database's monitors are canceled (monitor_canceled for clients that
// said set_db_change_aware, a disconnection for the others) and its _Server
// row replaced, so that clients see the new schema.
func (ss *session) convert(m *jsonrpc.Message, e *dbEntry, params []json.RawMessage) {
	if len(params) != 2 {
		ss.replyError(m, syntaxErr(m.Params, "convert request params must be <db-name> <schema>"))
		return
	}
	if e == ss.srv.serverDB || ss.ReadOnly() {
		ss.replyError(m, &ovsdbError{Name: "not allowed", Details: fmt.Sprintf("conversion is not allowed for read-only database %s", e.name)})
		return
	}
	sch, err := db.ParseSchema(params[1])
	if err != nil {
		ss.replyError(m, &ovsdbError{Name: "syntax error", Details: err.Error()})
		return
	}
	if sch.Name != e.name {
		ss.replyError(m, &ovsdbError{Name: "invalid parameters",
			Details: fmt.Sprintf("new schema name (%s) does not match database name (%s)", sch.Name, e.name)})
		return
	}
	if err := ss.srv.convert(e, sch); err != nil {
		ss.replyError(m, &ovsdbError{Name: "constraint violation", Details: err.Error()})
		return
	}
	ss.reply(m, struct{}{})
}

// convert replaces e by a database with schema sch holding e's rows.
func (s *Server) convert(e *dbEntry, sch *db.Schema) error {
	nd := db.New(sch)
	var err error
	e.d.Read(func(snap db.Snapshot) {
		if e.detached {
			err = errDetached
			return
		}
		old := e.d.Schema()
		tables := map[string]map[string]json.RawMessage{}
		for tn, nt := range sch.Tables {
			ot := old.Tables[tn]
			if ot == nil {
				continue
			}
			cols := []*db.Column{}
			for _, c := range ot.Columns {
				if nt.Column(c.Name) != nil {
					cols = append(cols, c)
				}
			}
			rows := map[string]json.RawMessage{}
			for u, r := range snap.Rows(tn) {
				rows[u.String()] = db.AppendRowJSON(nil, ot, r, cols)
			}
			tables[tn] = rows
		}
		if _, err = nd.ApplyReplica(tables, nil); err != nil {
			return
		}
		if e.log != nil {
			err = e.log.Replace(sch.JSON(), storage.Record{Tables: nd.SnapshotRecord(), Date: time.Now().UnixMilli()})
			if err != nil {
				return
			}
		}
		// Commits to the old database fail from now on.
		e.detached = true
	})
	if err != nil {
		return err
	}
	s.log.Infof("%s: database converted to schema version %s", e.name, sch.Version)
	s.mu.Lock()
	delete(s.dbs, e.name)
	s.mu.Unlock()
	s.cancelMonitors(e)
	op, _ := json.Marshal(map[string]any{"op": "delete", "table": "Database",
		"where": []any{[]any{"_uuid", "==", []string{"uuid", e.row.String()}}}})
	s.serverDB.d.Transact([]json.RawMessage{op}, nil, time.Time{})
	return s.AddDatabase(nd, e.log, e.path)
}
