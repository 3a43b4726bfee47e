//go:build linux

package netdev

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/govs/govs/datapath/packet"
)

// txRingOn is GOVS_SYSTEM_TX_RING=1: system ports send through a
// PACKET_TX_RING (TPACKET_V2) on a send-only socket of their own, one
// send(2) per batch, instead of sendmmsg. Off by default: see README's
// Performance section for what it measured.
var txRingOn = os.Getenv("GOVS_SYSTEM_TX_RING") == "1"

// Send ring geometry: frames that hold a 64 KiB super-frame with its
// virtio_net_hdr (ringWholeFrame), 8 blocks of 15, 120 frames, 8 MiB per
// port. A frame stays the kernel's until the skb that maps its pages
// (tpacket_snd on a device with scatter-gather) is freed, which on a veth
// is when the receiving stack is done with it: 120 is almost four batches.
const (
	txRingBlocks = 8
	// txDataOff is where a V2 send frame's data starts without
	// PACKET_TX_HAS_OFF: TPACKET2_HDRLEN - sizeof(struct sockaddr_ll).
	txDataOff = 32
)

type txRing struct {
	f  *os.File
	rc syscall.RawConn

	mu     sync.Mutex // held by the writer while it fills frames, and by close
	mem    []byte
	frames [][]byte
	head   int
	vnet   bool
	queued int   // frames marked TP_STATUS_SEND_REQUEST since the last send
	err    error // set by sendFn
	fn     func(fd uintptr) bool
}

// newTxRing opens the send socket of a system port on ifindex: protocol 0,
// so that it receives nothing; a virtio_net_hdr in front of each frame if
// vnet; PACKET_LOSS, so that the kernel marks a malformed frame
// TP_STATUS_WRONG_FORMAT and goes on with the next.
func newTxRing(name string, ifindex int, vnet bool) (*txRing, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	g := &txRing{vnet: vnet}
	fail := func(what string, err error) (*txRing, error) {
		if g.mem != nil {
			unix.Munmap(g.mem)
		}
		unix.Close(fd)
		return nil, fmt.Errorf("tx ring: %s: %w", what, err)
	}
	if vnet {
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
			return fail("PACKET_VNET_HDR", err)
		}
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return fail("PACKET_VERSION", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_LOSS, 1); err != nil {
		return fail("PACKET_LOSS", err)
	}
	setQdiscBypass(fd)
	per := ringBlockSize / ringWholeFrame
	req := unix.TpacketReq{Block_size: uint32(ringBlockSize), Block_nr: txRingBlocks, Frame_size: uint32(ringWholeFrame), Frame_nr: uint32(per * txRingBlocks)}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_TX_RING, &req); err != nil {
		return fail("PACKET_TX_RING", err)
	}
	if g.mem, err = unix.Mmap(fd, 0, ringBlockSize*txRingBlocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
		return fail("mmap", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifindex}); err != nil {
		return fail("bind", err)
	}
	for b := range txRingBlocks {
		for i := range per {
			off := b*ringBlockSize + i*ringWholeFrame
			g.frames = append(g.frames, g.mem[off:off+ringWholeFrame:off+ringWholeFrame])
		}
	}
	g.f = os.NewFile(uintptr(fd), name)
	if g.rc, err = g.f.SyscallConn(); err != nil {
		g.f.Close()
		unix.Munmap(g.mem)
		return nil, err
	}
	g.fn = g.sendFn
	return g, nil
}

// next returns the next free frame's data area (after the header), or nil
// if the kernel still holds every frame.
func (g *txRing) next() []byte {
	f := g.frames[g.head]
	switch ringLoadStatus(f) {
	case unix.TP_STATUS_AVAILABLE, unix.TP_STATUS_WRONG_FORMAT:
		return f[txDataOff:]
	}
	return nil
}

// post hands the frame next returned to the kernel with l bytes of data
// (virtio_net_hdr included).
func (g *txRing) post(l int) {
	f := g.frames[g.head]
	binary.NativeEndian.PutUint32(f[tp2Len:], uint32(l))
	ringSetStatus(f, unix.TP_STATUS_SEND_REQUEST)
	if g.head++; g.head == len(g.frames) {
		g.head = 0
	}
	g.queued++
}

// flush has the kernel send every frame requested so far: one send(2),
// which does not wait for them to complete (MSG_DONTWAIT).
func (g *txRing) flush() error {
	if g.queued == 0 {
		return nil
	}
	g.queued, g.err = 0, nil
	if err := g.rc.Write(g.fn); err != nil {
		return err
	}
	return g.err
}

func (g *txRing) sendFn(fd uintptr) bool {
	for {
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, fd, 0, 0, unix.MSG_DONTWAIT, 0, 0)
		switch e {
		case unix.EINTR:
			continue
		case unix.ENXIO, unix.ENODEV:
			g.err = ErrNoDevice
		}
		return true
	}
}

// writeRing is Write through the send ring: each frame (or segment of a
// super-frame the device cannot take) is copied into a free ring frame
// after its virtio_net_hdr, and the batch goes with one send(2) per
// BatchSize frames. A frame finding no free ring frame after a send is
// dropped.
func (s *systemPort) writeRing(pkts []*packet.Packet) (int, error) {
	g := s.txr
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mem == nil {
		return 0, ErrClosed
	}
	t := &s.tx
	hl := 0
	if g.vnet {
		hl = VirtioNetHdrLen
	}
	frame := func() []byte {
		b := g.next()
		if b == nil && g.queued > 0 {
			g.flush()
			b = g.next()
		}
		return b
	}
	sent, bytes := 0, 0
	var fatal error
	for _, p := range pkts {
		if g.queued >= BatchSize {
			if fatal = g.flush(); fatal != nil {
				break
			}
		}
		switch t.fin.prepare(p, t.hdrs[0][:]) {
		case txSend:
			l := p.Len()
			b := frame()
			if b == nil || hl+l > len(b) {
				continue
			}
			copy(b, t.hdrs[0][:hl])
			p.CopyTo(b[hl:])
			g.post(hl + l)
			sent++
			bytes += l
		case txSegment:
			seg := &t.fin.seg
			total, ok := seg.Segments(), true
			for range total {
				if g.queued >= BatchSize {
					if fatal = g.flush(); fatal != nil {
						break
					}
				}
				b := frame()
				if b == nil || hl+seg.MaxSegmentLen() > len(b) {
					ok = false
					break
				}
				clear(b[:hl])
				g.post(hl + seg.Next(b[hl:]))
			}
			t.fin.ctr.AddSegmented(total)
			if ok {
				sent++
				bytes += p.Len()
			}
		}
		if fatal != nil {
			break
		}
	}
	if fatal == nil {
		fatal = g.flush()
	}
	s.ctr.addTx(sent, bytes, len(pkts)-sent)
	if fatal != nil {
		return sent, s.portErr(fatal)
	}
	return sent, nil
}

func (g *txRing) close() error {
	err := g.f.Close()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mem != nil {
		unix.Munmap(g.mem)
		g.mem, g.frames = nil, nil
	}
	return err
}
