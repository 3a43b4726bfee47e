package datapath

import (
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/datapath/packet"
)

// Upcaller is the translation layer (ofproto): it turns a flow the datapath
// has no cached actions for into actions, and says which key fields it
// consulted.
//
// Upcall is called from the datapath's rx goroutines, concurrently from
// several of them, with all the misses of one received batch (so all have
// the same Key.InPort). For each element it fills Actions and Mask. It must
// not keep the slice, the keys or the packets after it returns, must not
// modify the packets, and must not call FlushFlows, which waits for the
// caller: it may call InvalidateFlows when its state changes (a MAC
// learned, moved or expired).
type Upcaller interface {
	Upcall(batch []Upcall)
}

// Upcall is one miss.
type Upcall struct {
	// Key is the packet's flow key.
	Key flow.Key
	// Packet is the first packet of the batch with this key.
	Packet *packet.Packet
	// Actions is empty on entry, with capacity the translation may append
	// into; the datapath copies it after Upcall returns. Left empty, the
	// packets are dropped.
	Actions Actions
	// Mask is zero on entry; the translation sets the bits of Key it
	// consulted. The exact-match cache does not need it; the megaflow
	// classifier will.
	Mask flow.Mask
}

// UpcallFunc adapts a function to Upcaller.
type UpcallFunc func(batch []Upcall)

// Upcall implements Upcaller.
func (f UpcallFunc) Upcall(batch []Upcall) { f(batch) }
