//go:build linux

package datapath

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/govs/govs/datapath/dptest"
)

// threadCPUList reads thread tid's Cpus_allowed_list.
func threadCPUList(t *testing.T, tid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/status", tid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("no Cpus_allowed_list")
	return ""
}

// Under a mask the queues go round-robin over its CPUs, each worker's
// thread is pinned to its CPU once it wakes and moved at once on a change,
// pmd-rxq-show lists the queues under their CPUs (an empty block for a CPU
// without any), and removing the mask unpins.
func TestPMDCPUs(t *testing.T) {
	all := processCPUs()
	if len(all) < 2 {
		t.Fatalf("this test needs 2 CPUs the process may run on, has %v", all)
	}
	c0, c1 := all[0], all[1]
	dp := newDatapath(nil, nil)
	if got := dp.SetPMDCPUs([]int{c1, c0, 4096}); len(got) != 2 || got[0] != c0 || got[1] != c1 {
		t.Fatalf("SetPMDCPUs kept %v, want [%d %d]", got, c0, c1)
	}
	mq, out, _ := addMQPorts(t, dp)
	mq.Inject(frame())
	mq.q1.Inject(frame())
	out.Inject(frame())
	ws := []*worker{dp.ports.Load().byNo[1].ws[0], dp.ports.Load().byNo[1].ws[1], dp.ports.Load().byNo[2].ws[0]}
	want := []int{c0, c1, c0} // p1 q0, p1 q1, p2 q0 round-robin
	tids := make([]int, 3)
	for i, w := range ws {
		dptest.Eventually(t, fmt.Sprintf("worker %d pinned", i), func() bool {
			w.pin.mu.Lock()
			defer w.pin.mu.Unlock()
			tids[i] = w.pin.tid
			return tids[i] != 0 && threadCPUList(t, tids[i]) == fmt.Sprint(want[i])
		})
	}
	got, _ := dp.PMDRxqShowCommand(nil)
	wantShow := "Displaying last 60 seconds pmd usage %\n" +
		fmt.Sprintf("pmd thread numa_id 0 core_id %d:\n  isolated : false\n", c0) +
		"  port: p1                queue-id:  0 (enabled)   pmd usage: NOT AVAIL\n" +
		"  port: p2                queue-id:  0 (enabled)   pmd usage: NOT AVAIL\n" +
		"  overhead: NOT AVAIL\n" +
		fmt.Sprintf("pmd thread numa_id 0 core_id %d:\n  isolated : false\n", c1) +
		"  port: p1                queue-id:  1 (enabled)   pmd usage: NOT AVAIL\n" +
		"  overhead: NOT AVAIL\n"
	if got != wantShow {
		t.Errorf("pmd-rxq-show:\n%s\nwant\n%s", got, wantShow)
	}

	// A live change moves the locked threads without traffic.
	dp.SetPMDCPUs([]int{c1})
	for i := range ws {
		if l := threadCPUList(t, tids[i]); l != fmt.Sprint(c1) {
			t.Errorf("worker %d: Cpus_allowed_list %s after the mask moved to %d", i, l, c1)
		}
	}
	got, _ = dp.PMDRxqShowCommand(nil)
	if !strings.HasPrefix(got, fmt.Sprintf("Displaying last 60 seconds pmd usage %%\npmd thread numa_id 0 core_id %d:\n", c1)) || strings.Count(got, "pmd thread") != 1 {
		t.Errorf("pmd-rxq-show after the change:\n%s", got)
	}

	// No mask: the threads may run anywhere again, pmd-rxq-show is per port.
	dp.SetPMDCPUs(nil)
	for i := range ws {
		if l := threadCPUList(t, tids[i]); l == fmt.Sprint(c1) {
			t.Errorf("worker %d: still pinned (%s) without a mask", i, l)
		}
	}
	if got, _ := dp.PMDRxqShowCommand(nil); !strings.Contains(got, "core_id 1:\n") || !strings.Contains(got, "core_id 2:\n") {
		t.Errorf("pmd-rxq-show without a mask:\n%s", got)
	}
}
