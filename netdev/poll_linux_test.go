//go:build linux

package netdev

import (
	"errors"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/govs/govs/datapath/packet"
)

// TestSystemPoll reads a system port by Poll, from its receive ring and
// by recvmmsg: nothing there returns at once with none, queued frames come
// in order, and a closed port says so.
func TestSystemPoll(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode int
	}{{"ring", ringAlways}, {"recvmmsg", ringNever}} {
		t.Run(tc.name, func(t *testing.T) {
			needRoot(t)
			setRingMode(t, tc.mode)
			ns := newNetns(t)
			host, peer := addVeth(t, ns)
			p, err := OpenSystem(host, Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			s := p.(*systemPort)
			if (s.ring != nil) != (tc.mode == ringAlways) {
				t.Fatalf("ring %v in mode %s", s.ring != nil, tc.name)
			}
			tx := rawSocket(t, ns, peer)
			readProbe(t, p, tx) // the link is up, and what it sent so far read
			pkts := newBatch()
			for {
				// Drain what the link sent on its own (IPv6
				// router solicitations, say) and the probes.
				n, err := s.Poll(pkts)
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
			}
			const want = 3*BatchSize + 5
			for i := range want {
				if err := unix.Send(tx, ringTestFrame(i), 0); err != nil {
					t.Fatal(err)
				}
			}
			seq := 0
			waitFor(t, fmt.Sprintf("%d frames polled", want), linkDeadline, func() bool {
				n, err := s.Poll(pkts)
				if err != nil {
					t.Fatal(err)
				}
				for _, pk := range pkts[:n] {
					got, ok := testFrameSeq(pk.Data())
					if !ok {
						continue // something the link sent itself
					}
					if got != seq {
						t.Fatalf("frame %d polled where %d was due", got, seq)
					}
					seq++
				}
				return seq == want
			})
			p.Close()
			if _, err := s.Poll([]*packet.Packet{packet.New()}); !errors.Is(err, ErrClosed) {
				t.Errorf("Poll after Close: %v", err)
			}
		})
	}
}

var _ Poller = (*systemPort)(nil)
