package datapath

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/govs/govs/datapath/packet"
)

// TrTCM is one two-rate three-color meter's parameters (RFC 4115), as
// netdev-dpdk's trtcm-policer takes them from other_config: committed and
// excess rates in bytes per second, burst sizes in bytes.
type TrTCM struct {
	CIR, CBS, EIR, EBS uint64
}

// TrTCMQueue is one queue of a trtcm-policer: its id (the skb_priority of
// the frames it meters) and its meter's parameters.
type TrTCMQueue struct {
	ID uint32
	TrTCM
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
// the port's, and dropped if red. A frame's queue is the one whose id is
// its skb_priority (set_queue), else queue 0, which must be configured:
// without it OVS drops the frame, and so does govs
// (trtcm_policer_run_single_packet).
type trtcmPolicer struct {
	port meter
	// queues are sorted by id; a port has a handful, so a frame's is
	// found by a scan. queue0 is queue 0, nil if none.
	queues []trtcmQueue
	queue0 *trtcmQueue
}

// trtcmQueue is one queue of a trtcm-policer: its meter and counters.
type trtcmQueue struct {
	id    uint32
	m     meter
	stats QueueStats
}

// queue is the queue a frame of priority prio is metered by, nil for none.
func (t *trtcmPolicer) queue(prio uint32) *trtcmQueue {
	if prio != 0 {
		for i := range t.queues {
			if t.queues[i].id == prio {
				return &t.queues[i]
			}
		}
	}
	return t.queue0
}

func (t *trtcmPolicer) police(pkts []*packet.Packet, n int, now int64, reset bool) int {
	kept := 0
	for i := 0; i < n; i++ {
		p := pkts[i]
		size := float64(max(p.Len()-etherHeaderLen, 0))
		c := red
		if q := t.queue(p.SkbPriority); q != nil {
			c = q.m.check(size, now, green)
			if c == red {
				q.stats.TxErrors++
			} else {
				q.stats.TxPackets++
				q.stats.TxBytes += uint64(size)
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
// meter and its queues' (without a queue 0, the frames of no queue are
// dropped). The counters start again.
func (dp *Datapath) SetTrTCMPolicing(no uint32, port TrTCM, queues []TrTCMQueue) error {
	p, ok := dp.ports.Load().byNo[no]
	if !ok {
		return fmt.Errorf("%w: %d", ErrNoSuchPort, no)
	}
	now := dp.clock()
	t := &trtcmPolicer{port: newMeter(port, now)}
	for _, q := range queues {
		t.queues = append(t.queues, trtcmQueue{id: q.ID, m: newMeter(q.TrTCM, now)})
	}
	slices.SortFunc(t.queues, func(a, b trtcmQueue) int { return cmp.Compare(a.id, b.id) })
	if len(t.queues) > 0 && t.queues[0].id == 0 {
		t.queue0 = &t.queues[0]
	}
	p.txMu.Lock()
	p.egress = t
	p.txMu.Unlock()
	return nil
}

// TrTCMQueueStats returns the counters of queue id of port no's
// trtcm-policer; false if it runs none or has no such queue.
func (dp *Datapath) TrTCMQueueStats(no, id uint32) (QueueStats, bool) {
	p, ok := dp.ports.Load().byNo[no]
	if !ok {
		return QueueStats{}, false
	}
	p.txMu.Lock()
	defer p.txMu.Unlock()
	t, ok := p.egress.(*trtcmPolicer)
	if !ok {
		return QueueStats{}, false
	}
	for i := range t.queues {
		if t.queues[i].id == id {
			return t.queues[i].stats, true
		}
	}
	return QueueStats{}, false
}
