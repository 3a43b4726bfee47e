package datapath

import (
	"sync/atomic"

	"github.com/govs/govs/datapath/packet"
)

// Counter counts packets and bytes for the Upcaller: its translations
// put an ActionCount naming it in the actions of the flows it accounts
// for (a port mirror's tx_packets and tx_bytes). Workers add to it
// concurrently.
type Counter struct {
	packets, bytes atomic.Uint64
}

// Add adds packets and bytes.
func (c *Counter) Add(packets, bytes uint64) {
	c.packets.Add(packets)
	c.bytes.Add(bytes)
}

// Load returns the counts so far.
func (c *Counter) Load() (packets, bytes uint64) {
	return c.packets.Load(), c.bytes.Load()
}

// Trunc returns the action that truncates the next output's copies to
// maxLen bytes.
func Trunc(maxLen uint32) Action { return Action{Kind: ActionTrunc, MaxLen: maxLen} }

// Count returns the action that adds each packet to c.
func Count(c *Counter) Action { return Action{Kind: ActionCount, Counter: c} }

// countPackets adds the packets of pkts that are not nil to c.
func countPackets(c *Counter, pkts []*packet.Packet) {
	var n, bytes uint64
	for _, p := range pkts {
		if p != nil {
			n++
			bytes += uint64(p.Len())
		}
	}
	if n > 0 {
		c.Add(n, bytes)
	}
}

// truncated makes c, a fresh packet, a copy of the first maxLen bytes of
// p. The copy carries no offload work: a checksum or segmentation of the
// whole frame means nothing for its first bytes.
func truncated(c, p *packet.Packet, maxLen int) {
	if h := p.Head(); len(h) >= maxLen {
		c.SetData(h[:maxLen])
	} else {
		c.CopyFrom(p)
		c.SetLen(maxLen)
	}
	c.Offload = packet.Offload{}
	c.InPort = p.InPort
}
