//go:build linux

package netdev

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// A system port with Config.RxQueues > 1 receives on that many AF_PACKET
// sockets on its device, all in one PACKET_FANOUT_HASH group (packet(7)):
// the kernel sends each frame to member skb_get_hash(skb) % members, so a
// flow (its addresses and ports) stays on one socket and in order, and the
// device's flows spread over the sockets, each read by a goroutine of its
// own. Queue 0 is the port itself, which also sends; queues 1..n-1 only
// receive. A fragmented datagram's pieces hash on their addresses alone
// (the flow dissector leaves the ports of fragments out), so they too
// stay together, and no PACKET_FANOUT_FLAG_DEFRAG (which would reassemble
// them) is needed. PACKET_FANOUT_FLAG_IGNORE_OUTGOING stands in for each
// member's PACKET_IGNORE_OUTGOING, which the group's hook bypasses.
const fanoutHashFlags = unix.PACKET_FANOUT_HASH | unix.PACKET_FANOUT_FLAG_IGNORE_OUTGOING

// openQueues puts s in a new fanout group and adds n-1 sockets to it. Each
// new socket is opened muted (dropping everything) and unmuted only once
// in the group, so no frame reaches both it and the group. On error the
// new sockets are closed; s stays in its group, alone, receiving all.
func (s *systemPort) openQueues(n int, cfg Config) error {
	var err error
	ctl := func(p *systemPort, f func(fd int) error) { sockCtl(&err, p, f) }
	var group int
	ctl(s, func(fd int) (err error) {
		group, err = newFanoutGroup(fd, fanoutHashFlags)
		return err
	})
	if err != nil {
		return err
	}
	for i := 1; i < n; i++ {
		q, oerr := openSock(s.name, s.ifindex, s.mtu, cfg, true)
		if oerr != nil {
			err = fmt.Errorf("queue %d: %w", i, oerr)
			break
		}
		q.cfg = cfg
		q.init()
		s.queues = append(s.queues, q)
		ctl(q, func(fd int) error {
			if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_FANOUT, group|fanoutHashFlags<<16); err != nil {
				return fmt.Errorf("queue %d: PACKET_FANOUT %d: %w", i, group, err)
			}
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DETACH_FILTER, 0); err != nil {
				return fmt.Errorf("queue %d: SO_DETACH_FILTER: %w", i, err)
			}
			return nil
		})
		if err != nil {
			break
		}
	}
	if err != nil {
		for _, q := range s.queues {
			q.closeSock()
		}
		s.queues = nil
	}
	return err
}

// RxQueues implements RxQueuer.
func (s *systemPort) RxQueues() []Reader { return readers(s, s.queues) }

// readers lists a port's receive queues: the port, then the others.
func readers[R Reader](port R, others []R) []Reader {
	qs := make([]Reader, 0, 1+len(others))
	qs = append(qs, port)
	for _, q := range others {
		qs = append(qs, q)
	}
	return qs
}

// queueStats adds the receive counters of queues 1..n-1 to st. Caller
// holds kmu.
func (s *systemPort) queueStats(st *Stats) {
	for _, q := range s.queues {
		qs := q.ctr.snapshot()
		st.RxPackets += qs.RxPackets
		st.RxBytes += qs.RxBytes
		st.RxErrors += qs.RxErrors
		rx := q.rxo.Snapshot()
		st.Offload.Checksummed += rx.Checksummed
		st.Offload.Errors += rx.Errors
		if !s.closed.Load() {
			q.rc.Control(func(fd uintptr) {
				if ts, err := unix.GetsockoptTpacketStats(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
					q.kdrops += uint64(ts.Drops)
				}
			})
		}
		st.RxDropped += q.kdrops
	}
}
