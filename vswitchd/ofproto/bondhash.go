package ofproto

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Balanced bonds' hash buckets and their rebalancing, as OVS's bond.c: a
// balance-slb or balance-tcp bond hashes each flow onto one of 256
// buckets, each assigned to a member; translations credit what a flow
// forwards to its bucket (bondAccount), and BondRebalance moves buckets
// from the most to the least loaded members (bond_rebalance). Buckets
// outlive configurations; they start afresh when the bond's mode changes.

const (
	bondBuckets = 256
	bondMask    = bondBuckets - 1
)

// bondHash is a balanced bond's buckets (bond.c's bond_entry array).
type bondHash struct {
	slb, tcp bool
	// tx are the bytes each bucket sent recently, halved at each
	// rebalancing (an exponentially weighted moving average).
	tx [bondBuckets]atomic.Uint64

	mu sync.Mutex // guards the fields below
	// members are the member each bucket is assigned to, "" if none.
	members [bondBuckets]string
	// next is the round robin of get_enabled_member.
	next uint32
}

// bondHashFor returns the buckets of bond name for a snapshot being made,
// keeping those of the running configuration if the mode is the same.
// Caller holds backer.mu (or the bridge is new).
func (br *Bridge) bondHashFor(name string, slb, tcp bool) *bondHash {
	if br.bondHashes == nil {
		br.bondHashes = map[string]*bondHash{}
	}
	h := br.bondHashes[name]
	if h == nil || h.slb != slb || h.tcp != tcp {
		h = &bondHash{slb: slb, tcp: tcp}
		br.bondHashes[name] = h
	}
	return h
}

// BondHashMAC is OVS's bond_hash_src (lib/packets.h hash_mac): the hash
// of a balance-slb bond's flow from source MAC mac on VLAN vlan, whose
// low 8 bits are its bucket; `ovs-appctl bond/hash` prints them. The
// same numbers as OVS's (checked against Debian's bond/hash).
func BondHashMAC(mac [6]byte, vlan uint16, basis uint32) uint32 {
	x := uint64(vlan) << 48
	for i, b := range mac {
		x |= uint64(b) << (40 - 8*i)
	}
	return ofp.HashFinish(ofp.HashAdd(ofp.HashAdd(basis, uint32(x)), uint32(x>>32)), 8)
}

// BondHash is one bucket of a bond, as bond/show prints it.
type BondHash struct {
	Hash   int
	Member string
	// TxBytes is the bucket's recent load.
	TxBytes uint64
}

// BondHashes returns bond's buckets that are assigned to a member, in
// order; nil if the bridge has no such bond.
func (br *Bridge) BondHashes(bond string) []BondHash {
	b := br.snap.Load().bonds[bond]
	if b == nil {
		return nil
	}
	h := b.hash
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []BondHash
	for i, m := range h.members {
		if m != "" {
			out = append(out, BondHash{Hash: i, Member: m, TxBytes: h.tx[i].Load()})
		}
	}
	return out
}

// BondMigrate assigns bucket hash of bond to member (bond/migrate), which
// the caller checked is enabled, and revalidates the flows.
func (br *Bridge) BondMigrate(bond string, hash int, member string) {
	b := br.snap.Load().bonds[bond]
	if b == nil {
		return
	}
	b.hash.mu.Lock()
	b.hash.members[hash&bondMask] = member
	b.hash.mu.Unlock()
	br.backer.dp.RequestRevalidation()
}

// balMember is a member's load during a rebalancing.
type balMember struct {
	name    string
	tx      uint64
	entries []int
}

// BondRebalance is bond_rebalance for bond, whose rebalancing interval
// passed: while the most loaded enabled member carries much more than
// the least loaded one (100000 bytes, and 1/32 of the latter's), it moves
// to the latter a bucket that brings their loads closer by at least a
// tenth of their distance to the mean; then it halves every bucket's
// load. It returns OVS's log line for each bucket moved, and revalidates
// the flows if any moved.
func (br *Bridge) BondRebalance(bond string) []string {
	b := br.snap.Load().bonds[bond]
	if b == nil || !b.slb && !b.tcp {
		return nil
	}
	h := b.hash
	h.mu.Lock()
	defer h.mu.Unlock()
	byName := map[string]*balMember{}
	var bals []*balMember
	for _, m := range b.members {
		bm := &balMember{name: m.name}
		byName[m.name] = bm
		if m.enabled {
			bals = append(bals, bm)
		}
	}
	var tx [bondBuckets]uint64
	for i := range h.members {
		tx[i] = h.tx[i].Load()
		if bm := byName[h.members[i]]; bm != nil && tx[i] != 0 {
			bm.tx += tx[i]
			bm.entries = append(bm.entries, i)
		}
	}
	// Descending load; a stable sort keeps the members' order on ties.
	sortBals := func() {
		slices.SortStableFunc(bals, func(a, b *balMember) int { return cmp.Compare(b.tx, a.tx) })
	}
	sortBals()
	var logs []string
	for len(bals) > 1 {
		from, to := bals[0], bals[len(bals)-1]
		overload := from.tx - to.tx
		if overload < to.tx>>5 || overload < 100000 {
			break
		}
		e := chooseEntryToMigrate(from, to.tx, &tx)
		if e < 0 {
			// Nothing useful to move from 'from': not reconsidered.
			bals = bals[1:]
			continue
		}
		delta := tx[e]
		logs = append(logs, fmt.Sprintf("bond %s: shift %dkB of load (with hash %d) from %s to %s (now carrying %dkB and %dkB load, respectively)",
			bond, delta/1024, e, from.name, to.name, (from.tx-delta)/1024, (to.tx+delta)/1024))
		from.tx -= delta
		to.tx += delta
		h.members[e] = to.name
		from.entries = slices.DeleteFunc(from.entries, func(i int) bool { return i == e })
		sortBals()
	}
	for i := range h.tx {
		for {
			v := h.tx[i].Load()
			if h.tx[i].CompareAndSwap(v, v/2) {
				break
			}
		}
	}
	if len(logs) > 0 {
		br.backer.dp.RequestRevalidation()
	}
	return logs
}

// chooseEntryToMigrate is choose_entry_to_migrate: a bucket of from whose
// move to a member carrying toTx brings the lower of the two loads closer
// to their mean by at least a tenth of its distance; -1 if none (or from
// has one bucket only, which moving would not help).
func chooseEntryToMigrate(from *balMember, toTx uint64, tx *[bondBuckets]uint64) int {
	if len(from.entries) <= 1 {
		return -1
	}
	ideal := (from.tx + toTx) / 2
	for _, e := range from.entries {
		delta := tx[e]
		newLow := min(from.tx-delta, toTx+delta)
		if newLow > toTx && newLow-toTx >= (ideal-toTx)/10 {
			return e
		}
	}
	return -1
}
