//go:build linux

package netdev

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/govs/govs/datapath/packet"
)

// An AF_XDP port (OVS's type=afxdp, lib/netdev-afxdp.c) receives through an
// XDP program govs attaches to the device, which redirects every frame to
// the AF_XDP socket of its receive queue (an XSKMAP), and sends by putting
// frames into that socket's tx ring. Each queue has a UMEM of its own:
// xskFrames frames of xskFrameSize bytes, the first half circulating
// through the fill and rx rings, the second half through the tx and
// completion rings. Read copies each frame out of the UMEM into the
// datapath's packet and hands the frame back at once, Write copies into a
// free tx frame: one copy each way, as the system port's ring.
//
// AF_XDP frames carry no offload metadata: what a port receives must have
// complete checksums (a veth peer with tx checksum offload on sends partial
// ones: OVS's documentation has `ethtool -K <peer> tx off` for that) and
// what it sends is segmented and checksummed in software first.

// UMEM geometry per queue. 4 KiB frames, as OVS's FRAME_SIZE: a frame
// holds XDP_PACKET_HEADROOM (256, the kernel's in front of received
// frames) and a frame of up to 3840 bytes, so the device MTU must stay
// below that (no jumbo frames, as OVS's AF_XDP). 4096 frames is 16 MiB per
// queue: 2048 for receiving (the fill ring's depth, about what the system
// port's ring holds in small frames), 2048 for sending.
const (
	xskFrameSize = 4096
	xskFrames    = 4096
	xskRingSize  = xskFrames / 2
	xskMaxFrame  = xskFrameSize - unix.XDP_PACKET_HEADROOM
	// xskKicks bounds the sendto calls of one Write: in copy mode the
	// kernel sends at most 32 frames per call (TX_BATCH_SIZE in
	// net/xdp/xsk.c), so a batch of BatchSize segments' worth of a
	// super-frame (up to 45) needs a few.
	xskKicks = 64
)

type afxdpPort struct {
	name     string
	ifindex  int
	mode     XDPMode // in use: XDPNativeZC, XDPNative or XDPGeneric
	xdpFlags int     // the XDP_FLAGS_* the program was attached with
	mapFd    int
	progFd   int
	queues   []*xskQueue
	closed   atomic.Bool
	ctr      portCounters
	cmu      sync.Mutex // serialises Close
}

// xskQueue is one AF_XDP socket with its UMEM and rings.
type xskQueue struct {
	port       *afxdpPort
	id         int
	f          *os.File
	rc         syscall.RawConn
	needWakeup bool
	umem       []byte

	// rmu is held by the reader while it touches fill, rx and the UMEM's
	// receive half, and by Close while it unmaps them.
	rmu      sync.Mutex
	fill, rx *xskRing
	rxPkts   []*packet.Packet
	rxN      int
	rxErrs   int
	rxFn     func(fd uintptr) bool

	// tmu is held by the writer while it touches tx, completion and the
	// UMEM's send half, and by Close.
	tmu      sync.Mutex
	tx, comp *xskRing
	txFree   []uint64 // free send frames (UMEM offsets)
	fin      txFinisher
	kickFn   func(fd uintptr) bool
	kickErr  error
}

// OpenAFXDP opens an AF_XDP port on the existing kernel device name.
func OpenAFXDP(name string, cfg AFXDPConfig) (Port, error) {
	if !ptrIs64 {
		return nil, fmt.Errorf("netdev: afxdp port %s: %w", name, errors.ErrUnsupported)
	}
	ifindex, err := ifIndex(name)
	if err != nil {
		return nil, fmt.Errorf("netdev: open afxdp port %s: %w", name, err)
	}
	n := max(cfg.RxQueues, 1)
	modes := []XDPMode{cfg.Mode}
	if cfg.Mode == XDPBestEffort {
		modes = []XDPMode{XDPNativeZC, XDPNative, XDPGeneric}
	}
	var errs []error
	for _, m := range modes {
		p, err := openAFXDP(name, ifindex, n, m, cfg.NeedWakeup)
		if err == nil {
			return p, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", m, err))
	}
	return nil, fmt.Errorf("netdev: open afxdp port %s: %w", name, errors.Join(errs...))
}

func openAFXDP(name string, ifindex, n int, mode XDPMode, needWakeup bool) (_ *afxdpPort, err error) {
	p := &afxdpPort{name: name, ifindex: ifindex, mode: mode, mapFd: -1, progFd: -1}
	defer func() {
		if err != nil {
			p.release()
		}
	}()
	if p.mapFd, err = newXskMap(n); err != nil {
		return nil, err
	}
	if p.progFd, err = loadXskProg(p.mapFd); err != nil {
		return nil, err
	}
	bind := uint16(unix.XDP_COPY)
	switch mode {
	case XDPNativeZC:
		bind = unix.XDP_ZEROCOPY
		fallthrough
	case XDPNative:
		p.xdpFlags = unix.XDP_FLAGS_DRV_MODE
	default:
		p.xdpFlags = unix.XDP_FLAGS_SKB_MODE
	}
	if needWakeup {
		bind |= unix.XDP_USE_NEED_WAKEUP
	}
	// The program first, so that a device without this mode fails
	// before any socket exists; UPDATE_IF_NOEXIST keeps another's program.
	link := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: ifindex}}
	if err := netlink.LinkSetXdpFdWithFlags(link, p.progFd, p.xdpFlags|unix.XDP_FLAGS_UPDATE_IF_NOEXIST); err != nil {
		p.xdpFlags = 0
		return nil, fmt.Errorf("attach XDP program: %w", err)
	}
	for i := range n {
		q, err := openXskQueue(p, i, bind, needWakeup)
		if err != nil {
			return nil, fmt.Errorf("queue %d: %w", i, err)
		}
		p.queues = append(p.queues, q)
		fd, _ := q.fd()
		if err := xskMapSet(p.mapFd, i, fd); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func openXskQueue(p *afxdpPort, id int, bind uint16, needWakeup bool) (_ *xskQueue, err error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket AF_XDP: %w", err)
	}
	q := &xskQueue{port: p, id: id, needWakeup: needWakeup}
	defer func() {
		if err != nil {
			if q.f == nil {
				unix.Close(fd)
			}
			q.closeSock()
		}
	}()
	if q.umem, err = unix.Mmap(-1, 0, xskFrameSize*xskFrames, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE); err != nil {
		return nil, fmt.Errorf("mmap UMEM: %w", err)
	}
	if err := xdpUmemReg(fd, q.umem, xskFrameSize); err != nil {
		return nil, err
	}
	for _, o := range []int{unix.XDP_UMEM_FILL_RING, unix.XDP_UMEM_COMPLETION_RING, unix.XDP_RX_RING, unix.XDP_TX_RING} {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, o, xskRingSize); err != nil {
			return nil, fmt.Errorf("ring size (option %d): %w", o, err)
		}
	}
	off, err := xdpMmapOffsets(fd)
	if err != nil {
		return nil, err
	}
	if q.fill, err = mapXskRing(fd, off.Fr, xskRingSize, unix.XDP_UMEM_PGOFF_FILL_RING, false); err != nil {
		return nil, err
	}
	if q.comp, err = mapXskRing(fd, off.Cr, xskRingSize, unix.XDP_UMEM_PGOFF_COMPLETION_RING, false); err != nil {
		return nil, err
	}
	if q.rx, err = mapXskRing(fd, off.Rx, xskRingSize, unix.XDP_PGOFF_RX_RING, true); err != nil {
		return nil, err
	}
	if q.tx, err = mapXskRing(fd, off.Tx, xskRingSize, unix.XDP_PGOFF_TX_RING, true); err != nil {
		return nil, err
	}
	// The receive half goes into the fill ring before bind, so that the
	// first frames find room.
	for i := range uint32(xskRingSize) {
		*q.fill.addr(q.fill.cachedProd) = uint64(i) * xskFrameSize
		q.fill.cachedProd++
	}
	q.fill.submit()
	q.txFree = make([]uint64, 0, xskFrames-xskRingSize)
	for i := xskRingSize; i < xskFrames; i++ {
		q.txFree = append(q.txFree, uint64(i)*xskFrameSize)
	}
	if err := unix.Bind(fd, &unix.SockaddrXDP{Flags: bind, Ifindex: uint32(p.ifindex), QueueID: uint32(id)}); err != nil {
		return nil, fmt.Errorf("bind queue %d: %w", id, err)
	}
	q.f = os.NewFile(uintptr(fd), p.name)
	if q.rc, err = q.f.SyscallConn(); err != nil {
		return nil, err
	}
	q.fin = newTxFinisher(false, Offloads{})
	q.rxFn = q.receive
	q.kickFn = q.sendto
	return q, nil
}

func (q *xskQueue) fd() (int, error) {
	fd := -1
	err := q.rc.Control(func(f uintptr) { fd = int(f) })
	return fd, err
}

func (p *afxdpPort) Name() string { return p.name }

// Offloads: none; an AF_XDP frame has no virtio_net_hdr to carry them.
func (p *afxdpPort) Offloads() Offloads { return Offloads{} }

// Mode reports the XDP mode in use (the Interface's status:xdp-mode).
func (p *afxdpPort) Mode() XDPMode { return p.mode }

// RxQueues implements RxQueuer.
func (p *afxdpPort) RxQueues() []Reader {
	rs := make([]Reader, len(p.queues))
	rs[0] = p
	for i, q := range p.queues[1:] {
		rs[i+1] = q
	}
	return rs
}

func (p *afxdpPort) Read(pkts []*packet.Packet) (int, error) { return p.queues[0].Read(pkts) }

// Read waits in the netpoller until the rx ring has frames (the kernel
// wakes the socket once per batch it writes, xsk_flush), then copies up to
// len(pkts) of them out.
func (q *xskQueue) Read(pkts []*packet.Packet) (int, error) {
	if len(pkts) > BatchSize {
		pkts = pkts[:BatchSize]
	}
	if len(pkts) == 0 {
		return 0, nil
	}
	q.rxPkts = pkts
	err := q.rc.Read(q.rxFn)
	q.rxPkts = nil
	if err != nil {
		if q.port.closed.Load() || errors.Is(err, os.ErrClosed) {
			return 0, ErrClosed
		}
		return 0, fmt.Errorf("netdev: %s: %w", q.port.name, err)
	}
	n, errs := q.rxN, q.rxErrs
	bytes := 0
	for _, p := range pkts[:n] {
		bytes += p.Len()
	}
	q.port.ctr.addRx(n, bytes, errs)
	return n, nil
}

// receive is the rc.Read callback: it reports false (wait) while the rx
// ring is empty.
func (q *xskQueue) receive(fd uintptr) bool {
	q.rmu.Lock()
	defer q.rmu.Unlock()
	q.rxN, q.rxErrs = 0, 0
	if q.rx.mem == nil {
		return true // closed: rc.Read reports it
	}
	avail := min(q.rx.ready(), uint32(len(q.rxPkts)))
	if avail == 0 {
		if q.needWakeup && q.fill.needWakeup() {
			unix.Recvfrom(int(fd), nil, unix.MSG_DONTWAIT)
		}
		return false
	}
	pkts := q.rxPkts
	for range avail {
		d := q.rx.desc(q.rx.cachedCons)
		q.rx.cachedCons++
		addr, l := d.Addr, int(d.Len)
		p := pkts[q.rxN]
		p.Reset()
		if tail := p.Tail(); l <= len(tail) && int(addr)+l <= len(q.umem) {
			p.SetLen(copy(tail, q.umem[addr:int(addr)+l]))
			q.rxN++
		} else {
			q.rxErrs++
		}
		*q.fill.addr(q.fill.cachedProd) = addr &^ (xskFrameSize - 1)
		q.fill.cachedProd++
	}
	q.rx.release()
	q.fill.submit()
	if q.needWakeup && q.fill.needWakeup() {
		unix.Recvfrom(int(fd), nil, unix.MSG_DONTWAIT)
	}
	return true
}

// Write sends pkts through queue 0's socket: each frame (or each segment
// of a super-frame) is copied into a free send frame of the UMEM and put
// in the tx ring, and the kernel is kicked once per BatchSize frames.
func (p *afxdpPort) Write(pkts []*packet.Packet) (int, error) {
	if p.closed.Load() {
		return 0, ErrClosed
	}
	q := p.queues[0]
	q.tmu.Lock()
	defer q.tmu.Unlock()
	if q.tx.mem == nil {
		return 0, ErrClosed
	}
	q.complete()
	sent, bytes, queued := 0, 0, 0
	var fatal error
	for _, pk := range pkts {
		switch q.fin.prepare(pk, nil) {
		case txSend:
			l := pk.Len()
			a, b := q.frame(l)
			if b == nil {
				continue
			}
			pk.CopyTo(b)
			q.post(a, l)
			sent++
			bytes += l
			queued++
		case txSegment:
			seg := &q.fin.seg
			total, ok := seg.Segments(), true
			for range total {
				a, b := q.frame(seg.MaxSegmentLen())
				if b == nil {
					ok = false
					break
				}
				q.post(a, seg.Next(b))
				queued++
				if queued >= BatchSize {
					fatal = q.kick()
					queued = 0
				}
			}
			q.fin.ctr.AddSegmented(total)
			if ok {
				sent++
				bytes += pk.Len()
			}
		}
		if queued >= BatchSize {
			fatal = q.kick()
			queued = 0
		}
		if fatal != nil {
			break
		}
	}
	if queued > 0 && fatal == nil {
		fatal = q.kick()
	}
	p.ctr.addTx(sent, bytes, len(pkts)-sent)
	return sent, fatal
}

// frame returns a free send frame's UMEM offset and first l bytes, nil if
// there is none (every one in flight) or l is too long.
func (q *xskQueue) frame(l int) (uint64, []byte) {
	if l > xskFrameSize {
		return 0, nil
	}
	if len(q.txFree) == 0 || q.tx.free() == 0 {
		q.kick()
		if len(q.txFree) == 0 || q.tx.free() == 0 {
			return 0, nil
		}
	}
	a := q.txFree[len(q.txFree)-1]
	q.txFree = q.txFree[:len(q.txFree)-1]
	return a, q.umem[a : a+uint64(l) : a+xskFrameSize]
}

// post puts the frame at UMEM offset a, of length l, in the tx ring.
func (q *xskQueue) post(a uint64, l int) {
	d := q.tx.desc(q.tx.cachedProd)
	d.Addr = a
	d.Len = uint32(l)
	d.Options = 0
	q.tx.cachedProd++
}

// complete takes the frames the kernel finished sending back.
func (q *xskQueue) complete() {
	n := q.comp.ready()
	for range n {
		q.txFree = append(q.txFree, *q.comp.addr(q.comp.cachedCons)&^(xskFrameSize-1))
		q.comp.cachedCons++
	}
	if n > 0 {
		q.comp.release()
	}
}

// kick publishes the tx ring and has the kernel send what it holds: in
// copy mode sendto sends synchronously, at most 32 frames per call.
func (q *xskQueue) kick() error {
	q.tx.submit()
	for range xskKicks {
		if !q.tx.pending() {
			break
		}
		q.kickErr = nil
		if err := q.rc.Write(q.kickFn); err != nil {
			return ErrClosed
		}
		if q.kickErr != nil {
			return q.kickErr
		}
		q.complete()
	}
	return nil
}

// sendto is kick's rc.Write callback. EAGAIN (completion ring full, no skb)
// and EBUSY (another sender) leave frames in the ring for the next call;
// ENETDOWN leaves them until the device is up (or the ring fills and
// frames count as tx drops).
func (q *xskQueue) sendto(fd uintptr) bool {
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, fd, 0, 0, unix.MSG_DONTWAIT, 0, 0)
	if e == unix.ENXIO || e == unix.ENODEV {
		q.kickErr = ErrNoDevice
	}
	return true
}

func (p *afxdpPort) Stats() Stats {
	st := p.ctr.snapshot()
	for _, q := range p.queues {
		q.rc.Control(func(fd uintptr) {
			if x, err := xdpStatistics(int(fd)); err == nil {
				st.RxDropped += x.Rx_dropped + x.Rx_ring_full
				st.RxErrors += x.Rx_invalid_descs
				st.TxErrors += x.Tx_invalid_descs
			}
		})
	}
	st.Offload = p.queues[0].fin.ctr.Snapshot()
	return st
}

// Close closes the sockets, detaches the XDP program and frees the rings.
func (p *afxdpPort) Close() error {
	p.cmu.Lock()
	defer p.cmu.Unlock()
	if !p.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	return p.release()
}

func (p *afxdpPort) release() error {
	var errs []error
	if p.xdpFlags != 0 {
		link := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: p.ifindex}}
		if err := netlink.LinkSetXdpFdWithFlags(link, -1, p.xdpFlags); err != nil && !errors.Is(err, unix.ENODEV) {
			errs = append(errs, fmt.Errorf("detach XDP program: %w", err))
		}
		p.xdpFlags = 0
	}
	for _, q := range p.queues {
		errs = append(errs, q.closeSock())
	}
	for _, fd := range []*int{&p.progFd, &p.mapFd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	return errors.Join(errs...)
}

// closeSock closes the socket, then unmaps its rings and UMEM once the
// reader and writer are out of them.
func (q *xskQueue) closeSock() error {
	var err error
	if q.f != nil {
		err = q.f.Close()
	}
	q.rmu.Lock()
	q.fill.unmap()
	q.rx.unmap()
	q.rmu.Unlock()
	q.tmu.Lock()
	q.tx.unmap()
	q.comp.unmap()
	if q.umem != nil {
		unix.Munmap(q.umem)
		q.umem = nil
	}
	q.tmu.Unlock()
	return err
}
