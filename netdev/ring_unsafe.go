//go:build linux

package netdev

import (
	"sync/atomic"
	"unsafe"
)

// ringStatus returns the tp_status word at the start of a ring frame f (a
// slice of the mmap'd ring, 16-byte aligned), which the kernel and the
// reader hand each other the frame with.
func ringStatus(f []byte) *uint32 { return (*uint32)(unsafe.Pointer(&f[0])) }

// ringLoadStatus reads a frame's tp_status with acquire ordering: the
// kernel writes the frame, then (after smp_wmb) the status, so the frame's
// contents are complete once TP_STATUS_USER is seen.
func ringLoadStatus(f []byte) uint32 { return atomic.LoadUint32(ringStatus(f)) }

// ringRelease hands a frame back to the kernel (TP_STATUS_KERNEL) once it
// has been copied out; the atomic store orders the copy before it.
func ringRelease(f []byte) { atomic.StoreUint32(ringStatus(f), 0) }

// ringSetStatus hands a send ring frame to the kernel; the atomic store
// orders the frame's contents before it.
func ringSetStatus(f []byte, v uint32) { atomic.StoreUint32(ringStatus(f), v) }
