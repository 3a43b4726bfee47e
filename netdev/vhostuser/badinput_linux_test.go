package vhostuser

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govs/govs/datapath/packet"
)

// checkForwards proves a port still moves frames both ways.
func checkForwards(t *testing.T, p *Port, f *fakeFrontend) {
	t.Helper()
	frame := udpFrame(120, 77)
	tx, rx := f.rings[1], f.rings[0]
	tx.reclaim()
	if !tx.tx(hdrFor(f, packet.Offload{}, len(frame)), frame, txLayout{}) {
		t.Fatal("tx ring full")
	}
	got := readAll(t, p, 1, testDeadline)
	if !bytes.Equal(got[0].Data(), frame) {
		t.Fatal("frame differs")
	}
	rx.postRx(1, 2048, txLayout{})
	if n, _ := p.Write(got[:1]); n != 1 {
		t.Fatal("Write failed")
	}
	if g, err := rx.recv(); err != nil || len(g) != 1 || !bytes.Equal(g[0].data, frame) {
		t.Fatalf("guest got %v, %v", g, err)
	}
}

func TestBadDescriptors(t *testing.T) {
	type env struct {
		f   *fakeFrontend
		r   *fakeRing
		buf uint64 // guest address of a valid 2 KiB buffer holding a frame
		n   uint32 // its length
	}
	for _, tc := range []struct {
		name     string
		noIndir  bool
		build    func(e env) uint16 // returns the head to make available
		breaking bool               // the ring, not only the frame, is dropped
	}{
		{name: "address outside memory", build: func(e env) uint16 {
			e.r.putDesc(0, 0xdead00000000, 100, 0, 0)
			return 0
		}},
		{name: "length past the region", build: func(e env) uint16 {
			e.r.putDesc(0, e.buf, 0xffffffff, 0, 0)
			return 0
		}},
		{name: "address plus length wraps", build: func(e env) uint16 {
			e.r.putDesc(0, 0xffffffffffffff00, 0x200, 0, 0)
			return 0
		}},
		{name: "chain loop", build: func(e env) uint16 {
			e.r.putDesc(0, e.buf, 10, virtqDescFNext, 0)
			return 0
		}},
		{name: "chain longer than the ring", build: func(e env) uint16 {
			for i := range e.r.num {
				e.r.putDesc(uint16(i), e.buf, 1, virtqDescFNext, uint16((i+1)%e.r.num))
			}
			return 0
		}},
		{name: "next out of the table", build: func(e env) uint16 {
			e.r.putDesc(0, e.buf, 12, virtqDescFNext, 999)
			return 0
		}},
		{name: "head out of the table", build: func(e env) uint16 { return 999 }},
		{name: "writable descriptor in a transmit chain", build: func(e env) uint16 {
			e.r.putDesc(0, e.buf, e.n, virtqDescFWrite, 0)
			return 0
		}},
		{name: "indirect loop", build: func(e env) uint16 {
			off := e.f.allocData(64)
			putTableDesc(e.f.mem[off:], 0, e.buf, 10, virtqDescFNext, 1)
			putTableDesc(e.f.mem[off:], 1, e.buf, 10, virtqDescFNext, 0)
			e.r.putDesc(0, e.f.gpa(off), 32, virtqDescFIndirect, 0)
			return 0
		}},
		{name: "nested indirect", build: func(e env) uint16 {
			off := e.f.allocData(64)
			putTableDesc(e.f.mem[off:], 0, e.f.gpa(off), 16, virtqDescFIndirect, 0)
			e.r.putDesc(0, e.f.gpa(off), 16, virtqDescFIndirect, 0)
			return 0
		}},
		{name: "indirect length not a multiple of 16", build: func(e env) uint16 {
			off := e.f.allocData(64)
			putTableDesc(e.f.mem[off:], 0, e.buf, e.n, 0, 0)
			e.r.putDesc(0, e.f.gpa(off), 20, virtqDescFIndirect, 0)
			return 0
		}},
		{name: "indirect and next", build: func(e env) uint16 {
			off := e.f.allocData(64)
			putTableDesc(e.f.mem[off:], 0, e.buf, e.n, 0, 0)
			e.r.putDesc(0, e.f.gpa(off), 16, virtqDescFIndirect|virtqDescFNext, 1)
			e.r.putDesc(1, e.buf, e.n, 0, 0)
			return 0
		}},
		{name: "indirect table outside memory", build: func(e env) uint16 {
			e.r.putDesc(0, 0x7fff00000000, 64, virtqDescFIndirect, 0)
			return 0
		}},
		{name: "indirect table too long", build: func(e env) uint16 {
			e.r.putDesc(0, e.buf, 16*(maxIndirect+1), virtqDescFIndirect, 0)
			return 0
		}},
		{name: "indirect not negotiated", noIndir: true, build: func(e env) uint16 {
			off := e.f.allocData(64)
			putTableDesc(e.f.mem[off:], 0, e.buf, e.n, 0, 0)
			e.r.putDesc(0, e.f.gpa(off), 16, virtqDescFIndirect, 0)
			return 0
		}},
		{name: "frame longer than a packet", build: func(e env) uint16 {
			e.r.putDesc(0, e.f.gpa(e.f.allocData(40000)), 40000, virtqDescFNext, 1)
			e.r.putDesc(1, e.f.gpa(e.f.allocData(40000)), 40000, 0, 0)
			return 0
		}},
		{name: "shorter than the header", build: func(e env) uint16 {
			e.r.putDesc(0, e.buf, 5, 0, 0)
			return 0
		}},
		{name: "bad virtio-net header", build: func(e env) uint16 {
			e.f.mem[e.buf-e.f.regions[0].gpa+1] = 0x42 // unknown GSO type
			e.r.putDesc(0, e.buf, e.n, 0, 0)
			return 0
		}},
		{name: "avail index jumps past the ring", breaking: true, build: func(e env) uint16 {
			e.r.availIdx += uint16(e.r.num) + 5
			return 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			p, f := listenPair(t, cfg)
			other, of := listenPair(t, cfg)
			features := uint64(allFeatures)
			if tc.noIndir {
				features &^= 1 << featRingIndirect
			}
			f.negotiate(features, 1, 64)
			of.negotiate(allFeatures, 1, 64)
			waitFor(t, "running", testDeadline, func() bool { return p.Running() && other.Running() })
			r := f.rings[1]
			frame := append(make([]byte, 12), udpFrame(100, 1)...)
			off := f.allocData(2048)
			copy(f.mem[off:], frame)
			// Take descriptors 0 and 1 off the free list for the case.
			r.free = r.free[:len(r.free)-2]
			head := tc.build(env{f: f, r: r, buf: f.gpa(off), n: uint32(len(frame))})
			r.pushAvail(head)
			r.publish()
			r.kickNow()
			reader := make(chan int, 1)
			if tc.breaking {
				go func() {
					pkts := newPkts(4)
					n, _ := p.Read(pkts)
					if n == 1 && pkts[0].Len() != 120 {
						n = -1
					}
					reader <- n
				}()
				waitFor(t, "the device dropped", testDeadline, func() bool { return !p.Running() })
				if c := p.Counters(); c.RingErrors != 1 {
					t.Fatalf("counters %+v", c)
				}
				// The front-end sees its connection closed.
				f.c.SetReadDeadline(time.Now().Add(testDeadline))
				if _, err := f.c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
					t.Fatalf("connection not closed: %v", err)
				}
			} else {
				go p.Read(newPkts(4))
				// The port may return the chain before it counts the
				// error: wait for the count.
				waitFor(t, "the bad frame counted", testDeadline, func() bool { return p.Stats().RxErrors > 0 })
				if st := p.Stats(); st.RxErrors != 1 || st.RxPackets != 0 {
					t.Fatalf("stats %+v", st)
				}
				if head < 64 {
					waitFor(t, "the chain returned", testDeadline, func() bool { return r.usedIdx() == 1 })
					if id, l := r.usedEntry(0); id != uint32(head) || l != 0 {
						t.Fatalf("used entry %d/%d", id, l)
					}
				}
				if !p.Running() {
					t.Fatal("the device was dropped for one bad frame")
				}
			}
			checkForwards(t, other, of)
			if tc.breaking {
				// The port takes a new connection afterwards.
				f2 := reconnectFrontend(t, p)
				// The Read that was waiting when the device broke gets
				// the new device's frames.
				frame := udpFrame(120, 5)
				f2.rings[1].tx(hdrFor(f2, packet.Offload{}, len(frame)), frame, txLayout{})
				select {
				case n := <-reader:
					if n != 1 {
						t.Fatalf("Read got %d frames", n)
					}
				case <-time.After(testDeadline):
					t.Fatal("Read did not get the new device's frame")
				}
			}
		})
	}
}

func TestBadReceiveBuffers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(f *fakeFrontend, r *fakeRing)
	}{
		{"read-only buffer", func(f *fakeFrontend, r *fakeRing) {
			r.putDesc(0, f.gpa(f.allocData(2048)), 2048, 0, 0)
		}},
		{"buffer outside memory", func(f *fakeFrontend, r *fakeRing) {
			r.putDesc(0, 0x7fff00000000, 2048, virtqDescFWrite, 0)
		}},
		{"buffer loop", func(f *fakeFrontend, r *fakeRing) {
			r.putDesc(0, f.gpa(f.allocData(2048)), 1, virtqDescFWrite|virtqDescFNext, 0)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, f := listenPair(t, testConfig(t))
			f.negotiate(allFeatures, 1, 64)
			waitFor(t, "running", testDeadline, p.Running)
			r := f.rings[0]
			r.free = r.free[:len(r.free)-1]
			tc.build(f, r)
			r.pushAvail(0)
			r.publish()
			if n, err := p.Write([]*packet.Packet{pktWith(udpFrame(1000, 1), packet.Offload{})}); n != 0 || err != nil {
				t.Fatalf("Write %d, %v", n, err)
			}
			if p.Counters().RingErrors != 1 || p.Stats().TxDropped != 1 {
				t.Fatalf("counters %+v", p.Counters())
			}
			waitFor(t, "the device dropped", testDeadline, func() bool { return p.Status()["status"] == "disconnected" })
		})
	}
}

func TestBadMessages(t *testing.T) {
	msg := func(req request, flags uint32, payload []byte) []byte {
		b := make([]byte, hdrLen+len(payload))
		putHeader(b, req, flags, len(payload))
		copy(b[hdrLen:], payload)
		return b
	}
	memfd := func(t *testing.T, size int64) int {
		fd, err := unix.MemfdCreate("t", unix.MFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		unix.Ftruncate(fd, size)
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	region := func(gpa, size, uva, off uint64) []byte {
		b := binary.LittleEndian.AppendUint64(nil, gpa)
		b = binary.LittleEndian.AppendUint64(b, size)
		b = binary.LittleEndian.AppendUint64(b, uva)
		return binary.LittleEndian.AppendUint64(b, off)
	}
	table := func(n uint32, regions ...[]byte) []byte {
		b := binary.LittleEndian.AppendUint64(nil, uint64(n))
		for _, r := range regions {
			b = append(b, r...)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		raw  []byte
		fds  func(t *testing.T) []int
		cut  bool // close the socket after raw
	}{
		{name: "version 2", raw: msg(reqGetFeatures, 2, nil)},
		{name: "reply flag in a request", raw: msg(reqGetFeatures, flagVersion|flagReply, nil)},
		{name: "payload over the limit", raw: msg(reqSetFeatures, flagVersion, make([]byte, maxPayload+1))},
		{name: "short SET_FEATURES", raw: msg(reqSetFeatures, flagVersion, make([]byte, 4))},
		{name: "features not offered", raw: msg(reqSetFeatures, flagVersion, u64(1<<63))},
		{name: "protocol features not offered", raw: msg(reqSetProtocolFeatures, flagVersion, u64(1<<20))},
		{name: "ring size 0", raw: msg(reqSetVringNum, flagVersion, vringState(0, 0))},
		{name: "ring size not a power of 2", raw: msg(reqSetVringNum, flagVersion, vringState(0, 100))},
		{name: "ring size 65536", raw: msg(reqSetVringNum, flagVersion, vringState(0, 65536))},
		{name: "ring index out of range", raw: msg(reqSetVringNum, flagVersion, vringState(99, 256))},
		{name: "ring base over 16 bits", raw: msg(reqSetVringBase, flagVersion, vringState(0, 70000))},
		{name: "short SET_VRING_ADDR", raw: msg(reqSetVringAddr, flagVersion, make([]byte, 20))},
		{name: "ring outside memory", raw: append(append(append(
			msg(reqSetMemTable, flagVersion, table(1, region(0, 1<<20, 1<<30, 0))),
			msg(reqSetVringNum, flagVersion, vringState(0, 64))...),
			msg(reqSetVringKick, flagVersion, u64(vringFdInvalid))...),
			msg(reqSetVringAddr, flagVersion, make([]byte, vhostVringAddrLen))...),
			fds: func(t *testing.T) []int { return []int{memfd(t, 1<<20)} }},
		{name: "file descriptor with GET_FEATURES", raw: msg(reqGetFeatures, flagVersion, nil),
			fds: func(t *testing.T) []int { return []int{memfd(t, 4096)} }},
		{name: "kick without its fd", raw: msg(reqSetVringKick, flagVersion, u64(0))},
		{name: "kick with nofd and an fd", raw: msg(reqSetVringKick, flagVersion, u64(vringFdInvalid)),
			fds: func(t *testing.T) []int { return []int{memfd(t, 4096)} }},
		{name: "kick payload with stray bits", raw: msg(reqSetVringKick, flagVersion, u64(1<<40|vringFdInvalid))},
		{name: "memory table of 0 regions", raw: msg(reqSetMemTable, flagVersion, table(0))},
		{name: "memory table of 9 regions", raw: msg(reqSetMemTable, flagVersion, table(9))},
		{name: "memory table shorter than its count", raw: msg(reqSetMemTable, flagVersion, table(2, region(0, 4096, 0, 0)))},
		{name: "memory table without fds", raw: msg(reqSetMemTable, flagVersion, table(1, region(0, 4096, 0, 0)))},
		{name: "memory region past its file", raw: msg(reqSetMemTable, flagVersion, table(1, region(0, 1<<20, 0, 0))),
			fds: func(t *testing.T) []int { return []int{memfd(t, 4096)} }},
		{name: "memory region of size 0", raw: msg(reqSetMemTable, flagVersion, table(1, region(0, 0, 0, 0))),
			fds: func(t *testing.T) []int { return []int{memfd(t, 4096)} }},
		{name: "memory region wrapping", raw: msg(reqSetMemTable, flagVersion, table(1, region(^uint64(0)-100, 4096, 0, 0))),
			fds: func(t *testing.T) []int { return []int{memfd(t, 4096)} }},
		{name: "memory region not a file", raw: msg(reqSetMemTable, flagVersion, table(1, region(0, 4096, 0, 0))),
			fds: func(t *testing.T) []int { fd, _ := eventfd(); t.Cleanup(func() { unix.Close(fd) }); return []int{fd} }},
		{name: "closed mid-header", raw: msg(reqGetFeatures, flagVersion, nil)[:7], cut: true},
		{name: "closed mid-payload", raw: msg(reqSetFeatures, flagVersion, u64(0))[:15], cut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, f := listenPair(t, testConfig(t))
			var oob []byte
			if tc.fds != nil {
				if fds := tc.fds(t); len(fds) > 0 {
					oob = unix.UnixRights(fds...)
				}
			}
			if _, _, err := f.c.WriteMsgUnix(tc.raw, oob, nil); err != nil {
				t.Fatal(err)
			}
			if tc.cut {
				f.c.CloseWrite()
			}
			f.c.SetReadDeadline(time.Now().Add(testDeadline))
			for {
				if _, err := f.c.Read(make([]byte, 64)); err != nil {
					if !errors.Is(err, io.EOF) && !errors.Is(err, unix.ECONNRESET) {
						t.Fatalf("connection not closed by the port: %v", err)
					}
					break
				}
			}
			waitFor(t, "the protocol error counted", testDeadline, func() bool { return p.Counters().ProtocolErrors == 1 })
			// The port serves the next front-end.
			checkForwards(t, p, reconnectFrontend(t, p))
		})
	}
}

// TestGuestMemoryFault truncates the front-end's memory file under a
// running device: reading a frame from it faults, and the port survives.
func TestGuestMemoryFault(t *testing.T) {
	p, f := listenPair(t, testConfig(t))
	f.negotiate(allFeatures, 1, 64)
	waitFor(t, "running", testDeadline, p.Running)
	frame := udpFrame(1000, 1)
	f.dataPos = fakeMemSize - 4096
	f.rings[1].tx(hdrFor(f, packet.Offload{}, len(frame)), frame, txLayout{})
	if err := unix.Ftruncate(f.memfd, fakeRingArea); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.Read(newPkts(4))
		done <- err
	}()
	waitFor(t, "the fault counted", testDeadline, func() bool { return p.Counters().Faults == 1 })
	waitFor(t, "the device dropped", testDeadline, func() bool { return p.Status()["status"] == "disconnected" })
	p.Close()
	if err := <-done; err == nil {
		t.Fatal("Read returned no error after Close")
	}
}
