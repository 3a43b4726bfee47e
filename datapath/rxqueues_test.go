package datapath

import (
	"sync/atomic"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/netdev"
)

// mqPort is a fake port with a second receive queue.
type mqPort struct {
	*dptest.Port
	q1 *dptest.Port
}

func (p *mqPort) RxQueues() []netdev.Reader { return []netdev.Reader{p.Port, p.q1} }

// addMQPorts attaches port 1, p1 with two queues, and port 2, p2, to dp,
// whose upcalls output everything to port 2 and are counted in calls.
func addMQPorts(t *testing.T, dp *Datapath) (mq *mqPort, out *dptest.Port, calls *atomic.Int64) {
	t.Helper()
	mq = &mqPort{Port: dptest.NewPort("p1"), q1: dptest.NewPort("p1q1")}
	out = dptest.NewPort("p2")
	t.Cleanup(func() {
		dp.Close()
		for _, p := range []*dptest.Port{mq.Port, mq.q1, out} {
			p.Close()
		}
	})
	if err := dp.AddPort(1, mq); err != nil {
		t.Fatal(err)
	}
	if err := dp.AddPort(2, out); err != nil {
		t.Fatal(err)
	}
	calls = new(atomic.Int64)
	dp.SetUpcall(static(Actions{Output(2)}, calls))
	return mq, out, calls
}

// A port with two receive queues gets a worker for each: frames from
// either are forwarded, each worker caches its own flows, the port's
// counters and pmd-stats add them up, and pmd-rxq-show lists both queues
// under the port's pmd thread.
func TestRxQueues(t *testing.T) {
	dp := newDatapath(nil, nil)
	dp.emcMinRx = 0
	mq, out, calls := addMQPorts(t, dp)
	mq.Inject(frame(), frame())
	mq.q1.Inject(frame(), frame(), frame())
	r := &rig{dp: dp}
	r.rxDone(t, 1, 5)
	dptest.Eventually(t, "5 frames out of port 2", func() bool { return out.NumSent() == 5 })
	if c := calls.Load(); c != 2 {
		t.Errorf("%d upcalls, want one per queue's worker", c)
	}
	if s := dp.Stats(); s.Flows != 2 || s.Hit != 3 {
		t.Errorf("stats %+v, want a flow per queue and 3 hits", s)
	}
	if ws := dp.WorkerStats(); len(ws) != 2 || ws[0].Received != 5 {
		t.Errorf("worker stats %+v, want port 1's queues summed", ws)
	}
	got, err := dp.PMDRxqShowCommand([]string{"-pmd", "1"})
	want := "Displaying last 60 seconds pmd usage %\n" +
		"pmd thread numa_id 0 core_id 1:\n  isolated : false\n" +
		"  port: p1                queue-id:  0 (enabled)   pmd usage: NOT AVAIL\n" +
		"  port: p1                queue-id:  1 (enabled)   pmd usage: NOT AVAIL\n" +
		"  overhead: NOT AVAIL\n"
	if err != nil || got != want {
		t.Errorf("pmd-rxq-show: %v\n%s\nwant\n%s", err, got, want)
	}
	if err := dp.DelPort(1); err != nil {
		t.Fatal(err)
	}
	if s := dp.Stats(); s.Flows != 0 {
		t.Errorf("%d flows left after DelPort", s.Flows)
	}
}
