package vhostuser

import "encoding/binary"

// Packed virtqueue, virtio 1.1 §2.7 (all fields little-endian): one ring
// of
//
//	struct pvirtq_desc { le64 addr; le32 len; le16 id; le16 flags; };        §2.7.13
//
// that the driver makes available and the device marks used in place, with
// wrap counters telling the laps apart, and two
//
//	struct pvirtq_event_suppress { le16 desc; le16 flags; };                 §2.7.14
//
// at the addresses SET_VRING_ADDR gives as avail (the driver's) and used
// (the device's).
const (
	pvirtqDescFAvail = 1 << 7  // VIRTQ_DESC_F_AVAIL
	pvirtqDescFUsed  = 1 << 15 // VIRTQ_DESC_F_USED

	ringEventFlagsEnable  = 0x0 // RING_EVENT_FLAGS_ENABLE
	ringEventFlagsDisable = 0x1 // RING_EVENT_FLAGS_DISABLE
	ringEventFlagsDesc    = 0x2 // RING_EVENT_FLAGS_DESC: notify at desc (with EVENT_IDX)

	// packedWrapBit is the wrap counter in an event's desc field and in
	// the base of SET_VRING_BASE/GET_VRING_BASE (vhost-user.rst "Ring
	// states": bits 0-14 the index, bit 15 the wrap counter).
	packedWrapBit = 1 << 15
)

// packedUsed is a used descriptor waiting for publish.
type packedUsed struct {
	id   uint16
	len  uint32
	pos  uint16
	wrap bool
}

func (q *vring) remapPacked() error {
	desc := q.mem.user(q.addr.desc, uint64(q.num)*virtqDescLen)
	drv := q.mem.user(q.addr.avail, 4)
	dev := q.mem.user(q.addr.used, 4)
	if desc == nil || drv == nil || dev == nil || !aligned(desc, 16) || !aligned(drv, 4) || !aligned(dev, 4) {
		q.desc, q.avail, q.used, q.drvEvent, q.devEvent = nil, nil, nil, nil, nil
		return errRingAddr
	}
	q.desc, q.avail, q.used = desc, drv, dev
	q.drvEvent, _ = wordAt(drv, 0)
	q.devEvent, _ = wordAt(dev, 0)
	return nil
}

// startPacked positions the ring at its base, as DPDK's vhost library
// does: the used position starts where the avail one does.
func (q *vring) startPacked() error {
	idx := q.base &^ packedWrapBit
	if uint32(idx) >= q.num {
		q.desc = nil
		return errRingAddr
	}
	q.lastAvail, q.availWrap = idx, q.base&packedWrapBit != 0
	q.usedIdx, q.usedWrap = q.lastAvail, q.availWrap
	q.signalled, q.signalledValid = q.usedIdx, false
	if cap(q.pending) < int(q.num) {
		q.pending = make([]packedUsed, 0, q.num)
	}
	q.pending = q.pending[:0]
	q.notifyOn = true
	if q.tx {
		q.enableNotifyPacked()
		q.zc.init(int(q.num))
	} else {
		storeEventSuppress(q.devEvent, 0, ringEventFlagsDisable)
	}
	return nil
}

// packedAvail reports whether the descriptor at lastAvail is available:
// its AVAIL flag matches the driver's wrap counter and USED does not
// (§2.7.1). The acquire orders the reads of the chain after it.
func (q *vring) packedAvail() bool {
	_, flags := loadDescIDFlags(q.desc, int(q.lastAvail))
	return (flags&pvirtqDescFAvail != 0) == q.availWrap && (flags&pvirtqDescFUsed != 0) != q.availWrap
}

func (q *vring) enableNotifyPacked() {
	if q.eventIdx {
		off := q.lastAvail
		if q.availWrap {
			off |= packedWrapBit
		}
		storeEventSuppress(q.devEvent, off, ringEventFlagsDesc)
	} else {
		storeEventSuppress(q.devEvent, 0, ringEventFlagsEnable)
	}
}

// publishPacked writes the pending used descriptors, each with its flags
// last (§2.7.8), and signals the guest as its event suppression asks.
func (q *vring) publishPacked() {
	if len(q.pending) == 0 {
		return
	}
	for _, u := range q.pending {
		d := q.desc[int(u.pos)*virtqDescLen:]
		binary.LittleEndian.PutUint32(d[8:], u.len)
		var flags uint16
		if u.wrap {
			flags = pvirtqDescFAvail | pvirtqDescFUsed
		}
		storeDescIDFlags(q.desc, int(u.pos), u.id, flags)
	}
	q.pending = q.pending[:0]
	if q.call < 0 {
		return
	}
	q.fence()
	old, now := q.signalled, q.usedIdx
	valid := q.signalledValid
	q.signalled, q.signalledValid = now, true
	off, flags := loadEventSuppress(q.drvEvent)
	switch flags {
	case ringEventFlagsDisable:
		return
	case ringEventFlagsDesc:
		if !valid {
			break
		}
		// vhost_vring_call_packed in DPDK: positions are taken back a
		// lap where the counters differ.
		ev := off &^ packedWrapBit
		if now <= old {
			old -= uint16(q.num)
		}
		if (off&packedWrapBit != 0) != q.usedWrap {
			ev -= uint16(q.num)
		}
		if now-ev-1 >= now-old {
			return
		}
	}
	signalEventfd(q.call)
}
