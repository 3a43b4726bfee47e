//go:build linux

package netdev

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// xskRing is one of an AF_XDP socket's four rings, mapped from the kernel:
// a producer and a consumer index (free-running u32s), a flags word and a
// power-of-two array of entries (struct xdp_desc for rx and tx, a u64
// UMEM address for fill and completion; include/uapi/linux/if_xdp.h).
// Each ring has one user-space side: govs produces into fill and tx and
// consumes rx and completion, the kernel the other way round.
type xskRing struct {
	mem         []byte
	prod, cons  *uint32
	flags       *uint32
	ents        unsafe.Pointer
	mask        uint32
	cachedProd  uint32 // producer rings: entries written, not yet published
	cachedCons  uint32 // consumer rings: entries read, not yet released
	entrySize   uintptr
	descriptors bool
}

// mapXskRing maps the ring of n entries at page offset pgoff of fd with
// the offsets the kernel gave (XDP_MMAP_OFFSETS).
func mapXskRing(fd int, off unix.XDPRingOffset, n uint32, pgoff int64, desc bool) (*xskRing, error) {
	es := uintptr(8)
	if desc {
		es = unsafe.Sizeof(unix.XDPDesc{})
	}
	mem, err := unix.Mmap(fd, pgoff, int(off.Desc)+int(n)*int(es), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mmap ring: %w", err)
	}
	base := unsafe.Pointer(&mem[0])
	r := &xskRing{
		mem:  mem,
		prod: (*uint32)(unsafe.Add(base, off.Producer)), cons: (*uint32)(unsafe.Add(base, off.Consumer)),
		flags: (*uint32)(unsafe.Add(base, off.Flags)), ents: unsafe.Add(base, off.Desc),
		mask: n - 1, entrySize: es, descriptors: desc,
	}
	r.cachedProd = atomic.LoadUint32(r.prod)
	r.cachedCons = atomic.LoadUint32(r.cons)
	return r, nil
}

func (r *xskRing) unmap() {
	if r != nil && r.mem != nil {
		unix.Munmap(r.mem)
		r.mem = nil
	}
}

func (r *xskRing) addr(i uint32) *uint64 {
	return (*uint64)(unsafe.Add(r.ents, uintptr(i&r.mask)*r.entrySize))
}

func (r *xskRing) desc(i uint32) *unix.XDPDesc {
	return (*unix.XDPDesc)(unsafe.Add(r.ents, uintptr(i&r.mask)*r.entrySize))
}

// free returns how many entries a producer may write (acquire: the
// kernel's reads of entries it released happened before).
func (r *xskRing) free() uint32 {
	return r.mask + 1 - (r.cachedProd - atomic.LoadUint32(r.cons))
}

// submit publishes the entries written since the last submit (release:
// they are complete before the kernel sees the index move).
func (r *xskRing) submit() { atomic.StoreUint32(r.prod, r.cachedProd) }

// ready returns how many entries a consumer may read.
func (r *xskRing) ready() uint32 { return atomic.LoadUint32(r.prod) - r.cachedCons }

// release gives the entries read since the last release back.
func (r *xskRing) release() { atomic.StoreUint32(r.cons, r.cachedCons) }

// pending reports whether the kernel has not consumed everything produced.
func (r *xskRing) pending() bool { return atomic.LoadUint32(r.cons) != r.cachedProd }

func (r *xskRing) needWakeup() bool {
	return atomic.LoadUint32(r.flags)&unix.XDP_RING_NEED_WAKEUP != 0
}

func xdpMmapOffsets(fd int) (unix.XDPMmapOffsets, error) {
	var off unix.XDPMmapOffsets
	if err := getsockoptXDP(fd, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), unsafe.Sizeof(off)); err != nil {
		return off, fmt.Errorf("XDP_MMAP_OFFSETS: %w", err)
	}
	return off, nil
}

func xdpStatistics(fd int) (unix.XDPStatistics, error) {
	var st unix.XDPStatistics
	return st, getsockoptXDP(fd, unix.XDP_STATISTICS, unsafe.Pointer(&st), unsafe.Sizeof(st))
}

// getsockoptXDP reads the SOL_XDP option opt, a struct of size bytes, into v.
func getsockoptXDP(fd, opt int, v unsafe.Pointer, size uintptr) error {
	l := uint32(size)
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(v), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return e
	}
	return nil
}

func xdpUmemReg(fd int, umem []byte, frameSize int) error {
	reg := unix.XDPUmemReg{Addr: uint64(uintptr(unsafe.Pointer(&umem[0]))), Len: uint64(len(umem)), Size: uint32(frameSize)}
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_UMEM_REG,
		uintptr(unsafe.Pointer(&reg)), unsafe.Sizeof(reg), 0)
	if e != 0 {
		return fmt.Errorf("XDP_UMEM_REG: %w", e)
	}
	return nil
}

// The bpf(2) attributes govs uses (union bpf_attr, include/uapi/linux/bpf.h),
// each the leading part of its command's struct.
type bpfMapCreateAttr struct {
	mapType, keySize, valueSize, maxEntries, mapFlags uint32
}

// Its __aligned_u64 pointers are unsafe.Pointer fields, so that the garbage
// collector and the stack copier see them (as cilium/ebpf's sys.Pointer);
// that layout holds on 64-bit platforms only, which OpenAFXDP checks.
type bpfMapElemAttr struct {
	mapFd uint32
	_     uint32
	key   unsafe.Pointer
	value unsafe.Pointer
	flags uint64
}

type bpfProgLoadAttr struct {
	progType    uint32
	insnCnt     uint32
	insns       unsafe.Pointer
	license     unsafe.Pointer
	logLevel    uint32
	logSize     uint32
	logBuf      unsafe.Pointer
	kernVersion uint32
	progFlags   uint32
}

// ptrIs64 is whether bpf_attr's pointer fields are unsafe.Pointers' size.
const ptrIs64 = unsafe.Sizeof(uintptr(0)) == 8

// bpfInsn is struct bpf_insn: opcode, dst_reg:4 | src_reg:4, off, imm.
type bpfInsn struct {
	code uint8
	regs uint8
	off  int16
	imm  int32
}

func bpf(cmd int, attr unsafe.Pointer, size uintptr) (int, error) {
	r, _, e := unix.Syscall(unix.SYS_BPF, uintptr(cmd), uintptr(attr), size)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// newXskMap creates a BPF_MAP_TYPE_XSKMAP of n entries: queue index ->
// AF_XDP socket.
func newXskMap(n int) (int, error) {
	attr := bpfMapCreateAttr{mapType: unix.BPF_MAP_TYPE_XSKMAP, keySize: 4, valueSize: 4, maxEntries: uint32(n)}
	fd, err := bpf(unix.BPF_MAP_CREATE, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	if err != nil {
		return -1, fmt.Errorf("bpf BPF_MAP_CREATE xskmap: %w", err)
	}
	unix.CloseOnExec(fd)
	return fd, nil
}

// xskMapSet puts the socket xsk at index queue of the map.
func xskMapSet(mapFd, queue, xsk int) error {
	k, v := uint32(queue), uint32(xsk)
	attr := bpfMapElemAttr{mapFd: uint32(mapFd), key: unsafe.Pointer(&k), value: unsafe.Pointer(&v)}
	if _, err := bpf(unix.BPF_MAP_UPDATE_ELEM, unsafe.Pointer(&attr), unsafe.Sizeof(attr)); err != nil {
		return fmt.Errorf("bpf BPF_MAP_UPDATE_ELEM xskmap[%d]: %w", queue, err)
	}
	return nil
}

// loadXskProg loads govs' XDP program: redirect each frame to the socket
// the xskmap mapFd holds for the frame's rx_queue_index, XDP_PASS (to the
// kernel's stack) if there is none:
//
//	r2 = *(u32 *)(r1 + offsetof(struct xdp_md, rx_queue_index))
//	r1 = map_fd                 // ld_imm64, src BPF_PSEUDO_MAP_FD
//	r3 = XDP_PASS               // bpf_redirect_map's action on a miss (Linux 5.3)
//	call bpf_redirect_map
//	exit
func loadXskProg(mapFd int) (int, error) {
	const (
		ldxW     = unix.BPF_LDX | unix.BPF_MEM | unix.BPF_W
		ldImm64  = unix.BPF_LD | unix.BPF_IMM | unix.BPF_DW
		movK     = unix.BPF_ALU64 | unix.BPF_MOV | unix.BPF_K
		call     = unix.BPF_JMP | unix.BPF_CALL
		exit     = unix.BPF_JMP | unix.BPF_EXIT
		pseudoFd = 1  // BPF_PSEUDO_MAP_FD
		rxQueue  = 16 // offsetof(struct xdp_md, rx_queue_index)
		xdpPass  = 2
		redirMap = 51 // BPF_FUNC_redirect_map
	)
	insns := [...]bpfInsn{
		{code: ldxW, regs: 1<<4 | 2, off: rxQueue},
		{code: ldImm64, regs: pseudoFd<<4 | 1, imm: int32(mapFd)},
		{},
		{code: movK, regs: 3, imm: xdpPass},
		{code: call, imm: redirMap},
		{code: exit},
	}
	license := []byte("GPL\x00") // bpf_redirect_map is GPL-only
	logBuf := make([]byte, 4096)
	attr := bpfProgLoadAttr{
		progType: unix.BPF_PROG_TYPE_XDP, insnCnt: uint32(len(insns)),
		insns:    unsafe.Pointer(&insns[0]),
		license:  unsafe.Pointer(&license[0]),
		logLevel: 1, logSize: uint32(len(logBuf)), logBuf: unsafe.Pointer(&logBuf[0]),
	}
	fd, err := bpf(unix.BPF_PROG_LOAD, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	if err != nil {
		msg := string(logBuf[:clen(logBuf)])
		return -1, fmt.Errorf("bpf BPF_PROG_LOAD: %w: %s", err, msg)
	}
	unix.CloseOnExec(fd)
	return fd, nil
}

func clen(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}
