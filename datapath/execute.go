package datapath

import (
	"errors"

	"github.com/govs/govs/datapath/packet"
)

// ErrFrameTooLong is Execute's error for a frame longer than a packet
// buffer.
var ErrFrameTooLong = errors.New("frame too long")

// Execute runs acts on a copy of frame, as received on datapath port
// inPort (0 for none), outside any flow (OVS's dpif_execute, for
// OpenFlow packet-outs): outputs, VLAN and set actions, meters and userspace
// actions; connection tracking and recirculation are not carried out.
func (dp *Datapath) Execute(frame []byte, inPort uint32, acts Actions) error {
	table := dp.ports.Load()
	ops := resolveOps(nil, acts, table)
	p := dp.pool.Get()
	defer dp.pool.Put(p)
	if len(frame) > len(p.Tail()) {
		return ErrFrameTooLong
	}
	p.SetLen(copy(p.Tail(), frame))
	p.InPort = inPort
	dp.executeOps(p, ops)
	return nil
}

// executeOps runs ops on p, for Execute.
func (dp *Datapath) executeOps(p *packet.Packet, ops []op) {
	trunc := 0 // an ActionTrunc's length for the next output
	for i := range ops {
		o := &ops[i]
		switch o.kind {
		case ActionTrunc:
			trunc = int(o.maxLen)
		case ActionCount:
			countPackets(o.counter, []*packet.Packet{p})
		case ActionOutput:
			c := dp.pool.Get()
			if trunc > 0 && p.Len() > trunc {
				truncated(c, p, trunc)
			} else {
				c.CopyFrom(p)
			}
			trunc = 0
			port := o.port
			port.txMu.Lock()
			n, _ := port.dev.Write([]*packet.Packet{c})
			port.txMu.Unlock()
			if n == 1 {
				port.txPackets.Add(1)
				port.txBytes.Add(uint64(c.Len()))
			} else {
				port.txDropped.Add(1)
			}
			dp.pool.Put(c)
		case ActionSet:
			applySet(p, o.field, &o.val, o.setMask)
		case ActionPopVLAN:
			popVLAN(p)
		case ActionPushVLAN:
			if !pushVLAN(p, o.tpid, o.tci) {
				return
			}
		case ActionMeter:
			pk := [1]*packet.Packet{p}
			if dp.meter(o.meter, pk[:], dp.clock()); pk[0] == nil {
				return
			}
		case ActionUserspace, ActionMeteredUserspace:
			if o.kind == ActionMeteredUserspace {
				// Only the copy to userspace is metered; p goes on.
				pk := [1]*packet.Packet{p}
				if dp.meter(o.meter, pk[:], dp.clock()); pk[0] == nil {
					break
				}
			}
			if box := dp.upcaller.Load(); box != nil {
				if h, ok := box.u.(UserspaceHandler); ok {
					h.Userspace(o.cookie, p)
				}
			}
		case ActionCheckPktLen:
			dp.executePktLen(o.pktLen, p)
			return
		}
	}
}
