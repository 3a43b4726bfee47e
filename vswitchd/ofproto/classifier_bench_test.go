package ofproto

import (
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// benchBridge is a bridge with three ports on a fresh datapath.
func benchBridge(b *testing.B) (*testBacker, *Bridge) {
	dp := datapath.New(nil)
	b.Cleanup(dp.Close)
	tb := &testBacker{Backer: NewBacker(dp, nil), dp: dp, clock: &fakeClock{}}
	return tb, tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}})
}

// benchFlow is flow i of a table as a controller programs one: exact
// IPv4 destinations, most under one mask, some under three others, at
// priorities 100..103.
func benchFlow(i int) *ofp.FlowMod {
	m := map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}, ofp.FieldIPv4Dst: {0x0a000000 + uint64(i), 0}}
	switch i % 8 {
	case 1:
		m[ofp.FieldInPort] = [2]uint64{1, 0}
	case 2:
		m[ofp.FieldIPProto] = [2]uint64{17, 0}
	case 3:
		m[ofp.FieldIPv4Src] = [2]uint64{0x0a000001, 0}
	}
	return fmSpec{prio: uint16(100 + i%4), match: m, actions: []ofp.Action{output(uint32(1 + i%3))}}.mod()
}

// benchL4Flow is flow i of a table of flows on L4 fields: TCP to an
// exact IPv4 destination, one per flow as benchFlow's, and one of 100
// ports, at priorities 100..103 (all under one mask, whose subtable has
// L3 and L4 stages).
func benchL4Flow(i int) *ofp.FlowMod {
	m := map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}, ofp.FieldIPProto: {6, 0},
		ofp.FieldIPv4Dst: {0x0a000000 + uint64(i), 0}, ofp.FieldTCPDst: {uint64(1 + i%100), 0}}
	return fmSpec{prio: uint16(100 + i%4), match: m, actions: []ofp.Action{output(uint32(1 + i%3))}}.mod()
}

// BenchmarkFlowAdd adds n flows to an empty table, one FLOW_MOD each
// (ovs-ofctl add-flows); reported per flow.
func BenchmarkFlowAdd(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			_, br := benchBridge(b)
			mods := make([]*ofp.FlowMod, n)
			for i := range mods {
				mods[i] = benchFlow(i)
			}
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				br.FlowMod(fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll}.mod())
				b.StartTimer()
				for _, fm := range mods {
					c := *fm
					if err := br.FlowMod(&c); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/flow")
		})
	}
}

// BenchmarkFlowLookup translates a packet through a table of n flows
// that it matches near the end of (the lowest priority).
func BenchmarkFlowLookup(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			tb, br := benchBridge(b)
			for i := range n {
				if err := br.FlowMod(benchFlow(i)); err != nil {
					b.Fatal(err)
				}
			}
			dst := netip.AddrFrom4([4]byte{10, 0, byte((n - 4) >> 8), byte(n - 4)}) // flow n-4: priority 100, plain mask
			frame := dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
				IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.9.9.9"), Dst: dst}, UDP: &dptest.UDP{Src: 1, Dst: 2}}.Bytes()
			u := []datapath.Upcall{{}}
			flow.Extract(frame, 3, &u[0].Key)
			tb.Revalidate(u)
			if u[0].Actions.String() == "drop" {
				b.Fatalf("actions %q, want an output", u[0].Actions.String())
			}
			b.ResetTimer()
			for range b.N {
				tb.Revalidate(u)
			}
		})
	}
}

// BenchmarkFlowModBarrier handles n flow mods as a connection does those
// of `ovs-ofctl add-flows` into an empty table: each decoded from the
// wire, applied, followed by a barrier, and handed back for the next
// decoding (connmgr). Reported per flow: wall time and the process's CPU
// time (cpu-ns/flow, GC included), which a loaded machine inflates less.
func BenchmarkFlowModBarrier(b *testing.B) { benchFlowModBarrier(b, benchFlow) }

// BenchmarkFlowModBarrierL4 is BenchmarkFlowModBarrier with flows on L4
// fields (benchL4Flow).
func BenchmarkFlowModBarrierL4(b *testing.B) { benchFlowModBarrier(b, benchL4Flow) }

// BenchmarkFlowModBarrierMasks is BenchmarkFlowModBarrier with flows
// under 64 masks (benchMasksFlow), as OVN's tables have tens of
// subtables: what a change costs that copies a table's list of them.
func BenchmarkFlowModBarrierMasks(b *testing.B) { benchFlowModBarrier(b, benchMasksFlow) }

// benchMasksFlow is flow i of a table of flows under 64 masks: on the
// metadata and, by the bits of i%64, on registers 0 to 5.
func benchMasksFlow(i int) *ofp.FlowMod {
	m := map[ofp.FieldID][2]uint64{ofp.FieldMetadata: {uint64(i / 64), 0}}
	for r := range 6 {
		if i%64>>r&1 != 0 {
			m[ofp.FieldReg0+ofp.FieldID(r)] = [2]uint64{uint64(i), 0}
		}
	}
	return fmSpec{prio: uint16(100 + i%4), match: m, actions: []ofp.Action{output(uint32(1 + i%3))}}.mod()
}

func benchFlowModBarrier(b *testing.B, flowOf func(int) *ofp.FlowMod) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			_, br := benchBridge(b)
			raws := make([][]byte, n)
			for i := range raws {
				fm := flowOf(i)
				fm.BufferID, fm.OutPort, fm.OutGroup = 0xffffffff, ofp.PortAny, ofp.GroupAny
				raws[i] = ofp.EncodeFlowMod(ofp.V13, uint32(i), fm)
			}
			var cpu time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				br.FlowMod(fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll}.mod())
				br.Barrier()
				c0 := cpuTime(b)
				b.StartTimer()
				for _, raw := range raws {
					m, err := ofp.Decode(raw)
					if err != nil {
						b.Fatal(err)
					}
					fm := m.(*ofp.FlowMod)
					if err := br.FlowMod(fm); err != nil {
						b.Fatal(err)
					}
					ofp.ReleaseFlowMod(fm)
					br.Barrier()
				}
				b.StopTimer()
				cpu += cpuTime(b) - c0
			}
			if got := br.tables.Load().table(0).len(); got != n {
				b.Fatalf("%d flows in table 0, want %d", got, n)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/flow")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*n), "cpu-ns/flow")
		})
	}
}

// BenchmarkRuleMemory adds n flows as BenchmarkFlowModBarrier does
// (decoded from the wire, as `ovs-ofctl add-flows` sends them) and
// reports the live heap they take per flow after a GC (B/rule): a flow's
// rule, its actions, its place in its subtable and its counters.
func BenchmarkRuleMemory(b *testing.B) { benchRuleMemory(b, benchFlow) }

// BenchmarkRuleMemoryL4 is BenchmarkRuleMemory with flows on L4 fields
// (benchL4Flow), whose subtable has OVS's L3 and L4 stages.
func BenchmarkRuleMemoryL4(b *testing.B) { benchRuleMemory(b, benchL4Flow) }

func benchRuleMemory(b *testing.B, flowOf func(int) *ofp.FlowMod) {
	const n = 100000
	raws := make([][]byte, n)
	for i := range raws {
		fm := flowOf(i)
		fm.BufferID, fm.OutPort, fm.OutGroup = 0xffffffff, ofp.PortAny, ofp.GroupAny
		raws[i] = ofp.EncodeFlowMod(ofp.V13, uint32(i), fm)
	}
	_, br := benchBridge(b)
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var perRule float64
	for range b.N {
		br.FlowMod(fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll}.mod())
		br.Barrier()
		h0 := heap()
		for _, raw := range raws {
			m, err := ofp.Decode(raw)
			if err != nil {
				b.Fatal(err)
			}
			fm := m.(*ofp.FlowMod)
			if err := br.FlowMod(fm); err != nil {
				b.Fatal(err)
			}
			ofp.ReleaseFlowMod(fm)
		}
		br.Barrier()
		perRule = float64(int64(heap())-int64(h0)) / n
	}
	if got := br.tables.Load().table(0).len(); got != n {
		b.Fatalf("%d flows in table 0, want %d", got, n)
	}
	b.ReportMetric(perRule, "B/rule")
}
