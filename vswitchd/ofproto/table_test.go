package ofproto

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// fm builds a flow mod: match fields as name=value pairs of
// ofp.FieldByID's fields (value, or value/mask, as integers).
type fmSpec struct {
	cmd      uint8
	table    uint8
	prio     uint16
	cookie   uint64
	ckMask   uint64
	flags    uint16
	idle     uint16
	hard     uint16
	match    map[ofp.FieldID][2]uint64 // value, mask (0: exact)
	actions  []ofp.Action
	outPort  uint32
	newCkSet bool
}

func buildMatch(spec map[ofp.FieldID][2]uint64) ofp.Match {
	var m ofp.Match
	for id, vm := range spec {
		fd := ofp.FieldByID(id)
		val, mask := make([]byte, 8), make([]byte, 8)
		binary.BigEndian.PutUint64(val, vm[0])
		if vm[1] == 0 {
			binary.BigEndian.PutUint64(mask, ^uint64(0))
		} else {
			binary.BigEndian.PutUint64(mask, vm[1])
		}
		v, mk := val[8-fd.Len:], mask[8-fd.Len:]
		if fd.Len > 8 {
			panic("wide field")
		}
		fd.SetMasked(&m.Flow, v, mk)
		fd.SetMasked(&m.Mask, mk, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}[:fd.Len])
	}
	m.Normalize()
	return m
}

func (s fmSpec) mod() *ofp.FlowMod {
	f := &ofp.FlowMod{Command: s.cmd, Table: s.table, Priority: s.prio, Flags: s.flags, IdleTimeout: s.idle,
		HardTimeout: s.hard, Match: buildMatch(s.match), Actions: s.actions, BufferID: 0xffffffff,
		OutPort: ofp.PortAny, OutGroup: ofp.GroupAny, Cookie: ofp.Cookie{Value: s.cookie, Mask: s.ckMask}}
	if s.outPort != 0 {
		f.OutPort = s.outPort
	}
	if s.cmd == ofp.FlowAdd || s.newCkSet {
		f.NewCookie, f.HasNewCookie = s.cookie, true
	}
	return f
}

func output(p uint32) ofp.Action { return ofp.Action{Type: ofp.ActOutput, Port: p} }
func resubmitTo(t uint8) ofp.Action {
	return ofp.Action{Type: ofp.ActResubmit, Port: ofp.PortInPort, Table: t}
}

type removedSink struct{ got []ofp.FlowRemoved }

func (s *removedSink) FlowRemoved(f *ofp.FlowRemoved) { s.got = append(s.got, *f) }

func mustMod(t *testing.T, br *Bridge, s fmSpec) {
	t.Helper()
	if err := br.FlowMod(s.mod()); err != nil {
		t.Fatalf("flow mod %+v: %v", s, err)
	}
}

func flowsOf(br *Bridge) string {
	var b strings.Builder
	for _, f := range br.Flows() {
		b.WriteString(strings.TrimSpace(ruleTitleStats(f)))
		b.WriteByte(';')
	}
	return b.String()
}

func ruleTitleStats(f ofp.FlowStats) string {
	r := &rule{priority: f.Priority, cookie: f.Cookie}
	r.setMatch(&f.Match)
	acts := make([]string, len(f.Actions))
	for i := range f.Actions {
		acts[i] = formatAction(&f.Actions[i])
	}
	return "t" + string(rune('0'+f.Table)) + " " + ruleTitle(r, nil) + " " + strings.Join(acts, ",")
}

func TestFlowTableSemantics(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2)}})
	if got := flowsOf(br); got != "t0 priority 0 NORMAL;" {
		t.Fatalf("a new bridge: %s", got)
	}
	inPort := func(p uint64) map[ofp.FieldID][2]uint64 { return map[ofp.FieldID][2]uint64{ofp.FieldInPort: {p, 0}} }
	mustMod(t, br, fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll})
	if got := flowsOf(br); got != "" {
		t.Fatalf("after deleting all: %s", got)
	}
	mustMod(t, br, fmSpec{prio: 10, match: inPort(1), actions: []ofp.Action{output(2)}, cookie: 0x10})
	mustMod(t, br, fmSpec{prio: 10, match: inPort(2), actions: []ofp.Action{output(1)}, cookie: 0x20})
	mustMod(t, br, fmSpec{prio: 5, actions: []ofp.Action{output(ofp.PortNormal)}, cookie: 0x30})
	// An identical add replaces.
	mustMod(t, br, fmSpec{prio: 5, actions: []ofp.Action{output(1)}, cookie: 0x31})
	want := "t0 in_port=1, priority 10, cookie 0x10 output:1;"
	_ = want
	if got := flowsOf(br); got != "t0 in_port=1, priority 10, cookie 0x10 output:2;t0 in_port=2, priority 10, cookie 0x20 output:1;t0 priority 5, cookie 0x31 output:1;" {
		t.Fatalf("after adds: %s", got)
	}
	// CHECK_OVERLAP refuses an overlapping flow of the same priority.
	if err := br.FlowMod(fmSpec{prio: 10, flags: ofp.FlagCheckOverlap, actions: []ofp.Action{output(1)}}.mod()); err == nil || err.Errno != ofp.FlowModOverlap {
		t.Errorf("overlap: %v", err)
	}
	// Loose modify with a cookie filter changes only matching cookies.
	mustMod(t, br, fmSpec{cmd: ofp.FlowModify, table: ofp.TableAll, cookie: 0x20, ckMask: 0xff, actions: []ofp.Action{output(ofp.PortFlood)}})
	// Strict delete needs the exact match and priority.
	mustMod(t, br, fmSpec{cmd: ofp.FlowDeleteStrict, prio: 9, match: inPort(1)})
	mustMod(t, br, fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll, outPort: 1})
	if got := flowsOf(br); got != "t0 in_port=1, priority 10, cookie 0x10 output:2;t0 in_port=2, priority 10, cookie 0x20 FLOOD;" {
		t.Fatalf("after modify and deletes: %s", got)
	}
	// Errors change nothing.
	for _, tc := range []struct {
		name string
		spec fmSpec
		want ofp.Errno
	}{
		{"read-only table", fmSpec{table: 254}, ofp.EPerm},
		{"goto backwards", fmSpec{table: 3, actions: []ofp.Action{{Type: ofp.ActGotoTable, Table: 2}}}, ofp.InstBadTableID},
		{"group", fmSpec{actions: []ofp.Action{{Type: ofp.ActGroup, ID: 1}}}, ofp.BadOutGroup},
		{"unsupported", fmSpec{actions: []ofp.Action{{Type: ofp.ActUnsupported, Errno: ofp.BadActionVendorType}}}, ofp.BadActionVendorType},
		{"set without prerequisite", fmSpec{actions: []ofp.Action{{Type: ofp.ActSetField, Field: ofp.FieldByID(ofp.FieldIPv4Dst),
			Value: []byte{1, 2, 3, 4}, Mask: []byte{255, 255, 255, 255}}}}, ofp.MatchInconsistent},
		{"bad prereq", fmSpec{match: map[ofp.FieldID][2]uint64{ofp.FieldTCPDst: {80, 0}}}, ofp.BadPrereq},
	} {
		if err := br.FlowMod(tc.spec.mod()); err == nil || err.Errno != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if got := flowsOf(br); got != "t0 in_port=1, priority 10, cookie 0x10 output:2;t0 in_port=2, priority 10, cookie 0x20 FLOOD;" {
		t.Fatalf("after refused mods: %s", got)
	}
	// fail_mode changes flush, as OVS.
	br.Reconfigure(BridgeConfig{FailSecure: true, Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2)}})
	if got := flowsOf(br); got != "" {
		t.Fatalf("secure: %s", got)
	}
	br.Reconfigure(BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2)}})
	if got := flowsOf(br); got != "t0 priority 0 NORMAL;" {
		t.Fatalf("standalone again: %s", got)
	}
}

func TestFlowTimeouts(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2)}})
	sink := &removedSink{}
	br.SetAsync(sink)
	mustMod(t, br, fmSpec{prio: 10, hard: 10, flags: ofp.FlagSendFlowRem, actions: []ofp.Action{output(2)}, cookie: 1})
	mustMod(t, br, fmSpec{prio: 9, idle: 5, flags: ofp.FlagSendFlowRem, actions: []ofp.Action{output(2)}, cookie: 2})
	tb.clock.advance(4 * time.Second)
	tb.xlate(1, eth(macA, macB)) // refreshes nothing: priority 10 matches
	tb.Run()
	if len(sink.got) != 0 {
		t.Fatalf("removed early: %+v", sink.got)
	}
	tb.clock.advance(2 * time.Second)
	tb.Run()
	if len(sink.got) != 1 || sink.got[0].Cookie != 2 || sink.got[0].Reason != ofp.RemovedIdleTimeout {
		t.Fatalf("idle timeout: %+v", sink.got)
	}
	tb.clock.advance(5 * time.Second)
	tb.Run()
	if len(sink.got) != 2 || sink.got[1].Cookie != 1 || sink.got[1].Reason != ofp.RemovedHardTimeout {
		t.Fatalf("hard timeout: %+v", sink.got)
	}
	if got := flowsOf(br); got != "t0 priority 0 NORMAL;" {
		t.Fatalf("after timeouts: %s", got)
	}
}

func TestOpenFlowTranslation(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}})
	mustMod(t, br, fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll})
	// A chain over 50 tables, carrying a register.
	mustMod(t, br, fmSpec{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {1, 0}}, actions: []ofp.Action{
		{Type: ofp.ActSetField, Field: ofp.FieldByID(ofp.FieldReg0 + 3), Value: []byte{0, 0, 0, 7}, Mask: []byte{255, 255, 255, 255}},
		resubmitTo(1)}})
	for i := uint8(1); i < 50; i++ {
		mustMod(t, br, fmSpec{table: i, actions: []ofp.Action{resubmitTo(i + 1)}})
	}
	mustMod(t, br, fmSpec{table: 50, prio: 5, match: map[ofp.FieldID][2]uint64{ofp.FieldReg0 + 3: {7, 0}},
		actions: []ofp.Action{{Type: ofp.ActPushVLAN, VLAN: 0x8100}, {Type: ofp.ActSetField, Field: ofp.FieldByID(ofp.FieldVLANVID),
			Value: []byte{0x10, 10}, Mask: []byte{0xff, 0xff}}, output(2), {Type: ofp.ActPopVLAN}, output(3)}})
	// in_port=2: a loop back into table 0 stops at the depth limit.
	mustMod(t, br, fmSpec{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {2, 0}}, actions: []ofp.Action{resubmitTo(0)}})
	// in_port=3: exit ends the walk.
	mustMod(t, br, fmSpec{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {3, 0}}, actions: []ofp.Action{
		output(1), {Type: ofp.ActExit}, output(2)}})
	for _, tc := range []struct {
		in   uint32
		want string
	}{
		{1, "push_vlan(vid=10,pcp=0),2,pop_vlan,3"},
		{2, "drop"},
		{3, "1"},
	} {
		if got, _ := tb.xlate(tc.in, eth(macA, macB)); got != tc.want {
			t.Errorf("in_port %d: %s, want %s", tc.in, got, tc.want)
		}
	}
	out, err := tb.Trace("br0", "in_port=1,dl_src="+macA+",dl_dst="+macB)
	if err != nil || !strings.Contains(out, "50. reg3=0x7, priority 5") || !strings.Contains(out, "Datapath actions: push_vlan(vid=10,pcp=0),2,pop_vlan,3") {
		t.Errorf("trace: %v\n%s", err, out)
	}
}

// TestMegaflowProperty: a packet that agrees with another on the bits its
// translation's mask holds gets the same actions from a fresh
// translation, so the installed megaflow may serve it.
func TestMegaflowProperty(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}})
	mustMod(t, br, fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll})
	ip := func(fields map[ofp.FieldID][2]uint64) map[ofp.FieldID][2]uint64 {
		fields[ofp.FieldEthType] = [2]uint64{flow.EthTypeIPv4, 0}
		return fields
	}
	mustMod(t, br, fmSpec{prio: 30, match: ip(map[ofp.FieldID][2]uint64{ofp.FieldIPv4Dst: {0x0a000000, 0xff000000}}), actions: []ofp.Action{resubmitTo(1)}})
	mustMod(t, br, fmSpec{prio: 20, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {1, 0}}, actions: []ofp.Action{output(2)}})
	mustMod(t, br, fmSpec{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldEthSrc: {0x010000000000, 0x010000000000}}, actions: []ofp.Action{output(3)}})
	mustMod(t, br, fmSpec{prio: 0, actions: []ofp.Action{output(ofp.PortNormal)}})
	mustMod(t, br, fmSpec{table: 1, prio: 5, match: ip(map[ofp.FieldID][2]uint64{ofp.FieldIPProto: {6, 0}, ofp.FieldTCPDst: {80, 0}}), actions: []ofp.Action{output(1)}})
	mustMod(t, br, fmSpec{table: 1, prio: 4, match: map[ofp.FieldID][2]uint64{ofp.FieldVLANVID: {0x1000 | 5, 0}}, actions: []ofp.Action{{Type: ofp.ActPopVLAN}, output(2)}})
	mustMod(t, br, fmSpec{table: 1, prio: 1, actions: []ofp.Action{output(3)}})
	// Select groups: by the datapath's hash after a recirculation (no
	// method; dp_hash, whose bucket resubmits), and by fields.
	bucket := func(w uint16, acts ...ofp.Action) ofp.Bucket {
		return ofp.Bucket{ID: uint32(len(acts)) + uint32(w), Weight: w, WatchPort: ofp.PortAny, WatchGroup: ofp.GroupAny, Actions: acts}
	}
	for _, gm := range []*ofp.GroupMod{
		{ID: 1, Buckets: []ofp.Bucket{bucket(1, output(1)), bucket(2, output(2)), bucket(3, output(3))}},
		{ID: 2, Buckets: []ofp.Bucket{bucket(1, resubmitTo(1)), bucket(3, output(2))}, Props: ofp.GroupProps{Method: "dp_hash", Param: 1<<32 | 5}},
		{ID: 3, Buckets: []ofp.Bucket{bucket(1, output(1)), bucket(2, output(2))},
			Props: ofp.GroupProps{Method: "hash", Fields: []ofp.HashField{{Field: ofp.FieldByID(ofp.FieldTCPSrc)}}}},
	} {
		gm.Command, gm.Type = ofp.GroupAdd, ofp.GroupSelect
		if err := br.GroupMod(gm); err != nil {
			t.Fatal(err)
		}
	}
	mustMod(t, br, fmSpec{table: 1, prio: 3, match: ip(map[ofp.FieldID][2]uint64{ofp.FieldIPProto: {17, 0}}), actions: []ofp.Action{{Type: ofp.ActGroup, ID: 1}}})
	mustMod(t, br, fmSpec{prio: 25, match: ip(map[ofp.FieldID][2]uint64{ofp.FieldInPort: {3, 0}}), actions: []ofp.Action{{Type: ofp.ActGroup, ID: 2}, output(1)}})
	mustMod(t, br, fmSpec{prio: 26, match: ip(map[ofp.FieldID][2]uint64{ofp.FieldInPort: {3, 0}, ofp.FieldIPProto: {6, 0}, ofp.FieldTCPDst: {79, 0}}),
		actions: []ofp.Action{{Type: ofp.ActGroup, ID: 3}}})

	rng := rand.New(rand.NewSource(1))
	macs := []string{macA, macB, "01:00:5e:00:00:01", "ff:ff:ff:ff:ff:ff"}
	addrs := []string{"10.1.2.3", "10.9.9.9", "192.168.0.1"}
	frame := func() []byte {
		f := dptest.Frame{Src: dptest.MAC(macs[rng.Intn(len(macs))]), Dst: dptest.MAC(macs[rng.Intn(len(macs))])}
		if rng.Intn(3) == 0 {
			f.Tags = []dptest.Tag{{VID: uint16(4 + rng.Intn(3))}}
		}
		if rng.Intn(4) != 0 {
			f.IPv4 = &dptest.IPv4{Src: netip.MustParseAddr(addrs[rng.Intn(3)]), Dst: netip.MustParseAddr(addrs[rng.Intn(3)])}
			if rng.Intn(2) == 0 {
				f.TCP = &dptest.TCP{Src: uint16(rng.Intn(3) + 79), Dst: uint16(rng.Intn(3) + 79)}
			} else {
				f.UDP = &dptest.UDP{Src: 53, Dst: uint16(rng.Intn(3) + 79)}
			}
		} else {
			f.EtherType, f.Payload = 0x88b5, make([]byte, 46)
		}
		return f.Bytes()
	}
	hits, megaflows, recircs := megaflowProperty(t, tb, 3000, func() (k flow.Key) {
		in := uint32(1 + rng.Intn(3))
		flow.Extract(frame(), in, &k)
		return k
	}, nil)
	if hits < 1000 || recircs < 300 {
		t.Errorf("only %d of 3000 packets' passes hit an installed megaflow; %d recirculated", hits, recircs)
	}
	t.Logf("%d megaflows served %d passes; %d recirculations", megaflows, hits, recircs)
}

// megaflowProperty translates n packets (the flows key returns) afresh,
// each of their passes (passes: the recirculated ones too), and checks
// that a megaflow installed for an earlier pass that a pass matches gives
// the actions of the pass's fresh translation (the cached fast path). It
// returns how many passes hit a megaflow, how many megaflows there were
// and how many passes were recirculations; check, if not nil, sees each
// fresh translation.
func megaflowProperty(t *testing.T, tb *testBacker, n int, key func() flow.Key, check func(k flow.Key, acts string)) (hits, megaflows, recircs int) {
	t.Helper()
	type entry struct {
		key  flow.Key
		mask flow.Mask
		acts string
	}
	var installed []entry
	for range n {
		ps := tb.passes(t, key(), tb.Revalidate)
		recircs += len(ps) - 1
		for _, p := range ps {
			k, fresh := p.key, p.acts.String()
			if check != nil {
				check(k, fresh)
			}
			// The cached path: an installed megaflow this pass matches.
			var cached *entry
			for j := range installed {
				e := &installed[j]
				mk := e.key.Masked(&e.mask)
				if k.MatchesMasked(&mk, &e.mask) {
					cached = e
					break
				}
			}
			if cached != nil {
				hits++
				if cached.acts != fresh {
					t.Fatalf("packet %v: megaflow %v/%v gives %s, a fresh translation %s", k, cached.key, cached.mask, cached.acts, fresh)
				}
				continue
			}
			installed = append(installed, entry{key: k, mask: p.mask, acts: fresh})
		}
	}
	return hits, len(installed), recircs
}

// TestMegaflowPropertyPrefixes is TestMegaflowProperty for tables of
// nw_src and nw_dst prefixes of many lengths (the prefix tries' masks),
// random each run of the seed: rules in three tables, both fields in
// some, overlapping priorities, resubmits, a rewrite of nw_dst before a
// resubmit, and flows deleted and added between packets (the megaflows
// installed before a change are dropped, as revalidation would).
func TestMegaflowPropertyPrefixes(t *testing.T) {
	for seed := range int64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { megaflowPropertyPrefixes(t, seed, 2500) })
	}
}

func megaflowPropertyPrefixes(t *testing.T, seed int64, packets int) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}})
	mustMod(t, br, fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll})
	rng := rand.New(rand.NewSource(seed))
	// Addresses in a few nested blocks: 10.{0,1}.{0,64,128}.x, 10.0.0.{0..15}.
	randAddr := func() uint64 {
		if rng.Intn(3) == 0 {
			return 0x0a000000 | uint64(rng.Intn(16))
		}
		return 0x0a000000 | uint64(rng.Intn(2))<<16 | uint64(rng.Intn(3)*64)<<8 | uint64(rng.Intn(4)*61)
	}
	plens := []int{8, 15, 16, 17, 24, 26, 30, 31, 32}
	randMatch := func() map[ofp.FieldID][2]uint64 {
		m := map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}}
		for _, fd := range []ofp.FieldID{ofp.FieldIPv4Src, ofp.FieldIPv4Dst} {
			if rng.Intn(3) == 0 {
				continue
			}
			l := plens[rng.Intn(len(plens))]
			mask := uint64(0xffffffff) << (32 - l) & 0xffffffff
			m[fd] = [2]uint64{randAddr() & mask, mask}
		}
		if rng.Intn(6) == 0 {
			m[ofp.FieldInPort] = [2]uint64{uint64(1 + rng.Intn(3)), 0}
		}
		if rng.Intn(4) == 0 { // ports: the staged lookup, the ports trie
			m[ofp.FieldIPProto] = [2]uint64{17, 0}
			m[ofp.FieldUDPDst] = [2]uint64{uint64(rng.Intn(4) * 20), []uint64{0xffff, 0xfff0, 0xff00}[rng.Intn(3)]}
			if rng.Intn(2) == 0 {
				m[ofp.FieldUDPSrc] = [2]uint64{uint64(rng.Intn(2)) << 15, 0x8000}
			}
		}
		return m
	}
	randActions := func(table uint8) []ofp.Action {
		switch n := rng.Intn(6); {
		case n == 0 && table < 2:
			return []ofp.Action{{Type: ofp.ActSetField, Field: ofp.FieldByID(ofp.FieldIPv4Dst),
				Value: []byte{10, 0, 0, byte(rng.Intn(16))}, Mask: []byte{255, 255, 255, 255}}, resubmitTo(table + 1)}
		case n < 3 && table < 2:
			return []ofp.Action{output(uint32(1 + rng.Intn(3))), resubmitTo(table + 1)}
		}
		return []ofp.Action{output(uint32(1 + rng.Intn(3)))}
	}
	type added struct {
		table uint8
		prio  uint16
		match map[ofp.FieldID][2]uint64
	}
	var rules []added
	addRule := func() {
		a := added{uint8(rng.Intn(3)), uint16(1 + rng.Intn(30)), randMatch()}
		mustMod(t, br, fmSpec{table: a.table, prio: a.prio, match: a.match, actions: randActions(a.table)})
		rules = append(rules, a)
	}
	for range 40 {
		addRule()
	}
	mustMod(t, br, fmSpec{table: 2, prio: 0, actions: []ofp.Action{output(3)}})

	type entry struct {
		key  flow.Key
		mask flow.Mask
		acts string
	}
	var installed []entry
	hits, megaflows := 0, 0
	for i := range packets {
		if i%500 == 499 {
			// A change: a flow deleted, two added.
			j := rng.Intn(len(rules))
			a := rules[j]
			mustMod(t, br, fmSpec{cmd: ofp.FlowDeleteStrict, table: a.table, prio: a.prio, match: a.match})
			rules = append(rules[:j], rules[j+1:]...)
			addRule()
			addRule()
			installed = nil
		}
		f := dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
			IPv4: &dptest.IPv4{Src: netip.AddrFrom4(addr4(randAddr())), Dst: netip.AddrFrom4(addr4(randAddr()))},
			UDP:  &dptest.UDP{Src: uint16(rng.Intn(2)) << 15, Dst: uint16(rng.Intn(5) * 20)}}
		u := []datapath.Upcall{{}}
		flow.Extract(f.Bytes(), uint32(1+rng.Intn(3)), &u[0].Key)
		var cached *entry
		for j := range installed {
			e := &installed[j]
			mk := e.key.Masked(&e.mask)
			if u[0].Key.MatchesMasked(&mk, &e.mask) {
				cached = e
				break
			}
		}
		k := u[0].Key
		tb.Revalidate(u)
		fresh := u[0].Actions.String()
		if cached != nil {
			hits++
			if cached.acts != fresh {
				t.Fatalf("packet %v: megaflow %v/%v gives %s, a fresh translation %s", k, cached.key, cached.mask, cached.acts, fresh)
			}
			continue
		}
		installed = append(installed, entry{key: k, mask: u[0].Mask, acts: fresh})
		megaflows++
	}
	if hits < packets/4 {
		t.Errorf("only %d of %d packets hit an installed megaflow", hits, packets)
	}
	t.Logf("%d megaflows served %d packets", megaflows, hits)
}

func addr4(a uint64) [4]byte { return [4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)} }

// TestSubtableFewHashes: a subtable answers misses from the hashes of
// its rules while it has few, and from its shards once it has more; both
// follow adds and deletes.
func TestSubtableFewHashes(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}})
	dst := func(i int) map[ofp.FieldID][2]uint64 {
		return map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}, ofp.FieldIPv4Dst: {0x0a000000 + uint64(i), 0}}
	}
	frame := func(i int) []byte {
		return dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
			IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.9.9.9"), Dst: netip.AddrFrom4([4]byte{10, 0, 0, byte(i)})},
			UDP:  &dptest.UDP{Src: 1, Dst: 2}}.Bytes()
	}
	check := func(have map[int]bool) {
		t.Helper()
		for i := 1; i <= 8; i++ {
			want := "drop"
			if have[i] {
				want = "2"
			}
			if got, _ := tb.xlate(1, frame(i)); got != want {
				t.Errorf("10.0.0.%d with rules %v: %s, want %s", i, have, got, want)
			}
		}
	}
	// Misses drop, whatever is left of the subtable under test.
	mustMod(t, br, fmSpec{prio: 1, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {1, 0}}})
	have := map[int]bool{}
	for _, i := range []int{1, 2, 3, 4, 5, 6} { // past len(few): the shards answer
		mustMod(t, br, fmSpec{prio: 10, match: dst(i), actions: []ofp.Action{output(2)}})
		have[i] = true
		check(have)
	}
	for _, i := range []int{6, 1, 3, 2, 5} {
		mustMod(t, br, fmSpec{cmd: ofp.FlowDeleteStrict, prio: 10, match: dst(i)})
		delete(have, i)
		check(have)
	}
	// A subtable made anew (its last rule deleted, then some added)
	// counts from zero, and a second rule of a hash is no second hash.
	mustMod(t, br, fmSpec{cmd: ofp.FlowDeleteStrict, prio: 10, match: dst(4)})
	delete(have, 4)
	check(have)
	for _, i := range []int{7, 8, 7} {
		mustMod(t, br, fmSpec{prio: uint16(10 + len(have)), match: dst(i), actions: []ofp.Action{output(2)}})
		have[i] = true
		check(have)
	}
	mustMod(t, br, fmSpec{cmd: ofp.FlowDeleteStrict, prio: 11, match: dst(8)})
	delete(have, 8)
	check(have)
}
