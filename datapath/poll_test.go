package datapath

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev"
)

// lenPort records how many buffers each Poll is handed.
type lenPort struct {
	*dptest.Port
	last, most atomic.Int64
}

func (p *lenPort) Poll(pkts []*packet.Packet) (int, error) {
	p.last.Store(int64(len(pkts)))
	if int64(len(pkts)) > p.most.Load() {
		p.most.Store(int64(len(pkts)))
	}
	return p.Port.Poll(pkts)
}

// newPollRig is newRig with GOVS_PMD_POLL's mode on: one goroutine polls
// every port.
func newPollRig(t *testing.T, n int) *rig {
	t.Helper()
	r := &rig{dp: newDatapath(nil, nil)}
	r.dp.pollMode = true
	r.dp.emcMinRx = 0
	r.ports = dptest.AddPorts(t, n, r.dp.AddPort, r.dp.Close)
	return r
}

// In poll mode the poller reads every port (no worker waits in Read),
// forwards and caches as the workers do, lets a deleted port's worker
// exit once its netdev closes, polls a port added later, and lets every
// worker go when the datapath closes.
func TestPollMode(t *testing.T) {
	r := newPollRig(t, 3)
	var calls atomic.Int64
	r.dp.SetUpcall(static(Actions{Output(2)}, &calls))

	r.ports[1].Inject(frame(), frame(), frame())
	r.rxDone(t, 1, 3)
	r.ports[1].Inject(frame())
	r.rxDone(t, 1, 4)
	if c := calls.Load(); c != 1 {
		t.Errorf("%d upcalls for one flow, want 1", c)
	}
	dptest.Eventually(t, "4 frames out of port 2", func() bool { return r.ports[2].NumSent() == 4 })
	if s := r.dp.Stats(); s.Hit != 3 || s.Missed != 1 {
		t.Errorf("stats %+v, want hit 3 missed 1", s)
	}
	// Every port's worker polls, the idle ones too, once it has run: on
	// a loaded machine that may be after the frames went through.
	for no, p := range r.ports {
		dptest.Eventually(t, fmt.Sprintf("port %d polled", no), func() bool { return p.Polls() > 0 })
	}

	// A deleted port's worker ends when its netdev closes, and the
	// others go on.
	if err := r.dp.DelPort(3); err != nil {
		t.Fatal(err)
	}
	r.ports[3].Close()
	dptest.Eventually(t, "port 3's worker exits", func() bool {
		r.dp.mu.Lock()
		defer r.dp.mu.Unlock()
		return len(r.dp.workers) == 2
	})
	p4 := dptest.NewPort("p4")
	defer p4.Close()
	if err := r.dp.AddPort(4, p4); err != nil {
		t.Fatal(err)
	}
	p4.Inject(frame())
	r.rxDone(t, 4, 1)
	dptest.Eventually(t, "port 4's frame out of port 2", func() bool { return r.ports[2].NumSent() == 5 })

	// A port is polled with one buffer while idle, with more while
	// frames keep filling them, and with one again once idle.
	p5 := &lenPort{Port: dptest.NewPort("p5")}
	defer p5.Close()
	if err := r.dp.AddPort(5, p5); err != nil {
		t.Fatal(err)
	}
	dptest.Eventually(t, "port 5 polled", func() bool { return p5.Polls() > 0 })
	if m := p5.most.Load(); m != 1 {
		t.Errorf("idle port 5 polled with %d buffers, want 1", m)
	}
	burst := make([][]byte, 200)
	for i := range burst {
		burst[i] = frame()
	}
	p5.Inject(burst...)
	r.rxDone(t, 5, 200)
	if m := p5.most.Load(); m != netdev.BatchSize {
		t.Errorf("port 5 polled with at most %d buffers during a burst of 200 frames", m)
	}
	dptest.Eventually(t, "port 5 polled with one buffer again", func() bool { return p5.last.Load() == 1 })

	ws := []*worker{}
	for _, p := range r.dp.ports.Load().byNo {
		ws = append(ws, p.ws...)
	}
	r.dp.Close()
	for _, w := range ws {
		dptest.Eventually(t, "worker of "+w.port.name+" exits at Close", func() bool {
			select {
			case <-w.done:
				return true
			default:
				return false
			}
		})
	}
}

// A worker whose goroutine starts after the datapath closed (AddPort
// returned, Close ran before the goroutine did) is let go at once.
func TestPollAfterClose(t *testing.T) {
	r := newPollRig(t, 1)
	dptest.Eventually(t, "port 1 polled", func() bool { return r.ports[1].Polls() > 0 })
	r.dp.Close()
	p := dptest.NewPort("late")
	defer p.Close()
	w := newQueueWorker(r.dp, &dpPort{no: 9, name: "late", dev: p}, p, 0)
	if !r.dp.polled(w) {
		t.Fatal("a pollable port's worker not taken by the poller")
	}
	dptest.Eventually(t, "the late worker let go", func() bool {
		select {
		case <-w.unpolled:
			return true
		default:
			return false
		}
	})
}
