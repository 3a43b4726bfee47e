package connmgr

import (
	"slices"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// GroupTable is a Source with OpenFlow groups.
type GroupTable interface {
	// GroupMod applies a group mod, or returns the error to refuse it
	// with.
	GroupMod(gm *ofp.GroupMod) *ofp.Error
	// Groups and GroupStats describe every group, by group id.
	Groups() []ofp.GroupDesc
	GroupStats() []ofp.GroupStats
}

// groupFeatures is what OVS's userspace datapath reports in
// OFPMP_GROUP_FEATURES: every group type; select weights, liveness and
// chaining; OFPG_MAX groups of each type; and per type the same actions
// (OFPAT_OUTPUT, COPY..., SET_MPLS_TTL to SET_FIELD as OVS's bitmap).
var groupFeatures = ofp.GroupFeatures{
	Types:        1<<ofp.GroupAll | 1<<ofp.GroupSelect | 1<<ofp.GroupIndirect | 1<<ofp.GroupFastFailover,
	Capabilities: 0x7, // OFPGFC_SELECT_WEIGHT | OFPGFC_SELECT_LIVENESS | OFPGFC_CHAINING
	MaxGroups:    [4]uint32{ofp.GroupMax, ofp.GroupMax, ofp.GroupMax, ofp.GroupMax},
	Actions:      [4]uint32{groupActions12, groupActions12, groupActions12, groupActions12},
}

// groupActions12 is the OpenFlow 1.2+ action bitmap OVS reports: output,
// set_mpls_ttl, dec_mpls_ttl, push_vlan, pop_vlan, push_mpls, pop_mpls,
// set_queue, group, set_nw_ttl, dec_nw_ttl, set_field.
const groupActions12 = 1 | 0x7ff<<15

// groupActions10 is the same in OpenFlow 1.0's action numbers (OVS's
// NXST_GROUP_FEATURES): OFPAT10_OUTPUT to OFPAT10_ENQUEUE, all twelve.
const groupActions10 = 0xfff

func (c *conn) groupMod(m *ofp.GroupMod) *ofp.Error {
	gt, ok := c.m.src.(GroupTable)
	if !ok {
		return &ofp.Error{Errno: ofp.BadType, Name: "OFPT_GROUP_MOD", Detail: "not supported"}
	}
	if err := gt.GroupMod(m); err != nil {
		if err.Name == "" {
			err.Name = "OFPT_GROUP_MOD"
		}
		return err
	}
	return nil
}

// groupStats answers GROUP, GROUP_DESC and GROUP_FEATURES requests.
func (c *conn) groupStats(m *ofp.StatsRequest) [][]byte {
	v := c.negotiated()
	gt, _ := c.m.src.(GroupTable)
	switch m.Kind {
	case ofp.StatsGroupFeatures:
		f := groupFeatures
		if v == ofp.V10 {
			f.Actions = [4]uint32{groupActions10, groupActions10, groupActions10, groupActions10}
		}
		return ofp.EncodeGroupFeaturesReply(v, m.Xid, &f)
	case ofp.StatsGroupDesc:
		var groups []ofp.GroupDesc
		if gt != nil {
			groups = gt.Groups()
		}
		if m.Group != ofp.GroupAny && m.Group != ofp.GroupAllGroups {
			groups = slices.DeleteFunc(groups, func(g ofp.GroupDesc) bool { return g.ID != m.Group })
		}
		return ofp.EncodeGroupDescReply(v, m.Xid, groups)
	default:
		var stats []ofp.GroupStats
		if gt != nil {
			stats = gt.GroupStats()
		}
		if m.Group != ofp.GroupAny && m.Group != ofp.GroupAllGroups {
			stats = slices.DeleteFunc(stats, func(g ofp.GroupStats) bool { return g.ID != m.Group })
		}
		return ofp.EncodeGroupStatsReply(v, m.Xid, stats)
	}
}

// LivePorts returns the OpenFlow ports last reported (SyncPorts) as live:
// link up and not administratively down.
func (m *Manager) LivePorts() map[uint32]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	live := map[uint32]bool{}
	for no, p := range m.ports {
		if p.State&ofp.PortStateLive != 0 && p.Config&ofp.PortConfigDown == 0 {
			live[no] = true
		}
	}
	return live
}
