package datapath

import (
	"strings"
	"testing"
	"time"
)

func TestRxqUsageIntervals(t *testing.T) {
	var u rxqUsage
	t0 := time.Unix(1000, 0)
	u.sample(t0, 0)
	if b, tot := u.last(6); b != 0 || tot != 0 {
		t.Fatalf("before an interval: %d/%d", b, tot)
	}
	u.sample(t0.Add(5*time.Second), uint64(time.Second)) // interval not over
	// Seven intervals of 10 s, busy 1 s, 2 s, ... 7 s: the first is gone.
	busy := uint64(0)
	for i := 1; i <= 7; i++ {
		busy += uint64(i) * uint64(time.Second)
		u.sample(t0.Add(time.Duration(i)*10*time.Second), busy)
	}
	if b, tot := u.last(1); b != uint64(7*time.Second) || tot != uint64(10*time.Second) {
		t.Errorf("last interval: %v of %v", time.Duration(b), time.Duration(tot))
	}
	if b, tot := u.last(6); b != uint64((2+3+4+5+6+7)*time.Second) || tot != uint64(60*time.Second) {
		t.Errorf("last 6 intervals: %v of %v", time.Duration(b), time.Duration(tot))
	}
	if b, _ := u.last(10); b != uint64((2+3+4+5+6+7)*time.Second) {
		t.Errorf("more intervals than kept: %v", time.Duration(b))
	}
}

// pmd-rxq-show in OVS 3.1's format: "NOT AVAIL" until an interval has
// passed, then each worker's busy share; -pmd picks one, -secs rounds up.
func TestPMDRxqShow(t *testing.T) {
	r := newRig(t, 2)
	out, err := r.dp.PMDRxqShowCommand(nil)
	want := "Displaying last 60 seconds pmd usage %\n" +
		"pmd thread numa_id 0 core_id 1:\n  isolated : false\n" +
		"  port: p1                queue-id:  0 (enabled)   pmd usage: NOT AVAIL\n  overhead: NOT AVAIL\n" +
		"pmd thread numa_id 0 core_id 2:\n  isolated : false\n" +
		"  port: p2                queue-id:  0 (enabled)   pmd usage: NOT AVAIL\n  overhead: NOT AVAIL\n"
	if err != nil || out != want {
		t.Fatalf("before any interval: %v\n%s\nwant\n%s", err, out, want)
	}
	w := r.dp.ports.Load().byNo[1].w
	t0 := time.Now()
	w.usage.sample(t0, 0)
	w.usage.sample(t0.Add(10*time.Second), uint64(2500*time.Millisecond))
	out, _ = r.dp.PMDRxqShowCommand([]string{"-pmd", "1", "-secs", "7", "netdev@ovs-netdev"})
	want = "Displaying last 10 seconds pmd usage %\n" +
		"pmd thread numa_id 0 core_id 1:\n  isolated : false\n" +
		"  port: p1                queue-id:  0 (enabled)   pmd usage: 25 %\n  overhead:  0 %\n"
	if out != want {
		t.Errorf("after an interval:\n%s\nwant\n%s", out, want)
	}
	if out, _ := r.dp.PMDRxqShowCommand([]string{"-secs", "x"}); !strings.HasPrefix(out, "Displaying last 60 seconds") {
		t.Errorf("-secs x: %s", out)
	}
}
