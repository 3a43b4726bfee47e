package tests

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Port mirroring end to end: three namespaces on a bridge and a fourth,
// the mirror's output, where a packet socket reads what the mirror sends.
// Each step configures one Mirror row (the ovs-vsctl(8) recipe), runs a
// ping between two namespaces and checks that the copies are exactly the
// frames OVS's rules select:
//   - select_all copies each frame once, as received (ingress and egress
//     selections of one packet make one copy);
//   - select_src_port copies what the port receives, select_dst_port what
//     it sends;
//   - the output port takes no part in forwarding (nothing is flooded to
//     it, what it sends is dropped);
//   - select_vlan keeps the frames of those VLANs, and a copy carries the
//     packet's VLAN as the output port would send it (trunk: tagged);
//   - output_vlan sends copies tagged with that VLAN to the ports carrying
//     it;
//   - snaplen truncates the copies; Mirror.statistics counts the packets
//     and their whole lengths;
//   - OpenFlow output is mirrored as NORMAL's is.
//
// IPv6 is off and the neighbours are static in the namespaces, so the
// pings are the only traffic.
func TestVswitchdMirror(t *testing.T) {
	e := vswNewEnv(t)
	const br = "gvmibr"
	a := vswAddPrefixedNS(t, "gvmi", "a", "10.251.91.1/24")
	b := vswAddPrefixedNS(t, "gvmi", "b", "10.251.91.2/24")
	c := vswAddPrefixedNS(t, "gvmi", "c", "10.251.91.3/24")
	m := vswAddPrefixedNS(t, "gvmi", "m", "")
	all := []*vswNS{a, b, c, m}
	for _, ns := range all {
		// Both ends: the host ends are not the bridge's to send from,
		// but keep the root namespace's addresses off them all the same.
		ns.mustExec("sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.eth0.disable_ipv6=1")
		if _, err := vswRun("sysctl", "-q", "-w", "net.ipv6.conf."+ns.Host+".disable_ipv6=1"); err != nil {
			t.Fatal(err)
		}
	}
	macs := map[*vswNS]string{}
	for _, ns := range all {
		out := ns.mustExec("cat", "/sys/class/net/eth0/address")
		macs[ns] = strings.TrimSpace(out)
	}
	ips := map[*vswNS]string{a: "10.251.91.1", b: "10.251.91.2", c: "10.251.91.3"}
	for ns := range ips {
		for peer, ip := range ips {
			if peer != ns {
				ns.mustExec("ip", "neigh", "replace", ip, "lladdr", macs[peer], "nud", "permanent", "dev", "eth0")
			}
		}
	}
	e.mustVsctl("add-br", br, "--", "set", "bridge", br, "datapath_type=netdev",
		"--", "add-port", br, a.Host, "--", "add-port", br, b.Host,
		"--", "add-port", br, c.Host, "--", "add-port", br, m.Host)
	// The bridge's own interface (in the root namespace) would send
	// IPv6 multicast reports, which select_all rightly mirrors.
	if _, err := vswRun("sysctl", "-q", "-w", "net.ipv6.conf."+br+".disable_ipv6=1"); err != nil {
		t.Fatal(err)
	}
	a.waitPing(ips[b])

	capt := gvmiCapture(t, m.Name)
	capt.drain() // whatever the namespaces sent while coming up

	// mirror replaces the bridge's mirror with one named name (which
	// restarts the statistics), and checks that nothing the previous one
	// sent arrived late.
	mirror := func(name string, settings ...string) {
		t.Helper()
		if got := capt.drain(); len(got) > 0 {
			t.Fatalf("before mirror %s: %d more frames arrived: %v", name, len(got), got)
		}
		args := []string{"--", "--id=@a", "get", "port", a.Host, "--", "--id=@b", "get", "port", b.Host,
			"--", "--id=@c", "get", "port", c.Host, "--", "--id=@m", "get", "port", m.Host,
			"--", "--id=@mirror", "create", "mirror", "name=" + name}
		args = append(args, settings...)
		e.mustVsctl(append(args, "--", "set", "bridge", br, "mirrors=@mirror")...)
	}
	// expect waits for n frames and checks each with ok.
	expect := func(what string, n int, ok func(f gvmiFrame) bool) []gvmiFrame {
		t.Helper()
		got := capt.wait(t, n)
		for _, f := range got {
			if !ok(f) {
				t.Errorf("%s: unexpected copy %v", what, f)
			}
		}
		return got
	}
	ping := func(from, to *vswNS, args ...string) {
		t.Helper()
		if _, err := from.exec(append([]string{"ping", "-q", "-n", "-c", "4", "-i", "0.05", "-w", vswPingDeadline}, append(args, ips[to])...)...); err != nil {
			t.Fatalf("ping %s -> %s: %v", from.Name, to.Name, err)
		}
	}
	isPing := func(f gvmiFrame, from, to *vswNS, typ int) bool {
		return f.src == ips[from] && f.dst == ips[to] && f.icmpType == typ
	}
	const echoRequest, echoReply = 8, 0

	// select_all: the requests and the replies, once each, untagged, whole.
	mirror("all", "select_all=true", "output_port=@m")
	ping(a, b)
	got := expect("select_all", 8, func(f gvmiFrame) bool {
		return f.vlan < 0 && f.length == 98 && (isPing(f, a, b, echoRequest) || isPing(f, b, a, echoReply))
	})
	gvmiWaitStats(t, e, "all", len(got), 98*len(got))
	// Nothing is forwarded to, or from, the output port.
	if _, err := m.exec("ip", "addr", "add", "10.251.91.4/24", "dev", "eth0"); err != nil {
		t.Fatal(err)
	}
	m.noPing(ips[a])
	m.mustExec("ip", "addr", "flush", "dev", "eth0")

	// select_src_port: what a receives, the requests only.
	mirror("src", "select_src_port=@a", "output_port=@m")
	ping(a, b)
	expect("select_src_port", 4, func(f gvmiFrame) bool { return isPing(f, a, b, echoRequest) })

	// select_dst_port and snaplen: what b is sent, the requests, cut.
	mirror("dst", "select_dst_port=@b", "output_port=@m", "snaplen=60")
	ping(a, b, "-s", "200")
	expect("select_dst_port snaplen=60", 4, func(f gvmiFrame) bool { return f.length == 60 && isPing(f, a, b, echoRequest) })

	// select_vlan: a and b in VLAN 10, c untagged. The copies of a's
	// ping carry VLAN 10 (the output port is a trunk); c's ARP requests
	// for an address nobody has (VLAN 0) are not mirrored.
	e.mustVsctl("set", "port", a.Host, "tag=10", "--", "set", "port", b.Host, "tag=10")
	mirror("vlan", "select_all=true", "select_vlan=10", "output_port=@m")
	c.exec("ping", "-q", "-n", "-c", "1", "-W", "1", "10.251.91.99")
	ping(a, b)
	expect("select_vlan=10", 8, func(f gvmiFrame) bool {
		return f.vlan == 10 && (isPing(f, a, b, echoRequest) || isPing(f, b, a, echoReply))
	})

	// output_vlan (RSPAN): copies of what a receives, tagged 20, to the
	// ports carrying VLAN 20: only m's.
	e.mustVsctl("set", "port", m.Host, "trunks=20")
	mirror("rspan", "select_src_port=@a", "output_vlan=20")
	ping(a, b)
	expect("output_vlan=20", 4, func(f gvmiFrame) bool { return f.vlan == 20 && isPing(f, a, b, echoRequest) })

	// OpenFlow output: a and b connected by two flows, no NORMAL.
	e.mustVsctl("clear", "port", a.Host, "tag", "--", "clear", "port", b.Host, "tag", "--", "clear", "port", m.Host, "trunks")
	ofctl := func(args ...string) {
		t.Helper()
		if _, err := vswRunEnv([]string{"OVS_RUNDIR=" + e.dir}, vswOfctl, args...); err != nil {
			t.Fatal(err)
		}
	}
	pa, pb := e.ofport(a.Host), e.ofport(b.Host)
	ofctl("del-flows", br)
	ofctl("add-flow", br, fmt.Sprintf("in_port=%d,actions=output:%d", pa, pb))
	ofctl("add-flow", br, fmt.Sprintf("in_port=%d,actions=output:%d", pb, pa))
	mirror("openflow", "select_dst_port=@a", "output_port=@m")
	ping(a, b)
	expect("OpenFlow select_dst_port", 4, func(f gvmiFrame) bool { return f.vlan < 0 && isPing(f, b, a, echoReply) })
	// The last copies had the statistics interval to arrive late.
	gvmiWaitStats(t, e, "openflow", 4, 4*98)
	if got := capt.drain(); len(got) > 0 {
		t.Errorf("%d more frames arrived: %v", len(got), got)
	}
}

// gvmiWaitStats waits until mirror name's statistics show packets and
// bytes.
func gvmiWaitStats(t *testing.T, e *vswEnv, name string, packets, bytes int) {
	t.Helper()
	want := fmt.Sprintf("{tx_bytes=%d, tx_packets=%d}", bytes, packets)
	// Written every 5 s.
	deadline := time.Now().Add(vswTimeout)
	for {
		last := strings.TrimSpace(e.mustVsctl("get", "mirror", name, "statistics"))
		if last == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("mirror %s statistics %s, want %s", name, last, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// gvmiFrame is what the test reads of a captured frame: its VLAN (-1 if
// untagged), length on the wire, and for ICMP over IPv4 the addresses and
// type.
type gvmiFrame struct {
	srcMAC   net.HardwareAddr
	etype    uint16
	vlan     int
	length   int
	src, dst string
	icmpType int
}

func (f gvmiFrame) String() string {
	return fmt.Sprintf("{from %s type %#04x vlan %d len %d %s>%s icmp %d}", f.srcMAC, f.etype, f.vlan, f.length, f.src, f.dst, f.icmpType)
}

// gvmiCapturer reads every frame arriving on eth0 of a namespace.
type gvmiCapturer struct {
	frames chan gvmiFrame
}

// gvmiCapture opens a packet socket on eth0 of namespace ns and reads
// from it until the test ends.
func gvmiCapture(t *testing.T, ns string) *gvmiCapturer {
	t.Helper()
	var fd int
	gvofInNS(t, ns, func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		proto := int(gvmiHtons(unix.ETH_P_ALL))
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto); err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: uint16(proto), Ifindex: ifi.Index}); err != nil {
			unix.Close(fd)
			return err
		}
		return unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1)
	})
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 100000})
	c := &gvmiCapturer{frames: make(chan gvmiFrame, 4096)}
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		oob := make([]byte, 256)
		for !stop.Load() {
			n, oobn, _, from, err := unix.Recvmsg(fd, buf, oob, 0)
			if err != nil {
				continue // the timeout, to look at stop
			}
			if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
				continue
			}
			c.frames <- gvmiParse(buf[:n], oob[:oobn])
		}
	}()
	t.Cleanup(func() {
		stop.Store(true)
		<-done
		unix.Close(fd)
	})
	return c
}

// gvmiParse decodes a frame and its PACKET_AUXDATA: the kernel may have
// taken the VLAN tag out of the frame into the auxdata.
func gvmiParse(b, oob []byte) gvmiFrame {
	f := gvmiFrame{vlan: -1, length: len(b)}
	if msgs, err := unix.ParseSocketControlMessage(oob); err == nil {
		for _, m := range msgs {
			if m.Header.Level != unix.SOL_PACKET || m.Header.Type != unix.PACKET_AUXDATA || len(m.Data) < 20 {
				continue
			}
			status := binary.NativeEndian.Uint32(m.Data[0:])
			if status&unix.TP_STATUS_VLAN_VALID != 0 {
				f.vlan = int(binary.NativeEndian.Uint16(m.Data[16:]) & 0xfff)
				f.length += 4
			}
		}
	}
	if len(b) < 14 {
		return f
	}
	f.srcMAC = net.HardwareAddr(append([]byte(nil), b[6:12]...))
	etype, l3 := binary.BigEndian.Uint16(b[12:]), b[14:]
	if etype == 0x8100 && len(b) >= 18 {
		f.vlan = int(binary.BigEndian.Uint16(b[14:]) & 0xfff)
		etype, l3 = binary.BigEndian.Uint16(b[16:]), b[18:]
	}
	f.etype = etype
	if etype != 0x0800 || len(l3) < 20 {
		f.icmpType = -1
		return f
	}
	f.src, f.dst = net.IP(l3[12:16]).String(), net.IP(l3[16:20]).String()
	f.icmpType = -1
	if ihl := int(l3[0]&0xf) * 4; l3[9] == 1 && len(l3) > ihl {
		f.icmpType = int(l3[ihl])
	}
	return f
}

// wait returns the next n frames, failing the test if they do not come.
func (c *gvmiCapturer) wait(t *testing.T, n int) []gvmiFrame {
	t.Helper()
	var got []gvmiFrame
	deadline := time.After(vswTimeout)
	for len(got) < n {
		select {
		case f := <-c.frames:
			got = append(got, f)
		case <-deadline:
			t.Fatalf("got %d of %d mirrored frames: %v", len(got), n, got)
		}
	}
	return got
}

// drain returns the frames read so far.
func (c *gvmiCapturer) drain() []gvmiFrame {
	var got []gvmiFrame
	for {
		select {
		case f := <-c.frames:
			got = append(got, f)
		default:
			return got
		}
	}
}

func gvmiHtons(v uint16) uint16 { return v<<8 | v>>8 }
