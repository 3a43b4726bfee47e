//go:build linux

package netdev

import (
	"net"
	"testing"

	"github.com/govs/govs/datapath/packet"
)

// TestTapRxFilter: a unicast frame for another host is not written to a tap
// that is not promiscuous (its stack would drop it), one for the tap's own
// address or a broadcast is, and everything is once the tap is promiscuous.
func TestTapRxFilter(t *testing.T) {
	needRoot(t)
	name := uniqueName("t")
	port, err := OpenTap(name, Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { port.Close() })
	tp := port.(*tapPort)
	li, err := GetLinkInfo(name)
	if err != nil {
		t.Fatal(err)
	}
	frame := func(dst net.HardwareAddr) *packet.Packet {
		b := make([]byte, 60)
		copy(b, dst)
		copy(b[6:], []byte{2, 0, 0, 0, 0, 1})
		b[12], b[13] = 0x88, 0xb5 // local experimental ethertype
		p := packet.New()
		p.SetData(b)
		return p
	}
	other := net.HardwareAddr{2, 0, 0, 0, 0, 2}
	bcast := net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	// written returns how many of the frames to dsts reached the device.
	written := func(dsts ...net.HardwareAddr) uint64 {
		t.Helper()
		tp.tx.filt.refresh(tp.tx.filt.next) // as if the refresh were due
		before, err := KernelStats(name)
		if err != nil {
			t.Fatal(err)
		}
		var pkts []*packet.Packet
		for _, d := range dsts {
			pkts = append(pkts, frame(d))
		}
		if n, err := port.Write(pkts); err != nil || n != len(pkts) {
			t.Fatalf("Write: %d of %d, %v", n, len(pkts), err)
		}
		after, err := KernelStats(name)
		if err != nil {
			t.Fatal(err)
		}
		return after.RxPackets - before.RxPackets
	}
	if !tp.tx.filt.on {
		t.Fatal("filter off on a fresh tap")
	}
	if got := written(other, other, li.MAC, bcast); got != 2 {
		t.Errorf("not promiscuous: %d of the frames reached the device, want 2 (own address, broadcast)", got)
	}
	sh(t, "ip", "link", "set", name, "promisc", "on")
	if got := written(other, li.MAC); got != 2 {
		t.Errorf("promiscuous: %d of 2 frames reached the device", got)
	}
	sh(t, "ip", "link", "set", name, "promisc", "off")
	if got := written(other); got != 0 {
		t.Errorf("promiscuous mode off again: %d frames reached the device", got)
	}
	// A tap moved to another namespace is not filtered.
	ns := newNetns(t)
	sh(t, "ip", "link", "set", name, "netns", ns)
	tp.tx.filt.refresh(tp.tx.filt.next)
	if tp.tx.filt.on {
		t.Error("filter still on after the tap left the namespace")
	}
}
