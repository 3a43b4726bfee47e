//go:build linux

package netdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// rxqFrame is an IPv4/UDP frame of flow (its source port) carrying seq, or
// a probe (seq -1), with a marker the tests recognise.
func rxqFrame(flow uint16, seq int) []byte {
	const ethLen, ipLen, udpLen = 14, 20, 8
	payload := append([]byte("govs-rxq"), binary.BigEndian.AppendUint32(nil, uint32(seq))...)
	f := make([]byte, ethLen+ipLen+udpLen, ethLen+ipLen+udpLen+len(payload))
	copy(f[0:6], []byte{0x02, 0, 0, 0, 0, 2})  // destination
	copy(f[6:12], []byte{0x02, 0, 0, 0, 0, 1}) // source
	binary.BigEndian.PutUint16(f[12:], 0x0800) // EtherType IPv4
	ip := f[ethLen:]
	ip[0] = 0x45 // version 4, 20-byte header
	binary.BigEndian.PutUint16(ip[2:], uint16(ipLen+udpLen+len(payload)))
	ip[8], ip[9] = 64, unix.IPPROTO_UDP
	copy(ip[12:16], []byte{10, 0, 0, 1})
	copy(ip[16:20], []byte{10, 0, 0, 2})
	var sum uint32
	for i := 0; i < ipLen; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum+sum>>16))
	udp := ip[ipLen:]
	binary.BigEndian.PutUint16(udp[0:], flow)
	binary.BigEndian.PutUint16(udp[2:], 9)
	binary.BigEndian.PutUint16(udp[4:], uint16(udpLen+len(payload)))
	return append(f, payload...)
}

// rxqSeq returns the flow and seq of an rxqFrame.
func rxqSeq(d []byte) (flow uint16, seq int, ok bool) {
	const off = 14 + 20 + 8
	if len(d) < off+12 || string(d[off:off+8]) != "govs-rxq" {
		return 0, 0, false
	}
	return binary.BigEndian.Uint16(d[34:]), int(int32(binary.BigEndian.Uint32(d[off+8:]))), true
}

// TestSystemRxQueues opens a system port with two receive queues, reads
// each from a goroutine of its own while 64 flows arrive, and checks that
// every frame comes once, on one queue per flow and in order there, that
// both queues carry some of the flows, and that Close ends both readers.
func TestSystemRxQueues(t *testing.T) {
	needRoot(t)
	for _, m := range []struct {
		name string
		cfg  Config
	}{{"ring", Config{RxQueues: 2}}, {"recvmmsg", Config{RxQueues: 2, SockBufSize: 4 << 20}}} {
		t.Run(m.name, func(t *testing.T) {
			ns := newNetns(t)
			host, peer := addVeth(t, ns)
			p := openSystem(t, host, m.cfg)
			qs := p.(RxQueuer).RxQueues()
			if len(qs) != 2 {
				t.Fatalf("%d queues, want 2", len(qs))
			}
			tx := rawSocket(t, ns, peer)

			const flows, perFlow = 64, 50
			var (
				mu      sync.Mutex
				queueOf = map[uint16]int{}
				next    = map[uint16]int{}
				perQ    [2]int
				read    atomic.Int64
				probed  atomic.Bool
				wg      sync.WaitGroup
			)
			errs := make(chan error, 2)
			for i, q := range qs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					pkts := newBatch()
					for {
						n, err := q.Read(pkts)
						if err != nil {
							errs <- err
							return
						}
						mu.Lock()
						for _, pk := range pkts[:n] {
							fl, seq, ok := rxqSeq(pk.Data())
							switch {
							case !ok:
							case seq < 0:
								probed.Store(true)
							default:
								if q0, seen := queueOf[fl]; seen && q0 != i {
									t.Errorf("flow %d on queues %d and %d", fl, q0, i)
								}
								queueOf[fl] = i
								if seq != next[fl] {
									t.Errorf("flow %d: frame %d where %d was due", fl, seq, next[fl])
								}
								next[fl] = seq + 1
								perQ[i]++
								read.Add(1)
							}
						}
						mu.Unlock()
					}
				}()
			}
			waitFor(t, "a probe through the port", linkDeadline, func() bool {
				unix.Send(tx, rxqFrame(1, -1), 0)
				return probed.Load()
			})
			const window = 100 // frames the sender runs ahead of the readers
			for seq := range perFlow {
				for fl := range uint16(flows) {
					waitFor(t, "the readers to catch up", linkDeadline, func() bool {
						return int64(seq*flows+int(fl))-read.Load() < window
					})
					if err := unix.Send(tx, rxqFrame(1000+fl, seq), 0); err != nil {
						t.Fatal(err)
					}
				}
			}
			waitFor(t, fmt.Sprintf("%d frames read", flows*perFlow), linkDeadline, func() bool {
				return read.Load() == flows*perFlow
			})
			p.Close()
			wg.Wait()
			for range 2 {
				if err := <-errs; !errors.Is(err, ErrClosed) {
					t.Errorf("read after Close: %v", err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if perQ[0] == 0 || perQ[1] == 0 {
				t.Errorf("frames per queue %v: the group did not spread 64 flows", perQ)
			}
			t.Logf("frames per queue: %v", perQ)
			if st := p.Stats(); st.RxPackets < flows*perFlow || st.RxDropped != 0 {
				t.Errorf("stats %+v: want both queues' frames counted and no drop", st)
			}
		})
	}
}

// A port with several queues refuses a socket hand-over (the caller
// reopens it), and its socket buffers are set on every queue.
func TestSystemRxQueuesSockBuf(t *testing.T) {
	needRoot(t)
	ns := newNetns(t)
	host, _ := addVeth(t, ns)
	p := openSystem(t, host, Config{RxQueues: 3, SockBufSize: 1 << 20})
	s := p.(*systemPort)
	if err := s.SwitchSockBuf(0); !errors.Is(err, ErrMultiQueue) {
		t.Errorf("SwitchSockBuf on 3 queues: %v", err)
	}
	if err := s.SetSockBufs(2<<20, 2<<20); err != nil {
		t.Fatal(err)
	}
	for i, q := range append([]*systemPort{s}, s.queues...) {
		var rcv int
		q.rc.Control(func(fd uintptr) { rcv, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF) })
		if rcv != 4<<20 {
			t.Errorf("queue %d: SO_RCVBUF %d, want %d", i, rcv, 4<<20)
		}
	}
}
