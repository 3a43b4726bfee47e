package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govs/govs/ovsdb/db"
	"github.com/govs/govs/ovsdb/storage"
)

// isTerminal reports whether fd is a terminal, as isatty(3).
func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// backupComment is the comment OVS's backup puts on its one transaction.
const backupComment = `produced by "ovsdb-client backup"`

// cmdBackup writes the database to stdout as a standalone database file:
// the schema record, then one transaction that inserts every row with its
// persistent columns, keyed by the row's UUID (OVS's do_backup).
func cmdBackup(c *client, _ []string) {
	if isTerminal(1) {
		die("not writing backup to a terminal; please redirect stdout to a file")
	}
	schemaJSON := c.schemaOVSJSON()
	s := c.schema()
	tables := s.TableNames()
	ops := []any{c.db}
	for _, tn := range tables {
		cols := []string{"_uuid"}
		for _, col := range s.Tables[tn].Columns {
			if !col.Ephemeral {
				cols = append(cols, col.Name)
			}
		}
		ops = append(ops, map[string]any{"op": "select", "table": tn, "where": []any{}, "columns": cols})
	}
	raw := c.txnCall("transact", ops)
	var res []json.RawMessage
	if err := json.Unmarshal(raw, &res); err != nil || len(res) != len(tables) {
		die("reply is not array of %d elements: %s", len(tables), compactRaw(raw))
	}
	rec := storage.Record{Tables: map[string]map[string]json.RawMessage{}, Comment: backupComment,
		IsDiff: true, Date: time.Now().UnixMilli()}
	for i, tn := range tables {
		var r struct {
			Rows []map[string]json.RawMessage `json:"rows"`
		}
		if err := json.Unmarshal(res[i], &r); err != nil || r.Rows == nil {
			die("%s table reply is not an object with a \"rows\" member array: %s", tn, compactRaw(res[i]))
		}
		if len(r.Rows) == 0 {
			continue
		}
		rows := map[string]json.RawMessage{}
		for _, row := range r.Rows {
			var id db.UUID
			uj, ok := row["_uuid"]
			if ok {
				d, err := db.ParseDatum(&uuidType, uj, nil)
				if err != nil {
					die("%s", err.Text())
				}
				id = d.Keys[0].(db.UUID)
			} else {
				die("%s table reply row lacks _uuid member: %s", tn, compact(row))
			}
			delete(row, "_uuid")
			b, _ := json.Marshal(row)
			rows[id.String()] = b
		}
		rec.Tables[tn] = rows
	}
	head, err := storage.EncodeSchema(json.RawMessage(schemaJSON))
	if err != nil {
		die("%v", err)
	}
	body, err := storage.EncodeRecord(&rec)
	if err != nil {
		die("%v", err)
	}
	if _, err := os.Stdout.Write(append(head, body...)); err != nil {
		die("write to stdout failed")
	}
}

func compactRaw(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	return compact(v)
}

// rowName is the uuid-name restore gives the row with UUID u, as OVS's
// ovsdb_data_row_name: the server picks new UUIDs, as OVS 3.1's does.
func rowName(u db.UUID) string { return "row" + strings.ReplaceAll(u.String(), "-", "_") }

// cmdRestore replaces the database's contents with a backup read from
// stdin, in one transaction: each table's rows are deleted and the
// backup's inserted, their references to each other by row name.
func cmdRestore(c *client, _ []string) {
	if isTerminal(0) {
		die("not reading backup from a terminal; please redirect stdin from a file")
	}
	var backup *db.Database
	err := storage.ReadStream(os.Stdin, "/dev/stdin", func(schema json.RawMessage) (func(storage.Record) error, error) {
		s, err := db.ParseSchema(schema)
		if err != nil {
			return nil, fmt.Errorf("ovsdb error: /dev/stdin: %v", err)
		}
		backup = db.New(s)
		return func(r storage.Record) error {
			if err := backup.Replay(r.Tables, r.IsDiff); err != nil {
				return fmt.Errorf("ovsdb error: /dev/stdin: %v", err)
			}
			return nil
		}, nil
	})
	if err != nil {
		die("%v", err)
	}
	bs, online := backup.Schema(), c.schema()
	if !db.SchemaEqual(bs, online) {
		var why string
		if bs.Version != online.Version {
			why = fmt.Sprintf("backup schema has version \"%s\" but database schema has version \"%s\"", bs.Version, online.Version)
		} else {
			why = fmt.Sprintf("backup schema and database schema are both version %s but still differ", bs.Version)
		}
		if !c.force {
			die("%s (use --force to override differences, or \"ovsdb-client convert\" to change the schema)", why)
		}
		c.logInfo("ovsdb_client", why)
	}
	atom := func(b []byte, a db.Atom) []byte {
		if u, ok := a.(db.UUID); ok {
			return fmt.Appendf(b, `["named-uuid","%s"]`, rowName(u))
		}
		return db.AppendAtomJSON(b, a)
	}
	ops := []json.RawMessage{json.RawMessage(compact(bs.Name))}
	backup.Read(func(snap db.Snapshot) {
		for _, tn := range bs.TableNames() {
			t := bs.Tables[tn]
			ops = append(ops, json.RawMessage(`{"op":"delete","table":`+compact(tn)+`,"where":[]}`))
			for u, r := range snap.Rows(tn) {
				b := fmt.Appendf(nil, `{"op":"insert","table":%s,"uuid-name":"%s","row":{`, compact(tn), rowName(u))
				n := 0
				for _, col := range t.Columns {
					d := r.Get(col)
					if col.Ephemeral || db.IsDefault(&col.Type, d) {
						continue
					}
					if n > 0 {
						b = append(b, ',')
					}
					n++
					b = append(b, compact(col.Name)...)
					b = append(b, ':')
					b = db.AppendDatumJSONWith(b, d, col.Type.IsMap(), atom)
				}
				ops = append(ops, append(b, "}}"...))
			}
		}
	})
	checkTransactionReply(c.txnCall("transact", ops))
}

// logInfo writes an INFO line to stderr as OVS's vlog does on the console.
func (c *client) logInfo(module, msg string) {
	logSeq++
	fmt.Fprintf(os.Stderr, "%s|%05d|%s|INFO|%s\n", time.Now().UTC().Format("2006-01-02T15:04:05Z"), logSeq, module, msg)
}
