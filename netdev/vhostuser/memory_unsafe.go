//go:build linux

package vhostuser

import "unsafe"

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
