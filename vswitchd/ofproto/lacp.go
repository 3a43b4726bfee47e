package ofproto

import (
	"bytes"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/vswitchd/lacp"
)

// Slow protocols on bond members (OVS's process_special for LACP): what
// a member of a bond running LACP receives with the slow protocols'
// Ethernet type never enters the pipeline; a userspace action whose
// cookie is datapath.CookieSlowPath plus the member's datapath port hands
// it to the bridge's LACP state machine.

// slowHandler is what SetSlowProtocolsHandler installed.
type slowHandler struct {
	f func(dpPort uint32, frame []byte)
}

// SetSlowProtocolsHandler makes f receive the slow protocols frames bond
// members running LACP receive, and the BPDUs the ports of a bridge
// running STP or RSTP receive (gate.go), with the port's datapath port. f is
// called from the packet path: it must not block, and must copy frame to
// keep it.
func (b *Backer) SetSlowProtocolsHandler(f func(dpPort uint32, frame []byte)) {
	b.slow.Store(&slowHandler{f})
}

// SendFrame sends frame out of datapath port dpPort, as it is (a LACPDU).
func (b *Backer) SendFrame(dpPort uint32, frame []byte) error {
	return b.dp.Execute(frame, 0, datapath.Actions{datapath.Output(dpPort)})
}

// slowPath translates a packet received on in, if it is a slow protocols
// frame a bond running LACP must handle; it reports whether it did. The
// datapath flow matches the input port and Ethernet type, which every
// translation consults.
func (x *xlate) slowPath(in *port) bool {
	if !in.lacp && (in.bond == nil || in.bond.lacp == lacp.Disabled) || x.key.EthType != lacp.EthTypeSlow {
		return false
	}
	x.report("->", "slow protocols frame on a LACP bond member, to the LACP state machine")
	x.acts = append(x.acts[:0], datapath.Userspace(datapath.CookieSlowPath|in.dpPort))
	return true
}

// slowPathPacket hands p, received by the member whose datapath port
// cookie names, to the slow protocols handler.
func (b *Backer) slowPathPacket(cookie uint32, p *packet.Packet) {
	if h := b.slow.Load(); h != nil {
		h.f(cookie&^(datapath.CookieSlowPath|datapath.CookieSlowPathSTP), bytes.Clone(p.Data()))
	}
}
