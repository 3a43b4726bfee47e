package ofproto

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/dptest"
)

// switchRig is a datapath with fake ports, a Backer and its bridges.
type switchRig struct {
	dp    *datapath.Datapath
	b     *Backer
	ports map[uint32]*dptest.Port
	rx    map[uint32]uint64 // frames injected per port
}

func newSwitchRig(t *testing.T, nports int) *switchRig {
	t.Helper()
	r := &switchRig{dp: datapath.New(nil), rx: map[uint32]uint64{}}
	r.b = NewBacker(r.dp, nil)
	r.ports = dptest.AddPorts(t, nports, r.dp.AddPort, r.dp.Close)
	return r
}

// send injects frames on port in and waits until the datapath has
// forwarded them.
func (r *switchRig) send(t *testing.T, in uint32, frames ...[]byte) {
	t.Helper()
	r.ports[in].Inject(frames...)
	r.rx[in] += uint64(len(frames))
	want := r.rx[in]
	dptest.Eventually(t, fmt.Sprintf("%d frames forwarded from port %d", want, in), func() bool {
		for _, pi := range r.dp.Ports() {
			if pi.No == in {
				return pi.Stats.RxPackets >= want
			}
		}
		return false
	})
}

// expect checks that each port received exactly the given frames since
// the last call, and forgets them.
func (r *switchRig) expect(t *testing.T, what string, want map[uint32][][]byte, seen map[uint32]int) {
	t.Helper()
	for no, p := range r.ports {
		sent := p.Sent()[seen[no]:]
		seen[no] += len(sent)
		w := want[no]
		if len(sent) != len(w) {
			t.Errorf("%s: port %d got %d frames, want %d", what, no, len(sent), len(w))
			continue
		}
		for i := range w {
			if !bytes.Equal(sent[i], w[i]) {
				t.Errorf("%s: port %d frame %d:\n got %x\nwant %x", what, no, i, sent[i], w[i])
			}
		}
	}
}

// The bytes on the wire: tags pushed and popped per port, flood copies
// independent of each other, learning, and counters.
func TestSwitchEndToEnd(t *testing.T) {
	r := newSwitchRig(t, 4)
	br := r.b.AddBridge("br0")
	br.Reconfigure(BridgeConfig{Ports: []PortConfig{
		access("p1", 1, 10),
		trunk("p2", 2),
		access("p3", 3, 10),
		access("p4", 4, 20),
	}})
	seen := map[uint32]int{}

	r.send(t, 1, eth(macA, bcast))
	r.expect(t, "flood from access 10", map[uint32][][]byte{
		2: {eth(macA, bcast, tag(10))},
		3: {eth(macA, bcast)},
	}, seen)

	r.send(t, 2, eth(macB, macA, tag(10)), eth(macC, bcast, tag(20)))
	r.expect(t, "from the trunk", map[uint32][][]byte{
		1: {eth(macB, macA)},
		4: {eth(macC, bcast)},
	}, seen)

	r.send(t, 1, eth(macA, macB), eth(macA, macB), eth(macA, macA))
	r.expect(t, "unicast to the trunk, no hairpin", map[uint32][][]byte{
		2: {eth(macA, macB, tag(10)), eth(macA, macB, tag(10))},
	}, seen)

	r.send(t, 4, eth(macD, macC), eth(macD, "01:80:c2:00:00:00"))
	r.expect(t, "VLAN 20 unicast; reserved dropped", map[uint32][][]byte{
		2: {eth(macD, macC, tag(20))},
	}, seen)

	want := " port  VLAN  MAC                Age\n" +
		"    1    10  00:00:00:00:00:0a    0\n" +
		"    2    10  00:00:00:00:00:0b    0\n" +
		"    2    20  00:00:00:00:00:0c    0\n" +
		"    4    20  00:00:00:00:00:0d    0\n"
	if got := br.FDBShow(); got != want {
		t.Errorf("fdb/show:\n%s\nwant:\n%s", got, want)
	}
	s := r.dp.Stats()
	if s.Hit+s.Missed != 8 || s.Hit != 1 || s.Lost != 0 {
		t.Errorf("datapath stats %+v: want 8 lookups, the repeated A->B one a hit", s)
	}
}

// Two bridges joined by patch ports forward between each other and both
// learn.
func TestSwitchPatchPorts(t *testing.T) {
	r := newSwitchRig(t, 2)
	br0, br1 := r.b.AddBridge("br0"), r.b.AddBridge("br1")
	br0.Reconfigure(BridgeConfig{Ports: []PortConfig{
		trunk("p1", 1),
		{Name: "patch-br1", OFPort: 2, PatchPeer: "patch-br0", Tag: -1},
	}})
	br1.Reconfigure(BridgeConfig{Ports: []PortConfig{
		{Name: "patch-br0", OFPort: 1, PatchPeer: "patch-br1", Tag: -1},
		access("p2", 2, 7),
	}})
	seen := map[uint32]int{}
	// Untagged from p1 is VLAN 0 in br1: p2 (access 7) does not get it;
	// tagged 7 does, untagged.
	r.send(t, 1, eth(macA, bcast), eth(macA, bcast, tag(7)))
	r.expect(t, "into br1", map[uint32][][]byte{2: {eth(macA, bcast)}}, seen)
	r.send(t, 2, eth(macB, macA))
	r.expect(t, "back to br0", map[uint32][][]byte{1: {eth(macB, macA, tag(7))}}, seen)

	want0 := " port  VLAN  MAC                Age\n" +
		"    1     0  00:00:00:00:00:0a    0\n" +
		"    1     7  00:00:00:00:00:0a    0\n" +
		"    2     7  00:00:00:00:00:0b    0\n"
	want1 := " port  VLAN  MAC                Age\n" +
		"    1     0  00:00:00:00:00:0a    0\n" +
		"    1     7  00:00:00:00:00:0a    0\n" +
		"    2     7  00:00:00:00:00:0b    0\n"
	if got := br0.FDBShow(); got != want0 {
		t.Errorf("br0 fdb/show:\n%s\nwant:\n%s", got, want0)
	}
	if got := br1.FDBShow(); got != want1 {
		t.Errorf("br1 fdb/show:\n%s\nwant:\n%s", got, want1)
	}
}

// A port removed by Reconfigure while traffic flows receives nothing once
// Reconfigure has returned, not even from flows cached before, and the
// rest of the bridge keeps forwarding.
func TestReconfigureRemovesPortUnderTraffic(t *testing.T) {
	r := newSwitchRig(t, 4)
	br := r.b.AddBridge("br0")
	all := []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3), trunk("p4", 4)}
	br.Reconfigure(BridgeConfig{Ports: all})

	// p4 hosts D, learned before traffic starts, so that unicast flows to
	// it are cached as well as floods.
	r.send(t, 4, eth(macD, bcast))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, in := range []uint32{1, 2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := map[uint32]string{1: macA, 2: macB}[in]
			frames := [][]byte{eth(src, bcast), eth(src, macD), eth(src, "01:00:5e:00:00:01")}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if r.ports[in].Pending() < 128 {
					r.ports[in].Inject(frames[i%len(frames)])
				} else {
					time.Sleep(20 * time.Microsecond) // pacing: the port's queue is full
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	dptest.Eventually(t, "traffic to p4", func() bool { return r.ports[4].NumSent() > 500 })
	br.Reconfigure(BridgeConfig{Ports: all[:3]})
	after := r.ports[4].NumSent()

	base := r.ports[3].NumSent()
	dptest.Eventually(t, "traffic to p3 after the reconfiguration", func() bool { return r.ports[3].NumSent() > base+3000 })
	if n := r.ports[4].NumSent(); n != after {
		t.Fatalf("p4 got %d frames after Reconfigure removed it", n-after)
	}
	// D's entry went with the port: unicast to D now floods.
	if fdb := br.FDBShow(); bytes.Contains([]byte(fdb), []byte(macD)) {
		t.Errorf("D still learned:\n%s", fdb)
	}
	if err := r.dp.DelPort(4); err != nil {
		t.Fatal(err)
	}
}
