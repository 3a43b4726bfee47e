package ofproto

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// group is one OpenFlow group. Immutable once published, except its
// counters; a modify makes a new one (with new counters, as OVS's).
type group struct {
	id      uint32
	typ     uint8
	buckets []ofp.Bucket
	// hashMap is dpHashMap's, made once.
	hashOnce sync.Once
	hashMap  []int
	props    ofp.GroupProps
	created  time.Duration
	stats    *groupStats
}

// groupStats are a group's counters and its buckets', fed by the
// translation of packets that miss the datapath's flow caches.
type groupStats struct {
	packets, bytes atomic.Uint64
	buckets        []bucketStats // as the group's buckets
}

type bucketStats struct{ packets, bytes atomic.Uint64 }

// maxGroupDepth bounds chains of groups (a bucket outputting to a group,
// a watch_group): OVS's translation depth limit.
const maxGroupDepth = 64

func newGroup(id uint32, typ uint8, buckets []ofp.Bucket, props ofp.GroupProps, now time.Duration) *group {
	return &group{id: id, typ: typ, buckets: buckets, props: props, created: now,
		stats: &groupStats{buckets: make([]bucketStats, len(buckets))}}
}

// GroupMod applies a group mod as OVS's ofproto handle_group_mod does, or
// returns the error to refuse it with, changing nothing. Deleting a group
// deletes the flows that output to it.
func (br *Bridge) GroupMod(gm *ofp.GroupMod) *ofp.Error {
	if err := checkGroupMod(gm); err != nil {
		return err
	}
	var changes []ofp.FlowChange
	defer func() { br.reportChanges(changes) }()
	br.flowMu.Lock()
	defer br.flowMu.Unlock()
	br.startChanges()
	ft := br.tables.Load().withPrivateGroups()
	now := br.clock()
	removed, err := br.groupModLocked(ft, gm, now, gens.Add(1))
	if err != nil {
		br.takeChanges() // nothing changed
		return err
	}
	br.publish(ft)
	br.flowsChanged()
	for _, r := range removed {
		br.sendRemoved(r, ofp.FlowRemovedGroup, now)
		br.flowGone(r, ofp.FlowRemovedGroup, origin{})
	}
	changes = br.takeChanges()
	return nil
}

// withPrivateGroups returns a copy of ft whose group map may be changed.
func (ft *flowTables) withPrivateGroups() *flowTables {
	c := *ft
	c.groups = maps.Clone(ft.groups)
	if c.groups == nil {
		c.groups = map[uint32]*group{}
	}
	return &c
}

// checkGroupMod checks what of gm does not depend on the groups.
func checkGroupMod(gm *ofp.GroupMod) *ofp.Error {
	if gm.Command != ofp.GroupDelete && gm.ID > ofp.GroupMax {
		return &ofp.Error{Errno: ofp.GroupInvalid, Detail: "reserved group id"}
	}
	for i := range gm.Buckets {
		// A bucket's group action may name a group not added yet.
		if err := checkActions(gm.Buckets[i].Actions, nil, 0); err != nil {
			return err
		}
		ofp.CheckVLAN(gm.Buckets[i].Actions, false)
	}
	return nil
}

// groupModLocked applies a checked gm to ft, a private copy of the tables
// and groups (withPrivateGroups) whose new nodes carry generation gen,
// and returns the flows it deleted. On error ft may be half changed: the
// caller drops it. flowMu must be held.
func (br *Bridge) groupModLocked(ft *flowTables, gm *ofp.GroupMod, now time.Duration, gen uint64) ([]*rule, *ofp.Error) {
	for i := range gm.Buckets {
		if err := br.resolveTunMD(nil, gm.Buckets[i].Actions); err != nil {
			return nil, err
		}
	}
	cur := ft.groups[gm.ID]
	switch gm.Command {
	case ofp.GroupAdd, ofp.GroupAddOrMod, ofp.GroupModify:
		if cur != nil && gm.Command == ofp.GroupAdd {
			return nil, &ofp.Error{Errno: ofp.GroupExists}
		}
		if cur == nil && gm.Command == ofp.GroupModify {
			return nil, &ofp.Error{Errno: ofp.GroupUnknown}
		}
		ft.groups[gm.ID] = newGroup(gm.ID, gm.Type, gm.Buckets, gm.Props, now)
	case ofp.GroupInsertBucket:
		if cur == nil {
			return nil, &ofp.Error{Errno: ofp.GroupUnknown}
		}
		buckets, err := insertBuckets(cur.buckets, gm.Buckets, gm.CommandBucketID)
		if err != nil {
			return nil, err
		}
		ft.groups[gm.ID] = newGroup(gm.ID, cur.typ, buckets, cur.props, now)
	case ofp.GroupRemoveBucket:
		if cur == nil {
			return nil, &ofp.Error{Errno: ofp.GroupUnknown}
		}
		buckets, err := removeBuckets(cur.buckets, gm.CommandBucketID)
		if err != nil {
			return nil, err
		}
		ft.groups[gm.ID] = newGroup(gm.ID, cur.typ, buckets, cur.props, now)
	case ofp.GroupDelete:
		var gone []uint32
		if gm.ID == ofp.GroupAllGroups {
			gone = slices.Collect(maps.Keys(ft.groups))
			clear(ft.groups)
		} else if cur != nil {
			gone = []uint32{gm.ID}
			delete(ft.groups, gm.ID)
		}
		if len(gone) == 0 {
			return nil, nil
		}
		return br.deleteGroupFlows(ft, gone, gen), nil
	default:
		return nil, &ofp.Error{Errno: ofp.GroupBadCommand}
	}
	return nil, nil
}

// deleteGroupFlows removes from ft the flows that output to one of
// groups (OVS's delete_flows_for_group).
func (br *Bridge) deleteGroupFlows(ft *flowTables, groups []uint32, gen uint64) []*rule {
	var removed []*rule
	for t := range NumTables {
		var rs []*rule
		ft.table(t).each(func(r *rule) {
			for _, g := range ofp.Groups(r.actions()) {
				if slices.Contains(groups, g) {
					rs = append(rs, r)
					return
				}
			}
		})
		slices.SortFunc(rs, byRank)
		for _, r := range rs {
			ft.mutable(uint8(t), gen).remove(r, gen)
		}
		removed = append(removed, rs...)
	}
	return removed
}

// insertBuckets inserts add at the front, at the end, or after the bucket
// with id at (OpenFlow 1.5's command_bucket_id), as OVS does.
func insertBuckets(cur, add []ofp.Bucket, at uint32) ([]ofp.Bucket, *ofp.Error) {
	for _, b := range add {
		if slices.ContainsFunc(cur, func(c ofp.Bucket) bool { return c.ID == b.ID }) {
			return nil, &ofp.Error{Errno: ofp.GroupBucketExists}
		}
	}
	pos := len(cur)
	switch at {
	case ofp.BucketFirst:
		pos = 0
	case ofp.BucketLast, ofp.BucketAll:
	default:
		pos = slices.IndexFunc(cur, func(c ofp.Bucket) bool { return c.ID == at })
		if pos < 0 {
			return nil, &ofp.Error{Errno: ofp.GroupUnknownBucket}
		}
		pos++
	}
	return slices.Concat(cur[:pos], add, cur[pos:]), nil
}

// removeBuckets removes the bucket at (all, first, last or a bucket id).
func removeBuckets(cur []ofp.Bucket, at uint32) ([]ofp.Bucket, *ofp.Error) {
	switch {
	case at == ofp.BucketAll:
		return nil, nil
	case len(cur) == 0 && (at == ofp.BucketFirst || at == ofp.BucketLast):
		return cur, nil
	case at == ofp.BucketFirst:
		return slices.Clone(cur[1:]), nil
	case at == ofp.BucketLast:
		return slices.Clone(cur[:len(cur)-1]), nil
	}
	i := slices.IndexFunc(cur, func(c ofp.Bucket) bool { return c.ID == at })
	if i < 0 {
		return nil, &ofp.Error{Errno: ofp.GroupUnknownBucket}
	}
	return slices.Delete(slices.Clone(cur), i, i+1), nil
}

// missingGroup returns a group acts output to that ft lacks, if any.
func (ft *flowTables) missingGroup(acts []ofp.Action) (uint32, bool) {
	for _, g := range ofp.Groups(acts) {
		if ft.groups[g] == nil {
			return g, true
		}
	}
	return 0, false
}

// Groups describes every group, by group id.
func (br *Bridge) Groups() []ofp.GroupDesc {
	ft := br.tables.Load()
	var out []ofp.GroupDesc
	for _, id := range slices.Sorted(maps.Keys(ft.groups)) {
		g := ft.groups[id]
		out = append(out, ofp.GroupDesc{Type: g.typ, ID: g.id, Buckets: g.buckets, Props: g.props})
	}
	return out
}

// GroupStats reports every group's counters, by group id; ref_count is
// how many flows output to the group.
func (br *Bridge) GroupStats() []ofp.GroupStats {
	ft := br.tables.Load()
	now := br.clock()
	refs := map[uint32]uint32{}
	for t := range NumTables {
		ft.table(t).each(func(r *rule) {
			for _, g := range ofp.Groups(r.actions()) {
				refs[g]++
			}
		})
	}
	var out []ofp.GroupStats
	for _, id := range slices.Sorted(maps.Keys(ft.groups)) {
		g := ft.groups[id]
		s := ofp.GroupStats{ID: id, RefCount: refs[id], Packets: g.stats.packets.Load(), Bytes: g.stats.bytes.Load(),
			Duration: (now - g.created).Truncate(time.Millisecond)}
		for i := range g.stats.buckets {
			s.Buckets = append(s.Buckets, [2]uint64{g.stats.buckets[i].packets.Load(), g.stats.buckets[i].bytes.Load()})
		}
		out = append(out, s)
	}
	return out
}

// SetLivePorts tells the bridge which OpenFlow ports are live (link up,
// not administratively down), for fast-failover and select groups'
// watch_port. Installed datapath flows are revalidated when it changes.
func (br *Bridge) SetLivePorts(live map[uint32]bool) {
	if old := br.live.Load(); old != nil && maps.Equal(*old, live) {
		return
	}
	br.live.Store(&live)
	br.flowsChanged()
}

// portLive reports whether OpenFlow port no is live. Before the first
// SetLivePorts every existing port counts as live.
func (x *xlate) portLive(no uint32) bool {
	s := x.of.in.br
	if live := s.br.live.Load(); live != nil {
		return (*live)[no]
	}
	if no == ofp.PortLocal {
		return s.byOFPort[LocalOFPort] != nil
	}
	return no < ofp.PortMax && s.byOFPort[int(no)] != nil
}

// bucketLive is OVS's bucket_is_alive: a bucket that watches nothing is
// live; one that does is live if its watched port or group is.
func (x *xlate) bucketLive(b *ofp.Bucket, depth int) bool {
	if b.WatchPort == ofp.PortAny && b.WatchGroup == ofp.GroupAny {
		return true
	}
	if b.WatchPort != ofp.PortAny && b.WatchPort != ofp.PortController && x.portLive(b.WatchPort) {
		return true
	}
	return b.WatchGroup != ofp.GroupAny && x.groupLive(b.WatchGroup, depth+1)
}

// groupLive is OVS's group_is_alive: the group has a live bucket.
func (x *xlate) groupLive(id uint32, depth int) bool {
	g := x.of.in.br.br.tables.Load().groups[id]
	if g == nil || depth >= maxGroupDepth {
		return false
	}
	for i := range g.buckets {
		if x.bucketLive(&g.buckets[i], depth) {
			return true
		}
	}
	return false
}

// group executes the group action (xlate_group_action): every bucket of
// an all group, the first live bucket of a fast_failover one, the only
// bucket of an indirect one, and the bucket a select group's hash picks
// among its live buckets, or, if it picks by a dp_hash the packet does
// not have yet, nothing: the translation freezes (freeze.go). Each bucket
// runs as a clone: its changes to the flow end with it. The group counts
// the packet when a bucket runs, or for an all or indirect group always,
// as OVS's xlate_group_stats.
func (x *xlate) group(id uint32, table uint8) {
	g := x.of.in.br.br.tables.Load().groups[id]
	if g == nil {
		x.report(">>", "group %d does not exist", id)
		return
	}
	if x.of.groupDepth >= maxGroupDepth {
		x.report(">>>>", "over max translation depth %d", maxGroupDepth)
		return
	}
	switch g.typ {
	case ofp.GroupAll:
		x.countGroup(g, -1)
		for i := range g.buckets {
			x.bucket(g, i, table)
		}
	case ofp.GroupIndirect:
		x.countGroup(g, -1)
		if len(g.buckets) > 0 {
			x.bucket(g, 0, table)
		}
	case ofp.GroupFastFailover:
		for i := range g.buckets {
			if x.bucketLive(&g.buckets[i], 0) {
				x.report("->", "using bucket %d", g.buckets[i].ID)
				x.countGroup(g, -1)
				x.bucket(g, i, table)
				return
			}
			x.reportNotLive(&g.buckets[i])
		}
		x.report("->", "no live bucket")
	case ofp.GroupSelect:
		if i := x.selectBucket(g); i >= 0 {
			x.report("->", "using bucket %d", g.buckets[i].ID)
			x.countGroup(g, -1)
			x.bucket(g, i, table)
		} else {
			x.report("->", "no live bucket")
		}
	}
}

// bucket runs bucket i of g as a clone.
func (x *xlate) bucket(g *group, i int, table uint8) {
	x.countGroup(g, i)
	if x.trace != nil {
		// OVS's xlate_group_bucket: the bucket's actions under it.
		defer func(cur *[]*traceNode) { x.tt.cur = cur }(x.tt.open(traceBucket, fmt.Sprintf("bucket %d", g.buckets[i].ID)))
	}
	saved := *x.of
	x.of.groupDepth++
	// A bucket's actions are an action set (OVS's xlate_group_bucket):
	// reordered, one output, nothing without one.
	x.ofActions(actionSetList(g.buckets[i].Actions), table)
	x.finishFreeze()
	saved.wc, saved.resubmits = x.of.wc, x.of.resubmits
	*x.of = saved
	x.syncVLAN()
}

// countGroup credits what the translation credits its rules (the packet
// translated, or what the datapath flow forwarded since the last
// revalidation) to g (bucket -1) or its bucket i. A datapath flow of the
// pass after a select group's recirculation serves every connection whose
// dp_hash falls in its bucket: its packets count at each revalidation.
func (x *xlate) countGroup(g *group, i int) {
	if x.mode != modePacket && x.mode != modeRefresh || x.packets == 0 {
		return
	}
	if i < 0 {
		g.stats.packets.Add(x.packets)
		g.stats.bytes.Add(x.bytes)
		return
	}
	g.stats.buckets[i].packets.Add(x.packets)
	g.stats.buckets[i].bytes.Add(x.bytes)
}

// selectBucket picks a select group's bucket as OVS 3.1 does (-1 if none
// is live, or if the translation froze), and the mask gets the fields it
// read:
//   - selection_method=hash: the best weighted score (group_best_live_bucket)
//     for a hash of the group's fields, from a basis of its param
//     (pick_hash_fields_select_group);
//   - no method, or dp_hash, with buckets whose weights fit 256 hash
//     values (OVS's group_setup_dp_hash_table): by the packet's dp_hash
//     (pick_dp_hash_select_group). A packet without one freezes the
//     translation for the datapath to hash it (hash(sym_l4(0)) without a
//     method, the algorithm and basis of the method's param with dp_hash)
//     and recirculate: the first pass reads no field. After it, the
//     bucket of the group's hash map at dp_hash under the map's mask, or
//     the next live one after it. A packet-out, which the datapath does
//     not recirculate, takes the hash the datapath would compute;
//   - otherwise: the best score for the symmetric L4 hash
//     (pick_default_select_group).
func (x *xlate) selectBucket(g *group) int {
	k := &x.of.flow.Key
	if g.props.Method == "hash" {
		return x.bestLiveBucket(g, x.hashFields(g.props.Fields, g.props.Param))
	}
	hm := g.dpHashMap()
	if hm == nil {
		ofp.MaskHashFlow(k, &x.of.wc.Key, ofp.HashSymmetricL4)
		return x.bestLiveBucket(g, ofp.HashFlow(k, ofp.HashSymmetricL4, 0))
	}
	alg, basis := g.dpHashAlg()
	h := x.of.flow.DpHash
	switch {
	case h != 0:
		// dp_hash 0 is "not computed" (OVS's): a computed one is
		// consulted under the map's mask only.
		x.of.wc.DpHash |= uint32(len(hm) - 1)
	case x.noRecirc:
		h = datapath.PacketHash(k, alg, basis)
	default:
		x.freeze(datapath.Hash(alg, basis))
		return -1
	}
	for i := range hm {
		b := hm[(int(h)+i)&(len(hm)-1)]
		if x.selectLive(g, b) {
			return b
		}
	}
	return -1
}

// dpHashAlg is the hash algorithm and basis of a select group that picks
// by dp_hash (OVS's group_set_selection_method): symmetric L4 with basis
// 0 without a method; with dp_hash the algorithm in the param's upper 32
// bits (L4 if unknown) and the basis in its lower 32.
func (g *group) dpHashAlg() (uint8, uint32) {
	if g.props.Method == "" {
		return datapath.HashSymL4, 0
	}
	alg := datapath.HashL4
	if g.props.Param>>32 == uint64(datapath.HashSymL4) {
		alg = datapath.HashSymL4
	}
	return alg, uint32(g.props.Param)
}

// reportNotLive is OVS's xlate_report_bucket_not_live.
func (x *xlate) reportNotLive(b *ofp.Bucket) {
	if x.trace == nil {
		return
	}
	var why string
	if b.WatchPort != ofp.PortAny {
		why = "port " + ofp.PortNames(nil).Port(b.WatchPort)
	}
	if b.WatchGroup != ofp.GroupAny {
		if why != "" {
			why += " and "
		}
		why += fmt.Sprintf("port %d", b.WatchGroup) // sic
	}
	x.report("->", "bucket %d: not live due to %s", b.ID, why)
}

// selectLive is OVS's bucket_is_alive for a select group: a bucket of
// weight 0 is never used.
func (x *xlate) selectLive(g *group, i int) bool {
	return g.buckets[i].Weight != 0 && x.bucketLive(&g.buckets[i], 0)
}

// bestLiveBucket is OVS's group_best_live_bucket: the live bucket with the
// best (last best) score, (hash_int(bucket_id, basis) & 0xffff) * weight.
func (x *xlate) bestLiveBucket(g *group, basis uint32) int {
	best, bestScore := -1, uint32(0)
	for i := range g.buckets {
		b := &g.buckets[i]
		if !x.selectLive(g, i) {
			x.reportNotLive(b)
			continue
		}
		score := (ofp.HashInt(b.ID, basis) & 0xffff) * uint32(b.Weight)
		if score >= bestScore {
			best, bestScore = i, score
		}
		x.report("->", "bucket %d: score %d", b.ID, score)
	}
	return best
}

// dpHashMap is OVS's group_setup_dp_hash_table with at most 256 hash
// values: the bucket of each hash value, spread by weight (Webster's
// method), or nil when the weights need more values (or are all 0).
// Computed once per group.
func (g *group) dpHashMap() []int {
	g.hashOnce.Do(func() {
		var total uint64
		minW := uint64(0xffff)
		for _, b := range g.buckets {
			if b.Weight > 0 && uint64(b.Weight) < minW {
				minW = uint64(b.Weight)
			}
			total += uint64(b.Weight)
		}
		if total == 0 {
			return
		}
		slots := uint64(1)
		for slots < (total+minW-1)/minW {
			slots <<= 1
		}
		n := max(16, slots)
		if n > 256 { // OVS tries dp_hash with up to 256 hash values
			return
		}
		divisor := make([]uint32, len(g.buckets))
		value := make([]float64, len(g.buckets))
		for i, b := range g.buckets {
			divisor[i], value[i] = 1, float64(b.Weight)
		}
		g.hashMap = make([]int, n)
		for h := range g.hashMap {
			win := 0
			for i := 1; i < len(g.buckets); i++ {
				if value[i] > value[win] {
					win = i
				}
			}
			divisor[win] += 2
			value[win] = float64(g.buckets[win].Weight) / float64(divisor[win])
			g.hashMap[h] = win
		}
	})
	return g.hashMap
}

// hashFields is OVS's pick_hash_fields_select_group's hash: from a basis
// of param, each field whose prerequisites the flow meets, in OVS's field
// order, under its mask; the bits hashed are consulted.
func (x *xlate) hashFields(fields []ofp.HashField, param uint64) uint32 {
	basis := ofp.HashUint64(param)
	m := ofp.Match{Flow: x.of.flow}
	m.Mask.EthType, m.Mask.NwProto, m.Mask.VLANTCI = 0xffff, 0xff, 0xffff
	order := slices.Clone(fields)
	rank := func(hf ofp.HashField) int {
		if r, ok := ovsFieldOrder[hf.Field.Name]; ok {
			return r
		}
		return len(ovsFieldOrder) + int(hf.Field.ID)
	}
	slices.SortStableFunc(order, func(a, b ofp.HashField) int { return rank(a) - rank(b) })
	for _, hf := range order {
		x.of.wc.EthType, x.of.wc.NwProto = 0xffff, 0xff
		if !hf.Field.Prereqs(&m) {
			continue
		}
		v := hf.Field.Get(&x.of.flow)
		mask := hf.Mask
		if mask == nil {
			mask = make([]byte, len(v))
			for i := range mask {
				mask[i] = 0xff
			}
		}
		for i := range v {
			v[i] &= mask[i]
		}
		basis = ofp.HashBytes(v, basis)
		hf.Field.SetMask(&x.of.wc, mask)
	}
	return basis
}
