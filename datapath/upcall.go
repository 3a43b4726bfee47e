package datapath

import (
	"time"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/datapath/packet"
)

// Upcaller is the translation layer (ofproto): it turns a flow the datapath
// has no installed flow for into actions, and says which key fields it
// consulted. The datapath installs the result as a megaflow that matches
// every packet agreeing with the key on the consulted bits, so the mask
// must cover every bit the decision depended on, and should cover no
// other: a MAC-learning decision that left IP addresses out of its mask
// serves every connection between the two hosts with one flow.
//
// Upcall is called from the datapath's rx goroutines, concurrently from
// several of them, with all the distinct missed keys of one received batch
// (so all have the same Key.InPort). For each element it fills Actions and
// Mask. It must not keep the slice, the keys or the packets after it
// returns, must not modify the packets, and must not call FlushFlows or
// Revalidate, which wait for the caller; when its state changes in a way
// that changes translations (a MAC learned, moved or expired) it calls
// RequestRevalidation.
type Upcaller interface {
	Upcall(batch []Upcall)
}

// Revalidator is an Upcaller that can translate installed flows again
// without the side effects of a packet, and has time-based state.
//
// Revalidate is called by the revalidator, never concurrently with
// itself, with installed flows' keys. It translates them as Upcall would
// but must not change state, except where an element has Used set: those
// flows forwarded packets since the last pass, and the side effects of
// such packets (refreshing or learning the source MAC) are due.
//
// Run is called by the revalidator about twice a second, before each
// pass, for time-based state such as MAC aging; it calls
// RequestRevalidation when such state changed. Neither may call
// FlushFlows or Revalidate.
//
// An Upcaller that is not a Revalidator is revalidated through Upcall.
type Revalidator interface {
	Upcaller
	Revalidate(batch []Upcall)
	Run()
}

// UserspaceHandler is implemented by an Upcaller whose translations emit
// ActionUserspace: the datapath calls Userspace, from the goroutine
// executing the actions, for every packet that reaches such an action,
// with the action's cookie and the packet as the actions before it left
// it. It must not keep or modify p, and must not block for long.
type UserspaceHandler interface {
	Userspace(cookie uint32, p *packet.Packet)
}

// Upcall is one miss, or one installed flow being revalidated.
type Upcall struct {
	// Key is the packet's flow key.
	Key flow.Key
	// Packet is the first packet of the batch with this key; nil when
	// revalidating.
	Packet *packet.Packet
	// Actions is empty on entry, with capacity the translation may append
	// into; the datapath copies it after Upcall returns. Left empty, the
	// packets are dropped.
	Actions Actions
	// Mask is zero on entry; the translation sets the bits of Key it
	// consulted. The input port is always matched.
	Mask flow.Mask
	// Used is set, when revalidating, for a flow that forwarded packets
	// since the last pass; UsedAt is then the datapath clock (Now) of
	// its last packet.
	Used   bool
	UsedAt time.Duration
	// Packets and Bytes are, when revalidating, what the flow forwarded
	// since the last pass, for the upcaller to credit to whatever the
	// translation went through (OVS's xlate cache stats push).
	Packets, Bytes uint64
}

// UpcallFunc adapts a function to Upcaller.
type UpcallFunc func(batch []Upcall)

// Upcall implements Upcaller.
func (f UpcallFunc) Upcall(batch []Upcall) { f(batch) }
