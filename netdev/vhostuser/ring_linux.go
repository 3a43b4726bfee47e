package vhostuser

import (
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Split virtqueue layout, virtio 1.1 §2.6 (all fields little-endian):
//
//	struct virtq_desc  { le64 addr; le32 len; le16 flags; le16 next; };            §2.6.5
//	struct virtq_avail { le16 flags; le16 idx; le16 ring[num]; le16 used_event; }; §2.6.6
//	struct virtq_used  { le16 flags; le16 idx; struct virtq_used_elem ring[num];
//	                     le16 avail_event; };                                      §2.6.8
//	struct virtq_used_elem { le32 id; le32 len; };
const (
	virtqDescLen     = 16
	virtqUsedElemLen = 8

	virtqDescFNext     = 1 // VIRTQ_DESC_F_NEXT
	virtqDescFWrite    = 2 // VIRTQ_DESC_F_WRITE
	virtqDescFIndirect = 4 // VIRTQ_DESC_F_INDIRECT

	virtqAvailFNoInterrupt = 1 // VIRTQ_AVAIL_F_NO_INTERRUPT
	virtqUsedFNoNotify     = 1 // VIRTQ_USED_F_NO_NOTIFY

	// maxQueueSize is the largest split ring (virtio 1.1 §2.6).
	maxQueueSize = 32768
	// maxIndirect bounds an indirect table. The spec bounds a chain by
	// the queue size; Linux guests use at most MAX_SKB_FRAGS+2 entries and
	// DPDK's virtio PMD 8, so 1024 only refuses abuse.
	maxIndirect = 1024
)

var (
	errDescIndex    = errors.New("descriptor index out of the table")
	errDescLoop     = errors.New("descriptor chain longer than its table")
	errDescIndirect = errors.New("bad indirect descriptor")
	errDescAddr     = errors.New("descriptor outside guest memory")
	errDescDir      = errors.New("descriptor of the wrong direction")
	errFrameLen     = errors.New("frame length out of range")
	errAvailIdx     = errors.New("avail index moved by more than the ring size")
	errRingAddr     = errors.New("ring outside front-end memory or misaligned")
)

// vring is one virtqueue of the device: even indexes are the guest's
// receive queues (the port's Write fills them), odd ones its transmit
// queues (the port's Read drains them).
type vring struct {
	p     *Port
	index int
	tx    bool // a guest transmit queue

	// ready is true while the ring may be processed: started, enabled,
	// translated, not broken. Set under mu; the packet path reads it
	// first to skip idle rings without locking.
	ready atomic.Bool

	// mu is held by the packet path for a batch and by the control
	// goroutine to change anything below.
	mu sync.Mutex

	num     uint32
	addr    vhostVringAddr
	addrSet bool
	base    uint16
	kick    int // -1: none (polling), else in Port.epfd for tx rings
	call    int // -1: none
	errFd   int
	started bool // SET_VRING_KICK received, not stopped by GET_VRING_BASE
	enabled bool
	broken  bool
	mem     *memTable // the device's, with no reference of its own

	hdrLen   int  // virtio-net header: 12, or 10 for legacy without MRG_RXBUF
	packed   bool // VIRTIO_F_RING_PACKED
	eventIdx bool // VIRTIO_RING_F_EVENT_IDX
	indirect bool // VIRTIO_RING_F_INDIRECT_DESC
	mrg      bool // VIRTIO_NET_F_MRG_RXBUF
	features uint64

	desc, avail, used []byte // the translated ring; packed: avail and used are the event suppressions
	availWord         *uint32
	availShift        uint
	usedWord          *uint32
	mask              uint16
	lastAvail         uint16       // next avail entry to take (packed: descriptor position)
	availLeft         uint16       // split: entries known to be available past lastAvail
	usedIdx           uint16       // next used entry to fill (packed: position); published by publish
	availWrap         bool         // packed: the driver's wrap counter at lastAvail
	usedWrap          bool         // packed: the wrap counter at usedIdx
	pending           []packedUsed // packed: used descriptors not written yet
	drvEvent          *uint32      // packed: the driver's event suppression
	devEvent          *uint32      // packed: ours
	signalledValid    bool         // packed: signalled is meaningful
	pubUsed           uint16       // last used->idx written
	usedFlags         uint16
	signalled         uint16 // used->idx at the last call signal
	notifyOn          bool   // tx ring: the guest is asked to kick
	hint              int    // memTable region hint
	fenceWord         uint32

	hdrDst [12][]byte // where the header of the frame being enqueued went
	hdrN   int
	enq    enqMark

	zc zcRing // tx rings: frames dequeued in zero-copy mode
}

func (q *vring) init(p *Port, index int) {
	q.p, q.index, q.tx = p, index, index&1 == 1
	q.kick, q.call, q.errFd = -1, -1, -1
}

// resetLocked forgets everything the front-end set: the ring as it is
// after a connection.
func (q *vring) resetLocked() {
	q.stopLocked()
	q.closeFds()
	q.num, q.addr, q.addrSet, q.base = 0, vhostVringAddr{}, false, 0
	q.enabled, q.broken, q.mem = false, false, nil
}

func (q *vring) closeFds() {
	if q.kick >= 0 {
		q.p.unwatchKick(q.kick)
		unix.Close(q.kick)
		q.kick = -1
	}
	if q.call >= 0 {
		unix.Close(q.call)
		q.call = -1
	}
	if q.errFd >= 0 {
		unix.Close(q.errFd)
		q.errFd = -1
	}
}

// stopLocked stops processing; frames still out in zero-copy mode are
// waited for briefly, then orphaned.
func (q *vring) stopLocked() {
	q.ready.Store(false)
	q.started = false
	if q.tx {
		q.zcDrainLocked()
	}
	q.desc, q.avail, q.used = nil, nil, nil
	q.availWord, q.usedWord, q.drvEvent, q.devEvent = nil, nil, nil, nil
}

// txDrainWait bounds how long stopping a tx ring waits for the reader to
// take what the guest sent before it asked to stop, so that frames the
// guest counted as sent are not lost when, say, a DPDK application stops
// its port right after its last burst.
const txDrainWait = 100 * time.Millisecond

// drainLocked gives the reader up to txDrainWait to empty a tx ring.
func (q *vring) drainLocked() {
	deadline := time.Now().Add(txDrainWait)
	for q.ready.Load() && q.hasAvail() && time.Now().Before(deadline) {
		q.mu.Unlock()
		q.p.wakeReader()
		time.Sleep(200 * time.Microsecond)
		q.mu.Lock()
	}
}

// setFeatures takes the negotiated virtio features.
func (q *vring) setFeatures(f uint64) {
	q.features = f
	q.eventIdx = f&(1<<featRingEventIdx) != 0
	q.packed = f&(1<<featRingPacked) != 0
	q.indirect = f&(1<<featRingIndirect) != 0
	q.mrg = f&(1<<featNetMrgRxbuf) != 0
	q.hdrLen = 10
	if f&(1<<featNetMrgRxbuf|1<<featVersion1|1<<featRingPacked) != 0 {
		q.hdrLen = 12
	}
}

// tryStartLocked makes the ring ready if the front-end has set it up.
func (q *vring) tryStartLocked() error {
	if !q.started || !q.enabled || q.broken || q.mem == nil || !q.addrSet || q.num == 0 {
		q.ready.Store(false)
		return nil
	}
	if q.desc == nil {
		if err := q.translate(); err != nil {
			return err
		}
	}
	q.ready.Store(true)
	return nil
}

// remap maps the ring's addresses (front-end virtual addresses) in the
// current memory table.
func (q *vring) remap() error {
	if q.packed {
		return q.remapPacked()
	}
	n := uint64(q.num)
	desc := q.mem.user(q.addr.desc, n*virtqDescLen)
	avail := q.mem.user(q.addr.avail, 6+2*n)
	used := q.mem.user(q.addr.used, 6+virtqUsedElemLen*n)
	if desc == nil || avail == nil || used == nil || !aligned(desc, 16) || !aligned(avail, 2) || !aligned(used, 4) {
		q.desc, q.avail, q.used, q.availWord, q.usedWord = nil, nil, nil, nil, nil
		return errRingAddr
	}
	q.desc, q.avail, q.used = desc, avail, used
	q.availWord, q.availShift = wordAt(avail, 2)
	q.usedWord, _ = wordAt(used, 0)
	return nil
}

// translate maps the ring and positions the indexes as DPDK's vhost
// library does: entries the front-end made available but the last back-end
// never returned are taken again, from used->idx on.
func (q *vring) translate() error {
	if err := q.remap(); err != nil {
		return err
	}
	if q.packed {
		return q.startPacked()
	}
	used := q.used
	q.mask = uint16(q.num - 1)
	q.usedFlags = binary.LittleEndian.Uint16(used)
	q.usedIdx = binary.LittleEndian.Uint16(used[2:])
	q.pubUsed, q.signalled = q.usedIdx, q.usedIdx
	q.lastAvail = q.base
	if q.usedIdx != q.base {
		q.lastAvail = q.usedIdx
	}
	q.availLeft = 0
	q.notifyOn = true
	if !q.tx {
		// Fills are driven by Write, never by a kick.
		q.usedFlags |= virtqUsedFNoNotify
	} else {
		q.usedFlags &^= virtqUsedFNoNotify
		if q.eventIdx {
			binary.LittleEndian.PutUint16(q.used[4+virtqUsedElemLen*int(q.num):], q.lastAvail)
		}
	}
	storeUsedHeader(q.usedWord, q.usedFlags, q.usedIdx)
	if q.tx {
		q.zc.init(int(q.num))
	}
	return nil
}

func (q *vring) fence() { atomic.AddUint32(&q.fenceWord, 1) }

// hasAvail reports whether the guest made a chain available.
func (q *vring) hasAvail() bool {
	if q.packed {
		return q.packedAvail()
	}
	return loadAcquire16(q.availWord, q.availShift) != q.lastAvail
}

// availCount returns how many entries the guest has made available past
// lastAvail, or marks the ring broken if the guest's index is impossible.
func (q *vring) availCount() (uint16, bool) {
	n := loadAcquire16(q.availWord, q.availShift) - q.lastAvail
	if uint32(n) > q.num {
		q.failLocked(errAvailIdx)
		return 0, false
	}
	return n, true
}

func (q *vring) availHead() uint16 {
	return binary.LittleEndian.Uint16(q.avail[4+2*int(q.lastAvail&q.mask):])
}

// take starts the next chain the guest made available, positioning w at
// its head; false if there is none or the ring broke. The chain is
// finished with finish.
func (q *vring) take(w *descWalker) bool {
	if q.packed {
		if !q.packedAvail() {
			return false
		}
		*w = descWalker{table: q.desc, size: q.num, next: uint32(q.lastAvail), budget: q.num, packed: true}
		return true
	}
	if q.availLeft == 0 {
		n, ok := q.availCount()
		if !ok || n == 0 {
			return false
		}
		q.availLeft = n
	}
	head := q.availHead()
	q.lastAvail++
	q.availLeft--
	*w = descWalker{table: q.desc, size: q.num, next: uint32(head), budget: q.num, id: head}
	return true
}

// finish ends the chain taken into w, wherever its walk stopped, and
// returns the id to return it under; false if it cannot be returned (a
// split head out of the table; a packed chain whose extent is unknown,
// which breaks the ring).
func (q *vring) finish(w *descWalker) (uint16, bool) {
	if !q.packed {
		return w.id, uint32(w.id) < q.num
	}
	for w.err == nil {
		if _, _, _, ok := q.nextDesc(w); !ok {
			break
		}
	}
	if w.err != nil {
		q.failLocked(w.err)
		return 0, false
	}
	q.lastAvail += uint16(w.ringDescs)
	if uint32(q.lastAvail) >= q.num {
		q.lastAvail -= uint16(q.num)
		q.availWrap = !q.availWrap
	}
	return w.id, true
}

// pushUsed returns a chain of ndesc descriptors under id, with l bytes
// written into it; publish makes it visible.
func (q *vring) pushUsed(id uint16, l uint32, ndesc uint32) {
	if q.packed {
		q.pending = append(q.pending, packedUsed{id: id, len: l, pos: q.usedIdx, wrap: q.usedWrap})
		q.usedIdx += uint16(ndesc)
		if uint32(q.usedIdx) >= q.num {
			q.usedIdx -= uint16(q.num)
			q.usedWrap = !q.usedWrap
		}
		return
	}
	e := q.used[4+virtqUsedElemLen*int(q.usedIdx&q.mask):]
	binary.LittleEndian.PutUint32(e, uint32(id))
	binary.LittleEndian.PutUint32(e[4:], l)
	q.usedIdx++
}

// publish makes the used entries visible and signals the guest if it
// wants to be (virtio 1.1 §2.6.7.2, §2.6.10).
func (q *vring) publish() {
	if q.packed {
		q.publishPacked()
		return
	}
	if q.usedIdx == q.pubUsed {
		return
	}
	storeUsedHeader(q.usedWord, q.usedFlags, q.usedIdx)
	q.pubUsed = q.usedIdx
	if q.call < 0 {
		return
	}
	q.fence()
	if q.eventIdx {
		// vring_need_event(used_event, new, old)
		ev := binary.LittleEndian.Uint16(q.avail[4+2*int(q.num):])
		old := q.signalled
		if q.usedIdx-ev-1 >= q.usedIdx-old {
			return
		}
	} else if binary.LittleEndian.Uint16(q.avail)&virtqAvailFNoInterrupt != 0 {
		return
	}
	q.signalled = q.usedIdx
	signalEventfd(q.call)
}

// disableNotify asks the guest not to kick a tx ring while the reader is
// busy with it. With event indexes the guest kicks only when it passes
// avail_event, which stays behind until enableNotify.
func (q *vring) disableNotify() {
	q.notifyOn = false
	if q.packed {
		storeEventSuppress(q.devEvent, 0, ringEventFlagsDisable)
		return
	}
	if !q.eventIdx {
		q.usedFlags |= virtqUsedFNoNotify
		storeUsedHeader(q.usedWord, q.usedFlags, q.pubUsed)
	}
}

// enableNotify asks for a kick on the next frame and reports whether
// frames arrived meanwhile (the re-check after the barrier closes the race
// with a guest that looked at the flag before it was set).
func (q *vring) enableNotify() bool {
	if q.packed {
		q.enableNotifyPacked()
		q.notifyOn = true
		q.fence()
		return q.packedAvail()
	}
	if q.eventIdx {
		binary.LittleEndian.PutUint16(q.used[4+virtqUsedElemLen*int(q.num):], q.lastAvail)
	} else if !q.notifyOn {
		q.usedFlags &^= virtqUsedFNoNotify
		storeUsedHeader(q.usedWord, q.usedFlags, q.pubUsed)
	}
	q.notifyOn = true
	q.fence()
	return loadAcquire16(q.availWord, q.availShift) != q.lastAvail
}

// failLocked stops a ring the guest broke and has the device dropped.
func (q *vring) failLocked(err error) {
	if q.broken {
		return
	}
	q.broken = true
	q.ready.Store(false)
	q.p.ctr.ringErrors.Add(1)
	q.p.logf("vring %d: %v: dropping the device", q.index, err)
	q.p.dropConn()
}

// descWalker follows one descriptor chain, through at most one indirect
// table, reading every descriptor once (the guest may change it under us).
type descWalker struct {
	table     []byte
	size      uint32 // entries in table
	next      uint32 // next entry; walkEnd at the end
	budget    uint32 // descriptors left before the chain counts as a loop
	indirect  bool   // in an indirect table
	packed    bool   // packed layout: chains are consecutive descriptors
	id        uint16 // the chain's id: split head, packed buffer ID
	ringDescs uint32 // packed: descriptors of the ring the chain took
	err       error
}

const walkEnd = ^uint32(0)

// nextDesc returns the next buffer of the chain; ok is false at its end or
// on error (w.err).
func (q *vring) nextDesc(w *descWalker) (addr uint64, l uint32, flags uint16, ok bool) {
	for {
		i := w.next
		if i == walkEnd {
			return 0, 0, 0, false
		}
		if i >= w.size {
			w.err = errDescIndex
			return 0, 0, 0, false
		}
		if w.budget == 0 {
			w.err = errDescLoop
			return 0, 0, 0, false
		}
		w.budget--
		d := w.table[i*virtqDescLen : i*virtqDescLen+virtqDescLen]
		addr = binary.LittleEndian.Uint64(d)
		l = binary.LittleEndian.Uint32(d[8:])
		if w.packed {
			// struct pvirtq_desc { le64 addr; le32 len; le16 id; le16 flags; }
			// (virtio 1.1 §2.7.13): a chain is consecutive, wrapping;
			// an indirect table is walked whole, NEXT ignored.
			flags = binary.LittleEndian.Uint16(d[14:])
			switch {
			case w.indirect:
				w.next = i + 1
				if w.next == w.size {
					w.next = walkEnd
				}
			default:
				w.id = binary.LittleEndian.Uint16(d[12:])
				w.ringDescs++
				w.next = walkEnd
				if flags&virtqDescFNext != 0 {
					w.next = (i + 1) % w.size
				}
			}
		} else {
			flags = binary.LittleEndian.Uint16(d[12:])
			if flags&virtqDescFNext != 0 {
				w.next = uint32(binary.LittleEndian.Uint16(d[14:]))
			} else {
				w.next = walkEnd
			}
		}
		if flags&virtqDescFIndirect == 0 {
			return addr, l, flags, true
		}
		if w.indirect || !q.indirect || flags&virtqDescFNext != 0 || l == 0 ||
			l%virtqDescLen != 0 || l/virtqDescLen > maxIndirect {
			w.err = errDescIndirect
			return 0, 0, 0, false
		}
		t := q.mem.guest(addr, uint64(l), &q.hint)
		if t == nil {
			w.err = errDescAddr
			return 0, 0, 0, false
		}
		n := l / virtqDescLen
		w.table, w.size, w.next, w.budget, w.indirect = t, n, 0, n, true
	}
}
