//go:build linux

package netdev

import (
	"os"

	"golang.org/x/sys/unix"
)

// qdiscBypass is GOVS_SYSTEM_QDISC_BYPASS=1: system ports' sockets set
// PACKET_QDISC_BYPASS, so that a frame sent goes to the driver's
// ndo_start_xmit directly (packet_direct_xmit) instead of through
// dev_queue_xmit: no qdisc, no tc egress hook, no taps (tcpdump on the
// device misses what the switch sends). Off by default: see README's
// Performance section for what it measured.
var qdiscBypass = os.Getenv("GOVS_SYSTEM_QDISC_BYPASS") == "1"

// setQdiscBypass sets PACKET_QDISC_BYPASS on fd when qdiscBypass asks for
// it. The kernel has it since Linux 3.14; an older one refuses and the
// port goes on through the qdisc.
func setQdiscBypass(fd int) bool {
	return qdiscBypass && unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1) == nil
}
