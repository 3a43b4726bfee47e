//go:build linux

package netdev

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/govs/govs/datapath/packet"
)

// The receive ring of a system port: a PACKET_RX_RING of TPACKET_V2 frames
// the kernel fills (tpacket_rcv, net/packet/af_packet.c) and Read copies
// out of into the packets' own buffers, handing each frame back at once.
//
// Why a ring: its depth is set by its tpacket_req, not by SO_RCVBUF, which
// tpacket_rcv does not consult. With the kernel's default SO_RCVBUF
// (212992 bytes, about three 64 KiB TSO super-frames) the recvmmsg path
// dropped ~5-7k frames at the socket per 4 s TCP stream (tp_drops) and the
// stream retransmitted ~300k segments at 6.5-6.8 Gbit/s; the ring holds
// 240 super-frames whatever SO_RCVBUF is (measurements in system_linux.go).
//
// Why TPACKET_V2 and not V3: V2 hands over every frame as soon as it is
// written (per-frame tp_status, sk_data_ready per frame); V3 hands over
// whole blocks, a part-filled one only after tp_retire_blk_tov (>= 1 ms),
// which a request/response or connection-setup workload would pay per
// round trip. V3's variable-size frames would pack small frames densely,
// but with PACKET_VNET_HDR the frames that matter are 64 KiB super-frames.
//
// Layout of one V2 frame (include/uapi/linux/if_packet.h):
//
//	0   struct tpacket2_hdr (32 bytes): tp_status, tp_len, tp_snaplen,
//	    tp_mac, tp_net, tp_sec, tp_nsec, tp_vlan_tci, tp_vlan_tpid
//	32  struct sockaddr_ll (sll_pkttype at 32+10)
//	tp_mac-10  struct virtio_net_hdr, with PACKET_VNET_HDR: tpacket_rcv
//	    adds sizeof(struct virtio_net_hdr) to netoff when the socket has a
//	    vnet header and writes it at h.raw + macoff - sizeof(vnet hdr)
//	    (since Linux 4.6, 58d19b19cd99 "packet: vnet_hdr support for
//	    tpacket_rcv"; OpenSystem does not use the ring before)
//	tp_mac  the frame, tp_snaplen bytes (tp_len the whole frame's length)
const (
	tp2Len     = 4
	tp2Snaplen = 8
	tp2Mac     = 12
	tp2VlanTCI = 24
	tp2VlanTPI = 26
	tp2Pkttype = 32 + 10 // TPACKET_ALIGN(sizeof(struct tpacket2_hdr)) + offsetof(sll_pkttype)
)

// Ring geometry. Every frame, however small, takes a slot, so the depth
// is counted in frames. A slot holds a frame of up to the MTU (1500) with
// its headers: tpacket_rcv puts the frame at TPACKET_ALIGN(52+maclen) + 10
// - maclen (76 for an untagged frame). A larger frame (a 64 KiB GSO
// super-frame, a jumbo frame) gets a slot marked TP_STATUS_COPY holding
// only its head, and tpacket_rcv queues the whole skb on the socket, in
// ring order, for ringCopy to receive (PACKET_COPY_THRESH), as long as
// the socket's receive buffer, raised to ringCopyBuf, has room. So 2 MiB
// hold 1024 small frames, and super-frames cross with one copy (skb to
// packet) instead of two. The first ring had slots of 64 KiB + 256 bytes
// (GOVS_RING_FRAME=65792 GOVS_RING_BLOCKS=16, the bench's govs-ring64k):
// 240 frames in 16 MiB, which bursts of small frames overflowed. Measured
// against it (make bench, 3 rounds, loaded machine): 64 B frames received
// 144 against 71 kpps, TCP 1 stream 10.4 against 8.0 Gbit/s, UDP 8 KiB at
// 4 Gbit/s 13% lost against 24%, conn/s within the noise; 8192 slots (16
// MiB) cost conn/s (the kernel and the reader walk 16 MiB of cold lines).
// Variables so that tests can shrink or break them.
var (
	ringFrameSize = 2048
	ringBlockSize = 1 << 20
	ringBlocks    = 2
	// ringCopyBuf is SO_RCVBUF for the frames larger than a slot: about
	// 240 super-frames (truesize ~66 KiB), as many as the first ring held.
	ringCopyBuf = 16 << 20
)

// ringWholeFrame is a slot size that holds the largest frame a port reads
// (packet.MaxFrame, with Ethernet and VLAN headers): with it nothing is
// queued on the socket.
const ringWholeFrame = 65536 + 256

func init() {
	// GOVS_RING_FRAME=N sets the slot size (a multiple of 16 from 2048;
	// 65792 for the first ring's), to compare geometries.
	if v, err := strconv.Atoi(os.Getenv("GOVS_RING_FRAME")); err == nil && v >= 2048 && v <= ringWholeFrame && v%16 == 0 {
		ringFrameSize = v
	}
	if v, err := strconv.Atoi(os.Getenv("GOVS_RING_BLOCKS")); err == nil && v >= 1 && v <= 64 {
		ringBlocks = v
	}
}

// rxRingMode says when OpenSystem tries the ring (falling back to recvmmsg
// when the kernel refuses it): ringAuto (the default) when Config.SockBufSize
// is 0, i.e. with the kernel's default socket buffer, the case the ring is
// for; with a size configured (other_config:userspace-sock-buf-size) the
// buffer is deep enough, counts bytes rather than 64 KiB slots, and
// recvmmsg reads it with one copy less (measured 10.7-11.7 Gbit/s TCP).
// GOVS_SYSTEM_RX_RING=0 never uses the ring, =1 always tries it.
var rxRingMode = func() int {
	switch os.Getenv("GOVS_SYSTEM_RX_RING") {
	case "0":
		return ringNever
	case "1":
		return ringAlways
	}
	return ringAuto
}()

const (
	ringAuto = iota
	ringNever
	ringAlways
)

func wantRxRing(cfg Config) bool {
	return rxRingMode == ringAlways || rxRingMode == ringAuto && cfg.SockBufSize <= 0
}

type rxRing struct {
	// mu is held while the reader copies out of the ring and while Close
	// unmaps it. The fd's Close already waits for a Read inside rc.Read
	// to leave, but through runtime semaphores the race detector does
	// not see; uncontended, it costs ~20 ns per Read.
	mu     sync.Mutex
	mem    []byte   // nil once unmapped
	frames [][]byte // each frame's slice of mem
	head   int      // the next frame the kernel hands over
}

// newRxRing sets up and maps a TPACKET_V2 receive ring on the unbound
// socket fd, after PACKET_VNET_HDR (which the kernel refuses once a ring
// exists). On failure the socket is left as it was, for recvmmsg.
func newRxRing(fd int) (*rxRing, error) {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return nil, fmt.Errorf("PACKET_VERSION: %w", err)
	}
	per := ringBlockSize / ringFrameSize
	req := unix.TpacketReq{
		Block_size: uint32(ringBlockSize),
		Block_nr:   uint32(ringBlocks),
		Frame_size: uint32(ringFrameSize),
		Frame_nr:   uint32(per * ringBlocks),
	}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V1)
		return nil, fmt.Errorf("PACKET_RX_RING: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, ringBlockSize*ringBlocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		freeRxRing(fd)
		return nil, fmt.Errorf("mmap rx ring: %w", err)
	}
	if ringFrameSize < ringWholeFrame {
		if err := setRingCopy(fd); err != nil {
			unix.Munmap(mem)
			freeRxRing(fd)
			return nil, err
		}
	}
	g := &rxRing{mem: mem, frames: make([][]byte, 0, per*ringBlocks)}
	for b := range ringBlocks {
		for i := range per {
			off := b*ringBlockSize + i*ringFrameSize
			g.frames = append(g.frames, mem[off:off+ringFrameSize:off+ringFrameSize])
		}
	}
	return g, nil
}

// freeRxRing frees the ring on fd (a zero request, packet_set_ring) and
// puts the socket back to TPACKET_V1, for recvmmsg.
func freeRxRing(fd int) {
	unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &unix.TpacketReq{})
	unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V1)
}

// setRingCopy has the kernel queue a frame larger than a slot on the
// socket (ringCopy), with a receive buffer of at least ringCopyBuf.
func setRingCopy(fd int) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_COPY_THRESH, 1); err != nil {
		return fmt.Errorf("PACKET_COPY_THRESH: %w", err)
	}
	// SO_RCVBUF reads back doubled (socket(7)).
	if n, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF); err == nil && n >= 2*ringCopyBuf {
		return nil
	}
	return setSockBufs(fd, ringCopyBuf, 0)
}

func (g *rxRing) unmap() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mem != nil {
		unix.Munmap(g.mem)
		g.mem, g.frames = nil, nil
	}
}

// ringRx copies the frames the kernel has handed over, up to len(pkts),
// into pkts, releasing each ring frame, and returns how many it kept. It
// runs inside rc.Read.
func (s *systemPort) ringRx(pkts []*packet.Packet) int {
	g := s.ring
	g.mu.Lock()
	defer g.mu.Unlock()
	n, bytes, errs, drops := 0, 0, 0, 0
	for n < len(pkts) && g.mem != nil {
		f := g.frames[g.head]
		status := ringLoadStatus(f)
		if status&unix.TP_STATUS_USER == 0 {
			break
		}
		p := pkts[n]
		keep, ok := false, true
		switch {
		case status&unix.TP_STATUS_COPY != 0:
			keep, ok = s.ringCopy(p, f, status)
		case ringCut(f):
			// Larger than a slot, and the socket's receive buffer
			// was full: the kernel kept only the head.
			drops++
		default:
			keep, ok = s.ringFrame(p, f, status)
		}
		ringRelease(f)
		if g.head++; g.head == len(g.frames) {
			g.head = 0
		}
		switch {
		case !ok:
			errs++
		case keep:
			bytes += p.Len()
			n++
		}
	}
	s.ctr.addRx(n, bytes, errs)
	if drops > 0 {
		s.kmu.Lock()
		s.kdrops += uint64(drops)
		s.kmu.Unlock()
	}
	return n
}

// ringCopy receives into p the frame that did not fit ring frame f (its
// status TP_STATUS_COPY): tpacket_rcv queued the whole skb on the socket,
// in ring order, for recvmsg (PACKET_COPY_THRESH). It takes the VLAN and
// checksum status from f, as the copy's auxdata carries no more.
func (s *systemPort) ringCopy(p *packet.Packet, f []byte, status uint32) (keep, ok bool) {
	r := &s.rx
	s.prepRx([]*packet.Packet{p})
	r.msgs[0].Hdr.Namelen, r.msgs[0].Hdr.Controllen = 0, 0
	r.n, r.err = 0, nil
	if cerr := s.rc.Control(r.copyFn); cerr != nil || r.err != nil || r.n != 1 {
		return false, false
	}
	if !s.ignoreOutgoing && f[tp2Pkttype] == unix.PACKET_OUTGOING {
		return false, true
	}
	m := &r.msgs[0]
	l := int(m.Len)
	if m.Hdr.Flags&unix.MSG_TRUNC != 0 {
		return false, false
	}
	if s.vnet {
		if l < VirtioNetHdrLen || DecodeVirtioNetHdr(r.hdrs[0][:], &p.Offload) != nil {
			return false, false
		}
		l -= VirtioNetHdrLen
	}
	p.SetLen(l)
	tci := binary.NativeEndian.Uint16(f[tp2VlanTCI:])
	tpid := binary.NativeEndian.Uint16(f[tp2VlanTPI:])
	return true, s.finishFrame(p, status&^unix.TP_STATUS_COPY, tci, tpid)
}

// ringCut reports whether the kernel cut ring frame f to the slot's size
// (tp_snaplen short of tp_len, the frame ending at the slot's end).
func ringCut(f []byte) bool {
	l := binary.NativeEndian.Uint32(f[tp2Len:])
	snap := binary.NativeEndian.Uint32(f[tp2Snaplen:])
	mac := binary.NativeEndian.Uint16(f[tp2Mac:])
	return snap < l && int(mac)+int(snap) >= len(f)
}

// ringFrame copies ring frame f into p; keep is false for a frame to skip
// (an outgoing one), ok false for a bad one.
func (s *systemPort) ringFrame(p *packet.Packet, f []byte, status uint32) (keep, ok bool) {
	if !s.ignoreOutgoing && f[tp2Pkttype] == unix.PACKET_OUTGOING {
		return false, true
	}
	l := binary.NativeEndian.Uint32(f[tp2Len:])
	snap := int(binary.NativeEndian.Uint32(f[tp2Snaplen:]))
	mac := int(binary.NativeEndian.Uint16(f[tp2Mac:]))
	p.Reset()
	tail := p.Tail()
	// Truncated by the frame size, or larger than a packet: as MSG_TRUNC.
	if uint32(snap) != l || mac+snap > len(f) || snap > len(tail) {
		return false, false
	}
	if s.vnet {
		if mac < tp2Pkttype+VirtioNetHdrLen || DecodeVirtioNetHdr(f[mac-VirtioNetHdrLen:mac], &p.Offload) != nil {
			return false, false
		}
	}
	p.SetLen(copy(tail, f[mac:mac+snap]))
	tci := binary.NativeEndian.Uint16(f[tp2VlanTCI:])
	tpid := binary.NativeEndian.Uint16(f[tp2VlanTPI:])
	return true, s.finishFrame(p, status, tci, tpid)
}
