package server

import (
	"bytes"
	"strings"
	"testing"
)

// TestSharedUpdates checks that monitors with equal parameters get the
// same update, and that monitors with other columns, other conditions
// (after monitor_cond_change) or another id still get their own.
func TestSharedUpdates(t *testing.T) {
	_, sock := testServer(t, Options{})
	w := dialTest(t, sock)
	req := `{"QoS":[{"columns":["type","external_ids"]}]}`
	same := []*testClient{dialTest(t, sock), dialTest(t, sock), dialTest(t, sock)}
	for _, c := range same {
		c.call("monitor_cond", `["Open_vSwitch",["m"],`+req+`]`)
	}
	other := dialTest(t, sock)
	other.call("monitor_cond", `["Open_vSwitch",["m"],{"QoS":[{"columns":["type"]}]}]`)
	otherID := dialTest(t, sock)
	otherID.call("monitor_cond", `["Open_vSwitch",["n"],`+req+`]`)
	changed := dialTest(t, sock)
	changed.call("monitor_cond", `["Open_vSwitch",["m"],`+req+`]`)
	if _, r := changed.call("monitor_cond_change", `[["m"],["m"],{"QoS":[{"where":[["type","==","b"]]}]}]`); r.Error != nil {
		t.Fatalf("monitor_cond_change: %s", r.Error)
	}

	w.transact(`{"op":"insert","table":"QoS","row":{"type":"a","external_ids":["map",[["k","v"]]]}}`)
	var first string
	for i, c := range same {
		n := c.recv()
		p := string(n.Params)
		if n.Method != "update2" || !strings.HasPrefix(p, `[["m"],{"QoS":{`) ||
			!strings.Contains(p, `{"insert":{"type":"a","external_ids":["map",[["k","v"]]]}}`) {
			t.Fatalf("client %d: %s %s", i, n.Method, p)
		}
		if i == 0 {
			first = p
		} else if p != first {
			t.Errorf("client %d: %s, client 0: %s", i, p, first)
		}
	}
	if p := string(other.recv().Params); !strings.Contains(p, `{"insert":{"type":"a"}}`) {
		t.Errorf("other columns: %s", p)
	}
	if p := string(otherID.recv().Params); !strings.HasPrefix(p, `[["n"],`) || !strings.Contains(p, `"external_ids"`) {
		t.Errorf("other id: %s", p)
	}
	// The changed condition hides "a": its next update is for "b" only.
	w.transact(`{"op":"insert","table":"QoS","row":{"type":"b"}}`)
	if p := string(changed.recv().Params); strings.Contains(p, `"a"`) || !strings.Contains(p, `{"insert":{"type":"b"}}`) {
		t.Errorf("changed condition: %s", p)
	}
}

// TestMergedUpdatesNotShared checks that a monitor whose client fell behind
// by several commits sends their merge, not the last commit's shared update.
func TestMergedUpdatesNotShared(t *testing.T) {
	s, sock := testServer(t, Options{})
	w := dialTest(t, sock)
	fast, slow := dialTest(t, sock), dialTest(t, sock)
	// Equal requests share the composed update; the other id finds
	// the slow client's session below.
	fast.call("monitor_cond", `["Open_vSwitch",["m"],{"QoS":[{"columns":["type"]}]}]`)
	slow.call("monitor_cond", `["Open_vSwitch",["s"],{"QoS":[{"columns":["type"]}]}]`)

	// Hold the slow session's lock so it cannot send between the commits.
	var slowSS *session
	s.mu.Lock()
	for ss := range s.sessions {
		ss.mu.Lock()
		if ss.monitors[`["s"]`] != nil {
			slowSS = ss
		}
		ss.mu.Unlock()
	}
	s.mu.Unlock()
	if slowSS == nil {
		t.Fatal("no session for the slow client")
	}
	slowSS.mu.Lock()
	w.transact(`{"op":"insert","table":"QoS","row":{"type":"a"}}`)
	w.transact(`{"op":"insert","table":"QoS","row":{"type":"b"}}`)
	slowSS.mu.Unlock()

	// The fast client gets both rows, in one or two updates (its writer
	// may not have flushed between the commits either).
	var all string
	for inserts := 0; inserts < 2; {
		p := string(fast.recv().Params)
		inserts += strings.Count(p, "insert")
		all += p
	}
	if !strings.Contains(all, `{"type":"a"}`) || !strings.Contains(all, `{"type":"b"}`) {
		t.Errorf("fast client's updates: %s", all)
	}
	p := string(slow.recv().Params)
	if strings.Count(p, "insert") != 2 || !strings.Contains(p, `{"type":"a"}`) || !strings.Contains(p, `{"type":"b"}`) {
		t.Errorf("slow client's merged update: %s", p)
	}
}

// TestSharedUpdateBytes checks, for update, update2 and update3, that
// monitors with equal parameters send the very same encoded bytes for a
// commit, and that monitors with other conditions (or, for "monitor", which
// has none, other columns) or another id get their own, correct, update.
func TestSharedUpdateBytes(t *testing.T) {
	const since = `,"00000000-0000-0000-0000-000000000000"`
	for _, tc := range []struct {
		method, same, other, tail string
	}{
		{"monitor", `{"QoS":{"columns":["type"]}}`, `{"QoS":{"columns":["external_ids"]}}`, ""},
		{"monitor_cond", `{"QoS":[{"columns":["type"],"where":[["type","==","a"]]}]}`,
			`{"QoS":[{"columns":["type"],"where":[["type","==","b"]]}]}`, ""},
		{"monitor_cond_since", `{"QoS":[{"columns":["type"],"where":[["type","==","a"]]}]}`,
			`{"QoS":[{"columns":["type"],"where":[["type","==","b"]]}]}`, since},
	} {
		t.Run(tc.method, func(t *testing.T) {
			s, sock := testServer(t, Options{})
			w := dialTest(t, sock)
			// Four sessions, told apart by a lock each takes: m1 and m2
			// with equal requests, m3 another, x the first's under another id.
			clients := []struct{ name, id, req string }{
				{"m1", `["m"]`, tc.same}, {"m2", `["m"]`, tc.same}, {"m3", `["m"]`, tc.other}, {"x", `["x"]`, tc.same}}
			for _, cl := range clients {
				c := dialTest(t, sock)
				if _, r := c.call(tc.method, `["Open_vSwitch",`+cl.id+`,`+cl.req+tc.tail+`]`); r.Error != nil {
					t.Fatalf("%s %s: %s", tc.method, cl.name, r.Error)
				}
				if _, r := c.call("lock", `["`+cl.name+`"]`); r.Error != nil {
					t.Fatalf("lock: %s", r.Error)
				}
			}
			// Hold every monitoring session so that none sends the update
			// itself, commit, and take each update here.
			byLock := map[string]*session{}
			s.mu.Lock()
			for ss := range s.sessions {
				for _, cl := range clients {
					if s.locks.owns(ss, cl.name) {
						byLock[cl.name] = ss
					}
				}
			}
			s.mu.Unlock()
			if len(byLock) != len(clients) {
				t.Fatalf("found %d of %d sessions", len(byLock), len(clients))
			}
			for _, ss := range byLock {
				ss.mu.Lock()
			}
			w.transact(`{"op":"insert","table":"QoS","row":{"type":"a","external_ids":["map",[["k","v"]]]}},` +
				`{"op":"insert","table":"QoS","row":{"type":"b"}}`)
			got := map[string][]byte{}
			for name, ss := range byLock {
				for _, m := range ss.monitors {
					if msg, b := m.takeUpdate(); msg != nil {
						got[name] = b
					}
				}
				ss.mu.Unlock()
			}
			m1, m2, m3, x := got["m1"], got["m2"], got["m3"], got["x"]
			if m1 == nil || m2 == nil || m3 == nil || x == nil {
				t.Fatalf("missing updates: %q", got)
			}
			if &m1[0] != &m2[0] {
				t.Errorf("equal monitors encoded twice:\n%s\n%s", m1, m2)
			}
			if &m1[0] == &m3[0] || &m1[0] == &x[0] {
				t.Errorf("unequal monitors share an encoding")
			}
			method := map[string]string{"monitor": `"update"`, "monitor_cond": `"update2"`, "monitor_cond_since": `"update3"`}[tc.method]
			if !bytes.Contains(m1, []byte(`"method":`+method)) || !bytes.Contains(m1, []byte(`["m"]`)) ||
				!bytes.Contains(x, []byte(`["x"]`)) {
				t.Errorf("method or id: %s / %s", m1, x)
			}
			if tc.method == "monitor" {
				if !bytes.Contains(m1, []byte(`{"type":"a"}`)) || !bytes.Contains(m3, []byte(`"external_ids":["map",[["k","v"]]]`)) ||
					bytes.Contains(m3, []byte(`"type"`)) {
					t.Errorf("columns: %s / %s", m1, m3)
				}
				return
			}
			if !bytes.Contains(m1, []byte(`"a"`)) || bytes.Contains(m1, []byte(`"b"`)) ||
				!bytes.Contains(m3, []byte(`"b"`)) || bytes.Contains(m3, []byte(`"a"`)) {
				t.Errorf("conditions: %s / %s", m1, m3)
			}
			if !bytes.Equal(bytes.Replace(x, []byte(`["x"]`), []byte(`["m"]`), 1), m1) {
				t.Errorf("other id, other update:\n%s\n%s", x, m1)
			}
		})
	}
}
