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
	q0 := newMeter(TrTCM{CIR: 1, CBS: 70}, 0)
	p := &trtcmPolicer{port: newMeter(TrTCM{CIR: 1, CBS: 70, EIR: 1, EBS: 35}, 0), queue0: &q0}
	pkts := frames(4, 49)
	if got := p.police(pkts, 4, 0, true); got != 2 {
		t.Errorf("%d frames passed, want 2", got)
	}
	if p.stats != (QueueStats{TxPackets: 2, TxBytes: 70, TxErrors: 2}) {
		t.Errorf("queue stats %+v", p.stats)
	}
	// Without queue 0 every frame is dropped, as in OVS.
	none := &trtcmPolicer{port: newMeter(TrTCM{CIR: 1e9, CBS: 1e9}, 0)}
	if got := none.police(frames(3, 49), 3, 0, true); got != 0 {
		t.Errorf("%d frames passed without queue 0", got)
	}
}
