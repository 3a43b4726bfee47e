package datapath

import (
	"fmt"

	"github.com/govs/govs/datapath/packet"
)

// Policing is a port's ingress policing, in the units of the Interface
// columns ingress_policing_rate/_burst (kbit/s, kbit) and
// ingress_policing_kpkts_rate/_burst (1000 packets/s, 1000 packets). A
// zero rate turns that bucket off; a zero burst with a rate means OVS's
// default (DefaultPolicingBurst, DefaultPolicingKpktsBurst).
type Policing struct {
	Rate, Burst           uint32
	KpktsRate, KpktsBurst uint32
}

// OVS's default bursts (vswitchd/vswitch.xml, ingress_policing_burst and
// ingress_policing_kpkts_burst).
const (
	DefaultPolicingBurst      = 8000 // kbit
	DefaultPolicingKpktsBurst = 16   // kpkts
)

// Enabled reports whether p polices anything.
func (p Policing) Enabled() bool { return p.Rate > 0 || p.KpktsRate > 0 }

func (p Policing) String() string {
	return fmt.Sprintf("rate %d kbps burst %d kb, %d kpps burst %d kpkts", p.Rate, p.Burst, p.KpktsRate, p.KpktsBurst)
}

// policer is the token buckets of one port. Only the port's rx goroutine
// uses it: a change of configuration replaces it (dpPort.policer), full.
type policer struct {
	// Bytes: rate in bytes per nanosecond, capacity and tokens in bytes.
	byteRate, byteCap, bytes float64
	// Packets: rate per nanosecond, capacity and tokens in packets.
	pktRate, pktCap, pkts float64
	// last is the datapath clock when the buckets were last filled.
	last int64
}

func newPolicer(p Policing, now int64) *policer {
	pol := &policer{last: now}
	if p.Rate > 0 {
		burst := p.Burst
		if burst == 0 {
			burst = DefaultPolicingBurst
		}
		pol.byteRate = float64(p.Rate) * 1000 / 8 / 1e9
		pol.byteCap = float64(burst) * 1000 / 8
		pol.bytes = pol.byteCap
	}
	if p.KpktsRate > 0 {
		burst := p.KpktsBurst
		if burst == 0 {
			burst = DefaultPolicingKpktsBurst
		}
		pol.pktRate = float64(p.KpktsRate) * 1000 / 1e9
		pol.pktCap = float64(burst) * 1000
		pol.pkts = pol.pktCap
	}
	return pol
}

// etherHeaderLen is left out of a frame's size, as netdev-dpdk's
// srtcm policer counts (the bytes after the Ethernet header).
const etherHeaderLen = 14

// police moves the frames of pkts[:n] that the buckets let through to the
// front, in order, and returns how many they are; the others, at the
// back, are dropped: Reset if reset is set (the caller owns them).
// now is the datapath clock.
func (pol *policer) police(pkts []*packet.Packet, n int, now int64, reset bool) int {
	if dt := float64(now - pol.last); dt > 0 {
		pol.bytes = min(pol.byteCap, pol.bytes+dt*pol.byteRate)
		pol.pkts = min(pol.pktCap, pol.pkts+dt*pol.pktRate)
		pol.last = now
	}
	kept := 0
	for i := 0; i < n; i++ {
		p := pkts[i]
		size := float64(max(p.Len()-etherHeaderLen, 0))
		if (pol.byteRate > 0 && pol.bytes < size) || (pol.pktRate > 0 && pol.pkts < 1) {
			if reset {
				p.Reset()
			}
			continue
		}
		if pol.byteRate > 0 {
			pol.bytes -= size
		}
		if pol.pktRate > 0 {
			pol.pkts--
		}
		pkts[kept], pkts[i] = pkts[i], pkts[kept]
		kept++
	}
	return kept
}

// SetPolicing sets port no's ingress policing; a Policing that polices
// nothing turns it off. The buckets start full.
func (dp *Datapath) SetPolicing(no uint32, p Policing) error {
	port, ok := dp.ports.Load().byNo[no]
	if !ok {
		return fmt.Errorf("%w: %d", ErrNoSuchPort, no)
	}
	if !p.Enabled() {
		port.policer.Store(nil)
		return nil
	}
	port.policer.Store(newPolicer(p, dp.clock()))
	return nil
}

// PolicingDrops returns how many frames port no's ingress policing
// dropped, over the port's life in the datapath.
func (dp *Datapath) PolicingDrops(no uint32) uint64 {
	if port, ok := dp.ports.Load().byNo[no]; ok {
		return port.rxPoliced.Load()
	}
	return 0
}

// egressPolicer is a QoS type on a port's transmit: police as
// policer.police.
type egressPolicer interface {
	police(pkts []*packet.Packet, n int, now int64, reset bool) int
}

// newEgressPolicer is netdev-dpdk's egress-policer: one bucket of cbs bytes
// filled at cir bytes per second.
func newEgressPolicer(cir, cbs uint64, now int64) *policer {
	return &policer{byteRate: float64(cir) / 1e9, byteCap: float64(cbs), bytes: float64(cbs), last: now}
}

// SetEgressPolicing sets port no's QoS egress-policer: cir bytes per
// second with bursts of cbs bytes; cir 0 turns it off. The bucket starts
// full.
func (dp *Datapath) SetEgressPolicing(no uint32, cir, cbs uint64) error {
	port, ok := dp.ports.Load().byNo[no]
	if !ok {
		return fmt.Errorf("%w: %d", ErrNoSuchPort, no)
	}
	port.txMu.Lock()
	defer port.txMu.Unlock()
	if cir == 0 {
		port.egress = nil
		return nil
	}
	port.egress = newEgressPolicer(cir, cbs, dp.clock())
	return nil
}

// EgressPolicingDrops returns how many frames port no's egress-policer
// dropped, over the port's life in the datapath.
func (dp *Datapath) EgressPolicingDrops(no uint32) uint64 {
	if port, ok := dp.ports.Load().byNo[no]; ok {
		return port.txPoliced.Load()
	}
	return 0
}
