package ofproto

import (
	"strings"
	"sync"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

type pinRecorder struct {
	mu  sync.Mutex
	got []ofp.PacketIn
}

func (p *pinRecorder) FlowRemoved(*ofp.FlowRemoved) {}
func (p *pinRecorder) PacketIn(pi *ofp.PacketIn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, *pi)
}

func (p *pinRecorder) take() []ofp.PacketIn {
	p.mu.Lock()
	defer p.mu.Unlock()
	got := p.got
	p.got = nil
	return got
}

// TestTableMissPacketIn: with the miss rule on (a controller speaks
// OpenFlow 1.0-1.2), a miss in table 0 or in a goto_table's table sends
// an implicit-miss packet-in for that table; a resubmit's miss does not,
// and with the rule off a miss drops silently.
func TestTableMissPacketIn(t *testing.T) {
	r := newSwitchRig(t, 2)
	br := r.b.AddBridge("br0")
	br.Reconfigure(BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2)}})
	rec := &pinRecorder{}
	br.SetAsync(rec)
	mustMod(t, br, fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll})
	mustMod(t, br, fmSpec{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {1, 0}}, actions: []ofp.Action{
		resubmitTo(5), {Type: ofp.ActGotoTable, Table: 7}}})
	br.SetPacketInOnMiss(true)
	r.dp.Revalidate()

	r.send(t, 2, eth(macB, macA)) // misses table 0
	r.send(t, 1, eth(macA, macB)) // resubmit(,5) misses quietly, goto_table:7 misses
	var got []ofp.PacketIn
	dptest.Eventually(t, "two packet-ins", func() bool {
		got = append(got, rec.take()...)
		return len(got) >= 2
	})
	for i, want := range []uint8{0, 7} {
		pi := got[i]
		if !pi.ImplicitMiss || pi.Reason != ofp.PacketInNoMatch || pi.TableID != want {
			t.Errorf("packet-in %d: reason %d implicit %v table %d, want an implicit miss in table %d", i, pi.Reason, pi.ImplicitMiss, pi.TableID, want)
		}
	}
	if len(got) != 2 {
		t.Errorf("%d packet-ins, want 2", len(got))
	}

	out, err := r.b.Trace("br0", "in_port=2,dl_src="+macB+",dl_dst="+macA)
	if err != nil || !strings.Contains(out, ` 0. No match, and a "packet-in" is called for.`) {
		t.Errorf("trace of a miss: %v\n%s", err, out)
	}

	br.SetPacketInOnMiss(false)
	r.dp.Revalidate()
	r.send(t, 2, eth(macB, macA))
	r.dp.Revalidate()
	if got := rec.take(); len(got) != 0 {
		t.Errorf("miss rule off: %d packet-ins", len(got))
	}
}
