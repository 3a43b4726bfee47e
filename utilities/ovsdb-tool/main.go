// Command ovsdb-tool manages OVSDB database files in the standalone format,
// as Open vSwitch's ovsdb-tool does (same commands, output, error texts and
// exit statuses for what it supports), on govs' own storage and database
// code:
//
//	ovsdb-tool create [DB [SCHEMA]]      compact DB [DST]
//	ovsdb-tool convert DB SCHEMA [DST]   needs-conversion DB SCHEMA
//	ovsdb-tool db-version|db-cksum|db-name DB
//	ovsdb-tool schema-version|schema-cksum|schema-name SCHEMA
//	ovsdb-tool query|transact DB TRNS    show-log [-m] DB
//	ovsdb-tool db-is-standalone|db-is-clustered|check-cluster DB
//
// Clustered databases are not supported: their commands are refused.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/govs/govs/internal/daemon"
	"github.com/govs/govs/ovsdb/db"
	"github.com/govs/govs/ovsdb/server"
	"github.com/govs/govs/ovsdb/storage"
	"github.com/govs/govs/utilities/internal/ovsdbc"
)

const (
	program = "ovsdb-tool"
	version = "3.1.0"
)

// toolError is a failure printed as "ovsdb-tool: TEXT", exit status 1.
type toolError struct{ text string }

func (e *toolError) Error() string { return e.text }

func failf(format string, args ...any) error { return &toolError{fmt.Sprintf(format, args...)} }

type command struct {
	min, max int
	run      func(t *tool, args []string) error
}

type tool struct {
	out       io.Writer
	verbosity int // show-log -m count
}

var commands = map[string]command{
	"create":           {0, 2, (*tool).create},
	"compact":          {0, 2, (*tool).compact},
	"convert":          {0, 3, (*tool).convert},
	"needs-conversion": {0, 2, (*tool).needsConversion},
	"db-version":       {0, 1, dbField("version")},
	"db-cksum":         {0, 1, dbField("cksum")},
	"db-name":          {0, 1, dbField("name")},
	"schema-version":   {0, 1, schemaField("version")},
	"schema-cksum":     {0, 1, schemaField("cksum")},
	"schema-name":      {0, 1, schemaField("name")},
	"query":            {1, 2, func(t *tool, a []string) error { return t.transact(a, false) }},
	"transact":         {1, 2, func(t *tool, a []string) error { return t.transact(a, true) }},
	"show-log":         {0, 1, (*tool).showLog},
	"db-is-standalone": {0, 1, func(t *tool, a []string) error { return t.isStandalone(a, true) }},
	"db-is-clustered":  {0, 1, func(t *tool, a []string) error { return t.isStandalone(a, false) }},
	"check-cluster":    {1, 1, (*tool).checkCluster},
}

// exitStatus carries a quiet exit status (db-is-standalone's answer).
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout))
}

func run(argv []string, out io.Writer) int {
	t := &tool{out: out}
	var help, showVersion, listOptions bool
	set := func(p *bool) func(string) error { return func(string) error { *p = true; return nil } }
	log := daemon.NewLogger(os.Stderr)
	flags := []daemon.Flag{
		{Long: "more", Short: 'm', Set: func(string) error { t.verbosity++; return nil }},
		{Long: "verbose", Short: 'v', Arg: daemon.OptionalArg, Set: func(v string) error {
			// The library's modules: ovs-ctl runs "ovsdb-tool -vconsole:off".
			if err := log.Set(v); err != nil && !strings.Contains(err.Error(), "module") {
				fmt.Fprintf(os.Stderr, "%s: processing \"%s\": %v\n", program, v, err)
				os.Exit(1)
			}
			return nil
		}},
		{Long: "help", Short: 'h', Set: set(&help)},
		{Long: "option", Short: 'o', Set: set(&listOptions)},
		{Long: "version", Short: 'V', Set: set(&showVersion)},
	}
	args, err := daemon.Getopt(argv, flags, false)
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "%s: %v\n", os.Args[0], err)
		return 1
	case help:
		fmt.Fprint(out, usage())
		return 0
	case listOptions:
		for _, f := range flags {
			fmt.Fprintf(out, "--%s\n-%c \n", f.Long, f.Short)
		}
		return 0
	case showVersion:
		fmt.Fprint(out, daemon.VersionText(program, version))
		return 0
	case len(args) == 0:
		fmt.Fprintf(os.Stderr, "%s: missing command name; use --help for help\n", program)
		return 1
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "%s: unknown command '%s'; use --help for help\n", program, args[0])
		return 1
	}
	n := len(args) - 1
	if n < c.min {
		fmt.Fprintf(os.Stderr, "%s: '%s' command requires at least %d arguments\n", program, args[0], c.min)
		return 1
	}
	if n > c.max {
		fmt.Fprintf(os.Stderr, "%s: '%s' command takes at most %d arguments\n", program, args[0], c.max)
		return 1
	}
	if err := c.run(t, args[1:]); err != nil {
		var es exitStatus
		if errors.As(err, &es) {
			return int(es)
		}
		fmt.Fprintf(os.Stderr, "%s: %v\n", program, err)
		return 1
	}
	return 0
}

func usage() string {
	return fmt.Sprintf(`%s: Open vSwitch database management utility
usage: %s [OPTIONS] COMMAND [ARG...]
  create [DB [SCHEMA]]    create DB with the given SCHEMA
  compact [DB [DST]]      compact DB in-place (or to DST)
  convert [DB [SCHEMA [DST]]]  convert DB to SCHEMA (to DST)
  db-name [DB]            report name of schema used by DB
  db-version [DB]         report version of schema used by DB
  db-cksum [DB]           report checksum of schema used by DB
  db-is-clustered DB      test whether DB is clustered
  db-is-standalone DB     test whether DB is standalone
  schema-name [SCHEMA]    report SCHEMA's name
  schema-version [SCHEMA] report SCHEMA's schema version
  schema-cksum [SCHEMA]   report SCHEMA's checksum
  needs-conversion [DB [SCHEMA]] does DB need conversion to SCHEMA?
  query [DB] TRNS         execute read-only transaction on DB
  transact [DB] TRNS      execute read/write transaction on DB
  show-log [DB]           prints information about DB's log entries
  check-cluster DB...     clustered databases are not supported by govs
The default DB is %s.
The default SCHEMA is %s.

Other options:
  -m, --more                  increase show-log verbosity
  -h, --help                  display this help message
  -V, --version               display version information
`, program, program, defaultDB(), defaultSchema())
}

func defaultDB() string {
	dir := os.Getenv("OVS_DBDIR")
	if dir == "" {
		if sc := os.Getenv("OVS_SYSCONFDIR"); sc != "" {
			dir = filepath.Join(sc, "openvswitch")
		} else {
			dir = "/etc/openvswitch"
		}
	}
	return filepath.Join(dir, "conf.db")
}

func defaultSchema() string {
	dir := os.Getenv("OVS_PKGDATADIR")
	if dir == "" {
		dir = "/usr/share/openvswitch"
	}
	return filepath.Join(dir, "vswitch.ovsschema")
}

func argOr(args []string, i int, def string) string {
	if i < len(args) {
		return args[i]
	}
	return def
}

// schemaInfo is what the *-version, *-cksum and *-name commands report.
type schemaInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Cksum   string `json:"cksum"`
}

func (s schemaInfo) field(f string) string {
	switch f {
	case "name":
		return s.Name
	case "version":
		return s.Version
	}
	return s.Cksum
}

// readSchema reads and checks a schema file.
func readSchema(path string) (*db.Schema, schemaInfo, error) {
	var info schemaInfo
	s, data, err := ovsdbc.ReadSchema(path)
	if err != nil {
		return nil, info, failf("%v", err)
	}
	json.Unmarshal(data, &info)
	return s, info, nil
}

// checkFile gives OVS's errors for a database file that is missing, is
// clustered or is not a database at all.
func checkFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return failf("I/O error: %s: open failed (%s)", path, daemon.Strerror(err))
	}
	defer f.Close()
	head := make([]byte, 13)
	n, _ := io.ReadFull(f, head)
	switch {
	case bytes.HasPrefix(head[:n], []byte("OVSDB JSON ")):
		return nil
	case bytes.HasPrefix(head[:n], []byte("OVSDB CLUSTER")):
		return failf("%s: clustered databases are not supported by govs' ovsdb-tool", path)
	}
	return failf("ovsdb error: %s: unexpected file format", path)
}

// openDB reads the database file at path into memory, locked. The caller
// closes the log.
func openDB(path string) (*db.Database, *storage.Log, error) {
	if err := checkFile(path); err != nil {
		return nil, nil, err
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s: %s\n", program, fmt.Sprintf(format, args...))
	}
	d, l, err := server.LoadDatabase(path, logf)
	if err != nil {
		return nil, nil, failf("ovsdb error: %v", err)
	}
	return d, l, nil
}

func (t *tool) create(args []string) error {
	path, schemaPath := argOr(args, 0, defaultDB()), argOr(args, 1, defaultSchema())
	s, _, err := readSchema(schemaPath)
	if err != nil {
		return err
	}
	l, err := storage.Create(path, s.JSON())
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return failf("I/O error: %s: create failed (%s)", path, daemon.Strerror(pe.Err))
		}
		return failf("ovsdb error: %v", err)
	}
	return l.Close()
}

func dbField(f string) func(*tool, []string) error {
	return func(t *tool, args []string) error {
		d, l, err := openDB(argOr(args, 0, defaultDB()))
		if err != nil {
			return err
		}
		l.Close()
		var info schemaInfo
		json.Unmarshal(d.Schema().JSON(), &info)
		fmt.Fprintln(t.out, info.field(f))
		return nil
	}
}

func schemaField(f string) func(*tool, []string) error {
	return func(t *tool, args []string) error {
		_, info, err := readSchema(argOr(args, 0, defaultSchema()))
		if err != nil {
			return err
		}
		fmt.Fprintln(t.out, info.field(f))
		return nil
	}
}

func (t *tool) needsConversion(args []string) error {
	d, l, err := openDB(argOr(args, 0, defaultDB()))
	if err != nil {
		return err
	}
	l.Close()
	s, _, err := readSchema(argOr(args, 1, defaultSchema()))
	if err != nil {
		return err
	}
	var a, b any
	json.Unmarshal(d.Schema().JSON(), &a)
	json.Unmarshal(s.JSON(), &b)
	if reflect.DeepEqual(a, b) {
		fmt.Fprintln(t.out, "no")
	} else {
		fmt.Fprintln(t.out, "yes")
	}
	return nil
}

// compact rewrites DB (or writes DST) as one snapshot record.
func (t *tool) compact(args []string) error {
	return t.rewrite(argOr(args, 0, defaultDB()), "", argOr(args, 1, ""), "compacted by ovsdb-tool "+version)
}

// convert rewrites DB (or writes DST) under SCHEMA: tables and columns the
// new schema lacks are dropped; the data must satisfy the new schema.
func (t *tool) convert(args []string) error {
	return t.rewrite(argOr(args, 0, defaultDB()), argOr(args, 1, defaultSchema()), argOr(args, 2, ""), "converted by ovsdb-tool "+version)
}

func (t *tool) rewrite(path, schemaPath, dst, comment string) error {
	d, l, err := openDB(path)
	if err != nil {
		return err
	}
	defer l.Close()
	sch := d.Schema()
	tables := d.SnapshotRecord()
	if schemaPath != "" {
		if sch, _, err = readSchema(schemaPath); err != nil {
			return err
		}
		tables = project(tables, sch)
		if err := db.New(sch).Replay(tables, false); err != nil {
			return failf("ovsdb error: %s: conversion to the new schema failed: %v", path, err)
		}
	}
	rec := storage.Record{Tables: tables, Comment: comment}
	if dst == "" {
		if err := l.Replace(sch.JSON(), rec); err != nil {
			return failf("ovsdb error: %v", err)
		}
		return nil
	}
	out, err := storage.Create(dst, sch.JSON())
	if err != nil {
		return failf("I/O error: %s: create failed (%s)", dst, daemon.Strerror(err))
	}
	defer out.Close()
	if err := out.Replace(nil, rec); err != nil {
		os.Remove(dst)
		return failf("ovsdb error: %v", err)
	}
	return nil
}

// project keeps the tables and columns of rows that sch has.
func project(tables map[string]map[string]json.RawMessage, sch *db.Schema) map[string]map[string]json.RawMessage {
	out := map[string]map[string]json.RawMessage{}
	for tn, rows := range tables {
		ts, ok := sch.Tables[tn]
		if !ok {
			continue
		}
		m := map[string]json.RawMessage{}
		for u, raw := range rows {
			var cols map[string]json.RawMessage
			if json.Unmarshal(raw, &cols) != nil {
				m[u] = raw
				continue
			}
			for c := range cols {
				if ts.Column(c) == nil || strings.HasPrefix(c, "_") {
					delete(cols, c)
				}
			}
			m[u], _ = json.Marshal(cols)
		}
		out[tn] = m
	}
	return out
}

// transact runs TRNS on DB; with commit, its changes are appended to the
// file, otherwise (query) they are discarded.
func (t *tool) transact(args []string, commit bool) error {
	path, txn := defaultDB(), args[0]
	if len(args) == 2 {
		path, txn = args[0], args[1]
	}
	var params []json.RawMessage
	if err := json.Unmarshal([]byte(txn), &params); err != nil {
		var v any
		if json.Unmarshal([]byte(txn), &v) != nil {
			return failf("\"%s\": %v", txn, err)
		}
	}
	d, l, err := openDB(path)
	if err != nil {
		return err
	}
	defer l.Close()
	var name string
	if len(params) == 0 || json.Unmarshal(params[0], &name) != nil {
		return t.printJSON(map[string]any{"error": "syntax error", "details": "database name expected as first parameter",
			"syntax": string(compact(txn))})
	}
	if name != d.Name() {
		return t.printJSON(map[string]any{"error": "unknown database", "details": fmt.Sprintf("transact request specifies unknown database %s", name),
			"syntax": string(compact(txn))})
	}
	if commit {
		sch := d.Schema()
		d.OnCommit(func(c *db.Commit) error {
			rec := storage.Record{Tables: c.Record(sch), Comment: c.Comment, Date: c.Date.UnixMilli(), IsDiff: true}
			if len(rec.Tables) == 0 {
				return nil
			}
			return l.Commit(rec, true)
		})
	}
	res := d.Transact(params[1:], nil, time.Time{})
	return t.printJSON(json.RawMessage(res.JSON))
}

func compact(s string) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return json.RawMessage(s)
	}
	return b.Bytes()
}

// printJSON prints v as OVS's json_to_string does: compact, object members
// sorted, no HTML escaping.
func (t *tool) printJSON(v any) error {
	if raw, ok := v.(json.RawMessage); ok {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var x any
		if err := dec.Decode(&x); err != nil {
			return err
		}
		v = x
	}
	enc := json.NewEncoder(t.out)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// showLog prints the file's records as OVS's show-log does; with -m, what
// each record does to which row.
func (t *tool) showLog(args []string) error {
	if t.verbosity > 1 {
		return failf("show-log: more than one -m (column values) is not supported by govs' ovsdb-tool")
	}
	path := argOr(args, 0, defaultDB())
	if err := checkFile(path); err != nil {
		return err
	}
	n := 0
	names := map[string]string{} // row uuid -> how show-log names it
	l, err := storage.OpenStream(path, nil, func(schema json.RawMessage) (func(storage.Record) error, error) {
		var info schemaInfo
		json.Unmarshal(schema, &info)
		fmt.Fprintf(t.out, "record 0: %s schema", jsonString(info.Name))
		if info.Version != "" {
			fmt.Fprintf(t.out, ", version=%s", jsonString(info.Version))
		}
		if info.Cksum != "" {
			fmt.Fprintf(t.out, ", cksum=%s", jsonString(info.Cksum))
		}
		fmt.Fprint(t.out, "\n\n")
		return func(r storage.Record) error {
			n++
			fmt.Fprintf(t.out, "record %d:", n)
			if r.Date != 0 {
				fmt.Fprintf(t.out, " %s", time.UnixMilli(r.Date).Format("2006-01-02 15:04:05.000"))
			}
			if r.Comment != "" {
				fmt.Fprintf(t.out, " %s", jsonString(r.Comment))
			}
			fmt.Fprintln(t.out)
			if t.verbosity > 0 {
				t.printChanges(r, names)
				fmt.Fprintln(t.out)
			}
			return nil
		}, nil
	})
	if err != nil {
		return failf("ovsdb error: %v", err)
	}
	return l.Close()
}

func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// printChanges prints one record's row changes. OVS walks tables and rows
// in hash order; this walks them sorted.
func (t *tool) printChanges(r storage.Record, names map[string]string) {
	tables := make([]string, 0, len(r.Tables))
	for tn := range r.Tables {
		tables = append(tables, tn)
	}
	sort.Strings(tables)
	for _, tn := range tables {
		rows := r.Tables[tn]
		uuids := make([]string, 0, len(rows))
		for u := range rows {
			uuids = append(uuids, u)
		}
		sort.Strings(uuids)
		for _, u := range uuids {
			raw := rows[u]
			short := u
			if len(short) > 8 {
				short = short[:8]
			}
			var cols map[string]json.RawMessage
			isNull := string(bytes.TrimSpace(raw)) == "null"
			if !isNull {
				json.Unmarshal(raw, &cols)
			}
			newName := ""
			if nm, ok := cols["name"]; ok {
				newName = string(compact(string(nm)))
			}
			oldName, seen := names[u]
			fmt.Fprintf(t.out, "  table %s", tn)
			switch {
			case !seen && newName != "":
				fmt.Fprintf(t.out, " insert row %s (%s):\n", newName, short)
			case !seen:
				fmt.Fprintf(t.out, " insert row %s:\n", short)
			default:
				diff := ""
				if r.IsDiff {
					diff = " diff"
				}
				fmt.Fprintf(t.out, " row %s (%s)%s:\n", oldName, short, diff)
			}
			switch {
			case isNull:
				fmt.Fprintf(t.out, "    delete row\n")
				delete(names, u)
			case newName != "":
				names[u] = newName
			case !seen:
				names[u] = short
			}
		}
	}
}

// isStandalone answers db-is-standalone (want true) or db-is-clustered
// with the exit status alone.
func (t *tool) isStandalone(args []string, want bool) error {
	path := argOr(args, 0, defaultDB())
	if err := checkFile(path); err != nil {
		var te *toolError
		if errors.As(err, &te) && strings.Contains(te.text, "clustered") {
			if want {
				return exitStatus(1)
			}
			return nil
		}
		return err
	}
	if want {
		return nil
	}
	return exitStatus(2)
}

func (t *tool) checkCluster(args []string) error {
	if err := checkFile(args[0]); err != nil {
		return err
	}
	return failf("ovsdb error: %s: cannot identify file type", args[0])
}
