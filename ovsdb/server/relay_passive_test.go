package server

import (
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govs/govs/ovsdb/jsonrpc"
	"github.com/govs/govs/schema"
)

// fakeSource connects to a relay's passive source and answers its
// get_schema and monitor_cond with one Open_vSwitch row whose
// external_ids name the source.
func fakeSource(t *testing.T, sock, name string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	dec := jsonrpc.NewDecoder(c, 0)
	for _, want := range []string{"get_schema", "monitor_cond"} {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		m, err := dec.Decode()
		if err != nil {
			t.Fatalf("%s: waiting for %s: %v", name, want, err)
		}
		if m.Method != want {
			t.Fatalf("%s: got %s, want %s", name, m.Method, want)
		}
		result := json.RawMessage(schema.VSwitch)
		if want == "monitor_cond" {
			result = json.RawMessage(`{"Open_vSwitch":{"6f1ad0e1-3a0e-4a6c-9d3c-1c5f2b7e0a11":{"initial":` +
				`{"external_ids":["map",[["src","` + name + `"]]]}}}}`)
		}
		reply := &jsonrpc.Message{Result: result, Error: json.RawMessage("null"), ID: m.ID}
		if _, err := c.Write(reply.Append(nil)); err != nil {
			t.Fatal(err)
		}
	}
	c.SetReadDeadline(time.Time{})
	return c
}

// TestRelayPassiveSourceReplaced: a relay with a passive source serves
// what the connected source sends, and a newer connection replaces the
// current one (closed), as jsonrpc_session does with a passive name.
func TestRelayPassiveSourceReplaced(t *testing.T) {
	dir := t.TempDir()
	src, sock := filepath.Join(dir, "src.sock"), filepath.Join(dir, "db.sock")
	s := New(Options{Remotes: []string{"punix:" + sock}})
	s.AddRelay("Open_vSwitch", []string{"punix:" + src})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	waitFor("the passive source's socket", func() bool {
		c, err := net.Dial("unix", src)
		if err == nil {
			c.Close() // taken as a source that went away at once
		}
		return err == nil
	})
	served := func(name string) bool {
		c, err := net.Dial("unix", sock)
		if err != nil {
			return false
		}
		defer c.Close()
		tc := &testClient{t: t, c: c, dec: jsonrpc.NewDecoder(c, 0)}
		return strings.Contains(tc.transact(`{"op":"select","table":"Open_vSwitch","where":[],"columns":["external_ids"]}`),
			`["src","`+name+`"]`)
	}
	one := fakeSource(t, src, "one")
	waitFor("the first source's row", func() bool { return served("one") })
	fakeSource(t, src, "two")
	waitFor("the second source's row", func() bool { return served("two") })
	one.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := jsonrpc.NewDecoder(one, 0).Decode(); err == nil {
		t.Errorf("the replaced connection is still open")
	}
}
