package ofproto

import (
	"math/bits"
	"slices"
	"unsafe"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// OVS's staged lookup past L3 (classifier.c find_match_wc): a subtable
// whose mask has fields of the last stage (tp_src, tp_dst, tcp_flags,
// nd_target, arp_sha, arp_tha, ct_tp_src, ct_tp_dst, nd_reserved) and
// L3 ones keeps an index of its rules' fields up to L3; a packet none of
// whose rules has its fields up to L3 adds only those to the megaflow,
// not the L4 ones. And when the lookup of the last stage fails in a
// subtable that matches ports, the ports trie tells which of the ports'
// leading bits tell the packet from every rule's, and only those join
// the megaflow.

// splitLast splits mask m into the fields of OVS's last stage and the
// rest.
func splitLast(m *ofp.Flow) (up, last ofp.Flow) {
	up = *m
	k, lk := &up.Key, &last.Key
	lk.NdTarget, lk.ArpSHA, lk.ArpTHA = k.NdTarget, k.ArpSHA, k.ArpTHA
	k.NdTarget, k.ArpSHA, k.ArpTHA = [16]byte{}, [6]byte{}, [6]byte{}
	lk.TCPFlags, lk.TpSrc, lk.TpDst, lk.CtTpSrc, lk.CtTpDst = k.TCPFlags, k.TpSrc, k.TpDst, k.CtTpSrc, k.CtTpDst
	k.TCPFlags, k.TpSrc, k.TpDst, k.CtTpSrc, k.CtTpDst = 0, 0, 0, 0, 0
	lk.NdReserved, lk.NdOptionsType = k.NdReserved, k.NdOptionsType
	k.NdReserved, k.NdOptionsType = 0, 0
	return up, last
}

// initStages sets st's upWs and portsLen from its mask.
func (st *subtable) initStages() {
	up, last := splitLast(&st.mask.mask)
	_, l3 := splitL3(&up)
	if last == (ofp.Flow{}) || l3 == (ofp.Flow{}) {
		return
	}
	st.upWs = maskWordsOf(&up)
	if pm := portsOf(&st.mask.mask); pm != 0 {
		st.portsLen = uint8(32 - bits.TrailingZeros32(pm))
	}
}

// portsOf is f's ports as OVS's ports trie reads them: tp_src, tp_dst.
func portsOf(f *ofp.Flow) uint32 { return uint32(f.TpSrc)<<16 | uint32(f.TpDst) }

// keyHash is the hash of r's key under ws, words of its mask's words
// with some of their bits (as hashWords of a flow with r's match).
func keyHash(r *rule, ws []maskWord) uint64 {
	h := hashSeed ^ uint64(len(ws))
	key, mws := r.key(), r.mask.mws
	j := 0
	for _, w := range ws {
		for mws[j].i != w.i {
			j++
		}
		h = mulMix(h^(key[j]&w.m), 0x9e3779b97f4a7c15^uint64(w.i))
	}
	return mulMix(h, 0xe7037ed1a0b428db)
}

// keyPorts is r's ports (portsOf its match).
func (r *rule) keyPorts() uint32 {
	var f ofp.Flow
	fw := wordsOf(&f)
	w := uint8(unsafe.Offsetof(f.TpSrc) / 8)
	for j, mw := range r.mask.mws {
		if mw.i == w || mw.i == w+1 {
			fw[mw.i] = r.key()[j]
		}
	}
	return portsOf(&f)
}

// stageAdd keeps st's stages for r added (replacing old, of the same
// match, if not nil).
func (st *subtable) stageAdd(r, old *rule, gen uint64) {
	h := keyHash(r, st.upWs)
	st.upRules = st.upRules.edit(h, gen, 0, func(l *tnode, i, j int) {
		if old != nil {
			l.rs[i+slices.Index(l.rs[i:j], old)] = r
			return
		}
		l.hs = slices.Insert(l.hs, i, h)
		l.rs = slices.Insert(l.rs, i, r)
	})
	if old == nil && st.portsLen > 0 {
		st.ports = st.ports.insert(pval{uint64(r.keyPorts()) << 32, 0}, st.portsLen, gen)
	}
}

// stageDel keeps st's stages for r taken out.
func (st *subtable) stageDel(r *rule, gen uint64) {
	h := keyHash(r, st.upWs)
	st.upRules = st.upRules.edit(h, gen, 0, func(l *tnode, i, j int) {
		if k := slices.Index(l.rs[i:j], r); k >= 0 {
			l.hs = slices.Delete(l.hs, i+k, i+k+1)
			l.rs = slices.Delete(l.rs, i+k, i+k+1)
		}
	})
	if st.portsLen > 0 {
		st.ports = st.ports.remove(pval{uint64(r.keyPorts()) << 32, 0}, st.portsLen, gen)
	}
}

// searchStaged is search's lookup in st, a subtable with upWs: the best
// rule of st matching f (conjunctive clauses appended to soft), the
// bits the stages consulted added to wc.
func (st *subtable) searchStaged(f, wc *ofp.Flow, conj bool, soft []*rule) (*rule, []*rule) {
	fw, ww := wordsOf(f), wordsOf(wc)
	if len(st.upRules.get(hashWords(fw, st.upWs))) == 0 {
		orWords(ww, st.upWs)
		return nil, soft
	}
	h := hashWords(fw, st.mws)
	matched := false
	var best *rule
	if st.mayHave(h) {
		for _, r := range st.rules.get(h) {
			if !st.matches(r, fw) {
				continue
			}
			matched = true
			if r.conjunctive() {
				if conj {
					soft = append(soft, r)
				}
				continue
			}
			best = r
			break
		}
	}
	if !matched && st.portsLen > 0 {
		// The ports trie: only the ports' bits that tell f's from
		// every rule's.
		orWords(ww, st.upWs)
		pm := portsOf(&st.mask.mask)
		n, _ := st.ports.lookup(pval{uint64(portsOf(f)&pm) << 32, 0}, 32)
		pm &= ^uint32(0) << (32 - uint32(n)) // none if n is 0
		wc.TpSrc |= uint16(pm >> 16)
		wc.TpDst |= uint16(pm)
		return nil, soft
	}
	orWords(ww, st.mws)
	return best, soft
}
