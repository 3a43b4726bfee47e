package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/govs/govs/ovsdb/db"
	"github.com/govs/govs/ovsdb/jsonrpc"
	"github.com/govs/govs/utilities/internal/dbtext"
	"github.com/govs/govs/utilities/internal/ovsdbc"
)

// monitoredTable is one table a monitor prints, with its columns in the
// order the command line named them.
type monitoredTable struct {
	table *db.Table
	cols  []*db.Column
}

// monitorVersion is which monitor method is used, and so which update
// notifications arrive: "update" (monitor), "update2" (monitor_cond) or
// "update3" (monitor_cond_since).
type monitorVersion int

const (
	monitorV1 monitorVersion = iota + 1
	monitorV2
	monitorV3
)

func cmdMonitor(c *client, args []string) { c.monitor(monitorV1, args, nil, "") }

// zeroUUID is the last transaction id monitor-cond-since asks from when
// none is given: the server then sends everything.
const zeroUUID = "00000000-0000-0000-0000-000000000000"

// cmdMonitorCondSince is "monitor-cond-since [LASTID] CONDITION TABLE
// [COLUMN,...]...": the first argument is the last transaction id if it
// reads as a UUID.
func cmdMonitorCondSince(c *client, args []string) {
	lastID := zeroUUID
	if _, err := db.ParseUUID(args[0]); err == nil {
		lastID, args = args[0], args[1:]
	}
	if len(args) < 2 {
		die("invalid syntax for 'monitor-cond-since' (use --help for help)")
	}
	c.monitorCond(monitorV3, args, lastID)
}

// cmdMonitorCond is "monitor-cond CONDITION TABLE [COLUMN,...]...": the
// condition is checked against the table before anything is sent.
func cmdMonitorCond(c *client, args []string) { c.monitorCond(monitorV2, args, "") }

func (c *client) monitorCond(version monitorVersion, args []string, lastID string) {
	s := c.schema()
	t := s.Tables[args[1]]
	if t == nil {
		die("%s does not have a table named \"%s\"", c.db, args[1])
	}
	var v any
	if err := json.Unmarshal([]byte(args[0]), &v); err != nil {
		die("\"%s\": %s", args[0], jsonError(err))
	}
	if _, err := db.ParseConditions(t, json.RawMessage(args[0]), nil); err != nil {
		die("%s", err.Text())
	}
	c.monitor(version, args[1:], json.RawMessage(args[0]), lastID)
}

// jsonError words a JSON syntax error briefly.
func jsonError(err error) string {
	if se, ok := err.(*json.SyntaxError); ok {
		return fmt.Sprintf("syntax error at offset %d", se.Offset)
	}
	return err.Error()
}

// monitor sends a monitor request for TABLE (or ALL tables) and the column
// and event selections in args[1:], prints the initial contents, then
// every update, until the server goes away.
func (c *client) monitor(version monitorVersion, args []string, cond json.RawMessage, lastID string) {
	d := c.daemonize(1, 2)
	blk := c.monitorCommands(d)
	s := c.schema()
	var mts []*monitoredTable
	reqs := map[string]any{}
	if args[0] == "ALL" {
		if cond != nil {
			die("ALL tables are not allowed with condition")
		}
		for _, tn := range s.TableNames() {
			mts = append(mts, c.monitorTable(s.Tables[tn], args[1:], nil, reqs))
		}
	} else {
		t := s.Tables[args[0]]
		if t == nil {
			die("%s: %s does not have a table named \"%s\"", c.remote, c.db, args[0])
		}
		mts = append(mts, c.monitorTable(t, args[1:], cond, reqs))
	}

	// Like OVS, ask to hear of the database's removal; an old server that
	// does not know the method is fine.
	c.conn.Call("set_db_change_aware", []any{true})

	method := "monitor"
	params := []any{c.db, nil, reqs}
	switch version {
	case monitorV2:
		method = "monitor_cond"
	case monitorV3:
		method = "monitor_cond_since"
		params = append(params, lastID)
	}
	var initial json.RawMessage
	c.conn.Notify = func(m *jsonrpc.Message) { c.monitorNotify(version, mts, m) }
	initial, err := c.conn.Call(method, params)
	if err != nil {
		if e, ok := err.(*ovsdbc.RPCError); ok {
			die("%s: %s failed: %s", c.remote, method, dbtext.SortedJSON(e.Raw))
		}
		die("%s: receive failed (%s)", c.remote, recvErrno(err))
	}
	if version == monitorV3 {
		// The reply is [found, last_id, updates]; OVS prints the first two
		// on a line of their own.
		var reply []json.RawMessage
		var found bool
		var last string
		if json.Unmarshal(initial, &reply) != nil || len(reply) != 3 ||
			json.Unmarshal(reply[0], &found) != nil || json.Unmarshal(reply[1], &last) != nil {
			die("%s: monitor_cond_since reply is not [found, last_id, updates]: %s", c.remote, compactRaw(initial))
		}
		fmt.Printf("found: %t, last_id: %s\n", found, last)
		initial = reply[2]
	}
	c.monitorPrint(version, mts, initial, true)
	ready(d)
	for {
		m, err := c.conn.Recv(time.Time{})
		if err != nil {
			die("%s: receive failed (%s)", c.remote, recvErrno(err))
		}
		blk.wait()
		if m.Type() == jsonrpc.Notification {
			c.monitorNotify(version, mts, m)
		}
	}
}

// recvErrno words a receive error as OVS does: "End of file" when the
// server closed the connection.
func recvErrno(err error) string {
	if err == io.EOF {
		return "End of file"
	}
	return ovsdbc.Errno(err)
}

func (c *client) monitorNotify(version monitorVersion, mts []*monitoredTable, m *jsonrpc.Message) {
	var p []json.RawMessage
	switch m.Method {
	case "update", "update2":
		if m.Method == "update2" && version != monitorV2 {
			return
		}
		if json.Unmarshal(m.Params, &p) != nil || len(p) != 2 || string(p[0]) != "null" {
			return
		}
		v := monitorV1
		if m.Method == "update2" {
			v = monitorV2
		}
		c.monitorPrint(v, mts, p[1], false)
	case "update3":
		// [monitor id, last_id, updates]: OVS prints the id after a blank
		// line, and the table that follows its usual separator.
		var last string
		if version != monitorV3 || json.Unmarshal(m.Params, &p) != nil || len(p) != 3 || string(p[0]) != "null" ||
			json.Unmarshal(p[1], &last) != nil {
			return
		}
		fmt.Printf("\nlast_id: %s", last)
		c.monitorPrint(monitorV2, mts, p[2], false)
	case "monitor_canceled":
		die("%s: %s database was removed", c.remote, c.db)
	}
}

// monitorTable adds table t's monitor requests to reqs, one for each
// column selection in specs (or one of every column), and returns the
// columns it prints.
func (c *client) monitorTable(t *db.Table, specs []string, cond json.RawMessage, reqs map[string]any) *monitoredTable {
	mt := &monitoredTable{table: t}
	if len(specs) == 0 {
		specs = []string{""}
	}
	var list []any
	for i, spec := range specs {
		mr := c.parseMonitorColumns(spec, mt)
		if i == 0 && cond != nil {
			mr["where"] = cond
		}
		list = append(list, mr)
	}
	reqs[t.Name] = list
	return mt
}

// parseMonitorColumns parses one "COLUMN,...,[!]EVENT" selection.
func (c *client) parseMonitorColumns(spec string, mt *monitoredTable) map[string]any {
	events := map[string]bool{"initial": true, "insert": true, "delete": true, "modify": true}
	cols := []string{}
	add := func(col *db.Column) {
		if slices.Contains(mt.cols, col) {
			die("%s: column \"%s\" mentioned multiple times", c.remote, col.Name)
		}
		mt.cols = append(mt.cols, col)
		cols = append(cols, col.Name)
	}
	for _, tok := range strings.Split(spec, ",") {
		if tok == "" {
			continue
		}
		if ev, ok := strings.CutPrefix(tok, "!"); ok {
			if _, known := events[ev]; known {
				events[ev] = false
				continue
			}
		}
		col := mt.table.ByName[tok]
		if col == nil {
			die("%s: table \"%s\" in %s does not have a column named \"%s\"", c.remote, mt.table.Name, c.db, tok)
		}
		add(col)
	}
	if len(cols) == 0 {
		// Every column in name order, then _version, as OVS asks.
		all := slices.Clone(mt.table.Columns)
		slices.SortFunc(all, func(a, b *db.Column) int { return strings.Compare(a.Name, b.Name) })
		for _, col := range all {
			add(col)
		}
		add(mt.table.ByName["_version"])
	}
	mr := map[string]any{"columns": cols}
	if !events["initial"] || !events["insert"] || !events["delete"] || !events["modify"] {
		mr["select"] = events
	}
	return mr
}

// monitorPrint prints one update (or the initial contents) as a table per
// monitored table it touches, captioned by the table's name when several
// are monitored.
func (c *client) monitorPrint(version monitorVersion, mts []*monitoredTable, raw json.RawMessage, initial bool) {
	var upd map[string]json.RawMessage
	if err := json.Unmarshal(raw, &upd); err != nil {
		fmt.Fprintf(os.Stderr, "%s: <table-updates> is not object\n", program)
		return
	}
	for _, mt := range mts {
		tu, ok := upd[mt.table.Name]
		if !ok {
			continue
		}
		var rows map[string]map[string]json.RawMessage
		if err := json.Unmarshal(tu, &rows); err != nil {
			fmt.Fprintf(os.Stderr, "%s: <table-update> for table %s is not object\n", program, mt.table.Name)
			continue
		}
		t := &dbtext.Table{Headings: []string{"row", "action"}}
		if len(mts) > 1 {
			t.Caption = mt.table.Name
		}
		if c.timestamp {
			t.Timestamp = time.Now().UTC().Format("2006-01-02 15:04:05.000")
		}
		for _, col := range mt.cols {
			t.Headings = append(t.Headings, col.Name)
		}
		// OVS prints rows in its hash order; uuid order is as good and
		// the same every time.
		for _, uuid := range slices.Sorted(maps.Keys(rows)) {
			ru := rows[uuid]
			if version != monitorV1 {
				c.monitor2Row(t, mt, uuid, ru)
				continue
			}
			old, hasOld := ru["old"]
			nw, hasNew := ru["new"]
			switch {
			case initial:
				monitorRow(t, mt, "initial", uuid, nw, hasNew)
			case !hasOld:
				monitorRow(t, mt, "insert", uuid, nw, hasNew)
			case !hasNew:
				monitorRow(t, mt, "delete", uuid, old, hasOld)
			default:
				monitorRow(t, mt, "old", uuid, old, true)
				monitorRow(t, mt, "new", "", nw, true)
			}
		}
		c.out.Print(t)
	}
}

// monitor2Row adds an update2 row: its one member says what happened.
func (c *client) monitor2Row(t *dbtext.Table, mt *monitoredTable, uuid string, ru map[string]json.RawMessage) {
	for _, op := range []string{"delete", "initial", "modify", "insert"} {
		row, ok := ru[op]
		if !ok {
			continue
		}
		if op == "delete" {
			if string(row) != "null" {
				fmt.Fprintf(os.Stderr, "%s: delete method does not expect <row>\n", program)
				return
			}
			t.Rows = append(t.Rows, []dbtext.Cell{dbtext.TextCell(uuid), dbtext.TextCell(op)})
			// OVS leaves the row's other cells out; they print empty.
			for range mt.cols {
				t.Rows[len(t.Rows)-1] = append(t.Rows[len(t.Rows)-1], dbtext.Cell{})
			}
			return
		}
		monitorRow(t, mt, op, uuid, row, true)
		return
	}
}

// monitorRow adds a row of the action's name; a column the server left
// out prints empty.
func monitorRow(t *dbtext.Table, mt *monitoredTable, action, uuid string, raw json.RawMessage, present bool) {
	if !present {
		fmt.Fprintf(os.Stderr, "%s: missing %s row\n", program, action)
		return
	}
	var row map[string]json.RawMessage
	if err := json.Unmarshal(raw, &row); err != nil || row == nil {
		fmt.Fprintf(os.Stderr, "%s: <row> is not object\n", program)
		return
	}
	cells := []dbtext.Cell{dbtext.TextCell(uuid), dbtext.TextCell(action)}
	for _, col := range mt.cols {
		v, ok := row[col.Name]
		if !ok {
			cells = append(cells, dbtext.Cell{})
			continue
		}
		typ := columnType(col)
		cells = append(cells, dbtext.JSONCell(v, &typ))
	}
	t.Rows = append(t.Rows, cells)
}
