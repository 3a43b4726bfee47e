package bridge

import (
	"slices"
	"strings"
	"testing"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/schema/vswitchd"
)

// policingDP is a fakeDP that polices.
type policingDP struct {
	*fakeDP
	set    map[uint32]datapath.Policing
	egress map[uint32][2]uint64
	trtcm  map[uint32]datapath.TrTCM
	queues map[uint32]map[uint32]datapath.TrTCM
	calls  int
}

func (d *policingDP) SetPolicing(no uint32, p datapath.Policing) error {
	d.set[no] = p
	d.calls++
	return nil
}
func (d *policingDP) PolicingDrops(no uint32) uint64 { return 42 }
func (d *policingDP) SetEgressPolicing(no uint32, cir, cbs uint64) error {
	d.egress[no] = [2]uint64{cir, cbs}
	return nil
}
func (d *policingDP) EgressPolicingDrops(no uint32) uint64 { return 7 }
func (d *policingDP) SetTrTCMPolicing(no uint32, port datapath.TrTCM, queues []datapath.TrTCMQueue) error {
	d.trtcm[no] = port
	d.queues[no] = map[uint32]datapath.TrTCM{}
	for _, q := range queues {
		d.queues[no][q.ID] = q.TrTCM
	}
	return nil
}
func (d *policingDP) TrTCMQueueStats(no, queue uint32) (datapath.QueueStats, bool) {
	return datapath.QueueStats{TxPackets: 3 + uint64(queue), TxBytes: 300, TxErrors: 1}, true
}

func TestIngressPolicing(t *testing.T) {
	h := newHarness()
	dp := &policingDP{fakeDP: h.dp, set: map[uint32]datapath.Policing{}, egress: map[uint32][2]uint64{}, trtcm: map[uint32]datapath.TrTCM{}, queues: map[uint32]map[uint32]datapath.TrTCM{}}
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

func TestQoS(t *testing.T) {
	h := newHarness()
	dp := &policingDP{fakeDP: h.dp, set: map[uint32]datapath.Policing{}, egress: map[uint32][2]uint64{}, trtcm: map[uint32]datapath.TrTCM{}, queues: map[uint32]map[uint32]datapath.TrTCM{}}
	h.sw = NewSwitch(dp, h.backer, h.devs, h.log, nil)
	var d db
	d.bridge("br0", "p1", "p2", "p3", "p4:internal", "p5:internal", "p6:internal")
	q := func(typ string, oc map[string]string, queues ...map[string]string) *string {
		u := d.uuid()
		row := vswitchd.QoS{UUID: u, Type: typ, OtherConfig: oc, Queues: map[int]string{}}
		for i, qoc := range queues {
			qu := d.uuid()
			d.rows.Queues = append(d.rows.Queues, vswitchd.Queue{UUID: qu, OtherConfig: qoc})
			row.Queues[i] = qu
		}
		d.rows.QoS = append(d.rows.QoS, row)
		return &u
	}
	d.port("p1").QOS = q(QoSEgressPolicer, map[string]string{"cir": "1000000", "cbs": "2048"})
	d.port("p2").QOS = q("linux-htb", map[string]string{"max-rate": "1000"})
	d.port("p3").QOS = q(QoSEgressPolicer, map[string]string{"cir": "x"})
	d.port("p4").QOS = q(QoSTrTCMPolicer, map[string]string{"cir": "1000", "cbs": "2048", "eir": "500", "ebs": "1024"},
		map[string]string{"cir": "100", "cbs": "200", "eir": "300", "ebs": "400"}, map[string]string{"cir": "10", "cbs": "20"},
		map[string]string{}, map[string]string{"cir": "1", "ebs": "2"})
	// Queue 3 has a DSCP, which what leaves in it gets.
	dscp := 10
	d.rows.Queues[len(d.rows.Queues)-1].DSCP = &dscp
	d.port("p5").QOS = q(QoSTrTCMPolicer, map[string]string{"cbs": "1"})
	d.port("p6").QOS = q(QoSLinuxNoop, nil)
	des := Build(d.rows)
	for _, p := range des.Problems {
		if strings.Contains(p, "p6") {
			t.Errorf("linux-noop, which asks for nothing, is reported: %s", p)
		}
	}
	for _, w := range []string{
		"port p4: QoS trtcm-policer queue 2 needs other_config:cbs or ebs (bytes) above 0; the port runs without the queue",
		"port p5: QoS trtcm-policer has no queue 0: the port drops every frame it sends that set_queue put in no queue it has, as OVS's does",
		"port p2: QoS type linux-htb is not supported by the userspace datapath (Operation not supported: govs runs egress-policer and trtcm-policer); the port runs without QoS",
		"port p3: QoS egress-policer needs other_config:cir (bytes/s) and cbs (bytes), both above 0; the port runs without QoS",
	} {
		if !slices.Contains(des.Problems, w) {
			t.Errorf("problems %q lack %q", des.Problems, w)
		}
	}
	h.sw.Apply(des)
	no := h.sw.ifaces["p1"].dpPort
	if dp.egress[no] != [2]uint64{1000000, 2048} {
		t.Errorf("p1 egress %v", dp.egress[no])
	}
	for _, c := range []struct{ name, out, err string }{
		{"p1", "QoS: p1 egress-policer\ncbs: 2048\ncir: 1000000\n", ""},
		{"p2", "QoS not configured on p2\n", ""},
		{"p6", "QoS not configured on p6\n", ""},
		{"p4", "QoS: p4 trtcm-policer\ncbs: 2048\ncir: 1000\nebs: 1024\neir: 500\n\nDefault:\n  cbs: 200\n  cir: 100\n  ebs: 400\n  eir: 300\n" +
			"  tx_packets: 3\n  tx_bytes: 300\n  tx_errors: 1\n" +
			"\nQueue 1:\n  cbs: 20\n  cir: 10\n  ebs: 0\n  eir: 0\n  tx_packets: 4\n  tx_bytes: 300\n  tx_errors: 1\n" +
			"\nQueue 3:\n  cbs: 0\n  cir: 1\n  ebs: 2\n  eir: 0\n  tx_packets: 6\n  tx_bytes: 300\n  tx_errors: 1\n", ""},
		{"nosuch", "", "no such interface"},
	} {
		out, err := h.sw.QoSShow(c.name)
		if out != c.out || (err == nil) != (c.err == "") || err != nil && err.Error() != c.err {
			t.Errorf("qos/show %s = %q, %v; want %q, %q", c.name, out, err, c.out, c.err)
		}
	}
	if got := dp.trtcm[h.sw.ifaces["p4"].dpPort]; got != (datapath.TrTCM{CIR: 1000, CBS: 2048, EIR: 500, EBS: 1024}) {
		t.Errorf("p4 trtcm %+v", got)
	}
	if got := dp.queues[h.sw.ifaces["p4"].dpPort]; len(got) != 3 || got[0] != (datapath.TrTCM{CIR: 100, CBS: 200, EIR: 300, EBS: 400}) ||
		got[1] != (datapath.TrTCM{CIR: 10, CBS: 20}) || got[3] != (datapath.TrTCM{CIR: 1, EBS: 2}) {
		t.Errorf("p4 queues %+v", got)
	}
	if got := h.sw.ifaces["p4"].port.QueueDSCP; len(got) != 1 || got[3] != 10 {
		t.Errorf("p4 queue DSCPs %v", got)
	}
	// The same queues again: nothing set again.
	dp.queues = map[uint32]map[uint32]datapath.TrTCM{}
	h.sw.Apply(Build(d.rows))
	if len(dp.queues) != 0 {
		t.Errorf("unchanged QoS set again: %+v", dp.queues)
	}
	h.sw.Refresh()
	st := statusOf(h.sw.Report(des), d.iface("p1").UUID)
	if st.Stats["ovs_tx_qos_drops"] != 7 || st.Stats["tx_dropped"] != 7 {
		t.Errorf("statistics %v", st.Stats)
	}
	// Removed live.
	d.port("p1").QOS = nil
	h.sw.Apply(Build(d.rows))
	if h.sw.ifaces["p1"].dpPort != no || dp.egress[no] != [2]uint64{0, 0} {
		t.Errorf("p1 after removal: port %d egress %v", h.sw.ifaces["p1"].dpPort, dp.egress[no])
	}
}
