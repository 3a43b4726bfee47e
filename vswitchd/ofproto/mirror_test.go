package ofproto

import (
	"testing"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
)

// TestMirror checks which copies each kind of mirror adds, as OVS's
// mirror_packet makes them: ingress copies before the pipeline's outputs,
// egress copies after the output they copy, each mirror once.
func TestMirror(t *testing.T) {
	ports := func() []PortConfig {
		return []PortConfig{access("p1", 1, 10), access("p2", 2, 10), trunk("p3", 3), trunk("p4", 4)}
	}
	cases := []struct {
		name   string
		mirror MirrorConfig
		steps  []step
	}{
		// p4, a trunk, gets the copies of VLAN 10 tagged.
		{"select all", MirrorConfig{Src: []string{"p1", "p2", "p3", "p4"}, Dst: []string{"p1", "p2", "p3", "p4"}, Out: []string{"p4"}},
			[]step{
				{1, eth(macA, bcast), "push_vlan(vid=10,pcp=0),4,pop_vlan,2,push_vlan(vid=10,pcp=0),3"}, // no flood to the output port, one copy
				{2, eth(macB, macA), "push_vlan(vid=10,pcp=0),4,pop_vlan,1"},
				{4, eth(macC, macA), "drop"}, // the output port forwards nothing
				{1, eth(macA, macC), "push_vlan(vid=10,pcp=0),4,pop_vlan,2,push_vlan(vid=10,pcp=0),3"},
			}},
		{"select src", MirrorConfig{Src: []string{"p1"}, Out: []string{"p4"}},
			[]step{
				{1, eth(macA, bcast), "push_vlan(vid=10,pcp=0),4,pop_vlan,2,push_vlan(vid=10,pcp=0),3"},
				{2, eth(macB, macA), "1"},
				{1, eth(macA, macB), "push_vlan(vid=10,pcp=0),4,pop_vlan,2"},
			}},
		{"select dst", MirrorConfig{Dst: []string{"p1"}, Out: []string{"p4"}},
			[]step{
				{1, eth(macA, bcast), "2,push_vlan(vid=10,pcp=0),3"},
				{2, eth(macB, macA), "1,push_vlan(vid=10,pcp=0),4"},
				{3, eth(macC, macA, tag(10)), "pop_vlan,1,push_vlan(vid=10,pcp=0),4"},
			}},
		{"select vlan", MirrorConfig{Src: []string{"p3"}, VLANs: []int{20}, Out: []string{"p4"}},
			[]step{
				{3, eth(macA, bcast, tag(10)), "pop_vlan,1,2"},
				{3, eth(macA, bcast, tag(20)), "4"},
			}},
		{"snaplen", MirrorConfig{Src: []string{"p1"}, Out: []string{"p4"}, Snaplen: 64},
			[]step{
				{1, eth(macA, bcast), "push_vlan(vid=10,pcp=0),trunc(64),4,pop_vlan,2,push_vlan(vid=10,pcp=0),3"},
			}},
		{"output vlan", MirrorConfig{Src: []string{"p1"}, OutVLAN: 30},
			[]step{
				// Tagged with 30 to every port carrying it: the trunks.
				{1, eth(macA, bcast), "push_vlan(vid=30,pcp=0),3,4,pop_vlan,2,push_vlan(vid=10,pcp=0),3,4"},
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := newTestBacker(t)
			c.mirror.Key, c.mirror.Name = "m", "m"
			tb.bridge("br0", BridgeConfig{Ports: ports(), Mirrors: []MirrorConfig{c.mirror}})
			tb.run(t, c.steps)
		})
	}
}

// TestMirrorStats checks that a mirrored flow's actions count its packets
// for the mirror, and that the counter survives a reconfiguration.
func TestMirrorStats(t *testing.T) {
	tb := newTestBacker(t)
	m := MirrorConfig{Key: "k", Name: "m", Src: []string{"p1"}, Out: []string{"p3"}}
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}, Mirrors: []MirrorConfig{m}})
	u := []datapath.Upcall{{}}
	flow.Extract(eth(macA, bcast), 1, &u[0].Key)
	tb.Upcall(u)
	var c *datapath.Counter
	for _, a := range u[0].Actions {
		if a.Kind == datapath.ActionCount {
			c = a.Counter
		}
	}
	if c == nil {
		t.Fatalf("no count action in %v", u[0].Actions)
	}
	c.Add(2, 200)
	m.Snaplen = 100
	br.Reconfigure(BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}, Mirrors: []MirrorConfig{m}})
	if p, b, ok := br.MirrorStats("k"); !ok || p != 2 || b != 200 {
		t.Errorf("MirrorStats = %d, %d, %v; want 2, 200, true", p, b, ok)
	}
	br.Reconfigure(BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}})
	if _, _, ok := br.MirrorStats("k"); ok {
		t.Error("MirrorStats of a deleted mirror")
	}
}
