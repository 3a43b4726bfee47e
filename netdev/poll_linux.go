//go:build linux

package netdev

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/govs/govs/datapath/packet"
)

// Poll implements Poller: it copies out what the receive ring holds, or
// what one recvmmsg without waiting returns, finishing a socket hand-over
// as Read does.
func (s *systemPort) Poll(pkts []*packet.Packet) (int, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	if len(pkts) > BatchSize {
		pkts = pkts[:BatchSize]
	}
	if len(pkts) == 0 {
		return 0, nil
	}
	if s.pending.Load() {
		// Returns 0 once the old socket is drained and the new one
		// taken: the next poll reads that.
		return s.drainOld(pkts), nil
	}
	if s.ring != nil {
		return s.ringRx(pkts), nil
	}
	r := &s.rx
	s.prepRx(pkts)
	r.n, r.err = 0, nil
	if err := s.rc.Control(func(fd uintptr) { r.fn(fd) }); err != nil {
		return 0, s.portErr(err)
	}
	switch r.err {
	case nil:
		return s.finishRx(pkts, r.n), nil
	case unix.EAGAIN:
		return 0, nil
	}
	return 0, fmt.Errorf("netdev: %s: recvmmsg: %w", s.name, r.err)
}
