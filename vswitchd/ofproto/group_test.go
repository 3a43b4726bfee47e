package ofproto

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

func TestGroups(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}})
	mustMod(t, br, fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll})
	toGroup := fmSpec{prio: 1, actions: []ofp.Action{{Type: ofp.ActGroup, ID: 1}}}
	if err := br.FlowMod(toGroup.mod()); err == nil || err.Errno != ofp.BadOutGroup {
		t.Fatalf("flow to a missing group: %v", err)
	}
	gm := func(cmd uint16, typ uint8, buckets ...ofp.Bucket) *ofp.Error {
		return br.GroupMod(&ofp.GroupMod{Command: cmd, Type: typ, ID: 1, Buckets: buckets, CommandBucketID: ofp.BucketAll})
	}
	out := func(p, watch uint32) ofp.Bucket {
		return ofp.Bucket{ID: p, Weight: 1, WatchPort: watch, WatchGroup: ofp.GroupAny, Actions: []ofp.Action{output(p)}}
	}
	udp := func(sport uint16) []byte {
		return dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
			IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
			UDP:  &dptest.UDP{Src: sport, Dst: 53}}.Bytes()
	}
	if err := gm(ofp.GroupAdd, ofp.GroupSelect, out(2, ofp.PortAny), out(3, ofp.PortAny)); err != nil {
		t.Fatal(err)
	}
	if err := gm(ofp.GroupAdd, ofp.GroupAll); err == nil || err.Errno != ofp.GroupExists {
		t.Fatalf("second add: %v", err)
	}
	mustMod(t, br, toGroup)
	// OVS's default selection (dp_hash of the symmetric L3/L4 fields:
	// TCP ports, not UDP's) spreads TCP connections.
	tcp := func(sport uint16) []byte {
		return dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
			IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
			TCP:  &dptest.TCP{Src: sport, Dst: 80}}.Bytes()
	}
	// It picks after the datapath hashed and recirculated the packet.
	seen := map[string]int{}
	for sport := range uint16(32) {
		ps := tb.xlatePasses(t, 1, tcp(1000+sport))
		acts := ps[len(ps)-1].acts.String()
		if again := tb.xlatePasses(t, 1, tcp(1000+sport)); again[len(again)-1].acts.String() != acts {
			t.Fatalf("flow %d: %s then %s", sport, acts, again[len(again)-1].acts)
		}
		seen[acts]++
		if m := ps[len(ps)-1].mask; len(ps) != 2 || m.DpHash != 0xf {
			t.Fatalf("select: %d passes, mask %+v", len(ps), m)
		}
	}
	if seen["2"] == 0 || seen["3"] == 0 || len(seen) != 2 {
		t.Fatalf("select: %v", seen)
	}
	if err := gm(ofp.GroupModify, ofp.GroupAll, out(2, ofp.PortAny), out(3, ofp.PortAny)); err != nil {
		t.Fatal(err)
	}
	if acts, _ := tb.xlate(1, udp(7)); acts != "2,3" {
		t.Fatalf("all: %s", acts)
	}
	if err := gm(ofp.GroupModify, ofp.GroupFastFailover, out(2, 2), out(3, 3)); err != nil {
		t.Fatal(err)
	}
	if acts, _ := tb.xlate(1, udp(7)); acts != "2" {
		t.Fatalf("fast_failover, all live: %s", acts)
	}
	br.SetLivePorts(map[uint32]bool{1: true, 3: true})
	if acts, _ := tb.xlate(1, udp(7)); acts != "3" {
		t.Fatalf("fast_failover, port 2 down: %s", acts)
	}
	if s := br.GroupStats(); len(s) != 1 || s[0].RefCount != 1 || s[0].Packets == 0 || s[0].Buckets[1][0] == 0 {
		t.Fatalf("stats %+v", s)
	}
	// Deleting the group deletes the flow that used it.
	if err := br.GroupMod(&ofp.GroupMod{Command: ofp.GroupDelete, ID: ofp.GroupAllGroups}); err != nil {
		t.Fatal(err)
	}
	if n := len(br.Flows()); n != 0 {
		t.Fatalf("%d flows left", n)
	}
}

func TestGroupBuckets(t *testing.T) {
	b := func(ids ...uint32) []ofp.Bucket {
		var out []ofp.Bucket
		for _, id := range ids {
			out = append(out, ofp.Bucket{ID: id})
		}
		return out
	}
	ids := func(bs []ofp.Bucket) (out []uint32) {
		for _, x := range bs {
			out = append(out, x.ID)
		}
		return out
	}
	got, err := insertBuckets(b(5, 6), b(7), 5)
	if err != nil || len(got) != 3 || ids(got)[1] != 7 {
		t.Fatalf("insert after 5: %v %v", ids(got), err)
	}
	if _, err := insertBuckets(b(5, 6), b(5), ofp.BucketLast); err == nil || err.Errno != ofp.GroupBucketExists {
		t.Fatalf("existing id: %v", err)
	}
	if _, err := insertBuckets(b(5, 6), b(9), 66); err == nil || err.Errno != ofp.GroupUnknownBucket {
		t.Fatalf("unknown position: %v", err)
	}
	if got, _ := removeBuckets(b(5, 6, 7), ofp.BucketFirst); len(got) != 2 || got[0].ID != 6 {
		t.Fatalf("remove first: %v", ids(got))
	}
	if _, err := removeBuckets(b(5), 55); err == nil || err.Errno != ofp.GroupUnknownBucket {
		t.Fatalf("remove unknown: %v", err)
	}
}

// A select group whose buckets ct(commit,nat(dst=...)), as ovn-controller
// writes a load balancer's backends: bucket actions are checked against no
// match (they crashed the check), and the flow that sends IP to the group
// translates to the chosen bucket's ct. A helper govs cannot run is still
// refused in a bucket.
func TestGroupBucketCT(t *testing.T) {
	tb, br := emptyTables(t)
	backend := func(id uint32, last byte) ofp.Bucket {
		nat := ofp.Action{Type: ofp.ActNAT, NAT: &ofp.NAT{Flags: ofp.NATDst, Family: 4, MinAddr: [16]byte{10, 0, 0, last}}}
		ct := ofp.Action{Type: ofp.ActCT, CT: &ofp.CT{Flags: ofp.CTCommit, ZoneImm: 5, Table: 1}, Nested: []ofp.Action{nat}}
		return ofp.Bucket{ID: id, Weight: 100, WatchPort: ofp.PortAny, WatchGroup: ofp.GroupAny, Actions: []ofp.Action{ct}}
	}
	gm := &ofp.GroupMod{Command: ofp.GroupAdd, Type: ofp.GroupSelect, ID: 1, Buckets: []ofp.Bucket{backend(0, 2), backend(1, 3)}}
	if err := checkGroupMod(gm); err != nil {
		t.Fatalf("check: %v", err)
	}
	if err := br.GroupMod(gm); err != nil {
		t.Fatalf("add: %v", err)
	}
	mustMod(t, br, fmSpec{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}},
		actions: []ofp.Action{{Type: ofp.ActGroup, ID: 1}}})
	frame := dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
		IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.100")},
		TCP:  &dptest.TCP{Src: 40000, Dst: 80, Flags: dptest.SYN}}.Bytes()
	if ps := tb.xlatePasses(t, 1, frame); !strings.HasPrefix(ps[len(ps)-1].acts.String(), "ct(commit,zone=5,nat(dst=10.0.0.") {
		t.Errorf("IP to the group: %s", ps[len(ps)-1].acts)
	}
	bad := backend(2, 4)
	bad.Actions[0].CT.Alg = 99
	if err := checkGroupMod(&ofp.GroupMod{Command: ofp.GroupAdd, Type: ofp.GroupSelect, ID: 2, Buckets: []ofp.Bucket{bad}}); err == nil || err.Errno != ofp.BadActionArgument {
		t.Errorf("a bucket's ct(alg=99): %v", err)
	}
}
