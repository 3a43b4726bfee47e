package offload

import (
	"encoding/binary"

	"github.com/govs/govs/datapath/packet"
)

// Recover rebuilds the Offload of a frame received without a
// virtio_net_hdr, from its headers and what PACKET_AUXDATA said: partial
// is TP_STATUS_CSUMNOTREADY (the L4 checksum field holds only the
// pseudo-header sum), mtu the receiving interface's MTU.
//
// Without a virtio_net_hdr the kernel still hands over GSO super-frames
// whole. A TCP one comes back as GSOTCPv4/v6 with a segment size that
// fills the MTU (the sender's MSS is lost, and the MTU is an upper bound
// for it) and its checksum field set to the pseudo-header sum over the
// whole length, as the kernel leaves it, so that it can be passed on or
// segmented. A UDP one cannot be cut correctly and fails with
// ErrUnknownSegmentSize. A non-GSO frame with a partial checksum has it
// completed here and comes back CsumValid; the caller counts that by
// checksummed.
func Recover(frame []byte, partial bool, mtu int) (o packet.Offload, checksummed bool, err error) {
	h, err := parse(frame)
	if err != nil || h.proto == 0 {
		if partial {
			return o, false, ErrUnsupported
		}
		return o, false, nil
	}
	if len(frame)-h.l3 > mtu && (partial || h.proto == protoTCP) {
		if h.proto != protoTCP {
			return o, false, ErrUnknownSegmentSize
		}
		mss := mtu - (h.l4 - h.l3) - h.l4len
		if mss <= 0 {
			return o, false, ErrMalformed
		}
		o.GSO = packet.GSOTCPv6
		if h.v4 {
			o.GSO = packet.GSOTCPv4
		}
		o.GSOSize = uint16(mss)
		o.HdrLen = uint16(h.l4 + h.l4len)
		o.Flags = packet.NeedsCsum
		if frame[h.l4+13]&tcpFlagCWR != 0 {
			o.Flags |= packet.ECN
		}
		o.CsumStart, o.CsumOffset = uint16(h.l4), h.csumOffset()
		ps := fold(pseudoSum(frame[h.l3:], h.v4, h.proto) + uint64(len(frame)-h.l4))
		binary.BigEndian.PutUint16(frame[h.l4+16:], ps)
		return o, false, nil
	}
	if !partial {
		return o, false, nil
	}
	o.Flags = packet.NeedsCsum
	o.CsumStart, o.CsumOffset = uint16(h.l4), h.csumOffset()
	if err := CompleteChecksum(frame, &o); err != nil {
		return packet.Offload{}, false, err
	}
	return o, true, nil
}
