package datapath

import (
	"fmt"

	"github.com/govs/govs/datapath/packet"
)

// TrTCM is one two-rate three-color meter's parameters (RFC 4115), as
// netdev-dpdk's trtcm-policer takes them from other_config: committed and
// excess rates in bytes per second, burst sizes in bytes.
type TrTCM struct {
	CIR, CBS, EIR, EBS uint64
}

// QueueStats are a trtcm-policer queue's counters: what it let through
// (green or yellow) and what it colored red (TxErrors).
type QueueStats struct {
	TxPackets, TxBytes, TxErrors uint64
}

type color int

const (
	green color = iota
	yellow
	red
)

// meter is an RFC 4115 meter: the committed and excess buckets fill
// independently.
type meter struct {
	p            TrTCM
	tc, te       float64 // tokens, bytes
	cRate, eRate float64 // bytes per nanosecond
	last         int64
}

func newMeter(p TrTCM, now int64) meter {
	return meter{p: p, tc: float64(p.CBS), te: float64(p.EBS), cRate: float64(p.CIR) / 1e9, eRate: float64(p.EIR) / 1e9, last: now}
}

// check colors a frame of size bytes that arrives colored pre (green for
// color-blind), taking its tokens.
func (m *meter) check(size float64, now int64, pre color) color {
	if dt := float64(now - m.last); dt > 0 {
		m.tc = min(float64(m.p.CBS), m.tc+dt*m.cRate)
		m.te = min(float64(m.p.EBS), m.te+dt*m.eRate)
		m.last = now
	}
	switch {
	case pre == green && m.tc >= size:
		m.tc -= size
		return green
	case pre != red && m.te >= size:
		m.te -= size
		return yellow
	}
	return red
}

// trtcmPolicer is netdev-dpdk's trtcm-policer on a port's transmit: a
// frame is metered color-blind by its queue's meter, then color-aware by
// the port's, and dropped if red. govs has no set_queue action, so every
// frame is in queue 0 (skb_priority 0), which must be configured: without
// it OVS drops every frame, and so does govs.
type trtcmPolicer struct {
	port   meter
	queue0 *meter
	stats  QueueStats
}

func (t *trtcmPolicer) police(pkts []*packet.Packet, n int, now int64, reset bool) int {
	kept := 0
	for i := 0; i < n; i++ {
		p := pkts[i]
		size := float64(max(p.Len()-etherHeaderLen, 0))
		c := red
		if t.queue0 != nil {
			c = t.queue0.check(size, now, green)
			if c == red {
				t.stats.TxErrors++
			} else {
				t.stats.TxPackets++
				t.stats.TxBytes += uint64(size)
			}
		}
		if c != red {
			c = t.port.check(size, now, c)
		}
		if c == red {
			if reset {
				p.Reset()
			}
			continue
		}
		pkts[kept], pkts[i] = pkts[i], pkts[kept]
		kept++
	}
	return kept
}

// SetTrTCMPolicing sets port no's QoS to a trtcm-policer with the port's
// meter and queue 0's (nil: no queue 0, every frame dropped).
func (dp *Datapath) SetTrTCMPolicing(no uint32, port TrTCM, queue0 *TrTCM) error {
	p, ok := dp.ports.Load().byNo[no]
	if !ok {
		return fmt.Errorf("%w: %d", ErrNoSuchPort, no)
	}
	now := dp.clock()
	t := &trtcmPolicer{port: newMeter(port, now)}
	if queue0 != nil {
		m := newMeter(*queue0, now)
		t.queue0 = &m
	}
	p.txMu.Lock()
	p.egress = t
	p.txMu.Unlock()
	return nil
}

// TrTCMQueueStats returns queue 0's counters of port no's trtcm-policer; false
// if it runs none.
func (dp *Datapath) TrTCMQueueStats(no uint32) (QueueStats, bool) {
	p, ok := dp.ports.Load().byNo[no]
	if !ok {
		return QueueStats{}, false
	}
	p.txMu.Lock()
	defer p.txMu.Unlock()
	t, ok := p.egress.(*trtcmPolicer)
	if !ok || t.queue0 == nil {
		return QueueStats{}, false
	}
	return t.stats, true
}
