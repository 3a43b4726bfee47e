package bridge

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/govs/govs/netdev"
)

// KernelDevices is Devices on the running kernel, through netdev.
type KernelDevices struct{}

// Open implements Devices.
func (KernelDevices) Open(name, typ string, cfg netdev.Config) (netdev.Port, error) {
	if typ == TypeSystem {
		return netdev.OpenSystem(name, cfg)
	}
	return netdev.OpenTap(name, cfg)
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
