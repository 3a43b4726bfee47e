// Command ovsdb-client is govs' ovsdb-client: the read and transact
// commands of Open vSwitch 3.1's ovsdb-client(1), with its output formats.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/ovsdb/db"
	"github.com/govs/govs/utilities/internal/dbtext"
	"github.com/govs/govs/utilities/internal/ovsdbc"
)

const ovsVersion = "3.1.0"

var program = "ovsdb-client"

// onDie is run by die before exiting: it removes what a daemonized
// client created (pidfile, unixctl socket), as OVS's fatal-signal hooks do.
var onDie func()

func die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s: %s\n", program, fmt.Sprintf(format, args...))
	if onDie != nil {
		onDie()
	}
	os.Exit(1)
}

func defaultRemote() string { return "unix:" + filepath.Join(daemon.Rundir(), "db.sock") }

// command is one ovsdb-client command: its argument counts after the
// server and database, and whether it takes a database.
type command struct {
	min, max int
	needDB   bool
	run      func(c *client, args []string)
	// ownDial commands connect when they are ready to (wait retries).
	ownDial bool
}

var commands = map[string]*command{
	"list-dbs":           {0, 0, false, cmdListDbs, false},
	"get-schema":         {0, 0, true, cmdGetSchema, false},
	"get-schema-version": {0, 0, true, cmdGetSchemaVersion, false},
	"list-tables":        {0, 0, true, cmdListTables, false},
	"list-columns":       {0, 1, true, cmdListColumns, false},
	"transact":           {1, 1, false, cmdTransact, false},
	"query":              {1, 1, false, cmdQuery, false},
	"dump":               {0, maxInt, true, cmdDump, false},
	"monitor":            {1, maxInt, true, cmdMonitor, false},
	"monitor-cond":       {2, maxInt, true, cmdMonitorCond, false},
	"monitor-cond-since": {2, maxInt, true, cmdMonitorCondSince, false},
	"needs-conversion":   {1, 1, false, cmdNeedsConversion, true},
	"convert":            {1, 1, false, cmdConvert, true},
	"wait":               {2, 2, false, cmdWait, true},
	"backup":             {0, 0, true, cmdBackup, false},
	"restore":            {0, 0, true, cmdRestore, false},
	"get-schema-cksum":   {0, 0, true, cmdGetSchemaCksum, false},
	"lock":               {1, 1, false, cmdLock, false},
	"steal":              {1, 1, false, cmdSteal, false},
	"unlock":             {1, 1, false, cmdUnlock, false},
}

// unsupported are OVS's commands this client refuses rather than half-does.
var unsupported = []string{"dump-index"}

const maxInt = int(^uint(0) >> 1)

type client struct {
	conn   *ovsdbc.Conn
	remote string
	db     string
	style  dbtext.Style
	out    *dbtext.Printer
	// timestamp puts the time above each table monitor prints.
	timestamp bool
	// force makes restore go ahead despite a schema difference.
	force bool
	// daemonOpts are --detach, --pidfile and the like, which the
	// monitor and lock commands obey (see daemonize).
	daemonOpts daemon.Options
}

func isRemote(s string) bool {
	for _, p := range []string{"unix:", "tcp:", "ssl:", "punix:", "ptcp:", "pssl:"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func main() {
	program = filepath.Base(os.Args[0])
	c := &client{style: dbtext.Style{Format: dbtext.FormatTable},
		daemonOpts: daemon.Options{Rundir: daemon.Rundir(), Logdir: daemon.Logdir()}}
	args := os.Args[1:]
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
		a := args[0]
		args = args[1:]
		if a == "--" {
			break
		}
		name, val, hasVal := strings.Cut(a, "=")
		need := func() string {
			if hasVal {
				return val
			}
			if len(args) == 0 {
				die("option '%s' requires an argument", name)
			}
			v := args[0]
			args = args[1:]
			return v
		}
		switch name {
		case "-f", "--format":
			if err := c.style.ParseFormat(need()); err != nil {
				die("%v", err)
			}
		case "-d", "--data":
			if err := c.style.ParseCellFormat(need()); err != nil {
				die("%v", err)
			}
		case "--no-headings":
			c.style.NoHeadings = true
		case "--timestamp":
			c.timestamp = true
		case "--force":
			c.force = true
		case "--pretty":
			c.style.Pretty = true
		case "--bare":
			c.style.Format, c.style.Cell, c.style.NoHeadings = dbtext.FormatList, dbtext.CellBare, true
		case "-V", "--version":
			fmt.Printf("%s (Open vSwitch) %s\n", program, ovsVersion)
			os.Exit(0)
		case "-h", "--help":
			fmt.Printf("%s: Open vSwitch database JSON-RPC client\nusage: %s [OPTIONS] COMMAND [ARG...]\n", program, program)
			os.Exit(0)
		case "--detach":
			c.daemonOpts.Detach = true
		case "--no-chdir":
			c.daemonOpts.NoChdir = true
		case "--monitor":
			c.daemonOpts.Monitor = true
		case "--overwrite-pidfile":
			c.daemonOpts.OverwritePidfile = true
		case "--pidfile":
			// An optional argument: only "--pidfile=FILE" names the file.
			p := program + ".pid"
			if hasVal {
				p = val
			}
			if !filepath.IsAbs(p) {
				p = filepath.Join(c.daemonOpts.Rundir, p)
			}
			c.daemonOpts.Pidfile = p
		case "--user":
			c.daemonOpts.User = need()
		case "-v", "--verbose", "--no-syslog", "--log-file":
		case "-t", "--timeout":
			need()
		default:
			die("unrecognized option '%s'", a)
		}
	}
	if len(args) == 0 {
		die("missing command name; use --help for help")
	}
	name := args[0]
	args = args[1:]
	cmd := commands[name]
	if cmd == nil {
		for _, u := range unsupported {
			if u == name {
				die("'%s' is not supported by govs' ovsdb-client yet", name)
			}
		}
		die("unknown command '%s'; use --help for help", name)
	}
	c.remote = defaultRemote()
	// wait's server is positional, as in OVS: only its third argument
	// from the end is one.
	if len(args) > 0 && isRemote(args[0]) && (name != "wait" || len(args) > 2) {
		c.remote = args[0]
		args = args[1:]
	}
	if !cmd.ownDial {
		c.dial()
	}
	if cmd.needDB {
		c.db = "Open_vSwitch"
		var dbs []string
		raw, err := c.conn.Call("list_dbs", []any{})
		if err == nil {
			json.Unmarshal(raw, &dbs)
		}
		// An argument names the database only if the command has more
		// than it needs without it, as in OVS's open_rpc.
		if len(args) > cmd.min {
			for _, d := range dbs {
				if d == args[0] {
					c.db = d
					args = args[1:]
					break
				}
			}
		}
	}
	if len(args) < cmd.min || len(args) > cmd.max {
		die("invalid syntax for '%s' (use --help for help)", name)
	}
	c.out = &dbtext.Printer{W: os.Stdout, Style: c.style}
	cmd.run(c, args)
}

// dial connects to the server or dies, as OVS's open_jsonrpc.
func (c *client) dial() {
	conn, err := ovsdbc.Dial(c.remote)
	if err != nil {
		die("failed to connect to \"%s\" (%s)", c.remote, ovsdbc.Errno(err))
	}
	c.conn = conn
}

func (c *client) call(method string, params any) json.RawMessage {
	raw, err := c.conn.Call(method, params)
	if err != nil {
		if e, ok := err.(*ovsdbc.RPCError); ok {
			die("%s", strings.Trim(string(e.Raw), `"`))
		}
		die("%s: %s", c.remote, ovsdbc.Errno(err))
	}
	return raw
}

func cmdListDbs(c *client, _ []string) {
	var dbs []string
	if err := json.Unmarshal(c.call("list_dbs", []any{}), &dbs); err != nil {
		die("list_dbs response is not array of strings")
	}
	sort.Strings(dbs)
	for _, d := range dbs {
		fmt.Println(d)
	}
}

func (c *client) schemaJSON() json.RawMessage { return c.call("get_schema", []any{c.db}) }

func (c *client) schema() *db.Schema {
	s, err := db.ParseSchema(c.schemaJSON())
	if err != nil {
		die("%v", err)
	}
	return s
}

// cmdGetSchema prints the schema as OVS reserializes it: keys sorted,
// column types in their shortest form.
func cmdGetSchema(c *client, _ []string) { fmt.Println(c.schemaOVSJSON()) }

// cmdGetSchemaCksum prints the schema's checksum, empty if it has none.
func cmdGetSchemaCksum(c *client, _ []string) {
	var s struct {
		Cksum string `json:"cksum"`
	}
	json.Unmarshal(c.schemaJSON(), &s)
	fmt.Println(s.Cksum)
}

// schemaOVSJSON returns the schema as OVS's ovsdb_schema_to_json writes it.
func (c *client) schemaOVSJSON() string {
	dec := json.NewDecoder(bytes.NewReader(c.schemaJSON()))
	dec.UseNumber()
	var sch map[string]any
	if err := dec.Decode(&sch); err != nil {
		die("%v", err)
	}
	if tables, ok := sch["tables"].(map[string]any); ok {
		for _, t := range tables {
			tm, _ := t.(map[string]any)
			if cols, ok := tm["columns"].(map[string]any); ok {
				for _, col := range cols {
					if cm, ok := col.(map[string]any); ok {
						cm["type"] = normType(cm["type"])
					}
				}
			}
		}
	}
	return compact(sch)
}

func cmdGetSchemaVersion(c *client, _ []string) {
	fmt.Println(c.schema().Version)
}

func cmdListTables(c *client, _ []string) {
	s := c.schema()
	t := &dbtext.Table{Headings: []string{"Table"}}
	for _, n := range s.TableNames() {
		t.Rows = append(t.Rows, []dbtext.Cell{dbtext.TextCell(n)})
	}
	c.out.Print(t)
}

// columnTypes returns each column's type as OVS prints it
// (ovsdb_type_to_json), from the schema's JSON.
func (c *client) columnTypes() map[string]map[string]string {
	var js struct {
		Tables map[string]struct {
			Columns map[string]struct {
				Type any `json:"type"`
			} `json:"columns"`
		} `json:"tables"`
	}
	dec := json.NewDecoder(bytes.NewReader(c.schemaJSON()))
	dec.UseNumber()
	if err := dec.Decode(&js); err != nil {
		die("%v", err)
	}
	out := map[string]map[string]string{}
	for tn, t := range js.Tables {
		m := map[string]string{"_uuid": `"uuid"`, "_version": `"uuid"`}
		for cn, col := range t.Columns {
			m[cn] = compact(normType(col.Type))
		}
		out[tn] = m
	}
	return out
}

func normBase(b any) any {
	m, ok := b.(map[string]any)
	if !ok {
		return b
	}
	if len(m) == 1 {
		if t, ok := m["type"]; ok {
			return t
		}
	}
	if m["refType"] == "strong" {
		delete(m, "refType")
	}
	// An enum is a set, so OVS prints it sorted whatever the schema's order.
	if e, ok := m["enum"].([]any); ok && len(e) == 2 {
		if elems, ok := e[1].([]any); ok {
			sort.SliceStable(elems, func(i, j int) bool {
				a, aok := elems[i].(string)
				b, bok := elems[j].(string)
				if aok && bok {
					return a < b
				}
				xn, _ := elems[i].(json.Number)
				yn, _ := elems[j].(json.Number)
				x, _ := xn.Float64()
				y, _ := yn.Float64()
				return x < y
			})
		}
	}
	return m
}

func normType(t any) any {
	m, ok := t.(map[string]any)
	if !ok {
		return t
	}
	out := map[string]any{"key": normBase(m["key"])}
	if v, ok := m["value"]; ok {
		out["value"] = normBase(v)
	}
	if v, ok := m["min"]; ok && fmt.Sprint(v) != "1" {
		out["min"] = v
	}
	if v, ok := m["max"]; ok && fmt.Sprint(v) != "1" {
		out["max"] = v
	}
	if _, plain := out["key"].(string); plain && len(out) == 1 {
		return out["key"]
	}
	return out
}

func compact(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

func cmdListColumns(c *client, args []string) {
	types := c.columnTypes()
	var t *dbtext.Table
	if len(args) == 1 {
		cols, ok := types[args[0]]
		if !ok {
			// OVS prints an empty table for an unknown one.
			cols = nil
		}
		t = &dbtext.Table{Headings: []string{"Column", "Type"}}
		for _, n := range slices.Sorted(maps.Keys(cols)) {
			t.Rows = append(t.Rows, []dbtext.Cell{dbtext.TextCell(n), dbtext.TextCell(cols[n])})
		}
	} else {
		t = &dbtext.Table{Headings: []string{"Table", "Column", "Type"}}
		for _, tn := range slices.Sorted(maps.Keys(types)) {
			for _, n := range slices.Sorted(maps.Keys(types[tn])) {
				t.Rows = append(t.Rows, []dbtext.Cell{dbtext.TextCell(tn), dbtext.TextCell(n), dbtext.TextCell(types[tn][n])})
			}
		}
	}
	c.out.Print(t)
}

func parseTxn(s string) []json.RawMessage {
	var params []json.RawMessage
	if err := json.Unmarshal([]byte(s), &params); err != nil || len(params) == 0 {
		die("transaction must be specified as JSON array")
	}
	return params
}

func cmdTransact(c *client, args []string) {
	fmt.Println(dbtext.SortedJSON(c.call("transact", parseTxn(args[0]))))
}

// cmdQuery is transact with an abort at the end, so nothing is committed.
func cmdQuery(c *client, args []string) {
	params := append(parseTxn(args[0]), json.RawMessage(`{"op":"abort"}`))
	var res []json.RawMessage
	json.Unmarshal(c.call("transact", params), &res)
	// Drop the abort's own result: the caller sees its operations' only.
	if n := len(params) - 2; len(res) > n {
		res = res[:n]
	}
	out, _ := json.Marshal(res)
	fmt.Println(dbtext.SortedJSON(out))
}

func cmdDump(c *client, args []string) {
	s := c.schema()
	tables := s.TableNames()
	if len(args) > 0 {
		t := s.Tables[args[0]]
		if t == nil {
			die("No table \"%s\" found.", args[0])
		}
		tables = []string{t.Name}
	}
	var ops []json.RawMessage
	ops = append(ops, json.RawMessage(compact(c.db)))
	for _, tn := range tables {
		ops = append(ops, json.RawMessage(`{"op":"select","table":`+compact(tn)+`,"where":[]}`))
	}
	var res []struct {
		Rows []map[string]json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(c.call("transact", ops), &res); err != nil || len(res) < len(tables) {
		die("transaction failed")
	}
	for i, tn := range tables {
		t := s.Tables[tn]
		var cols []*db.Column
		if len(args) > 1 {
			for _, cn := range args[1:] {
				col := t.ByName[cn]
				if col == nil {
					die("Table \"%s\" has no column %s.", tn, cn)
				}
				cols = append(cols, col)
			}
			// OVS prints the columns named in name order.
			sort.SliceStable(cols, func(a, b int) bool { return cols[a].Name < cols[b].Name })
		} else {
			cols = append([]*db.Column{t.ByName["_uuid"]}, t.Columns...)
		}
		rows := make([][]db.Datum, 0, len(res[i].Rows))
		for _, r := range res[i].Rows {
			row := make([]db.Datum, len(cols))
			for j, col := range cols {
				typ := columnType(col)
				d, err := db.ParseDatum(&typ, r[col.Name], nil)
				if err != nil {
					d = db.DefaultDatum(&typ)
				}
				row[j] = d
			}
			rows = append(rows, row)
		}
		// OVS sorts the rows by their columns, _uuid aside.
		sort.SliceStable(rows, func(a, b int) bool {
			for j, col := range cols {
				if col.Name == "_uuid" {
					continue
				}
				if x := db.CompareDatums(rows[a][j], rows[b][j]); x != 0 {
					return x < 0
				}
			}
			return false
		})
		tb := &dbtext.Table{Caption: tn + " table"}
		for _, col := range cols {
			tb.Headings = append(tb.Headings, col.Name)
		}
		for _, r := range rows {
			cells := make([]dbtext.Cell, len(cols))
			for j, col := range cols {
				typ := columnType(col)
				cells[j] = dbtext.DatumCell(r[j], &typ)
			}
			tb.Rows = append(tb.Rows, cells)
		}
		c.out.Print(tb)
	}
}

var uuidType = db.ColumnType{Key: db.BaseType{Type: db.TypeUUID}, Min: 1, Max: 1}

func columnType(col *db.Column) db.ColumnType {
	if col.Index < 0 {
		return uuidType
	}
	return col.Type
}
