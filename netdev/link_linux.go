//go:build linux

package netdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ioctlSocket returns a socket to issue interface ioctls on, in the calling
// thread's network namespace.
func ioctlSocket() (int, error) {
	return unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
}

// ifreqIoctl issues an interface ioctl req on name; set, if not nil,
// fills the request first. It returns the request for reading results.
func ifreqIoctl(name string, req uint, set func(*unix.Ifreq)) (*unix.Ifreq, error) {
	fd, err := ioctlSocket()
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return nil, err
	}
	if set != nil {
		set(ifr)
	}
	if err := unix.IoctlIfreq(fd, req, ifr); err != nil {
		return nil, err
	}
	return ifr, nil
}

func ifIndex(name string) (int, error) {
	ifr, err := ifreqIoctl(name, unix.SIOCGIFINDEX, nil)
	if err != nil {
		return 0, err
	}
	return int(ifr.Uint32()), nil
}

// MTU returns the MTU of the kernel device name.
func MTU(name string) (int, error) {
	ifr, err := ifreqIoctl(name, unix.SIOCGIFMTU, nil)
	if err != nil {
		return 0, err
	}
	return int(ifr.Uint32()), nil
}

// SetMTU sets the MTU of the kernel device name.
func SetMTU(name string, mtu int) error {
	_, err := ifreqIoctl(name, unix.SIOCSIFMTU, func(ifr *unix.Ifreq) { ifr.SetUint32(uint32(mtu)) })
	if err != nil {
		return fmt.Errorf("netdev: set MTU of %s to %d: %w", name, mtu, err)
	}
	return nil
}

// setUp sets IFF_UP on the kernel device name.
func setUp(name string) error {
	fd, err := ioctlSocket()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	if ifr.Uint16()&unix.IFF_UP != 0 {
		return nil
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// GetLinkInfo returns what the Interface table shows about the kernel device
// name: from RTM_GETLINK, and speed and duplex from ETHTOOL_GSET (left
// unknown where the driver has no link settings).
func GetLinkInfo(name string) (LinkInfo, error) {
	var li LinkInfo
	ifi, attrs, err := getLink(name)
	if err != nil {
		return li, err
	}
	li.Index = int(int32(binary.NativeEndian.Uint32(ifi[4:])))
	flags := binary.NativeEndian.Uint32(ifi[8:])
	li.AdminUp = flags&unix.IFF_UP != 0
	li.OperUp = flags&unix.IFF_RUNNING != 0 && flags&unix.IFF_LOWER_UP != 0
	for _, a := range attrs {
		switch a.Attr.Type {
		case unix.IFLA_MTU:
			if len(a.Value) >= 4 {
				li.MTU = int(binary.NativeEndian.Uint32(a.Value))
			}
		case unix.IFLA_ADDRESS:
			li.MAC = net.HardwareAddr(append([]byte(nil), a.Value...))
		case unix.IFLA_MIN_MTU:
			if len(a.Value) >= 4 {
				li.MinMTU = int(binary.NativeEndian.Uint32(a.Value))
			}
		case unix.IFLA_MAX_MTU:
			if len(a.Value) >= 4 {
				li.MaxMTU = int(binary.NativeEndian.Uint32(a.Value))
			}
		}
	}
	fd, err := ioctlSocket()
	if err != nil {
		return li, err
	}
	defer unix.Close(fd)
	if cmd, err := ethtoolGetSettings(fd, name); err == nil {
		speed := uint32(cmd.SpeedHi)<<16 | uint32(cmd.Speed)
		if speed != 0xffffffff && speed != 0xffff { // SPEED_UNKNOWN
			li.Speed = speed
		}
		switch cmd.Duplex {
		case 0: // DUPLEX_HALF
			li.Duplex = "half"
		case 1: // DUPLEX_FULL
			li.Duplex = "full"
		}
	}
	return li, nil
}

// KernelStats returns the kernel's counters of the device name
// (IFLA_STATS64, struct rtnl_link_stats64 in include/uapi/linux/if_link.h).
func KernelStats(name string) (Stats, error) {
	var st Stats
	_, attrs, err := getLink(name)
	if err != nil {
		return st, err
	}
	for _, a := range attrs {
		if a.Attr.Type != unix.IFLA_STATS64 || len(a.Value) < 64 {
			continue
		}
		u := func(i int) uint64 { return binary.NativeEndian.Uint64(a.Value[8*i:]) }
		st.RxPackets, st.TxPackets = u(0), u(1)
		st.RxBytes, st.TxBytes = u(2), u(3)
		st.RxErrors, st.TxErrors = u(4), u(5)
		st.RxDropped, st.TxDropped = u(6), u(7)
		return st, nil
	}
	return st, fmt.Errorf("netdev: %s: no IFLA_STATS64 in RTM_NEWLINK", name)
}

// getLink asks the kernel for the device name by RTM_GETLINK with
// IFLA_IFNAME and returns its struct ifinfomsg and attributes.
func getLink(name string) (ifi []byte, attrs []syscall.NetlinkRouteAttr, err error) {
	if len(name) == 0 || len(name) >= unix.IFNAMSIZ {
		return nil, nil, fmt.Errorf("netdev: invalid interface name %q", name)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, nil, err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, nil, err
	}
	attrLen := unix.SizeofRtAttr + len(name) + 1
	req := make([]byte, unix.SizeofNlMsghdr+unix.SizeofIfInfomsg+(attrLen+3)&^3)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], unix.RTM_GETLINK)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(req[8:], 1)
	at := req[unix.SizeofNlMsghdr+unix.SizeofIfInfomsg:]
	binary.NativeEndian.PutUint16(at[0:], uint16(attrLen))
	binary.NativeEndian.PutUint16(at[2:], unix.IFLA_IFNAME)
	copy(at[unix.SizeofRtAttr:], name)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, nil, err
	}
	buf := make([]byte, 1<<16)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return nil, nil, err
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return nil, nil, err
	}
	for i := range msgs {
		m := &msgs[i]
		switch m.Header.Type {
		case unix.NLMSG_ERROR:
			if len(m.Data) >= 4 {
				if e := -int32(binary.NativeEndian.Uint32(m.Data)); e != 0 {
					return nil, nil, fmt.Errorf("netdev: %s: %w", name, unix.Errno(e))
				}
			}
		case unix.RTM_NEWLINK:
			if len(m.Data) < unix.SizeofIfInfomsg {
				break
			}
			attrs, err := syscall.ParseNetlinkRouteAttr(m)
			if err != nil {
				return nil, nil, err
			}
			return m.Data[:unix.SizeofIfInfomsg], attrs, nil
		}
	}
	return nil, nil, fmt.Errorf("netdev: %s: no RTM_NEWLINK answer", name)
}

// kernelAtLeast reports whether the running kernel's release is at least
// major.minor.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	rel := unix.ByteSliceToString(u.Release[:])
	parts := strings.SplitN(rel, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err := errors.Join(err1, err2); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
