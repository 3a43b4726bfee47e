package connmgr

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// TestFlowMonitorPause: a monitoring connection that stops reading is
// paused once more than monitorBacklog bytes wait for it (the switch never
// blocks on it), and when it reads again it gets what was queued, PAUSED,
// the flows added meanwhile and RESUMED.
func TestFlowMonitorPause(t *testing.T) {
	m := listen(t, fakeSource{flows: []ofp.FlowStats{normalFlow}})
	c := dial(t, m, ofp.EncodeHello(ofp.Versions(1)<<ofp.V14, 1))
	// OFPMP_FLOW_MONITOR: monitor 1, add/delete/modify with actions.
	req, err := os.ReadFile(filepath.Join("..", "ofp", "testdata", "requests", "monitor-of14.bin"))
	if err != nil {
		t.Fatal(err)
	}
	c.send(req)
	if b := c.recv(); ofp.ParseHeader(b).Xid != ofp.ParseHeader(req).Xid {
		t.Fatalf("reply %x", b)
	}
	// Large changes until the connection pauses; FlowChanges never blocks.
	acts := make([]ofp.Action, 200)
	for i := range acts {
		acts[i] = ofp.Action{Type: ofp.ActOutput, Port: uint32(i + 1)}
	}
	change := []ofp.FlowChange{{FlowUpdate: ofp.FlowUpdate{Event: ofp.UpdateAdded, Actions: acts}}}
	for i := 0; ; i++ {
		m.FlowChanges(change)
		cs := m.connList()
		paused := false
		for _, sc := range cs {
			sc.monMu.Lock()
			paused = paused || sc.monitors.paused
			sc.monMu.Unlock()
		}
		if paused {
			break
		}
		if i > 10000 {
			t.Fatal("never paused")
		}
	}
	// Reading again: updates, one PAUSED, the refresh, RESUMED.
	var events []uint16
	for {
		b := c.recv()
		if ofp.ParseHeader(b).Type != 19 || binary.BigEndian.Uint16(b[8:]) != 16 {
			t.Fatalf("not a flow monitor reply: %x", b[:16])
		}
		ev := binary.BigEndian.Uint16(b[18:])
		if len(events) == 0 || events[len(events)-1] != ev {
			events = append(events, ev)
		}
		if ev == 6 { // OFPFME_RESUMED
			break
		}
	}
	// ADDED (1), PAUSED (5), ADDED (the refresh), RESUMED (6).
	if want := []uint16{1, 5, 1, 6}; len(events) != len(want) || events[0] != 1 || events[1] != 5 || events[2] != 1 || events[3] != 6 {
		t.Errorf("events %v, want %v", events, want)
	}
}
