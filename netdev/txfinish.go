package netdev

import (
	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev/offload"
)

// segPool holds the packets software segmentation writes into.
var segPool packet.Pool

// txAction is what a port does with one frame on transmit.
type txAction uint8

const (
	txSend    txAction = iota // send as is, with the header prepared
	txSegment                 // cut it with the finisher's Segmenter and send the segments
	txDrop                    // its offload metadata does not match it; counted
)

// txFinisher decides per frame what a port takes as is and does the rest
// in software. Used by one writer at a time.
type txFinisher struct {
	caps Offloads // what the port takes; all false without a virtio_net_hdr
	vnet bool     // frames go with a virtio_net_hdr
	seg  offload.Segmenter
	ctr  offload.Counters
}

func newTxFinisher(vnet bool, caps Offloads) txFinisher {
	if !vnet {
		caps = Offloads{}
	}
	if !caps.Csum {
		// Segmentation offloads come with partial checksums
		// (virtio_net_hdr_to_skb drops GSO without NEEDS_CSUM).
		caps = Offloads{}
	}
	return txFinisher{caps: caps, vnet: vnet}
}

// prepare returns what to do with p; for txSend it has written p's
// virtio_net_hdr into hdr if the port uses one, for txSegment it has reset
// f.seg for p. A partial checksum the port cannot take is completed in p.
func (f *txFinisher) prepare(p *packet.Packet, hdr []byte) txAction {
	o := &p.Offload
	if o.GSO != packet.GSONone {
		if !f.takesGSO(o) {
			if f.seg.Reset(p.Data(), o) != nil {
				f.ctr.AddErrors(1)
				return txDrop
			}
			return txSegment
		}
	} else if o.Flags&packet.NeedsCsum != 0 && !f.caps.Csum {
		if offload.CompleteChecksum(p.Data(), o) != nil {
			f.ctr.AddErrors(1)
			return txDrop
		}
		f.ctr.AddChecksummed(1)
	}
	if f.vnet {
		EncodeVirtioNetHdr(hdr, o, p.Len())
	}
	return txSend
}

func (f *txFinisher) takesGSO(o *packet.Offload) bool {
	if o.Flags&packet.NeedsCsum == 0 {
		return false
	}
	switch o.GSO {
	case packet.GSOTCPv4:
		return f.caps.TSO4
	case packet.GSOTCPv6:
		return f.caps.TSO6
	case packet.GSOUDPL4:
		return f.caps.USO
	}
	return false
}
