//go:build linux

package netdev

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSystemSockBufHandover switches a port between its ring and recvmmsg
// (SwitchSockBuf: set, changed, unset, set again) while a sender floods it,
// and checks that the reader gets every frame, once and in order, and that
// the kernel dropped none.
func TestSystemSockBufHandover(t *testing.T) {
	needRoot(t)
	setRingMode(t, ringAuto)
	for _, m := range offloadModes {
		t.Run(m.name, func(t *testing.T) {
			ns := newNetns(t)
			host, peer := addVeth(t, ns)
			p := openSystem(t, host, m.cfg)
			s := p.(*systemPort)
			if s.ring == nil {
				t.Fatal("no rx ring without a socket buffer size")
			}
			tx := rawSocket(t, ns, peer)
			// The port is in its fanout group from the start, so that
			// its first handover, under the flood, loses nothing either
			// (creating the group could: 2 of 140 floods lost a frame
			// when the first switch made it).
			s.hmu.Lock()
			grouped := s.grouped
			s.hmu.Unlock()
			if !grouped && s.ignoreOutgoing {
				t.Fatal("a new port is not in a fanout group")
			}
			readProbe(t, p, tx)

			const total = 20000
			const window = 100 // frames the sender runs ahead of the reader: under the ring's depth
			sizes := []int{1 << 20, 2 << 20, 0, 4 << 20, 0, 212992, 0, 1 << 20, 0}
			// Switch i is made once the reader has frame at(i). The
			// sender stops short of the frames after the next switch
			// until it is made (limit): else, the reader and the
			// sender outrun the switches (on a fast veth, or with this
			// goroutine descheduled), the reader has every frame and
			// returns before a switch, and nobody reads on to finish
			// that handover. Frames still flow during each switch.
			step := int64(total / (len(sizes) + 2))
			at := func(i int) int64 { return int64(i+1) * step }
			var read, limit atomic.Int64
			limit.Store(at(0) + step/2)
			done, rd := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				for i := 0; i < total; i += 10 {
					for int64(i)-read.Load() > window || int64(i+10) > limit.Load() {
						select {
						case <-rd:
							return // the reader gave up
						case <-time.After(100 * time.Microsecond): // pacing
						}
					}
					for j := i; j < i+10; j++ {
						if err := unix.Send(tx, ringTestFrame(j), 0); err != nil {
							t.Error(err)
							return
						}
					}
				}
			}()
			go func() {
				defer close(rd)
				readCounting(t, p, total, &read)
			}()
			for i, n := range sizes {
				waitFor(t, fmt.Sprintf("%d frames read", at(i)), linkDeadline, func() bool {
					select {
					case <-rd:
						return true // failed: reported by the reader
					default:
						return read.Load() >= at(i)
					}
				})
				if t.Failed() {
					break
				}
				// The reader finishes the last handover as it reads on:
				// on a loaded machine that can take longer than
				// SwitchSockBuf's own wait.
				waitFor(t, "the last handover to finish", linkDeadline, func() bool {
					s.hmu.Lock()
					defer s.hmu.Unlock()
					return s.next == nil
				})
				if err := s.SwitchSockBuf(n); err != nil {
					t.Fatalf("switch %d to %d: %v", i, n, err)
				}
				if i+1 < len(sizes) {
					limit.Store(at(i+1) + step/2)
				} else {
					// The frames from here on reach only the
					// last new socket: the reader must take it.
					limit.Store(total)
				}
			}
			<-done
			<-rd
			if st := p.Stats(); st.RxDropped != 0 || st.RxErrors != 0 {
				t.Errorf("kernel counted %d drops, port %d errors", st.RxDropped, st.RxErrors)
			}
			s.hmu.Lock()
			ring, next := s.ring != nil, s.next != nil
			s.hmu.Unlock()
			if !ring || next {
				t.Errorf("back to no socket buffer size: ring %v, handover pending %v", ring, next)
			}
		})
	}
}

// readCounting reads test frames 0..want-1 from p, checking that each
// comes once, in order and intact, publishing how many it has in n. The
// port is closed (failing the test) after linkDeadline.
func readCounting(t *testing.T, p Port, want int, n *atomic.Int64) {
	timer := time.AfterFunc(linkDeadline, func() { p.Close() })
	defer timer.Stop()
	pkts := newBatch()
	for got := 0; got < want; {
		k, err := p.Read(pkts)
		if err != nil {
			t.Errorf("read after %d of %d frames: %v", got, want, err)
			return
		}
		for _, pk := range pkts[:k] {
			d := pk.Data()
			seq, ok := testFrameSeq(d)
			if !ok {
				continue // probes, the namespace's own traffic
			}
			if seq != got || !bytes.Equal(d, ringTestFrame(seq)) {
				t.Errorf("frame %d read where %d was due (or corrupted)", seq, got)
				return
			}
			got++
		}
		n.Store(int64(got))
		timer.Reset(linkDeadline)
	}
}

// TestSystemSockBufHandoverUnread checks that a handover nobody reads
// refuses a second one instead of hanging, and that Close ends it.
func TestSystemSockBufHandoverUnread(t *testing.T) {
	p, s := openUnclosedRingPort(t, ringAuto)
	if err := s.SwitchSockBuf(1 << 20); err != nil {
		t.Fatal(err)
	}
	if err := s.SwitchSockBuf(0); !errors.Is(err, errHandover) {
		t.Errorf("second switch with the first unfinished: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.SwitchSockBuf(0); !errors.Is(err, ErrClosed) {
		t.Errorf("switch after Close: %v", err)
	}
	if _, err := p.Read(newBatch()); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
}

// BenchmarkSystemRxFanoutGroup measures what a system port's fanout group
// of its own costs per received frame: a sender floods the port's veth
// with 64-byte frames, one send(2) each, and the port reads them, with the
// socket in its group (as OpenSystem opens it) and alone. The group's
// demultiplexing runs in the sender's softirq, so a frame's cost is the
// slower of send and receive; compare the two with benchstat over -count.
func BenchmarkSystemRxFanoutGroup(b *testing.B) {
	needRoot(b)
	for _, grouped := range []bool{false, true} {
		b.Run(map[bool]string{false: "alone", true: "grouped"}[grouped], func(b *testing.B) {
			old := groupAtOpen
			groupAtOpen = grouped
			defer func() { groupAtOpen = old }()
			ns := newNetns(b)
			host, peer := addVeth(b, ns)
			p := openSystem(b, host, Config{})
			if s := p.(*systemPort); s.grouped != grouped {
				b.Fatalf("grouped %v, want %v", s.grouped, grouped)
			}
			tx := rawSocket(b, ns, peer)
			frame := make([]byte, 64)
			copy(frame, ringTestFrame(0))
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					for range 64 {
						unix.Send(tx, frame, 0)
					}
				}
			}()
			batch := newBatch()
			var r0, r1 unix.Rusage
			b.ResetTimer()
			unix.Getrusage(unix.RUSAGE_SELF, &r0)
			for n := 0; n < b.N; {
				k, err := p.Read(batch)
				if err != nil {
					b.Fatal(err)
				}
				n += k
			}
			unix.Getrusage(unix.RUSAGE_SELF, &r1)
			// CPU time, the load-independent figure: sender and reader.
			cpu := func(r *unix.Rusage) int64 { return r.Utime.Nano() + r.Stime.Nano() }
			b.ReportMetric(float64(cpu(&r1)-cpu(&r0))/float64(b.N), "cpu-ns/frame")
		})
	}
}
