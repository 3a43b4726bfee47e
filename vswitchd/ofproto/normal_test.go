package ofproto

import (
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
)

// Addresses used throughout: hosts A..E and some special ones.
var (
	macA  = "00:00:00:00:00:0a"
	macB  = "00:00:00:00:00:0b"
	macC  = "00:00:00:00:00:0c"
	macD  = "00:00:00:00:00:0d"
	bcast = "ff:ff:ff:ff:ff:ff"
)

// fakeClock is a bridge clock tests move by hand.
type fakeClock struct{ d atomic.Int64 }

func (c *fakeClock) now() time.Duration      { return time.Duration(c.d.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.d.Add(int64(d)) }

// testBacker is a Backer over a datapath without ports, for translating
// upcalls directly.
type testBacker struct {
	*Backer
	dp    *datapath.Datapath
	clock *fakeClock
}

func newTestBacker(t *testing.T) *testBacker {
	t.Helper()
	dp := datapath.New(nil)
	t.Cleanup(dp.Close)
	return &testBacker{Backer: NewBacker(dp, nil), dp: dp, clock: &fakeClock{}}
}

// bridge adds a bridge on the test clock and configures it.
func (tb *testBacker) bridge(name string, cfg BridgeConfig) *Bridge {
	br := tb.AddBridge(name)
	br.clock = tb.clock.now
	br.Reconfigure(cfg)
	return br
}

// eth is a frame from src to dst with optional VLAN tags.
func eth(src, dst string, tags ...dptest.Tag) []byte {
	return dptest.Frame{
		Src: dptest.MAC(src), Dst: dptest.MAC(dst), Tags: tags,
		IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
		UDP:  &dptest.UDP{Src: 1, Dst: 2},
	}.Bytes()
}

func tag(vid uint16) dptest.Tag { return dptest.Tag{VID: vid} }

// xlate translates frame received on datapath port in and returns the
// actions as ovs-dpctl prints them.
func (tb *testBacker) xlate(in uint32, frame []byte) (string, flow.Mask) {
	u := []datapath.Upcall{{}}
	flow.Extract(frame, in, &u[0].Key)
	tb.Upcall(u)
	return u[0].Actions.String(), u[0].Mask
}

type step struct {
	in    uint32
	frame []byte
	want  string
}

func (tb *testBacker) run(t *testing.T, steps []step) {
	t.Helper()
	for i, s := range steps {
		var k flow.Key
		flow.Extract(s.frame, s.in, &k)
		if got, _ := tb.xlate(s.in, s.frame); got != s.want {
			t.Errorf("step %d: %v:\n got %s\nwant %s", i+1, k, got, s.want)
		}
	}
}

func access(name string, no uint32, vlan int) PortConfig {
	return PortConfig{Name: name, OFPort: int(no), DPPort: no, Tag: vlan}
}

func trunk(name string, no uint32, trunks ...int) PortConfig {
	return PortConfig{Name: name, OFPort: int(no), DPPort: no, Tag: -1, Trunks: trunks}
}

func TestNormalLearning(t *testing.T) {
	tb := newTestBacker(t)
	tb.bridge("br0", BridgeConfig{Ports: []PortConfig{
		trunk("p1", 1), trunk("p2", 2), trunk("p3", 3),
		{Name: "br0", OFPort: LocalOFPort, DPPort: 4, Tag: -1},
	}})
	tb.run(t, []step{
		{1, eth(macA, macB), "2,3,4"},                // unknown: flood, not back to 1
		{2, eth(macB, macA), "1"},                    // A was learned on 1
		{1, eth(macA, macB), "2"},                    // and B on 2
		{1, eth(macA, bcast), "2,3,4"},               // broadcast floods
		{1, eth(macA, "01:00:5e:00:00:01"), "2,3,4"}, // so does multicast
		{1, eth(macA, macA), "drop"},                 // learned on the input port: no hairpin
		{1, eth(macA, "01:80:c2:00:00:00"), "drop"},  // STP
		{1, eth(macA, "01:80:c2:00:00:0e"), "drop"},  // LLDP
		{1, eth(macA, "01:00:0c:cc:cc:cc"), "drop"},  // CDP
		{1, eth(macA, "01:80:c2:00:00:10"), "2,3,4"}, // not reserved
		{3, eth("01:00:5e:00:00:01", macA), "1"},     // a multicast source is not learned
		{2, eth(macC, "01:00:5e:00:00:01"), "1,3,4"}, // so this floods to 3 too
		{3, eth(macB, macA), "1"},                    // B moves to 3
		{1, eth(macA, macB), "3"},                    // and is found there
		{9, eth(macD, bcast), "drop"},                // not a port of any bridge
	})

	// A partial VLAN tag (TPID without a tag) is dropped.
	partial := append(eth(macD, macA)[:12], 0x81, 0x00, 0x00)
	if got, _ := tb.xlate(1, partial); got != "drop" {
		t.Errorf("partial tag: %s", got)
	}

	br := tb.Bridge("br0")
	want := " port  VLAN  MAC                Age\n" +
		"    1     0  00:00:00:00:00:0a    0\n" +
		"    2     0  00:00:00:00:00:0c    0\n" +
		"    3     0  00:00:00:00:00:0b    0\n"
	if got := br.FDBShow(); got != want {
		t.Errorf("fdb/show:\n%s\nwant:\n%s", got, want)
	}
	wantStats := "Statistics for bridge \"br0\":\n" +
		"  Current/maximum MAC entries in the table: 3/8192\n" +
		"  Current static MAC entries in the table : 0\n" +
		"  Total number of learned MAC entries     : 3\n" +
		"  Total number of expired MAC entries     : 0\n" +
		"  Total number of evicted MAC entries     : 0\n" +
		"  Total number of port moved MAC entries  : 1\n"
	if got := br.FDBStatsShow(); got != wantStats {
		t.Errorf("fdb/stats-show:\n%s\nwant:\n%s", got, wantStats)
	}

	br.Reconfigure(BridgeConfig{ForwardBPDU: true, Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2)}})
	tb.run(t, []step{{1, eth(macA, "01:80:c2:00:00:00"), "2"}}) // forward-bpdu=true

	br.FDBFlush()
	if got := br.FDBShow(); got != " port  VLAN  MAC                Age\n" {
		t.Errorf("after flush:\n%s", got)
	}
	tb.run(t, []step{{1, eth(macA, macB), "2"}})
	br.FDBStatsClear()
	if got := br.FDBStatsShow(); !strings.Contains(got, "learned MAC entries     : 0\n") || !strings.Contains(got, "entries in the table: 1/8192\n") {
		t.Errorf("after stats-clear:\n%s", got)
	}
}

func TestNormalVLANs(t *testing.T) {
	tb := newTestBacker(t)
	tb.bridge("br0", BridgeConfig{Ports: []PortConfig{
		access("a10", 1, 10),
		access("a20", 2, 20),
		access("a10b", 3, 10),
		trunk("t", 4),
		trunk("t10", 5, 10),
		{Name: "nt", OFPort: 6, DPPort: 6, Tag: 10, VLANMode: "native-tagged"},
		{Name: "nu", OFPort: 7, DPPort: 7, Tag: 20, Trunks: []int{10, 20}, VLANMode: "native-untagged"},
	}})
	tb.run(t, []step{
		// Untagged into access VLAN 10: untagged to the other access port,
		// tagged to the trunks and the native ports that carry 10.
		{1, eth(macA, bcast), "3,push_vlan(vid=10,pcp=0),4,5,6,7"},
		// A tagged frame on an access port is dropped...
		{1, eth(macA, bcast, tag(10)), "drop"},
		// ...but a priority tag is not; its PCP is kept.
		{1, eth(macA, bcast, dptest.Tag{PCP: 5}), "pop_vlan,3,push_vlan(vid=10,pcp=5),4,5,6,7"},
		// VLAN 20 from the trunk: untagged to access 20 and to the port
		// whose native VLAN it is, tagged to native-tagged 10 (which
		// trunks everything), not to t10.
		{4, eth(macB, bcast, tag(20)), "pop_vlan,2,push_vlan(vid=20,pcp=0),6,pop_vlan,7"},
		// Untagged on a trunk is VLAN 0, which no other port carries:
		// the native ports never trunk VLAN 0.
		{4, eth(macB, bcast), "drop"},
		// A trunk drops VLANs outside its trunks.
		{5, eth(macC, bcast, tag(20)), "drop"},
		// Untagged on native-untagged 20 is VLAN 20.
		{7, eth(macC, bcast), "2,push_vlan(vid=20,pcp=0),4,6"},
		// Tagged 10 on native-tagged 10 is VLAN 10.
		{6, eth(macD, bcast, tag(10)), "pop_vlan,1,3,push_vlan(vid=10,pcp=0),4,5,7"},
		// Untagged on native-tagged is its native VLAN 10.
		{6, eth(macD, bcast), "1,3,push_vlan(vid=10,pcp=0),4,5,7"},
		// Isolation: A is known in VLAN 10 only; from VLAN 20 it floods
		// VLAN 20 and never reaches the VLAN 10 access ports.
		{2, eth(macC, macA), "push_vlan(vid=20,pcp=0),4,6,pop_vlan,7"},
		// In VLAN 10 A is found on a10, untagged.
		{4, eth(macB, macA, tag(10)), "pop_vlan,1"},
		{3, eth(macB, macA), "1"},
		// B is now known in VLANs 20 (port t) and 10 (a10b).
		{1, eth(macA, macB), "3"},
		{2, eth(macC, macB), "push_vlan(vid=20,pcp=0),4"},
		// An 802.1ad outer tag on a trunk is VLAN 20 too, and keeps its TPID.
		{4, eth(macD, macC, dptest.Tag{TPID: 0x88a8, VID: 20}), "pop_vlan,2"},
		{5, eth(macD, macC, dptest.Tag{TPID: 0x88a8, VID: 10}), "pop_vlan,1,3,push_vlan(tpid=0x88a8,vid=10,pcp=0),4,6,7"},
	})
}

// A VLAN mode other than the known ones falls back to trunk, as OVS does;
// "" with a tag is access; native without a tag is VLAN 0.
func TestPortModes(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{
		{Name: "x", DPPort: 1, Tag: 5, VLANMode: "bogus"},
		{Name: "y", DPPort: 2, Tag: 5},
		{Name: "z", DPPort: 3, Tag: -1, VLANMode: "native-untagged"},
		{Name: "w", DPPort: 4, Tag: 4096, VLANMode: "access"},
	}})
	s := br.snap.Load()
	for _, tt := range []struct {
		name string
		mode vlanMode
		vlan uint16
	}{{"x", modeTrunk, 0}, {"y", modeAccess, 5}, {"z", modeNativeUntagged, 0}, {"w", modeAccess, 0}} {
		p := s.byName[tt.name]
		if p.mode != tt.mode || p.vlan != tt.vlan {
			t.Errorf("%s: %v vlan %d, want %v vlan %d", tt.name, p.mode, p.vlan, tt.mode, tt.vlan)
		}
	}
	tb.run(t, []step{
		// z's native VLAN is 0; x and w carry VLAN 0 too.
		{3, eth(macA, bcast), "1,4"},
		// z, with no native VLAN, trunks every VLAN, tagged.
		{1, eth(macB, bcast, tag(5)), "pop_vlan,2,push_vlan(vid=5,pcp=0),3"},
		{2, eth(macC, bcast), "push_vlan(vid=5,pcp=0),1,3"},
	})
}

func TestNormalPatchPorts(t *testing.T) {
	tb := newTestBacker(t)
	br0 := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{
		trunk("p1", 1),
		{Name: "patch0", OFPort: 2, PatchPeer: "patch1", Tag: -1},
		access("a10", 4, 10),
	}})
	br1 := tb.bridge("br1", BridgeConfig{Ports: []PortConfig{
		{Name: "patch1", OFPort: 1, PatchPeer: "patch0", Tag: -1},
		trunk("p2", 2),
		access("p3", 3, 10),
	}})
	tb.run(t, []step{
		// br0 floods into br1, which floods on: p3 is in VLAN 10 only.
		{1, eth(macA, bcast), "2"},
		// br1 learned A behind patch1, br0 learns B behind patch0.
		{2, eth(macB, macA), "1"},
		{1, eth(macA, macB), "2"},
		// VLAN 10 crosses tagged over the trunk patch: untagged to p3,
		// tagged to p2.
		{4, eth(macC, bcast), "push_vlan(vid=10,pcp=0),1,2,pop_vlan,3"},
		{3, eth(macD, macC), "4"},
	})
	want0 := " port  VLAN  MAC                Age\n" +
		"    1     0  00:00:00:00:00:0a    0\n" +
		"    2     0  00:00:00:00:00:0b    0\n" +
		"    4    10  00:00:00:00:00:0c    0\n" +
		"    2    10  00:00:00:00:00:0d    0\n"
	want1 := " port  VLAN  MAC                Age\n" +
		"    1     0  00:00:00:00:00:0a    0\n" +
		"    2     0  00:00:00:00:00:0b    0\n" +
		"    1    10  00:00:00:00:00:0c    0\n" +
		"    3    10  00:00:00:00:00:0d    0\n"
	if got := br0.FDBShow(); got != want0 {
		t.Errorf("br0 fdb/show:\n%s\nwant:\n%s", got, want0)
	}
	if got := br1.FDBShow(); got != want1 {
		t.Errorf("br1 fdb/show:\n%s\nwant:\n%s", got, want1)
	}

	// A patch port whose peer does not name it back goes nowhere.
	br1.Reconfigure(BridgeConfig{Ports: []PortConfig{
		{Name: "patch1", OFPort: 1, PatchPeer: "elsewhere", Tag: -1},
		trunk("p2", 2),
	}})
	tb.run(t, []step{{1, eth(macA, bcast), "drop"}})
}

// Two patch links between two bridges make a loop; the translation ends.
func TestPatchLoopBounded(t *testing.T) {
	tb := newTestBacker(t)
	tb.bridge("br0", BridgeConfig{Ports: []PortConfig{
		trunk("p1", 1),
		{Name: "a0", OFPort: 2, PatchPeer: "a1", Tag: -1},
		{Name: "b0", OFPort: 3, PatchPeer: "b1", Tag: -1},
	}})
	tb.bridge("br1", BridgeConfig{Ports: []PortConfig{
		{Name: "a1", OFPort: 1, PatchPeer: "a0", Tag: -1},
		{Name: "b1", OFPort: 2, PatchPeer: "b0", Tag: -1},
		{Name: "p2", OFPort: 3, DPPort: 2, Tag: -1},
	}})
	done := make(chan string)
	go func() {
		got, _ := tb.xlate(1, eth(macA, bcast))
		done <- got
	}()
	select {
	case got := <-done:
		if n := strings.Count(got, ",") + 1; n > 2*maxBridgeVisits {
			t.Errorf("%d actions", n)
		}
	case <-time.After(dptest.Timeout):
		t.Fatal("translation of a patch loop did not end")
	}
}

func TestMACAging(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{MACAgingTime: 5 * time.Second, Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}})
	if s := br.snap.Load(); s.idle != 15 {
		t.Fatalf("aging %d s, want 5 s raised to OVS's minimum 15", s.idle)
	}
	br.Reconfigure(BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}})

	tb.run(t, []step{
		{1, eth(macA, bcast), "2,3"},
		{2, eth(macB, bcast), "1,3"},
	})
	tb.clock.advance(200 * time.Second)
	tb.run(t, []step{{1, eth(macA, macB), "2"}}) // refreshes A, not B
	if got, want := br.FDBShow(), " port  VLAN  MAC                Age\n"+
		"    2     0  00:00:00:00:00:0b  200\n"+
		"    1     0  00:00:00:00:00:0a    0\n"; got != want {
		t.Errorf("fdb/show:\n%s\nwant:\n%s", got, want)
	}
	tb.clock.advance(99 * time.Second)
	tb.run(t, []step{{3, eth(macC, macB), "2"}})
	tb.clock.advance(1 * time.Second) // B is 300 s old
	tb.run(t, []step{
		{3, eth(macC, macB), "1,2"},
		{3, eth(macC, macA), "1"},
	})
	tb.clock.advance(200 * time.Second) // A is 300 s old
	tb.run(t, []step{{3, eth(macC, macA), "1,2"}})
	if got := br.FDBStatsShow(); !strings.Contains(got, "expired MAC entries     : 2\n") {
		t.Errorf("fdb/stats-show:\n%s", got)
	}
}

func TestMACTableSize(t *testing.T) {
	tb := newTestBacker(t)
	ports := []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}
	br := tb.bridge("br0", BridgeConfig{MACTableSize: 3, Ports: ports})
	if !strings.Contains(br.FDBStatsShow(), "table: 0/10\n") {
		t.Fatalf("size 3 not raised to OVS's minimum 10:\n%s", br.FDBStatsShow())
	}
	mac := func(i int) string { return fmt.Sprintf("00:00:00:00:01:%02x", i) }
	// One MAC on p1, then nine on p2, a second apart.
	tb.xlate(1, eth(mac(0), bcast))
	for i := 1; i <= 9; i++ {
		tb.clock.advance(time.Second)
		tb.xlate(2, eth(mac(i), bcast))
	}
	// The table is full: a new MAC on p3 evicts the oldest entry of the
	// port with the most (p2's first), not the oldest overall (p1's).
	tb.clock.advance(time.Second)
	tb.xlate(3, eth(mac(10), bcast))
	tb.run(t, []step{
		{3, eth(mac(10), mac(0)), "1"},
		{3, eth(mac(10), mac(1)), "1,2"},
		{3, eth(mac(10), mac(2)), "2"},
	})
	got := br.FDBStatsShow()
	for _, want := range []string{"table: 10/10\n", "learned MAC entries     : 11\n", "evicted MAC entries     : 1\n", "expired MAC entries     : 0\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("fdb/stats-show lacks %q:\n%s", want, got)
		}
	}
	// Growing keeps everything; shrinking expires the least recently
	// used, counted as expired as OVS's mac_learning_run does.
	br.Reconfigure(BridgeConfig{MACTableSize: 20, Ports: ports})
	for i := 11; i <= 15; i++ {
		tb.xlate(2, eth(mac(i), bcast))
	}
	br.Reconfigure(BridgeConfig{MACTableSize: 12, Ports: ports})
	got = br.FDBStatsShow()
	for _, want := range []string{"table: 12/12\n", "expired MAC entries     : 3\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("fdb/stats-show lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(br.FDBShow(), mac(0)) {
		t.Errorf("oldest entry kept:\n%s", br.FDBShow())
	}
}

// Reconfigure forgets the MACs of removed ports and of ports whose VLAN
// configuration changed, and forwards by the new configuration at once.
func TestReconfigureForgets(t *testing.T) {
	tb := newTestBacker(t)
	cfg := BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3), {Name: "br0", OFPort: LocalOFPort, DPPort: 4, Tag: -1}}}
	br := tb.bridge("br0", cfg)
	tb.run(t, []step{
		{1, eth(macA, bcast), "2,3,4"},
		{2, eth(macB, bcast), "1,3,4"},
		{3, eth(macC, bcast), "1,2,4"},
		{4, eth(macD, bcast), "1,2,3"},
	})
	if got, want := br.FDBShow(), " port  VLAN  MAC                Age\n"+
		"    1     0  00:00:00:00:00:0a    0\n"+
		"    2     0  00:00:00:00:00:0b    0\n"+
		"    3     0  00:00:00:00:00:0c    0\n"+
		"LOCAL     0  00:00:00:00:00:0d    0\n"; got != want {
		t.Errorf("fdb/show:\n%s\nwant:\n%s", got, want)
	}
	// p3 goes, p2 becomes an access port, p1 keeps its configuration.
	cfg.Ports = []PortConfig{trunk("p1", 1), access("p2", 2, 0), {Name: "br0", OFPort: LocalOFPort, DPPort: 4, Tag: -1}}
	br.Reconfigure(cfg)
	if got, want := br.FDBShow(), " port  VLAN  MAC                Age\n"+
		"    1     0  00:00:00:00:00:0a    0\n"+
		"LOCAL     0  00:00:00:00:00:0d    0\n"; got != want {
		t.Errorf("fdb/show after reconfigure:\n%s\nwant:\n%s", got, want)
	}
	tb.run(t, []step{
		{1, eth(macA, macC), "2,4"},
		{3, eth(macC, macA), "drop"},
	})
	tb.DelBridge("br0")
	tb.run(t, []step{{1, eth(macA, macD), "drop"}})
	if tb.Bridge("br0") != nil {
		t.Error("bridge still there")
	}
	br.Reconfigure(cfg) // on a deleted bridge: ignored
	tb.run(t, []step{{1, eth(macA, macD), "drop"}})
}

func TestReservedMAC(t *testing.T) {
	for _, tt := range []struct {
		mac  string
		want bool
	}{
		{"01:80:c2:00:00:00", true}, {"01:80:c2:00:00:0f", true}, {"01:80:c2:00:00:10", false},
		{"00:e0:2b:00:00:00", true}, {"00:e0:2b:00:00:04", true}, {"00:e0:2b:00:00:05", false},
		{"01:00:0c:00:00:00", true}, {"01:00:0c:cc:cc:cc", true}, {"01:00:0c:cc:cc:cd", true},
		{"01:00:0c:cd:cd:cd", true}, {"01:00:0c:cc:cc:c7", true}, {"01:00:0c:cc:cc:c8", false},
		{"ff:ff:ff:ff:ff:ff", false}, {"00:00:00:00:00:01", false},
	} {
		if got := isReservedMAC(flow.MAC(dptest.MAC(tt.mac))); got != tt.want {
			t.Errorf("%s: %v", tt.mac, got)
		}
	}
}

func BenchmarkNormal(b *testing.B) {
	dp := datapath.New(nil)
	defer dp.Close()
	back := NewBacker(dp, nil)
	br := back.AddBridge("br0")
	var ports []PortConfig
	for i := uint32(1); i <= 8; i++ {
		ports = append(ports, trunk(fmt.Sprintf("p%d", i), i))
	}
	br.Reconfigure(BridgeConfig{Ports: ports})
	frames := map[string][]byte{"unicast": eth(macA, macB), "flood": eth(macA, bcast)}
	u := []datapath.Upcall{{}}
	flow.Extract(eth(macB, macA), 2, &u[0].Key)
	back.Upcall(u) // learn B on 2
	for _, name := range []string{"unicast", "flood"} {
		b.Run(name, func(b *testing.B) {
			var k flow.Key
			flow.Extract(frames[name], 1, &k)
			buf := make(datapath.Actions, 0, 16)
			b.ReportAllocs()
			for b.Loop() {
				u[0] = datapath.Upcall{Key: k, Actions: buf[:0]}
				back.Upcall(u)
			}
		})
	}
}

// A fail_mode=secure bridge has no flows: it drops everything, also what
// a patch port brings in, learns nothing, and forwards again once
// standalone.
func TestFailSecureDrops(t *testing.T) {
	tb := newTestBacker(t)
	ports := []PortConfig{trunk("p1", 1), trunk("p2", 2), {Name: "patch0", OFPort: 3, PatchPeer: "patch1", Tag: -1}}
	br0 := tb.bridge("br0", BridgeConfig{FailSecure: true, Ports: ports})
	tb.bridge("br1", BridgeConfig{Ports: []PortConfig{{Name: "patch1", OFPort: 1, PatchPeer: "patch0", Tag: -1}, trunk("p4", 4)}})
	tb.run(t, []step{
		{1, eth(macA, bcast), "drop"},
		{2, eth(macB, macA), "drop"},
		// Into br0 through the patch port: dropped there, br1 floods
		// nowhere else.
		{4, eth(macC, bcast), "drop"},
	})
	if got := br0.FDBShow(); got != " port  VLAN  MAC                Age\n" {
		t.Errorf("secure bridge learned:\n%s", got)
	}
	br0.Reconfigure(BridgeConfig{Ports: ports})
	tb.run(t, []step{{1, eth(macA, bcast), "2,4"}})
}

// TestNormalFloodVLANs: on a VLAN of flood_vlans NORMAL learns nothing
// and floods even to a MAC it knows on another VLAN; other VLANs learn;
// a change of flood_vlans flushes the MAC table.
func TestNormalFloodVLANs(t *testing.T) {
	tb := newTestBacker(t)
	cfg := BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}, FloodVLANs: []int{10}}
	br := tb.bridge("br0", cfg)
	tb.run(t, []step{
		{1, eth(macA, macB, tag(10)), "2,3"},
		{2, eth(macB, macA, tag(10)), "1,3"}, // A not learned on VLAN 10
		{1, eth(macA, macB, tag(20)), "2,3"},
		{2, eth(macB, macA, tag(20)), "1"}, // learned on VLAN 20
	})
	if got := br.FDBShow(); strings.Contains(got, "   10  ") {
		t.Errorf("fdb/show has entries on flood VLAN 10:\n%s", got)
	}
	cfg.FloodVLANs = []int{10, 30}
	br.Reconfigure(cfg)
	tb.run(t, []step{{2, eth(macB, macA, tag(20)), "1,3"}}) // flushed
}
