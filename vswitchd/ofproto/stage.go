package ofproto

import (
	"math/bits"
	"unsafe"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// OVS's staged lookup past L3 (classifier.c find_match_wc): a subtable
// whose mask has fields of the last stage (tp_src, tp_dst, tcp_flags,
// nd_target, arp_sha, arp_tha, ct_tp_src, ct_tp_dst, nd_reserved) and
// L3 ones keeps an index of its rules' fields up to L3; a packet none of
// whose rules has its fields up to L3 adds only those to the megaflow,
// not the L4 ones. OVS's index is a count of rules per 32-bit hash of
// those fields (a ccmap); ours costs nothing per rule: such a subtable
// keys its rules by a hash whose low 32 bits are that of the fields up
// to L3 (stagedHash), and its trie, which descends by a hash's low bits
// first, tells whether any rule has them (hasLow). And when the lookup of the last stage fails in a
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

// initStages sets st's stageWs, nUp and portsLen from its mask.
func (st *subtable) initStages() {
	up, last := splitLast(&st.mask.mask)
	_, l3 := splitL3(&up)
	if last == (ofp.Flow{}) || l3 == (ofp.Flow{}) {
		return
	}
	upWs := maskWordsOf(&up)
	st.stageWs, st.nUp = append(upWs, maskWordsOf(&last)...), uint8(len(upWs))
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

// upWs and lastWs are the words of st's mask up to L3 and of the last
// stage.
func (st *subtable) upWs() []maskWord   { return st.stageWs[:st.nUp] }
func (st *subtable) lastWs() []maskWord { return st.stageWs[st.nUp:] }

// stagedHash is the hash in a subtable with upWs of a flow whose hash
// under upWs is up and under lastWs is last: up's low 32 bits, OVS's
// hash of the L3 index, and last's high ones.
func stagedHash(up, last uint64) uint64 { return uint64(uint32(up)) | last&^0xffffffff }

// ruleHash is the hash of r's key in st.
func (st *subtable) ruleHash(r *rule) uint64 {
	if st.stageWs != nil {
		return stagedHash(keyHash(r, st.upWs()), keyHash(r, st.lastWs()))
	}
	return hashKey(r.key(), st.mws)
}

// flowHash is the hash in st of the flow of words fw.
func (st *subtable) flowHash(fw *[flowWords]uint64) uint64 {
	if st.stageWs != nil {
		return stagedHash(hashWords(fw, st.upWs()), hashWords(fw, st.lastWs()))
	}
	return hashWords(fw, st.mws)
}

// mayHaveUp reports whether st, a subtable with upWs, may have rules
// whose hash's low 32 bits are up's (OVS's L3 index: a rule whose fields
// up to L3 have that hash).
func (st *subtable) mayHaveUp(up uint64) bool {
	if st.nfew >= 0 {
		for _, f := range st.few[:st.nfew] {
			if uint32(f) == uint32(up) {
				return true
			}
		}
		return false
	}
	return st.rules.hasLow(uint32(up))
}

// hasLow reports whether trie n has a hash whose low 32 bits are u. Its
// first levels choose by those bits; a node there that is not nil has
// rules (edit drops empty ones), so at the level that reads past bit 32
// any child on u's bits will do.
func (n *tnode) hasLow(u uint32) bool {
	for s := uint(0); n != nil; s += trieBits {
		if n.kids == nil {
			for _, h := range n.hs {
				if uint32(h) == u {
					return true
				}
			}
			return false
		}
		if s+trieBits <= 32 {
			n = n.kids[(u>>s)&(trieFan-1)]
			continue
		}
		step := uint32(1) << (32 - s)
		for k := (u >> s) & (step - 1); k < trieFan; k += step {
			if n.kids[k] != nil {
				return true
			}
		}
		return false
	}
	return false
}

// stageAdd keeps st's ports trie for r added.
func (st *subtable) stageAdd(r *rule, gen uint64) {
	if st.portsLen > 0 {
		st.ports = st.ports.insert(pval{uint64(r.keyPorts()) << 32, 0}, st.portsLen, gen)
	}
}

// stageDel keeps st's ports trie for r taken out.
func (st *subtable) stageDel(r *rule, gen uint64) {
	if st.portsLen > 0 {
		st.ports = st.ports.remove(pval{uint64(r.keyPorts()) << 32, 0}, st.portsLen, gen)
	}
}

// searchStaged is search's lookup in st, a subtable with upWs: the best
// rule of st matching f (conjunctive clauses appended to soft), the
// bits the stages consulted added to wc.
func (st *subtable) searchStaged(f, wc *ofp.Flow, conj bool, soft []*rule) (*rule, []*rule) {
	fw, ww := wordsOf(f), wordsOf(wc)
	up := hashWords(fw, st.upWs())
	if !st.mayHaveUp(up) {
		orWords(ww, st.upWs())
		return nil, soft
	}
	h := stagedHash(up, hashWords(fw, st.lastWs()))
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
		orWords(ww, st.upWs())
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
