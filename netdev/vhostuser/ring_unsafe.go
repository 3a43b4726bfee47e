package vhostuser

import (
	"sync/atomic"
	"unsafe"
)

// The driver and the device share the split ring's indexes across
// processes; the ones that order other accesses (avail->idx read by the
// device, used->idx written by it) go through 32-bit atomics on the aligned
// word that holds them, Go having no 16-bit atomics. The words stay within
// the ring: avail is 2-aligned and at least 8 bytes long, so the word
// holding avail->idx starts at offset 0 or 2; used is 4-aligned and its
// first word is used->flags and used->idx, both written by the device only.

// wordAt returns the aligned 32-bit word that holds the 16-bit field at
// b[off:off+2], and the shift that extracts the field from it.
func wordAt(b []byte, off int) (*uint32, uint) {
	p := uintptr(unsafe.Pointer(&b[off]))
	if p&3 == 0 {
		_ = b[off+3]
		return (*uint32)(unsafe.Pointer(&b[off])), 0
	}
	_ = b[off-2]
	return (*uint32)(unsafe.Pointer(&b[off-2])), 16
}

// aligned reports whether b starts at a multiple of n bytes.
func aligned(b []byte, n uintptr) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))&(n-1) == 0
}

// loadAcquire16 reads the 16-bit field through its word.
func loadAcquire16(w *uint32, shift uint) uint16 {
	return uint16(atomic.LoadUint32(w) >> shift)
}

// storeUsedHeader writes used->flags and used->idx at once, releasing the
// used elements written before it.
func storeUsedHeader(w *uint32, flags, idx uint16) {
	atomic.StoreUint32(w, uint32(flags)|uint32(idx)<<16)
}

// loadDescIDFlags reads a packed descriptor's id and flags, which share
// the aligned word at offset 12, with acquire ordering.
func loadDescIDFlags(desc []byte, i int) (id, flags uint16) {
	w := atomic.LoadUint32((*uint32)(unsafe.Pointer(&desc[i*16+12])))
	return uint16(w), uint16(w >> 16)
}

// storeDescIDFlags writes a packed descriptor's id and flags at once,
// releasing what was written to the descriptor before.
func storeDescIDFlags(desc []byte, i int, id, flags uint16) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&desc[i*16+12])), uint32(id)|uint32(flags)<<16)
}

func loadEventSuppress(w *uint32) (desc, flags uint16) {
	v := atomic.LoadUint32(w)
	return uint16(v), uint16(v >> 16)
}

func storeEventSuppress(w *uint32, desc, flags uint16) {
	atomic.StoreUint32(w, uint32(desc)|uint32(flags)<<16)
}
