package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/govs/govs/ovsdb/db"
	"github.com/govs/govs/utilities/internal/dbtext"
	"github.com/govs/govs/utilities/internal/ovsdbc"
)

// schemaArg reads the SCHEMA file argument of convert and needs-conversion;
// the database is the one the schema names.
func (c *client) schemaArg(path string) (*db.Schema, []byte) {
	s, data, err := ovsdbc.ReadSchema(path)
	if err != nil {
		die("%v", err)
	}
	c.db = s.Name
	c.dial()
	if c.isClustered() {
		// OVS keeps a clustered database's ephemeral columns on disk and
		// warns; we do not do that yet, so we refuse.
		die("%s: clustered database %s: convert and needs-conversion are not supported by govs' ovsdb-client yet", c.remote, c.db)
	}
	return s, data
}

// isClustered asks the server's _Server database for the database's model.
func (c *client) isClustered() bool {
	raw := c.call("transact", []any{"_Server", map[string]any{"op": "select", "table": "Database",
		"where": []any{[]any{"name", "==", c.db}}}})
	var res []struct {
		Rows []struct {
			Name  string `json:"name"`
			Model string `json:"model"`
		} `json:"rows"`
	}
	json.Unmarshal(raw, &res)
	for _, r := range res {
		for _, row := range r.Rows {
			if row.Name == c.db && row.Model == "clustered" {
				return true
			}
		}
	}
	return false
}

// txnCall is a call whose error reply is fatal as OVS's check_txn makes it.
func (c *client) txnCall(method string, params any) json.RawMessage {
	raw, err := c.conn.Call(method, params)
	if err != nil {
		if e, ok := err.(*ovsdbc.RPCError); ok {
			die("transaction returned error: %s", dbtext.SortedJSON(e.Raw))
		}
		die("transaction failed (%s)", recvErrno(err))
	}
	return raw
}

// cmdNeedsConversion prints "yes" if the server's copy of the schema's
// database has another schema, "no" if the same.
func cmdNeedsConversion(c *client, args []string) {
	s, _ := c.schemaArg(args[0])
	cur, err := db.ParseSchema(c.txnCall("get_schema", []any{c.db}))
	if err != nil {
		die("%v", err)
	}
	if db.SchemaEqual(s, cur) {
		fmt.Println("no")
	} else {
		fmt.Println("yes")
	}
}

// cmdConvert converts the server's database to the schema, online.
func cmdConvert(c *client, args []string) {
	s, data := c.schemaArg(args[0])
	c.conn.Call("set_db_change_aware", []any{true})
	c.txnCall("convert", []any{s.Name, json.RawMessage(data)})
}

// cmdWait waits until DATABASE is "added", "removed" or "connected" on
// the server, reconnecting as OVS's session does until the server answers.
func cmdWait(c *client, args []string) {
	state := args[len(args)-1]
	name := args[len(args)-2]
	op := map[string]any{"op": "wait", "table": "Database", "until": "==",
		"where": []any{[]any{"name", "==", name}}}
	switch state {
	case "connected":
		op["columns"] = []string{"connected"}
		op["rows"] = []any{map[string]any{"connected": true}}
	case "added":
		op["columns"] = []string{}
		op["rows"] = []any{map[string]any{}}
	case "removed":
		op["columns"] = []string{}
		op["rows"] = []any{}
	default:
		die("%s: unknown state", state)
	}
	// OVS's reconnect module logs its attempts at the console: retry at
	// once after 1 s, then backing off to 8 s, quiet after the fourth.
	backoff, tries := time.Second, 0
	for {
		if c.conn == nil {
			if tries < 4 {
				c.reconnectLog("connecting...")
			}
			conn, err := ovsdbc.Dial(c.remote)
			if err != nil {
				tries++
				switch {
				case tries < 4:
					c.reconnectLog(fmt.Sprintf("connection attempt failed (%s)", ovsdbc.Errno(err)))
					if tries > 1 {
						backoff = min(2*backoff, 8*time.Second)
						c.reconnectLog(fmt.Sprintf("waiting %d seconds before reconnect", int(backoff/time.Second)))
					}
				case tries == 4:
					c.reconnectLog(fmt.Sprintf("connection attempt failed (%s)", ovsdbc.Errno(err)))
					c.reconnectLog("continuing to reconnect in the background but suppressing further logging")
					backoff = 8 * time.Second
				}
				time.Sleep(backoff)
				continue
			}
			c.conn, backoff, tries = conn, time.Second, 0
			c.reconnectLog("connected")
		}
		if _, err := c.conn.Call("set_db_change_aware", []any{true}); err != nil {
			if e, ok := err.(*ovsdbc.RPCError); ok {
				die("%s: set_db_change_aware failed (%s)", c.remote, e.Raw)
			}
			c.conn.Close()
			c.conn = nil
			continue
		}
		raw, err := c.conn.Call("transact", []any{"_Server", op})
		if err != nil {
			if e, ok := err.(*ovsdbc.RPCError); ok {
				die("transaction returned error: %s", dbtext.SortedJSON(e.Raw))
			}
			c.conn.Close()
			c.conn = nil
			continue
		}
		checkTransactionReply(raw)
		return
	}
}

var logSeq int

// reconnectLog writes a reconnect INFO line to stderr as OVS's vlog does.
func (c *client) reconnectLog(msg string) {
	logSeq++
	fmt.Fprintf(os.Stderr, "%s|%05d|reconnect|INFO|%s: %s\n", time.Now().UTC().Format("2006-01-02T15:04:05Z"), logSeq, c.remote, msg)
}

// checkTransactionReply dies on an operation's error, as OVS's does.
func checkTransactionReply(raw json.RawMessage) {
	var res []json.RawMessage
	if err := json.Unmarshal(raw, &res); err != nil {
		die("result is not array")
	}
	for _, r := range res {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(r, &m); err != nil || m == nil {
			die("result array element is not object")
		}
		if _, ok := m["error"]; ok {
			die("server returned error reply: %s", dbtext.SortedJSON(r))
		}
	}
}
