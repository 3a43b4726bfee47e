package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govs/govs/ovsdb/jsonrpc"
	"github.com/govs/govs/schema"
)

// testServer starts an in-process server on a unix socket with a fresh
// Open_vSwitch database file.
func testServer(t testing.TB, opts Options) (*Server, string) {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "db.sock")
	opts.Remotes = append(opts.Remotes, "punix:"+sock)
	s := New(opts)
	if _, err := s.OpenDatabase(filepath.Join(dir, "conf.db"), schema.VSwitch); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, sock
}

type testClient struct {
	t   testing.TB
	c   net.Conn
	dec *jsonrpc.Decoder
	id  int
}

func dialTest(t testing.TB, sock string) *testClient {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &testClient{t: t, c: c, dec: jsonrpc.NewDecoder(c, 0)}
}

func (c *testClient) recv() *jsonrpc.Message {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	m, err := c.dec.Decode()
	if err != nil {
		c.t.Fatalf("recv: %v", err)
	}
	return m
}

// call sends a request and returns the notifications before its reply and
// the reply.
func (c *testClient) call(method, params string) ([]*jsonrpc.Message, *jsonrpc.Message) {
	c.t.Helper()
	c.id++
	req := &jsonrpc.Message{Method: method, Params: json.RawMessage(params), ID: json.RawMessage(strconv.Itoa(c.id))}
	if _, err := c.c.Write(req.Append(nil)); err != nil {
		c.t.Fatal(err)
	}
	var notes []*jsonrpc.Message
	for {
		m := c.recv()
		if m.Type() == jsonrpc.Notification {
			notes = append(notes, m)
			continue
		}
		return notes, m
	}
}

func (c *testClient) transact(ops string) string {
	c.t.Helper()
	_, r := c.call("transact", `["Open_vSwitch",`+ops+`]`)
	return string(r.Result)
}

func TestMonitorEncodings(t *testing.T) {
	_, sock := testServer(t, Options{})
	w := dialTest(t, sock)
	m := dialTest(t, sock)
	if r := w.transact(`{"op":"insert","table":"Open_vSwitch","row":{"ovs_version":"x"},"uuid-name":"o"}`); !strings.Contains(r, `"uuid"`) {
		t.Fatal(r)
	}
	_, r := m.call("monitor", `["Open_vSwitch","v1",{"Open_vSwitch":{"columns":["ovs_version","cur_cfg"]}}]`)
	if !strings.Contains(string(r.Result), `{"new":{"ovs_version":"x","cur_cfg":0}}`) {
		t.Fatalf("v1 initial: %s", r.Result)
	}
	_, r = m.call("monitor_cond", `["Open_vSwitch",["v2"],{"Open_vSwitch":[{"columns":["ovs_version","cur_cfg","external_ids"]}]}]`)
	if !strings.Contains(string(r.Result), `{"initial":{"ovs_version":"x"}}`) {
		t.Fatalf("v2 initial: %s", r.Result)
	}
	_, r = m.call("monitor_cond_since", `["Open_vSwitch",["v3"],{"Open_vSwitch":[{"columns":["ovs_version"]}]},"00000000-0000-0000-0000-000000000000"]`)
	if !strings.HasPrefix(string(r.Result), `[false,"`) || !strings.Contains(string(r.Result), `{"initial":{"ovs_version":"x"}}`) {
		t.Fatalf("v3 initial: %s", r.Result)
	}
	w.transact(`{"op":"update","table":"Open_vSwitch","where":[],"row":{"ovs_version":"y","external_ids":["map",[["a","b"]]]}}`)
	got := map[string]string{}
	for len(got) < 3 {
		n := m.recv()
		got[n.Method] = string(n.Params)
	}
	for method, want := range map[string]string{
		"update":  `{"modify":`, // placeholder, checked below
		"update2": `{"modify":{"ovs_version":"y","external_ids":["map",[["a","b"]]]}}`,
		"update3": `{"modify":{"ovs_version":"y"}}`,
	} {
		if method == "update" {
			want = `{"old":{"ovs_version":"x"},"new":{"ovs_version":"y","cur_cfg":0}}`
		}
		if !strings.Contains(got[method], want) {
			t.Errorf("%s: %s, want %s", method, got[method], want)
		}
	}
	w.transact(`{"op":"delete","table":"Open_vSwitch","where":[]}`)
	got = map[string]string{}
	for len(got) < 3 {
		n := m.recv()
		got[n.Method] = string(n.Params)
	}
	if !strings.Contains(got["update"], `{"old":{"ovs_version":"y","cur_cfg":0}}`) ||
		!strings.Contains(got["update2"], `{"delete":null}`) || !strings.Contains(got["update3"], `{"delete":null}`) {
		t.Errorf("deletes: %v", got)
	}
}

// TestUpdatesBeforeReply checks that a client's own monitor sees its
// transaction's changes before the transaction's reply.
func TestUpdatesBeforeReply(t *testing.T) {
	_, sock := testServer(t, Options{})
	c := dialTest(t, sock)
	c.call("monitor_cond", `["Open_vSwitch",["m"],{"QoS":[{"columns":["type"]}]}]`)
	for i := 0; i < 20; i++ {
		notes, r := c.call("transact", fmt.Sprintf(`["Open_vSwitch",{"op":"insert","table":"QoS","row":{"type":"b%d"}}]`, i))
		if r.Error != nil || len(notes) != 1 || notes[0].Method != "update2" {
			t.Fatalf("txn %d: notes %v reply %v", i, notes, r)
		}
	}
}

func TestConditionChange(t *testing.T) {
	_, sock := testServer(t, Options{})
	c := dialTest(t, sock)
	c.transact(`{"op":"insert","table":"QoS","row":{"type":"a"}},{"op":"insert","table":"QoS","row":{"type":"b"}}`)
	_, r := c.call("monitor_cond", `["Open_vSwitch","m",{"QoS":[{"columns":["type"],"where":[["type","==","a"]]}]}]`)
	if strings.Count(string(r.Result), "initial") != 1 {
		t.Fatalf("initial: %s", r.Result)
	}
	notes, r := c.call("monitor_cond_change", `["m","m2",{"QoS":[{"where":[["type","==","b"]]}]}]`)
	if r.Error != nil || len(notes) != 1 {
		t.Fatalf("cond change: %v %v", notes, r)
	}
	p := string(notes[0].Params)
	if !strings.HasPrefix(p, `["m2",`) || strings.Count(p, `"delete":null`) != 1 || !strings.Contains(p, `{"insert":{"type":"b"}}`) {
		t.Fatalf("cond change update: %s", p)
	}
	_, r = c.call("monitor_cancel", `["m2"]`)
	if string(r.Result) != "{}" {
		t.Fatalf("cancel: %v", r)
	}
}

func TestOversizedMessageClosesOnlyThatClient(t *testing.T) {
	_, sock := testServer(t, Options{MaxMessageSize: 1 << 10})
	other := dialTest(t, sock)
	c := dialTest(t, sock)
	big := `{"method":"echo","params":["` + strings.Repeat("x", 2000) + `"],"id":1}`
	c.c.Write([]byte(big))
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.dec.Decode(); !errors.Is(err, errEOF()) && err == nil {
		t.Fatalf("oversized message answered")
	}
	if _, r := other.call("list_dbs", `[]`); string(r.Result) != `["Open_vSwitch","_Server"]` {
		t.Fatalf("other client: %v", r)
	}
}

func errEOF() error { return net.ErrClosed }

func TestSlowClientDoesNotBlockCommits(t *testing.T) {
	_, sock := testServer(t, Options{})
	slow := dialTest(t, sock)
	slow.call("monitor", `["Open_vSwitch",null,{"QoS":{"columns":["type","external_ids"]}}]`)
	// slow never reads again; commits with large rows keep coming.
	w := dialTest(t, sock)
	val := strings.Repeat("v", 4000)
	start := time.Now()
	for i := 0; i < 2000; i++ {
		r := w.transact(fmt.Sprintf(`{"op":"insert","table":"QoS","row":{"type":"b%d","external_ids":["map",[["k","%s"]]]}}`, i, val))
		if strings.Contains(r, "error") {
			t.Fatal(r)
		}
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Fatalf("commits took %v", d)
	}
}

func TestServerDatabase(t *testing.T) {
	_, sock := testServer(t, Options{})
	c := dialTest(t, sock)
	_, r := c.call("monitor_cond", `["_Server",["s"],{"Database":[{"columns":["name","model","connected","leader","schema"]}]}]`)
	res := string(r.Result)
	for _, want := range []string{`"name":"Open_vSwitch"`, `"name":"_Server"`, `"model":"standalone"`, `"connected":true`, `"leader":true`, `\"cksum\"`} {
		if !strings.Contains(res, want) {
			t.Errorf("_Server monitor lacks %s", want)
		}
	}
	_, r = c.call("transact", `["_Server",{"op":"delete","table":"Database","where":[]}]`)
	if !strings.Contains(string(r.Result), "not allowed") {
		t.Fatalf("_Server delete: %s", r.Result)
	}
}

func BenchmarkTransact(b *testing.B) {
	_, sock := testServer(b, Options{})
	c := dialTest(b, sock)
	c.transact(`{"op":"insert","table":"Open_vSwitch","row":{}}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.transact(fmt.Sprintf(`{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["external_ids","delete",["set",["k"]]],["external_ids","insert",["map",[["k","%d"]]]]]},{"op":"comment","comment":"bench"}`, i))
	}
}

func BenchmarkTransactParallel(b *testing.B) {
	_, sock := testServer(b, Options{})
	c := dialTest(b, sock)
	c.transact(`{"op":"insert","table":"Open_vSwitch","row":{}}`)
	var n atomic.Int64
	b.SetParallelism(5)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		k := n.Add(1)
		c := dialTest(b, sock)
		for i := 0; pb.Next(); i++ {
			c.transact(fmt.Sprintf(`{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["external_ids","delete",["set",["k%d"]]],["external_ids","insert",["map",[["k%d","%d"]]]]]},{"op":"comment","comment":"bench"}`, k, k, i))
		}
	})
}

// TestWaitTrigger checks that a "wait" with a timeout blocks until another
// client's commit satisfies it, that it times out otherwise, and that
// "cancel" answers it.
func TestWaitTrigger(t *testing.T) {
	_, sock := testServer(t, Options{})
	a, b := dialTest(t, sock), dialTest(t, sock)
	wait := `["Open_vSwitch",{"op":"wait","timeout":5000,"table":"QoS","where":[["type","==","x"]],"columns":["type"],"until":"==","rows":[{"type":"x"}]}]`
	a.c.Write([]byte(`{"method":"transact","params":` + wait + `,"id":"w"}`))
	// Not a condition: had the insert come first, the wait would hold at
	// once, with the same answer; the pause makes the blocking case likely.
	time.Sleep(50 * time.Millisecond)
	b.transact(`{"op":"insert","table":"QoS","row":{"type":"x"}}`)
	if m := a.recv(); string(m.ID) != `"w"` || string(m.Result) != `[{}]` {
		t.Fatalf("wait: %v", m)
	}
	start := time.Now()
	_, r := a.call("transact", `["Open_vSwitch",{"op":"wait","timeout":200,"table":"QoS","where":[],"columns":["type"],"until":"==","rows":[]}]`)
	if !strings.Contains(string(r.Result), "timed out") || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("timeout: %v after %v", r, time.Since(start))
	}
	a.c.Write([]byte(`{"method":"transact","params":["Open_vSwitch",{"op":"wait","timeout":60000,"table":"QoS","where":[],"columns":["type"],"until":"==","rows":[]}],"id":"c"}{"method":"cancel","params":["c"],"id":null}`))
	if m := a.recv(); string(m.ID) != `"c"` || string(m.Error) != `"canceled"` {
		t.Fatalf("cancel: %v", m)
	}
}

// TestErrorTextsUnescaped: error replies carry '<' and '>' as OVS writes
// them, not encoding/json's "\u003c", and set_db_change_aware takes only
// true or false, as ovsdb-server does.
func TestErrorTextsUnescaped(t *testing.T) {
	_, sock := testServer(t, Options{})
	c := dialTest(t, sock)
	if _, r := c.call("get_schema", `[]`); !strings.Contains(string(r.Error), `"get_schema request params must begin with <db-name>"`) {
		t.Errorf("get_schema []: %s", r.Error)
	}
	_, r := c.call("set_db_change_aware", `[1]`)
	if want := `"set_db_change_aware: true or false parameter expected"`; !strings.Contains(string(r.Error), want) || !strings.Contains(string(r.Error), `"syntax":"[1]"`) {
		t.Errorf("set_db_change_aware [1]: %s %s", r.Result, r.Error)
	}
	if _, r := c.call("set_db_change_aware", `[false]`); string(r.Result) != `{}` {
		t.Errorf("set_db_change_aware [false]: %s %s", r.Result, r.Error)
	}
}
