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

// ct(table=1) tracks with the exec() mark and the NAT, then recirculates
// with the registers frozen; the recirculated packet resumes in table 1
// with them, and the ID goes with the rule that made it.
func TestCtRecirculation(t *testing.T) {
	tb, br := emptyTables(t)
	ip := map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}}
	mark := ofp.Action{Type: ofp.ActSetField, Field: ofp.FieldByID(ofp.FieldCtMark), Value: []byte{0, 0, 0, 1}, Mask: []byte{0, 0, 0, 0xff}}
	nat := ofp.Action{Type: ofp.ActNAT, NAT: &ofp.NAT{Flags: ofp.NATSrc, Family: 4, MinAddr: [16]byte{10, 0, 0, 9}}}
	ct := ofp.Action{Type: ofp.ActCT, CT: &ofp.CT{Flags: ofp.CTCommit, ZoneImm: 5, Table: 1}, Nested: []ofp.Action{mark, nat}}
	reg := ofp.Action{Type: ofp.ActSetField, Field: ofp.FieldByID(ofp.FieldReg0 + 3), Value: []byte{0, 0, 0, 7}, Mask: []byte{0xff, 0xff, 0xff, 0xff}}
	mustMod(t, br, fmSpec{prio: 10, match: ip, actions: []ofp.Action{reg, ct, output(3)}})
	mustMod(t, br, fmSpec{table: 1, prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0},
		ofp.FieldCtState: {ofp.CtTrk | ofp.CtNew, ofp.CtTrk | ofp.CtNew}, ofp.FieldReg0 + 3: {7, 0}}, actions: []ofp.Action{output(2)}})

	frame := dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
		IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
		TCP:  &dptest.TCP{Src: 40000, Dst: 80, Flags: dptest.SYN}}.Bytes()
	u := []datapath.Upcall{{}}
	flow.Extract(frame, 1, &u[0].Key)
	tb.Upcall(u)
	if got, want := u[0].Actions.String(), "ct(commit,zone=5,mark=0x1/0xff,nat(src=10.0.0.9)),recirc(0x1),3"; got != want {
		t.Fatalf("first pass: %s, want %s", got, want)
	}

	r := []datapath.Upcall{{}}
	flow.Extract(frame, 1, &r[0].Key)
	r[0].Key.RecircID, r[0].Key.CtState, r[0].Key.CtZone = 1, ofp.CtTrk|ofp.CtNew, 5
	tb.Upcall(r)
	if got := r[0].Actions.String(); got != "2" {
		t.Errorf("recirculated: %s, want 2 (table 1 with reg3 restored)", got)
	}
	if r[0].Mask.CtState != ofp.CtTrk|ofp.CtNew {
		t.Errorf("recirculated flow's ct_state mask %#x", r[0].Mask.CtState)
	}

	out, err := tb.Trace("br0", "in_port=1,tcp,dl_src="+macA+",dl_dst="+macB+",nw_src=10.0.0.1,nw_dst=10.0.0.2")
	for _, want := range []string{"ct(commit,table=1,zone=5,exec(", "nat(src=10.0.0.9)))\n",
		"recirc(0x1) - resume conntrack with default ct_state=trk|new", "Resuming from table 1", "Datapath actions: 2\n"} {
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("trace lacks %q: %v\n%s", want, err, out)
		}
	}
	out, err = tb.Trace("br0", "in_port=1,tcp,recirc_id=1,ct_state=trk|new,dl_src="+macA+",dl_dst="+macB)
	if err != nil || !strings.HasSuffix(out, "Datapath actions: 2\n") {
		t.Errorf("trace of the recirculation: %v\n%s", err, out)
	}

	// The rule goes, and with it the ID: a packet still carrying it drops.
	mustMod(t, br, fmSpec{cmd: ofp.FlowDelete, table: 0})
	tb.Run()
	if n := tb.recircs.len(); n != 0 {
		t.Fatalf("%d recirculation IDs left after their rule went", n)
	}
	r[0].Actions = nil
	tb.Upcall(r)
	if got := r[0].Actions.String(); got != "drop" {
		t.Errorf("freed ID: %s, want drop", got)
	}
}

// Flow churn leaks no IDs: each version of a ct rule gets its own, freed
// when the next replaces it.
func TestRecircIDsFollowRules(t *testing.T) {
	tb, br := emptyTables(t)
	ip := map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}}
	frame := dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
		IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
		UDP:  &dptest.UDP{Src: 1, Dst: 2}}.Bytes()
	for i := 0; i < 50; i++ {
		ct := ofp.Action{Type: ofp.ActCT, CT: &ofp.CT{ZoneImm: uint16(i), Table: uint8(1 + i%5)}}
		mustMod(t, br, fmSpec{prio: 10, match: ip, actions: []ofp.Action{ct}})
		u := []datapath.Upcall{{}}
		flow.Extract(frame, 1, &u[0].Key)
		tb.Upcall(u)
		if !strings.Contains(u[0].Actions.String(), "recirc(") {
			t.Fatalf("%d: %s", i, u[0].Actions)
		}
		tb.Run()
		if n := tb.recircs.len(); n > 1 {
			t.Fatalf("%d: %d IDs allocated", i, n)
		}
	}
}

// Through a patch port the peer bridge sees the packet untracked, as
// OVS's patch_port_output clears the ct fields, even after a
// recirculation.
func TestCtPatchPortClears(t *testing.T) {
	tb := newTestBacker(t)
	br0 := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1),
		{Name: "patch0", OFPort: 2, PatchPeer: "patch1", Tag: -1}}})
	br1 := tb.bridge("br1", BridgeConfig{Ports: []PortConfig{trunk("p2", 2), trunk("p3", 3),
		{Name: "patch1", OFPort: 1, PatchPeer: "patch0", Tag: -1}}})
	for _, br := range []*Bridge{br0, br1} {
		mustMod(t, br, fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll})
	}
	ip := map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}}
	mustMod(t, br0, fmSpec{prio: 10, match: ip, actions: []ofp.Action{{Type: ofp.ActCT, CT: &ofp.CT{Table: 1}}}})
	mustMod(t, br0, fmSpec{table: 1, prio: 10, actions: []ofp.Action{output(2)}})
	mustMod(t, br1, fmSpec{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldCtState: {ofp.CtTrk, ofp.CtTrk}}, actions: []ofp.Action{output(2)}})
	mustMod(t, br1, fmSpec{prio: 5, actions: []ofp.Action{output(3)}})

	frame := dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
		IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
		UDP:  &dptest.UDP{Src: 1, Dst: 2}}.Bytes()
	u := []datapath.Upcall{{}}
	flow.Extract(frame, 1, &u[0].Key)
	tb.Upcall(u)
	if got := u[0].Actions.String(); got != "ct,recirc(0x1)" {
		t.Fatalf("first pass: %s", got)
	}
	u[0] = datapath.Upcall{}
	flow.Extract(frame, 1, &u[0].Key)
	u[0].Key.RecircID, u[0].Key.CtState = 1, ofp.CtTrk|ofp.CtNew
	tb.Upcall(u)
	if got := u[0].Actions.String(); got != "3" {
		t.Errorf("recirculated through the patch: %s, want 3 (untracked in br1)", got)
	}
}
