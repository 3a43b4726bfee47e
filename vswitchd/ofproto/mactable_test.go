package ofproto

import (
	"testing"

	"github.com/govs/govs/datapath/flow"
)

// A static entry (fdb/add) is not moved by learning, does not age out
// and survives a flush, as OVS's MAC_ENTRY_AGE_STATIC_ENTRY entries; a
// learned one it replaces turns static, and fdb/del removes only static
// ones.
func TestMACTableStatic(t *testing.T) {
	m := newMACTable()
	a, b := flow.MAC{0, 0, 0, 0, 0, 1}, flow.MAC{0, 0, 0, 0, 0, 2}
	if prev, _ := m.addStatic(a, 0, "p1", 0); prev != "" {
		t.Errorf("new static entry overrides %q", prev)
	}
	if m.learn(a, 0, "p2", 1, 0, false) {
		t.Error("learning moved a static entry")
	}
	if port, _ := m.lookup(a, 0); port != "p1" {
		t.Errorf("static entry on %q, want p1", port)
	}
	m.learn(b, 0, "p2", 1, 0, false)
	if prev, static := m.addStatic(b, 0, "p3", 2); prev != "p2" || static {
		t.Errorf("override of a learned entry: %q %v, want p2 false", prev, static)
	}
	if prev, static := m.addStatic(b, 0, "p1", 2); prev != "p3" || !static {
		t.Errorf("override of a static entry: %q %v, want p3 true", prev, static)
	}
	if m.statics != 2 || m.moved != 0 {
		t.Errorf("statics %d moved %d, want 2 and 0", m.statics, m.moved)
	}
	m.run(10 * DefaultMACAgingTime)
	m.flush()
	if len(m.entries) != 2 {
		t.Errorf("%d entries after ageing and a flush, want the 2 static ones", len(m.entries))
	}
	m.learn(flow.MAC{0, 0, 0, 0, 0, 3}, 0, "p2", 11*DefaultMACAgingTime, 0, false)
	if m.delStatic(flow.MAC{0, 0, 0, 0, 0, 3}, 0) {
		t.Error("fdb/del removed a learned entry")
	}
	if !m.delStatic(a, 0) || m.delStatic(a, 0) || m.statics != 1 {
		t.Errorf("fdb/del: statics %d, want 1", m.statics)
	}
	m.run(20 * DefaultMACAgingTime)
	if _, ok := m.lookup(flow.MAC{0, 0, 0, 0, 0, 3}, 0); ok || len(m.entries) != 1 {
		t.Errorf("ageing past a static entry: %d entries, want 1", len(m.entries))
	}
}
