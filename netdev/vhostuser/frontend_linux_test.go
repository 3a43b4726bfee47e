package vhostuser

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeFrontend is the virtio driver side of a vhost-user device, for tests:
// it shares a memfd as two regions (contiguous in guest physical space,
// apart in its own virtual space, at different file offsets), builds split
// rings in it and speaks the protocol over the port's socket.
type fakeFrontend struct {
	tb       testing.TB
	c        *net.UnixConn
	memfd    int
	mem      []byte
	regions  []fakeRegion
	dataOff  uint64 // wrap-around allocator for buffers
	dataPos  uint64
	ringPos  uint64 // bump allocator for rings and tables
	protocol uint64
	features uint64
	rings    map[int]*fakeRing
}

type fakeRegion struct{ gpa, uva, off, size uint64 }

const (
	fakeMemSize  = 64 << 20
	fakeRingArea = 8 << 20
	fakeGPABase  = 0x100000
	fakeUVABase0 = 0x7f0000000000
	fakeUVABase1 = 0x7f1000000000
)

func newFakeFrontend(tb testing.TB, c *net.UnixConn) *fakeFrontend {
	fd, err := unix.MemfdCreate("fake-guest", unix.MFD_CLOEXEC)
	if err != nil {
		tb.Fatalf("memfd_create: %v", err)
	}
	if err := unix.Ftruncate(fd, fakeMemSize); err != nil {
		tb.Fatalf("ftruncate: %v", err)
	}
	mem, err := unix.Mmap(fd, 0, fakeMemSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		tb.Fatalf("mmap: %v", err)
	}
	half := uint64(fakeMemSize / 2)
	f := &fakeFrontend{
		tb: tb, c: c, memfd: fd, mem: mem,
		regions: []fakeRegion{
			{gpa: fakeGPABase, uva: fakeUVABase0, off: 0, size: half},
			{gpa: fakeGPABase + half, uva: fakeUVABase1, off: half, size: half},
		},
		ringPos: 4096, dataOff: fakeRingArea, dataPos: fakeRingArea,
		rings: map[int]*fakeRing{},
	}
	tb.Cleanup(func() {
		c.Close()
		unix.Munmap(mem)
		unix.Close(fd)
		for _, r := range f.rings {
			r.closeFds()
		}
	})
	return f
}

// listenPair opens a server port and connects a fake front-end to it.
func listenPair(tb testing.TB, cfg Config) (*Port, *fakeFrontend) {
	path := filepath.Join(tb.TempDir(), "vhu.sock")
	p, err := Listen("vhu0", path, cfg)
	if err != nil {
		tb.Fatalf("Listen: %v", err)
	}
	tb.Cleanup(func() { p.Close() })
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		tb.Fatalf("dial: %v", err)
	}
	return p, newFakeFrontend(tb, c)
}

// reconnectFrontend connects a new fake front-end to the server port p and
// runs a device of one queue pair on it.
func reconnectFrontend(tb testing.TB, p *Port) *fakeFrontend {
	tb.Helper()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: p.path, Net: "unix"})
	if err != nil {
		tb.Fatalf("dial: %v", err)
	}
	f := newFakeFrontend(tb, c)
	f.negotiate(allFeatures, 1, 64)
	waitFor(tb, "running again", testDeadline, p.Running)
	return f
}

func (f *fakeFrontend) gpa(off uint64) uint64 {
	for _, r := range f.regions {
		if off >= r.off && off < r.off+r.size {
			return r.gpa + off - r.off
		}
	}
	panic("offset outside the regions")
}

func (f *fakeFrontend) uva(off uint64) uint64 {
	for _, r := range f.regions {
		if off >= r.off && off < r.off+r.size {
			return r.uva + off - r.off
		}
	}
	panic("offset outside the regions")
}

func (f *fakeFrontend) allocRing(n, align uint64) uint64 {
	f.ringPos = (f.ringPos + align - 1) &^ (align - 1)
	off := f.ringPos
	f.ringPos += n
	if f.ringPos > fakeRingArea {
		panic("ring area exhausted")
	}
	return off
}

func (f *fakeFrontend) allocData(n uint64) uint64 {
	if f.dataPos+n > fakeMemSize {
		f.dataPos = f.dataOff
	}
	off := f.dataPos
	f.dataPos += (n + 63) &^ 63
	return off
}

// send sends a request; if reply, it reads and returns the reply payload.
func (f *fakeFrontend) send(req request, flags uint32, payload []byte, fds []int, reply bool) ([]byte, error) {
	b := make([]byte, hdrLen+len(payload))
	putHeader(b, req, flagVersion|flags, len(payload))
	copy(b[hdrLen:], payload)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if _, _, err := f.c.WriteMsgUnix(b, oob, nil); err != nil {
		return nil, err
	}
	if !reply {
		return nil, nil
	}
	f.c.SetReadDeadline(time.Now().Add(testDeadline))
	defer f.c.SetReadDeadline(time.Time{})
	var h [hdrLen]byte
	if _, err := io.ReadFull(f.c, h[:]); err != nil {
		return nil, err
	}
	if r := request(binary.LittleEndian.Uint32(h[:])); r != req {
		return nil, fmt.Errorf("reply to %v for %v", r, req)
	}
	if fl := binary.LittleEndian.Uint32(h[4:]); fl&flagReply == 0 {
		return nil, fmt.Errorf("reply without the reply flag: %#x", fl)
	}
	p := make([]byte, binary.LittleEndian.Uint32(h[8:]))
	if _, err := io.ReadFull(f.c, p); err != nil {
		return nil, err
	}
	return p, nil
}

func (f *fakeFrontend) must(req request, payload []byte, fds ...int) []byte {
	f.tb.Helper()
	reply := false
	switch req {
	case reqGetFeatures, reqGetProtocolFeatures, reqGetQueueNum, reqGetVringBase:
		reply = true
	}
	var flags uint32
	if !reply && f.protocol&(1<<protoReplyAck) != 0 {
		flags, reply = flagNeedReply, true
	}
	r, err := f.send(req, flags, payload, fds, reply)
	if err != nil {
		f.tb.Fatalf("%v: %v", req, err)
	}
	if flags&flagNeedReply != 0 && (len(r) != 8 || binary.LittleEndian.Uint64(r) != 0) {
		f.tb.Fatalf("%v: nack %x", req, r)
	}
	return r
}

func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func vringState(idx, num uint32) []byte {
	return binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, idx), num)
}

func (f *fakeFrontend) memTablePayload() []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(f.regions)))
	b = binary.LittleEndian.AppendUint32(b, 0)
	for _, r := range f.regions {
		b = binary.LittleEndian.AppendUint64(b, r.gpa)
		b = binary.LittleEndian.AppendUint64(b, r.size)
		b = binary.LittleEndian.AppendUint64(b, r.uva)
		b = binary.LittleEndian.AppendUint64(b, r.off)
	}
	return b
}

func (f *fakeFrontend) sendMemTable() {
	fds := make([]int, len(f.regions))
	for i := range fds {
		fds[i] = f.memfd
	}
	f.must(reqSetMemTable, f.memTablePayload(), fds...)
}

// negotiate runs the start-up sequence QEMU and virtio-user send, with
// the given features (masked by what the back-end offers) and pairs queue
// pairs of num entries.
func (f *fakeFrontend) negotiate(features uint64, pairs, num int) {
	f.tb.Helper()
	f.must(reqSetOwner, nil)
	offered := binary.LittleEndian.Uint64(f.must(reqGetFeatures, nil))
	f.features = features & offered
	if offered&(1<<featProtocolFeature) != 0 {
		pf := binary.LittleEndian.Uint64(f.must(reqGetProtocolFeatures, nil))
		pf &= 1<<protoMQ | 1<<protoReplyAck
		f.must(reqSetProtocolFeatures, u64(pf))
		f.protocol = pf
		f.features |= 1 << featProtocolFeature
	}
	if pairs > 1 {
		if q := binary.LittleEndian.Uint64(f.must(reqGetQueueNum, nil)); q < uint64(pairs) {
			f.tb.Fatalf("GET_QUEUE_NUM %d < %d", q, pairs)
		}
	}
	f.must(reqSetFeatures, u64(f.features))
	f.sendMemTable()
	for i := range 2 * pairs {
		f.setupRing(i, num)
	}
}

// waitReady waits until every ring f has set up is ready on p. Without
// REPLY_ACK the port handles f's messages after f has sent them, and
// Running holds as soon as one ring is ready.
func (f *fakeFrontend) waitReady(p *Port) {
	f.tb.Helper()
	waitFor(f.tb, "every ring ready", testDeadline, func() bool {
		for i := range f.rings {
			if !p.rings[i].ready.Load() {
				return false
			}
		}
		return true
	})
}

func (f *fakeFrontend) hdrLen() int {
	if f.features&(1<<featNetMrgRxbuf|1<<featVersion1) != 0 {
		return 12
	}
	return 10
}

// fakeRing is the driver's view of one split ring.
type fakeRing struct {
	f                 *fakeFrontend
	idx, num          int
	desc, avail, used uint64 // offsets in mem
	kick, call        int
	free              []uint16
	chains            map[uint16][]uint16 // head -> descriptors, for freeing
	bufs              map[uint16]uint64   // head -> buffer offset (rx)
	availIdx          uint16
	usedSeen          uint16

	// Packed rings (virtio 1.1 §2.7): positions and wrap counters of the
	// driver, free buffer IDs and descriptor counts per ID.
	packed              bool
	availPos, usedPos   uint16
	availWrap, usedWrap bool
	freeDescs           int
	ids                 []uint16
	idDescs             map[uint16]int
}

func (f *fakeFrontend) setupRing(i, num int) *fakeRing {
	r := &fakeRing{f: f, idx: i, num: num, chains: map[uint16][]uint16{}, bufs: map[uint16]uint64{}}
	if f.features&(1<<featRingPacked) != 0 {
		r.packed, r.availWrap, r.usedWrap, r.freeDescs = true, true, true, num
		r.idDescs = map[uint16]int{}
		for id := num - 1; id >= 0; id-- {
			r.ids = append(r.ids, uint16(id))
		}
		r.desc = f.allocRing(uint64(16*num), 16)
		r.avail = f.allocRing(4, 4) // driver event suppression
		r.used = f.allocRing(4, 4)  // device event suppression
	} else {
		r.setupSplit(i, num)
	}
	var err error
	if r.kick, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		f.tb.Fatal(err)
	}
	if r.call, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		f.tb.Fatal(err)
	}
	f.rings[i] = r
	if r.packed {
		r.start(packedWrapBit)
	} else {
		r.start(0)
	}
	return r
}

func (r *fakeRing) setupSplit(i, num int) {
	f := r.f
	r.desc = f.allocRing(uint64(16*num), 16)
	// Odd rings get a 2-aligned but not 4-aligned avail ring, as the
	// spec allows.
	r.avail = f.allocRing(uint64(8+2*num), 4) + uint64(2*(i&1))
	r.used = f.allocRing(uint64(6+8*num), 4)
	for d := num - 1; d >= 0; d-- {
		r.free = append(r.free, uint16(d))
	}
}

// start sends the ring set-up messages, from base.
func (r *fakeRing) start(base uint16) {
	f := r.f
	f.must(reqSetVringNum, vringState(uint32(r.idx), uint32(r.num)))
	f.must(reqSetVringBase, vringState(uint32(r.idx), uint32(base)))
	a := binary.LittleEndian.AppendUint32(nil, uint32(r.idx))
	a = binary.LittleEndian.AppendUint32(a, 0)
	a = binary.LittleEndian.AppendUint64(a, f.uva(r.desc))
	a = binary.LittleEndian.AppendUint64(a, f.uva(r.used))
	a = binary.LittleEndian.AppendUint64(a, f.uva(r.avail))
	a = binary.LittleEndian.AppendUint64(a, 0)
	f.must(reqSetVringAddr, a)
	f.must(reqSetVringKick, u64(uint64(r.idx)), r.kick)
	f.must(reqSetVringCall, u64(uint64(r.idx)), r.call)
	if f.features&(1<<featProtocolFeature) != 0 {
		f.must(reqSetVringEnable, vringState(uint32(r.idx), 1))
	}
}

func (r *fakeRing) closeFds() {
	unix.Close(r.kick)
	unix.Close(r.call)
}

func (r *fakeRing) putDesc(i uint16, addr uint64, l uint32, flags, next uint16) {
	d := r.f.mem[r.desc+16*uint64(i):]
	binary.LittleEndian.PutUint64(d, addr)
	binary.LittleEndian.PutUint32(d[8:], l)
	binary.LittleEndian.PutUint16(d[12:], flags)
	binary.LittleEndian.PutUint16(d[14:], next)
}

func putTableDesc(t []byte, i int, addr uint64, l uint32, flags, next uint16) {
	d := t[16*i:]
	binary.LittleEndian.PutUint64(d, addr)
	binary.LittleEndian.PutUint32(d[8:], l)
	binary.LittleEndian.PutUint16(d[12:], flags)
	binary.LittleEndian.PutUint16(d[14:], next)
}

// pushAvail makes head available; publish writes avail->idx.
func (r *fakeRing) pushAvail(head uint16) {
	binary.LittleEndian.PutUint16(r.f.mem[r.avail+4+2*uint64(int(r.availIdx)%r.num):], head)
	r.availIdx++
}

func (r *fakeRing) publish() {
	binary.LittleEndian.PutUint16(r.f.mem[r.avail+2:], r.availIdx)
}

func (r *fakeRing) availFlags() uint16 { return binary.LittleEndian.Uint16(r.f.mem[r.avail:]) }

func (r *fakeRing) setAvailFlags(fl uint16) {
	binary.LittleEndian.PutUint16(r.f.mem[r.avail:], fl)
}

func (r *fakeRing) kickNow() { unix.Write(r.kick, []byte{1, 0, 0, 0, 0, 0, 0, 0}) }

// calls drains the call eventfd and returns its count.
func (r *fakeRing) calls() uint64 {
	var b [8]byte
	if n, _ := unix.Read(r.call, b[:]); n != 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(b[:])
}

func (r *fakeRing) usedIdx() uint16 {
	return uint16(atomic.LoadUint32((*uint32)(ptrAt(r.f.mem, r.used))) >> 16)
}

func (r *fakeRing) usedFlags() uint16 { return binary.LittleEndian.Uint16(r.f.mem[r.used:]) }

func (r *fakeRing) usedEntry(i uint16) (id, l uint32) {
	e := r.f.mem[r.used+4+8*uint64(int(i)%r.num):]
	return binary.LittleEndian.Uint32(e), binary.LittleEndian.Uint32(e[4:])
}

func (r *fakeRing) setUsedEvent(v uint16) {
	binary.LittleEndian.PutUint16(r.f.mem[r.avail+4+2*uint64(r.num):], v)
}

func (r *fakeRing) availEvent() uint16 {
	return binary.LittleEndian.Uint16(r.f.mem[r.used+4+8*uint64(r.num):])
}

func (r *fakeRing) allocDescs(n int) []uint16 {
	if len(r.free) < n {
		return nil
	}
	d := append([]uint16(nil), r.free[len(r.free)-n:]...)
	r.free = r.free[:len(r.free)-n]
	return d
}

// txLayout is how the driver lays a frame out in descriptors.
type txLayout struct {
	pieces   int  // descriptors the header and frame are split over (1 if 0)
	indirect bool // in an indirect table
}

// tx transmits hdr+frame as the guest would and kicks; it reports false if
// the ring has no free descriptors.
func (r *fakeRing) tx(hdr, frame []byte, lay txLayout) bool {
	f := r.f
	data := append(append([]byte(nil), hdr...), frame...)
	off := f.allocData(uint64(len(data)))
	copy(f.mem[off:], data)
	if r.packed {
		if !r.postPacked(off, len(data), lay, 0) {
			return false
		}
		r.kickNow()
		return true
	}
	head, ok := r.putChain(off, len(data), lay, 0)
	if !ok {
		return false
	}
	r.pushAvail(head)
	r.publish()
	r.kickNow()
	return true
}

// putChain lays the buffer of size bytes at off over lay.pieces
// descriptors (or an indirect table of them), each with flags and NEXT
// where another follows, and returns the chain's head; ok is false if
// the ring has no free descriptors.
func (r *fakeRing) putChain(off uint64, size int, lay txLayout, flags uint16) (head uint16, ok bool) {
	f := r.f
	pieces := max(1, lay.pieces)
	step := (size + pieces - 1) / pieces
	if lay.indirect {
		ds := r.allocDescs(1)
		if ds == nil {
			return 0, false
		}
		toff := f.allocData(uint64(16 * pieces))
		t := f.mem[toff:]
		for i := range pieces {
			lo, hi := min(i*step, size), min((i+1)*step, size)
			fl := flags
			if i < pieces-1 {
				fl |= virtqDescFNext
			}
			putTableDesc(t, i, f.gpa(off+uint64(lo)), uint32(hi-lo), fl, uint16(i+1))
		}
		r.putDesc(ds[0], f.gpa(toff), uint32(16*pieces), virtqDescFIndirect, 0)
		r.chains[ds[0]] = ds
		return ds[0], true
	}
	ds := r.allocDescs(pieces)
	if ds == nil {
		return 0, false
	}
	for i, d := range ds {
		lo, hi := min(i*step, size), min((i+1)*step, size)
		fl, next := flags, uint16(0)
		if i < pieces-1 {
			fl, next = fl|virtqDescFNext, ds[i+1]
		}
		r.putDesc(d, f.gpa(off+uint64(lo)), uint32(hi-lo), fl, next)
	}
	r.chains[ds[0]] = ds
	return ds[0], true
}

// reclaim frees the descriptors the device used and returns how many
// chains came back.
func (r *fakeRing) reclaim() int {
	if r.packed {
		n := 0
		for {
			if _, _, ok := r.popPacked(); !ok {
				return n
			}
			n++
		}
	}
	n := 0
	for u := r.usedIdx(); r.usedSeen != u; r.usedSeen++ {
		id, _ := r.usedEntry(r.usedSeen)
		r.free = append(r.free, r.chains[uint16(id)]...)
		delete(r.chains, uint16(id))
		n++
	}
	return n
}

// postRx makes n receive buffers of size bytes available, each split over
// pieces descriptors (or in an indirect table).
func (r *fakeRing) postRx(n, size int, lay txLayout) int {
	f := r.f
	if r.packed {
		posted := 0
		for range n {
			off := f.allocData(uint64(size))
			if !r.postPacked(off, size, lay, virtqDescFWrite) {
				break
			}
			posted++
		}
		return posted
	}
	posted := 0
	for range n {
		off := f.allocData(uint64(size))
		head, ok := r.putChain(off, size, lay, virtqDescFWrite)
		if !ok {
			break
		}
		r.bufs[head] = off
		r.pushAvail(head)
		posted++
	}
	r.publish()
	return posted
}

// rxFrame is a frame the guest received: its virtio-net header and data.
type rxFrame struct {
	hdr   []byte
	data  []byte
	nbufs int
}

// recv collects the frames the device put in the receive ring, joining
// mergeable buffers by num_buffers.
func (r *fakeRing) recv() ([]rxFrame, error) {
	f := r.f
	hl := f.hdrLen()
	var out []rxFrame
	var cur []byte
	want, got := 0, 0
	for {
		var id, l uint32
		var off uint64
		if r.packed {
			pid, pl, ok := r.popPacked()
			if !ok {
				break
			}
			id, l = uint32(pid), pl
			off = r.bufs[pid]
			delete(r.bufs, pid)
		} else {
			if r.usedSeen == r.usedIdx() {
				break
			}
			id, l = r.usedEntry(r.usedSeen)
			r.usedSeen++
			var ok bool
			if off, ok = r.bufs[uint16(id)]; !ok {
				return out, fmt.Errorf("used id %d not posted", id)
			}
			r.free = append(r.free, r.chains[uint16(id)]...)
			delete(r.chains, uint16(id))
			delete(r.bufs, uint16(id))
		}
		b := append([]byte(nil), f.mem[off:off+uint64(l)]...)
		if got == 0 {
			if len(b) < hl {
				return out, fmt.Errorf("used len %d < header", l)
			}
			want = 1
			if hl == 12 && f.features&(1<<featNetMrgRxbuf) != 0 {
				want = int(binary.LittleEndian.Uint16(b[10:]))
			}
			cur = b
		} else {
			cur = append(cur, b...)
		}
		got++
		if got == want {
			out = append(out, rxFrame{hdr: cur[:hl], data: cur[hl:], nbufs: want})
			got = 0
		}
	}
	if got != 0 {
		return out, fmt.Errorf("frame of %d buffers incomplete at %d", want, got)
	}
	return out, nil
}

func eventfd() (int, error) { return unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC) }

// packedFlags are a driver's AVAIL/USED bits for a descriptor made
// available in the lap of wrap counter wrap (§2.7.1).
func packedFlags(wrap bool) uint16 {
	if wrap {
		return pvirtqDescFAvail
	}
	return pvirtqDescFUsed
}

// postPacked makes the size bytes at off available as one buffer, split
// over lay.pieces descriptors of the ring or of an indirect table; write
// marks it device-writable. The head's flags go last.
func (r *fakeRing) postPacked(off uint64, size int, lay txLayout, write uint16) bool {
	f := r.f
	pieces := max(1, lay.pieces)
	ndesc := pieces
	if lay.indirect {
		ndesc = 1
	}
	if r.freeDescs < ndesc || len(r.ids) == 0 {
		return false
	}
	id := r.ids[len(r.ids)-1]
	r.ids = r.ids[:len(r.ids)-1]
	r.idDescs[id] = ndesc
	r.bufs[id] = off
	r.freeDescs -= ndesc
	step := (size + pieces - 1) / pieces
	head := r.availPos
	put := func(pos uint16, addr uint64, l uint32, flags uint16) {
		d := f.mem[r.desc+16*uint64(pos):]
		binary.LittleEndian.PutUint64(d, addr)
		binary.LittleEndian.PutUint32(d[8:], l)
		binary.LittleEndian.PutUint16(d[12:], id)
		if pos != head {
			binary.LittleEndian.PutUint16(d[14:], flags)
		}
	}
	advance := func() {
		r.availPos++
		if int(r.availPos) == r.num {
			r.availPos, r.availWrap = 0, !r.availWrap
		}
	}
	var headFlags uint16
	if lay.indirect {
		toff := f.allocData(uint64(16 * pieces))
		t := f.mem[toff:]
		for i := range pieces {
			lo, hi := min(i*step, size), min((i+1)*step, size)
			putTableDesc(t, i, f.gpa(off+uint64(lo)), uint32(hi-lo), write, 0)
			binary.LittleEndian.PutUint16(t[16*i+12:], 0)
			binary.LittleEndian.PutUint16(t[16*i+14:], write)
		}
		headFlags = virtqDescFIndirect | packedFlags(r.availWrap)
		put(r.availPos, f.gpa(toff), uint32(16*pieces), headFlags)
		advance()
	} else {
		for i := range pieces {
			lo, hi := min(i*step, size), min((i+1)*step, size)
			fl := write | packedFlags(r.availWrap)
			if i < pieces-1 {
				fl |= virtqDescFNext
			}
			if i == 0 {
				headFlags = fl
			}
			put(r.availPos, f.gpa(off+uint64(lo)), uint32(hi-lo), fl)
			advance()
		}
	}
	atomic.StoreUint32((*uint32)(ptrAt(f.mem, r.desc+16*uint64(head)+12)), uint32(id)|uint32(headFlags)<<16)
	return true
}

// popPacked takes the next used buffer off a packed ring.
func (r *fakeRing) popPacked() (id uint16, l uint32, ok bool) {
	f := r.f
	w := atomic.LoadUint32((*uint32)(ptrAt(f.mem, r.desc+16*uint64(r.usedPos)+12)))
	flags := uint16(w >> 16)
	if (flags&pvirtqDescFAvail != 0) != r.usedWrap || (flags&pvirtqDescFUsed != 0) != r.usedWrap {
		return 0, 0, false
	}
	id = uint16(w)
	l = binary.LittleEndian.Uint32(f.mem[r.desc+16*uint64(r.usedPos)+8:])
	n, known := r.idDescs[id]
	if !known {
		r.f.tb.Fatalf("used buffer ID %d not out", id)
	}
	delete(r.idDescs, id)
	r.ids = append(r.ids, id)
	r.freeDescs += n
	r.usedPos += uint16(n)
	if int(r.usedPos) >= r.num {
		r.usedPos -= uint16(r.num)
		r.usedWrap = !r.usedWrap
	}
	return id, l, true
}

// packedDeviceEvent is the device's event suppression of a packed ring.
func (r *fakeRing) packedDeviceEvent() (desc, flags uint16) {
	w := atomic.LoadUint32((*uint32)(ptrAt(r.f.mem, r.used)))
	return uint16(w), uint16(w >> 16)
}

// setPackedDriverEvent sets the driver's event suppression.
func (r *fakeRing) setPackedDriverEvent(desc, flags uint16) {
	atomic.StoreUint32((*uint32)(ptrAt(r.f.mem, r.avail)), uint32(desc)|uint32(flags)<<16)
}

// putPacked writes a raw packed descriptor at pos (relative to the next
// available position) without its AVAIL/USED flags.
func (r *fakeRing) putPacked(pos uint16, addr uint64, l uint32, id, flags uint16) {
	at := (int(r.availPos) + int(pos)) % r.num
	d := r.f.mem[r.desc+16*uint64(at):]
	binary.LittleEndian.PutUint64(d, addr)
	binary.LittleEndian.PutUint32(d[8:], l)
	binary.LittleEndian.PutUint16(d[12:], id)
	binary.LittleEndian.PutUint16(d[14:], flags)
}

// makeAvailPacked makes the n descriptors written by putPacked available
// as buffer id, head last.
func (r *fakeRing) makeAvailPacked(n int, id uint16) {
	head := r.availPos
	var headFlags uint16
	for i := range n {
		at := r.desc + 16*uint64(r.availPos)
		fl := binary.LittleEndian.Uint16(r.f.mem[at+14:]) | packedFlags(r.availWrap)
		if i == 0 {
			headFlags = fl
		} else {
			binary.LittleEndian.PutUint16(r.f.mem[at+14:], fl)
		}
		r.availPos++
		if int(r.availPos) == r.num {
			r.availPos, r.availWrap = 0, !r.availWrap
		}
	}
	for j := len(r.ids) - 1; j >= 0; j-- {
		if r.ids[j] == id {
			r.ids = append(r.ids[:j], r.ids[j+1:]...)
		}
	}
	r.idDescs[id] = n
	r.freeDescs -= n
	atomic.StoreUint32((*uint32)(ptrAt(r.f.mem, r.desc+16*uint64(head)+12)), uint32(id)|uint32(headFlags)<<16)
}
