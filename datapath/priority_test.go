package datapath

import (
	"strings"
	"sync"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
)

// set(skb_priority) as OVS's netdev datapath runs it: the packet's
// priority is metadata (no byte changes), kept through a recirculation
// into the next pass's key, which a flow then matches exactly; dump-flows
// shows both as OVS does.
func TestSkbPriorityRecirc(t *testing.T) {
	r := newRig(t, 3)
	var mu sync.Mutex
	var seen []uint32
	r.dp.SetUpcall(newProg(func(k *flow.Key) (Actions, flow.Mask) {
		m := flow.Mask{EthType: 0xffff, SkbPriority: ^uint32(0)}
		if k.RecircID == 0 {
			return Actions{SetPriority(5), Recirc(7)}, m
		}
		mu.Lock()
		seen = append(seen, k.SkbPriority)
		mu.Unlock()
		return Actions{Output(2), SetPriority(0), Output(3)}, m
	}))
	frame := tcpFrame(ipA, ipB, 40000, 80, dptest.SYN, 1, 0)
	r.ports[1].Inject(frame, frame)
	r.rxDone(t, 1, 2)
	if r.ports[2].NumSent() != 2 || r.ports[3].NumSent() != 2 {
		t.Fatalf("%d and %d frames out of ports 2 and 3", r.ports[2].NumSent(), r.ports[3].NumSent())
	}
	mu.Lock()
	if len(seen) == 0 || seen[0] != 5 {
		t.Errorf("skb_priority after the recirculation: %v, want 5", seen)
	}
	mu.Unlock()
	var lines []string
	for _, f := range r.dp.Flows() {
		lines = append(lines, flow.FormatODP(&f.Key, &f.Mask, flow.ODPFormat{})+" actions:"+f.Actions.String())
	}
	all := strings.Join(lines, "\n")
	if len(lines) != 2 ||
		!strings.Contains(all, "skb_priority(0),recirc_id(0),in_port(1),packet_type(ns=0,id=0),eth_type(0x0800) actions:set(skb_priority(0x5)),recirc(0x7)") ||
		!strings.Contains(all, "skb_priority(0x5),recirc_id(0x7),in_port(1),packet_type(ns=0,id=0),eth_type(0x0800) actions:2,set(skb_priority(0)),3") {
		t.Errorf("flows:\n%s", all)
	}
	// The set changes no byte of the packet.
	p := packetOf(append([]byte(nil), frame...))
	a := SetPriority(0x7fffffff)
	setField(p, a.Field, &a.Val)
	if p.SkbPriority != 0x7fffffff || string(p.Data()) != string(frame) {
		t.Errorf("skb_priority %#x, frame changed: %v", p.SkbPriority, string(p.Data()) != string(frame))
	}
	if p.Reset(); p.SkbPriority != 0 {
		t.Errorf("skb_priority %#x after Reset", p.SkbPriority)
	}
}
