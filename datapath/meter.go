package datapath

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/govs/govs/datapath/packet"
)

// ActionMeter runs the packets through meter Action.MeterID (MeterSet):
// those that exceed a drop band are dropped, the others go on. A meter
// that does not exist lets every packet through (OVS's
// dp_netdev_run_meter).
const ActionMeter ActionKind = 24

// Meter returns the action that runs packets through meter id.
func Meter(id uint32) Action { return Action{Kind: ActionMeter, MeterID: id} }

// ActionMeteredUserspace is ActionUserspace (Cookie) for the packets meter
// MeterID lets through; every packet goes on to the next action. It is
// OVS's sample(sample=100.0%,actions(meter(M),userspace(...))), what
// xlate_controller_action emits for a controller action with a meter.
const ActionMeteredUserspace ActionKind = 25

// MeteredUserspace returns the action that hands the packets meter lets
// through to the UserspaceHandler with cookie.
func MeteredUserspace(cookie, meter uint32) Action {
	return Action{Kind: ActionMeteredUserspace, Cookie: cookie, MeterID: meter}
}

// metered returns the packets of pkts meter id lets through, in a copy
// of pkts (nil for the others) that scratch may hold; pkts is unchanged.
func (dp *Datapath) metered(id uint32, pkts, scratch []*packet.Packet, now int64) []*packet.Packet {
	out := append(scratch[:0], pkts...)
	dp.meter(id, out, now)
	return out
}

// MaxMeters is how many meters the datapath holds, ids 0 to MaxMeters-1
// (dpif-netdev's MAX_METERS); MaxMeterBands is the most bands per meter
// (MAX_BANDS).
const (
	MaxMeters     = 1 << 18
	MaxMeterBands = 8
)

// MeterConfig is a meter's configuration, in OpenFlow's units: rates in
// kbit/s, or packets/s if PktPS; bursts in kbit or packets. Every band
// is a drop band.
type MeterConfig struct {
	PktPS bool
	Bands []MeterBand
}

// MeterBand is one drop band: packets beyond Rate, with bursts of Burst
// (0: Rate, one second's worth, as dpif-netdev), are dropped.
type MeterBand struct {
	Rate, Burst uint32
}

// MeterStats are a meter's counters since it was set: packets and bytes
// it saw, and per band the packets and bytes the band dropped.
type MeterStats struct {
	Packets, Bytes uint64
	Bands          []MeterBandStats
}

// MeterBandStats are one band's counters.
type MeterBandStats struct {
	Packets, Bytes uint64
}

// Errors of MeterSet.
var (
	ErrMeterID    = errors.New("datapath: meter id out of range")
	ErrMeterBands = errors.New("datapath: too many meter bands")
	ErrMeterRate  = errors.New("datapath: meter band rate is zero")
)

// dpMeter is one meter: token buckets shared by every worker, so its
// mutex is taken once per batch of a flow.
type dpMeter struct {
	pktps bool

	mu sync.Mutex // guards the fields below
	// last is the datapath clock when the buckets were last filled.
	last  int64
	stats MeterStats
	bands []meterBand
}

// meterBand is a band's bucket: tokens in bits (kbps) or thousandths of
// a packet (pktps), as dpif-netdev keeps them; rate in tokens per
// nanosecond.
type meterBand struct {
	rate, max, tokens float64
	// orig is the configured rate, which decides between two bands a
	// packet exceeds (the higher wins).
	orig uint32
}

// meterTable is the datapath's meters, replaced whole on every change
// (copy on write); workers read it without locks.
type meterTable map[uint32]*dpMeter

// MeterSet creates or replaces meter id with cfg. The buckets start full
// and the counters at zero.
func (dp *Datapath) MeterSet(id uint32, cfg MeterConfig) error {
	if id >= MaxMeters {
		return fmt.Errorf("%w: %d", ErrMeterID, id)
	}
	if len(cfg.Bands) > MaxMeterBands {
		return fmt.Errorf("%w: %d", ErrMeterBands, len(cfg.Bands))
	}
	m := &dpMeter{pktps: cfg.PktPS, last: dp.clock(), stats: MeterStats{Bands: make([]MeterBandStats, len(cfg.Bands))}}
	for _, b := range cfg.Bands {
		if b.Rate == 0 {
			return ErrMeterRate
		}
		burst := b.Burst
		if burst == 0 {
			burst = b.Rate
		}
		// kbit/s is a bit per microsecond; a packet per second is a
		// thousandth of a packet per millisecond.
		max := float64(burst) * 1000
		m.bands = append(m.bands, meterBand{rate: float64(b.Rate) / 1e6, max: max, tokens: max, orig: b.Rate})
	}
	dp.meterMu.Lock()
	defer dp.meterMu.Unlock()
	old := dp.meters.Load()
	t := make(meterTable, len(*old)+1)
	for k, v := range *old {
		t[k] = v
	}
	t[id] = m
	dp.meters.Store(&t)
	return nil
}

// MeterDel deletes meter id, returning its final counters; ok is false
// if it did not exist.
func (dp *Datapath) MeterDel(id uint32) (s MeterStats, ok bool) {
	dp.meterMu.Lock()
	defer dp.meterMu.Unlock()
	old := dp.meters.Load()
	m := (*old)[id]
	if m == nil {
		return s, false
	}
	t := make(meterTable, len(*old))
	for k, v := range *old {
		if k != id {
			t[k] = v
		}
	}
	dp.meters.Store(&t)
	return m.snapshot(), true
}

// MeterGet returns meter id's counters.
func (dp *Datapath) MeterGet(id uint32) (MeterStats, bool) {
	m := (*dp.meters.Load())[id]
	if m == nil {
		return MeterStats{}, false
	}
	return m.snapshot(), true
}

func (m *dpMeter) snapshot() MeterStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats
	s.Bands = append([]MeterBandStats(nil), m.stats.Bands...)
	return s
}

// run meters pkts (nil entries are skipped) at clock now, setting the
// entries of the packets a band drops to nil (the caller owns them).
func (m *dpMeter) run(pkts []*packet.Packet, now int64) {
	// exceeded[i] is the band packet i exceeds with the highest rate,
	// plus one; 0 for none.
	var exceededBuf [64]uint8
	exceeded := exceededBuf[:0]
	if len(pkts) <= len(exceededBuf) {
		exceeded = exceededBuf[:len(pkts)]
	} else {
		exceeded = make([]uint8, len(pkts))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dt := float64(max(now-m.last, 0))
	m.last = max(now, m.last)
	var cnt, bytes uint64
	for _, p := range pkts {
		if p != nil {
			cnt++
			bytes += uint64(p.Len())
		}
	}
	m.stats.Packets += cnt
	m.stats.Bytes += bytes
	volume := float64(bytes * 8)
	if m.pktps {
		volume = float64(cnt * 1000)
	}
	for bi := range m.bands {
		b := &m.bands[bi]
		b.tokens = min(b.max, b.tokens+dt*b.rate)
		if b.tokens >= volume {
			// The whole batch fits.
			b.tokens -= volume
			continue
		}
		for i, p := range pkts {
			if p == nil {
				continue
			}
			need := 1000.0
			if !m.pktps {
				need = float64(p.Len() * 8)
			}
			if b.tokens >= need {
				b.tokens -= need
				continue
			}
			if e := exceeded[i]; e == 0 || m.bands[e-1].orig < b.orig {
				exceeded[i] = uint8(bi + 1)
			}
		}
	}
	for i, e := range exceeded {
		if e == 0 {
			continue
		}
		bs := &m.stats.Bands[e-1]
		bs.Packets++
		bs.Bytes += uint64(pkts[i].Len())
		pkts[i] = nil
	}
}

// meter runs pkts through meter id, if it exists.
func (dp *Datapath) meter(id uint32, pkts []*packet.Packet, now int64) {
	if m := (*dp.meters.Load())[id]; m != nil {
		m.run(pkts, now)
	}
}

func meterString(id uint32) string { return "meter(" + strconv.FormatUint(uint64(id), 10) + ")" }
