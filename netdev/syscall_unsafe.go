//go:build linux

package netdev

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// recvmmsg receives up to len(msgs) datagrams. Errors are unix.Errno
// values, which convert to error without allocating.
func recvmmsg(fd int, msgs []unix.Mmsghdr) (int, error) {
	n, _, e := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), uintptr(len(msgs)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// sendmmsg sends up to len(msgs) datagrams. It fails only if the first one
// cannot be sent; a later failure ends the batch short.
func sendmmsg(fd int, msgs []unix.Mmsghdr) (int, error) {
	n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), uintptr(len(msgs)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func readv(fd int, iovs []unix.Iovec) (int, error) {
	n, _, e := unix.Syscall(unix.SYS_READV, uintptr(fd), uintptr(unsafe.Pointer(&iovs[0])), uintptr(len(iovs)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func writev(fd int, iovs []unix.Iovec) (int, error) {
	n, _, e := unix.Syscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iovs[0])), uintptr(len(iovs)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// ethtoolCmd is struct ethtool_cmd (include/uapi/linux/ethtool.h), the
// argument of the legacy ETHTOOL_GSET, which the kernel still answers for
// every driver with get_link_ksettings.
type ethtoolCmd struct {
	Cmd           uint32
	Supported     uint32
	Advertising   uint32
	Speed         uint16
	Duplex        uint8
	Port          uint8
	PhyAddress    uint8
	Transceiver   uint8
	Autoneg       uint8
	MdioSupport   uint8
	Maxtxpkt      uint32
	Maxrxpkt      uint32
	SpeedHi       uint16
	EthTpMdix     uint8
	EthTpMdixCtrl uint8
	LpAdvertising uint32
	Reserved      [2]uint32
}

// ifreqData is struct ifreq (include/uapi/linux/if.h) with ifr_data set.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [16]byte
}

const ethtoolGSET = 0x1 // ETHTOOL_GSET

func ethtoolGetSettings(fd int, name string) (ethtoolCmd, error) {
	cmd := ethtoolCmd{Cmd: ethtoolGSET}
	var ifr ifreqData
	copy(ifr.name[:unix.IFNAMSIZ-1], name)
	ifr.data = unsafe.Pointer(&cmd)
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	if e != 0 {
		return cmd, e
	}
	return cmd, nil
}
