package server

import (
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
