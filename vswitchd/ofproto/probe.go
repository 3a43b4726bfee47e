package ofproto

import (
	"slices"
	"unsafe"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// A table's probes are what a lookup reads of each subtable, in one
// array in the order of the table's subtables (probes[i] is subs[i]'s):
// a first packet after a while finds the subtables out of the cache, and
// the way through a subtable to a match is a chain of dependent misses
// (the subtable's cache lines, its mask words, its in_port map, its hash
// trie's nodes, the leaf's hashes and rules, the rule, its key). A probe
// rules a subtable out by itself (the staged checks, the few hashes),
// and while the subtable has at most len(few) hashes it holds the first
// rule of each (heads): a hit then reads that rule and its key, not the
// subtable and its trie. Only a subtable with more in_ports or mask
// words than a probe holds, more hashes, OVS's last stage, or a head
// that is a conjunctive clause or does not match, is read. A probe is
// two cache lines (probeSize); the first holds what a hit in a subtable
// of up to three mask words on its first hash reads (wm0, head0), and
// a miss of such a subtable, the second the rest (in, wm1, heads1).
type probe struct {
	maxPrio uint16
	flags   uint8
	// types has bit i set if the subtable has rules of Ethernet type
	// l3Index i (st.types[i] != 0).
	types uint8
	// nfew is the subtable's; few the low 16 bits of its few hashes: a
	// hash none of them has is not the subtable's (find), one that has
	// one may be. head(k) is the first rule (by rank) of the hash of
	// few[k]: head0, then heads1.
	nfew int8
	// nw is how many mask words the probe holds: word(j) is mask word
	// j's bits (wm0, then wm1) and wi[j] its index in a Flow; all of the
	// subtable's mws unless probeWide.
	nw uint8
	// nin is how many in_ports in holds: all those of the subtable's
	// rules (the keys of st.inPorts) unless probeInMap.
	nin   uint8
	_     uint8
	plens [numPrefixFields]uint8
	few   [4]uint16
	wi    [probeWords]uint8
	_     [2]uint8
	wm0   [probeWords0]uint64
	head0 *rule
	// The second cache line.
	in     [2]uint32
	wm1    [probeWords - probeWords0]uint64
	heads1 [3]*rule
	_      [8]uint8
}

// probeWords0 is how many of a probe's mask words are in its first
// cache line.
const probeWords0 = 3

// word returns the bits of mask word j (j < p.nw).
func (p *probe) word(j uint8) uint64 {
	if j < probeWords0 {
		return p.wm0[j]
	}
	return p.wm1[j-probeWords0]
}

// head returns the first rule of the hash of few[k].
func (p *probe) head(k int) *rule {
	if k == 0 {
		return p.head0
	}
	return p.heads1[k-1]
}

// probeWords is how many mask words a probe holds: most of OVN's masks
// have one to four, some five or six.
const (
	probeWords = 6
	probeSize  = 128
)

var _ [unsafe.Sizeof(probe{}) - probeSize]struct{}
var _ [probeSize - unsafe.Sizeof(probe{})]struct{}
var _ [len(probe{}.few) - len(subtable{}.few)]struct{}
var _ [len(subtable{}.few) - len(probe{}.few)]struct{}
var _ [len(probe{}.few) - 1 - len(probe{}.heads1)]struct{}
var _ [len(probe{}.heads1) + 1 - len(probe{}.few)]struct{}
var _ [64 - unsafe.Offsetof(probe{}.in)]struct{}
var _ [unsafe.Offsetof(probe{}.in) - 64]struct{}

// probe flags: the subtable's mask has all of in_port (inPorts not nil);
// it has more in_ports than a probe holds (st.inPorts tells); st.l3;
// st.pfx; st.stageWs != nil; it has more than probeWords words (the
// probe holds none: st.mws, st.metaWs, st.l2Ws tell).
const (
	probeInPort = 1 << iota
	probeInMap
	probeL3
	probePfx
	probeStaged
	probeWide
)

// probeOf returns st's probe.
func probeOf(st *subtable) probe {
	p := probe{maxPrio: st.maxPrio, nfew: st.nfew, plens: st.plens}
	for j, h := range st.few {
		p.few[j] = uint16(h)
	}
	if st.stageWs == nil {
		for j, h := range st.few[:max(st.nfew, 0)] {
			if r := st.rules.get(h)[0]; j == 0 {
				p.head0 = r
			} else {
				p.heads1[j-1] = r
			}
		}
	}
	if st.l3 {
		p.flags |= probeL3
	}
	for i, n := range st.types {
		if n != 0 {
			p.types |= 1 << i
		}
	}
	if st.pfx {
		p.flags |= probePfx
	}
	if st.stageWs != nil {
		p.flags |= probeStaged
	}
	if st.inPorts != nil {
		p.flags |= probeInPort
		if len(st.inPorts) <= len(p.in) {
			for port := range st.inPorts {
				p.in[p.nin] = port
				p.nin++
			}
			// In order, so that a subtable's probe is one (setProbe
			// compares them).
			slices.Sort(p.in[:p.nin])
		} else {
			p.flags |= probeInMap
		}
	}
	if len(st.mws) <= probeWords {
		for j, w := range st.mws {
			p.wi[j] = w.i
			if j < probeWords0 {
				p.wm0[j] = w.m
			} else {
				p.wm1[j-probeWords0] = w.m
			}
		}
		p.nw = uint8(len(st.mws))
	} else {
		p.flags |= probeWide
	}
	return p
}

// hasInPort reports whether subtable i of t, whose probe p is, has
// rules with in_port port (p has probeInPort).
func (p *probe) hasInPort(port uint32, t *table, i int) bool {
	if p.flags&probeInMap != 0 {
		return t.subs[i].inPorts[port] != 0
	}
	return slices.Contains(p.in[:p.nin], port)
}

// orSel ors into ww the bits of sel under the probe's mask words (as
// orWords of the mask's words with only sel's bits: metaSel gives
// st.metaWs, l2Sel st.l2Ws).
func (p *probe) orSel(ww, sel *[flowWords]uint64) {
	for j := range p.nw {
		i := p.wi[j]
		ww[i] |= p.word(j) & sel[i]
	}
}

// hashOr is hashWords of fw under the probe's mask words, which it also
// ors into ww.
func (p *probe) hashOr(fw, ww *[flowWords]uint64) uint64 {
	h := hashSeed ^ uint64(p.nw)
	for j := range p.nw {
		i, m := p.wi[j], p.word(j)
		ww[i] |= m
		h = mulMix(h^(fw[i]&m), 0x9e3779b97f4a7c15^uint64(i))
	}
	return mulMix(h, 0xe7037ed1a0b428db)
}

// find returns the head of a hash of the subtable with h's low 16 bits,
// nil if it has more hashes than the probe holds, and whether it may
// have rules of hash h. The head is that of h if it matches the flow
// (its key is the flow's bits under the mask, whose hash is h).
func (p *probe) find(h uint64) (head *rule, may bool) {
	if p.nfew < 0 {
		return nil, true
	}
	for k, f := range p.few[:p.nfew] {
		if f == uint16(h) {
			return p.head(k), true
		}
	}
	return nil, false
}

// matches is subtable.matches with the probe's mask words.
func (p *probe) matches(r *rule, fw *[flowWords]uint64) bool {
	key := unsafe.Slice(r.keyp, p.nw)
	for j := range key {
		if fw[p.wi[j]]&p.word(uint8(j)) != key[j] {
			return false
		}
	}
	return true
}

// l2Sel and metaSel are the bits of a Flow that splitL3 and stageMasks
// keep of a mask: its fields up to L2, and its metadata fields.
var l2Sel, metaSel = func() (l2, meta [flowWords]uint64) {
	var ones ofp.Flow
	for i := range wordsOf(&ones) {
		wordsOf(&ones)[i] = ^uint64(0)
	}
	l2f, metaf := stageMasks(&ones)
	return *wordsOf(&l2f), *wordsOf(&metaf)
}()

// stageMasks returns the fields of mask m up to L2 (splitL3) and its
// metadata fields (those up to L2 but the Ethernet and VLAN fields): the
// bits a lookup adds to the megaflow for a subtable that OVS's staged
// lookup rules out at the L3 and the in_port stage.
func stageMasks(m *ofp.Flow) (l2, meta ofp.Flow) {
	l2, _ = splitL3(m)
	meta = l2
	k := &meta.Key
	k.EthDst, k.EthSrc, k.EthType, k.VLANTCI, k.VLANTPID = [6]byte{}, [6]byte{}, 0, 0, 0
	return l2, meta
}

// setProbe makes probes[i] that of subs[i] (t is of the change's
// generation), copying the array first if it changes it and the array is
// an older generation's: a rule added to or taken from a subtable of more
// than len(few) hashes whose max priority, in_ports and Ethernet types
// stay changes no probe, and the table's copy costs no copy of them.
func (t *table) setProbe(i int) {
	if p := probeOf(t.subs[i]); p != t.probes[i] {
		t.ownProbes()
		t.probes[i] = p
	}
}

// ownProbes makes t's probes an array of t's generation (t is of the
// change's), which the change may write.
func (t *table) ownProbes() {
	if t.pgen != t.gen {
		t.probes, t.pgen = slices.Clone(t.probes), t.gen
	}
}
