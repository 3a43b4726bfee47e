package datapath

import (
	"testing"
	"time"
)

func TestMeterRFC4115(t *testing.T) {
	ms := int64(time.Millisecond)
	// 100 bytes committed, 50 excess; 1000 bytes/s each: 1 byte per ms.
	m := newMeter(TrTCM{CIR: 1000, CBS: 100, EIR: 1000, EBS: 50}, 0)
	for i, c := range []struct {
		size float64
		at   int64
		pre  color
		want color
	}{
		{60, 0, green, green},         // tc 100 -> 40
		{60, 0, green, red},           // tc 40, te 50: neither holds 60
		{40, 0, green, green},         // tc 40 -> 0
		{40, 0, green, yellow},        // te 50 -> 10
		{20, 0, green, red},           // nothing left
		{20, 20 * ms, yellow, yellow}, // te 10+20=30 -> 10; a yellow frame never takes tc
		{15, 20 * ms, green, green},   // tc 20 -> 5
		{5, 20 * ms, red, red},        // red stays red
	} {
		if got := m.check(c.size, c.at, c.pre); got != c.want {
			t.Fatalf("frame %d: color %d, want %d", i, got, c.want)
		}
	}
}

func TestTrTCMPolicer(t *testing.T) {
	// Queue 0 lets 2 frames of 35 bytes through (70 committed), the port 3
	// (105 = 70 committed + 35 excess); the port is not the limit.
	p := &trtcmPolicer{port: newMeter(TrTCM{CIR: 1, CBS: 70, EIR: 1, EBS: 35}, 0),
		queues: []trtcmQueue{{id: 0, m: newMeter(TrTCM{CIR: 1, CBS: 70}, 0)}}}
	p.queue0 = &p.queues[0]
	pkts := frames(4, 49)
	if got := p.police(pkts, 4, 0, true); got != 2 {
		t.Errorf("%d frames passed, want 2", got)
	}
	if p.queue0.stats != (QueueStats{TxPackets: 2, TxBytes: 70, TxErrors: 2}) {
		t.Errorf("queue stats %+v", p.queue0.stats)
	}
	// Without queue 0 every frame is dropped, as in OVS.
	none := &trtcmPolicer{port: newMeter(TrTCM{CIR: 1e9, CBS: 1e9}, 0)}
	if got := none.police(frames(3, 49), 3, 0, true); got != 0 {
		t.Errorf("%d frames passed without queue 0", got)
	}
}

// A frame is metered by the queue its skb_priority names (set_queue),
// by queue 0 when there is no such queue, and dropped when there is no
// queue 0 either (trtcm_policer_run_single_packet); each queue counts
// its own.
func TestTrTCMPolicerQueues(t *testing.T) {
	r := newRig(t, 2)
	dp, no := r.dp, uint32(2)
	big := TrTCM{CIR: 1e9, CBS: 1e9}
	// Queue 1 holds one 35-byte frame, queue 0 and 7 plenty.
	if err := dp.SetTrTCMPolicing(no, big, []TrTCMQueue{{7, big}, {0, big}, {1, TrTCM{CIR: 1, CBS: 35}}}); err != nil {
		t.Fatal(err)
	}
	p := dp.ports.Load().byNo[no].egress.(*trtcmPolicer)
	police := func(prio uint32, n int) int {
		pkts := frames(n, 49)
		for _, pk := range pkts {
			pk.SkbPriority = prio
		}
		return p.police(pkts, n, 0, true)
	}
	if got := police(1, 3); got != 1 {
		t.Errorf("queue 1: %d of 3 frames passed, want 1", got)
	}
	if got := police(7, 3); got != 3 {
		t.Errorf("queue 7: %d of 3 frames passed", got)
	}
	// No queue 5: queue 0's.
	if got := police(5, 4); got != 4 {
		t.Errorf("queue 5 (none): %d of 4 frames passed", got)
	}
	for id, want := range map[uint32]QueueStats{0: {TxPackets: 4, TxBytes: 140}, 1: {TxPackets: 1, TxBytes: 35, TxErrors: 2}, 7: {TxPackets: 3, TxBytes: 105}} {
		if st, ok := dp.TrTCMQueueStats(no, id); !ok || st != want {
			t.Errorf("queue %d: %+v, %v; want %+v", id, st, ok, want)
		}
	}
	if _, ok := dp.TrTCMQueueStats(no, 5); ok {
		t.Error("queue 5 has statistics")
	}
	// Without queue 0, a frame of no configured queue is dropped.
	if err := dp.SetTrTCMPolicing(no, big, []TrTCMQueue{{1, big}}); err != nil {
		t.Fatal(err)
	}
	p = dp.ports.Load().byNo[no].egress.(*trtcmPolicer)
	if got := police(0, 2); got != 0 {
		t.Errorf("queue 0 (none): %d frames passed", got)
	}
	if got := police(1, 2); got != 2 {
		t.Errorf("queue 1: %d of 2 frames passed", got)
	}
}
