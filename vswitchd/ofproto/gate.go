package ofproto

import (
	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
)

// Spanning trees on the pipeline (OVS's process_special for STP/RSTP,
// may_receive, and the checks of compose_output_action__ and
// patch_port_output). A bridge running a spanning tree protocol hands
// every BPDU its ports receive to the protocol, never to the tables; each
// port has a gate the protocol sets from the port's state: what it
// receives is learned only if the gate learns and forwarded only if it
// forwards, and nothing is sent out of a port whose gate does not
// forward. The protocol (vswitchd/stp, vswitchd/rstp) lives in the
// bridge layer, which publishes the gates with Reconfigure: a change
// revalidates every datapath flow, and a port that stops learning loses
// its MAC entries.

// PortGate is what a bridge's spanning tree lets one port do.
type PortGate uint8

const (
	// GateOpen: no spanning tree runs on the port (or it is disabled
	// there): it learns and forwards as without one.
	GateOpen PortGate = iota
	// GateDiscard: neither learns nor forwards (STP blocking or
	// listening, RSTP discarding).
	GateDiscard
	// GateLearn: learns from what it receives, forwards nothing.
	GateLearn
	// GateForward: learns and forwards.
	GateForward
)

func (g PortGate) String() string {
	switch g {
	case GateOpen:
		return "open"
	case GateDiscard:
		return "discard"
	case GateLearn:
		return "learn"
	case GateForward:
		return "forward"
	}
	return "gate(?)"
}

// Learns reports whether NORMAL learns the source of what the port
// receives.
func (g PortGate) Learns() bool { return g != GateDiscard }

// Forwards reports whether what the port receives goes anywhere and
// whether anything is sent out of it.
func (g PortGate) Forwards() bool { return g == GateOpen || g == GateForward }

// bpduAddr is where STP and RSTP send BPDUs (the bridge group address).
var bpduAddr = flow.MAC{0x01, 0x80, 0xc2, 0x00, 0x00, 0x00}

// spanningTree translates a packet received on in, if in's bridge runs a
// spanning tree and the packet is a BPDU; it reports whether it did. The
// BPDU goes to the slow protocols handler (with the port's datapath
// port) if the protocol runs on in, and is dropped otherwise, as OVS
// sinks BPDUs of ports without STP. The flow matches the destination.
func (x *xlate) spanningTree(in *port) bool {
	if in.br.tree == "" {
		return false
	}
	x.mask.EthDst = flow.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	if flow.MAC(x.key.EthDst) != bpduAddr {
		return false
	}
	if in.gate == GateOpen || in.dpPort == 0 {
		x.report("->", "BPDU received on a port without %s, dropping", in.br.tree)
		return true
	}
	x.report("->", "BPDU, to the %s state machine", in.br.tree)
	x.acts = append(x.acts[:0], datapath.Userspace(datapath.CookieSlowPath|datapath.CookieSlowPathSTP|in.dpPort))
	return true
}

// gateReceives reports whether in's gate lets the bridge see what in
// receives (may_receive): not when it neither learns nor forwards.
func (x *xlate) gateReceives(in *port) bool {
	if in.gate.Learns() {
		return true
	}
	x.report(">>", "%s not in learning or forwarding state, dropping", in.br.tree)
	return false
}

// gateMark is where a translation stood when a bridge began with what a
// port received.
type gateMark struct {
	acts, counters int
	cur, pkt       vlanHdr
	base           flow.Key
}

func (x *xlate) markGate() gateMark {
	return gateMark{acts: len(x.acts), counters: len(x.mirrorCounters), cur: x.cur, pkt: x.pkt, base: x.base}
}

// cancelGate undoes what the bridge added since m if in's gate learns but
// does not forward: NORMAL had its look at the packet and learned.
func (x *xlate) cancelGate(in *port, m gateMark) {
	if in.gate.Forwards() {
		return
	}
	x.report(">>", "%s not in forwarding state, dropping", in.br.tree)
	x.acts, x.mirrorCounters = x.acts[:m.acts], x.mirrorCounters[:m.counters]
	x.cur, x.pkt, x.base = m.cur, m.pkt, m.base
}

// gateSends reports whether out's gate lets packets leave through it
// (compose_output_action__'s check).
func (x *xlate) gateSends(out *port) bool {
	if out.gate.Forwards() {
		return true
	}
	x.report(">>", "%s not in forwarding state, skipping output", out.br.tree)
	return false
}

// FDBFlushPort forgets the MACs learned on port name (an RSTP topology
// change).
func (br *Bridge) FDBFlushPort(name string) {
	br.ml.mu.Lock()
	changed := br.ml.flushPort(name)
	br.ml.mu.Unlock()
	if changed {
		br.backer.dp.RequestRevalidation()
	}
}
