package vhostuser

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/govs/govs/datapath/packet"
)

// A port with no connection, for driving rings and the message handler
// directly.
func newIdlePort(tb testing.TB) *Port {
	p, err := newPort("fuzz", "", false, DefaultConfig())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		p.cmu.Lock()
		p.resetDeviceLocked()
		p.cmu.Unlock()
		p.closeFiles()
	})
	return p
}

// The descriptor fuzz target's guest: one region of fuzzMem bytes at
// guest (and front-end) address fuzzBase, a 16-entry ring at its start
// (descriptors at 0, avail at 256, used at 512), the rest whatever the
// input says.
const (
	fuzzBase = 0x10000
	fuzzMem  = 1 << 14
	fuzzNum  = 16
)

func fuzzRing(p *Port, index int, m *memTable, features uint64) *vring {
	q := &vring{}
	q.init(p, index)
	q.mem, q.num = m, fuzzNum
	q.addr = vhostVringAddr{index: uint32(index), desc: fuzzBase, avail: fuzzBase + 256, used: fuzzBase + 512}
	q.addrSet, q.started, q.enabled = true, true, true
	q.setFeatures(features)
	return q
}

func FuzzDescriptors(f *testing.F) {
	for _, s := range descSeeds() {
		f.Add(s)
	}
	p := newIdlePort(f)
	pkts := newPkts(8)
	out := packet.New()
	out.SetData(udpFrame(3000, 1))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 1 {
			return
		}
		features := uint64(allFeatures)
		if in[0]&1 != 0 {
			features &^= 1 << featNetMrgRxbuf
		}
		if in[0]&2 != 0 {
			features &^= 1 << featRingIndirect
		}
		if in[0]&4 != 0 {
			features &^= 1 << featVersion1
		}
		if in[0]&8 != 0 {
			features |= 1 << featRingPacked
		}
		for pass := range 3 {
			mem := make([]byte, fuzzMem)
			copy(mem, in[1:])
			m := &memTable{regions: []memRegion{{guestAddr: fuzzBase, userAddr: fuzzBase, size: fuzzMem, data: mem}}}
			m.refs.Store(1)
			q := fuzzRing(p, 1-pass%2, m, features)
			if in[0]&16 == 0 && q.packed {
				q.base = packedWrapBit
			}
			q.mu.Lock()
			if err := q.tryStartLocked(); err != nil {
				t.Fatal(err)
			}
			start := q.lastAvail
			var st batchStats
			switch pass {
			case 0:
				q.dequeue(pkts, false, &st)
			case 1:
				q.enqueue(make([]byte, q.hdrLen), out.Data(), nil)
				q.enqueue(make([]byte, q.hdrLen), out.Data()[:60], out.Data()[60:200])
				q.publish()
			case 2:
				n := q.dequeue(pkts, true, &st)
				for _, pk := range pkts[:n] {
					if pk.Len() > packet.MaxFrame || pk.Ext() != nil && len(pk.Head()) != zcHeadLen {
						t.Fatalf("zero-copy frame of %d bytes, %d in its head", pk.Len(), len(pk.Head()))
					}
				}
				resetAll(pkts)
				q.reclaimLocked()
			}
			if q.packed {
				if uint32(q.lastAvail) >= q.num || uint32(q.usedIdx) >= q.num {
					t.Fatalf("packed positions %d, %d in a ring of %d", q.lastAvail, q.usedIdx, q.num)
				}
			} else if d := q.lastAvail - start; uint32(d) > q.num {
				t.Fatalf("took %d entries from a ring of %d", d, q.num)
			}
			if st.rxPackets+st.rxErrors > len(pkts) {
				t.Fatalf("%d frames from a batch of %d", st.rxPackets+st.rxErrors, len(pkts))
			}
			q.mu.Unlock()
		}
	})
}

// descSeeds are well-formed rings: a frame in one descriptor, in a chain,
// in an indirect table, and receive buffers.
func descSeeds() [][]byte {
	var seeds [][]byte
	img := func(flags byte, build func(mem []byte)) {
		mem := make([]byte, 4096)
		build(mem)
		seeds = append(seeds, append([]byte{flags}, mem...))
	}
	desc := func(mem []byte, i int, addr uint64, l uint32, fl, next uint16) {
		putTableDesc(mem, i, addr, l, fl, next)
	}
	avail := func(mem []byte, heads ...uint16) {
		for i, h := range heads {
			binary.LittleEndian.PutUint16(mem[256+4+2*i:], h)
		}
		binary.LittleEndian.PutUint16(mem[256+2:], uint16(len(heads)))
	}
	frame := append(make([]byte, 12), udpFrame(200, 1)...)
	img(0, func(mem []byte) {
		copy(mem[1024:], frame)
		desc(mem, 0, fuzzBase+1024, uint32(len(frame)), 0, 0)
		avail(mem, 0)
	})
	img(0, func(mem []byte) {
		copy(mem[1024:], frame)
		desc(mem, 0, fuzzBase+1024, 12, virtqDescFNext, 1)
		desc(mem, 1, fuzzBase+1036, 100, virtqDescFNext, 2)
		desc(mem, 2, fuzzBase+1136, uint32(len(frame)-112), 0, 0)
		avail(mem, 0)
	})
	img(0, func(mem []byte) {
		copy(mem[1024:], frame)
		desc(mem[768:], 0, fuzzBase+1024, 40, virtqDescFNext, 1)
		desc(mem[768:], 1, fuzzBase+1064, uint32(len(frame)-40), 0, 0)
		desc(mem, 3, fuzzBase+768, 32, virtqDescFIndirect, 0)
		avail(mem, 3)
	})
	img(1, func(mem []byte) {
		for i := range 4 {
			desc(mem, i, fuzzBase+1024+uint64(i)*700, 700, virtqDescFWrite, 0)
		}
		avail(mem, 0, 1, 2, 3)
	})
	img(0, func(mem []byte) {
		desc(mem[768:], 0, fuzzBase+1024, 1500, virtqDescFWrite|virtqDescFNext, 1)
		desc(mem[768:], 1, fuzzBase+2524, 1500, virtqDescFWrite, 0)
		desc(mem, 5, fuzzBase+768, 32, virtqDescFIndirect, 0)
		avail(mem, 5)
	})
	// Packed: a frame in a chain of two, and receive buffers (AVAIL set,
	// USED clear: the first lap).
	pdesc := func(mem []byte, i int, addr uint64, l uint32, id, fl uint16) {
		putTableDesc(mem, i, addr, l, 0, 0)
		binary.LittleEndian.PutUint16(mem[16*i+12:], id)
		binary.LittleEndian.PutUint16(mem[16*i+14:], fl|pvirtqDescFAvail)
	}
	img(8, func(mem []byte) {
		copy(mem[1024:], frame)
		pdesc(mem, 0, fuzzBase+1024, 20, 3, virtqDescFNext)
		pdesc(mem, 1, fuzzBase+1044, uint32(len(frame)-20), 3, 0)
		pdesc(mem, 2, fuzzBase+1024, uint32(len(frame)), 4, 0)
	})
	img(8, func(mem []byte) {
		for i := range 3 {
			pdesc(mem, i, fuzzBase+1024+uint64(i)*1000, 1000, uint16(i), virtqDescFWrite)
		}
	})
	img(8, func(mem []byte) {
		copy(mem[1024:], frame)
		desc(mem[768:], 0, fuzzBase+1024, 30, 0, 0)
		desc(mem[768:], 1, fuzzBase+1054, uint32(len(frame)-30), 0, 0)
		pdesc(mem, 0, fuzzBase+768, 32, 9, virtqDescFIndirect)
	})
	return seeds
}

func FuzzProtocol(f *testing.F) {
	for _, s := range protocolSeeds() {
		f.Add(s)
	}
	memfd, err := unix.MemfdCreate("fuzz", unix.MFD_CLOEXEC)
	if err != nil {
		f.Fatal(err)
	}
	defer unix.Close(memfd)
	unix.Ftruncate(memfd, 1<<20)
	evfd, err := eventfd()
	if err != nil {
		f.Fatal(err)
	}
	defer unix.Close(evfd)
	p := newIdlePort(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		defer func() {
			p.cmu.Lock()
			p.resetDeviceLocked()
			p.cmu.Unlock()
		}()
		for len(in) >= hdrLen {
			h, err := parseHeader(in)
			if err != nil {
				return
			}
			in = in[hdrLen:]
			n := min(int(h.size), len(in))
			m := &message{hdr: h, payload: in[:n]}
			in = in[n:]
			// Give the messages that carry descriptors what they
			// ask for: the guest's memory, or an eventfd.
			var want int
			var src int
			switch h.request {
			case reqSetMemTable:
				if len(m.payload) >= 4 {
					want, src = min(int(binary.LittleEndian.Uint32(m.payload)), maxFds), memfd
				}
			case reqSetVringKick, reqSetVringCall, reqSetVringErr:
				if len(m.payload) == 8 && m.payload[1]&1 == 0 {
					want, src = 1, evfd
				}
			}
			for range want {
				fd, err := unix.Dup(src)
				if err != nil {
					t.Fatal(err)
				}
				m.fds = append(m.fds, fd)
			}
			if _, err := p.handle(m); err != nil {
				return
			}
		}
	})
}

// protocolSeeds are the start-up sequence of a front-end, whole and in
// variants.
func protocolSeeds() [][]byte {
	msg := func(b []byte, req request, payload []byte) []byte {
		h := make([]byte, hdrLen)
		putHeader(h, req, flagVersion, len(payload))
		return append(append(b, h...), payload...)
	}
	table := binary.LittleEndian.AppendUint64(nil, 1)
	table = binary.LittleEndian.AppendUint64(table, 0)     // guest address
	table = binary.LittleEndian.AppendUint64(table, 1<<20) // size
	table = binary.LittleEndian.AppendUint64(table, 1<<30) // user address
	table = binary.LittleEndian.AppendUint64(table, 0)     // mmap offset
	addr := func(i uint32) []byte {
		b := binary.LittleEndian.AppendUint32(nil, i)
		b = binary.LittleEndian.AppendUint32(b, 0)
		b = binary.LittleEndian.AppendUint64(b, 1<<30+uint64(i)*0x4000)
		b = binary.LittleEndian.AppendUint64(b, 1<<30+uint64(i)*0x4000+0x2000)
		b = binary.LittleEndian.AppendUint64(b, 1<<30+uint64(i)*0x4000+0x1000)
		return binary.LittleEndian.AppendUint64(b, 0)
	}
	start := func(features uint64) []byte {
		var b []byte
		b = msg(b, reqSetOwner, nil)
		b = msg(b, reqGetFeatures, nil)
		b = msg(b, reqGetProtocolFeatures, nil)
		b = msg(b, reqSetProtocolFeatures, u64(backendProtocolFeatures))
		b = msg(b, reqGetQueueNum, nil)
		b = msg(b, reqSetFeatures, u64(features))
		b = msg(b, reqSetMemTable, table)
		for i := range uint32(2) {
			b = msg(b, reqSetVringNum, vringState(i, 256))
			b = msg(b, reqSetVringBase, vringState(i, 0))
			b = msg(b, reqSetVringAddr, addr(i))
			b = msg(b, reqSetVringKick, u64(uint64(i)))
			b = msg(b, reqSetVringCall, u64(uint64(i)))
			b = msg(b, reqSetVringEnable, vringState(i, 1))
		}
		return b
	}
	full := start(allFeatures)
	b := msg(nil, reqGetVringBase, vringState(0, 0))
	b = msg(b, reqGetVringBase, vringState(1, 0))
	b = msg(b, reqResetOwner, nil)
	stop := append(append([]byte(nil), full...), b...)
	nofd := msg(nil, reqSetVringKick, u64(vringFdInvalid))
	return [][]byte{full, stop, append(append([]byte(nil), full[:len(full)/2]...), nofd...), start(packedFeatures)}
}
