package ofproto

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// BenchmarkBundle adds n flows in one atomic bundle, as `ovs-ofctl -O
// OpenFlow14 --bundle add-flows` does: each OFPT_BUNDLE_ADD_MESSAGE is
// decoded and checked as it comes (what CheckBundled returns is kept
// until the commit), then the commit applies them all. Reported per
// flow: wall time, and the process's CPU time (cpu-ns/flow, GC included),
// which a loaded machine does not inflate.
func BenchmarkBundle(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			_, br := benchBridge(b)
			raws := make([][]byte, n)
			for i := range raws {
				fm := benchFlow(i)
				fm.BufferID, fm.OutPort, fm.OutGroup = 0xffffffff, ofp.PortAny, ofp.GroupAny
				raws[i] = ofp.EncodeBundleAdd(ofp.V14, 1, ofp.BundleAtomic, ofp.EncodeFlowMod(ofp.V14, uint32(i), fm))
			}
			var cpu time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				br.FlowMod(fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll}.mod())
				c0 := cpuTime(b)
				b.StartTimer()
				msgs := make([]ofp.Message, 0, 16)
				for _, raw := range raws {
					m, err := ofp.Decode(raw)
					if err != nil {
						b.Fatal(err)
					}
					fm := m.(*ofp.BundleAdd).Msg
					kept, oerr := br.CheckBundled(fm)
					if oerr != nil {
						b.Fatal(oerr)
					}
					if kept != fm { // as connmgr does
						ofp.ReleaseFlowMod(fm.(*ofp.FlowMod))
					}
					msgs = append(msgs, kept)
				}
				if i, err := br.CommitBundle(msgs); err != nil {
					b.Fatal(i, err)
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

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
