package ofproto

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
)

var all6 = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// The masks NORMAL's decisions produce are OVS 3.1's (checked against
// `ovs-appctl dpctl/dump-flows -m` of the same packets): a MAC-learning or
// flooding decision consults the input port, both addresses, the type,
// the VLAN's VID and presence and, for IP, the fragment bits, and nothing
// of L3 or L4; a pop consults the whole tag; a broadcast ARP its opcode
// (and, for a request, its addresses).
func TestNormalMasks(t *testing.T) {
	tb := newTestBacker(t)
	tb.bridge("br0", BridgeConfig{Ports: []PortConfig{
		trunk("p1", 1), trunk("p2", 2), access("a10", 3, 10), trunk("t10", 4, 10),
	}})
	tb.xlate(2, eth(macB, bcast))          // B on p2, VLAN 0
	tb.xlate(3, eth(macC, bcast))          // C on a10, VLAN 10
	tb.xlate(4, eth(macD, bcast, tag(10))) // D on t10, VLAN 10

	base := flow.Mask{InPort: ^uint32(0), EthSrc: all6, EthDst: all6, EthType: 0xffff, VLANTCI: 0x1fff}
	ipBase := base
	ipBase.NwFrag = flow.FragAny | flow.FragLater
	with := func(m flow.Mask, f func(*flow.Mask)) flow.Mask { f(&m); return m }
	popped := func(m *flow.Mask) { m.VLANTCI, m.VLANTPID = 0xffff, 0xffff }
	ip := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	arp := func(dst string, op uint16) []byte {
		return dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(dst),
			ARP: &dptest.ARP{Op: op, SHA: dptest.MAC(macA), SPA: ip("10.0.0.1"), TPA: ip("10.0.0.2")}}.Bytes()
	}
	for _, tt := range []struct {
		name  string
		in    uint32
		frame []byte
		acts  string
		mask  flow.Mask
	}{
		{"learned unicast", 1, eth(macA, macB), "2", ipBase},
		{"flood", 1, eth(macA, macD), "2", ipBase},
		{"broadcast", 1, eth(macA, bcast), "2", ipBase},
		{"tcp to a learned MAC", 1, dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
			IPv4: &dptest.IPv4{Src: ip("10.0.0.1"), Dst: ip("10.0.0.2")}, TCP: &dptest.TCP{Src: 40000, Dst: 80, Flags: dptest.SYN}}.Bytes(), "2", ipBase},
		{"ipv6", 1, dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
			IPv6: &dptest.IPv6{Src: ip("2001:db8::1"), Dst: ip("2001:db8::2")}, UDP: &dptest.UDP{Src: 1, Dst: 2}}.Bytes(), "2", ipBase},
		{"later fragment", 1, dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
			IPv4: &dptest.IPv4{Src: ip("10.0.0.1"), Dst: ip("10.0.0.2"), Proto: 17, FragOff: 8}, Payload: make([]byte, 20)}.Bytes(), "2", ipBase},
		{"802.3", 1, dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB), EtherType: 100, Payload: make([]byte, 46)}.Bytes(), "2", base},
		{"arp broadcast request", 1, arp(bcast, 1), "2",
			with(base, func(m *flow.Mask) {
				m.NwProto, m.IPv4Src, m.IPv4Dst = 0xff, [4]byte{255, 255, 255, 255}, [4]byte{255, 255, 255, 255}
			})},
		{"arp broadcast reply", 1, arp(bcast, 2), "2", with(base, func(m *flow.Mask) { m.NwProto = 0xff })},
		{"arp unicast", 1, arp(macB, 1), "2", base},
		{"reserved destination", 1, eth(macA, "01:80:c2:00:00:00"), "drop", ipBase},
		{"tagged trunk to trunk", 4, eth(macA, macC, dptest.Tag{VID: 10, PCP: 5}), "pop_vlan,3", with(ipBase, popped)},
		{"tagged trunk to trunk unchanged", 3, eth(macC, macD), "push_vlan(vid=10,pcp=0),4", ipBase},
		{"tagged flood, some untagged", 4, eth(macA, bcast, tag(10)), "1,2,pop_vlan,3", with(ipBase, popped)},
		{"tag kept to a trunk", 1, eth(macA, macD, dptest.Tag{VID: 10, PCP: 5}), "4", ipBase},
		{"priority tag on access", 3, eth(macC, macD, dptest.Tag{PCP: 3}), "pop_vlan,push_vlan(vid=10,pcp=3),4", with(ipBase, popped)},
		{"tagged on access: dropped", 3, eth(macC, macD, tag(10)), "drop", ipBase},
		{"VLAN not trunked: dropped", 4, eth(macD, bcast, tag(20)), "drop", ipBase},
		{"unknown input port", 9, eth(macA, macB), "drop",
			flow.Mask{InPort: ^uint32(0), EthType: 0xffff, NwFrag: flow.FragAny | flow.FragLater}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			acts, m := tb.xlate(tt.in, tt.frame)
			if acts != tt.acts {
				t.Errorf("actions %s, want %s", acts, tt.acts)
			}
			if m != tt.mask {
				var k flow.Key
				flow.Extract(tt.frame, tt.in, &k)
				t.Errorf("mask\n %s\nwant\n %s", flow.FormatODP(&k, &m, flow.ODPFormat{Verbose: true}),
					flow.FormatODP(&k, &tt.mask, flow.ODPFormat{Verbose: true}))
			}
		})
	}
}

// checkNoStale fails unless every installed flow's actions are what its
// key translates to now: nothing is forwarded by a stale translation.
func (r *switchRig) checkNoStale(t *testing.T, what string) {
	t.Helper()
	idx := r.b.idx.Load()
	for _, fi := range r.dp.Flows() {
		u := datapath.Upcall{Key: fi.Key}
		r.b.translate(idx, &u, modeCheck, 0)
		if u.Actions.String() != fi.Actions.String() {
			t.Errorf("%s: flow %s has actions %s, translates to %s", what, fi.Key, fi.Actions, u.Actions)
		}
	}
}

// bridge adds a bridge with a fixed clock (so that revalidation's MAC
// refreshes do not reorder fdb/show) and configures it.
func (r *switchRig) bridge(name string, cfg BridgeConfig) *Bridge {
	br := r.b.AddBridge(name)
	br.clock = func() time.Duration { return time.Hour }
	br.Reconfigure(cfg)
	return br
}

// Every kind of reconfiguration reaches the installed flows before
// Reconfigure returns: no flow keeps a stale translation.
func TestReconfigureRevalidates(t *testing.T) {
	base := []PortConfig{trunk("p1", 1), trunk("p2", 2), access("p3", 3, 10), trunk("p4", 4)}
	for _, tt := range []struct {
		name   string
		change func(r *switchRig, br *Bridge)
	}{
		{"port removed", func(r *switchRig, br *Bridge) { br.Reconfigure(BridgeConfig{Ports: base[:3]}) }},
		{"port added", func(r *switchRig, br *Bridge) {
			br.Reconfigure(BridgeConfig{Ports: append(base[:4:4], trunk("p5", 5))})
		}},
		{"access VLAN changed", func(r *switchRig, br *Bridge) {
			br.Reconfigure(BridgeConfig{Ports: []PortConfig{base[0], base[1], access("p3", 3, 20), base[3]}})
		}},
		{"trunk became access", func(r *switchRig, br *Bridge) {
			br.Reconfigure(BridgeConfig{Ports: []PortConfig{base[0], access("p2", 2, 10), base[2], base[3]}})
		}},
		{"trunks restricted", func(r *switchRig, br *Bridge) {
			br.Reconfigure(BridgeConfig{Ports: []PortConfig{base[0], base[1], base[2], trunk("p4", 4, 20)}})
		}},
		{"forward-bpdu", func(r *switchRig, br *Bridge) { br.Reconfigure(BridgeConfig{ForwardBPDU: true, Ports: base}) }},
		{"fdb flush", func(r *switchRig, br *Bridge) { br.FDBFlush(); r.dp.Revalidate() }},
		{"bridge deleted", func(r *switchRig, br *Bridge) { r.b.DelBridge("br0") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newSwitchRig(t, 5)
			br := r.bridge("br0", BridgeConfig{Ports: base})
			for in, src := range map[uint32]string{1: macA, 2: macB, 3: macC, 4: macD} {
				r.send(t, in, eth(src, bcast), eth(src, bcast, tag(10)))
			}
			// Unicast, flood and reserved-address flows, tagged and not.
			for in, src := range map[uint32]string{1: macA, 2: macB, 4: macD} {
				for _, dst := range []string{macA, macB, macC, macD, "00:00:00:00:00:99", "01:80:c2:00:00:00"} {
					r.send(t, in, eth(src, dst), eth(src, dst), eth(src, dst, tag(10)), eth(src, dst, tag(10)))
				}
			}
			r.send(t, 3, eth(macC, macA), eth(macC, macA), eth(macC, macD), eth(macC, "00:00:00:00:00:99"))
			if r.dp.Stats().Flows < 20 {
				t.Fatalf("only %d flows installed", r.dp.Stats().Flows)
			}
			r.checkNoStale(t, "before")
			tt.change(r, br)
			r.checkNoStale(t, "after")
		})
	}
}

// A MAC that moves is forwarded to its new port after one revalidation,
// without a miss of the flows that forward to it; the stale flow of its
// old port does not move it back.
func TestMACMoveRevalidation(t *testing.T) {
	r := newSwitchRig(t, 3)
	br := r.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}})
	seen := map[uint32]int{}
	r.send(t, 1, eth(macA, bcast), eth(macA, macB), eth(macA, macB))
	r.send(t, 2, eth(macB, macA), eth(macB, macA))
	r.expect(t, "before the move", map[uint32][][]byte{
		1: {eth(macB, macA), eth(macB, macA)},
		2: {eth(macA, bcast), eth(macA, macB), eth(macA, macB)},
		3: {eth(macA, bcast), eth(macA, macB), eth(macA, macB)},
	}, seen)
	missed := r.dp.Stats().Missed

	// A moves to p3.
	r.send(t, 3, eth(macA, bcast))
	r.dp.Revalidate()
	r.send(t, 2, eth(macB, macA))
	r.expect(t, "after the move", map[uint32][][]byte{
		1: {eth(macA, bcast)},
		2: {eth(macA, bcast)},
		3: {eth(macB, macA)},
	}, seen)
	if m := r.dp.Stats().Missed; m != missed+1 {
		t.Errorf("%d misses after the move, want 1 (the move itself)", m-missed)
	}
	if fdb := br.FDBShow(); !strings.Contains(fdb, "    3     0  00:00:00:00:00:0a") {
		t.Errorf("A not on p3:\n%s", fdb)
	}
	r.checkNoStale(t, "after the move")
}

// A MAC learned or moved by a packet is reflected in installed flows by
// the revalidator goroutine on its own.
func TestMACChangeAsyncRevalidation(t *testing.T) {
	r := newSwitchRig(t, 3)
	r.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}})
	r.send(t, 1, eth(macA, macB), eth(macA, macB)) // floods: B unknown
	r.send(t, 2, eth(macB, macA))                  // B learned
	dptest.Eventually(t, "the flood flow to become unicast", func() bool {
		for _, fi := range r.dp.Flows() {
			if fi.Key.InPort == 1 && fi.Actions.String() == "2" {
				return true
			}
		}
		return false
	})
}

// An expired MAC turns its unicast flows back into floods within a
// revalidation.
func TestMACExpiryRevalidation(t *testing.T) {
	r := newSwitchRig(t, 3)
	br := r.b.AddBridge("br0")
	clock := &fakeClock{}
	br.clock = clock.now
	br.Reconfigure(BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3)}})
	r.send(t, 2, eth(macB, bcast))
	r.send(t, 1, eth(macA, macB), eth(macA, macB))
	if fl := r.dp.Flows(); len(fl) != 2 {
		t.Fatalf("flows %+v", fl)
	}
	clock.advance(DefaultMACAgingTime * time.Second)
	r.b.Run()
	r.dp.Revalidate()
	for _, fi := range r.dp.Flows() {
		if fi.Key.InPort == 1 && fi.Actions.String() != "2,3" {
			t.Errorf("A->B flow %s after B expired, want a flood", fi.Actions)
		}
	}
}

// Many connections between two hosts are one megaflow each way, shown by
// dpctl/dump-flows and dpif/dump-flows as OVS 3.1 shows them.
func TestMegaflowDump(t *testing.T) {
	r := newSwitchRig(t, 3)
	r.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), access("p3", 3, 10)}})
	r.bridge("br1", BridgeConfig{})
	ip := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	conn := func(src, dst string, sport, dport uint16) []byte {
		return dptest.Frame{Src: dptest.MAC(src), Dst: dptest.MAC(dst),
			IPv4: &dptest.IPv4{Src: ip("10.0.0.1"), Dst: ip("10.0.0.2")},
			TCP:  &dptest.TCP{Src: sport, Dst: dport, Flags: dptest.ACK}}.Bytes()
	}
	r.send(t, 2, eth(macB, bcast))
	var frames [][]byte
	for i := range 100 {
		frames = append(frames, conn(macA, macB, uint16(40000+i), 80))
	}
	r.send(t, 1, frames...)
	r.send(t, 3, eth(macC, bcast, dptest.Tag{PCP: 2}))
	if s := r.dp.Stats(); s.Missed != 3 || s.Flows != 3 {
		t.Errorf("stats %+v: want 3 misses and flows for 101 packets", s)
	}
	out, err := r.dp.DumpFlowsCommand(nil)
	if err != nil {
		t.Fatal(err)
	}
	used := regexp.MustCompile(`used:(never|[0-9.]+s)`)
	out = used.ReplaceAllString(out, "used:X")
	for _, want := range []string{
		"flow-dump from pmd on cpu core: 1\n" +
			"recirc_id(0),in_port(1),packet_type(ns=0,id=0),eth(src=00:00:00:00:00:0a,dst=00:00:00:00:00:0b),eth_type(0x0800),ipv4(frag=no), packets:99, bytes:5346, used:X, flags:., actions:2\n",
		"flow-dump from pmd on cpu core: 2\n" +
			"recirc_id(0),in_port(2),packet_type(ns=0,id=0),eth(src=00:00:00:00:00:0b,dst=ff:ff:ff:ff:ff:ff),eth_type(0x0800),ipv4(frag=no), packets:0, bytes:0, used:X, actions:1\n",
		"flow-dump from pmd on cpu core: 3\n" +
			"recirc_id(0),in_port(3),packet_type(ns=0,id=0),eth(src=00:00:00:00:00:0c,dst=ff:ff:ff:ff:ff:ff),eth_type(0x8100),vlan(vid=0,pcp=2),encap(eth_type(0x0800),ipv4(frag=no)), packets:0, bytes:0, used:X, actions:pop_vlan,push_vlan(vid=10,pcp=2),1,2\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dpctl/dump-flows lacks\n%s\nin\n%s", want, out)
		}
	}
	out, err = r.b.DumpFlowsCommand([]string{"-m", "br0"})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "\n"); n != 3 || !strings.Contains(out, "in_port(p1),packet_type(ns=0,id=0),eth(src=00:00:00:00:00:0a,dst=00:00:00:00:00:0b),eth_type(0x0800),"+
		"ipv4(src=10.0.0.1/0.0.0.0,dst=10.0.0.2/0.0.0.0,proto=6/0,tos=0/0,ttl=64/0,frag=no),tcp(src=40000/0,dst=80/0),tcp_flags(0/0), packets:99") ||
		!regexp.MustCompile(`(?m)^ufid:[0-9a-f-]{36} skb_priority`).MatchString(out) {
		t.Errorf("dpif/dump-flows -m br0:\n%s", out)
	}
	if out, _ := r.b.DumpFlowsCommand([]string{"br1"}); out != "" {
		t.Errorf("dpif/dump-flows br1: %q", out)
	}
	if _, err := r.b.DumpFlowsCommand([]string{"nobr"}); err == nil || err.Error() != "no such bridge" {
		t.Errorf("unknown bridge: %v", err)
	}
}

// BenchmarkFlowSetupNormal is the flow setup rate through the NORMAL
// pipeline with megaflows disabled, so that every new connection (a new
// UDP source port) is a new flow: upcall, translation, install.
func BenchmarkFlowSetupNormal(b *testing.B) {
	dp := datapath.New(nil)
	defer dp.Close()
	dp.SetMegaflows(false)
	back := NewBacker(dp, nil)
	br := back.AddBridge("br0")
	var ports []PortConfig
	for i := uint32(1); i <= 4; i++ {
		ports = append(ports, trunk(fmt.Sprintf("p%d", i), i))
	}
	br.Reconfigure(BridgeConfig{Ports: ports})
	u := make([]datapath.Upcall, 32)
	buf := make([]datapath.Actions, 32)
	for i := range buf {
		buf[i] = make(datapath.Actions, 0, 16)
	}
	frame := eth(macA, macB)
	var k flow.Key
	flow.Extract(frame, 1, &k)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for i := range u {
			k.TpSrc = uint16(n)
			n++
			u[i] = datapath.Upcall{Key: k, Actions: buf[i][:0]}
		}
		back.Upcall(u)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "xlates/s")
}
