package netdev

import (
	"encoding/binary"
	"errors"

	"github.com/govs/govs/datapath/packet"
)

// struct virtio_net_hdr and struct virtio_net_hdr_mrg_rxbuf, from
// include/uapi/linux/virtio_net.h:
//
//	__u8 flags; __u8 gso_type; __virtio16 hdr_len; __virtio16 gso_size;
//	__virtio16 csum_start; __virtio16 csum_offset; [__virtio16 num_buffers;]
const (
	// VirtioNetHdrLen is the length of struct virtio_net_hdr, what
	// PACKET_VNET_HDR and IFF_VNET_HDR (TUNSETVNETHDRSZ 10) put in front
	// of every frame.
	VirtioNetHdrLen = 10
	// VirtioNetHdrMrgRxbufLen is the length of struct
	// virtio_net_hdr_mrg_rxbuf, the header of VIRTIO_NET_F_MRG_RXBUF and of
	// every VIRTIO_F_VERSION_1 device.
	VirtioNetHdrMrgRxbufLen = 12
)

const (
	virtioNetHdrFNeedsCsum = 1 // VIRTIO_NET_HDR_F_NEEDS_CSUM
	virtioNetHdrFDataValid = 2 // VIRTIO_NET_HDR_F_DATA_VALID

	virtioNetHdrGSONone  = 0    // VIRTIO_NET_HDR_GSO_NONE
	virtioNetHdrGSOTCPv4 = 1    // VIRTIO_NET_HDR_GSO_TCPV4
	virtioNetHdrGSOUDP   = 3    // VIRTIO_NET_HDR_GSO_UDP (UFO, gone from Linux 4.14)
	virtioNetHdrGSOTCPv6 = 4    // VIRTIO_NET_HDR_GSO_TCPV6
	virtioNetHdrGSOUDPL4 = 5    // VIRTIO_NET_HDR_GSO_UDP_L4 (USO, Linux 6.2)
	virtioNetHdrGSOECN   = 0x80 // VIRTIO_NET_HDR_GSO_ECN
)

// ErrVirtioNetHdr is returned for a virtio_net_hdr that cannot be
// translated: too short, an unknown GSO type (UFO included), or a GSO type
// with a zero segment size, which the kernel rejects too
// (virtio_net_hdr_to_skb).
var ErrVirtioNetHdr = errors.New("netdev: invalid virtio_net_hdr")

// DecodeVirtioNetHdr translates the virtio_net_hdr at the start of b into
// o. The header is read little-endian: AF_PACKET and tap devices write it in
// host byte order (vio_le(), tun_is_little_endian()), and govs runs on
// little-endian hosts only; vhost-user and VIRTIO_F_VERSION_1 devices are
// little-endian by specification.
func DecodeVirtioNetHdr(b []byte, o *packet.Offload) error {
	if len(b) < VirtioNetHdrLen {
		return ErrVirtioNetHdr
	}
	*o = packet.Offload{
		HdrLen:     binary.LittleEndian.Uint16(b[2:]),
		GSOSize:    binary.LittleEndian.Uint16(b[4:]),
		CsumStart:  binary.LittleEndian.Uint16(b[6:]),
		CsumOffset: binary.LittleEndian.Uint16(b[8:]),
	}
	if b[0]&virtioNetHdrFNeedsCsum != 0 {
		o.Flags |= packet.NeedsCsum
	} else {
		o.CsumStart, o.CsumOffset = 0, 0
	}
	if b[0]&virtioNetHdrFDataValid != 0 {
		o.Flags |= packet.CsumValid
	}
	if b[1]&virtioNetHdrGSOECN != 0 {
		o.Flags |= packet.ECN
	}
	switch b[1] &^ virtioNetHdrGSOECN {
	case virtioNetHdrGSONone:
		o.GSOSize = 0
		o.Flags &^= packet.ECN
		return nil
	case virtioNetHdrGSOTCPv4:
		o.GSO = packet.GSOTCPv4
	case virtioNetHdrGSOTCPv6:
		o.GSO = packet.GSOTCPv6
	case virtioNetHdrGSOUDPL4:
		o.GSO = packet.GSOUDPL4
	default:
		*o = packet.Offload{}
		return ErrVirtioNetHdr
	}
	if o.GSOSize == 0 {
		*o = packet.Offload{}
		return ErrVirtioNetHdr
	}
	return nil
}

// EncodeVirtioNetHdr writes o as a virtio_net_hdr at the start of b, which
// must be at least VirtioNetHdrLen long, little-endian (see
// DecodeVirtioNetHdr). frameLen is the length of the frame it goes with:
// HdrLen is only a hint of the linear header length to the kernel
// (skb_headlen on receive), and one that no longer fits the frame, after
// the datapath changed it, is sent as 0, which the kernel raises as needed.
// CsumValid is not sent: virtio_net_hdr_to_skb, which AF_PACKET and tun
// use on transmit, does not read DATA_VALID.
func EncodeVirtioNetHdr(b []byte, o *packet.Offload, frameLen int) {
	_ = b[VirtioNetHdrLen-1]
	var flags, gso uint8
	var gsoSize, csumStart, csumOffset, hdrLen uint16
	if o.Flags&packet.NeedsCsum != 0 {
		flags = virtioNetHdrFNeedsCsum
		csumStart, csumOffset = o.CsumStart, o.CsumOffset
	}
	switch o.GSO {
	case packet.GSOTCPv4:
		gso = virtioNetHdrGSOTCPv4
	case packet.GSOTCPv6:
		gso = virtioNetHdrGSOTCPv6
	case packet.GSOUDPL4:
		gso = virtioNetHdrGSOUDPL4
	}
	if gso != virtioNetHdrGSONone {
		gsoSize = o.GSOSize
		if o.Flags&packet.ECN != 0 {
			gso |= virtioNetHdrGSOECN
		}
	}
	if int(o.HdrLen) <= frameLen {
		hdrLen = o.HdrLen
	}
	b[0], b[1] = flags, gso
	binary.LittleEndian.PutUint16(b[2:], hdrLen)
	binary.LittleEndian.PutUint16(b[4:], gsoSize)
	binary.LittleEndian.PutUint16(b[6:], csumStart)
	binary.LittleEndian.PutUint16(b[8:], csumOffset)
}
