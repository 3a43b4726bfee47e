package vhostuser

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/internal/unixsock"
	"github.com/govs/govs/netdev"
	"github.com/govs/govs/netdev/offload"
)

// Port is a vhost-user port: the back-end of one virtio-net device whose
// driver (QEMU's guest, a DPDK virtio-user application) is on the other
// end of a unix socket. It implements netdev.Port; Read drains the guest's
// transmit queues and Write fills its receive queues, whichever queues the
// guest set up. The Port outlives connections: while none is up, or the
// guest has not started its queues, Read blocks and Write drops.
type Port struct {
	name, path string
	server     bool
	cfg        Config
	log        rateLog
	logPrefix  string

	closed    atomic.Bool
	quit      chan struct{} // closed by Close
	done      chan struct{} // closed when the control goroutine ends
	ln        *unixsock.Listener
	conn      atomic.Pointer[net.UnixConn]
	zeroCopy  atomic.Bool
	txRetries atomic.Int32
	guestFeat atomic.Uint64 // negotiated features, 0 while disconnected
	nrings    atomic.Int32  // rings the front-end has touched: highest index + 1
	sleeping  atomic.Bool   // the reader waits in epfd

	// cmu guards dev. Held by the control goroutine while it handles a
	// message; ring locks are taken inside it, never the other way.
	cmu sync.Mutex
	dev device

	rings []vring

	epfd  int      // epoll set of the tx rings' kicks and wake
	ep    *os.File // epfd in the Go netpoller
	eprc  syscall.RawConn
	wake  *os.File // eventfd; written to wake the reader
	wakeC syscall.RawConn

	rx  rxState // used by the one reader
	tx  txState // used by the one writer
	ctr counters
}

type rxState struct {
	events [maxQueuePairs + 1]unix.EpollEvent
	next   int // tx ring to start from, for fairness
	waitFn func(fd uintptr) bool
}

type txState struct {
	rings [maxQueuePairs]int
	sel   [netdev.BatchSize]uint8
	hdr   [12]byte
	seg   offload.Segmenter
	segP  *packet.Packet
}

type counters struct {
	rxPackets, rxBytes, rxErrors         atomic.Uint64
	txPackets, txBytes, txDropped        atomic.Uint64
	txRetries, txRingFull, txNoDevice    atomic.Uint64
	ringErrors, protoErrors, connections atomic.Uint64
	faults, zcFrames, zcFallbacks        atomic.Uint64
	off                                  offload.Counters
}

// batchStats are a batch's counts, added to the port's once per batch.
type batchStats struct {
	rxPackets, rxBytes, rxErrors int
	zcFrames, zcFallback         int
}

// Dial opens a client port (OVS type dpdkvhostuserclient): govs connects
// to the socket at path that the VM or DPDK application serves, and
// reconnects whenever the connection ends, until Close.
func Dial(name, path string, cfg Config) (*Port, error) {
	p, err := newPort(name, path, false, cfg)
	if err != nil {
		return nil, fmt.Errorf("vhostuser: %s: %w", name, err)
	}
	go p.dialLoop()
	return p, nil
}

// SocketMode is a server port's socket mode, whatever the umask: only the
// owner and its group may attach as the guest, as with the db and control
// sockets.
const SocketMode = 0o750

// Listen opens a server port (OVS type dpdkvhostuser): govs serves the
// socket at path (conventionally <vhost-sock-dir>/<name>) with mode
// SocketMode, replacing a stale socket file, and serves one front-end at a
// time.
func Listen(name, path string, cfg Config) (*Port, error) {
	p, err := newPort(name, path, true, cfg)
	if err != nil {
		return nil, fmt.Errorf("vhostuser: %s: %w", name, err)
	}
	ln, err := unixsock.Listen(path, SocketMode)
	if err != nil {
		p.closeFiles()
		return nil, fmt.Errorf("vhostuser: %s: %w", name, err)
	}
	p.ln = ln
	go p.acceptLoop()
	return p, nil
}

func newPort(name, path string, server bool, cfg Config) (*Port, error) {
	if cfg.TxRetriesMax < 0 || cfg.TxRetriesMax > MaxTxRetries {
		return nil, fmt.Errorf("tx-retries-max %d out of 0..%d", cfg.TxRetriesMax, MaxTxRetries)
	}
	if cfg.MaxQueuePairs == 0 {
		cfg.MaxQueuePairs = DefaultMaxQueuePairs
	}
	if cfg.MaxQueuePairs < 1 || cfg.MaxQueuePairs > maxQueuePairs {
		return nil, fmt.Errorf("%d queue pairs out of 1..%d", cfg.MaxQueuePairs, maxQueuePairs)
	}
	if cfg.ReconnectInterval <= 0 {
		cfg.ReconnectInterval = DefaultReconnectInterval
	}
	p := &Port{
		name: name, path: path, server: server, cfg: cfg,
		log: rateLog{l: cfg.Logger}, logPrefix: "vhostuser|" + name,
		quit: make(chan struct{}), done: make(chan struct{}),
		rings: make([]vring, 2*cfg.MaxQueuePairs),
	}
	p.zeroCopy.Store(cfg.ZeroCopy)
	p.txRetries.Store(int32(cfg.TxRetriesMax))
	for i := range p.rings {
		p.rings[i].init(p, i)
	}
	p.tx.segP = packet.New()
	p.rx.waitFn = p.waitFn
	if err := p.openFiles(); err != nil {
		return nil, err
	}
	return p, nil
}

// openFiles makes the reader's wait point: an epoll set of the guest's
// kick eventfds (edge-triggered, so they never need draining) and a wake
// eventfd, itself waited on through the Go netpoller.
func (p *Port) openFiles() error {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("epoll_create1: %w", err)
	}
	wfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return fmt.Errorf("eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: int32(wfd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wfd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wfd)
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		unix.Close(wfd)
		return err
	}
	p.epfd = epfd
	p.ep = os.NewFile(uintptr(epfd), "vhost-user-epoll")
	p.wake = os.NewFile(uintptr(wfd), "vhost-user-wake")
	if p.eprc, err = p.ep.SyscallConn(); err == nil {
		p.wakeC, err = p.wake.SyscallConn()
	}
	if err != nil {
		p.closeFiles()
		return err
	}
	return nil
}

func (p *Port) closeFiles() {
	p.ep.Close()
	p.wake.Close()
}

func (p *Port) watchKick(fd, ring int) {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: int32(ring)}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		p.logf("vring %d: watching its kick fd: %v", ring, err)
	}
}

func (p *Port) unwatchKick(fd int) {
	unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, fd, nil)
}

var eventfdOne = [8]byte{1}

// wakeReader makes a Read waiting in epfd look at the rings again.
func (p *Port) wakeReader() {
	p.wakeC.Write(func(fd uintptr) bool {
		unix.Write(int(fd), eventfdOne[:])
		return true
	})
}

func signalEventfd(fd int) { unix.Write(fd, eventfdOne[:]) }

func (p *Port) logf(format string, args ...any) {
	p.log.logf(p.logPrefix, format, args...)
}

func (p *Port) noteBadChain(q *vring, err error) {
	p.logf("vring %d: dropped a frame: %v", q.index, err)
}

// dropConn ends the current connection, if any; the control goroutine
// then resets the device (and a client port reconnects).
func (p *Port) dropConn() {
	if c := p.conn.Load(); c != nil {
		c.Close()
	}
}

// Name returns the interface name.
func (p *Port) Name() string { return p.name }

// Read fills pkts with frames the guest transmitted, blocking until there
// is at least one (the guest's kicks wake it). Each packet is reset first.
// Frames are copied out of the guest's memory, except, in zero-copy mode
// (SetZeroCopy), the tails of long frames, which stay there as the
// packets' external tails until the packets are reset.
func (p *Port) Read(pkts []*packet.Packet) (n int, err error) {
	limit := min(len(pkts), netdev.BatchSize)
	if limit == 0 {
		return 0, nil
	}
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	for {
		if p.closed.Load() {
			return 0, netdev.ErrClosed
		}
		var st batchStats
		zc := p.zeroCopy.Load()
		nr := int(p.nrings.Load()) &^ 1
		k := nr / 2
		for j := 0; j < k && n < limit; j++ {
			q := &p.rings[2*((p.rx.next+j)%k)+1]
			if q.ready.Load() {
				n += p.readRing(q, pkts[n:limit], zc, &st)
			}
		}
		if k > 0 {
			p.rx.next = (p.rx.next + 1) % k
		}
		p.addRx(&st)
		if n > 0 {
			return n, nil
		}
		if err := p.waitRx(nr); err != nil {
			return 0, err
		}
	}
}

func (p *Port) readRing(q *vring, pkts []*packet.Packet, zc bool, st *batchStats) int {
	q.mu.Lock()
	defer p.unlockRecover(q)
	if !q.ready.Load() {
		return 0
	}
	q.reclaimLocked()
	return q.dequeue(pkts, zc, st)
}

// unlockRecover unlocks a ring after the packet path used it. A fault on
// guest memory (SIGBUS from a front-end that truncated its memory file
// under us; the packet path runs with debug.SetPanicOnFault) breaks the
// ring and drops the device, if the memory is this device's: a fault on
// another guest's, read through the external tail of a packet that port
// read in zero copy, only loses the batch.
// Any other panic goes on.
func (p *Port) unlockRecover(q *vring) {
	r := recover()
	if r == nil {
		q.mu.Unlock()
		return
	}
	fault, ok := r.(interface{ Addr() uintptr })
	if !ok {
		q.mu.Unlock()
		panic(r)
	}
	p.ctr.faults.Add(1)
	if q.mem == nil || !q.mem.owns(fault.Addr()) {
		if q.enq.active {
			q.rollback()
			q.enq.active = false
		}
		q.publish()
		q.mu.Unlock()
		p.logf("vring %d: fault on another device's memory: %v", q.index, r)
		return
	}
	q.broken = true
	q.ready.Store(false)
	q.mu.Unlock()
	p.logf("vring %d: fault on guest memory: %v: dropping the device", q.index, r)
	p.dropConn()
}

func (p *Port) addRx(st *batchStats) {
	if st.rxPackets != 0 {
		p.ctr.rxPackets.Add(uint64(st.rxPackets))
		p.ctr.rxBytes.Add(uint64(st.rxBytes))
	}
	if st.rxErrors != 0 {
		p.ctr.rxErrors.Add(uint64(st.rxErrors))
	}
	if st.zcFrames != 0 {
		p.ctr.zcFrames.Add(uint64(st.zcFrames))
	}
	if st.zcFallback != 0 {
		p.ctr.zcFallbacks.Add(uint64(st.zcFallback))
	}
}

// waitRx asks every ready tx ring for a kick and, unless frames or
// releases arrived meanwhile, waits for one.
func (p *Port) waitRx(nr int) error {
	p.sleeping.Store(true)
	defer p.sleeping.Store(false)
	busy, polling := false, false
	for i := 1; i < nr; i += 2 {
		if q := &p.rings[i]; q.ready.Load() {
			b, pl := p.armRing(q)
			busy, polling = busy || b, polling || pl
		}
	}
	if busy || p.closed.Load() {
		return nil
	}
	if polling {
		// A ring without a kick fd is to be polled (vhost-user.rst,
		// VHOST_USER_VRING_NOFD_MASK).
		p.ep.SetReadDeadline(time.Now().Add(50 * time.Microsecond))
	}
	err := p.eprc.Read(p.rx.waitFn)
	if polling {
		p.ep.SetReadDeadline(time.Time{})
	}
	switch {
	case err == nil, errors.Is(err, os.ErrDeadlineExceeded):
		return nil
	case p.closed.Load(), errors.Is(err, os.ErrClosed):
		return netdev.ErrClosed
	}
	return fmt.Errorf("vhostuser: %s: %w", p.name, err)
}

// armRing asks for a kick on q and reports whether it has work already,
// and whether it must be polled for want of a kick fd.
func (p *Port) armRing(q *vring) (busy, polling bool) {
	q.mu.Lock()
	defer p.unlockRecover(q)
	if !q.ready.Load() {
		return false, false
	}
	return q.zc.pending.Load() != 0 || q.enableNotify(), q.kick < 0
}

func (p *Port) waitFn(fd uintptr) bool {
	n, err := unix.EpollWait(int(fd), p.rx.events[:], 0)
	return err != nil || n > 0
}

// Write copies pkts into the guest's receive queues, spread over the queues
// the guest enabled by flow. An external tail (say of a frame a vhost-user
// port read in zero copy) is copied straight from where it is, unless the
// frame's offload must be finished in software, for which it is
// linearized first; Write releases no tail otherwise, the caller resets
// the packets. A full queue is retried up to tx-retries-max times,
// then the rest of the batch is dropped (counted in TxDropped and
// Counters.TxRingFullDrops). Without a running device every frame is
// dropped and Write returns 0, nil.
func (p *Port) Write(pkts []*packet.Packet) (int, error) {
	if p.closed.Load() {
		return 0, netdev.ErrClosed
	}
	total := len(pkts)
	if total == 0 {
		return 0, nil
	}
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	w := &p.tx
	nq := 0
	for i := 0; i < int(p.nrings.Load()); i += 2 {
		if p.rings[i].ready.Load() {
			w.rings[nq] = i
			nq++
		}
	}
	if nq == 0 {
		p.ctr.txDropped.Add(uint64(total))
		p.ctr.txNoDevice.Add(uint64(total))
		return 0, nil
	}
	sent, bytes, full := 0, 0, 0
	for start := 0; start < total; start += netdev.BatchSize {
		end := min(total, start+netdev.BatchSize)
		for i := start; i < end; i++ {
			w.sel[i-start] = 0
			if nq > 1 {
				w.sel[i-start] = uint8(flowHash(pkts[i].Head()) % uint32(nq))
			}
		}
		for qi := range nq {
			s, b, f := p.writeRing(&p.rings[w.rings[qi]], uint8(qi), pkts, start, end)
			sent, bytes, full = sent+s, bytes+b, full+f
		}
	}
	p.ctr.txPackets.Add(uint64(sent))
	p.ctr.txBytes.Add(uint64(bytes))
	if sent != total {
		p.ctr.txDropped.Add(uint64(total - sent))
	}
	if full != 0 {
		p.ctr.txRingFull.Add(uint64(full))
	}
	return sent, nil
}

// writeRing enqueues the frames of [start, end) selected for ring qi and
// returns how many it sent, their bytes, and how many it dropped for a
// full ring; the others not sent were dropped for other reasons (too big,
// bad offload, the ring stopped).
func (p *Port) writeRing(q *vring, qi uint8, pkts []*packet.Packet, start, end int) (sent, bytes, full int) {
	w := &p.tx
	q.mu.Lock()
	defer p.unlockRecover(q)
	if !q.ready.Load() {
		return
	}
	maxRetries := int(p.txRetries.Load())
	retries := 0
	q.availLeft = 0
	for i := start; i < end; i++ {
		if w.sel[i-start] != qi {
			continue
		}
		if full > 0 || !q.ready.Load() {
			full += b2i(q.ready.Load())
			continue
		}
		pk := pkts[i]
		for {
			r := q.enqueuePacket(pk, w, p)
			if r == enqFull && retries < maxRetries {
				retries++
				q.publish()
				q.availLeft = 0
				continue
			}
			switch r {
			case enqOK:
				sent++
				bytes += pk.Len()
			case enqFull:
				full++
			}
			break
		}
	}
	q.publish()
	if retries != 0 {
		p.ctr.txRetries.Add(uint64(retries))
	}
	return
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// needsSoftware reports whether a frame's offload must be finished before
// this guest can take it.
func (q *vring) needsSoftware(o *packet.Offload) bool {
	if o.GSO != packet.GSONone {
		return !q.takesGSO(o)
	}
	return o.Flags&packet.NeedsCsum != 0 && q.features&(1<<featNetGuestCsum) == 0
}

func (q *vring) takesGSO(o *packet.Offload) bool {
	if o.Flags&packet.NeedsCsum == 0 || q.features&(1<<featNetGuestCsum) == 0 {
		return false
	}
	switch o.GSO {
	case packet.GSOTCPv4:
		return q.features&(1<<featNetGuestTSO4) != 0
	case packet.GSOTCPv6:
		return q.features&(1<<featNetGuestTSO6) != 0
	}
	return false
}

const virtioNetHdrFDataValid = 2 // VIRTIO_NET_HDR_F_DATA_VALID

// enqueuePacket finishes what the guest cannot take (checksum,
// segmentation), on the frame made whole first, and enqueues the frame.
func (q *vring) enqueuePacket(pk *packet.Packet, w *txState, p *Port) enqResult {
	o := &pk.Offload
	if q.needsSoftware(o) {
		pk.Linearize()
	}
	if o.GSO != packet.GSONone && !q.takesGSO(o) {
		return q.enqueueSegments(pk, w, p)
	}
	guestCsum := q.features&(1<<featNetGuestCsum) != 0
	if o.Flags&packet.NeedsCsum != 0 && !guestCsum {
		if offload.CompleteChecksum(pk.Data(), o) != nil {
			p.ctr.off.AddErrors(1)
			return enqDrop
		}
		p.ctr.off.AddChecksummed(1)
	}
	hdr := w.hdr[:q.hdrLen]
	netdev.EncodeVirtioNetHdr(hdr, o, pk.Len())
	if guestCsum && o.Flags&(packet.NeedsCsum|packet.CsumValid) == packet.CsumValid {
		hdr[0] |= virtioNetHdrFDataValid
	}
	if q.hdrLen == 12 {
		hdr[10], hdr[11] = 1, 0
	}
	return q.enqueue(hdr, pk.Head(), pk.Ext())
}

// enqueueSegments cuts a super-frame the guest cannot take into segments.
// A ring that fills midway drops the remaining segments: resending the
// first ones on a retry would duplicate them.
func (q *vring) enqueueSegments(pk *packet.Packet, w *txState, p *Port) enqResult {
	seg := &w.seg
	if seg.Reset(pk.Data(), &pk.Offload) != nil {
		p.ctr.off.AddErrors(1)
		return enqDrop
	}
	total := seg.Segments()
	hdr := w.hdr[:q.hdrLen]
	clear(hdr)
	if q.features&(1<<featNetGuestCsum) != 0 {
		hdr[0] = virtioNetHdrFDataValid
	}
	if q.hdrLen == 12 {
		hdr[10] = 1
	}
	s := w.segP
	for i := range total {
		s.SetLen(seg.Next(s.Tail()))
		switch r := q.enqueue(hdr, s.Data(), nil); {
		case r == enqOK:
		case i == 0:
			return r
		default:
			p.ctr.off.AddSegmented(i)
			return enqOK
		}
		hdr[10], hdr[11] = 1, 0
	}
	p.ctr.off.AddSegmented(total)
	return enqOK
}

// flowHash spreads frames over the guest's receive queues, keeping each
// flow on one: IPv4 or IPv6 addresses and TCP/UDP ports, else the MACs
// (FNV-1a).
func flowHash(b []byte) uint32 {
	if len(b) < ethHdrLen {
		return 0
	}
	const l3 = ethHdrLen
	et := uint16(b[12])<<8 | uint16(b[13])
	var key []byte
	var proto byte
	l4 := 0
	switch {
	case et == 0x0800 && len(b) >= l3+20:
		key, proto, l4 = b[l3+12:l3+20], b[l3+9], l3+int(b[l3]&0xf)*4
	case et == 0x86dd && len(b) >= l3+40:
		key, proto, l4 = b[l3+8:l3+40], b[l3+6], l3+40
	default:
		key = b[:12]
	}
	h := fnv1a(2166136261, key)
	if (proto == 6 || proto == 17) && len(b) >= l4+4 {
		h = fnv1a(h, b[l4:l4+4])
	}
	return h
}

func fnv1a(h uint32, b []byte) uint32 {
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	return h
}

// Offloads reports what the guest takes, as negotiated: partial checksums
// with VIRTIO_NET_F_GUEST_CSUM, TSO with GUEST_TSO4/6. Frames with other
// offloads are finished in software by Write.
func (p *Port) Offloads() netdev.Offloads {
	f := p.guestFeat.Load()
	if f&(1<<featNetGuestCsum) == 0 {
		return netdev.Offloads{}
	}
	return netdev.Offloads{Csum: true, TSO4: f&(1<<featNetGuestTSO4) != 0, TSO6: f&(1<<featNetGuestTSO6) != 0}
}

// Stats returns the port's counters. TxDropped includes frames dropped for
// a full guest ring and while no device runs; RxErrors counts malformed
// frames and chains from the guest.
func (p *Port) Stats() netdev.Stats {
	c := &p.ctr
	return netdev.Stats{
		RxPackets: c.rxPackets.Load(), RxBytes: c.rxBytes.Load(), RxErrors: c.rxErrors.Load(),
		TxPackets: c.txPackets.Load(), TxBytes: c.txBytes.Load(), TxDropped: c.txDropped.Load(),
		Offload: c.off.Snapshot(),
	}
}

// Counters returns the vhost-user specific counters.
func (p *Port) Counters() Counters {
	c := &p.ctr
	return Counters{
		TxRetries: c.txRetries.Load(), TxRingFullDrops: c.txRingFull.Load(), TxNoDeviceDrops: c.txNoDevice.Load(),
		RxBadFrames: c.rxErrors.Load(), RingErrors: c.ringErrors.Load(), ProtocolErrors: c.protoErrors.Load(),
		Faults: c.faults.Load(), Connections: c.connections.Load(),
		ZeroCopyFrames: c.zcFrames.Load(), ZeroCopyCopied: c.zcFallbacks.Load(),
	}
}

// SetZeroCopy turns dequeue zero copy (options:dq-zero-copy) on or off,
// live. With it on, Read leaves all but the first zcHeadLen bytes of a
// frame that is in one piece of guest memory there, as the packet's
// external tail, and returns its descriptors to the guest only once the
// packet is reset; past zcInflight frames out per ring, and for short or
// scattered frames, it copies.
func (p *Port) SetZeroCopy(on bool) { p.zeroCopy.Store(on) }

// SetTxRetriesMax changes options:tx-retries-max live.
func (p *Port) SetTxRetriesMax(n int) error {
	if n < 0 || n > MaxTxRetries {
		return fmt.Errorf("vhostuser: tx-retries-max %d out of 0..%d", n, MaxTxRetries)
	}
	p.txRetries.Store(int32(n))
	return nil
}

// Running reports whether the guest has at least one queue running.
func (p *Port) Running() bool {
	for i := range int(p.nrings.Load()) {
		if p.rings[i].ready.Load() {
			return true
		}
	}
	return false
}

// Close ends the connection, stops the rings and, for a server port,
// removes the socket. The external tails of packets read in zero-copy
// mode stay readable until the packets are reset.
func (p *Port) Close() error {
	if !p.closed.CompareAndSwap(false, true) {
		return netdev.ErrClosed
	}
	close(p.quit)
	if p.ln != nil {
		p.ln.Close()
	}
	p.dropConn()
	p.wakeReader()
	<-p.done
	p.closeFiles()
	return nil
}
