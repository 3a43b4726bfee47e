package vhostuser

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The vhost-user wire format, QEMU docs/interop/vhost-user.rst, "Message
// Specification": a 12-byte header (request, flags, size) in host byte
// order followed by size bytes of payload; file descriptors travel as
// SCM_RIGHTS ancillary data with the message.
const (
	hdrLen = 12

	flagVersionMask = 0x3
	flagVersion     = 0x1 // the only version of the protocol
	flagReply       = 0x4
	flagNeedReply   = 0x8 // VHOST_USER_PROTOCOL_F_REPLY_ACK

	// maxPayload bounds what a message may carry. The largest message a
	// net backend takes is SET_MEM_TABLE with vhostMemoryMaxRegions
	// regions (8 + 8*32 bytes); GET_CONFIG/SET_CONFIG carry at most 256
	// bytes of config (VHOST_USER_MAX_CONFIG_SIZE) plus their own header.
	maxPayload = 4096

	// maxFds is how many file descriptors one message may carry: one per
	// memory region (VHOST_MEMORY_BASELINE_NREGIONS).
	maxFds = vhostMemoryMaxRegions
)

// request is a front-end message type (vhost-user.rst "Front-end message
// types").
type request uint32

const (
	reqGetFeatures         request = 1
	reqSetFeatures         request = 2
	reqSetOwner            request = 3
	reqResetOwner          request = 4
	reqSetMemTable         request = 5
	reqSetLogBase          request = 6
	reqSetLogFd            request = 7
	reqSetVringNum         request = 8
	reqSetVringAddr        request = 9
	reqSetVringBase        request = 10
	reqGetVringBase        request = 11
	reqSetVringKick        request = 12
	reqSetVringCall        request = 13
	reqSetVringErr         request = 14
	reqGetProtocolFeatures request = 15
	reqSetProtocolFeatures request = 16
	reqGetQueueNum         request = 17
	reqSetVringEnable      request = 18
	reqSendRARP            request = 19
	reqNetSetMTU           request = 20
	reqSetBackendReqFd     request = 21
	reqIOTLBMsg            request = 22
	reqSetVringEndian      request = 23
	reqGetConfig           request = 24
	reqSetConfig           request = 25
	reqResetDevice         request = 34
	reqGetMaxMemSlots      request = 36
	reqSetStatus           request = 39
	reqGetStatus           request = 40
)

var requestNames = map[request]string{
	reqGetFeatures: "GET_FEATURES", reqSetFeatures: "SET_FEATURES", reqSetOwner: "SET_OWNER",
	reqResetOwner: "RESET_OWNER", reqSetMemTable: "SET_MEM_TABLE", reqSetLogBase: "SET_LOG_BASE",
	reqSetLogFd: "SET_LOG_FD", reqSetVringNum: "SET_VRING_NUM", reqSetVringAddr: "SET_VRING_ADDR",
	reqSetVringBase: "SET_VRING_BASE", reqGetVringBase: "GET_VRING_BASE", reqSetVringKick: "SET_VRING_KICK",
	reqSetVringCall: "SET_VRING_CALL", reqSetVringErr: "SET_VRING_ERR",
	reqGetProtocolFeatures: "GET_PROTOCOL_FEATURES", reqSetProtocolFeatures: "SET_PROTOCOL_FEATURES",
	reqGetQueueNum: "GET_QUEUE_NUM", reqSetVringEnable: "SET_VRING_ENABLE", reqSendRARP: "SEND_RARP",
	reqNetSetMTU: "NET_SET_MTU", reqSetBackendReqFd: "SET_BACKEND_REQ_FD", reqIOTLBMsg: "IOTLB_MSG",
	reqSetVringEndian: "SET_VRING_ENDIAN", reqGetConfig: "GET_CONFIG", reqSetConfig: "SET_CONFIG",
	reqResetDevice: "RESET_DEVICE", reqGetMaxMemSlots: "GET_MAX_MEM_SLOTS",
	reqSetStatus: "SET_STATUS", reqGetStatus: "GET_STATUS",
}

func (r request) String() string {
	if s, ok := requestNames[r]; ok {
		return s
	}
	return fmt.Sprintf("request(%d)", uint32(r))
}

// Virtio feature bits (virtio 1.1 §5.1.3 and §6; include/uapi/linux/
// virtio_net.h, virtio_ring.h, virtio_config.h) and the vhost-user one.
const (
	featNetCsum         = 0  // VIRTIO_NET_F_CSUM: the guest sends partial checksums
	featNetGuestCsum    = 1  // VIRTIO_NET_F_GUEST_CSUM: the guest takes them
	featNetGuestTSO4    = 7  // VIRTIO_NET_F_GUEST_TSO4
	featNetGuestTSO6    = 8  // VIRTIO_NET_F_GUEST_TSO6
	featNetHostTSO4     = 11 // VIRTIO_NET_F_HOST_TSO4
	featNetHostTSO6     = 12 // VIRTIO_NET_F_HOST_TSO6
	featNetMrgRxbuf     = 15 // VIRTIO_NET_F_MRG_RXBUF
	featNetMQ           = 22 // VIRTIO_NET_F_MQ
	featAnyLayout       = 27 // VIRTIO_F_ANY_LAYOUT
	featRingIndirect    = 28 // VIRTIO_RING_F_INDIRECT_DESC
	featRingEventIdx    = 29 // VIRTIO_RING_F_EVENT_IDX
	featProtocolFeature = 30 // VHOST_USER_F_PROTOCOL_FEATURES
	featVersion1        = 32 // VIRTIO_F_VERSION_1
	featRingPacked      = 34 // VIRTIO_F_RING_PACKED
)

// Protocol feature bits (vhost-user.rst "Protocol features").
const (
	protoMQ          = 0  // VHOST_USER_PROTOCOL_F_MQ
	protoReplyAck    = 3  // VHOST_USER_PROTOCOL_F_REPLY_ACK
	protoResetDevice = 13 // VHOST_USER_PROTOCOL_F_RESET_DEVICE
)

// backendFeatures is what govs offers. Not offered: IOMMU_PLATFORM (no IOTLB), LOG_ALL (no migration), the UDP offloads
// (a guest's USO frames would be accepted, but UFO is gone from Linux),
// CTRL_VQ (QEMU and virtio-user handle the control queue themselves).
const backendFeatures = 1<<featNetCsum | 1<<featNetGuestCsum |
	1<<featNetGuestTSO4 | 1<<featNetGuestTSO6 | 1<<featNetHostTSO4 | 1<<featNetHostTSO6 |
	1<<featNetMrgRxbuf | 1<<featNetMQ | 1<<featAnyLayout | 1<<featRingIndirect |
	1<<featRingEventIdx | 1<<featProtocolFeature | 1<<featVersion1 | 1<<featRingPacked

const backendProtocolFeatures = 1<<protoMQ | 1<<protoReplyAck | 1<<protoResetDevice

// vringFdInvalid is the "no file descriptor" bit of the u64 payload of
// SET_VRING_KICK/CALL/ERR (VHOST_USER_VRING_NOFD_MASK); bits 0-7 are the
// ring index.
const (
	vringFdInvalid   = 1 << 8
	vringFdIndexMask = 0xff
)

// vhostMemoryMaxRegions is VHOST_MEMORY_BASELINE_NREGIONS: what
// SET_MEM_TABLE carries without VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS.
const vhostMemoryMaxRegions = 8

// errProtocol marks a message that breaks the protocol: the connection is
// dropped.
var errProtocol = errors.New("vhostuser: protocol error")

func protoErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errProtocol}, args...)...)
}

// vhostUserHeader is the message header (vhost-user.rst "Header").
type vhostUserHeader struct {
	request request
	flags   uint32
	size    uint32
}

// parseHeader decodes and checks a message header.
func parseHeader(b []byte) (vhostUserHeader, error) {
	if len(b) < hdrLen {
		return vhostUserHeader{}, protoErrorf("short header (%d bytes)", len(b))
	}
	h := vhostUserHeader{
		request: request(binary.LittleEndian.Uint32(b[0:])),
		flags:   binary.LittleEndian.Uint32(b[4:]),
		size:    binary.LittleEndian.Uint32(b[8:]),
	}
	if h.flags&flagVersionMask != flagVersion {
		return h, protoErrorf("%v: version %d", h.request, h.flags&flagVersionMask)
	}
	if h.flags&flagReply != 0 {
		return h, protoErrorf("%v: reply flag set in a request", h.request)
	}
	if h.size > maxPayload {
		return h, protoErrorf("%v: payload of %d bytes", h.request, h.size)
	}
	return h, nil
}

func putHeader(b []byte, req request, flags uint32, size int) {
	binary.LittleEndian.PutUint32(b[0:], uint32(req))
	binary.LittleEndian.PutUint32(b[4:], flags)
	binary.LittleEndian.PutUint32(b[8:], uint32(size))
}

// vhostVringState is struct vhost_vring_state (include/uapi/linux/vhost_types.h).
type vhostVringState struct {
	index uint32
	num   uint32
}

// vhostVringAddr is struct vhost_vring_addr (include/uapi/linux/vhost_types.h):
// the ring addresses in the front-end's address space.
type vhostVringAddr struct {
	index uint32
	flags uint32 // VHOST_VRING_F_LOG
	desc  uint64
	used  uint64
	avail uint64
	log   uint64
}

const vhostVringAddrLen = 40

// vhostMemoryRegion is VhostUserMemoryRegion (vhost-user.rst "Memory
// region description").
type vhostMemoryRegion struct {
	guestAddr  uint64
	size       uint64
	userAddr   uint64
	mmapOffset uint64
}

const vhostMemoryRegionLen = 32

func parseU64(req request, p []byte) (uint64, error) {
	if len(p) != 8 {
		return 0, protoErrorf("%v: payload of %d bytes, want 8", req, len(p))
	}
	return binary.LittleEndian.Uint64(p), nil
}

func parseVringState(req request, p []byte) (vhostVringState, error) {
	if len(p) != 8 {
		return vhostVringState{}, protoErrorf("%v: payload of %d bytes, want 8", req, len(p))
	}
	return vhostVringState{binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:])}, nil
}

func parseVringAddr(p []byte) (vhostVringAddr, error) {
	if len(p) != vhostVringAddrLen {
		return vhostVringAddr{}, protoErrorf("SET_VRING_ADDR: payload of %d bytes, want %d", len(p), vhostVringAddrLen)
	}
	return vhostVringAddr{
		index: binary.LittleEndian.Uint32(p[0:]),
		flags: binary.LittleEndian.Uint32(p[4:]),
		desc:  binary.LittleEndian.Uint64(p[8:]),
		used:  binary.LittleEndian.Uint64(p[16:]),
		avail: binary.LittleEndian.Uint64(p[24:]),
		log:   binary.LittleEndian.Uint64(p[32:]),
	}, nil
}

// parseMemTable decodes VhostUserMemory: nregions u32, padding u32, then
// nregions region descriptions; each region needs one fd.
func parseMemTable(p []byte, dst *[vhostMemoryMaxRegions]vhostMemoryRegion) (int, error) {
	if len(p) < 8 {
		return 0, protoErrorf("SET_MEM_TABLE: payload of %d bytes", len(p))
	}
	n := binary.LittleEndian.Uint32(p)
	if n == 0 || n > vhostMemoryMaxRegions {
		return 0, protoErrorf("SET_MEM_TABLE: %d regions", n)
	}
	if len(p) < 8+int(n)*vhostMemoryRegionLen {
		return 0, protoErrorf("SET_MEM_TABLE: payload of %d bytes for %d regions", len(p), n)
	}
	for i := range int(n) {
		b := p[8+i*vhostMemoryRegionLen:]
		r := vhostMemoryRegion{
			guestAddr:  binary.LittleEndian.Uint64(b[0:]),
			size:       binary.LittleEndian.Uint64(b[8:]),
			userAddr:   binary.LittleEndian.Uint64(b[16:]),
			mmapOffset: binary.LittleEndian.Uint64(b[24:]),
		}
		if r.size == 0 || r.guestAddr+r.size < r.guestAddr || r.userAddr+r.size < r.userAddr ||
			r.mmapOffset+r.size < r.mmapOffset || r.mmapOffset+r.size > 1<<47 {
			return 0, protoErrorf("SET_MEM_TABLE: region %d %+v", i, r)
		}
		dst[i] = r
	}
	return int(n), nil
}
