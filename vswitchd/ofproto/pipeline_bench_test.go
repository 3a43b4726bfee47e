package ofproto

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// pipelineTables is how many tables the pipeline of pipelineBridge has,
// about as many as OVN's logical switch pipeline resubmits through.
const pipelineTables = 40

// pipelineBridge is a bridge programmed as OVN programs br-int for one
// logical switch: table 0 sets the logical datapath (metadata) and input
// port (reg14) of the packets of port 3, and each of pipelineTables
// tables has flows on a few masks (the packet's logical datapath and
// port, IP destinations, a multicast source, a logical output port) that
// a unicast IPv4 packet from 10.0.0.1 to 10.0.0.2 does not match, and a
// priority 0 flow that resubmits to the next table; the last outputs to
// port 2.
func pipelineBridge(b *testing.B) (*testBacker, []byte) {
	tb, br := benchBridge(b)
	reg := func(n int, v uint32) ofp.Action {
		return ofp.Action{Type: ofp.ActSetField, Field: ofp.FieldByID(ofp.FieldReg0 + ofp.FieldID(n)),
			Value: []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}, Mask: []byte{0xff, 0xff, 0xff, 0xff}}
	}
	meta := ofp.Action{Type: ofp.ActSetField, Field: ofp.FieldByID(ofp.FieldMetadata),
		Value: []byte{0, 0, 0, 0, 0, 0, 0, 1}, Mask: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	mods := []fmSpec{{prio: 100, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {3, 0}},
		actions: []ofp.Action{meta, reg(14, 2), reg(13, 4), resubmitTo(1)}}}
	for t := uint8(1); t <= pipelineTables; t++ {
		next := resubmitTo(t + 1)
		if t == pipelineTables {
			next = output(2)
		}
		m := func(kv ...uint64) map[ofp.FieldID][2]uint64 {
			r := map[ofp.FieldID][2]uint64{ofp.FieldMetadata: {1, 0}}
			for i := 0; i < len(kv); i += 3 {
				r[ofp.FieldID(kv[i])] = [2]uint64{kv[i+1], kv[i+2]}
			}
			return r
		}
		mods = append(mods,
			fmSpec{table: t, prio: 110, match: m(uint64(ofp.FieldReg0+14), 7, 0), actions: []ofp.Action{next}},
			fmSpec{table: t, prio: 100, match: m(uint64(ofp.FieldEthType), flow.EthTypeIPv4, 0, uint64(ofp.FieldIPv4Dst), 0x0a000063, 0),
				actions: []ofp.Action{next}},
			fmSpec{table: t, prio: 100, match: m(uint64(ofp.FieldEthType), flow.EthTypeIPv4, 0, uint64(ofp.FieldIPv4Dst), 0x0a000064, 0),
				actions: []ofp.Action{next}},
			fmSpec{table: t, prio: 90, match: m(uint64(ofp.FieldEthSrc), 0x010000000000, 0x010000000000)},
			fmSpec{table: t, prio: 50, match: m(uint64(ofp.FieldReg0+15), uint64(t), 0), actions: []ofp.Action{next}},
			fmSpec{table: t, prio: 0, actions: []ofp.Action{next}},
		)
	}
	for _, s := range mods {
		if err := br.FlowMod(s.mod()); err != nil {
			b.Fatal(err)
		}
	}
	frame := dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
		IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")}, UDP: &dptest.UDP{Src: 1, Dst: 2}}.Bytes()
	return tb, frame
}

// pipelineUpcall returns pipelineBridge's backer and an upcall of its
// frame, translated once (its actions checked), with the action buffer
// to reuse.
func pipelineUpcall(b *testing.B) (*testBacker, []datapath.Upcall, datapath.Actions) {
	tb, frame := pipelineBridge(b)
	u := []datapath.Upcall{{}}
	flow.Extract(frame, 3, &u[0].Key)
	acts := make(datapath.Actions, 0, 16)
	u[0].Actions = acts
	tb.Upcall(u)
	if got := u[0].Actions.String(); got != "2" {
		b.Fatalf("actions %q, want 2", got)
	}
	return tb, u, acts
}

// BenchmarkPipelineUpcall translates a miss (as the datapath's upcall
// does) through pipelineBridge's tables: the OpenFlow lookups of a first
// packet through an OVN-like pipeline, and what a translation allocates.
func BenchmarkPipelineUpcall(b *testing.B) {
	tb, u, acts := pipelineUpcall(b)
	b.ReportAllocs()
	for b.Loop() {
		u[0].Actions, u[0].Mask = acts[:0], flow.Mask{}
		tb.Upcall(u)
	}
}

// BenchmarkPipelineUpcallCold is BenchmarkPipelineUpcall with the caches
// evicted before each translation (64 MiB written), as a first packet
// finds them after the machine did other things: the translation then
// costs its cache misses more than its instructions. Its figure is
// cold-ns/upcall, the translation alone (ns/op includes the eviction),
// and its median and first decile cold-p50-ns and cold-p10-ns, which
// the other processes of a loaded machine, preempting some translations,
// sway less.
func BenchmarkPipelineUpcallCold(b *testing.B) {
	tb, u, acts := pipelineUpcall(b)
	evict := make([]byte, 64<<20)
	var spent time.Duration
	var each []time.Duration
	for b.Loop() {
		for i := 0; i < len(evict); i += 64 {
			evict[i]++
		}
		u[0].Actions, u[0].Mask = acts[:0], flow.Mask{}
		t0 := time.Now()
		tb.Upcall(u)
		d := time.Since(t0)
		spent += d
		each = append(each, d)
	}
	slices.Sort(each)
	b.ReportMetric(float64(spent.Nanoseconds())/float64(len(each)), "cold-ns/upcall")
	b.ReportMetric(float64(each[len(each)/2].Nanoseconds()), "cold-p50-ns")
	b.ReportMetric(float64(each[len(each)/10].Nanoseconds()), "cold-p10-ns")
}
