package ofproto

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// group is one OpenFlow group. Immutable once published, except its
// counters; a modify makes a new one (with new counters, as OVS's).
type group struct {
	id      uint32
	typ     uint8
	buckets []ofp.Bucket
	props   ofp.GroupProps
	created time.Duration
	stats   *groupStats
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
	br.tables.Store(ft)
	br.flowsChanged()
	for _, r := range removed {
		br.sendRemoved(r, ofp.FlowRemovedGroup, now)
		br.flowGone(r, ofp.FlowRemovedGroup, nil)
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
	for t := range ft.t {
		var rs []*rule
		ft.t[t].each(func(r *rule) {
			for _, g := range ofp.Groups(r.actions) {
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
	for t := range ft.t {
		ft.t[t].each(func(r *rule) {
			for _, g := range ofp.Groups(r.actions) {
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
// among its live buckets. Each bucket runs as a clone: its changes to the
// flow end with it.
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
	x.countGroup(g, -1)
	switch g.typ {
	case ofp.GroupAll:
		for i := range g.buckets {
			x.bucket(g, i, table)
		}
	case ofp.GroupIndirect:
		if len(g.buckets) > 0 {
			x.bucket(g, 0, table)
		}
	case ofp.GroupFastFailover:
		for i := range g.buckets {
			if x.bucketLive(&g.buckets[i], 0) {
				x.bucket(g, i, table)
				return
			}
		}
		x.report("->", "no live bucket")
	case ofp.GroupSelect:
		if i := x.selectBucket(g); i >= 0 {
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
	saved.wc, saved.resubmits = x.of.wc, x.of.resubmits
	*x.of = saved
	x.syncVLAN()
}

// countGroup counts the packet being translated for g (bucket -1) or its
// bucket i: only a translation of a packet, not a revalidation.
func (x *xlate) countGroup(g *group, i int) {
	if x.mode != modePacket {
		return
	}
	var n uint64
	if x.pkt0 != nil {
		n = uint64(x.pkt0.Len())
	}
	if i < 0 {
		g.stats.packets.Add(1)
		g.stats.bytes.Add(n)
		return
	}
	g.stats.buckets[i].packets.Add(1)
	g.stats.buckets[i].bytes.Add(n)
}

// selectBucket picks a select group's bucket: the live bucket with the
// best weighted score for the flow's hash (OVS's group_best_live_bucket),
// -1 if none is live. The hash is of the group's fields for
// selection_method=hash; otherwise of the symmetric L4 fields OVS's
// default method hashes (dp_hash, which OVS computes in the datapath after
// a recirculation, is computed here from the same fields). The mask gets
// the hashed fields.
func (x *xlate) selectBucket(g *group) int {
	var basis uint64
	if g.props.Method == "hash" {
		basis = x.hashFields(g.props.Fields, g.props.Param)
	} else {
		basis = x.hashSymmetricL4()
	}
	best, bestScore := -1, uint64(0)
	for i := range g.buckets {
		b := &g.buckets[i]
		if !x.bucketLive(b, 0) {
			continue
		}
		score := (mix64(basis^uint64(b.ID)*0x9e3779b97f4a7c15) & 0xffff) * uint64(b.Weight)
		if best < 0 || score >= bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

// hashFields hashes fields of the flow under their masks.
func (x *xlate) hashFields(fields []ofp.HashField, param uint64) uint64 {
	h := fnv.New64a()
	var seed [8]byte
	binary.BigEndian.PutUint64(seed[:], param)
	h.Write(seed[:])
	for _, hf := range fields {
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
		h.Write(v)
		// The bits hashed are consulted.
		hf.Field.SetMasked(&x.of.wc, mask, mask)
	}
	return h.Sum64()
}

// hashSymmetricL4 is OVS's flow_hash_symmetric_l4: the same for both
// directions of a connection, over the Ethernet addresses and type, the
// VLAN ID, the IP addresses and protocol and the TCP/UDP/SCTP ports;
// those fields get into the mask (flow_mask_hash_fields).
func (x *xlate) hashSymmetricL4() uint64 {
	f, wc := &x.of.flow.Key, &x.of.wc.Key
	var b []byte
	for i := range 6 {
		b = append(b, f.EthSrc[i]^f.EthDst[i])
	}
	b = binary.BigEndian.AppendUint16(b, f.EthType)
	b = binary.BigEndian.AppendUint16(b, f.VLANTCI&flow.VLANVIDMask)
	all6 := [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	wc.EthSrc, wc.EthDst, wc.EthType = all6, all6, 0xffff
	wc.VLANTCI |= flow.VLANVIDMask | flow.VLANPresent
	ip := false
	switch f.EthType {
	case flow.EthTypeIPv4:
		for i := range 4 {
			b = append(b, f.IPv4Src[i]^f.IPv4Dst[i])
		}
		wc.IPv4Src, wc.IPv4Dst = [4]byte{0xff, 0xff, 0xff, 0xff}, [4]byte{0xff, 0xff, 0xff, 0xff}
		ip = true
	case flow.EthTypeIPv6:
		for i := range 16 {
			b = append(b, f.IPv6Src[i]^f.IPv6Dst[i])
		}
		for i := range 16 {
			wc.IPv6Src[i], wc.IPv6Dst[i] = 0xff, 0xff
		}
		ip = true
	}
	if ip {
		b = append(b, f.NwProto)
		wc.NwProto = 0xff
		switch f.NwProto {
		case flow.IPProtoTCP, flow.IPProtoUDP, ipProtoSCTP:
			b = binary.BigEndian.AppendUint16(b, f.TpSrc^f.TpDst)
			wc.TpSrc, wc.TpDst = 0xffff, 0xffff
		}
	}
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

const ipProtoSCTP = 132

// mix64 is a 64-bit finaliser (splitmix64's): every input bit affects
// every output bit.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// packetOf is the packet being translated in u, nil when revalidating.
func packetOf(u *datapath.Upcall) interface{ Len() int } {
	if u.Packet == nil {
		return nil
	}
	return u.Packet
}
