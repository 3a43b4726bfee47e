//go:build linux

package netdev

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestQdiscBypass: with GOVS_SYSTEM_QDISC_BYPASS=1 system ports' sockets
// have PACKET_QDISC_BYPASS, and forward as before.
func TestQdiscBypass(t *testing.T) {
	needRoot(t)
	old := qdiscBypass
	qdiscBypass = true
	t.Cleanup(func() { qdiscBypass = old })
	p := newPair(t)
	a := openSystem(t, p.hostA, Config{})
	b := openSystem(t, p.hostB, Config{})
	for _, port := range []Port{a, b} {
		s := port.(*systemPort)
		var v int
		var err error
		s.rc.Control(func(fd uintptr) { v, err = unix.GetsockoptInt(int(fd), unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS) })
		if err != nil || v != 1 || !s.qdiscBypass {
			t.Fatalf("%s: PACKET_QDISC_BYPASS %d, %v", s.name, v, err)
		}
	}
	forward(t, a, b, nil)
	ping(t, p.nsA, addrB4)
	tcpEcho(t, p.nsA, p.nsB, addrB4, transferSize)
}
