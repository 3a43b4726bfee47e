package ofproto

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"
	"unsafe"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Prefix tries, as OVS's classifier keeps them (classifier.c: cls_trie,
// check_tries): a table keeps, for each of its prefix fields (by
// default nw_dst and nw_src, ofproto.c default_prefix_fields), the set
// of CIDR prefixes its rules match on that field. A lookup that comes to
// a subtable whose mask has a prefix of length plen on the field asks
// the trie which prefix lengths the packet's address has rules at: if
// plen is not one of them, no rule of the subtable can match, and the
// megaflow needs only the address's bits that tell it from every prefix
// the trie holds (maskbits), not the subtable's whole mask.

// prefixField is a field a table may keep a prefix trie on.
type prefixField uint8

const (
	pfNwSrc prefixField = iota
	pfNwDst
	pfIPv6Src
	pfIPv6Dst
	numPrefixFields
)

// maxTries is how many prefix fields a table may have (OVS's
// CLS_MAX_TRIES).
const maxTries = 3

var prefixFieldInfo = [numPrefixFields]struct {
	// off is the field's offset in an ofp.Flow, n its size in bytes.
	off, n uintptr
	// ethType is the field's prerequisite: a flow of another type has
	// no value for it (OVS's trie_lookup checks mf_are_prereqs_ok).
	ethType uint16
}{
	pfNwSrc:   {unsafe.Offsetof(ofp.Flow{}.IPv4Src), 4, flow.EthTypeIPv4},
	pfNwDst:   {unsafe.Offsetof(ofp.Flow{}.IPv4Dst), 4, flow.EthTypeIPv4},
	pfIPv6Src: {unsafe.Offsetof(ofp.Flow{}.IPv6Src), 16, flow.EthTypeIPv6},
	pfIPv6Dst: {unsafe.Offsetof(ofp.Flow{}.IPv6Dst), 16, flow.EthTypeIPv6},
}

// nbits is the field's width.
func (pf prefixField) nbits() int { return int(prefixFieldInfo[pf].n) * 8 }

// value is pf's value in f.
func (pf prefixField) value(f *ofp.Flow) pval {
	switch pf {
	case pfNwSrc:
		return pval{uint64(binary.BigEndian.Uint32(f.IPv4Src[:])) << 32, 0}
	case pfNwDst:
		return pval{uint64(binary.BigEndian.Uint32(f.IPv4Dst[:])) << 32, 0}
	case pfIPv6Src:
		return pval{binary.BigEndian.Uint64(f.IPv6Src[:8]), binary.BigEndian.Uint64(f.IPv6Src[8:])}
	}
	return pval{binary.BigEndian.Uint64(f.IPv6Dst[:8]), binary.BigEndian.Uint64(f.IPv6Dst[8:])}
}

// bytesOf is pf's bytes in f (network order).
func (pf prefixField) bytesOf(f *ofp.Flow) []byte {
	in := &prefixFieldInfo[pf]
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(f), in.off)), in.n)
}

// prefixes are the fields a table keeps tries on, in the order the
// lookup consults them.
type prefixes struct {
	n  uint8
	fs [maxTries]prefixField
}

// defaultPrefixes are OVS's default_prefix_fields.
var defaultPrefixes = prefixes{n: 2, fs: [maxTries]prefixField{pfNwDst, pfNwSrc}}

// pval is a prefix field's value, its bits from the most significant
// of hi on (an IPv4 address in hi's upper half).
type pval struct{ hi, lo uint64 }

// pvalOf is the value of a prefix field's bytes b (4 or 16).
func pvalOf(b []byte) pval {
	if len(b) == 4 {
		return pval{uint64(binary.BigEndian.Uint32(b)) << 32, 0}
	}
	return pval{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:16])}
}

// bit is v's bit i (0: the most significant).
func (v pval) bit(i uint8) int {
	if i < 64 {
		return int(v.hi>>(63-i)) & 1
	}
	return int(v.lo>>(127-i)) & 1
}

// common is how many leading bits v and w share.
func (v pval) common(w pval) uint8 {
	if x := v.hi ^ w.hi; x != 0 {
		return uint8(bits.LeadingZeros64(x))
	}
	return 64 + uint8(bits.LeadingZeros64(v.lo^w.lo))
}

// cut is v's first n bits, the rest zero.
func (v pval) cut(n uint8) pval {
	switch {
	case n == 0:
		return pval{}
	case n <= 64:
		return pval{v.hi &^ (^uint64(0) >> n), 0}
	case n < 128:
		return pval{v.hi, v.lo &^ (^uint64(0) >> (n - 64))}
	}
	return v
}

// ptrie is a node of a prefix trie: a persistent (path-copied, as the
// subtables' hash tries: gen) binary Patricia trie of prefixes. A node
// is a prefix p of plen bits (p zero past them) with n rules at exactly
// that prefix; kids[b] holds the longer prefixes that go on with bit b
// at plen. Every node has rules or two kids, so that a lookup's answer
// depends only on the set of prefixes, whatever the order of the
// changes that made it (OVS's trie prunes alike).
type ptrie struct {
	gen  uint64
	p    pval
	plen uint8
	n    int32
	kids [2]*ptrie
}

// plenSet is a set of prefix lengths 1..128: bit l-1 for length l.
type plenSet [2]uint64

func (s *plenSet) add(l uint8)      { s[(l-1)/64] |= 1 << ((l - 1) % 64) }
func (s *plenSet) has(l uint8) bool { return s[(l-1)/64]>>((l-1)%64)&1 != 0 }

// lookup returns the lengths of the trie's prefixes that v (of nbits)
// has, and how many of v's leading bits tell it from every other prefix
// of the trie, as OVS's trie_lookup_value: the longest run m v shares
// with some prefix, plus one if a prefix that shares those m bits goes
// on past them (its next bit is not v's).
func (t *ptrie) lookup(v pval, nbits uint8) (maskbits uint8, plens plenSet) {
	var prev *ptrie
	for t != nil {
		if c := v.common(t.p); c < t.plen {
			return c + 1, plens
		}
		if t.n > 0 {
			plens.add(t.plen)
		}
		if t.plen >= nbits {
			return nbits, plens
		}
		prev, t = t, t.kids[v.bit(t.plen)]
	}
	if prev == nil {
		return 0, plens
	}
	if prev.kids[0] != nil || prev.kids[1] != nil {
		return prev.plen + 1, plens
	}
	return prev.plen, plens
}

// private returns t if it is of generation gen, else a copy that is.
func (t *ptrie) private(gen uint64) *ptrie {
	if t.gen == gen {
		return t
	}
	c := *t
	c.gen = gen
	return &c
}

// insert returns t with one more rule at prefix p of plen bits (p zero
// past them), copying the nodes on the way that are not of gen.
func (t *ptrie) insert(p pval, plen uint8, gen uint64) *ptrie {
	if t == nil {
		return &ptrie{gen: gen, p: p, plen: plen, n: 1}
	}
	c := min(p.common(t.p), plen, t.plen)
	switch {
	case c == t.plen && c == plen:
		t = t.private(gen)
		t.n++
		return t
	case c == t.plen:
		t = t.private(gen)
		b := p.bit(c)
		t.kids[b] = t.kids[b].insert(p, plen, gen)
		return t
	case c == plen:
		// p is a prefix of t's: a node above t.
		n := &ptrie{gen: gen, p: p, plen: plen, n: 1}
		n.kids[t.p.bit(c)] = t
		return n
	}
	// p and t's prefix part at bit c: a branch.
	n := &ptrie{gen: gen, p: p.cut(c), plen: c}
	n.kids[t.p.bit(c)] = t
	n.kids[p.bit(c)] = &ptrie{gen: gen, p: p, plen: plen, n: 1}
	return n
}

// remove returns t with one rule less at prefix p of plen bits, which it
// has, pruning as it goes.
func (t *ptrie) remove(p pval, plen uint8, gen uint64) *ptrie {
	if t == nil || t.plen > plen || min(p.common(t.p), plen) < t.plen {
		return t // not there: cannot happen
	}
	t = t.private(gen)
	if t.plen == plen {
		t.n--
	} else {
		b := p.bit(t.plen)
		t.kids[b] = t.kids[b].remove(p, plen, gen)
	}
	if t.n > 0 || t.kids[0] != nil && t.kids[1] != nil {
		return t
	}
	if t.kids[0] != nil {
		return t.kids[0]
	}
	return t.kids[1]
}

// prefixLen is the length of m's CIDR prefix on pf: 0 if m has no bits
// of pf or they are not a prefix (OVS's minimask_get_prefix_len).
func prefixLen(m *ofp.Flow, pf prefixField) uint8 {
	v := pvalOf(pf.bytesOf(m))
	n := uint8(bits.LeadingZeros64(^v.hi))
	if n == 64 {
		n += uint8(bits.LeadingZeros64(^v.lo))
	}
	if v.cut(n) != v {
		return 0
	}
	return n
}

// prefixOf is r's prefix on pf, from its key.
func (r *rule) prefixOf(pf prefixField) pval {
	in := &prefixFieldInfo[pf]
	// The field's bytes, in at most three words from w0.
	var buf [3]uint64
	w0 := uint8(in.off / 8)
	key := r.key()
	for j, w := range r.mask.mws {
		if w.i >= w0 && w.i < w0+3 {
			buf[w.i-w0] = key[j]
		}
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), 24)
	return pvalOf(b[in.off%8 : in.off%8+in.n])
}

// trieCtx is a lookup's use of one of a table's tries: looked up when a
// subtable first needs it (OVS's trie_ctx).
type trieCtx struct {
	done     bool
	maskbits uint8
	plens    plenSet
}

// trieSkip reports whether the tries prove that no rule of st matches f
// (OVS's check_tries), having added to wc the prefix bits that proves
// it on.
func (t *table) trieSkip(plens *[numPrefixFields]uint8, f, wc *ofp.Flow, tcs *[maxTries]trieCtx) bool {
	for j := range int(t.pfx.n) {
		pf := t.pfx.fs[j]
		plen := plens[pf]
		if plen == 0 {
			continue
		}
		tc := &tcs[j]
		if !tc.done {
			tc.done = true
			if f.EthType == prefixFieldInfo[pf].ethType {
				tc.maskbits, tc.plens = t.tries[j].lookup(pf.value(f), uint8(pf.nbits()))
			} else {
				tc.plens = plenSet{^uint64(0), ^uint64(0)} // every length: no skipping
			}
		}
		if tc.plens.has(plen) {
			continue
		}
		wb := pf.bytesOf(wc)
		if tc.maskbits <= plen {
			// No more bits than the subtable's own mask would add.
			setPrefixBits(wb, tc.maskbits)
			return true
		}
		if prefixBitsSet(wb, tc.maskbits) {
			return true
		}
	}
	return false
}

// setPrefixBits sets the first n bits of b.
func setPrefixBits(b []byte, n uint8) {
	i := 0
	for ; n >= 8; n -= 8 {
		b[i] = 0xff
		i++
	}
	if n > 0 {
		b[i] |= ^byte(0xff >> n)
	}
}

// prefixBitsSet reports whether b has its first n bits set.
func prefixBitsSet(b []byte, n uint8) bool {
	i := 0
	for ; n >= 8; n -= 8 {
		if b[i] != 0xff {
			return false
		}
		i++
	}
	m := ^byte(0xff >> n)
	return n == 0 || b[i]&m == m
}

// trieAdd and trieDel keep t's tries for a rule of st added or taken out
// (gen the change's).
func (t *table) trieAdd(st *subtable, r *rule, gen uint64) {
	for j := range int(t.pfx.n) {
		pf := t.pfx.fs[j]
		if plen := st.plens[pf]; plen > 0 {
			t.tries[j] = t.tries[j].insert(r.prefixOf(pf), plen, gen)
		}
	}
}

func (t *table) trieDel(st *subtable, r *rule, gen uint64) {
	for j := range int(t.pfx.n) {
		pf := t.pfx.fs[j]
		if plen := st.plens[pf]; plen > 0 {
			t.tries[j] = t.tries[j].remove(r.prefixOf(pf), plen, gen)
		}
	}
}

// prefixNames are OVS's names for the fields it may keep prefix tries on
// (meta-flow.h's "Prefix lookup member"s, aliases too) and govs'
// prefixField of each; numPrefixFields for those govs keeps none on.
var prefixNames = map[string]prefixField{
	"ip_src": pfNwSrc, "nw_src": pfNwSrc, "ip_dst": pfNwDst, "nw_dst": pfNwDst,
	"ipv6_src": pfIPv6Src, "ipv6_dst": pfIPv6Dst,
	"tun_id": numPrefixFields, "tunnel_id": numPrefixFields, "tun_src": numPrefixFields, "tun_dst": numPrefixFields,
	"tun_ipv6_src": numPrefixFields, "tun_ipv6_dst": numPrefixFields,
	"ct_nw_src": numPrefixFields, "ct_nw_dst": numPrefixFields, "ct_ipv6_src": numPrefixFields, "ct_ipv6_dst": numPrefixFields,
}

// ovsPrefixName is OVS's name of pf (mf_field's name), as its log says it.
var ovsPrefixName = [numPrefixFields]string{pfNwSrc: "ip_src", pfNwDst: "ip_dst", pfIPv6Src: "ipv6_src", pfIPv6Dst: "ipv6_dst"}

// ParsePrefixes reads Flow_Table prefixes of table id of bridge br as
// OVS's bridge_configure_tables does: it returns the fields to keep
// tries on, in order (nil and def for OVS's default, nw_dst and nw_src),
// the warnings OVS logs (unknown, incompatible, too many fields), govs'
// about a field OVS keeps a trie on and govs does not, and the line OVS
// logs at INFO when the default is not used.
func ParsePrefixes(br string, id int, names []string) (fields []string, def bool, warns []string, info string) {
	def = true
	var used []string // OVS's names, as it logs them
	for _, name := range names {
		if name == "none" {
			def, fields, used = false, nil, nil
			break
		}
		pf, ok := prefixNames[name]
		if !ok {
			if ofp.FieldByName(name) == nil {
				warns = append(warns, fmt.Sprintf("bridge %s: 'prefixes' with unknown field: %s", br, name))
			} else {
				warns = append(warns, fmt.Sprintf("bridge %s: 'prefixes' with incompatible field: %s", br, name))
			}
			continue
		}
		if len(used) >= maxTries {
			warns = append(warns, fmt.Sprintf("bridge %s: 'prefixes' with too many fields, field not used: %s", br, name))
			continue
		}
		def = false
		if pf == numPrefixFields {
			warns = append(warns, fmt.Sprintf("bridge %s table %d: 'prefixes': govs keeps no prefix trie on %s, field not used", br, id, name))
			used = append(used, name)
			continue
		}
		used = append(used, ovsPrefixName[pf])
		fields = append(fields, ovsPrefixName[pf])
	}
	if def {
		return nil, true, warns, ""
	}
	if len(used) == 0 {
		used = []string{"none"}
	}
	return fields, false, warns, fmt.Sprintf("bridge %s table %d: Prefix lookup with: %s.", br, id, strings.Join(used, ","))
}

// prefixesOf are the fields named (ParsePrefixes' names), duplicates
// dropped (OVS's classifier_set_prefix_fields).
func prefixesOf(names []string) prefixes {
	var p prefixes
	for _, n := range names {
		pf, ok := prefixNames[n]
		if !ok || pf == numPrefixFields || slices.Contains(p.fs[:p.n], pf) || p.n == maxTries {
			continue
		}
		p.fs[p.n] = pf
		p.n++
	}
	return p
}

// prefixesOf is the prefix fields of table id (OVS's default unless
// configured).
func (ft *flowTables) prefixesOf(id uint8) prefixes {
	if p, ok := ft.prefixes[id]; ok {
		return p
	}
	return defaultPrefixes
}

// setPrefixes makes table id keep tries on p, rebuilding them from its
// rules (a change of generation gen).
func (ft *flowTables) setPrefixes(id uint8, p prefixes, gen uint64) {
	t := ft.mutable(id, gen)
	t.pfx, t.tries = p, [maxTries]*ptrie{}
	for _, st := range t.subs {
		if !st.pfx {
			continue
		}
		st.rules.each(func(rs []*rule) {
			for _, r := range rs {
				t.trieAdd(st, r, gen)
			}
		})
	}
}

// setTablePrefixes applies the tables' prefix fields (by table, those
// not at OVS's default), revalidating if some changed.
func (br *Bridge) setTablePrefixes(cfg map[uint8][]string) {
	want := map[uint8]prefixes{}
	for id, names := range cfg {
		if int(id) < NumTables {
			want[id] = prefixesOf(names)
		}
	}
	br.flowMu.Lock()
	defer br.flowMu.Unlock()
	old := br.tables.Load()
	if maps.Equal(old.prefixes, want) || len(want) == 0 && old.prefixes == nil {
		return
	}
	ft := *old
	ft.prefixes = want
	gen := gens.Add(1)
	for id := range NumTables {
		if p := ft.prefixesOf(uint8(id)); p != old.prefixesOf(uint8(id)) && ft.table(id) != nil {
			ft.setPrefixes(uint8(id), p, gen)
		}
	}
	br.publish(&ft)
	br.flowsChanged()
}
