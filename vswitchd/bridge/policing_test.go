package bridge

import (
	"strings"
	"testing"

	"github.com/govs/govs/datapath"
)

// policingDP is a fakeDP that polices.
type policingDP struct {
	*fakeDP
	set   map[uint32]datapath.Policing
	calls int
}

func (d *policingDP) SetPolicing(no uint32, p datapath.Policing) error {
	d.set[no] = p
	d.calls++
	return nil
}
func (d *policingDP) PolicingDrops(no uint32) uint64 { return 42 }

func TestIngressPolicing(t *testing.T) {
	h := newHarness()
	dp := &policingDP{fakeDP: h.dp, set: map[uint32]datapath.Policing{}}
	h.sw = NewSwitch(dp, h.backer, h.devs, h.log, nil)
	var d db
	d.bridge("br0", "p1", "pa:patch:peer=pb")
	d.bridge("br1", "pb:patch:peer=pa")
	d.iface("p1").IngressPolicingRate = 1000
	d.iface("pa").IngressPolicingRate = 1000
	h.sw.Apply(Build(d.rows))
	no := h.sw.ifaces["p1"].dpPort
	if got := dp.set[no]; got != (datapath.Policing{Rate: 1000}) {
		t.Fatalf("p1 policing %+v", got)
	}
	if h.log.count("pa: ingress policing is not supported") != 1 {
		t.Errorf("patch port's policing not reported: %v", h.log.lines)
	}

	// Unchanged: nothing set again, nothing logged again.
	calls := dp.calls
	h.sw.Apply(Build(d.rows))
	if dp.calls != calls || h.log.count("pa: ingress policing is not supported") != 1 {
		t.Errorf("second Apply set policing again (%d calls) or logged again", dp.calls-calls)
	}

	// A live change keeps the port.
	d.iface("p1").IngressPolicingBurst = 500
	d.iface("p1").IngressPolicingKpktsRate = 3
	h.sw.Apply(Build(d.rows))
	if h.sw.ifaces["p1"].dpPort != no || dp.set[no] != (datapath.Policing{Rate: 1000, Burst: 500, KpktsRate: 3}) {
		t.Fatalf("p1 after change: port %d policing %+v", h.sw.ifaces["p1"].dpPort, dp.set[no])
	}
	h.sw.Refresh()
	st := statusOf(h.sw.Report(Build(d.rows)), d.iface("p1").UUID)
	if st.Stats["ovs_rx_qos_drops"] != 42 || st.Stats["rx_dropped"] != 42 {
		t.Errorf("statistics %v", st.Stats)
	}

	// Off.
	d.iface("p1").IngressPolicingRate = 0
	d.iface("p1").IngressPolicingKpktsRate = 0
	h.sw.Apply(Build(d.rows))
	if dp.set[no].Enabled() {
		t.Errorf("policing still on: %+v", dp.set[no])
	}
}

func (l *testLog) count(prefix string) int {
	n := 0
	for _, line := range l.lines {
		if _, rest, _ := strings.Cut(line, "|"); strings.HasPrefix(rest, prefix) {
			n++
		}
	}
	return n
}
