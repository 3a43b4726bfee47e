//go:build linux

package netdev

import (
	"encoding/binary"
	"fmt"
	"os"
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

// Ring geometry. A frame must hold the largest frame a port reads
// (packet.MaxFrame, a 64 KiB GSO super-frame with Ethernet and VLAN
// headers) after tp_mac, which tpacket_rcv puts at TPACKET_ALIGN(52+maclen)
// + 10 - maclen (76 for an untagged frame): 65536+256 bytes (a multiple of
// TPACKET_ALIGNMENT, 16) is enough. The kernel allocates each block as
// 2^order pages (alloc_pg_vec), so a block of one 68 KiB frame would take
// 128 KiB; 1 MiB blocks of 15 frames waste 6%. Every frame, however small,
// takes a slot, so the depth is counted in frames: 16 blocks, 240 frames,
// 16 MiB per port, about what the default 212992-byte socket buffer holds
// in small frames (truesize ~768 bytes each: ~270), where 8 MiB (120
// frames) lost 80 of a 200-datagram UDP burst the recvmmsg path with a
// 4 MiB buffer takes whole; and 80 times the three super-frames that
// buffer holds, ~10 ms of a 12 Gbit/s stream. Variables so that tests can
// shrink or break them.
var (
	ringFrameSize = 65536 + 256
	ringBlockSize = 1 << 20
	ringBlocks    = 16
)

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
		// A zero request frees the ring (packet_set_ring).
		unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &unix.TpacketReq{})
		unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V1)
		return nil, fmt.Errorf("mmap rx ring: %w", err)
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
	n, bytes, errs := 0, 0, 0
	for n < len(pkts) && g.mem != nil {
		f := g.frames[g.head]
		status := ringLoadStatus(f)
		if status&unix.TP_STATUS_USER == 0 {
			break
		}
		p := pkts[n]
		keep, ok := s.ringFrame(p, f, status)
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
	return n
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
