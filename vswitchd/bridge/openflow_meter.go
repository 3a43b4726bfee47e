package bridge

import (
	"github.com/govs/govs/vswitchd/ofproto/connmgr"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// meterer returns the bridge's OpenFlow switch if it has meters.
func (o ofSource) meterer() connmgr.Meterer {
	m, _ := o.of().(connmgr.Meterer)
	return m
}

// MeterMod changes the bridge's meters.
func (o ofSource) MeterMod(m *ofp.MeterMod) *ofp.Error {
	mt := o.meterer()
	if mt == nil {
		return &ofp.Error{Errno: ofp.EPerm, Detail: "bridge is gone"}
	}
	return mt.MeterMod(m)
}

// MeterConfigs reports meter id's configuration, or every meter's.
func (o ofSource) MeterConfigs(id uint32) ([]ofp.MeterConfig, bool) {
	if mt := o.meterer(); mt != nil {
		return mt.MeterConfigs(id)
	}
	return nil, id == ofp.MeterAll
}

// MeterStats reports meter id's counters, or every meter's.
func (o ofSource) MeterStats(id uint32) ([]ofp.MeterStats, bool) {
	if mt := o.meterer(); mt != nil {
		return mt.MeterStats(id)
	}
	return nil, id == ofp.MeterAll
}

// MeterFeatures reports the meter capabilities.
func (o ofSource) MeterFeatures() ofp.MeterFeatures {
	if mt := o.meterer(); mt != nil {
		return mt.MeterFeatures()
	}
	return ofp.MeterFeatures{}
}
