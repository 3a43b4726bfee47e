package tests

import (
	"fmt"
	"regexp"
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
	"in_port=1,dl_src=00:00:00:00:02:03",
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
// ovs-vswitchd, datapath actions (set(skb_priority(...))) included.
func TestOpenFlowQueueTraceDifferential(t *testing.T) {
	deb, govs := startSwitchPair(t, "gqtd", "10.232.0", "gqto", "10.233.0")
	for _, s := range []*ofSwitch{deb, govs} {
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
