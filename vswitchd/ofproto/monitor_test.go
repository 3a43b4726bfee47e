package ofproto

import (
	"fmt"
	"strings"
	"testing"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// monitorSink records the flow changes a bridge reports.
type monitorSink struct{ changes []ofp.FlowChange }

func (s *monitorSink) FlowRemoved(*ofp.FlowRemoved) {}
func (s *monitorSink) Monitoring() bool             { return true }
func (s *monitorSink) FlowChanges(changes []ofp.FlowChange) {
	s.changes = append(s.changes, changes...)
}

func (s *monitorSink) take() string {
	var out []string
	for _, c := range s.changes {
		out = append(out, fmt.Sprintf("%d/p%d/c%d/%d", c.Event, c.Priority, c.Cookie, len(c.Actions)))
	}
	s.changes = nil
	return strings.Join(out, " ")
}

// TestFlowChanges: what flow monitors hear of each kind of flow mod, as
// OVS's ofmonitor_report; a refused flow mod reports nothing.
func TestFlowChanges(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1)}})
	sink := &monitorSink{}
	br.SetAsync(sink)
	const added, deleted, modified = ofp.UpdateAdded, ofp.UpdateDeleted, ofp.UpdateModified
	for i, tc := range []struct {
		fm   fmSpec
		want string
	}{
		// The NORMAL flow a bridge starts with.
		{fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll}, fmt.Sprintf("%d/p0/c0/1", deleted)},
		{fmSpec{prio: 5, actions: []ofp.Action{output(1)}}, fmt.Sprintf("%d/p5/c0/1", added)},
		{fmSpec{prio: 5, actions: []ofp.Action{output(1)}}, fmt.Sprintf("%d/p5/c0/1", added)}, // replaced
		{fmSpec{cmd: ofp.FlowModify, table: ofp.TableAll, actions: []ofp.Action{output(1)}}, ""},
		{fmSpec{cmd: ofp.FlowModify, table: ofp.TableAll}, fmt.Sprintf("%d/p5/c0/0", modified)},
		{fmSpec{table: 254}, ""}, // refused
		{fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll}, fmt.Sprintf("%d/p5/c0/0", deleted)},
	} {
		br.FlowMod(tc.fm.mod())
		if got := sink.take(); got != tc.want {
			t.Errorf("%d: %q, want %q", i, got, tc.want)
		}
	}
}
