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

// push/pop as ovn-controller's ARP and ICMP responders use them: a swap
// of two fields through the stack; a clone's pushes end with it; a pop
// of an empty stack leaves its field alone; a read-only pop target or a
// field without its prerequisites is refused.
func TestStackTranslation(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}})
	mustMod(t, br, fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll})
	ref := func(id ofp.FieldID, n int) ofp.FieldRef { return ofp.FieldRef{Field: ofp.FieldByID(id), NBits: n} }
	push := func(r ofp.FieldRef) ofp.Action { return ofp.Action{Type: ofp.ActStackPush, Src: r} }
	pop := func(r ofp.FieldRef) ofp.Action { return ofp.Action{Type: ofp.ActStackPop, Dst: r} }
	src, dst, reg1 := ref(ofp.FieldEthSrc, 48), ref(ofp.FieldEthDst, 48), ref(ofp.FieldReg0+1, 32)
	mustMod(t, br, fmSpec{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {1, 0}}, actions: []ofp.Action{
		push(src), push(dst), pop(src), pop(dst),
		{Type: ofp.ActClone, Nested: []ofp.Action{push(src)}},
		pop(reg1), resubmitTo(1)}})
	mustMod(t, br, fmSpec{table: 1, prio: 5, match: map[ofp.FieldID][2]uint64{ofp.FieldReg0 + 1: {0, 0}}, actions: []ofp.Action{output(2)}})
	mustMod(t, br, fmSpec{table: 1, prio: 1, actions: []ofp.Action{output(3)}})
	want := "set(eth(src=" + macB + ",dst=" + macA + ")),2"
	if got, _ := tb.xlate(1, eth(macA, macB)); got != want {
		t.Errorf("swap: %s, want %s", got, want)
	}
	for _, tc := range []struct {
		name string
		spec fmSpec
		want ofp.Errno
	}{
		{"pop to a field govs cannot set", fmSpec{match: map[ofp.FieldID][2]uint64{ofp.FieldEthType: {0x0800, 0}},
			actions: []ofp.Action{push(src), pop(ref(ofp.FieldCtMark, 6))}}, ofp.BadSetType},
		{"push without prerequisites", fmSpec{actions: []ofp.Action{push(ref(ofp.FieldIPv4Src, 32))}}, ofp.MatchInconsistent},
		{"pop without prerequisites", fmSpec{actions: []ofp.Action{pop(ref(ofp.FieldIPv4Dst, 32))}}, ofp.MatchInconsistent},
	} {
		if err := br.FlowMod(tc.spec.mod()); err == nil || err.Errno != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
}

// A ct(table=N) freezes the stack with the registers: the recirculated
// packet pops in table N what was pushed before it.
func TestStackFrozenAcrossRecirculation(t *testing.T) {
	tb, br := emptyTables(t)
	ip := map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}}
	reg3 := ofp.FieldRef{Field: ofp.FieldByID(ofp.FieldReg0 + 3), NBits: 32}
	ct := ofp.Action{Type: ofp.ActCT, CT: &ofp.CT{ZoneImm: 5, Table: 1}}
	mustMod(t, br, fmSpec{prio: 10, match: ip, actions: []ofp.Action{{Type: ofp.ActStackPush, Src: ofp.FieldRef{Field: ofp.FieldByID(ofp.FieldIPv4Dst), NBits: 32}}, ct}})
	mustMod(t, br, fmSpec{table: 1, prio: 10, actions: []ofp.Action{{Type: ofp.ActStackPop, Dst: reg3}, resubmitTo(2)}})
	mustMod(t, br, fmSpec{table: 2, prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldReg0 + 3: {0x0a000002, 0}}, actions: []ofp.Action{output(2)}})
	mustMod(t, br, fmSpec{table: 2, prio: 1, actions: []ofp.Action{output(3)}})
	// The first pass recirculates; the second, with the conntrack state
	// that gives, resumes in table 1.
	pass := func(recirc uint32) string {
		u := []datapath.Upcall{{}}
		flow.Extract(dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB), IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"),
			Dst: netip.MustParseAddr("10.0.0.2")}, UDP: &dptest.UDP{Src: 1, Dst: 2}}.Bytes(), 1, &u[0].Key)
		if recirc != 0 {
			u[0].Key.RecircID, u[0].Key.CtState, u[0].Key.CtZone = recirc, ofp.CtTrk|ofp.CtNew, 5
		}
		tb.Upcall(u)
		return u[0].Actions.String()
	}
	if got, want := pass(0), "ct(zone=5),recirc(0x1)"; got != want {
		t.Fatalf("first pass: %s, want %s", got, want)
	}
	if got := pass(1); got != "2" {
		t.Errorf("recirculated: %s, want 2 (ip_dst popped into reg3)", got)
	}
}

// Output compares with the flow's in_port as the actions left it, as
// OVS's xlate_output_action: ovn-controller sends a packet back out of
// its input port by pushing in_port, loading OFPP_NONE into it and
// outputting to the port by number; IN_PORT, FLOOD and NORMAL follow a loaded
// in_port too.
func TestOutputFollowsLoadedInPort(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}})
	inPort := func(no uint16) ofp.Action {
		return ofp.Action{Type: ofp.ActSetField, Field: ofp.FieldByID(ofp.FieldInPort), Value: []byte{byte(no >> 8), byte(no)}, Mask: []byte{0xff, 0xff}}
	}
	ref := ofp.FieldRef{Field: ofp.FieldByID(ofp.FieldInPort), NBits: 16}
	for _, tc := range []struct {
		name string
		acts []ofp.Action
		want string
	}{
		{"output to the input port", []ofp.Action{output(1)}, "drop"},
		{"OFPP_NONE loaded, then output to the input port", []ofp.Action{
			{Type: ofp.ActStackPush, Src: ref}, inPort(0xffff), output(1), {Type: ofp.ActStackPop, Dst: ref}, output(1)}, "1"},
		{"IN_PORT after a load", []ofp.Action{inPort(2), output(ofp.PortInPort)}, "2"},
		{"FLOOD after a load", []ofp.Action{inPort(2), output(ofp.PortFlood)}, "1,3"},
		{"NORMAL after a load", []ofp.Action{inPort(2), output(ofp.PortNormal)}, "1,3"},
		{"NORMAL from OFPP_NONE", []ofp.Action{inPort(0xffff), output(ofp.PortNormal)}, "1,2,3"},
		{"NORMAL from a port that does not exist", []ofp.Action{inPort(7), output(ofp.PortNormal)}, "drop"},
	} {
		mustMod(t, br, fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll})
		mustMod(t, br, fmSpec{prio: 10, actions: tc.acts})
		if got, _ := tb.xlate(1, eth(macA, macB)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// dec_ttl and dec_ttl(ids) as OVS's compose_dec_ttl: a TTL over 1 is
// decremented; at 1 the packet goes to the controllers named (invalid_ttl)
// and the rest of that action list is skipped, while the resubmit that
// led to it goes on.
func TestDecTTLException(t *testing.T) {
	tb, br := emptyTables(t)
	ip := map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}}
	mustMod(t, br, fmSpec{prio: 10, match: ip, actions: []ofp.Action{resubmitTo(1), output(3)}})
	frame := func(ttl uint8) []byte {
		return dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB), IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"),
			Dst: netip.MustParseAddr("10.0.0.2"), TTL: ttl}, UDP: &dptest.UDP{Src: 1, Dst: 2}}.Bytes()
	}
	for _, dec := range []ofp.Action{{Type: ofp.ActDecTTL}, {Type: ofp.ActDecTTL, CntIDs: []uint16{0}}} {
		mustMod(t, br, fmSpec{table: 1, prio: 10, match: ip, actions: []ofp.Action{dec, output(2)}})
		if got, want := formatAction(&dec), map[bool]string{false: "dec_ttl", true: "dec_ttl(0)"}[dec.CntIDs != nil]; got != want {
			t.Errorf("formatted as %s, want %s", got, want)
		}
		if got, want := func() string { s, _ := tb.xlate(1, frame(64)); return s }(), "set(ipv4(ttl=63)),2,3"; got != want {
			t.Errorf("%s, TTL 64: %s, want %s", formatAction(&dec), got, want)
		}
		got, _ := tb.xlate(1, frame(1))
		if strings.Contains(got, "2,") || !strings.HasSuffix(got, "3") {
			t.Errorf("%s, TTL 1: %s, want the packet-in and output 3 only", formatAction(&dec), got)
		}
	}
}
