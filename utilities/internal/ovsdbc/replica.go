package ovsdbc

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/govs/govs/ovsdb/db"
	"github.com/govs/govs/ovsdb/jsonrpc"
)

// Replica is a copy of a whole database kept current by a monitor on
// every column of every table.
type Replica struct {
	Schema *db.Schema
	DB     string
	// Rows holds each table's rows, each row's columns by Column.Index.
	Rows map[string]map[db.UUID][]db.Datum
	// Seq counts the updates applied.
	Seq  int
	conn *Conn
}

// OpenReplica fetches the schema of database name and starts monitoring it.
func OpenReplica(c *Conn, name string) (*Replica, error) {
	raw, err := c.Call("get_schema", []any{name})
	if err != nil {
		return nil, err
	}
	s, err := db.ParseSchema(raw)
	if err != nil {
		return nil, err
	}
	r := &Replica{Schema: s, DB: name, Rows: map[string]map[db.UUID][]db.Datum{}, conn: c}
	reqs := map[string]any{}
	for name, t := range s.Tables {
		r.Rows[name] = map[db.UUID][]db.Datum{}
		cols := make([]string, len(t.Columns))
		for i, col := range t.Columns {
			cols[i] = col.Name
		}
		reqs[name] = map[string]any{"columns": cols}
	}
	c.Notify = r.notify
	initial, err := c.Call("monitor", []any{name, "replica", reqs})
	if err != nil {
		return nil, err
	}
	if err := r.apply(initial); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Replica) notify(m *jsonrpc.Message) {
	if m.Method != "update" {
		return
	}
	var p []json.RawMessage
	if json.Unmarshal(m.Params, &p) == nil && len(p) == 2 {
		r.apply(p[1])
	}
}

// WaitUpdate blocks until the next update arrives or the deadline passes.
func (r *Replica) WaitUpdate(deadline time.Time) error {
	seq := r.Seq
	for r.Seq == seq {
		m, err := r.conn.Recv(deadline)
		if err != nil {
			return err
		}
		if m.Type() == jsonrpc.Notification {
			r.notify(m)
		}
	}
	return nil
}

func (r *Replica) apply(raw json.RawMessage) error {
	var upd map[string]map[string]struct {
		New map[string]json.RawMessage `json:"new"`
	}
	if err := json.Unmarshal(raw, &upd); err != nil {
		return fmt.Errorf("bad table updates: %v", err)
	}
	for tname, rows := range upd {
		t := r.Schema.Tables[tname]
		if t == nil {
			continue
		}
		for us, ru := range rows {
			u, err := db.ParseUUID(us)
			if err != nil {
				continue
			}
			if ru.New == nil {
				delete(r.Rows[tname], u)
				continue
			}
			cols := make([]db.Datum, len(t.Columns))
			for i, col := range t.Columns {
				v, ok := ru.New[col.Name]
				if !ok {
					cols[i] = db.DefaultDatum(&col.Type)
					continue
				}
				d, derr := db.ParseDatum(&col.Type, v, nil)
				if derr != nil {
					// Keep what the server sent even if it breaks the
					// schema's constraints: an unsized parse.
					relaxed := col.Type
					relaxed.Min, relaxed.Max = 0, db.Unlimited
					d, derr = db.ParseDatum(&relaxed, v, nil)
					if derr != nil {
						d = db.DefaultDatum(&col.Type)
					}
				}
				cols[i] = d
			}
			r.Rows[tname][u] = cols
		}
	}
	r.Seq++
	return nil
}

// Transact sends a transaction and returns its per-operation results.
func (r *Replica) Transact(ops []json.RawMessage) ([]json.RawMessage, error) {
	params := append([]json.RawMessage{mustJSON(r.DB)}, ops...)
	raw, err := r.conn.Call("transact", params)
	if err != nil {
		return nil, err
	}
	var res []json.RawMessage
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("bad transact reply: %v", err)
	}
	return res, nil
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
