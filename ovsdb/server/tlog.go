package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/govs/govs/ovsdb/db"
)

// Transaction logging (ovsdb-server/tlog-set, tlog-list): every change to a
// table with logging on is logged by the "transaction" module at INFO, one
// line per row as ovsdb-server writes them:
// "table:T,op:inserted|updated|deleted,col:value,...", with _uuid and
// _version.

// SetTxnLog turns logging of the changes to dbName's table on or off, with
// ovsdb-server's texts.
func (s *Server) SetTxnLog(spec, onOff string) error {
	var on bool
	switch strings.ToLower(onOff) {
	case "on":
		on = true
	case "off":
	default:
		return errors.New("invalid command argument")
	}
	parts := strings.Split(spec, ":")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return errors.New("invalid DB:TABLE argument")
	}
	e := s.entry(parts[0])
	if e == nil {
		return errors.New("no such database")
	}
	if e.d.Schema().Tables[parts[1]] == nil {
		return errors.New("no such table")
	}
	e.d.Read(func(db.Snapshot) {
		if e.tlog == nil {
			e.tlog = map[string]bool{}
		}
		e.tlog[parts[1]] = on
	})
	return nil
}

// TxnLogList is ovsdb-server/tlog-list's table.
func (s *Server) TxnLogList() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s%-28s%s\n", "database", "table", "logging")
	fmt.Fprintf(&b, "%-16s%-28s%s\n", "--------", "-----", "-------")
	for _, name := range s.DatabaseNames() {
		e := s.entry(name)
		if e == nil {
			continue
		}
		fmt.Fprintf(&b, "%-16s \n", name)
		e.d.Read(func(db.Snapshot) {
			for _, tn := range e.d.Schema().TableNames() {
				state := "OFF"
				if e.tlog[tn] {
					state = "ON"
				}
				fmt.Fprintf(&b, "%-16s%-28s%s\n", "", tn, state)
			}
		})
	}
	return b.String()
}

// logTxn logs c's changes to the tables of e with logging on. Called under
// e's database lock.
func (s *Server) logTxn(e *dbEntry, c *db.Commit) {
	if len(e.tlog) == 0 {
		return
	}
	for tn, rows := range c.Tables {
		if !e.tlog[tn] {
			continue
		}
		t := e.d.Schema().Tables[tn]
		for _, u := range sortedUUIDs(rows) {
			ch := rows[u]
			op, r := "updated", ch.New
			switch {
			case ch.Old == nil:
				op = "inserted"
			case ch.New == nil:
				op, r = "deleted", ch.Old
			}
			var b strings.Builder
			fmt.Fprintf(&b, "table:%s,op:%s", tn, op)
			for _, col := range t.Columns {
				fmt.Fprintf(&b, ",%s:%s", col.Name, db.DatumString(&col.Type, r.Get(col)))
			}
			fmt.Fprintf(&b, ",_uuid:%s,_version:%s", r.UUID, r.Version)
			s.txnLog.Infof("%s", b.String())
		}
	}
}
