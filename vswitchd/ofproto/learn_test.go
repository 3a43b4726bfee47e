package ofproto

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

func learnRef(id ofp.FieldID, ofs, n int) ofp.FieldRef {
	return ofp.FieldRef{Field: ofp.FieldByID(id), Ofs: ofs, NBits: n}
}

// macLearning is ovs-actions(7)'s learning switch made of learn flows:
// table 0 learns the source into table 10 and looks the destination up
// there; table 2 outputs to the port table 10 loaded into reg0, or floods.
func macLearning(t *testing.T, br *Bridge, flags uint16, limit uint32, result ofp.FieldRef) {
	l := &ofp.Learn{Table: 10, Priority: 0x8000, IdleTimeout: 60, Cookie: 0x5, Flags: flags, Limit: limit, ResultDst: result,
		Specs: []ofp.LearnSpec{
			{Kind: ofp.LearnMatch, NBits: 12, Src: learnRef(ofp.FieldVLANTCI, 0, 12), Dst: learnRef(ofp.FieldVLANTCI, 0, 12)},
			{Kind: ofp.LearnMatch, NBits: 48, Src: learnRef(ofp.FieldEthSrc, 0, 48), Dst: learnRef(ofp.FieldEthDst, 0, 48)},
			{Kind: ofp.LearnLoad, NBits: 16, Src: learnRef(ofp.FieldInPort, 0, 16), Dst: learnRef(ofp.FieldReg0, 0, 16)},
		}}
	mustMod(t, br, fmSpec{actions: []ofp.Action{{Type: ofp.ActLearn, Learn: l}, resubmitTo(10), resubmitTo(2)}})
	mustMod(t, br, fmSpec{table: 2, prio: 1, match: map[ofp.FieldID][2]uint64{ofp.FieldReg0: {0, 0}}, actions: []ofp.Action{output(ofp.PortFlood)}})
	mustMod(t, br, fmSpec{table: 2, actions: []ofp.Action{{Type: ofp.ActOutputReg, Src: learnRef(ofp.FieldReg0, 0, 16)}}})
}

func tableFlows(br *Bridge, table uint8) []string {
	var out []string
	for _, f := range br.Flows() {
		if f.Table == table {
			out = append(out, FormatFlowBrief(&f))
		}
	}
	return out
}

// A packet's translation learns its source; the next packet to it is
// forwarded by the learned flow; the megaflow matches what learn read;
// deleting the learning flow with delete_learned removes what it learned.
func TestLearnMACLearning(t *testing.T) {
	tb, br := emptyTables(t)
	macLearning(t, br, ofp.LearnDeleteLearned, 0, ofp.FieldRef{})
	got, mask := tb.xlate(1, eth(macA, macB))
	if got != "2,3" {
		t.Errorf("unknown destination: %s, want 2,3 (flood)", got)
	}
	if mask.EthSrc != [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} || mask.VLANTCI&0xfff != 0xfff {
		t.Errorf("megaflow does not cover what learn read: %+v", mask)
	}
	learned := tableFlows(br, 10)
	want := "n_packets=0, n_bytes=0, vlan_tci=0x0000/0x0fff,dl_dst=" + macA +
		",actions=load:0x1->NXM_NX_REG0[0..15]"
	if len(learned) != 1 || !strings.HasSuffix(learned[0], want) {
		t.Fatalf("learned:\n%s\nwant ...%s", strings.Join(learned, "\n"), want)
	}
	if got, _ := tb.xlate(2, eth(macB, macA)); got != "1" {
		t.Errorf("to the learned MAC: %s, want 1", got)
	}
	// The learned flow idles out; learning it again brings it back.
	tb.clock.advance(61 * time.Second)
	br.expire()
	if fl := tableFlows(br, 10); len(fl) != 0 {
		t.Errorf("after the idle timeout:\n%s", strings.Join(fl, "\n"))
	}
	tb.xlate(1, eth(macA, macB))
	tb.xlate(2, eth(macB, macA))
	if n := len(tableFlows(br, 10)); n != 2 {
		t.Fatalf("%d learned flows, want 2", n)
	}
	mustMod(t, br, fmSpec{cmd: ofp.FlowDeleteStrict})
	if fl := tableFlows(br, 10); len(fl) != 0 {
		t.Errorf("delete_learned left:\n%s", strings.Join(fl, "\n"))
	}

	// A learning flow that times out takes its learned flows with it,
	// unless another flow with the same learn remains.
	macLearning(t, br, ofp.LearnDeleteLearned, 0, ofp.FieldRef{})
	learning := br.Flows()[0].Actions
	mustMod(t, br, fmSpec{table: 3, hard: 5, actions: learning})
	tb.xlate(1, eth(macA, macB))
	mustMod(t, br, fmSpec{cmd: ofp.FlowDeleteStrict})
	if n := len(tableFlows(br, 10)); n != 1 {
		t.Errorf("%d learned flows while another learning flow remains, want 1", n)
	}
	tb.clock.advance(6 * time.Second)
	br.expire()
	if fl := tableFlows(br, 10); len(fl) != 0 {
		t.Errorf("learning flow expired, left:\n%s", strings.Join(fl, "\n"))
	}
}

// limit=1: the second source is not learned, and result_dst says so.
func TestLearnLimit(t *testing.T) {
	tb, br := emptyTables(t)
	macLearning(t, br, ofp.LearnWriteResult, 1, learnRef(ofp.FieldReg0+5, 0, 1))
	mustMod(t, br, fmSpec{table: 2, prio: 5, match: map[ofp.FieldID][2]uint64{ofp.FieldReg0 + 5: {0, 1}}, actions: []ofp.Action{output(3)}})
	tb.xlate(1, eth(macA, macB))
	if got, _ := tb.xlate(2, eth(macB, macA)); got != "3" {
		t.Errorf("over the limit: %s, want 3 (result_dst 0)", got)
	}
	if n := len(tableFlows(br, 10)); n != 1 {
		t.Errorf("%d learned flows, want 1", n)
	}
	// Relearning what is there is within the limit.
	if got, _ := tb.xlate(1, eth(macA, macB)); got != "2,3" {
		t.Errorf("relearn: %s, want 2,3", got)
	}
}

// A TCP FIN through a flow with fin_timeout shortens its timeouts; the
// megaflow matches the FIN and RST bits so that the FIN is seen.
func TestFinTimeout(t *testing.T) {
	tb, br := emptyTables(t)
	tcp := map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}, ofp.FieldIPProto: {6, 0}}
	mustMod(t, br, fmSpec{prio: 5, idle: 60, match: tcp, actions: []ofp.Action{{Type: ofp.ActFinTimeout, Fin: &ofp.FinTimeout{Idle: 3, Hard: 7}}, output(2)}})
	frame := func(flags uint16) []byte {
		return dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
			IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
			TCP:  &dptest.TCP{Src: 1000, Dst: 80, Flags: flags}}.Bytes()
	}
	_, mask := tb.xlate(1, frame(dptest.SYN))
	if mask.TCPFlags&(tcpFIN|tcpRST) != tcpFIN|tcpRST {
		t.Errorf("megaflow tcp_flags mask %#x", mask.TCPFlags)
	}
	f := br.Flows()[0]
	if f.IdleTimeout != 60 || f.HardTimeout != 0 {
		t.Fatalf("timeouts changed by a SYN: %d %d", f.IdleTimeout, f.HardTimeout)
	}
	tb.xlate(1, frame(dptest.FIN|dptest.ACK))
	if f := br.Flows()[0]; f.IdleTimeout != 3 || f.HardTimeout != 7 {
		t.Errorf("after FIN: idle %d hard %d, want 3 7", f.IdleTimeout, f.HardTimeout)
	}
}

// A learn whose sources lack their prerequisites in the learning flow's
// match is refused, as OVS's learn_check.
func TestLearnChecks(t *testing.T) {
	_, br := emptyTables(t)
	l := &ofp.Learn{Table: 1, Specs: []ofp.LearnSpec{{Kind: ofp.LearnLoad, NBits: 32, Src: learnRef(ofp.FieldIPv4Src, 0, 32), Dst: learnRef(ofp.FieldReg0, 0, 32)}}}
	err := br.FlowMod(fmSpec{actions: []ofp.Action{{Type: ofp.ActLearn, Learn: l}}}.mod())
	if err == nil || err.Errno != ofp.MatchInconsistent {
		t.Errorf("ip_src without ip: %v", err)
	}
	ip := map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}}
	if err := br.FlowMod(fmSpec{match: ip, actions: []ofp.Action{{Type: ofp.ActLearn, Learn: l}}}.mod()); err != nil {
		t.Errorf("ip_src with ip: %v", err)
	}
}

func TestFormatLearn(t *testing.T) {
	l := &ofp.Learn{Table: 10, Priority: 0x8000, IdleTimeout: 10, Flags: ofp.LearnDeleteLearned, Cookie: 0x5, Specs: []ofp.LearnSpec{
		{Kind: ofp.LearnMatch, NBits: 12, Src: learnRef(ofp.FieldVLANTCI, 0, 12), Dst: learnRef(ofp.FieldVLANTCI, 0, 12)},
		{Kind: ofp.LearnMatch, NBits: 48, Src: learnRef(ofp.FieldEthSrc, 0, 48), Dst: learnRef(ofp.FieldEthDst, 0, 48)},
		{Kind: ofp.LearnLoad, NBits: 16, Src: learnRef(ofp.FieldInPort, 0, 16), Dst: learnRef(ofp.FieldReg0, 0, 16)},
		{Kind: ofp.LearnLoad, NBits: 32, Imm: []byte{0, 0, 0, 5}, Dst: learnRef(ofp.FieldReg0+1, 0, 32)},
		{Kind: ofp.LearnOutput, NBits: 16, Src: learnRef(ofp.FieldReg0+2, 0, 16)},
	}}
	want := "learn(table=10,idle_timeout=10,delete_learned,cookie=0x5,NXM_OF_VLAN_TCI[0..11],NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[]," +
		"load:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15],load:0x5->NXM_NX_REG1[],output:NXM_NX_REG2[0..15])"
	if got := formatAction(&ofp.Action{Type: ofp.ActLearn, Learn: l}); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// A modify that takes the learn out of the learning flow deletes what it
// learned with delete_learned; one that keeps it does not.
func TestLearnDeleteLearnedOnModify(t *testing.T) {
	tb, br := emptyTables(t)
	macLearning(t, br, ofp.LearnDeleteLearned, 0, ofp.FieldRef{})
	learning := br.Flows()[0].Actions
	tb.xlate(1, eth(macA, macB))
	mustMod(t, br, fmSpec{cmd: ofp.FlowModifyStrict, actions: learning})
	if n := len(tableFlows(br, 10)); n != 1 {
		t.Fatalf("%d learned flows after a modify keeping the learn, want 1", n)
	}
	mustMod(t, br, fmSpec{cmd: ofp.FlowModifyStrict, actions: []ofp.Action{output(ofp.PortFlood)}})
	if fl := tableFlows(br, 10); len(fl) != 0 {
		t.Errorf("modify without the learn left:\n%s", strings.Join(fl, "\n"))
	}
}

// learn with tun_metadata (mapped 4 and 8 bytes): matches from the
// packet's field, from a register and of an immediate, into one field
// from two specs, and loads, as Debian's ovs-vswitchd learns them.
func TestLearnTunMetadata(t *testing.T) {
	tb, br := emptyTables(t)
	if err := br.TLVTableMod(&ofp.TLVTableMod{Command: ofp.TLVAdd, Maps: []ofp.TLVMap{
		{Class: 0x102, Type: 0x80, Len: 4, Index: 0}, {Class: 0xffff, Type: 1, Len: 8, Index: 1}}}); err != nil {
		t.Fatal(err)
	}
	md := func(idx, n int) *ofp.Field { return ofp.TunMetadataField(idx, n) }
	ref := func(fd *ofp.Field, ofs, n int) ofp.FieldRef { return ofp.FieldRef{Field: fd, Ofs: ofs, NBits: n} }
	reg := func(i, ofs, n int) ofp.FieldRef { return learnRef(ofp.FieldReg0+ofp.FieldID(i), ofs, n) }
	learns := []*ofp.Learn{
		{Table: 6, Priority: 0x8000, Specs: []ofp.LearnSpec{
			{Kind: ofp.LearnMatch, NBits: 32, Src: ref(md(0, 124), 0, 32), Dst: ref(md(0, 124), 0, 32)},
			{Kind: ofp.LearnLoad, NBits: 32, Src: ref(md(0, 124), 0, 32), Dst: reg(1, 0, 32)}}},
		{Table: 6, Priority: 2, Specs: []ofp.LearnSpec{
			{Kind: ofp.LearnMatch, NBits: 16, Imm: []byte{0, 5}, Dst: ref(md(0, 124), 0, 16)},
			{Kind: ofp.LearnLoad, NBits: 32, Src: reg(0, 0, 32), Dst: ref(md(0, 124), 0, 32)}}},
		{Table: 6, Priority: 7, Specs: []ofp.LearnSpec{
			{Kind: ofp.LearnMatch, NBits: 32, Src: reg(2, 0, 32), Dst: ref(md(0, 124), 0, 32)},
			{Kind: ofp.LearnMatch, NBits: 16, Src: reg(0, 0, 16), Dst: ref(md(1, 124), 16, 16)},
			{Kind: ofp.LearnMatch, NBits: 16, Src: reg(0, 16, 16), Dst: ref(md(1, 124), 32, 16)}}},
	}
	setReg := func(i int, v uint32) ofp.Action {
		return ofp.LoadAction(ofp.FieldByID(ofp.FieldReg0+ofp.FieldID(i)), []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}, []byte{0xff, 0xff, 0xff, 0xff})
	}
	acts := []ofp.Action{setReg(0, 0x77), setReg(2, 0x88)}
	for _, l := range learns {
		acts = append(acts, ofp.Action{Type: ofp.ActLearn, Learn: l})
	}
	mustMod(t, br, fmSpec{actions: acts})
	tb.xlate(1, eth(macA, macB))
	got := strings.Join(tableFlows(br, 6), "\n")
	for _, want := range []string{
		"n_bytes=0, tun_metadata0=0,actions=load:0->NXM_NX_REG1[]",
		"priority=2,tun_metadata0=0x5,actions=load:0x77->NXM_NX_TUN_METADATA0[]",
		"priority=7,tun_metadata0=0x88,tun_metadata1=0x770000/0xffffffff0000,actions=drop",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("learned:\n%s\nwant ...%s", got, want)
		}
	}
}
