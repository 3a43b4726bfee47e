//go:build linux

package netdev

import (
	"bytes"
	"encoding/binary"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// rxFilterRefresh is how often a tap port re-reads its device's MAC address
// and promiscuity: a change (tcpdump starting, the address changed) takes
// effect within this long.
const rxFilterRefresh = 100 * time.Millisecond

// rxFilter is the receive filter of a NIC, applied by a tap port before it
// writes a frame to its device: a unicast frame for another MAC address,
// which the device's stack would only discard (ip_rcv: PACKET_OTHERHOST)
// after a writev, an skb and a copy, is not written while the device is not
// promiscuous. That is what the Linux bridge does for its own device
// (br_handle_frame_finish passes a flooded unicast frame up only with
// IFF_PROMISC), and the frames a switch floods to its local port while a
// destination is unknown (a 64-byte stream to a receiver that never sends
// cost a quarter of the switch's CPU) are exactly these. tcpdump, a bridge
// or a macvlan on the device raise its promiscuity (IFLA_PROMISCUITY, which
// SIOCGIFFLAGS does not show) and so see everything again; only a packet
// socket without promiscuous mode (tcpdump -p) or a tc ingress hook misses
// frames for other hosts, as on a real NIC.
//
// The state is read by RTM_GETLINK on a netlink socket opened in the
// namespace the port was opened in; while that fails (the device moved to
// another namespace, say) nothing is filtered.
type rxFilter struct {
	nl   *os.File // the netlink socket, nil if none; closed by close
	rc   syscall.RawConn
	name string
	on   bool    // filtering: mac is valid and the device not promiscuous
	mac  [6]byte // the device's address
	next time.Time
	buf  []byte
	req  []byte
}

func newRxFilter(name string) rxFilter {
	f := rxFilter{name: name}
	idx, err := ifIndex(name)
	if err != nil {
		return f
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return f
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return f
	}
	// A reply that takes longer than this leaves the filter off.
	tv := unix.NsecToTimeval(int64(10 * time.Millisecond))
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	f.nl = os.NewFile(uintptr(fd), "netlink")
	if f.rc, err = f.nl.SyscallConn(); err != nil {
		f.nl.Close()
		f.nl = nil
		return f
	}
	f.buf = make([]byte, 1<<15)
	f.req = make([]byte, unix.SizeofNlMsghdr+unix.SizeofIfInfomsg)
	binary.NativeEndian.PutUint32(f.req[0:], uint32(len(f.req)))
	binary.NativeEndian.PutUint16(f.req[4:], unix.RTM_GETLINK)
	binary.NativeEndian.PutUint16(f.req[6:], unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(f.req[unix.SizeofNlMsghdr+4:], uint32(idx)) // ifi_index
	f.refresh(time.Now())
	return f
}

// pass reports whether the frame b is to be written; the caller refreshes
// first with maybeRefresh.
func (f *rxFilter) pass(b []byte) bool {
	if !f.on || len(b) < 6 || b[0]&1 != 0 { // group addresses always go
		return true
	}
	return [6]byte(b[:6]) == f.mac
}

func (f *rxFilter) maybeRefresh() {
	if f.nl == nil {
		return
	}
	if now := time.Now(); now.After(f.next) {
		f.refresh(now)
	}
}

func (f *rxFilter) refresh(now time.Time) {
	f.next = now.Add(rxFilterRefresh)
	f.on = false
	// Control holds the file open against a concurrent close.
	f.rc.Control(func(fd uintptr) { f.query(int(fd)) })
}

func (f *rxFilter) query(fd int) {
	seq := binary.NativeEndian.Uint32(f.req[8:]) + 1
	binary.NativeEndian.PutUint32(f.req[8:], seq)
	// write and read rather than sendto and recvfrom: no allocation (a
	// netlink socket's default peer is the kernel).
	if _, err := unix.Write(fd, f.req); err != nil {
		return
	}
	for {
		n, err := unix.Read(fd, f.buf)
		if err != nil {
			return
		}
		for b := f.buf[:n]; len(b) >= unix.SizeofNlMsghdr; {
			l := int(binary.NativeEndian.Uint32(b[0:]))
			if l < unix.SizeofNlMsghdr || l > len(b) {
				return
			}
			typ := binary.NativeEndian.Uint16(b[4:])
			if binary.NativeEndian.Uint32(b[8:]) == seq {
				if typ == unix.RTM_NEWLINK {
					f.parse(b[unix.SizeofNlMsghdr:l])
				}
				return // else NLMSG_ERROR: gone from this namespace
			}
			b = b[min((l+3)&^3, len(b)):] // a late answer to an earlier request
		}
	}
}

// parse reads a struct ifinfomsg and its attributes.
func (f *rxFilter) parse(b []byte) {
	if len(b) < unix.SizeofIfInfomsg {
		return
	}
	flags := binary.NativeEndian.Uint32(b[8:])
	if flags&unix.IFF_PROMISC != 0 {
		return
	}
	var macOK, nameOK, promOK bool
	for a := b[unix.SizeofIfInfomsg:]; len(a) >= unix.SizeofRtAttr; {
		l := int(binary.NativeEndian.Uint16(a[0:]))
		if l < unix.SizeofRtAttr || l > len(a) {
			return
		}
		v := a[unix.SizeofRtAttr:l]
		switch binary.NativeEndian.Uint16(a[2:]) {
		case unix.IFLA_ADDRESS:
			if len(v) == 6 {
				copy(f.mac[:], v)
				macOK = true
			}
		case unix.IFLA_IFNAME:
			nameOK = string(bytes.TrimRight(v, "\x00")) == f.name
		case unix.IFLA_PROMISCUITY:
			promOK = len(v) >= 4 && binary.NativeEndian.Uint32(v) == 0
		}
		a = a[min((l+3)&^3, len(a)):]
	}
	f.on = macOK && nameOK && promOK
}

func (f *rxFilter) close() {
	if f.nl != nil {
		f.nl.Close()
	}
}
