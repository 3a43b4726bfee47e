package ofproto

import (
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Meters are OpenFlow's (OFPT_METER_MOD), one table per bridge, enforced
// by the datapath's meter action as OVS's ofproto-dpif with dpif-netdev:
// each OpenFlow meter owns a datapath meter (its provider id) that every
// flow using it runs packets through.

// meterFeatures are what govs' datapath supports, as Debian's
// ovs-vswitchd (netdev) reports them: drop bands only, kbps, pktps,
// burst and stats.
var meterFeatures = ofp.MeterFeatures{MaxMeter: datapath.MaxMeters, BandTypes: 1 << ofp.BandDrop,
	Capabilities: ofp.MeterKbps | ofp.MeterPktps | ofp.MeterBurst | ofp.MeterStatsFlag, MaxBands: datapath.MaxMeterBands}

// MeterFeatures returns the bridge's meter capabilities.
func (br *Bridge) MeterFeatures() ofp.MeterFeatures { return meterFeatures }

// meter is one OpenFlow meter of a bridge.
type meter struct {
	cfg     ofp.MeterConfig
	dpID    uint32        // the datapath meter
	created time.Duration // bridge clock
}

// meterIDs hands out datapath meter ids, lowest free first, across the
// backer's bridges (OVS's meter id pool).
type meterIDs struct {
	mu   sync.Mutex // guards used
	used map[uint32]bool
}

func (p *meterIDs) alloc() (uint32, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used == nil {
		p.used = map[uint32]bool{}
	}
	for id := uint32(0); id < datapath.MaxMeters; id++ {
		if !p.used[id] {
			p.used[id] = true
			return id, true
		}
	}
	return 0, false
}

func (p *meterIDs) free(id uint32) {
	p.mu.Lock()
	delete(p.used, id)
	p.mu.Unlock()
}

// dpMeterConfig turns an OpenFlow meter into the datapath's, refusing what
// the datapath cannot do with the errors ofproto-dpif maps dpif-netdev's
// to.
func dpMeterConfig(m *ofp.MeterMod) (datapath.MeterConfig, *ofp.Error) {
	if m.Flags&^(ofp.MeterKbps|ofp.MeterPktps|ofp.MeterBurst|ofp.MeterStatsFlag) != 0 {
		return datapath.MeterConfig{}, &ofp.Error{Errno: ofp.MeterBadFlags, Detail: "unsupported meter flags"}
	}
	cfg := datapath.MeterConfig{PktPS: m.Flags&ofp.MeterPktps != 0}
	for _, b := range m.Bands {
		if b.Type != ofp.BandDrop {
			return cfg, &ofp.Error{Errno: ofp.MeterBadBand, Detail: "only drop bands are supported"}
		}
		if b.Rate == 0 {
			return cfg, &ofp.Error{Errno: ofp.MeterBadRate, Detail: "band rate 0"}
		}
		cfg.Bands = append(cfg.Bands, datapath.MeterBand{Rate: b.Rate, Burst: b.Burst})
	}
	return cfg, nil
}

// MeterMod applies a meter mod as OVS's handle_meter_mod, or returns the
// error to refuse it with, changing nothing. Deleting a meter deletes the
// flows that use it.
func (br *Bridge) MeterMod(m *ofp.MeterMod) *ofp.Error {
	if m.Command != ofp.MeterDelete {
		switch {
		case m.ID == 0, m.ID > ofp.MeterMax && m.ID != ofp.MeterSlowpath && m.ID != ofp.MeterController:
			return &ofp.Error{Errno: ofp.InvalidMeter, Detail: "meter id out of range"}
		case len(m.Bands) > datapath.MaxMeterBands:
			return &ofp.Error{Errno: ofp.OutOfBands, Detail: "too many bands"}
		}
	}
	br.flowMu.Lock()
	defer br.flowMu.Unlock()
	switch m.Command {
	case ofp.MeterAdd:
		if br.meters[m.ID] != nil {
			return &ofp.Error{Errno: ofp.MeterExists}
		}
		cfg, err := dpMeterConfig(m)
		if err != nil {
			return err
		}
		id, ok := br.backer.meterPool.alloc()
		if !ok {
			return &ofp.Error{Errno: ofp.OutOfMeters}
		}
		if err := br.backer.dp.MeterSet(id, cfg); err != nil {
			br.backer.meterPool.free(id)
			return dpMeterError(err)
		}
		if br.meters == nil {
			br.meters = map[uint32]*meter{}
		}
		br.meters[m.ID] = &meter{cfg: ofp.MeterConfig{ID: m.ID, Flags: m.Flags, Bands: m.Bands}, dpID: id, created: br.clock()}
	case ofp.MeterModify:
		old := br.meters[m.ID]
		if old == nil {
			return &ofp.Error{Errno: ofp.UnknownMeter}
		}
		cfg, err := dpMeterConfig(m)
		if err != nil {
			return err
		}
		if err := br.backer.dp.MeterSet(old.dpID, cfg); err != nil {
			return dpMeterError(err)
		}
		br.meters[m.ID] = &meter{cfg: ofp.MeterConfig{ID: m.ID, Flags: m.Flags, Bands: m.Bands}, dpID: old.dpID, created: old.created}
	case ofp.MeterDelete:
		doomed := func(id uint32) bool { return br.meters[id] != nil && (m.ID == ofp.MeterAll || id == m.ID) }
		br.deleteRulesLocked(func(r *rule) bool { return slices.ContainsFunc(ofp.Meters(r.actions()), doomed) }, ofp.FlowRemovedMeter)
		for id, mt := range br.meters {
			if doomed(id) {
				br.backer.dp.MeterDel(mt.dpID)
				br.backer.meterPool.free(mt.dpID)
				delete(br.meters, id)
			}
		}
	default:
		return &ofp.Error{Errno: ofp.MeterBadCommand}
	}
	if m.Command != ofp.MeterDelete && (m.ID == ofp.MeterController || m.ID == ofp.MeterSlowpath) {
		// OVS limits packet-ins and slow-path upcalls with these; govs
		// keeps them but does not.
		br.backer.log.Warnf("bridge %s: meter %s is not enforced by govs (packet-in and slow-path rate limiting are not supported)",
			br.name, map[uint32]string{ofp.MeterController: "controller", ofp.MeterSlowpath: "slowpath"}[m.ID])
	}
	br.publishMetersLocked()
	return nil
}

func dpMeterError(err error) *ofp.Error {
	switch {
	case errors.Is(err, datapath.ErrMeterID):
		return &ofp.Error{Errno: ofp.OutOfMeters, Detail: err.Error()}
	case errors.Is(err, datapath.ErrMeterBands):
		return &ofp.Error{Errno: ofp.OutOfBands, Detail: err.Error()}
	case errors.Is(err, datapath.ErrMeterRate):
		return &ofp.Error{Errno: ofp.MeterBadRate, Detail: err.Error()}
	}
	return &ofp.Error{Errno: ofp.MeterUnknown, Detail: err.Error()}
}

// publishMetersLocked makes the meters visible to translations: OpenFlow
// id to datapath meter. flowMu must be held.
func (br *Bridge) publishMetersLocked() {
	ids := make(map[uint32]uint32, len(br.meters))
	for id, m := range br.meters {
		ids[id] = m.dpID
	}
	br.meterMap.Store(&ids)
}

// deleteRulesLocked deletes every rule doomed selects and reports their
// removal with reason. flowMu must be held.
func (br *Bridge) deleteRulesLocked(doomed func(*rule) bool, reason uint8) {
	old := br.tables.Load()
	ft := *old
	gen := gens.Add(1)
	now := br.clock()
	var removed []*rule
	for t := range NumTables {
		for _, r := range old.table(t).sorted() {
			if doomed(r) {
				ft.mutable(uint8(t), gen).remove(r, gen)
				removed = append(removed, r)
			}
		}
	}
	if len(removed) == 0 {
		return
	}
	br.publish(&ft)
	br.flowsChanged()
	for _, r := range removed {
		br.sendRemoved(r, reason, now)
	}
}

// checkMeters refuses actions that use a meter the bridge does not have
// (OVS's OFPERR_OFPMMFC_INVALID_METER). A flow mod holds flowMu, so that
// no meter goes away meanwhile.
func (br *Bridge) checkMeters(acts []ofp.Action) *ofp.Error {
	ids := br.meterMap.Load()
	for _, id := range ofp.Meters(acts) {
		if ids == nil {
			return &ofp.Error{Errno: ofp.InvalidMeter, Detail: "no such meter"}
		}
		if _, ok := (*ids)[id]; !ok {
			return &ofp.Error{Errno: ofp.InvalidMeter, Detail: "no such meter"}
		}
	}
	return nil
}

// MeterConfigs returns the configuration of meter id, or of every meter
// for ofp.MeterAll; ok is false if id does not exist.
func (br *Bridge) MeterConfigs(id uint32) (out []ofp.MeterConfig, ok bool) {
	br.flowMu.Lock()
	defer br.flowMu.Unlock()
	for _, m := range br.selectMetersLocked(id) {
		out = append(out, m.cfg)
	}
	return out, id == ofp.MeterAll || len(out) > 0
}

// MeterStats returns the counters of meter id, or of every meter for
// ofp.MeterAll; ok is false if id does not exist.
func (br *Bridge) MeterStats(id uint32) (out []ofp.MeterStats, ok bool) {
	br.flowMu.Lock()
	defer br.flowMu.Unlock()
	ms := br.selectMetersLocked(id)
	if len(ms) == 0 {
		return nil, id == ofp.MeterAll
	}
	flows := map[uint32]uint32{}
	ft := br.tables.Load()
	for t := range NumTables {
		ft.table(t).each(func(r *rule) {
			for _, id := range ofp.Meters(r.actions()) {
				flows[id]++
			}
		})
	}
	now := br.clock()
	for _, m := range ms {
		s, _ := br.backer.dp.MeterGet(m.dpID)
		d := now - m.created
		st := ofp.MeterStats{ID: m.cfg.ID, FlowCount: flows[m.cfg.ID], Packets: s.Packets, Bytes: s.Bytes,
			DurationSec: uint32(d / time.Second), DurNsec: uint32(d % time.Second)}
		for _, b := range s.Bands {
			st.Bands = append(st.Bands, [2]uint64{b.Packets, b.Bytes})
		}
		out = append(out, st)
	}
	return out, true
}

// selectMetersLocked returns meter id, or every meter for ofp.MeterAll,
// by id. flowMu must be held.
func (br *Bridge) selectMetersLocked(id uint32) []*meter {
	var ms []*meter
	for mid, m := range br.meters {
		if id == ofp.MeterAll || id == mid {
			ms = append(ms, m)
		}
	}
	slices.SortFunc(ms, func(a, b *meter) int { return int(int64(a.cfg.ID) - int64(b.cfg.ID)) })
	return ms
}

// deleteMeters removes all the bridge's meters from the datapath (the
// bridge goes away).
func (br *Bridge) deleteMeters() {
	br.flowMu.Lock()
	defer br.flowMu.Unlock()
	for id, m := range br.meters {
		br.backer.dp.MeterDel(m.dpID)
		br.backer.meterPool.free(m.dpID)
		delete(br.meters, id)
	}
	br.publishMetersLocked()
}

// ofMeter translates the meter action: the packet goes through the
// meter's datapath meter; a meter that no longer exists is skipped, as
// OVS's xlate_meter_action.
// meterController meters the packet-in the controller action just
// emitted (the last action) with OpenFlow meter id, as OVS's xlate_controller_action: the
// userspace action becomes a metered one, which only the copy to the
// controller goes through. A meter that does not exist meters nothing
// (OVS logs it when the flow is added and sends every packet-in). Unlike
// OVS, which binds the meter when the flow is added, the meter is looked
// up as the packet is translated: one added later applies too.
func (x *xlate) meterController(id uint32) {
	ids := x.of.in.br.br.meterMap.Load()
	if ids == nil {
		return
	}
	if dp, ok := (*ids)[id]; ok {
		last := &x.acts[len(x.acts)-1]
		*last = datapath.MeteredUserspace(last.Cookie, dp)
	}
}

func (x *xlate) ofMeter(id uint32) {
	ids := x.of.in.br.br.meterMap.Load()
	if ids == nil {
		return
	}
	if dp, ok := (*ids)[id]; ok {
		x.acts = append(x.acts, datapath.Meter(dp))
	}
}
