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

// thawAt returns a recirculation ID that resumes in table of br as
// received on p1, as a ct(table=...) would have frozen it.
func thawAt(tb *testBacker, br *Bridge, table uint8) uint32 {
	return tb.recircs.alloc(frozen{br: br, table: table, inPort: "p1", ofInPort: 1}, nil)
}

// emptyTables is a bridge br0 on trunk ports 1-3 without flows.
func emptyTables(t *testing.T) (*testBacker, *Bridge) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}})
	mustMod(t, br, fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll})
	return tb, br
}

// Rules matching ct_* fields see the key's conntrack fields (as a
// recirculation after ct() sets them), and the megaflow mask holds the
// ct bits of every rule the lookup tried.
func TestCtMatchTranslation(t *testing.T) {
	tb, br := emptyTables(t)
	ip := func(fields map[ofp.FieldID][2]uint64) map[ofp.FieldID][2]uint64 {
		fields[ofp.FieldEthType] = [2]uint64{flow.EthTypeIPv4, 0}
		return fields
	}
	const trk, est, nw = ofp.CtTrk, ofp.CtEst, ofp.CtNew
	mustMod(t, br, fmSpec{prio: 20, match: ip(map[ofp.FieldID][2]uint64{ofp.FieldCtState: {trk | est, trk | est}}), actions: []ofp.Action{output(2)}})
	mustMod(t, br, fmSpec{prio: 15, match: ip(map[ofp.FieldID][2]uint64{ofp.FieldCtState: {trk | nw, trk | nw},
		ofp.FieldCtNwProto: {6, 0}, ofp.FieldCtTpDst: {80, 0}, ofp.FieldCtMark: {1, 1}}), actions: []ofp.Action{output(3)}})
	mustMod(t, br, fmSpec{prio: 10, match: ip(map[ofp.FieldID][2]uint64{ofp.FieldCtState: {0, trk}}), actions: []ofp.Action{output(2), output(3)}})

	frame := dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
		IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
		TCP:  &dptest.TCP{Src: 40000, Dst: 80, Flags: dptest.SYN}}.Bytes()
	xl := func(ct func(k *flow.Key)) (string, flow.Mask, flow.Key) {
		u := []datapath.Upcall{{}}
		flow.Extract(frame, 1, &u[0].Key)
		ct(&u[0].Key)
		k := u[0].Key
		tb.Revalidate(u)
		return u[0].Actions.String(), u[0].Mask, k
	}
	tracked := func(state uint8, mark uint32) func(k *flow.Key) {
		return func(k *flow.Key) {
			k.RecircID, k.CtState, k.CtMark = thawAt(tb, br, 0), state, mark
			k.CtNwProto, k.CtTpSrc, k.CtTpDst = 6, 40000, 80
			copy(k.CtNwSrc[:], []byte{10, 0, 0, 1})
			copy(k.CtNwDst[:], []byte{10, 0, 0, 2})
		}
	}
	for _, tc := range []struct {
		name     string
		ct       func(k *flow.Key)
		acts     string
		state    uint8
		tuple    bool // ct_nw_proto, ct_tp_dst and ct_mark consulted
		megaflow string
	}{
		{"untracked", func(*flow.Key) {}, "2,3", trk | est | nw, true, "recirc_id=0,ct_state=-new-est-trk,ct_mark=0/0x1,ct_nw_proto=0,ct_tp_dst=0,eth,"},
		{"established", tracked(trk|est, 0), "2", trk | est, false, "recirc_id=0x1,ct_state=+est+trk,eth,"},
		{"new to port 80 marked", tracked(trk|nw, 1), "3", trk | est | nw, true, "recirc_id=0x1,ct_state=+new-est+trk,ct_mark=0x1/0x1,ct_nw_proto=6,ct_tp_dst=80,eth,"},
		{"new, unmarked", tracked(trk|nw, 0), "drop", trk | est | nw, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acts, m, k := xl(tc.ct)
			if acts != tc.acts {
				t.Errorf("actions %s, want %s", acts, tc.acts)
			}
			if m.CtState != tc.state {
				t.Errorf("ct_state mask %#x, want %#x", m.CtState, tc.state)
			}
			if got := m.CtNwProto == 0xff && m.CtTpDst == 0xffff && m.CtMark == 1; got != tc.tuple {
				t.Errorf("tuple consulted %v, want %v (mask %v)", got, tc.tuple, m)
			}
			if m.CtZone != 0 || m.CtLabel != ([16]byte{}) || m.CtNwSrc != ([16]byte{}) || m.CtTpSrc != 0 {
				t.Errorf("mask has ct bits no rule consulted: %v", m)
			}
			// The megaflow's formatting, as ofproto/trace's "Megaflow:" line
			// (recirc_id as the key has it).
			if tc.megaflow != "" {
				m.RecircID = ^uint32(0)
				if got := formatMatch(&k, &m, "1", true, false, ""); !strings.HasPrefix(got, tc.megaflow) {
					t.Errorf("megaflow %s, want it to start %s", got, tc.megaflow)
				}
			}
		})
	}
	// The rules' matches in trace and dump format.
	var titles []string
	for _, r := range br.tables.Load().table(0).sorted() {
		titles = append(titles, ruleTitle(r, nil))
	}
	want := []string{
		"ct_state=+est+trk,ip, priority 20",
		"ct_state=+new+trk,ct_mark=0x1/0x1,ct_nw_proto=6,ct_tp_dst=80,ip, priority 15",
		"ct_state=-trk,ip, priority 10",
	}
	if strings.Join(titles, "\n") != strings.Join(want, "\n") {
		t.Errorf("rules:\n%s\nwant:\n%s", strings.Join(titles, "\n"), strings.Join(want, "\n"))
	}
}

// FlowMod refuses conntrack matches without their prerequisites, as OVS.
func TestCtMatchPrereqs(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1)}})
	for _, tc := range []struct {
		match map[ofp.FieldID][2]uint64
		want  string
	}{
		{map[ofp.FieldID][2]uint64{ofp.FieldCtNwProto: {6, 0}}, "OFPBMC_BAD_PREREQ"},
		{map[ofp.FieldID][2]uint64{ofp.FieldCtState: {ofp.CtTrk, ofp.CtTrk}, ofp.FieldCtTpSrc: {1, 0}}, "OFPBMC_BAD_PREREQ"},
		{map[ofp.FieldID][2]uint64{ofp.FieldCtState: {ofp.CtTrk, ofp.CtTrk | ofp.CtInv}, ofp.FieldCtTpSrc: {1, 0}}, ""},
		{map[ofp.FieldID][2]uint64{ofp.FieldCtState: {ofp.CtRpl, ofp.CtRpl}, ofp.FieldCtNwProto: {17, 0}}, ""},
	} {
		got := ""
		if err := br.FlowMod(fmSpec{prio: 1, match: tc.match}.mod()); err != nil {
			got = err.Errno.String()
		}
		if got != tc.want {
			t.Errorf("%v: %q, want %q", tc.match, got, tc.want)
		}
	}
}

// ct_clear forgets the conntrack fields: the datapath gets ct_clear if
// the packet was tracked, and later lookups see an untracked packet.
func TestCtClearTranslation(t *testing.T) {
	tb, br := emptyTables(t)
	mustMod(t, br, fmSpec{actions: []ofp.Action{{Type: ofp.ActCTClear}, resubmitTo(1)}})
	mustMod(t, br, fmSpec{table: 1, prio: 2, match: map[ofp.FieldID][2]uint64{ofp.FieldCtState: {0, ofp.CtTrk}}, actions: []ofp.Action{output(3)}})
	mustMod(t, br, fmSpec{table: 1, prio: 1, actions: []ofp.Action{output(2)}})
	u := []datapath.Upcall{{}}
	flow.Extract(eth(macA, macB), 1, &u[0].Key)
	u[0].Key.RecircID, u[0].Key.CtState, u[0].Key.CtMark = thawAt(tb, br, 0), ofp.CtTrk|ofp.CtEst, 5
	tb.Revalidate(u)
	if got := u[0].Actions.String(); got != "ct_clear,3" {
		t.Errorf("actions %s, want ct_clear,3", got)
	}
	// An untracked packet needs no datapath ct_clear; as Debian's
	// ovs-vswitchd 3.1 traces the same flows: "Datapath actions: 3".
	out, err := tb.Trace("br0", "in_port=1,dl_src="+macA+",dl_dst="+macB)
	if err != nil || !strings.Contains(out, "    ct_clear\n") || !strings.Contains(out, "Datapath actions: 3\n") {
		t.Errorf("trace: %v\n%s", err, out)
	}
}
