package vhostuser

import (
	"fmt"
	"net"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// memRegion is one mapped region of the front-end's memory.
type memRegion struct {
	guestAddr uint64 // guest physical address of data[0]
	userAddr  uint64 // front-end virtual address of data[0], what SET_VRING_ADDR uses
	size      uint64
	data      []byte // the region: mapping[mmapOffset:][:size]
	mapping   []byte // the whole mmap, for munmap
}

// memTable is the front-end's memory as SET_MEM_TABLE described it. It is
// immutable once built. refs counts its users: the device holding it as
// current, and each zero-copy packet tail still pointing into it; the last
// unref unmaps it, so a tail stays readable after the front-end changed or
// dropped its memory.
type memTable struct {
	regions []memRegion
	refs    atomic.Int64
	conn    *net.UnixConn // the connection it came with, to drop on a fault
}

// guest returns the n bytes at guest physical address addr, or nil if they
// are not all within one region. hint is the caller's cache of the region
// the last lookup hit.
func (m *memTable) guest(addr, n uint64, hint *int) []byte {
	rs := m.regions
	if i := *hint; i < len(rs) {
		r := &rs[i]
		if addr-r.guestAddr < r.size && n <= r.size-(addr-r.guestAddr) {
			off := addr - r.guestAddr
			return r.data[off : off+n : off+n]
		}
	}
	for i := range rs {
		r := &rs[i]
		if addr >= r.guestAddr && addr-r.guestAddr < r.size && n <= r.size-(addr-r.guestAddr) {
			*hint = i
			off := addr - r.guestAddr
			return r.data[off : off+n : off+n]
		}
	}
	return nil
}

// guestPrefix returns the longest prefix, at most n bytes, of the guest
// memory at addr that lies in one region; nil if addr is not mapped. A
// buffer that spans two adjacent regions is walked piece by piece.
func (m *memTable) guestPrefix(addr, n uint64, hint *int) []byte {
	if b := m.guest(addr, n, hint); b != nil {
		return b
	}
	for i := range m.regions {
		r := &m.regions[i]
		if addr >= r.guestAddr && addr-r.guestAddr < r.size {
			off := addr - r.guestAddr
			l := min(n, r.size-off)
			return r.data[off : off+l : off+l]
		}
	}
	return nil
}

// user returns the n bytes at front-end virtual address addr, or nil.
func (m *memTable) user(addr, n uint64) []byte {
	for i := range m.regions {
		r := &m.regions[i]
		if addr >= r.userAddr && addr-r.userAddr < r.size && n <= r.size-(addr-r.userAddr) {
			off := addr - r.userAddr
			return r.data[off : off+n : off+n]
		}
	}
	return nil
}

func (m *memTable) ref() { m.refs.Add(1) }

func (m *memTable) unref() {
	if m.refs.Add(-1) == 0 {
		for _, r := range m.regions {
			unix.Munmap(r.mapping)
		}
		m.regions = nil
	}
}

// mapMemTable maps the regions, fds[i] holding region i at its mmap
// offset. The fds are not closed. A file shorter than a region claims is
// refused: touching a mapping past the end of its file raises SIGBUS.
func mapMemTable(regions []vhostMemoryRegion, fds []int) (*memTable, error) {
	m := &memTable{regions: make([]memRegion, 0, len(regions))}
	m.refs.Store(1)
	fail := func(err error) (*memTable, error) {
		m.unref()
		return nil, err
	}
	for i, r := range regions {
		var st unix.Stat_t
		if err := unix.Fstat(fds[i], &st); err != nil {
			return fail(fmt.Errorf("region %d: fstat: %w", i, err))
		}
		end := r.mmapOffset + r.size
		if st.Mode&unix.S_IFMT != unix.S_IFREG || uint64(st.Size) < end {
			return fail(fmt.Errorf("region %d: file of %d bytes (mode %o) for %d bytes at offset %d",
				i, st.Size, st.Mode, r.size, r.mmapOffset))
		}
		// hugetlbfs needs whole huge pages (its st_blksize) to unmap.
		align := uint64(max(st.Blksize, int64(unix.Getpagesize())))
		length := (end + align - 1) &^ (align - 1)
		if length > 1<<46 || int(length) < 0 {
			return fail(fmt.Errorf("region %d: %d bytes", i, length))
		}
		b, err := unix.Mmap(fds[i], 0, int(length), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_NORESERVE)
		if err != nil {
			return fail(fmt.Errorf("region %d: mmap %d bytes: %w", i, length, err))
		}
		m.regions = append(m.regions, memRegion{
			guestAddr: r.guestAddr,
			userAddr:  r.userAddr,
			size:      r.size,
			data:      b[r.mmapOffset:end:end],
			mapping:   b,
		})
	}
	return m, nil
}
