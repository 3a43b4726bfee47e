//go:build linux

package netdev

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/govs/govs/datapath/packet"
)

// A tap port is a tap device's /dev/net/tun file: what the kernel transmits
// on the device is read here, what is written here the device receives. A
// character device has no recvmmsg, so frames cost a read(2) or writev(2)
// each, but all the frames ready at one wake-up are read in one pass.
type tapPort struct {
	name     string
	vnet     bool // IFF_VNET_HDR
	mq       bool // IFF_MULTI_QUEUE
	created  bool // govs created the device, so Close removes it
	offloads Offloads

	// queues are receive queues 1..n-1 of a multi-queue device
	// (tapqueues_linux.go), fixed at open; each only reads. txrc are
	// the files Write spreads flows over: the port's, then the queues'.
	queues []*tapPort
	txrc   []syscall.RawConn

	f      *os.File
	rc     syscall.RawConn
	closed atomic.Bool

	rx  tapRx // used by the one reader
	tx  tapTx // used by the one writer
	ctr portCounters
}

type tapRx struct {
	iov   [2]unix.Iovec // virtio_net_hdr, frame
	hdr   [VirtioNetHdrLen]byte
	pkts  []*packet.Packet
	n     int // frames kept in pkts[:n]
	bytes int
	errs  int
	err   error
	fn    func(fd uintptr) bool

	// WaitRead's: its poll(2) argument, the idle callback and whether it
	// was called.
	pfd    [1]unix.PollFd
	idle   func()
	idled  bool
	waitFn func(fd uintptr) bool
}

type tapTx struct {
	rc    syscall.RawConn // the queue the frame goes to
	iov   [3]unix.Iovec   // virtio_net_hdr, frame (head), external tail
	niov  int             // entries of iov in use
	hdr   [VirtioNetHdrLen]byte
	seg   *packet.Packet
	fin   txFinisher
	filt  rxFilter
	fatal error
	ok    bool // the last frame was written
	fn    func(fd uintptr) bool
}

// OpenTap creates the tap device name, or attaches to it if it exists as a
// persistent tap, with IFF_VNET_HDR unless cfg.DisableOffload, and brings it
// up. The offloads the kernel may hand over (TUNSETOFFLOAD) are probed:
// checksum, TSO4/6 and, from Linux 6.2, USO. A device govs creates is a
// multi-queue one (IFF_MULTI_QUEUE), whatever cfg.RxQueues, so that its
// queues can change without deleting it; cfg.RxQueues > 1 attaches that
// many queues (tapqueues_linux.go).
func OpenTap(name string, cfg Config) (Port, error) {
	t, err := openTap(name, cfg, -1)
	if err != nil {
		return nil, fmt.Errorf("netdev: open tap %s: %w", name, err)
	}
	return t, nil
}

// openTap opens the port in network namespace netns (a file descriptor),
// or in the caller's if netns is -1.
func openTap(name string, cfg Config, netns int) (*tapPort, error) {
	t := &tapPort{name: name, vnet: !cfg.DisableOffload}
	if err := t.open(netns, true); err != nil {
		return nil, err
	}
	if netns < 0 {
		// A device in another namespace was up there already: a
		// reopen finds it as it was.
		if err := setUp(name); err != nil {
			t.f.Close()
			return nil, fmt.Errorf("set up: %w", err)
		}
	}
	if err := t.openQueues(cfg.RxQueues, netns); err != nil {
		t.f.Close()
		return nil, err
	}
	t.init()
	t.tx.filt = newRxFilter(name)
	return t, nil
}

// open attaches t to a new /dev/net/tun file, creating the device if
// first allows and it does not exist.
func (t *tapPort) open(netns int, first bool) error {
	fd, err := openTun(netns)
	if err != nil {
		return err
	}
	if err := t.setup(fd, first); err != nil {
		unix.Close(fd)
		return err
	}
	t.f = os.NewFile(uintptr(fd), "/dev/net/tun")
	if t.rc, err = t.f.SyscallConn(); err != nil {
		t.f.Close()
		return err
	}
	return nil
}

// setup attaches fd to the device. The first file of a port may create
// it (as a multi-queue tap) and takes an existing one with or without
// IFF_MULTI_QUEUE, as it was created; queues attach as the first did.
func (t *tapPort) setup(fd int, first bool) error {
	flags := uint16(unix.IFF_TAP | unix.IFF_NO_PI)
	if t.vnet {
		flags |= unix.IFF_VNET_HDR
	}
	ifr, err := unix.NewIfreq(t.name)
	if err != nil {
		return err
	}
	if first {
		// IFF_TUN_EXCL makes creation atomic: EBUSY means the device
		// exists. tun_set_iff refuses with EINVAL a file whose
		// IFF_MULTI_QUEUE differs from the device's, or which is not
		// of its kind.
		ifr.SetUint16(flags | unix.IFF_MULTI_QUEUE | unix.IFF_TUN_EXCL)
		err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
		t.created, t.mq = err == nil, true
		if err == unix.EBUSY {
			ifr.SetUint16(flags | unix.IFF_MULTI_QUEUE)
			if err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err == unix.EINVAL {
				t.mq = false
				ifr.SetUint16(flags)
				err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
			}
			if err == unix.EINVAL {
				return errors.New("exists and is not a tap device")
			}
		}
	} else {
		ifr.SetUint16(flags | unix.IFF_MULTI_QUEUE)
		err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
	}
	if err != nil {
		return fmt.Errorf("TUNSETIFF: %w", err)
	}
	if !t.vnet {
		// An existing tap may have offloads on from an earlier user.
		if err := unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, 0); err != nil {
			return fmt.Errorf("TUNSETOFFLOAD: %w", err)
		}
		return unix.SetNonblock(fd, true)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TUNSETVNETHDRSZ, VirtioNetHdrLen); err != nil {
		return fmt.Errorf("TUNSETVNETHDRSZ: %w", err)
	}
	// set_offload (drivers/net/tun.c) refuses flags it does not know with
	// EINVAL, and takes USO only as USO4 and USO6 together.
	const tso = unix.TUN_F_CSUM | unix.TUN_F_TSO4 | unix.TUN_F_TSO6
	t.offloads = Offloads{Csum: true, TSO4: true, TSO6: true, USO: true}
	if err := unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, tso|unix.TUN_F_USO4|unix.TUN_F_USO6); err != nil {
		t.offloads.USO = false
		if err := unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, tso); err != nil {
			return fmt.Errorf("TUNSETOFFLOAD: %w", err)
		}
	}
	return unix.SetNonblock(fd, true)
}

func (t *tapPort) init() {
	r, w := &t.rx, &t.tx
	r.iov[0] = unix.Iovec{Base: &r.hdr[0], Len: VirtioNetHdrLen}
	w.iov[0] = unix.Iovec{Base: &w.hdr[0], Len: VirtioNetHdrLen}
	r.fn = t.readFn
	r.waitFn = t.waitFn
	w.fin = newTxFinisher(t.vnet, t.offloads)
	w.fn = t.writeFn
	t.txrc = append(t.txrc[:0], t.rc)
	for _, q := range t.queues {
		q.init()
		t.txrc = append(t.txrc, q.rc)
	}
}

func (t *tapPort) Name() string       { return t.name }
func (t *tapPort) Offloads() Offloads { return t.offloads }

func (t *tapPort) Read(pkts []*packet.Packet) (int, error) {
	if len(pkts) > BatchSize {
		pkts = pkts[:BatchSize]
	}
	if len(pkts) == 0 {
		return 0, nil
	}
	r := &t.rx
	for _, p := range pkts {
		p.Reset()
	}
	r.pkts, r.n, r.bytes, r.errs, r.err = pkts, 0, 0, 0, nil
	err := t.rc.Read(r.fn)
	r.pkts = nil
	t.ctr.addRx(r.n, r.bytes, r.errs)
	if err != nil {
		return 0, t.portErr(err)
	}
	if r.n == 0 && r.err != nil {
		return 0, r.err
	}
	return r.n, nil
}

// WaitRead implements ReadWaiter.
func (t *tapPort) WaitRead(idle func()) error {
	r := &t.rx
	r.idle, r.idled = idle, false
	err := t.rc.Read(r.waitFn)
	r.idle = nil
	if err != nil {
		return t.portErr(err)
	}
	return nil
}

// waitFn reports whether a frame (or an error) is there for Read. The
// netpoller is edge-triggered and RawConn.Read resets its readiness before
// the first call, so readiness is asked of the kernel, not assumed.
func (t *tapPort) waitFn(fd uintptr) bool {
	r := &t.rx
	r.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	n, err := unix.Poll(r.pfd[:], 0)
	if n > 0 || err != nil && err != unix.EINTR {
		return true // Read reports what is wrong, if anything
	}
	if !r.idled && r.idle != nil {
		r.idled = true
		r.idle()
	}
	return false
}

// readFn reads frames until the batch is full or the device has no more,
// waiting (by returning false) only while it has none.
func (t *tapPort) readFn(fd uintptr) bool {
	r := &t.rx
	iovs := r.iov[:]
	if !t.vnet {
		iovs = r.iov[1:]
	}
	for r.n < len(r.pkts) {
		p := r.pkts[r.n]
		tail := p.Tail()
		r.iov[1] = unix.Iovec{Base: &tail[0]}
		r.iov[1].SetLen(len(tail))
		l, err := readv(int(fd), iovs)
		switch err {
		case nil:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return r.n > 0
		case unix.EBADFD: // tun_chr_read_iter: the device was deleted
			r.err = ErrNoDevice
			return true
		default:
			r.err = t.portErr(err)
			return true
		}
		if t.vnet {
			if l < VirtioNetHdrLen || DecodeVirtioNetHdr(r.hdr[:], &p.Offload) != nil {
				r.errs++
				continue
			}
			l -= VirtioNetHdrLen
		}
		p.SetLen(l)
		r.bytes += l
		r.n++
	}
	return true
}

func (t *tapPort) Write(pkts []*packet.Packet) (int, error) {
	if t.closed.Load() {
		return 0, ErrClosed
	}
	w := &t.tx
	sent, bytes := 0, 0
	var err error
	w.filt.maybeRefresh()
	for _, p := range pkts {
		if !w.filt.pass(p.Head()) {
			// The device would discard it (see rxFilter): delivered.
			sent++
			bytes += p.Len()
			continue
		}
		ok := false
		w.rc = t.rc
		if len(t.txrc) > 1 {
			w.rc = t.txrc[flowQueue(p.Head(), len(t.txrc))]
		}
		switch w.fin.prepare(p, w.hdr[:]) {
		case txSend:
			ok, err = t.writeFrame(p.Head(), p.Ext())
		case txSegment:
			ok, err = t.writeSegments()
		}
		if ok {
			sent++
			bytes += p.Len()
		}
		if err != nil {
			break
		}
	}
	t.ctr.addTx(sent, bytes, len(pkts)-sent)
	return sent, err
}

func (t *tapPort) writeSegments() (ok bool, err error) {
	w := &t.tx
	if w.seg == nil {
		w.seg = segPool.Get()
	}
	seg, q := &w.fin.seg, w.seg
	total := seg.Segments()
	ok = true
	w.hdr = [VirtioNetHdrLen]byte{}
	for range total {
		q.SetLen(seg.Next(q.Tail()))
		var segOK bool
		if segOK, err = t.writeFrame(q.Data(), nil); err != nil {
			ok = false
			break
		}
		ok = ok && segOK
	}
	segPool.Put(q)
	w.seg = nil
	w.fin.ctr.AddSegmented(total)
	return ok, err
}

// writeFrame writes one frame, b and then its external tail ext if it has
// one, with w.hdr in front if the port uses a virtio_net_hdr; err is set
// only when the port is unusable.
func (t *tapPort) writeFrame(b, ext []byte) (ok bool, err error) {
	w := &t.tx
	w.iov[1] = unix.Iovec{Base: &b[0]}
	w.iov[1].SetLen(len(b))
	w.niov = 2
	if len(ext) > 0 {
		w.iov[2] = unix.Iovec{Base: &ext[0]}
		w.iov[2].SetLen(len(ext))
		w.niov = 3
	}
	w.ok, w.fatal = false, nil
	if err := w.rc.Write(w.fn); err != nil {
		return false, t.portErr(err)
	}
	return w.ok, w.fatal
}

func (t *tapPort) writeFn(fd uintptr) bool {
	w := &t.tx
	iovs := w.iov[:w.niov]
	if !t.vnet {
		iovs = iovs[1:]
	}
	for {
		_, err := writev(int(fd), iovs)
		switch err {
		case nil:
			w.ok = true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		case unix.EBADFD:
			w.fatal = ErrNoDevice
		}
		// Anything else (EIO while the device is down, EINVAL for a
		// header the kernel refuses) drops this frame only.
		return true
	}
}

func (t *tapPort) Stats() Stats {
	st := t.ctr.snapshot()
	st.Offload = t.tx.fin.ctr.Snapshot()
	for _, q := range t.queues {
		qs := q.ctr.snapshot()
		st.RxPackets += qs.RxPackets
		st.RxBytes += qs.RxBytes
		st.RxErrors += qs.RxErrors
	}
	return st
}

func (t *tapPort) portErr(err error) error {
	if t.closed.Load() || errors.Is(err, os.ErrClosed) {
		return ErrClosed
	}
	return fmt.Errorf("netdev: %s: %w", t.name, err)
}

// Reopen implements Reopener. A device govs created is made persistent
// while no file is attached, and not persistent again once the new port
// holds it, so that it still goes away with the new port's Close.
func (t *tapPort) Reopen(cfg Config) (Port, error) {
	if t.closed.Load() {
		return nil, ErrClosed
	}
	var err error
	if t.created {
		t.rc.Control(func(fd uintptr) { err = unix.IoctlSetInt(int(fd), unix.TUNSETPERSIST, 1) })
		if err != nil {
			return nil, fmt.Errorf("netdev: reopen tap %s: TUNSETPERSIST: %w", t.name, err)
		}
	}
	// The device may have been moved to another namespace, where
	// /dev/net/tun must be opened to find it by name.
	netns := -1
	t.rc.Control(func(fd uintptr) { netns, _ = unix.IoctlRetInt(int(fd), tunGetDevNetns) })
	if netns >= 0 {
		if same, _ := tunInNetns(netns); same {
			unix.Close(netns)
			netns = -1
		} else {
			defer unix.Close(netns)
		}
	}
	t.closed.Store(true)
	t.closeQueues()
	t.f.Close()
	t.tx.filt.close()
	n, err := openTap(t.name, cfg, netns)
	if err != nil {
		return nil, fmt.Errorf("netdev: reopen tap %s: %w", t.name, err)
	}
	if t.created {
		n.created = true
		n.rc.Control(func(fd uintptr) { unix.IoctlSetInt(int(fd), unix.TUNSETPERSIST, 0) })
	}
	return n, nil
}

// Close detaches from the device; one govs created goes away with its last
// file (TUNSETPERSIST 0 undoes a persistence set by anyone since).
func (t *tapPort) Close() error {
	if !t.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	if t.created {
		t.rc.Control(func(fd uintptr) { unix.IoctlSetInt(int(fd), unix.TUNSETPERSIST, 0) })
	}
	t.tx.filt.close()
	t.closeQueues()
	return t.f.Close()
}
