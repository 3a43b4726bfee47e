//go:build linux

package netdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev/offload"
)

// A system port is an AF_PACKET socket on an existing kernel device, written
// with sendmmsg, BatchSize frames per syscall, and read either from a
// TPACKET_V2 receive ring (ring_linux.go) or with recvmmsg.
//
// The ring is the default when no socket buffer size is configured
// (Config.SockBufSize 0: the kernel's default SO_RCVBUF, 212992 bytes).
// That buffer holds only about three TSO super-frames (truesize ~66 KiB
// each), so with recvmmsg one late wake-up of the reader overflows it; a
// ring's depth is its own whatever SO_RCVBUF is (the first ring, of 240
// 64 KiB slots, measured below; now 1024 slots of 2 KiB, super-frames
// queued beside them in a 16 MiB buffer: ring_linux.go). Measured with
// make bench (BENCH_PEERS=govs,bridge BENCH_ROUNDS=1; 2 loaded cores, veths,
// iperf3 4 s, testpmd), recvmmsg and ring runs back to back, twice:
//
//	                          recvmmsg         ring
//	TCP 1 stream Gbit/s       7.69, 9.22       10.59, 10.88  (bridge 11.3-14.9)
//	  retransmits             331923, 267687   225, 237
//	  frames dropped (switch) 7441, 6076       0, 0
//	64 B testpmd rx kpps      82, 85           184, 199
//	conn/s ab -c 1            5204, 4503       5158, 4845
//	conn/s ab -c 64           7761, 7833       15411, 18762
//
// With a size configured (other_config:userspace-sock-buf-size) the
// socket buffer is deep enough (10.7-11.7 Gbit/s, no drops), counts bytes
// rather than 64 KiB slots (better for long bursts of small frames) and
// recvmmsg copies each frame once (the ring small frames twice: skb to
// ring, ring to packet), so recvmmsg stays the reader there; it is also the fallback
// when the kernel refuses the ring. GOVS_SYSTEM_RX_RING=0 turns the ring
// off, =1 uses it whatever the buffer size.
//
// TPACKET_V2 rather than V3: V3 hands over a part-filled block only after
// tp_retire_blk_tov (>= 1 ms), which a request/response or
// connection-setup workload would pay per round trip; V2 hands over every
// frame at once (conn/s -c 1 above is unchanged).

const (
	// tpacketAuxdataLen is sizeof(struct tpacket_auxdata).
	tpacketAuxdataLen = 20
	// auxdataSpace is CMSG_SPACE(sizeof(struct tpacket_auxdata)).
	auxdataSpace = unix.SizeofCmsghdr + (tpacketAuxdataLen+7)&^7
	// maxRxErrors is how many failed recvmmsg calls in a row Read
	// tolerates: sendmmsg leaves a failure after the first message in
	// sk_err, which the next recvmmsg reports once.
	maxRxErrors = 16
)

type systemPort struct {
	name           string
	ifindex        int
	mtu            int  // at open; bounds the segment size Recover assumes
	vnet           bool // PACKET_VNET_HDR took
	ignoreOutgoing bool // PACKET_IGNORE_OUTGOING took; else filtered by sll_pkttype
	qdiscBypass    bool // PACKET_QDISC_BYPASS took (qdiscbypass_linux.go)
	offloads       Offloads

	f      *os.File
	rc     syscall.RawConn
	closed atomic.Bool

	ring *rxRing // the receive ring, nil when reading with recvmmsg
	txr  *txRing // the send ring (txring_linux.go), nil when sending with sendmmsg
	rx   sysRx   // used by the one reader
	tx   sysTx   // used by the one writer
	ctr  portCounters
	rxo  offload.Counters // checksums completed and frames dropped by Recover

	kmu    sync.Mutex
	kdrops uint64 // guarded by kmu: tp_drops summed, PACKET_STATISTICS resets on read

	// A live change of socket (SwitchSockBuf, handover_linux.go). The
	// reader alone replaces f, rc and ring, holding swapMu and hmu; Write
	// holds swapMu shared, the other methods hmu.
	cfg     Config // as opened, SockBufSize the latest
	swapMu  sync.RWMutex
	hmu     sync.Mutex
	next    *systemPort   // guarded by hmu: the socket traffic moved to
	pending atomic.Bool   // next is set and the old socket receives no more
	swapped chan struct{} // guarded by hmu: closed when the reader took next
	grouped bool          // guarded by hmu: the socket is in fanout group
	group   int

	// queues are receive queues 1..n-1 (rxqueues_linux.go), fixed at
	// open; their kdrops are guarded by this port's kmu.
	queues []*systemPort
}

type sysRx struct {
	msgs  [BatchSize]unix.Mmsghdr
	iovs  [BatchSize][2]unix.Iovec // virtio_net_hdr, frame
	hdrs  [BatchSize][VirtioNetHdrLen]byte
	cmsgs [BatchSize][auxdataSpace]byte
	names [BatchSize][unix.SizeofSockaddrLinklayer]byte
	k     int // messages offered to recvmmsg
	n     int // messages received (recvmmsg) or frames kept (ring)
	err   error
	fn    func(fd uintptr) bool

	ringPkts []*packet.Packet // the packets Read fills from the ring
	ringFn   func(fd uintptr) bool
	copyFn   func(fd uintptr) // recvmmsg of the frame a ring slot left on the socket
}

type sysTx struct {
	msgs [BatchSize]unix.Mmsghdr
	iovs [BatchSize][3]unix.Iovec // virtio_net_hdr, frame (head), external tail
	hdrs [BatchSize][VirtioNetHdrLen]byte
	lens [BatchSize]int // frame lengths, for TxBytes
	segs [BatchSize]*packet.Packet
	fin  txFinisher

	vnet    bool   // messages start with a virtio_net_hdr
	k, next int    // messages to send; next one to send
	failed  uint64 // bit i: message i was refused
	fatal   error
	fn      func(fd uintptr) bool
}

// groupAtOpen puts a single-queue system port in its fanout group at open
// (see SwitchSockBuf); a benchmark turns it off to measure the group's cost.
var groupAtOpen = true

// OpenSystem opens an AF_PACKET socket on the existing kernel device name:
// promiscuous, with PACKET_VNET_HDR unless cfg.DisableOffload (or the kernel
// refuses it), PACKET_AUXDATA for the VLAN tags the kernel strips and
// PACKET_IGNORE_OUTGOING where the kernel has it (Linux 4.20).
func OpenSystem(name string, cfg Config) (Port, error) {
	ifindex, err := ifIndex(name)
	if err != nil {
		return nil, fmt.Errorf("netdev: open system port %s: %w", name, err)
	}
	mtu, err := MTU(name)
	if err != nil {
		return nil, fmt.Errorf("netdev: open system port %s: %w", name, err)
	}
	s, err := openSock(name, ifindex, mtu, cfg, false)
	if err != nil {
		return nil, fmt.Errorf("netdev: open system port %s: %w", name, err)
	}
	s.cfg = cfg
	s.init()
	if cfg.RxQueues <= 1 && s.ignoreOutgoing && groupAtOpen {
		// A fanout group of its own from the start: a handover
		// (SwitchSockBuf) then adds the new socket to the group, which
		// loses nothing, rather than creating it, which may lose a frame.
		// The group only serves a later handover: a kernel that refuses
		// it leaves the port as before, and that handover tries again
		// (and reports its error).
		s.rc.Control(func(fd uintptr) {
			if g, err := newFanoutGroup(int(fd), fanoutFlags); err == nil {
				s.grouped, s.group = true, g
			}
		})
	}
	if txRingOn {
		// Falls back to sendmmsg if the kernel refuses.
		s.txr, _ = newTxRing(name, ifindex, s.vnet)
	}
	if cfg.RxQueues > 1 {
		if err := s.openQueues(cfg.RxQueues, cfg); err != nil {
			s.closeSock()
			return nil, fmt.Errorf("netdev: open system port %s: %d receive queues: %w", name, cfg.RxQueues, err)
		}
	}
	return s, nil
}

// openSock opens and binds the socket of a system port, with f, rc and ring
// set; muted, it drops every frame until its filter is detached (see
// SwitchSockBuf).
func openSock(name string, ifindex, mtu int, cfg Config, muted bool) (*systemPort, error) {
	// Protocol 0: nothing is queued until bind names the device.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	s := &systemPort{name: name, ifindex: ifindex, mtu: mtu}
	if muted {
		if err := setFilter(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, 0); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("SO_ATTACH_FILTER: %w", err)
		}
	}
	if err := s.setup(fd, cfg); err != nil {
		if s.ring != nil {
			s.ring.unmap()
		}
		unix.Close(fd)
		return nil, err
	}
	s.f = os.NewFile(uintptr(fd), name)
	if s.rc, err = s.f.SyscallConn(); err != nil {
		s.f.Close()
		if s.ring != nil {
			s.ring.unmap()
		}
		return nil, err
	}
	return s, nil
}

func (s *systemPort) setup(fd int, cfg Config) error {
	if !cfg.DisableOffload {
		s.vnet = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1) == nil
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
		return fmt.Errorf("PACKET_AUXDATA: %w", err)
	}
	s.ignoreOutgoing = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1) == nil
	s.qdiscBypass = setQdiscBypass(fd)
	if err := setSockBuf(fd, cfg.SockBufSize); err != nil {
		return err
	}
	// tpacket_rcv writes a virtio_net_hdr into ring frames since Linux
	// 4.6 (58d19b19cd99, "packet: vnet_hdr support for tpacket_rcv");
	// before, a ring would hand over super-frames without one.
	if wantRxRing(cfg) && (!s.vnet || kernelAtLeast(4, 6)) {
		// Falls back to recvmmsg if the kernel refuses (ENOMEM for the
		// ring's 16 MiB, say).
		s.ring, _ = newRxRing(fd)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: s.ifindex}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	mreq := unix.PacketMreq{Ifindex: int32(s.ifindex), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
		return fmt.Errorf("PACKET_MR_PROMISC: %w", err)
	}
	if s.vnet {
		// The kernel segments and checksums in software whatever the
		// device lacks (validate_xmit_skb). UDP_L4 in virtio_net_hdr
		// came with Linux 6.2; older kernels refuse it with EINVAL.
		s.offloads = Offloads{Csum: true, TSO4: true, TSO6: true, USO: kernelAtLeast(6, 2)}
	}
	return nil
}

func (s *systemPort) init() {
	r, t := &s.rx, &s.tx
	for i := range BatchSize {
		r.iovs[i][0] = unix.Iovec{Base: &r.hdrs[i][0], Len: VirtioNetHdrLen}
		t.iovs[i][0] = unix.Iovec{Base: &t.hdrs[i][0], Len: VirtioNetHdrLen}
		r.msgs[i].Hdr.Name = &r.names[i][0]
		r.msgs[i].Hdr.Control = &r.cmsgs[i][0]
		m := &t.msgs[i].Hdr
		if s.vnet {
			m.Iov = &t.iovs[i][0]
		} else {
			m.Iov = &t.iovs[i][1]
		}
	}
	r.fn = func(fd uintptr) bool {
		for {
			r.n, r.err = recvmmsg(int(fd), r.msgs[:r.k])
			if r.err != unix.EINTR {
				return r.err != unix.EAGAIN
			}
		}
	}
	r.copyFn = func(fd uintptr) { r.fn(fd) }
	r.ringFn = func(uintptr) bool {
		r.n = s.ringRx(r.ringPkts)
		return r.n > 0
	}
	t.vnet = s.vnet
	t.fin = newTxFinisher(s.vnet, s.offloads)
	t.fn = s.sendFn
}

func (s *systemPort) Name() string       { return s.name }
func (s *systemPort) Offloads() Offloads { return s.offloads }

func (s *systemPort) Read(pkts []*packet.Packet) (int, error) {
	if len(pkts) > BatchSize {
		pkts = pkts[:BatchSize]
	}
	if len(pkts) == 0 {
		return 0, nil
	}
	r := &s.rx
	if s.pending.Load() {
		if n := s.drainOld(pkts); n > 0 {
			return n, nil
		}
	}
	if s.ring != nil {
		// Wait in the netpoller until a frame is TP_STATUS_USER: the
		// kernel wakes the socket after each frame it writes.
		r.ringPkts = pkts
		err := s.rc.Read(r.ringFn)
		if err != nil && s.handingOver(err) {
			r.ringPkts = nil
			return s.Read(pkts)
		}
		if err != nil && !s.closed.Load() {
			// No recvmmsg clears sk_err (ENETDOWN after the link went
			// down, say), and an epoll event of EPOLLERR alone makes
			// the netpoller fail reads (ErrNotPollable) until the next
			// event: clear it and read what the ring holds; the
			// caller retries an error.
			r.n = 0
			s.rc.Control(func(fd uintptr) {
				unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ERROR)
				r.n = s.ringRx(pkts)
			})
			if r.n > 0 {
				err = nil
			}
		}
		r.ringPkts = nil
		if err != nil {
			return 0, s.portErr(err)
		}
		return r.n, nil
	}
	for errs := 0; ; {
		s.prepRx(pkts)
		if err := s.rc.Read(r.fn); err != nil {
			if s.handingOver(err) {
				return s.Read(pkts)
			}
			return 0, s.portErr(err)
		}
		if r.err != nil {
			if errs++; errs == maxRxErrors {
				return 0, fmt.Errorf("netdev: %s: recvmmsg: %w", s.name, r.err)
			}
			continue
		}
		errs = 0
		if n := s.finishRx(pkts, r.n); n > 0 {
			return n, nil
		}
	}
}

// prepRx sets the recvmmsg messages up to receive into pkts.
func (s *systemPort) prepRx(pkts []*packet.Packet) {
	r := &s.rx
	for i, p := range pkts {
		p.Reset()
		tail := p.Tail()
		r.iovs[i][1] = unix.Iovec{Base: &tail[0]}
		r.iovs[i][1].SetLen(len(tail))
		m := &r.msgs[i].Hdr
		if s.vnet {
			m.Iov, m.Iovlen = &r.iovs[i][0], 2
		} else {
			m.Iov, m.Iovlen = &r.iovs[i][1], 1
		}
		m.Namelen = 0
		if !s.ignoreOutgoing {
			m.Namelen = unix.SizeofSockaddrLinklayer
		}
		m.SetControllen(auxdataSpace)
		m.Flags = 0
	}
	r.k = len(pkts)
}

// finishRx turns the k messages received into frames, moving those kept to
// the front of pkts, and returns how many it kept.
func (s *systemPort) finishRx(pkts []*packet.Packet, k int) int {
	r := &s.rx
	n, bytes, errs := 0, 0, 0
	for i := range k {
		m := &r.msgs[i]
		p := pkts[i]
		if !s.ignoreOutgoing && r.names[i][10] == unix.PACKET_OUTGOING { // sll_pkttype
			continue
		}
		l := int(m.Len)
		if m.Hdr.Flags&unix.MSG_TRUNC != 0 {
			errs++
			continue
		}
		if s.vnet {
			if l < VirtioNetHdrLen || DecodeVirtioNetHdr(r.hdrs[i][:], &p.Offload) != nil {
				errs++
				continue
			}
			l -= VirtioNetHdrLen
		}
		p.SetLen(l)
		status, tci, tpid := auxdata(r.cmsgs[i][:m.Hdr.Controllen])
		if !s.finishFrame(p, status, tci, tpid) {
			errs++
			continue
		}
		bytes += p.Len()
		pkts[n], pkts[i] = pkts[i], pkts[n]
		n++
	}
	s.ctr.addRx(n, bytes, errs)
	return n
}

// finishFrame puts back the VLAN tag the kernel took out of p's frame and,
// without a virtio_net_hdr, recovers p's Offload in software, from the
// tp_status, tp_vlan_tci and tp_vlan_tpid of the frame's auxdata or ring
// header. It reports false for a frame to drop as an error.
func (s *systemPort) finishFrame(p *packet.Packet, status uint32, tci, tpid uint16) bool {
	// A VLAN tag the device or __netif_receive_skb_core (skb_vlan_untag)
	// moved into skb metadata is not in the data AF_PACKET copies out,
	// with or without PACKET_VNET_HDR, to a buffer or a ring: put it back.
	if status&unix.TP_STATUS_VLAN_VALID != 0 {
		if status&unix.TP_STATUS_VLAN_TPID_VALID == 0 {
			tpid = 0x8100
		}
		if !p.InsertVLAN(tpid, tci) {
			return false
		}
	}
	if !s.vnet {
		o, summed, err := offload.Recover(p.Data(), status&unix.TP_STATUS_CSUMNOTREADY != 0, s.mtu)
		if err != nil {
			s.rxo.AddErrors(1)
			return false
		}
		if summed {
			s.rxo.AddChecksummed(1)
		}
		if status&unix.TP_STATUS_CSUM_VALID != 0 {
			o.Flags |= packet.CsumValid
		}
		p.Offload = o
	}
	return true
}

// auxdata returns the tp_status, tp_vlan_tci and tp_vlan_tpid of the struct
// tpacket_auxdata (include/uapi/linux/if_packet.h) in the control message
// b, or zeros if there is none.
func auxdata(b []byte) (status uint32, tci, tpid uint16) {
	if len(b) < unix.SizeofCmsghdr+tpacketAuxdataLen {
		return 0, 0, 0
	}
	level := int32(binary.NativeEndian.Uint32(b[8:]))
	typ := int32(binary.NativeEndian.Uint32(b[12:]))
	if level != unix.SOL_PACKET || typ != unix.PACKET_AUXDATA {
		return 0, 0, 0
	}
	a := b[unix.SizeofCmsghdr:]
	return binary.NativeEndian.Uint32(a[0:]), binary.NativeEndian.Uint16(a[16:]), binary.NativeEndian.Uint16(a[18:])
}

func (s *systemPort) Write(pkts []*packet.Packet) (int, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	if s.txr != nil {
		return s.writeRing(pkts)
	}
	s.swapMu.RLock()
	defer s.swapMu.RUnlock()
	t := &s.tx
	sent, bytes, k := 0, 0, 0
	var err error
	flush := func() {
		if k == 0 || err != nil {
			k = 0
			return
		}
		var failed uint64
		failed, err = s.flush(k)
		sent += k - bits.OnesCount64(failed)
		for i := range k {
			if failed&(1<<i) == 0 {
				bytes += t.lens[i]
			}
		}
		k = 0
	}
	for _, p := range pkts {
		switch t.fin.prepare(p, t.hdrs[k][:]) {
		case txSend:
			t.setFrame(k, p.Head(), p.Ext())
			if k++; k == BatchSize {
				flush()
			}
		case txSegment:
			flush()
			if err == nil && s.sendSegments() {
				sent++
				bytes += p.Len()
			}
		}
		if err != nil {
			break
		}
	}
	flush()
	s.ctr.addTx(sent, bytes, len(pkts)-sent)
	return sent, err
}

// setFrame points message i at a frame, in one piece or as a head and a
// tail sent straight from where it is (a zero-copy frame: the kernel
// copies it during sendmmsg, so it may be released once Write returns).
func (t *sysTx) setFrame(i int, b, ext []byte) {
	iov := &t.iovs[i]
	iov[1] = unix.Iovec{Base: &b[0]}
	iov[1].SetLen(len(b))
	n := 1
	if len(ext) > 0 {
		iov[2] = unix.Iovec{Base: &ext[0]}
		iov[2].SetLen(len(ext))
		n++
	}
	if t.vnet {
		n++
	}
	t.msgs[i].Hdr.SetIovlen(n)
	t.lens[i] = len(b) + len(ext)
}

// sendSegments sends the frame t.fin.seg was reset for, BatchSize segments
// per sendmmsg, and reports whether every segment went.
func (s *systemPort) sendSegments() bool {
	t := &s.tx
	seg := &t.fin.seg
	total, ok := seg.Segments(), true
	for done := 0; done < total; {
		k := 0
		for ; k < BatchSize && done+k < total; k++ {
			q := t.segs[k]
			if q == nil {
				q = segPool.Get()
				t.segs[k] = q
			}
			q.SetLen(seg.Next(q.Tail()))
			t.hdrs[k] = [VirtioNetHdrLen]byte{}
			t.setFrame(k, q.Data(), nil)
		}
		failed, err := s.flush(k)
		if failed != 0 || err != nil {
			ok = false
		}
		if err != nil {
			break
		}
		done += k
	}
	segPool.PutBatch(t.segs[:])
	t.fin.ctr.AddSegmented(total)
	return ok
}

// flush sends messages 0..k-1 and returns which the kernel refused; err is
// set when the port is unusable, and then the unsent ones count as refused.
func (s *systemPort) flush(k int) (failed uint64, err error) {
	t := &s.tx
	t.k, t.next, t.failed, t.fatal = k, 0, 0, nil
	if err := s.rc.Write(t.fn); err != nil {
		t.fatal = s.portErr(err)
	}
	if t.fatal != nil {
		for i := t.next; i < k; i++ {
			t.failed |= 1 << i
		}
	}
	return t.failed, t.fatal
}

func (s *systemPort) sendFn(fd uintptr) bool {
	t := &s.tx
	for t.next < t.k {
		n, err := sendmmsg(int(fd), t.msgs[t.next:t.k])
		switch err {
		case nil:
			t.next += n
		case unix.EINTR:
		case unix.EAGAIN:
			return false
		case unix.ENETDOWN: // the device is down: every frame would fail alike
			for ; t.next < t.k; t.next++ {
				t.failed |= 1 << t.next
			}
		case unix.ENXIO, unix.ENODEV:
			t.fatal = ErrNoDevice
			return true
		default: // EMSGSIZE, EINVAL, ENOBUFS: this frame only
			t.failed |= 1 << t.next
			t.next++
		}
	}
	return true
}

func (s *systemPort) portErr(err error) error {
	if s.closed.Load() || errors.Is(err, os.ErrClosed) {
		return ErrClosed
	}
	return fmt.Errorf("netdev: %s: %w", s.name, err)
}

func (s *systemPort) Stats() Stats {
	st := s.ctr.snapshot()
	s.hmu.Lock()
	defer s.hmu.Unlock()
	s.kmu.Lock()
	if !s.closed.Load() {
		s.rc.Control(func(fd uintptr) {
			if ts, err := unix.GetsockoptTpacketStats(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
				s.kdrops += uint64(ts.Drops)
			}
		})
	}
	st.RxDropped += s.kdrops
	st.Offload = s.tx.fin.ctr.Snapshot()
	rx := s.rxo.Snapshot()
	st.Offload.Checksummed += rx.Checksummed
	st.Offload.Errors += rx.Errors
	s.queueStats(&st)
	s.kmu.Unlock()
	return st
}

// SetSockBuf applies a new Config.SockBufSize to the open port. A port
// reading from its ring keeps it: the receive buffer is then set but holds
// nothing (tpacket_rcv does not consult it).
func (s *systemPort) SetSockBuf(n int) error { return s.SetSockBufs(n, n) }

// SetSockBufs implements SockBufSizer.
func (s *systemPort) SetSockBufs(rcv, snd int) error {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	var err error
	if cerr := s.latest().rc.Control(func(fd uintptr) { err = setSockBufs(int(fd), rcv, snd) }); cerr != nil {
		return s.portErr(cerr)
	}
	for _, q := range s.queues {
		if err != nil {
			break
		}
		if cerr := q.rc.Control(func(fd uintptr) { err = setSockBufs(int(fd), rcv, snd) }); cerr != nil {
			return s.portErr(cerr)
		}
	}
	return err
}

// SockBufs implements SockBufSizer.
func (s *systemPort) SockBufs() (rcv, snd int, err error) {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	cerr := s.latest().rc.Control(func(fd uintptr) {
		if rcv, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF); err == nil {
			snd, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
		}
	})
	if cerr != nil {
		return 0, 0, s.portErr(cerr)
	}
	return rcv, snd, err
}

func (s *systemPort) Close() error {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	if !s.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	if s.next != nil {
		s.next.closeSock()
		s.next = nil
		close(s.swapped)
	}
	for _, q := range s.queues {
		q.closed.Store(true)
		q.closeSock()
	}
	if s.txr != nil {
		s.txr.close()
	}
	return s.closeSock()
}

// closeSock closes the socket and unmaps its ring. After the fd's Close no
// Read gets into rc.Read, and the ring is touched only under its mu; the
// mapping holds the socket open, still receiving, until it is unmapped.
func (s *systemPort) closeSock() error {
	err := s.f.Close()
	if s.ring != nil {
		s.ring.unmap()
	}
	return err
}

// setSockBuf sets both socket buffers to n bytes (the kernel doubles it for
// its bookkeeping, socket(7)); 0 leaves them alone. The FORCE variants need
// CAP_NET_ADMIN and ignore net.core.[rw]mem_max.
func setSockBuf(fd, n int) error { return setSockBufs(fd, n, n) }

func setSockBufs(fd, rcv, snd int) error {
	for _, o := range [][3]int{{unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, rcv}, {unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, snd}} {
		n := o[2]
		if n <= 0 {
			continue
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, o[0], n); err != nil {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, o[1], n); err != nil {
				return fmt.Errorf("netdev: socket buffer size %d: %w", n, err)
			}
		}
	}
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
