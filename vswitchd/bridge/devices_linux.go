package bridge

import (
	"net"

	"github.com/vishvananda/netlink"

	"github.com/govs/govs/netdev"
)

// KernelDevices is Devices on the running kernel, through netdev.
type KernelDevices struct {
	// Config is how ports are opened.
	Config netdev.Config
}

// Open implements Devices.
func (k KernelDevices) Open(name, typ string) (netdev.Port, error) {
	if typ == TypeSystem {
		return netdev.OpenSystem(name, k.Config)
	}
	return netdev.OpenTap(name, k.Config)
}

// Link implements Devices.
func (KernelDevices) Link(name string) (netdev.LinkInfo, error) { return netdev.GetLinkInfo(name) }

// SetMTU implements Devices.
func (KernelDevices) SetMTU(name string, mtu int) error { return netdev.SetMTU(name, mtu) }

// SetMAC implements Devices.
func (KernelDevices) SetMAC(name string, mac net.HardwareAddr) error {
	link, err := netlink.LinkByName(name)
	if err != nil {
		return err
	}
	return netlink.LinkSetHardwareAddr(link, mac)
}
