package ofproto

import (
	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
)

// Spanning tree on a bridge's ports (OVS's xport_rstp_learn_state,
// xport_rstp_forward_state, may_receive and process_special for BPDUs).

// STPGate is a port's spanning tree state as translations obey it. The
// zero value is a port that runs no spanning tree: it learns and
// forwards.
type STPGate struct {
	// NoLearn: the port is discarding; what it receives is dropped
	// before any table.
	NoLearn bool
	// NoForward: nothing is sent out of the port, and what it receives
	// goes through the tables (NORMAL learns from it) but is then
	// dropped: the port is learning or discarding.
	NoForward bool
}

// receives reports whether what the port receives enters the pipeline.
func (g STPGate) receives() bool { return !g.NoLearn || !g.NoForward }

// stpCancel drops the actions a translation of a packet received on in
// added from n on, if in does not forward: NORMAL and learn actions have
// seen the packet.
func (x *xlate) stpCancel(in *port, n int) {
	if in.stp.NoForward && len(x.acts) > n {
		x.report(">>", "RSTP not in forwarding state on the input port, dropping")
		x.acts = x.acts[:n]
	}
}

// bpduPath translates a BPDU received on a port of a bridge running
// RSTP (destination 01:80:c2:00:00:00, 802.2 frame: OVS's is_stp): it
// goes to the spanning tree state machine, whatever the port. It reports
// whether it did.
func (x *xlate) bpduPath(in *port) bool {
	if !in.br.rstp {
		return false
	}
	x.mask.EthDst = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	if x.key.EthDst != stpAddr || x.key.EthType != flow.EthTypeNone {
		return false
	}
	x.report("->", "BPDU, to the RSTP state machine")
	x.acts = append(x.acts[:0], datapath.Userspace(datapath.CookieSlowPath|datapath.CookieSlowPathSTP|in.dpPort))
	return true
}

// stpAddr is the bridge group address BPDUs are sent to.
var stpAddr = [6]byte{0x01, 0x80, 0xc2, 0x00, 0x00, 0x00}

// FDBFlushPort forgets the MACs learned on port name (a spanning tree
// topology change).
func (br *Bridge) FDBFlushPort(name string) {
	br.ml.mu.Lock()
	changed := br.ml.flushPort(name)
	br.ml.mu.Unlock()
	if changed {
		br.backer.dp.RequestRevalidation()
	}
}
