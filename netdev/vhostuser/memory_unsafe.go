//go:build linux

package vhostuser

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// owns reports whether addr is in one of m's mappings.
func (m *memTable) owns(addr uintptr) bool {
	for _, r := range m.regions {
		base := uintptr(unsafe.Pointer(unsafe.SliceData(r.mapping)))
		if addr >= base && addr-base < uintptr(len(r.mapping)) {
			return true
		}
	}
	return false
}

// numaNode returns the NUMA node of the page holding the start of m's
// first region (get_mempolicy(2) with MPOL_F_NODE|MPOL_F_ADDR), what DPDK
// reports as a vhost device's numa; ok is false if the kernel says nothing.
func (m *memTable) numaNode() (node int, ok bool) {
	if len(m.regions) == 0 || len(m.regions[0].data) == 0 {
		return 0, false
	}
	const mpolFNode, mpolFAddr = 1, 2
	var n int32
	_, _, e := unix.Syscall6(unix.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&n)), 0, 0,
		uintptr(unsafe.Pointer(&m.regions[0].data[0])), mpolFNode|mpolFAddr, 0)
	if e != 0 || n < 0 {
		return 0, false
	}
	return int(n), true
}
