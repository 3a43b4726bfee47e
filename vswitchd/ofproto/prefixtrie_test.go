package ofproto

import (
	"fmt"
	"math/rand"
	"net/netip"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

type refPrefix struct {
	p    pval
	plen uint8
}

// refTrieLookup is what OVS's trie_lookup_value answers for a trie of
// prefixes ps, computed from the set: the longest run m of leading bits
// v shares with a prefix, plus one if a prefix that shares them goes on.
func refTrieLookup(ps map[refPrefix]int, v pval, nbits uint8) (uint8, plenSet) {
	var plens plenSet
	var m uint8
	for p := range ps {
		l := min(v.common(p.p), p.plen)
		m = max(m, l)
		if l == p.plen {
			plens.add(p.plen)
		}
	}
	if len(ps) == 0 {
		return 0, plens
	}
	for p := range ps {
		if min(v.common(p.p), p.plen) == m && p.plen > m {
			return min(m+1, nbits), plens
		}
	}
	return m, plens
}

// TestPrefixTrieAgainstSet checks the prefix trie against the set of its
// prefixes through random inserts and removes of IPv4 and IPv6 prefixes
// (some in one generation, some published), prefixes that share long
// runs among them; earlier snapshots must not change.
func TestPrefixTrieAgainstSet(t *testing.T) {
	for _, nbits := range []uint8{32, 128} {
		t.Run(fmt.Sprint(nbits), func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(nbits)))
			// Values with few distinct bits, so that prefixes nest and branch.
			randVal := func() pval {
				if nbits == 32 {
					x := uint64(rng.Intn(4))<<30 | uint64(rng.Intn(8))<<24 | uint64(rng.Intn(4))<<12 | uint64(rng.Intn(4))
					return pval{x << 32, 0}
				}
				return pval{uint64(rng.Intn(4))<<62 | uint64(rng.Intn(8))<<40 | uint64(rng.Intn(4)), uint64(rng.Intn(4))<<60 | uint64(rng.Intn(4))}
			}
			ones := pval{^uint64(0), ^uint64(0)}
			type snap struct {
				tr *ptrie
				ps map[refPrefix]int
			}
			var tr *ptrie
			ps := map[refPrefix]int{}
			var live []refPrefix
			var snaps []snap
			for step := range 4000 {
				gen := gens.Add(1)
				for range 1 + rng.Intn(3) {
					if len(live) > 0 && rng.Intn(5) < 2 {
						i := rng.Intn(len(live))
						p := live[i]
						live = append(live[:i], live[i+1:]...)
						tr = tr.remove(p.p, p.plen, gen)
						if ps[p]--; ps[p] == 0 {
							delete(ps, p)
						}
						continue
					}
					plen := uint8(1 + rng.Intn(int(nbits)))
					if rng.Intn(3) == 0 {
						plen = nbits
					}
					p := refPrefix{randVal().cut(plen), plen}
					if rng.Intn(4) == 0 && len(live) > 0 {
						p = live[rng.Intn(len(live))] // a second rule of a prefix
					}
					live = append(live, p)
					ps[p]++
					tr = tr.insert(p.p, p.plen, gen)
				}
				if step%200 == 0 {
					c := map[refPrefix]int{}
					for p, n := range ps {
						c[p] = n
					}
					snaps = append(snaps, snap{tr, c})
				}
				for range 4 {
					v := randVal()
					if rng.Intn(3) == 0 && len(live) > 0 {
						p := live[rng.Intn(len(live))]
						// An address under a prefix of the trie.
						m := ones.cut(p.plen)
						v = pval{p.p.hi | v.hi&^m.hi, p.p.lo | v.lo&^m.lo}
					}
					gm, gp := tr.lookup(v, nbits)
					wm, wp := refTrieLookup(ps, v, nbits)
					if gm != wm || gp != wp {
						t.Fatalf("step %d: %x with %d prefixes: maskbits %d plens %x, want %d %x", step, v, len(ps), gm, gp, wm, wp)
					}
				}
			}
			for _, s := range snaps {
				for range 50 {
					v := randVal()
					gm, gp := s.tr.lookup(v, nbits)
					if wm, wp := refTrieLookup(s.ps, v, nbits); gm != wm || gp != wp {
						t.Fatalf("an old snapshot changed: %x: %d %x, want %d %x", v, gm, gp, wm, wp)
					}
				}
			}
			// Removing everything leaves no node behind.
			gen := gens.Add(1)
			for _, p := range live {
				tr = tr.remove(p.p, p.plen, gen)
			}
			if tr != nil {
				t.Errorf("trie not empty after removing every prefix: %+v", tr)
			}
		})
	}
}

func TestPrefixLen(t *testing.T) {
	for _, tc := range []struct {
		m    [4]byte
		want uint8
	}{
		{[4]byte{}, 0},
		{[4]byte{255, 255, 255, 255}, 32},
		{[4]byte{255, 255, 254, 0}, 23},
		{[4]byte{128, 0, 0, 0}, 1},
		{[4]byte{255, 0, 255, 0}, 0},
		{[4]byte{0, 0, 0, 1}, 0},
	} {
		var m ofp.Flow
		m.IPv4Dst = tc.m
		if got := prefixLen(&m, pfNwDst); got != tc.want {
			t.Errorf("prefixLen(%v) = %d, want %d", tc.m, got, tc.want)
		}
	}
	var m ofp.Flow
	for i := range 9 {
		m.IPv6Src[i] = 0xff
	}
	m.IPv6Src[9] = 0xc0
	if got := prefixLen(&m, pfIPv6Src); got != 74 {
		t.Errorf("prefixLen(ipv6 /74) = %d", got)
	}
	m.IPv6Src[15] = 1
	if got := prefixLen(&m, pfIPv6Src); got != 0 {
		t.Errorf("prefixLen(non-CIDR ipv6) = %d", got)
	}
}

// ipMatch is an IPv4 match on nw_src and nw_dst prefixes ("" for none)
// and more fields.
func ipMatch(src, dst string, more func(m *ofp.Match)) ofp.Match {
	var m ofp.Match
	m.Flow.EthType, m.Mask.EthType = flow.EthTypeIPv4, 0xffff
	set := func(s string, v, mk *[4]byte) {
		if s == "" {
			return
		}
		p := netip.MustParsePrefix(s)
		*v = p.Addr().As4()
		for i := range p.Bits() {
			mk[i/8] |= 0x80 >> (i % 8)
		}
	}
	set(src, &m.Flow.IPv4Src, &m.Mask.IPv4Src)
	set(dst, &m.Flow.IPv4Dst, &m.Mask.IPv4Dst)
	if more != nil {
		more(&m)
	}
	m.Normalize()
	return m
}

// ipFlow is an IPv4 TCP flow from src to dst.
func ipFlow(src, dst string, in uint32, dport uint16) ofp.Flow {
	var f ofp.Flow
	f.InPort, f.EthType, f.NwProto, f.TpDst = in, flow.EthTypeIPv4, 6, dport
	f.IPv4Src, f.IPv4Dst = netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	return f
}

// TestTrieMasks: the megaflow masks a lookup gives with prefix rules are
// OVS 3.1's (ofproto/trace of the same tables and packets on Debian's
// ovs-vswitchd).
func TestTrieMasks(t *testing.T) {
	ft := &flowTables{}
	gen := gens.Add(1)
	add := func(prio uint16, m ofp.Match) {
		r := &rule{priority: prio, stats: &ruleStats{}, seq: seqs.Add(1)}
		r.setMatch(&m)
		ft.mutable(0, gen).put(r, nil, gen)
	}
	add(200, ipMatch("10.1.0.0/16", "", nil))
	add(100, ipMatch("10.0.0.0/8", "", nil))
	add(150, ipMatch("", "192.168.1.0/24", nil))
	add(120, ipMatch("5.5.5.8/32", "", nil))
	add(0, ofp.Match{})
	for _, tc := range []struct {
		src, dst string
		prio     uint16
		want     string // nw_src, nw_dst masks
	}{
		// 10.2 is told from 10.1/16 at bit 15, from 192.168.1/24 on
		// nw_dst's first bit.
		{"10.2.0.1", "1.1.1.1", 100, "255.254.0.0 128.0.0.0"},
		{"10.1.9.9", "1.1.1.1", 200, "255.255.0.0 0.0.0.0"},
		{"11.0.0.1", "192.168.1.7", 150, "255.0.0.0 255.255.255.0"},
		{"5.5.5.10", "1.1.1.1", 0, "255.255.255.254 128.0.0.0"},
		{"5.5.5.8", "1.1.1.1", 120, "255.255.255.255 128.0.0.0"},
		{"172.16.0.1", "192.168.2.1", 0, "128.0.0.0 255.255.254.0"},
	} {
		f := ipFlow(tc.src, tc.dst, 1, 80)
		var wc ofp.Flow
		r := ft.table(0).lookup(&f, &wc)
		if r == nil || r.priority != tc.prio {
			t.Errorf("%s > %s: rule %v, want priority %d", tc.src, tc.dst, r, tc.prio)
			continue
		}
		got := fmt.Sprintf("%v %v", netip.AddrFrom4(wc.IPv4Src), netip.AddrFrom4(wc.IPv4Dst))
		if got != tc.want {
			t.Errorf("%s > %s: masks %s, want %s", tc.src, tc.dst, got, tc.want)
		}
	}
}

// TestClassifierPrefixesAgainstLinear is TestClassifierAgainstLinear for
// tables of address prefixes (and a few other fields beside them): the
// best rule is the linear scan's, and every flow that agrees with a
// flow on the mask its lookup gave finds the same rule, through random
// adds, replacements and removes, in snapshots old and new.
func TestClassifierPrefixesAgainstLinear(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	// Addresses from a few /24s in a few /16s, so that prefixes nest.
	randAddr := func() [4]byte {
		return [4]byte{10, byte(rng.Intn(3)), byte(rng.Intn(3) * 64), byte(rng.Intn(8) * 37)}
	}
	randFlow := func() ofp.Flow {
		var f ofp.Flow
		f.InPort = uint32(1 + rng.Intn(2))
		f.EthType = flow.EthTypeIPv4
		if rng.Intn(8) == 0 {
			f.EthType = flow.EthTypeARP
		}
		f.IPv4Src, f.IPv4Dst = randAddr(), randAddr()
		f.NwProto = []uint8{6, 17}[rng.Intn(2)]
		f.TpDst = []uint16{79, 80, 81, 0x1f90, 0x1f9f, 0}[rng.Intn(6)]
		f.TpSrc = uint16(rng.Intn(3)) << 14
		return f
	}
	plens := []int{0, 8, 14, 16, 23, 24, 26, 32}
	randMatch := func() ofp.Match {
		var m ofp.Match
		m.Flow.EthType, m.Mask.EthType = flow.EthTypeIPv4, 0xffff
		if rng.Intn(10) == 0 {
			m.Flow.EthType = flow.EthTypeARP // arp_spa, arp_tpa: the same words
		}
		a, b := randAddr(), randAddr()
		for i, l := range []int{plens[rng.Intn(len(plens))], plens[rng.Intn(len(plens))]} {
			v, mk := &m.Flow.IPv4Src, &m.Mask.IPv4Src
			if i == 1 {
				v, mk, a = &m.Flow.IPv4Dst, &m.Mask.IPv4Dst, b
			}
			*v = a
			for j := range l {
				mk[j/8] |= 0x80 >> (j % 8)
			}
			if rng.Intn(12) == 0 && l > 0 {
				mk[3] = 0x0f // not a prefix
			}
		}
		if rng.Intn(4) == 0 {
			m.Flow.InPort, m.Mask.InPort = uint32(1+rng.Intn(2)), ^uint32(0)
		}
		if rng.Intn(4) == 0 && m.Flow.EthType == flow.EthTypeIPv4 {
			m.Flow.NwProto, m.Mask.NwProto = 6, 0xff
			if rng.Intn(2) == 0 {
				m.Flow.TpDst = []uint16{79, 80, 81, 0x1f90, 0x1f9f, 0}[rng.Intn(6)]
				m.Mask.TpDst = []uint16{0xffff, 0xfff0, 0xff00}[rng.Intn(3)]
			}
			if rng.Intn(4) == 0 {
				m.Flow.TpSrc, m.Mask.TpSrc = uint16(rng.Intn(3))<<14, 0xc000
			}
		}
		m.Normalize()
		return m
	}
	var live []*rule
	ft := &flowTables{}
	type snap struct {
		ft    *flowTables
		rules []*rule
	}
	var snaps []snap
	check := func(ft *flowTables, live []*rule, step int) {
		f := randFlow()
		var wc ofp.Flow
		got, want := ft.table(0).lookup(&f, &wc), linearBest(live, &f)
		if !sameBest(got, want, &f) {
			t.Fatalf("step %d: flow %v: classifier %v, linear %v", step, f.Key, got, want)
		}
		for range 4 {
			g := randFlow()
			gw, fw, ww := wordsOf(&g), wordsOf(&f), wordsOf(&wc)
			for i := range gw {
				gw[i] = gw[i]&^ww[i] | fw[i]&ww[i]
			}
			if other := linearBest(live, &g); !sameBest(got, other, &g) || ft.table(0).lookup(&g, new(ofp.Flow)) != got {
				t.Fatalf("step %d: flows %v and %v agree on mask %v but match %v and %v", step, f.Key, g.Key, wc.Key, got, other)
			}
		}
	}
	steps := 2000
	if testing.Short() {
		steps = 1000
	}
	for step := range steps {
		gen := gens.Add(1)
		c := *ft
		for range 1 + rng.Intn(3) {
			// Tables of up to a hundred rules or so.
			if len(live) > 0 && rng.Intn(3) == 0 || len(live) > 100 {
				live = removeLive(&c, gen, live, rng.Intn(len(live)))
				continue
			}
			m := randMatch()
			prio := uint16(rng.Intn(6))
			live = putLive(&c, gen, &m, prio, live)
		}
		ft = &c
		if err := checkProbes(ft.table(0)); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if step%200 == 0 {
			snaps = append(snaps, snap{ft, append([]*rule(nil), live...)})
		}
		for range 5 {
			check(ft, live, step)
		}
	}
	for _, s := range snaps {
		for range 20 {
			check(s.ft, s.rules, -1)
		}
	}
}

// TestSetTablePrefixes: a table's prefix fields change with its flows in
// (the tries rebuilt from them), and a reset of the flows keeps them.
func TestSetTablePrefixes(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2)}})
	mustMod(t, br, fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll})
	ip := map[ofp.FieldID][2]uint64{ofp.FieldEthType: {flow.EthTypeIPv4, 0}}
	with := func(id ofp.FieldID, v, m uint64) map[ofp.FieldID][2]uint64 {
		r := map[ofp.FieldID][2]uint64{id: {v, m}}
		for k, x := range ip {
			r[k] = x
		}
		return r
	}
	mustMod(t, br, fmSpec{prio: 20, match: with(ofp.FieldIPv4Src, 0x0a010203, 0), actions: []ofp.Action{output(2)}})
	mustMod(t, br, fmSpec{prio: 10, match: with(ofp.FieldIPv4Src, 0x0a000000, 0xff000000), actions: []ofp.Action{output(2)}})
	frame := dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
		IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.2.0.1"), Dst: netip.MustParseAddr("1.1.1.1")}, UDP: &dptest.UDP{Src: 1, Dst: 2}}.Bytes()
	src := func() string {
		_, m := tb.xlate(1, frame)
		return netip.AddrFrom4(m.IPv4Src).String()
	}
	for _, tc := range []struct {
		cfg  map[uint8][]string
		want string
	}{
		{nil, "255.254.0.0"}, // 10.2 told from 10.1.2.3 at bit 15
		{map[uint8][]string{0: nil}, "255.255.255.255"},
		{map[uint8][]string{0: {"ipv6_src"}, 1: {"ip_src"}}, "255.255.255.255"},
		{map[uint8][]string{0: {"ip_dst", "ip_src"}}, "255.254.0.0"},
		{nil, "255.254.0.0"},
		{map[uint8][]string{0: {}}, "255.255.255.255"},
	} {
		br.setTablePrefixes(tc.cfg)
		if got := src(); got != tc.want {
			t.Errorf("prefixes %v: nw_src mask %s, want %s", tc.cfg, got, tc.want)
		}
	}
	// A flush (fail mode) keeps table 0's "none".
	br.flowMu.Lock()
	br.resetFlows(false)
	br.flowMu.Unlock()
	mustMod(t, br, fmSpec{prio: 20, match: with(ofp.FieldIPv4Src, 0x0a010203, 0), actions: []ofp.Action{output(2)}})
	if got := src(); got != "255.255.255.255" {
		t.Errorf("after a reset: nw_src mask %s, want the whole address", got)
	}
}
