package connmgr

import (
	"fmt"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Meterer is a Source with OpenFlow meters.
type Meterer interface {
	// MeterMod applies m, or returns the error to refuse it with.
	MeterMod(m *ofp.MeterMod) *ofp.Error
	// MeterConfigs and MeterStats return meter id's, or every meter's
	// for ofp.MeterAll; ok is false if id does not exist.
	MeterConfigs(id uint32) (cfgs []ofp.MeterConfig, ok bool)
	MeterStats(id uint32) (stats []ofp.MeterStats, ok bool)
	// MeterFeatures are the switch's meter capabilities.
	MeterFeatures() ofp.MeterFeatures
}

// meterMod answers OFPT_METER_MOD.
func (c *conn) meterMod(m *ofp.MeterMod) ([][]byte, *ofp.Error) {
	mt, ok := c.m.src.(Meterer)
	if !ok {
		return nil, &ofp.Error{Errno: ofp.BadType, Name: "OFPT_METER_MOD", Detail: "not supported"}
	}
	if err := mt.MeterMod(m); err != nil {
		if err.Name == "" {
			err.Name = "OFPT_METER_MOD"
		}
		return nil, err
	}
	return nil, nil
}

// meterStats answers the METER, METER_CONFIG and METER_FEATURES requests.
func (c *conn) meterStats(m *ofp.StatsRequest) ([][]byte, *ofp.Error) {
	v := c.negotiated()
	mt, ok := c.m.src.(Meterer)
	if !ok {
		if m.Kind == ofp.StatsMeterFeatures {
			return ofp.EncodeMeterFeaturesReply(v, m.Xid, ofp.MeterFeatures{}), nil
		}
		return nil, &ofp.Error{Errno: ofp.BadStat, Detail: fmt.Sprintf("statistics type %d not handled", m.Kind)}
	}
	unknown := &ofp.Error{Errno: ofp.UnknownMeter, Detail: fmt.Sprintf("meter %d", m.Meter)}
	switch m.Kind {
	case ofp.StatsMeter:
		stats, ok := mt.MeterStats(m.Meter)
		if !ok {
			return nil, unknown
		}
		return ofp.EncodeMeterStatsReply(v, m.Xid, stats), nil
	case ofp.StatsMeterConfig:
		cfgs, ok := mt.MeterConfigs(m.Meter)
		if !ok {
			return nil, unknown
		}
		return ofp.EncodeMeterConfigReply(v, m.Xid, cfgs), nil
	}
	return ofp.EncodeMeterFeaturesReply(v, m.Xid, mt.MeterFeatures()), nil
}
