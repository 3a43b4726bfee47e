package server

import (
	"fmt"
	"strings"
	"testing"
)

// oneCall runs what one ovn-nbctl (or ovs-vsctl) call asks of the server on
// a connection of its own: _Server's schema, a monitor of _Server's Database
// table (whose rows carry each database's schema), a monitor_cond_since of
// the tables the command reads, a transaction, then the close.
func oneCall(b *testing.B, sock string, i int) {
	c := dialTest(b, sock)
	if _, r := c.call("get_schema", `["_Server"]`); r.Error != nil {
		b.Fatalf("get_schema: %s", r.Error)
	}
	if _, r := c.call("monitor_cond", `["_Server",["monid","_Server"],{"Database":[{"columns":["name","model","connected","leader","schema","cid","index"]}]}]`); !strings.Contains(string(r.Result), `"Open_vSwitch"`) {
		b.Fatalf("_Server monitor: %.200s", r.Result)
	}
	if _, r := c.call("monitor_cond_since", `["Open_vSwitch",["monid","Open_vSwitch"],{"Open_vSwitch":[{"columns":["bridges","cur_cfg"]}],"Bridge":[{"columns":["name","ports","external_ids"]}],"Port":[{"columns":["name","interfaces"]}],"Interface":[{"columns":["name","type","ofport"]}]},"00000000-0000-0000-0000-000000000000"]`); r.Error != nil {
		b.Fatalf("monitor_cond_since: %s", r.Error)
	}
	_, r := c.call("transact", fmt.Sprintf(`["Open_vSwitch",{"op":"mutate","table":"Bridge","where":[["name","==","br%d"]],`+
		`"mutations":[["external_ids","delete",["set",["k"]]],["external_ids","insert",["map",[["k","%d"]]]]]},`+
		`{"op":"comment","comment":"bench"}]`, i%100, i))
	if r.Error != nil || strings.Contains(string(r.Result), `"error"`) {
		b.Fatalf("transact: %s %s", r.Error, r.Result)
	}
	c.c.Close()
}

// BenchmarkClientCall is one short-lived client's call, as each of
// tests/bench/ovn.sh's 200 single ovn-nbctl calls makes, against a
// database of 100 bridges, each with a port and an interface.
func BenchmarkClientCall(b *testing.B) {
	_, sock := testServer(b, Options{})
	c := dialTest(b, sock)
	ops := `{"op":"insert","table":"Open_vSwitch","row":{"bridges":["set",[`
	for i := 0; i < 100; i++ {
		if i > 0 {
			ops += ","
		}
		ops += fmt.Sprintf(`["named-uuid","b%d"]`, i)
	}
	ops += `]]}}`
	for i := 0; i < 100; i++ {
		ops += fmt.Sprintf(`,{"op":"insert","table":"Interface","row":{"name":"br%d"},"uuid-name":"i%d"}`, i, i)
		ops += fmt.Sprintf(`,{"op":"insert","table":"Port","row":{"name":"br%d","interfaces":["named-uuid","i%d"]},"uuid-name":"p%d"}`, i, i, i)
		ops += fmt.Sprintf(`,{"op":"insert","table":"Bridge","row":{"name":"br%d","ports":["named-uuid","p%d"]},"uuid-name":"b%d"}`, i, i, i)
	}
	if r := c.transact(ops); strings.Contains(r, `"error"`) {
		b.Fatal(r)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		oneCall(b, sock, i)
	}
}

// TestInitialContentsCache checks that monitors with the same request get
// the same initial contents while the database is unchanged, and the rows
// as they are after a change, not the contents kept from before it.
func TestInitialContentsCache(t *testing.T) {
	_, sock := testServer(t, Options{})
	w := dialTest(t, sock)
	w.transact(`{"op":"insert","table":"Open_vSwitch","row":{"ovs_version":"a"}}`)
	req := `["Open_vSwitch",["m"],{"Open_vSwitch":[{"columns":["ovs_version"]}]}]`
	initial := func() string {
		c := dialTest(t, sock)
		_, r := c.call("monitor_cond", req)
		c.c.Close()
		return string(r.Result)
	}
	first := initial()
	if !strings.Contains(first, `"ovs_version":"a"`) {
		t.Fatalf("initial: %s", first)
	}
	if again := initial(); again != first {
		t.Fatalf("unchanged database, other initial contents: %s, then %s", first, again)
	}
	w.transact(`{"op":"update","table":"Open_vSwitch","where":[],"row":{"ovs_version":"b"}}`)
	if after := initial(); !strings.Contains(after, `"ovs_version":"b"`) {
		t.Fatalf("after an update: %s", after)
	}
	// _Server's Database rows, as every ovn-nbctl call monitors them.
	sreq := `["_Server",["monid","_Server"],{"Database":[{"columns":["name","model","connected","leader","schema","cid","index"]}]}]`
	for i := 0; i < 2; i++ {
		c := dialTest(t, sock)
		_, r := c.call("monitor_cond", sreq)
		if !strings.Contains(string(r.Result), `"name":"Open_vSwitch"`) || !strings.Contains(string(r.Result), `"schema":"{\"cksum\"`) {
			t.Fatalf("_Server initial %d: %.300s", i, r.Result)
		}
		c.c.Close()
	}
}
