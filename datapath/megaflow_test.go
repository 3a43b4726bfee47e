package datapath

import (
	"bytes"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
)

// progUpcaller translates by a function the test can change, and counts
// its calls.
type progUpcaller struct {
	mu sync.Mutex // guards fn
	fn func(k *flow.Key) (Actions, flow.Mask)

	upcalls, keys, revals, refreshes, runs atomic.Int64
}

func newProg(fn func(k *flow.Key) (Actions, flow.Mask)) *progUpcaller { return &progUpcaller{fn: fn} }

func (p *progUpcaller) set(fn func(k *flow.Key) (Actions, flow.Mask)) {
	p.mu.Lock()
	p.fn = fn
	p.mu.Unlock()
}

func (p *progUpcaller) do(batch []Upcall) {
	p.mu.Lock()
	fn := p.fn
	p.mu.Unlock()
	for i := range batch {
		acts, m := fn(&batch[i].Key)
		batch[i].Actions = append(batch[i].Actions, acts...)
		batch[i].Mask = m
	}
}

func (p *progUpcaller) Upcall(batch []Upcall) {
	p.upcalls.Add(1)
	p.keys.Add(int64(len(batch)))
	p.do(batch)
}

func (p *progUpcaller) Revalidate(batch []Upcall) {
	p.revals.Add(int64(len(batch)))
	for i := range batch {
		if batch[i].Used {
			p.refreshes.Add(1)
		}
	}
	p.do(batch)
}

func (p *progUpcaller) Run() { p.runs.Add(1) }

// macMask is what a MAC-learning decision consults.
var macMask = flow.Mask{InPort: ^uint32(0), RecircID: ^uint32(0), EthType: 0xffff,
	EthSrc: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, EthDst: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}

func to(acts ...Action) func(*flow.Key) (Actions, flow.Mask) {
	return func(*flow.Key) (Actions, flow.Mask) { return acts, macMask }
}

// udp is a frame from 00:..:01 to 00:..:02 with UDP source port sport.
func udp(sport uint16) []byte {
	return dptest.Frame{
		Src: dptest.MAC("00:00:00:00:00:01"), Dst: dptest.MAC("00:00:00:00:00:02"),
		IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
		UDP:  &dptest.UDP{Src: sport, Dst: 53}, Payload: []byte("payload"),
	}.Bytes()
}

// One miss installs a megaflow that serves every later packet that agrees
// on the consulted fields, whatever its other fields.
func TestMegaflowServesManyKeys(t *testing.T) {
	r := newRig(t, 2)
	u := newProg(to(Output(2)))
	r.dp.SetUpcall(u)
	var frames [][]byte
	for i := range 20 {
		frames = append(frames, udp(uint16(1000+i)))
	}
	r.ports[1].Inject(frames[0])
	r.rxDone(t, 1, 1)
	r.ports[1].Inject(frames[1:]...)
	r.rxDone(t, 1, 20)
	if n := u.keys.Load(); n != 1 {
		t.Errorf("%d keys translated, want 1", n)
	}
	if n := r.ports[2].NumSent(); n != 20 {
		t.Errorf("sent %d, want 20", n)
	}
	s := r.dp.Stats()
	if s.Flows != 1 || s.Missed != 1 || s.Hit != 19 {
		t.Errorf("stats %+v, want 1 flow, 1 miss, 19 hits", s)
	}
	fl := r.dp.Flows()
	if len(fl) != 1 || fl[0].Packets != 19 || fl[0].Bytes != 19*uint64(len(frames[0])) || !fl[0].Ever || fl[0].Mask != macMask {
		t.Errorf("flows %+v", fl)
	}
}

// Misses of one batch are translated together, one upcall per distinct
// key; keys that the first installed megaflow covers use it.
func TestBatchedUpcall(t *testing.T) {
	r := newRig(t, 2)
	u := newProg(to(Output(2)))
	r.dp.SetUpcall(u)
	r.ports[1].Inject(udp(1), udp(2), udp(1), udp(3), udp(2))
	r.rxDone(t, 1, 5)
	if n, k := u.upcalls.Load(), u.keys.Load(); n != 1 || k != 3 {
		t.Errorf("%d upcalls of %d keys, want 1 of 3", n, k)
	}
	// The first key's flow covers the others: one miss, four hits, and
	// the flow counts all packets but the one that installed it.
	if s := r.dp.Stats(); s.Flows != 1 || s.Missed != 1 || s.Hit != 4 {
		t.Errorf("stats %+v, want 1 flow, 1 missed, 4 hits", s)
	}
	if fl := r.dp.Flows(); len(fl) != 1 || fl[0].Packets != 4 {
		t.Errorf("flows %+v", fl)
	}
}

// A batch is executed flow by flow on sub-batches; each flow's packets
// keep their order, and each flow's actions apply to its packets only.
func TestSubBatchOrder(t *testing.T) {
	r := newRig(t, 3)
	r.dp.SetUpcall(newProg(func(k *flow.Key) (Actions, flow.Mask) {
		m := macMask
		m.TpSrc = 0xffff
		if k.TpSrc%2 == 0 {
			return Actions{Output(2)}, m
		}
		return Actions{Output(3), PushVLAN(0, 7), Output(2)}, m
	}))
	var frames [][]byte
	for i := range 30 {
		f := udp(uint16(i % 4))
		f[len(f)-1] = byte(i) // payload tells the packets apart
		frames = append(frames, f)
	}
	r.ports[1].Inject(frames...)
	r.rxDone(t, 1, 30)
	// Each port gets each flow's packets in order; the flows come in the
	// order of their first packet: sport 0, 1, 2, 3.
	var want2, want3 [][]byte
	for sport := range 4 {
		for i, f := range frames {
			if i%4 != sport {
				continue
			}
			if sport%2 == 1 {
				want3 = append(want3, f)
				tagged := slices.Clone(f[:12])
				tagged = append(tagged, 0x81, 0, 0, 7)
				f = append(tagged, f[12:]...)
			}
			want2 = append(want2, f)
		}
	}
	check := func(no uint32, want [][]byte) {
		got := r.ports[no].Sent()
		if len(got) != len(want) {
			t.Fatalf("port %d: %d frames, want %d", no, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("port %d frame %d:\n got %x\nwant %x", no, i, got[i], want[i])
			}
		}
	}
	check(3, want3)
	check(2, want2)
}

// A change of translation reaches installed flows through revalidation:
// changed actions are replaced in place (no new upcall), a flow whose
// translation now needs a finer match is removed, and an exact-match cache
// entry of a removed flow is never used again.
func TestRevalidate(t *testing.T) {
	r := newRig(t, 3)
	u := newProg(to(Output(2)))
	r.dp.SetUpcall(u)
	r.ports[1].Inject(udp(1), udp(1))
	r.rxDone(t, 1, 2)

	u.set(to(Output(3)))
	r.dp.Revalidate()
	r.ports[1].Inject(udp(1), udp(2))
	r.rxDone(t, 1, 4)
	if n := u.upcalls.Load(); n != 1 {
		t.Errorf("%d upcalls, want 1: revalidation replaces actions in place", n)
	}
	if n2, n3 := r.ports[2].NumSent(), r.ports[3].NumSent(); n2 != 2 || n3 != 2 {
		t.Errorf("sent %d to 2 and %d to 3, want 2 and 2", n2, n3)
	}
	if fl := r.dp.Flows(); len(fl) != 1 || fl[0].Actions.String() != "3" {
		t.Errorf("flows %+v", fl)
	}

	// Now the translation reads the UDP port: the flow is too coarse.
	u.set(func(k *flow.Key) (Actions, flow.Mask) {
		m := macMask
		m.TpSrc = 0xffff
		return Actions{Output(2)}, m
	})
	r.dp.Revalidate()
	if s := r.dp.Stats(); s.Flows != 0 {
		t.Fatalf("%d flows after a revalidation that needs finer masks, want 0", s.Flows)
	}
	r.ports[1].Inject(udp(1))
	r.rxDone(t, 1, 5)
	if n := u.upcalls.Load(); n != 2 {
		t.Errorf("%d upcalls, want 2: a removed flow's cache entry must miss", n)
	}
	if n := r.ports[2].NumSent(); n != 3 {
		t.Errorf("sent %d to 2, want 3", n)
	}
}

// RequestRevalidation is served by the revalidator goroutine, soon.
func TestRequestRevalidation(t *testing.T) {
	r := newRig(t, 3)
	u := newProg(to(Output(2)))
	r.dp.SetUpcall(u)
	r.ports[1].Inject(udp(1))
	r.rxDone(t, 1, 1)
	u.set(to(Output(3)))
	r.dp.RequestRevalidation()
	dptest.Eventually(t, "revalidation", func() bool {
		fl := r.dp.Flows()
		return len(fl) == 1 && fl[0].Actions.String() == "3"
	})
	if u.runs.Load() == 0 {
		t.Error("Run not called before the pass")
	}
}

// Flows idle for max-idle go; used ones stay, and are pushed to the
// upcaller as used. The clock is the test's: no sleeps.
func TestIdleExpiry(t *testing.T) {
	var now atomic.Int64
	r := newRigClock(t, 2, now.Load)
	r.dp.SetMaxIdle(10 * time.Second)
	u := newProg(func(k *flow.Key) (Actions, flow.Mask) {
		m := macMask
		m.TpSrc = 0xffff
		return Actions{Output(2)}, m
	})
	r.dp.SetUpcall(u)
	now.Store(int64(time.Second))
	r.ports[1].Inject(udp(1), udp(2))
	r.rxDone(t, 1, 2)
	if s := r.dp.Stats(); s.Flows != 2 {
		t.Fatalf("%d flows", s.Flows)
	}
	now.Add(int64(9 * time.Second))
	r.ports[1].Inject(udp(1)) // used at 10 s
	r.rxDone(t, 1, 3)
	r.dp.Revalidate()
	if s := r.dp.Stats(); s.Flows != 2 {
		t.Fatalf("%d flows after 9 s idle, want 2", s.Flows)
	}
	if n := u.refreshes.Load(); n != 1 {
		t.Errorf("%d flows revalidated as used, want 1", n)
	}
	now.Add(int64(time.Second)) // flow 2 created at 1 s, never used: 10 s idle
	r.dp.Revalidate()
	fl := r.dp.Flows()
	if len(fl) != 1 || fl[0].Key.TpSrc != 1 {
		t.Fatalf("flows %+v, want only sport 1's", fl)
	}
	now.Add(int64(10 * time.Second))
	r.dp.Revalidate()
	if s := r.dp.Stats(); s.Flows != 0 {
		t.Fatalf("%d flows after max-idle", s.Flows)
	}
	r.ports[1].Inject(udp(1))
	r.rxDone(t, 1, 4)
	if n := u.keys.Load(); n != 3 {
		t.Errorf("%d keys translated, want 3: an expired flow's cache entry must miss", n)
	}
}

// At the flow limit misses are translated and executed but not installed;
// a raised limit installs them again, and a table over a lowered limit
// ages out fast.
func TestFlowLimit(t *testing.T) {
	var now atomic.Int64
	r := newRigClock(t, 2, now.Load)
	r.dp.SetFlowLimit(2)
	u := newProg(func(k *flow.Key) (Actions, flow.Mask) { return Actions{Output(2)}, flow.Exact() })
	r.dp.SetUpcall(u)
	r.ports[1].Inject(udp(1), udp(2), udp(3), udp(4))
	r.rxDone(t, 1, 4)
	if s := r.dp.Stats(); s.Flows != 2 || s.Missed != 4 {
		t.Fatalf("stats %+v, want 2 flows, 4 missed", s)
	}
	r.ports[1].Inject(udp(1), udp(2), udp(3), udp(4))
	r.rxDone(t, 1, 8)
	if s := r.dp.Stats(); s.Flows != 2 || s.Missed != 6 || s.Hit != 2 {
		t.Fatalf("stats %+v, want 2 flows, 6 missed, 2 hits", s)
	}
	if n := r.ports[2].NumSent(); n != 8 {
		t.Errorf("sent %d, want all 8", n)
	}
	r.dp.SetFlowLimit(10)
	r.ports[1].Inject(udp(3), udp(4))
	r.rxDone(t, 1, 10)
	if s := r.dp.Stats(); s.Flows != 4 {
		t.Fatalf("%d flows after raising the limit, want 4", s.Flows)
	}
	r.dp.SetFlowLimit(1)
	now.Add(int64(overLimitIdle))
	r.dp.Revalidate()
	if s := r.dp.Stats(); s.Flows != 0 {
		t.Errorf("%d flows over a lowered limit after 100 ms idle, want 0", s.Flows)
	}
	if us := r.dp.UpcallStats(); us.Limit != 1 || us.MaxFlows != 4 {
		t.Errorf("upcall stats %+v", us)
	}
}

// DelPort kills the port's flows; other ports' flows stop outputting to it
// at once and output to a port re-added under the same number without
// being translated again.
func TestPortChangesReResolve(t *testing.T) {
	r := newRig(t, 3)
	u := newProg(func(k *flow.Key) (Actions, flow.Mask) {
		if k.InPort == 1 {
			return Actions{Output(2), Output(3)}, macMask
		}
		return Actions{Output(1)}, macMask
	})
	r.dp.SetUpcall(u)
	r.ports[1].Inject(udp(1))
	r.ports[3].Inject(udp(1))
	r.rxDone(t, 1, 1)
	r.rxDone(t, 3, 1)
	if s := r.dp.Stats(); s.Flows != 2 {
		t.Fatalf("%d flows", s.Flows)
	}
	if err := r.dp.DelPort(3); err != nil {
		t.Fatal(err)
	}
	if s := r.dp.Stats(); s.Flows != 1 {
		t.Errorf("%d flows after DelPort, want the removed port's flow gone", s.Flows)
	}
	r.ports[1].Inject(udp(1))
	r.rxDone(t, 1, 2)
	if n := r.ports[3].NumSent(); n != 1 {
		t.Errorf("removed port got %d frames, want 1 (before DelPort)", n)
	}
	r.ports[3].Close()
	p := dptest.NewPort("p3b")
	defer p.Close()
	if err := r.dp.AddPort(3, p); err != nil {
		t.Fatal(err)
	}
	r.ports[1].Inject(udp(1))
	r.rxDone(t, 1, 3)
	if n := p.NumSent(); n != 1 {
		t.Errorf("re-added port got %d frames, want 1", n)
	}
	if n := u.keys.Load(); n != 2 {
		t.Errorf("%d translations, want 2", n)
	}
}

// Frames that are malformed in every way the extractor knows are counted
// and forwarded or dropped, never a panic.
func TestMalformedFrames(t *testing.T) {
	r := newRig(t, 2)
	r.dp.SetUpcall(newProg(func(k *flow.Key) (Actions, flow.Mask) { return Actions{PopVLAN(), Output(2)}, flow.Exact() }))
	good := udp(1)
	var frames [][]byte
	frames = append(frames, nil, good[:1], good[:13], good[:14], good[:15], good[:20], good[:33], good[:40])
	badIHL := slices.Clone(good)
	badIHL[14] = 0x4f
	zeroIHL := slices.Clone(good)
	zeroIHL[14] = 0x40
	frames = append(frames, badIHL, zeroIHL)
	// Tags on tags, a tag cut short, and a TPID with nothing after it.
	stack := slices.Clone(good[:12])
	for range 20 {
		stack = append(stack, 0x88, 0xa8, 0, 1)
	}
	stack = append(stack, good[12:]...)
	frames = append(frames, stack, append(slices.Clone(good[:12]), 0x81, 0x00), append(slices.Clone(good[:12]), 0x81, 0x00, 0x00))
	r.ports[1].Inject(frames...)
	r.rxDone(t, 1, uint64(len(frames)))
	if pi := r.dp.Ports(); pi[0].Stats.RxErrors != 3 {
		t.Errorf("rx errors %d, want the 3 runts", pi[0].Stats.RxErrors)
	}
}

var flowLine = regexp.MustCompile(`^(ufid:[0-9a-f-]{36}, )?(\S+), packets:(\d+), bytes:(\d+), used:(never|\d+\.\d{3}s)(, flags:[SFPRU.ECN]+)?(, dp:ovs)?, actions:(\S+?)(, dp-extra-info:miniflow_bits\(\d+,\d+\))?$`)

// dpctl/dump-flows output is OVS's: a header per thread, then a line per
// flow that a parser of OVS's output reads back.
func TestDumpFlowsCommand(t *testing.T) {
	var now atomic.Int64
	r := newRigClock(t, 2, now.Load)
	r.dp.SetUpcall(newProg(to(Output(2))))
	now.Store(int64(time.Second))
	tcp := func(flags uint16) []byte {
		return dptest.Frame{Src: dptest.MAC("00:00:00:00:00:0a"), Dst: dptest.MAC("00:00:00:00:00:0b"),
			IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
			TCP:  &dptest.TCP{Src: 1, Dst: 2, Flags: flags}}.Bytes()
	}
	r.ports[1].Inject(udp(1), tcp(dptest.SYN), tcp(dptest.SYN|dptest.ACK), tcp(dptest.FIN|dptest.ACK))
	r.rxDone(t, 1, 4)
	now.Add(int64(1500 * time.Millisecond))

	out, err := r.dp.DumpFlowsCommand(nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || lines[0] != "flow-dump from pmd on cpu core: 1" {
		t.Fatalf("dump:\n%s", out)
	}
	got := map[string][]string{}
	for _, l := range lines[1:] {
		m := flowLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("unparsable line %q", l)
		}
		got[m[2]] = m
	}
	udpFlow := got["recirc_id(0),in_port(1),packet_type(ns=0,id=0),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800)"]
	tcpFlow := got["recirc_id(0),in_port(1),packet_type(ns=0,id=0),eth(src=00:00:00:00:00:0a,dst=00:00:00:00:00:0b),eth_type(0x0800)"]
	if udpFlow == nil || udpFlow[3] != "0" || udpFlow[5] != "never" || udpFlow[8] != "2" {
		t.Errorf("udp flow %q", udpFlow)
	}
	tcpLen := strconv.Itoa(2 * len(tcp(0)))
	if tcpFlow == nil || tcpFlow[3] != "2" || tcpFlow[4] != tcpLen || tcpFlow[5] != "1.500s" || tcpFlow[6] != ", flags:SF." {
		t.Errorf("tcp flow %q", tcpFlow)
	}

	out, err = r.dp.DumpFlowsCommand([]string{"-m", Name})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n")[1:] {
		m := flowLine.FindStringSubmatch(l)
		if m == nil || m[1] == "" || m[7] == "" || m[9] == "" || !strings.Contains(l, "in_port(p1)") || m[8] != "p2" {
			t.Errorf("verbose line %q", l)
		}
	}
	if out, _ := r.dp.DumpFlowsCommand([]string{"pmd=2"}); out != "" {
		t.Errorf("pmd=2: %q", out)
	}
	for _, args := range [][]string{{"system@ovs-system"}, {"-x"}, {"filter=tcp"}} {
		if _, err := r.dp.DumpFlowsCommand(args); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	if _, err := r.dp.DumpFlowsCommand([]string{"system@ovs-system"}); err.Error() != "ovs-vswitchd: datapath not found (Invalid argument)" {
		t.Errorf("unknown datapath: %v", err)
	}

	// get-flow: each flow by its UFID, as dump-flows shows it; OVS's
	// texts for the rest (Debian's ovs-vswitchd 3.1).
	plain := map[string]bool{}
	for _, l := range lines[1:] {
		plain[l+"\n"] = true
	}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n")[1:] {
		ufid, _, _ := strings.Cut(l, ", ")
		got, err := r.dp.GetFlowCommand([]string{ufid})
		if err != nil || !plain[got] {
			t.Errorf("get-flow %s: %q %v, want one of %q", ufid, got, err, lines[1:])
		}
		delete(plain, got) // each UFID its own flow
		if got, err := r.dp.GetFlowCommand([]string{"-m", Name, ufid}); err != nil || got != l+"\n" {
			t.Errorf("get-flow -m %s:\n got %q %v\nwant %q", ufid, got, err, l)
		}
		upper := "ufid:" + strings.ToUpper(strings.TrimPrefix(ufid, "ufid:"))
		if got, err := r.dp.GetFlowCommand([]string{"-m", upper}); err != nil || got != l+"\n" {
			t.Errorf("get-flow -m %s: %q %v", upper, got, err)
		}
	}
	for _, tc := range []struct {
		args     []string
		out, err string
	}{
		{[]string{"ufid:00000000-0000-0000-0000-000000000001"}, "", "ovs-vswitchd: getting flow (No such file or directory)"},
		{[]string{"ufid:xyz"}, "ovs-vswitchd: parsing flow ufid (Invalid argument)\n", ""},
		{[]string{"ufid:0000000g-0000-0000-0000-000000000001"}, "ovs-vswitchd: parsing flow ufid (Invalid argument)\n", ""},
		{[]string{"1234"}, "ovs-vswitchd: parsing flow ufid\n", ""},
		{[]string{"-m"}, "ovs-vswitchd: parsing flow ufid\n", ""},
		{[]string{"foo@bar", "ufid:00000000-0000-0000-0000-000000000001"}, "", "ovs-vswitchd: datapath not found (Invalid argument)"},
		{[]string{"-x", "1234"}, "", "Unrecognized option -x"},
	} {
		out, err := r.dp.GetFlowCommand(tc.args)
		if e := fmt.Sprint(err); out != tc.out || tc.err == "" && err != nil || tc.err != "" && e != tc.err {
			t.Errorf("get-flow %q: %q %v, want %q %q", tc.args, out, err, tc.out, tc.err)
		}
	}

	if out, err := r.dp.DelFlowsCommand(nil); out != "" || err != nil || r.dp.Stats().Flows != 0 {
		t.Errorf("del-flows: %q %v", out, err)
	}
	if out, _ := r.dp.DumpFlowsCommand(nil); out != "" {
		t.Errorf("dump after del-flows: %q", out)
	}
	if out, _ := r.dp.DelFlowsCommand([]string{"/nonexistent"}); out != "ovs-vswitchd: Opening file \"/nonexistent\" failed (No such file or directory)\n" {
		t.Errorf("del-flows file: %q", out)
	}
}

func TestPMDStatsAndUpcallShow(t *testing.T) {
	r := newRig(t, 2)
	r.dp.SetUpcall(newProg(to(Output(2))))
	r.ports[1].Inject(udp(1), udp(2), make([]byte, 5))
	r.rxDone(t, 1, 3)
	r.ports[1].Inject(udp(1), udp(3))
	r.rxDone(t, 1, 5)

	out, err := r.dp.PMDStatsShowCommand(nil)
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(out, "pmd thread numa_id 0 core_id ")
	if len(blocks) != 3 || !strings.HasPrefix(blocks[1], "1:\n") || !strings.HasPrefix(blocks[2], "2:\n") {
		t.Fatalf("pmd-stats-show:\n%s", out)
	}
	vals := map[string]string{}
	for _, l := range strings.Split(blocks[1], "\n")[1:] {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), ": "); ok {
			vals[k] = v
		}
	}
	want := map[string]string{
		"packets received": "5", "packet recirculations": "0", "avg. datapath passes per packet": "1.00",
		"emc hits": "1", "megaflow hits": "2", "avg. subtable lookups per megaflow hit": "1.00",
		"miss with success upcall": "1", "miss with failed upcall": "0", "avg. packets per output batch": "2.00",
	}
	for k, v := range want {
		if vals[k] != v {
			t.Errorf("%s: %q, want %q", k, vals[k], v)
		}
	}
	for _, k := range []string{"idle cycles", "processing cycles", "avg cycles per packet", "avg processing cycles per packet"} {
		if vals[k] == "" {
			t.Errorf("no %s", k)
		}
	}
	if out, _ := r.dp.PMDStatsShowCommand([]string{"-pmd", "2"}); !strings.HasPrefix(out, "pmd thread numa_id 0 core_id 2:\n  packets received: 0\n") {
		t.Errorf("-pmd 2:\n%s", out)
	}
	if _, err := r.dp.PMDStatsClearCommand(nil); err != nil {
		t.Fatal(err)
	}
	if out, _ := r.dp.PMDStatsShowCommand([]string{"-pmd", "1"}); !strings.Contains(out, "  packets received: 0\n") || !strings.Contains(out, "  emc hits: 0\n") {
		t.Errorf("after clear:\n%s", out)
	}
	if s := r.dp.Stats(); s.Hit != 3 || s.Missed != 1 {
		t.Errorf("datapath stats %+v changed by pmd-stats-clear", s)
	}

	out, _ = r.dp.UpcallShowCommand(nil)
	re := regexp.MustCompile(`^netdev@ovs-netdev:\n  flows         : \(current 1\) \(avg \d+\) \(max \d+\) \(limit 200000\)\n  dump duration : \d+ms\n  ufid enabled : true\n\n  1: \(keys 1\)\n$`)
	if !re.MatchString(out) {
		t.Errorf("upcall/show:\n%s", out)
	}
	if out, _ := r.dp.SetFlowLimitCommand([]string{"5000"}); out != "set flow_limit to 5000\n" || r.dp.FlowLimit() != 5000 {
		t.Errorf("set-flow-limit: %q", out)
	}
	if out, _ := r.dp.DisableMegaflowsCommand(nil); out != "megaflows disabled\n" || r.dp.Stats().Flows != 0 {
		t.Errorf("disable-megaflows: %q", out)
	}
	r.ports[1].Inject(udp(7), udp(8))
	r.rxDone(t, 1, 7)
	if fl := r.dp.Flows(); len(fl) != 2 || fl[0].Mask != flow.Exact() {
		t.Errorf("flows with megaflows disabled: %+v", fl)
	}
}

// The revalidator's pass runs concurrently with forwarding on every port.
func TestRevalidateUnderTraffic(t *testing.T) {
	r := newRig(t, 3)
	var out atomic.Uint32
	out.Store(2)
	r.dp.SetUpcall(newProg(func(k *flow.Key) (Actions, flow.Mask) {
		m := macMask
		m.TpSrc = 0xffff
		return Actions{Output(out.Load())}, m
	}))
	defer r.flood([]uint32{1, 3}, func(i int) []byte { return udp(uint16(i % 64)) })()
	dptest.Eventually(t, "traffic", func() bool { return r.ports[2].NumSent() > 1000 })
	for i := range 20 {
		to := uint32(2 + i%2)
		out.Store(to)
		r.dp.Revalidate()
		base := r.ports[to].NumSent()
		dptest.Eventually(t, fmt.Sprintf("traffic to port %d", to), func() bool { return r.ports[to].NumSent() > base+100 })
	}
}
