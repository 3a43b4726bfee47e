package tests

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// queueTraceFlows use set_queue, pop_queue and enqueue (OpenFlow 1.0's,
// added apart): the packet's skb_priority, which the datapath flow sets
// before an output and its megaflow matches, kept through a ct()
// recirculation, restored by pop_queue to the one the packet came with.
var queueTraceFlows = []string{
	"priority=10,in_port=LOCAL,dl_src=00:00:00:00:02:01,actions=set_queue:5,output:2",
	"priority=10,in_port=LOCAL,dl_src=00:00:00:00:02:02,actions=set_queue:5,output:2,pop_queue,output:2",
	"priority=10,in_port=LOCAL,dl_src=00:00:00:00:02:04,actions=set_queue:3,set_queue:0,output:2",
	"priority=10,in_port=LOCAL,dl_src=00:00:00:00:02:05,actions=write_actions(set_queue:9,output:2)",
	"priority=10,in_port=LOCAL,ip,dl_src=00:00:00:00:02:06,actions=set_queue:4,ct(table=10)",
	"priority=10,in_port=LOCAL,dl_src=00:00:00:00:02:07,actions=pop_queue,output:2",
	"priority=10,in_port=LOCAL,dl_src=00:00:00:00:02:08,actions=set_queue:1,resubmit(,11)",
	"priority=10,in_port=LOCAL,dl_src=00:00:00:00:02:09,actions=clone(set_queue:2,output:2),output:1",
	"priority=10,in_port=LOCAL,dl_src=00:00:00:00:02:0a,actions=set_queue:0x7fffffff,set_field:0x5->pkt_mark,output:2",
	"priority=10,in_port=LOCAL,dl_src=00:00:00:00:02:0b,actions=set_queue:1,push_vlan:0x8100,set_field:4101->vlan_vid,output:2",
	"priority=10,in_port=LOCAL,dl_src=00:00:00:00:02:0c,vlan_tci=0x1005,actions=set_field:0x5->pkt_mark,set_queue:2,pop_vlan,mod_dl_dst:00:00:00:00:00:01,output:2",
	"table=10,priority=10,actions=output:1,set_queue:6,output:2,pop_queue,output:3",
	"table=11,priority=10,actions=output:2,enqueue:3:1",
}

// queueTraceCorpus are ofproto/trace flows for queueTraceFlows, some with
// the skb_priority a packet may come with.
var queueTraceCorpus = []string{
	"in_port=LOCAL,dl_src=00:00:00:00:02:01",
	"in_port=LOCAL,dl_src=00:00:00:00:02:02",
	"in_port=LOCAL,dl_src=00:00:00:00:02:02,skb_priority=5",
	"in_port=LOCAL,dl_src=00:00:00:00:02:03",
	"in_port=LOCAL,dl_src=00:00:00:00:02:03,skb_priority=0x7",
	"in_port=LOCAL,dl_src=00:00:00:00:02:04",
	"in_port=LOCAL,dl_src=00:00:00:00:02:04,skb_priority=3",
	"in_port=LOCAL,dl_src=00:00:00:00:02:05",
	"in_port=LOCAL,udp,dl_src=00:00:00:00:02:06,nw_src=10.0.0.1",
	"in_port=LOCAL,dl_src=00:00:00:00:02:07",
	"in_port=LOCAL,dl_src=00:00:00:00:02:07,skb_priority=2",
	"in_port=LOCAL,dl_src=00:00:00:00:02:08",
	"in_port=LOCAL,dl_src=00:00:00:00:02:09",
	"in_port=LOCAL,dl_src=00:00:00:00:02:0a",
	"in_port=LOCAL,dl_src=00:00:00:00:02:0b",
	"in_port=LOCAL,dl_src=00:00:00:00:02:0c,dl_vlan=5",
	"in_port=1,dl_src=00:00:00:00:02:03",
	// Port 2's queues 1 and 5 have a DSCP, which an IP packet leaving
	// in them gets. (Not one without an IP protocol: govs' megaflow then
	// matches nw_proto=0, where OVS's misses it; see commitSets.)
	"in_port=LOCAL,udp,dl_src=00:00:00:00:02:01,nw_tos=4",
	"in_port=LOCAL,tcp,dl_src=00:00:00:00:02:02,nw_tos=0xb9",
	"in_port=LOCAL,tcp6,dl_src=00:00:00:00:02:02,nw_tos=1",
	"in_port=LOCAL,udp,dl_src=00:00:00:00:02:03,nw_tos=0x28",
	"in_port=LOCAL,sctp,dl_src=00:00:00:00:02:08",
	"in_port=LOCAL,icmp,dl_src=00:00:00:00:02:09",
}

// dpPortNumber is a datapath port in dpif/show: "NAME OFPORT/DPPORT:".
var dpPortNumber = regexp.MustCompile(`(?m)^\s+(\S+) \d+/(\d+):`)

// dpActionsNamed rewrites the datapath ports in the "Datapath actions:"
// lines of a trace by s as their neutral names: the two switches number
// their datapath ports differently.
func dpActionsNamed(s *ofSwitch, trace string) string {
	names := map[string]string{}
	for _, m := range dpPortNumber.FindAllStringSubmatch(s.appctl("dpif/show"), -1) {
		names[m[2]] = m[1]
		if n, ok := s.names[m[1]]; ok {
			names[m[2]] = n
		}
	}
	lines := strings.Split(trace, "\n")
	for i, l := range lines {
		acts, ok := strings.CutPrefix(l, "Datapath actions: ")
		if !ok {
			continue
		}
		// Top-level items that are numbers are outputs.
		var items []string
		depth, start := 0, 0
		for j := 0; j <= len(acts); j++ {
			if j < len(acts) {
				switch acts[j] {
				case '(':
					depth++
					continue
				case ')':
					depth--
					continue
				case ',':
					if depth > 0 {
						continue
					}
				default:
					continue
				}
			}
			item := acts[start:j]
			if n, ok := names[item]; ok {
				item = "P(" + n + ")"
			}
			items = append(items, item)
			start = j + 1
		}
		lines[i] = "Datapath actions: " + strings.Join(items, ",")
	}
	return strings.Join(lines, "\n")
}

// TestOpenFlowQueueTraceDifferential: ofproto/trace of flows with
// set_queue, pop_queue and enqueue prints the same as Debian's
// ovs-vswitchd, datapath actions (set(skb_priority(...)), and the DSCP
// of a queue that has one) included.
func TestOpenFlowQueueTraceDifferential(t *testing.T) {
	deb, govs := startSwitchPair(t, "gqtd", "10.232.0", "gqto", "10.233.0")
	for _, s := range []*ofSwitch{deb, govs} {
		// Queue DSCPs apply whatever the QoS type (linux-noop runs on
		// both switches' ports).
		s.vsctl("--", "set", "port", s.b.Host, "qos=@q", "--", "--id=@q", "create", "qos", "type=linux-noop",
			"queues:1=@q1", "queues:5=@q5", "queues:7=@q7",
			"--", "--id=@q1", "create", "queue", "dscp=10", "--", "--id=@q5", "create", "queue", "dscp=46",
			"--", "--id=@q7", "create", "queue", "other_config:x=y")
		s.replaceFlows(queueTraceFlows...)
		// enqueue is OpenFlow 1.0's (1.1+ send set_queue, output,
		// pop_queue).
		if out, rc := s.ofctl("-O", "OpenFlow10", "add-flow", s.br,
			"priority=10,in_port=LOCAL,dl_src=00:00:00:00:02:03,actions=enqueue:2:7,enqueue:IN_PORT:3,enqueue:LOCAL:4,enqueue:9:6,enqueue:1:8"); rc != 0 {
			t.Fatalf("add-flow: %s", out)
		}
		if out, rc := s.ofctl("-O", "OpenFlow10", "add-flow", s.br,
			"priority=10,in_port=1,dl_src=00:00:00:00:02:03,actions=enqueue:1:7,enqueue:2:2,output:2"); rc != 0 {
			t.Fatalf("add-flow: %s", out)
		}
	}
	for i, pkt := range queueTraceCorpus {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
			want, wantRC := deb.traceRC(pkt)
			got, gotRC := govs.traceRC(pkt)
			want, got = dpActionsNamed(deb, want), dpActionsNamed(govs, got)
			want, got = deb.normalizeOfctl(want), govs.normalizeOfctl(got)
			want, got = traceRecircID.ReplaceAllString(want, "${1}0xN"), traceRecircID.ReplaceAllString(got, "${1}0xN")
			if got != want || gotRC != wantRC {
				t.Errorf("ofproto/trace %s:\ngovs (exit %d):\n%s\nDebian's (exit %d):\n%s", pkt, gotRC, got, wantRC, want)
			}
		})
	}
}

// qosQueueStats returns the tx_packets and tx_errors of a queue's part
// ("Default:" or "Queue N:") of qos/show's output.
func qosQueueStats(t *testing.T, show, title string) (packets, errs int) {
	t.Helper()
	_, part, ok := strings.Cut(show, "\n"+title+"\n")
	if !ok {
		t.Fatalf("qos/show has no %q:\n%s", title, show)
	}
	part, _, _ = strings.Cut(part, "\n\n")
	for _, l := range strings.Split(part, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(l), ": ")
		n, _ := strconv.Atoi(v)
		switch k {
		case "tx_packets":
			packets = n
		case "tx_errors":
			errs = n
		}
	}
	return packets, errs
}

// TestVswitchdQueueQoS: a flow's set_queue puts a TCP stream in the
// trtcm-policer queue of that id, whose low rate then holds it
// (policedIperf's band, robust under load), where queue 0 and the port
// let it run many times faster; set_queue to a queue the QoS lacks falls
// back to queue 0, as OVS's netdev-dpdk does. qos/show counts each
// queue's frames, and the datapath flow sets skb_priority.
func TestVswitchdQueueQoS(t *testing.T) {
	t.Parallel()
	e, a, b := policingPair(t, "sq", "10.74.0")
	br := "gvswsqbr"
	ofctl := func(args ...string) {
		t.Helper()
		if out, err := vswRunEnv([]string{"OVS_RUNDIR=" + e.dir}, vswOfctl, args...); err != nil {
			t.Fatalf("ovs-ofctl %v: %v\n%s", args, err, out)
		}
	}
	// Queue 1: 625 kB/s (5 Mbit/s), 125 kB of burst; queue 0 and the
	// port: 1.25 GB/s with 16 MB of burst, which TCP's TSO super-frames
	// (64 kB) seldom exceed (a policer at 1 Gbit/s held TCP at 100
	// Mbit/s here).
	const q1cir, q1cbs, fast, fastBurst, secs = 625000, 125000, 1250000000, 16000000, 4
	e.mustVsctl("--", "set", "port", b.Host, "qos=@q", "--", "--id=@q", "create", "qos", "type=trtcm-policer",
		"other_config:cir="+strconv.Itoa(fast), "other_config:cbs="+strconv.Itoa(fastBurst), "queues:0=@q0", "queues:1=@q1",
		"--", "--id=@q0", "create", "queue", "other_config:cir="+strconv.Itoa(fast), "other_config:cbs="+strconv.Itoa(fastBurst),
		"--", "--id=@q1", "create", "queue", "other_config:cir="+strconv.Itoa(q1cir), "other_config:cbs="+strconv.Itoa(q1cbs))
	vswWait(t, vswTimeout, "the trtcm-policer to be logged", func() bool {
		return e.logged(b.Host + ": QoS trtcm-policer cbs: 16000000, cir: 1250000000")
	})
	if strings.Contains(e.readLog(), "queue 1 is not supported") {
		t.Errorf("queue 1 reported as not running:\n%s", e.readLog())
	}

	// TCP to b in queue 1: held at queue 1's rate.
	ofctl("add-flow", br, "priority=10,tcp,nw_dst=10.74.0.2,actions=set_queue:1,NORMAL")
	policedIperf(t, "set_queue:1", a, b, "10.74.0.2", q1cir*8, q1cbs*8, secs)
	show := e.mustAppctl("qos/show", b.Host)
	if p, errs := qosQueueStats(t, show, "Queue 1:"); p == 0 || errs == 0 {
		t.Errorf("queue 1 counted %d frames through, %d dropped:\n%s", p, errs, show)
	}
	// OpenFlow's queue statistics (Debian's ovs-ofctl) list both queues
	// of b's port, counting at least what qos/show counted.
	out, err := vswRunEnv([]string{"OVS_RUNDIR=" + e.dir}, vswOfctl, "-O", "OpenFlow13", "queue-stats", br, b.Host)
	m := regexp.MustCompile(`(?m)^  port \S+ queue 1: bytes=\d+, pkts=(\d+), errors=(\d+), duration=[0-9.]+s$`).FindStringSubmatch(out)
	if err != nil || m == nil || !strings.Contains(out, ": 2 queues\n") || !regexp.MustCompile(`(?m)^  port \S+ queue 0: `).MatchString(out) {
		t.Errorf("ovs-ofctl queue-stats: %v\n%s", err, out)
	} else if p, errs := qosQueueStats(t, show, "Queue 1:"); atoi(m[1]) < p || atoi(m[2]) < errs {
		t.Errorf("queue-stats counts queue 1's %s frames and %s errors, qos/show %d and %d:\n%s", m[1], m[2], p, errs, out)
	}
	// The queues' configurations: both queues of b's port, in OpenFlow
	// 1.3's reply and 1.4's QUEUE_DESC; a queue it lacks is
	// OFPQOFC_BAD_QUEUE, as on netdev-dpdk's.
	for _, v := range []string{"OpenFlow13", "OpenFlow14"} {
		out, err := vswRunEnv([]string{"OVS_RUNDIR=" + e.dir}, vswOfctl, "-O", v, "queue-get-config", br, b.Host)
		if err != nil || !regexp.MustCompile(`(?m)^ *queue 0:\s*\n *queue 1:\s*$`).MatchString(out) {
			t.Errorf("ovs-ofctl -O %s queue-get-config: %v\n%s", v, err, out)
		}
	}
	if out, _ := vswRunEnv([]string{"OVS_RUNDIR=" + e.dir}, vswOfctl, "-O", "OpenFlow14", "queue-get-config", br, b.Host, "5"); !strings.Contains(out, "OFPQOFC_BAD_QUEUE") {
		t.Errorf("ovs-ofctl queue-get-config of queue 5:\n%s", out)
	}
	if flows := e.mustAppctl("dpctl/dump-flows"); !strings.Contains(flows, "set(skb_priority(0x1))") {
		t.Errorf("no datapath flow sets skb_priority:\n%s", flows)
	}
	def0, _ := qosQueueStats(t, show, "Default:")

	// Queue 7, which the QoS lacks: queue 0's, many times faster.
	ofctl("mod-flows", br, "tcp,nw_dst=10.74.0.2,actions=set_queue:7,NORMAL")
	got := iperfReceived(t, a.iperf(b, "10.74.0.2", "-J", "-O", "1", "-t", strconv.Itoa(secs)))
	t.Logf("set_queue:7 (queue 0's): iperf3 TCP received %.2f Mbit/s", got/1e6)
	if got < 4*q1cir*8 {
		t.Errorf("set_queue:7 got %.2f Mbit/s, not above 4 times queue 1's %g Mbit/s", got/1e6, q1cir*8/1e6)
	}
	show = e.mustAppctl("qos/show", b.Host)
	if def, _ := qosQueueStats(t, show, "Default:"); def <= def0 {
		t.Errorf("queue 0 counted no more frames (%d, before %d):\n%s", def, def0, show)
	}
}
