package rstp

import (
	"fmt"
	"testing"
)

// net wires bridges in memory: links join two ports, and BPDUs sent on
// one are queued for the other.
type net struct {
	t       *testing.T
	bridges map[string]*Bridge
	// peer maps "bridge/port" to the other end of its link.
	peer  map[string]string
	down  map[string]bool
	queue []frame
	sent  int
}

type frame struct {
	to   string // "bridge/port"
	bpdu []byte
}

func newNet(t *testing.T) *net {
	return &net{t: t, bridges: map[string]*Bridge{}, peer: map[string]string{}, down: map[string]bool{}}
}

func (n *net) bridge(name string, mac byte, prio int) *Bridge {
	cfg := DefaultConfig([6]byte{0, 0, 0, 0, 0, mac})
	cfg.Priority = prio
	b := New(name, cfg, func(port string, bpdu []byte) {
		n.sent++
		from := name + "/" + port
		if to, ok := n.peer[from]; ok && !n.down[from] {
			n.queue = append(n.queue, frame{to, bpdu})
		}
	}, nil)
	n.bridges[name] = b
	return b
}

// link joins port a of bridge ab to port b of bridge bb.
func (n *net) link(ab, a, bb, b string) {
	n.peer[ab+"/"+a], n.peer[bb+"/"+b] = bb+"/"+b, ab+"/"+a
	for _, e := range [][2]string{{ab, a}, {bb, b}} {
		br := n.bridges[e[0]]
		br.SetPort(e[1], PortConfig{Priority: DefaultPortPriority, PathCost: 2000, AutoEdge: true})
		br.SetEnabled(e[1], true)
	}
}

// cut takes the link of port a of bridge ab down at both ends.
func (n *net) cut(ab, a string) {
	other := n.peer[ab+"/"+a]
	n.down[ab+"/"+a], n.down[other] = true, true
	n.bridges[ab].SetEnabled(a, false)
	var ob, op string
	fmt.Sscanf(other, "%s", &ob)
	for i := range other {
		if other[i] == '/' {
			ob, op = other[:i], other[i+1:]
		}
	}
	n.bridges[ob].SetEnabled(op, false)
}

// deliver hands every queued BPDU over, until none is left.
func (n *net) deliver() {
	for i := 0; len(n.queue) > 0; i++ {
		if i > 100000 {
			n.t.Fatal("BPDUs never stop")
		}
		f := n.queue[0]
		n.queue = n.queue[1:]
		for j := range f.to {
			if f.to[j] == '/' {
				if err := n.bridges[f.to[:j]].Receive(f.to[j+1:], f.bpdu); err != nil {
					n.t.Fatalf("%s: %v", f.to, err)
				}
				break
			}
		}
	}
}

// run delivers, then ticks every bridge secs times.
func (n *net) run(secs int) {
	n.deliver()
	for i := 0; i < secs; i++ {
		for _, b := range n.bridges {
			b.Tick()
		}
		n.deliver()
	}
}

func (n *net) state(br, port string) (Role, State) { return n.bridges[br].PortState(port) }

func (n *net) want(br, port string, role Role, st State) {
	n.t.Helper()
	if r, s := n.state(br, port); r != role || s != st {
		n.t.Errorf("%s/%s: %v %v, want %v %v", br, port, r, s, role, st)
	}
}

func TestTwoBridgesConverge(t *testing.T) {
	n := newNet(t)
	n.bridge("a", 1, 4096)
	n.bridge("b", 2, 32768)
	n.link("a", "p1", "b", "p1")
	// The proposal/agreement handshake forwards without waiting for
	// timers: no tick needed.
	n.run(0)
	n.want("a", "p1", RoleDesignated, Forwarding)
	n.want("b", "p1", RoleRoot, Forwarding)
	if st := n.bridges["b"].Status(); st.RootID != n.bridges["a"].ID() || st.RootPathCost != 2000 {
		t.Errorf("b's root %v cost %d", st.RootID, st.RootPathCost)
	}
}

// loop is a and b joined by two links, a the root.
func loop(t *testing.T) *net {
	n := newNet(t)
	n.bridge("a", 1, 4096)
	n.bridge("b", 2, 32768)
	n.link("a", "p1", "b", "p1")
	n.link("a", "p2", "b", "p2")
	n.run(5)
	return n
}

func TestLoopBlocksOnePort(t *testing.T) {
	n := loop(t)
	n.want("a", "p1", RoleDesignated, Forwarding)
	n.want("a", "p2", RoleDesignated, Forwarding)
	n.want("b", "p1", RoleRoot, Forwarding)
	n.want("b", "p2", RoleAlternate, Discarding)
	// Stable: hellos keep it so.
	n.run(30)
	n.want("b", "p1", RoleRoot, Forwarding)
	n.want("b", "p2", RoleAlternate, Discarding)
}

func TestRootPortFailover(t *testing.T) {
	n := loop(t)
	n.cut("b", "p1")
	// The alternate port takes over at once, with no timer.
	n.run(0)
	n.want("b", "p2", RoleRoot, Forwarding)
	n.want("b", "p1", RoleDisabled, Discarding)
}

func TestTriangle(t *testing.T) {
	n := newNet(t)
	n.bridge("a", 1, 4096)
	n.bridge("b", 2, 32768)
	n.bridge("c", 3, 32768)
	n.link("a", "ab", "b", "ba")
	n.link("b", "bc", "c", "cb")
	n.link("c", "ca", "a", "ac")
	n.run(10)
	n.want("a", "ab", RoleDesignated, Forwarding)
	n.want("a", "ac", RoleDesignated, Forwarding)
	n.want("b", "ba", RoleRoot, Forwarding)
	n.want("c", "ca", RoleRoot, Forwarding)
	// b has the lower ID: it is designated on b-c, c's end blocks.
	n.want("b", "bc", RoleDesignated, Forwarding)
	n.want("c", "cb", RoleAlternate, Discarding)

	// a-c fails: c reaches the root through b.
	n.cut("c", "ca")
	n.run(0)
	n.want("c", "cb", RoleRoot, Forwarding)
	if st := n.bridges["c"].Status(); st.RootPathCost != 4000 {
		t.Errorf("c's root path cost %d, want 4000", st.RootPathCost)
	}
}

func TestEdgePort(t *testing.T) {
	n := newNet(t)
	b := n.bridge("a", 1, 32768)
	b.SetPort("host", PortConfig{Priority: 128, PathCost: 2000, AutoEdge: true})
	b.SetEnabled("host", true)
	b.SetPort("admin", PortConfig{Priority: 128, PathCost: 2000, AdminEdge: true})
	b.SetEnabled("admin", true)
	n.run(0)
	n.want("a", "admin", RoleDesignated, Forwarding)
	n.want("a", "host", RoleDesignated, Discarding)
	// No BPDU comes back: the port becomes an edge after MigrateTime.
	n.run(migrateTime + 1)
	n.want("a", "host", RoleDesignated, Forwarding)
}

func TestSTPNeighbour(t *testing.T) {
	n := newNet(t)
	n.bridge("a", 1, 32768)
	// s, the root, talks 802.1D: configuration BPDUs only.
	stp := n.bridge("s", 2, 4096)
	cfg := stp.cfg
	cfg.ForceVersion = 0
	stp.Configure(cfg)
	n.link("a", "p", "s", "p")
	n.run(migrateTime + 2*HelloTime)
	if a := n.bridges["a"].port("p"); a.sendRSTP {
		t.Error("a still sends RST BPDUs to an 802.1D bridge")
	}
	// s's designated port waits out the forward delay twice.
	n.run(2 * DefaultForwardDelay)
	n.want("a", "p", RoleRoot, Forwarding)
	n.want("s", "p", RoleDesignated, Forwarding)
}

func TestConfigCheck(t *testing.T) {
	c := DefaultConfig([6]byte{1})
	c.Priority, c.MaxAge, c.TransmitHoldCount = 70000, 50, 0
	if bad := c.Check(); len(bad) != 3 || c.Priority != DefaultPriority || c.MaxAge != DefaultMaxAge || c.TransmitHoldCount != DefaultTransmitHoldCount {
		t.Errorf("Check: %q, %+v", bad, c)
	}
	c = DefaultConfig([6]byte{1})
	c.Priority = 4097
	if bad := c.Check(); len(bad) != 0 || c.Priority != 4096 {
		t.Errorf("Check rounds priority: %q %d", bad, c.Priority)
	}
}

func TestSpeedToCost(t *testing.T) {
	for mbps, cost := range map[uint64]uint32{0: 200000, 1: 20000000, 9: 20000000, 10: 2000000, 100: 200000,
		1000: 20000, 10000: 2000, 40000: 2000, 100000: 200, 1000000: 20, 10000000: 2, 100000000: 2} {
		if got := SpeedToCost(mbps); got != cost {
			t.Errorf("SpeedToCost(%d) = %d, want %d", mbps, got, cost)
		}
	}
}
