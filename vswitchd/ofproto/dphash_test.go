package ofproto

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// pass is one datapath pass of a packet's translation.
type pass struct {
	key  flow.Key
	acts datapath.Actions
	mask flow.Mask
}

// xlatePasses translates frame as received on in, then, while the
// actions end with a hash and a recirculation, the recirculated packet
// with the dp_hash the datapath would compute, as the datapath does.
func (tb *testBacker) xlatePasses(t *testing.T, in uint32, frame []byte) []pass {
	t.Helper()
	var k flow.Key
	flow.Extract(frame, in, &k)
	return tb.passes(t, k, tb.Upcall)
}

// passes is xlatePasses of key k, translated by xl.
func (tb *testBacker) passes(t *testing.T, k flow.Key, xl func([]datapath.Upcall)) []pass {
	t.Helper()
	var passes []pass
	for len(passes) < 4 {
		u := []datapath.Upcall{{Key: k}}
		xl(u)
		// The datapath matches recirc_id always (worker.install).
		u[0].Mask.RecircID = ^uint32(0)
		passes = append(passes, pass{key: k, acts: u[0].Actions, mask: u[0].Mask})
		n := len(u[0].Actions)
		if n < 2 || u[0].Actions[n-2].Kind != datapath.ActionHash || u[0].Actions[n-1].Kind != datapath.ActionRecirc {
			return passes
		}
		h := u[0].Actions[n-2]
		k.DpHash = datapath.PacketHash(&k, h.HashAlg, h.HashBasis)
		k.RecircID = u[0].Actions[n-1].RecircID
	}
	t.Fatalf("%d recirculations", len(passes))
	return nil
}

// A select group without a method (weights that fit OVS's dp_hash
// table) hashes in the datapath: the first pass reads no L3/L4 field and
// recirculates after hash(sym_l4(0)); the second matches recirc_id and
// dp_hash under the table's mask (16 values) and nothing of the packet,
// so that one datapath flow per hash value serves every connection.
func TestSelectGroupDpHash(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3), trunk("p4", 4)}})
	mustMod(t, br, fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll})
	out := func(p uint32) ofp.Bucket {
		return ofp.Bucket{ID: p, Weight: 1, WatchPort: ofp.PortAny, WatchGroup: ofp.GroupAny, Actions: []ofp.Action{output(p)}}
	}
	if err := br.GroupMod(&ofp.GroupMod{Command: ofp.GroupAdd, Type: ofp.GroupSelect, ID: 1, Buckets: []ofp.Bucket{out(2), out(3)}}); err != nil {
		t.Fatal(err)
	}
	// The group, then an output that the recirculated pass runs after
	// the bucket.
	mustMod(t, br, fmSpec{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}},
		actions: []ofp.Action{{Type: ofp.ActGroup, ID: 1}, output(4)}})
	tcp := func(sport uint16) []byte {
		return dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
			IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
			TCP:  &dptest.TCP{Src: sport, Dst: 80}}.Bytes()
	}
	seen := map[string]int{}
	secondMasks := map[flow.Mask]bool{}
	var id uint32
	for sport := range uint16(48) {
		ps := tb.xlatePasses(t, 1, tcp(1000+sport))
		if len(ps) != 2 {
			t.Fatalf("flow %d: %d passes", sport, len(ps))
		}
		first, second := ps[0], ps[1]
		if got := first.acts.String(); !strings.HasPrefix(got, "hash(sym_l4(0)),recirc(") {
			t.Fatalf("first pass: %s", got)
		}
		if id == 0 {
			id = second.key.RecircID
		} else if second.key.RecircID != id {
			t.Fatalf("flow %d recirculates with %#x, the first with %#x", sport, second.key.RecircID, id)
		}
		// As OVS's: in_port, eth_type and the fragment bits, which the
		// rule's eth_type match needs anyway; no address, no port.
		want := flow.Mask{InPort: ^uint32(0), EthType: 0xffff, NwFrag: flow.FragAny | flow.FragLater, RecircID: ^uint32(0)}
		if first.mask != want {
			t.Fatalf("first pass mask %+v", first.mask)
		}
		if second.mask.DpHash != 0xf || second.mask.TpSrc != 0 || second.mask.IPv4Src != [4]byte{} || second.mask.NwProto != 0 {
			t.Fatalf("second pass mask reads the packet: %+v", second.mask)
		}
		secondMasks[second.mask] = true
		acts := second.acts.String()
		if acts != "2,4" && acts != "3,4" {
			t.Fatalf("second pass: %s", acts)
		}
		// The bucket is the one of OVS's table at dp_hash & 0xf.
		b := br.tables.Load().groups[1].hashMap[second.key.DpHash&0xf]
		if want := []string{"2,4", "3,4"}[b]; acts != want {
			t.Fatalf("dp_hash %#x: %s, table says %s", second.key.DpHash, acts, want)
		}
		seen[acts]++
	}
	if len(seen) != 2 || len(secondMasks) != 1 {
		t.Fatalf("buckets %v, %d second-pass masks", seen, len(secondMasks))
	}
	// The group counts each packet once, in the pass that picks, and the
	// bucket picked.
	s := br.GroupStats()
	if len(s) != 1 || s[0].Packets != 48 || s[0].Buckets[0][0]+s[0].Buckets[1][0] != 48 ||
		int(s[0].Buckets[0][0]) != seen["2,4"] {
		t.Fatalf("stats %+v, buckets seen %v", s, seen)
	}
	// A dead bucket's hash values go to the next live one.
	watched := out(2)
	watched.WatchPort = 2
	if err := br.GroupMod(&ofp.GroupMod{Command: ofp.GroupModify, Type: ofp.GroupSelect, ID: 1, Buckets: []ofp.Bucket{watched, out(3)}}); err != nil {
		t.Fatal(err)
	}
	br.SetLivePorts(map[uint32]bool{1: true, 2: false, 3: true, 4: true})
	for sport := range uint16(8) {
		if ps := tb.xlatePasses(t, 1, tcp(2000+sport)); ps[1].acts.String() != "3,4" {
			t.Fatalf("bucket 2 dead: %s", ps[1].acts)
		}
	}
}

// selection_method=dp_hash hashes with the algorithm and basis of its
// param: hash(l4(basis)) unless the upper 32 bits say sym_l4 (1).
func TestSelectGroupDpHashMethod(t *testing.T) {
	tb, br := emptyTables(t)
	out := func(p uint32) ofp.Bucket {
		return ofp.Bucket{ID: p, Weight: 1, WatchPort: ofp.PortAny, WatchGroup: ofp.GroupAny, Actions: []ofp.Action{output(p)}}
	}
	for _, c := range []struct {
		param uint64
		want  string
	}{{0, "hash(l4(0))"}, {0x1234, "hash(l4(4660))"}, {1<<32 | 7, "hash(sym_l4(7))"}, {5<<32 | 3, "hash(l4(3))"}} {
		if err := br.GroupMod(&ofp.GroupMod{Command: ofp.GroupAddOrMod, Type: ofp.GroupSelect, ID: 1, Buckets: []ofp.Bucket{out(2), out(3)},
			Props: ofp.GroupProps{Method: "dp_hash", Param: c.param}}); err != nil {
			t.Fatal(err)
		}
		mustMod(t, br, fmSpec{prio: 10, actions: []ofp.Action{{Type: ofp.ActGroup, ID: 1}}})
		frame := dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
			IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
			UDP:  &dptest.UDP{Src: 5, Dst: 53}}.Bytes()
		ps := tb.xlatePasses(t, 1, frame)
		if len(ps) != 2 || !strings.HasPrefix(ps[0].acts.String(), c.want+",recirc(") {
			t.Errorf("param %#x: %s", c.param, ps[0].acts)
		}
	}
}

// ofproto/trace of a select group that freezes, and of the thawed state,
// as Debian's ovs-vswitchd prints them (same tables, ports renumbered):
// the first pass stops at the group; the thaw restores the actions left,
// an unroll_xlate before each table's (the group's rule, then the rule
// that resubmitted), and the second pass matches dp_hash under the mask.
func TestSelectGroupDpHashTrace(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3), trunk("p4", 4)}})
	mustMod(t, br, fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll})
	out := func(id, p uint32) ofp.Bucket {
		return ofp.Bucket{ID: id, Weight: 1, WatchPort: ofp.PortAny, WatchGroup: ofp.GroupAny, Actions: []ofp.Action{output(p)}}
	}
	if err := br.GroupMod(&ofp.GroupMod{Command: ofp.GroupAdd, Type: ofp.GroupSelect, ID: 1, Buckets: []ofp.Bucket{out(0, 2), out(1, 3)}}); err != nil {
		t.Fatal(err)
	}
	ip := map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}, ofp.FieldInPort: {1, 0}}
	mustMod(t, br, fmSpec{prio: 10, match: ip, actions: []ofp.Action{resubmitTo(1), output(4)}})
	reg1 := ofp.Action{Type: ofp.ActSetField, Field: ofp.FieldByName("reg1"), Value: []byte{0, 0, 0, 7}, Mask: []byte{0xff, 0xff, 0xff, 0xff}}
	mustMod(t, br, fmSpec{table: 1, prio: 10, match: ip, actions: []ofp.Action{reg1, {Type: ofp.ActGroup, ID: 1}, output(4)}})
	const pkt = "in_port=1,tcp,nw_src=10.197.0.1,nw_dst=10.197.0.2,tp_src=1,tp_dst=2"
	first, err := tb.Trace("br0", pkt)
	if err != nil {
		t.Fatal(err)
	}
	wantFirst := ` 0. ip,in_port=1, priority 10
    resubmit(,1)
 1. ip,in_port=1, priority 10
    set_field:0x7->reg1
    group:1
     -> no live bucket

Final flow: tcp,reg1=0x7,in_port=1,`
	if !strings.Contains(first, wantFirst) || !strings.Contains(first, "\nMegaflow: recirc_id=0,eth,ip,in_port=1,nw_frag=no\nDatapath actions: hash(sym_l4(0)),recirc(0x1)\n") {
		t.Fatalf("first pass:\n%s", first)
	}
	thawed, err := tb.Trace("br0", "recirc_id=0x1,dp_hash=0x5,"+pkt)
	if err != nil {
		t.Fatal(err)
	}
	wantThaw := `    thaw
            Resuming from table 0
        Restoring actions: unroll_xlate(table=1, cookie=0),group:1,output:4,unroll_xlate(table=0, cookie=0),output:4
    unroll_xlate(table=1, cookie=0)
    restored state: table=1, cookie=0
    group:1
     -> using bucket 1
    bucket 1
            output:3
    output:4
    unroll_xlate(table=0, cookie=0)
    restored state: table=0, cookie=0
    output:4

Final flow: recirc_id=0x1,dp_hash=0x5,eth,tcp,reg1=0x7,in_port=1,`
	if !strings.Contains(thawed, wantThaw) || !strings.Contains(thawed, "\nMegaflow: recirc_id=0x1,dp_hash=0x5/0xf,eth,ip,in_port=1,nw_frag=no\nDatapath actions: 3,4,4\n") {
		t.Fatalf("thawed:\n%s\nwant\n%s", thawed, wantThaw)
	}
}
