package bridge

import "github.com/govs/govs/vswitchd/ofproto/ofp"

// ofGroups is an OFBridge with OpenFlow groups (ofproto.Bridge).
type ofGroups interface {
	GroupMod(gm *ofp.GroupMod) *ofp.Error
	Groups() []ofp.GroupDesc
	GroupStats() []ofp.GroupStats
	// SetLivePorts gives the ports fast-failover and select groups
	// watch.
	SetLivePorts(live map[uint32]bool)
}

func (o ofSource) groups() ofGroups {
	g, _ := o.of().(ofGroups)
	return g
}

// GroupMod applies an OFPT_GROUP_MOD to the bridge.
func (o ofSource) GroupMod(gm *ofp.GroupMod) *ofp.Error {
	g := o.groups()
	if g == nil {
		return &ofp.Error{Errno: ofp.EPerm, Detail: "bridge is gone"}
	}
	return g.GroupMod(gm)
}

// Groups describes the bridge's groups.
func (o ofSource) Groups() []ofp.GroupDesc {
	if g := o.groups(); g != nil {
		return g.Groups()
	}
	return nil
}

// GroupStats reports the bridge's groups' counters.
func (o ofSource) GroupStats() []ofp.GroupStats {
	if g := o.groups(); g != nil {
		return g.GroupStats()
	}
	return nil
}
