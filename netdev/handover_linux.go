//go:build linux

package netdev

import (
	"errors"
	"fmt"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/govs/govs/datapath/packet"
)

// A live change of Config.SockBufSize that changes how a system port
// receives (its TPACKET_V2 ring while unset, recvmmsg while set) takes a new
// socket. SwitchSockBuf hands the traffic over from the old socket to the
// new one without losing or duplicating a frame, with a PACKET_FANOUT group
// (packet(7), net/packet/af_packet.c):
//
//  1. The new socket is opened with a socket filter that drops everything
//     (SO_ATTACH_FILTER, "ret #0"), bound and set up as the old one.
//  2. The old socket is in a PACKET_FANOUT_CBPF group of its own
//     (PACKET_FANOUT_FLAG_UNIQUEID picks its id; OpenSystem puts it there)
//     whose program returns 0: the first member, the old socket. The
//     group's hook replaced the socket's own (PACKET_FANOUT_FLAG_IGNORE_OUTGOING
//     stands in for its PACKET_IGNORE_OUTGOING, which a member's own hook
//     no longer applies).
//  3. The new socket joins the group as member 1, and the program is set to
//     "ret #0" once more: replacing a group's program waits for every
//     packet being delivered (synchronize_net in __fanout_set_data_bpf), so
//     once it returns no frame is still on its way through the new
//     socket's own hook. Its drop-all filter is then detached.
//  4. The program becomes "ret #1": every frame from then on goes to the
//     new socket, and when setsockopt returns none is still on its way to
//     the old one.
//  5. The reader drains the old socket (ring or queue) until it is empty,
//     hands those frames on, then takes the new socket and closes the old;
//     the new socket, alone in the group, is member 0 again (the program's
//     result is taken modulo the members).
//
// Frames keep their order: the new socket's frames wait in it until the old
// one is drained. The group exists before the first handover because
// creating it is not seamless: the kernel removes the socket's own hook
// before it adds the group's (fanout_add, __fanout_link), so a frame
// received on another CPU within those few instructions reaches neither.
// OpenSystem creates it while the port is new; joining an existing group,
// as step 3 does, loses nothing (the group's hook is there throughout). A
// port pays the group's demultiplexing on each frame: a jitted
// two-instruction program and a clear of skb->cb (packet_rcv_fanout,
// fanout_demux_bpf).

// bpfRet is the classic BPF program "ret #k".
func bpfRet(k uint32) unix.SockFprog {
	ins := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: k}}
	return unix.SockFprog{Len: 1, Filter: unsafe.SliceData(ins)}
}

// setFilter sets the BPF program "ret #k" as socket option level/opt.
func setFilter(fd, level, opt int, k uint32) error {
	prog := bpfRet(k)
	return unix.SetsockoptSockFprog(fd, level, opt, &prog)
}

// fanoutFlags are the PACKET_FANOUT type and flags of a port's group.
const fanoutFlags = unix.PACKET_FANOUT_CBPF | unix.PACKET_FANOUT_FLAG_IGNORE_OUTGOING

// handoverWait is how long SwitchSockBuf waits for the reader to finish
// the previous handover.
const handoverWait = time.Second

// errHandover marks a handover that could not start; the port still
// receives on its old socket.
var errHandover = errors.New("socket handover")

// SwitchSockBuf implements SockBufSwitcher.
func (s *systemPort) SwitchSockBuf(n int) error {
	if len(s.queues) > 0 {
		return fmt.Errorf("netdev: %s: %w", s.name, ErrMultiQueue)
	}
	s.hmu.Lock()
	defer s.hmu.Unlock()
	// One handover at a time: the reader finishes the last one first,
	// within microseconds. A port nobody reads any more (its worker gave
	// up) would never finish it: refuse after a while rather than hang.
	if s.next != nil {
		ch := s.swapped
		s.hmu.Unlock()
		select {
		case <-ch:
		case <-time.After(handoverWait):
		}
		s.hmu.Lock()
		if s.next != nil {
			return fmt.Errorf("netdev: %s: %w: the last one is not finished", s.name, errHandover)
		}
	}
	if s.closed.Load() {
		return ErrClosed
	}
	cfg := s.cfg
	cfg.SockBufSize = n
	ns, err := openSock(s.name, s.ifindex, s.mtu, cfg, true)
	if err != nil {
		return fmt.Errorf("netdev: %s: %w: new socket: %w", s.name, errHandover, err)
	}
	if err := s.handOver(ns); err != nil {
		ns.closeSock()
		return fmt.Errorf("netdev: %s: %w: %w", s.name, errHandover, err)
	}
	s.cfg = cfg
	return nil
}

// handOver moves the traffic to ns, steps 2 to 4 above, and wakes the
// reader to finish. Caller holds hmu.
func (s *systemPort) handOver(ns *systemPort) error {
	if ns.vnet != s.vnet || ns.ignoreOutgoing != s.ignoreOutgoing {
		return errors.New("the new socket's options differ")
	}
	var err error
	ctl := func(p *systemPort, f func(fd int) error) { sockCtl(&err, p, f) }
	setProg := func(k uint32) func(fd int) error {
		return func(fd int) error {
			if err := setFilter(fd, unix.SOL_PACKET, unix.PACKET_FANOUT_DATA, k); err != nil {
				return fmt.Errorf("PACKET_FANOUT_DATA: %w", err)
			}
			return nil
		}
	}
	if !s.grouped { // a kernel without PACKET_IGNORE_OUTGOING
		ctl(s, func(fd int) error {
			g, err := newFanoutGroup(fd, fanoutFlags)
			if err == nil {
				s.grouped, s.group = true, g
			}
			return err
		})
	}
	ctl(s, setProg(0))
	ctl(ns, func(fd int) error {
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_FANOUT, s.group|fanoutFlags<<16); err != nil {
			return fmt.Errorf("PACKET_FANOUT %d: %w", s.group, err)
		}
		return nil
	})
	ctl(s, setProg(0))
	ctl(ns, func(fd int) error {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DETACH_FILTER, 0); err != nil {
			return fmt.Errorf("SO_DETACH_FILTER: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	ns.grouped, ns.group = true, s.group
	s.next, s.swapped = ns, make(chan struct{})
	ctl(s, setProg(1))
	if err != nil {
		// The program is as it was: the old socket still takes all.
		s.next = nil
		close(s.swapped)
		return err
	}
	s.pending.Store(true)
	// Wake a reader waiting on the old socket, which gets no more.
	s.f.SetReadDeadline(time.Now())
	return nil
}

// sockCtl runs f on p's socket unless *err is already set, and records
// its error (or the closed socket's) in *err.
func sockCtl(err *error, p *systemPort, f func(fd int) error) {
	if *err != nil {
		return
	}
	if cerr := p.rc.Control(func(fd uintptr) { *err = f(int(fd)) }); cerr != nil {
		*err = cerr
	}
}

// newFanoutGroup puts fd in a new PACKET_FANOUT group of the type and flags
// given, whose id the kernel picks (PACKET_FANOUT_FLAG_UNIQUEID), and
// returns the id.
func newFanoutGroup(fd, flags int) (int, error) {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_FANOUT, (flags|unix.PACKET_FANOUT_FLAG_UNIQUEID)<<16); err != nil {
		return 0, fmt.Errorf("PACKET_FANOUT: %w", err)
	}
	v, err := unix.GetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_FANOUT)
	if err != nil {
		return 0, fmt.Errorf("PACKET_FANOUT: %w", err)
	}
	return v & 0xffff, nil
}

// handingOver reports whether err is the wake-up of a reader that has a
// handover to finish.
func (s *systemPort) handingOver(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded) && s.pending.Load()
}

// drainOld reads what the old socket still holds, without waiting, into
// pkts; once it is empty it moves the port to the new socket and returns 0.
// It runs in the reader.
func (s *systemPort) drainOld(pkts []*packet.Packet) int {
	if s.ring != nil {
		// ringRx stops short of len(pkts) only at a frame the kernel
		// still owns, the end of what it wrote.
		if n := s.ringRx(pkts); n > 0 {
			return n
		}
	} else {
		r := &s.rx
		for errs := 0; errs < maxRxErrors; {
			s.prepRx(pkts)
			r.n, r.err = 0, nil
			if cerr := s.rc.Control(func(fd uintptr) { r.fn(fd) }); cerr != nil {
				break // closed
			}
			if r.err == unix.EAGAIN {
				break
			}
			if r.err != nil {
				errs++ // an error sendmmsg left: reported once
				continue
			}
			if n := s.finishRx(pkts, r.n); n > 0 {
				return n
			}
		}
	}
	s.takeNext()
	return 0
}

// takeNext makes the new socket the port's and closes the old one. It
// closes the old one before it reports the handover finished: the old
// socket leaves the fanout group only once released (packet_release, at
// the ring's munmap), and a next handover that joined before then would
// find it still member 0, its new socket member 2, and steer to the
// closing socket ("ret #0") and back to the current one ("ret #1").
// Nothing else uses the old socket meanwhile: Write waits on swapMu, the
// other methods on hmu, and the reader is here.
func (s *systemPort) takeNext() {
	s.swapMu.Lock()
	s.hmu.Lock()
	ns := s.next
	s.pending.Store(false)
	if ns == nil { // closed meanwhile
		s.hmu.Unlock()
		s.swapMu.Unlock()
		return
	}
	old := &systemPort{f: s.f, rc: s.rc, ring: s.ring}
	s.kmu.Lock()
	old.rc.Control(func(fd uintptr) {
		if ts, err := unix.GetsockoptTpacketStats(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
			s.kdrops += uint64(ts.Drops)
		}
	})
	s.kmu.Unlock()
	s.f, s.rc, s.ring = ns.f, ns.rc, ns.ring
	s.group = ns.group
	old.closeSock()
	s.next = nil
	close(s.swapped)
	s.hmu.Unlock()
	s.swapMu.Unlock()
}

// latest is the socket the port's traffic goes to. Caller holds hmu.
func (s *systemPort) latest() *systemPort {
	if s.next != nil {
		return s.next
	}
	return s
}
