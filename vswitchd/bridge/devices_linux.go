package bridge

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"

	"github.com/govs/govs/netdev"
	"github.com/govs/govs/netdev/vhostuser"
)

// KernelDevices is Devices on the running kernel, through netdev.
type KernelDevices struct{}

// Open implements Devices.
func (KernelDevices) Open(req OpenRequest) (netdev.Port, error) {
	switch req.Type {
	case TypeSystem:
		return netdev.OpenSystem(req.Name, req.Config)
	case TypeInternal, TypeTap:
		return netdev.OpenTap(req.Name, req.Config)
	case TypeAFXDP:
		return netdev.OpenAFXDP(req.Name, req.AFXDP)
	case TypeDummy:
		p, err := netdev.OpenDummy(req.Name, req.Dummy.Netdev)
		if err != nil {
			return nil, err
		}
		if err := p.SetPcap(req.Dummy.RxPcap, req.Dummy.TxPcap); err != nil {
			p.Close()
			return nil, err
		}
		return p, nil
	case TypeVhostUser, TypeVhostUserClient:
		open := vhostuser.Dial
		if req.Type == TypeVhostUser {
			open = vhostuser.Listen
		}
		p, err := open(req.Name, req.SocketPath, req.Vhost)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return p, nil
	}
	return nil, fmt.Errorf("%s: interface type %q: %w", req.Name, req.Type, syscall.EAFNOSUPPORT)
}

// SockBufDefaults implements Devices.
func (KernelDevices) SockBufDefaults() (rcv, snd int, err error) {
	read := func(key string) (int, error) {
		b, err := os.ReadFile("/proc/sys/net/core/" + key)
		if err != nil {
			return 0, err
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return 0, fmt.Errorf("net.core.%s: %w", key, err)
		}
		return n, nil
	}
	if rcv, err = read("rmem_default"); err == nil {
		snd, err = read("wmem_default")
	}
	return rcv, snd, err
}

// Link implements Devices; an open dummy port answers for itself.
func (KernelDevices) Link(name string) (netdev.LinkInfo, error) {
	if d := netdev.LookupDummy(name); d != nil {
		return d.LinkInfo(), nil
	}
	return netdev.GetLinkInfo(name)
}

// SetMTU implements Devices.
func (KernelDevices) SetMTU(name string, mtu int) error {
	if d := netdev.LookupDummy(name); d != nil {
		return d.SetMTU(mtu)
	}
	return netdev.SetMTU(name, mtu)
}

// SetMAC implements Devices.
func (KernelDevices) SetMAC(name string, mac net.HardwareAddr) error {
	if d := netdev.LookupDummy(name); d != nil {
		d.SetMAC(mac)
		return nil
	}
	link, err := netlink.LinkByName(name)
	if err != nil {
		return err
	}
	return netlink.LinkSetHardwareAddr(link, mac)
}

// SetAdminUp sets a kernel interface's administrative state (IFF_UP), for
// OFPT_PORT_MOD's OFPPC_PORT_DOWN.
func (KernelDevices) SetAdminUp(name string, up bool) error {
	if d := netdev.LookupDummy(name); d != nil {
		d.SetAdminUp(up)
		return nil
	}
	link, err := netlink.LinkByName(name)
	if err != nil {
		return err
	}
	if up {
		return netlink.LinkSetUp(link)
	}
	return netlink.LinkSetDown(link)
}
