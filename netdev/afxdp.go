package netdev

import "fmt"

// XDPMode is options:xdp-mode of an AF_XDP interface.
type XDPMode int

const (
	XDPBestEffort XDPMode = iota // native-with-zerocopy, else native, else generic
	XDPNativeZC                  // driver mode, zero-copy
	XDPNative                    // driver mode, copying
	XDPGeneric                   // skb mode (any device), copying
)

var xdpModeNames = [...]string{"best-effort", "native-with-zerocopy", "native", "generic"}

func (m XDPMode) String() string {
	if m >= 0 && int(m) < len(xdpModeNames) {
		return xdpModeNames[m]
	}
	return fmt.Sprintf("XDPMode(%d)", int(m))
}

// ParseXDPMode reads an xdp-mode value as OVS does (strcasecmp).
func ParseXDPMode(s string) (XDPMode, bool) {
	for i, n := range xdpModeNames {
		if equalFold(s, n) {
			return XDPMode(i), true
		}
	}
	return 0, false
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i]|0x20, b[i]|0x20
		if x != y {
			return false
		}
	}
	return true
}

// AFXDPConfig is how an AF_XDP port is opened.
type AFXDPConfig struct {
	Mode XDPMode
	// NeedWakeup is options:use-need-wakeup (OVS's default true): the
	// kernel sets XDP_RING_NEED_WAKEUP when it wants a syscall to go on
	// filling the rx ring, instead of govs kicking it every batch.
	NeedWakeup bool
	// RxQueues is options:n_rxq: the device's queues 0..n-1 get a socket
	// each. 0 means 1.
	RxQueues int
}
