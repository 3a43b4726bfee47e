package ofproto

import (
	"bufio"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/conntrack"
	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
	"github.com/govs/govs/vswitchd/ofproto/ofp/ofptext"
)

// ovnStatefulBridge is a bridge with the flow table Debian's OVN 23.03
// programs on br-int for tests/bench/ovnpipe.sh's stateful set-up (one
// logical switch, VIFs on ports 1 and 2, ACLs from-lport and to-lport
// `ip4 allow-related` and a load balancer; testdata/ovn-stateful-flows.txt
// is its `ovs-ofctl dump-flows --no-stats`). The load balancer's flow,
// which sends to a group, is left out: ICMP between the VIFs never
// reaches it.
func ovnStatefulBridge(b *testing.B) *testBacker {
	tb, br := benchBridge(b)
	f, err := os.Open("testdata/ovn-stateful-flows.txt")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.Contains(line, "group:") {
			continue
		}
		pf, err := ofptext.ParseFlow(line, ofptext.ParseAdd, nil)
		if err != nil {
			b.Fatalf("%s: %v", line, err)
		}
		table := pf.Table
		if table == 0xff {
			table = 0
		}
		fm := &ofp.FlowMod{Header: ofp.Header{Version: ofp.V15}, Command: ofp.FlowAdd, Table: table,
			Priority: pf.Priority, Match: pf.Match, Actions: pf.Actions, BufferID: 0xffffffff,
			OutPort: ofp.PortAny, OutGroup: ofp.GroupAny, NewCookie: pf.Cookie, HasNewCookie: true}
		if e := br.FlowMod(fm); e != nil {
			b.Fatalf("%s: %v", line, e)
		}
		n++
	}
	if n < 200 {
		b.Fatalf("only %d flows", n)
	}
	return tb
}

// ovnStatefulPasses translates, as the datapath's upcalls would, the
// three passes of an ICMP echo request from the VIF on port 1 through
// ovnStatefulBridge: the first to its ct(zone=4,nat) and recirculation,
// the second (a new connection, tracked) to the commit and ct(zone=3,nat)
// of the to-lport stage, the third to the output. It returns the time
// each took and checks the last one outputs to port 2.
func ovnStatefulPasses(b *testing.B, tb *testBacker, frame []byte, u []datapath.Upcall, acts datapath.Actions) (d [3]time.Duration) {
	var k flow.Key
	flow.Extract(frame, 1, &k)
	for pass := 0; pass < 3; pass++ {
		u[0] = datapath.Upcall{Key: k, Packet: nil, Actions: acts[:0]}
		t0 := time.Now()
		tb.Upcall(u)
		d[pass] = time.Since(t0)
		as := u[0].Actions
		var zone uint16
		recirc := uint32(0)
		for _, a := range as {
			switch a.Kind {
			case datapath.ActionCT:
				zone = a.CT.Zone
			case datapath.ActionRecirc:
				recirc = a.RecircID
			}
		}
		if pass == 2 {
			if s := as.String(); !strings.HasSuffix(s, ",2") {
				b.Fatalf("third pass: actions %q, want an output to 2", s)
			}
			break
		}
		if recirc == 0 {
			b.Fatalf("pass %d: actions %q recirculate nothing", pass+1, as.String())
		}
		k.RecircID, k.CtZone, k.CtState = recirc, zone, conntrack.StateNew|conntrack.StateTracked
	}
	return d
}

func ovnStatefulFrame() []byte {
	return dptest.Frame{Src: dptest.MAC("50:54:00:00:00:01"), Dst: dptest.MAC("50:54:00:00:00:02"),
		IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
		ICMP: &dptest.ICMP{Type: 8}}.Bytes()
}

// BenchmarkOVNStatefulUpcalls translates the three passes of a first
// ICMP packet through OVN's stateful logical switch pipeline
// (ovnStatefulBridge), as the ovnpipe bench's "+ct first packet" does
// for each direction: the translations alone, caches warm.
func BenchmarkOVNStatefulUpcalls(b *testing.B) {
	tb := ovnStatefulBridge(b)
	frame := ovnStatefulFrame()
	u := make([]datapath.Upcall, 1)
	acts := make(datapath.Actions, 0, 16)
	var sum [3]time.Duration
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		d := ovnStatefulPasses(b, tb, frame, u, acts)
		for i := range d {
			sum[i] += d[i]
		}
		n++
	}
	for i, name := range []string{"pass1-ns", "pass2-ns", "pass3-ns"} {
		b.ReportMetric(float64(sum[i].Nanoseconds())/float64(n), name)
	}
}

// BenchmarkOVNStatefulUpcallsCold is BenchmarkOVNStatefulUpcalls with
// the caches evicted (64 MiB written) before each packet's three passes,
// as a first packet finds them after the machine did other things; its
// figures are each pass's median (the eviction is in ns/op).
func BenchmarkOVNStatefulUpcallsCold(b *testing.B) {
	tb := ovnStatefulBridge(b)
	frame := ovnStatefulFrame()
	u := make([]datapath.Upcall, 1)
	acts := make(datapath.Actions, 0, 16)
	evict := make([]byte, 64<<20)
	var each [3][]time.Duration
	for b.Loop() {
		for i := 0; i < len(evict); i += 64 {
			evict[i]++
		}
		d := ovnStatefulPasses(b, tb, frame, u, acts)
		for i := range d {
			each[i] = append(each[i], d[i])
		}
	}
	for i, name := range []string{"cold-pass1-p50-ns", "cold-pass2-p50-ns", "cold-pass3-p50-ns"} {
		slices.Sort(each[i])
		b.ReportMetric(float64(each[i][len(each[i])/2].Nanoseconds()), name)
	}
}
