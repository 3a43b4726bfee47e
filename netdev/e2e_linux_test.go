//go:build linux

package netdev

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govs/govs/datapath/packet"
)

const (
	addrA4, addrB4 = "10.199.0.1", "10.199.0.2"
	addrA6, addrB6 = "fd00:199::1", "fd00:199::2"
	transferSize   = 1 << 20
)

// pair is two namespaces A and B, each on a veth whose host end a test
// opens, with addresses in one subnet.
type pair struct {
	nsA, nsB     string
	hostA, hostB string
	peerA, peerB string
}

func newPair(t *testing.T) pair {
	var p pair
	p.nsA, p.nsB = newNetns(t), newNetns(t)
	p.hostA, p.peerA = addVeth(t, p.nsA, addrA4+"/24", addrA6+"/64")
	p.hostB, p.peerB = addVeth(t, p.nsB, addrB4+"/24", addrB6+"/64")
	return p
}

func ping(t *testing.T, ns, addr string) {
	t.Helper()
	// Replies to any of the pings make ping exit 0; -w bounds it all.
	out, err := exec.Command("ip", "netns", "exec", ns, "ping", "-c", "3", "-i", "0.2", "-W", "2", "-w", "15", addr).CombinedOutput()
	if err != nil {
		t.Fatalf("ping %s from %s: %v\n%s", addr, ns, err, out)
	}
}

// tcpEcho sends size random bytes from a client in nsA to an echo server in
// nsB and checks that the same bytes come back: a transfer each way.
func tcpEcho(t *testing.T, nsA, nsB, addrB string, size int) {
	t.Helper()
	var ln net.Listener
	var err error
	inNetns(t, nsB, func() { ln, err = net.Listen("tcp", net.JoinHostPort(addrB, "0")) })
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srvErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(60 * time.Second))
		_, err = io.Copy(c, c)
		srvErr <- err
	}()

	var c net.Conn
	inNetns(t, nsA, func() {
		d := net.Dialer{Timeout: linkDeadline}
		c, err = d.Dial("tcp", ln.Addr().String())
	})
	if err != nil {
		t.Fatalf("connect %s from %s: %v", ln.Addr(), nsA, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	data := make([]byte, size)
	r := rand.NewChaCha8([32]byte{1})
	r.Read(data)
	wErr := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		if err == nil {
			err = c.(*net.TCPConn).CloseWrite()
		}
		wErr <- err
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading the echo: %v (after %d bytes)", err, len(got))
	}
	if err := <-wErr; err != nil {
		t.Fatalf("sending: %v", err)
	}
	if err := <-srvErr; err != nil {
		t.Fatalf("echo server: %v", err)
	}
	if sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatalf("echo of %d bytes came back as %d different bytes", size, len(got))
	}
}

// udpBurst sends count datagrams of size bytes from nsA to nsB, with
// UDP_SEGMENT set to segment if nonzero (so that the sender's stack makes
// USO super-frames of 8 datagrams), and checks that all arrive intact.
func udpBurst(t *testing.T, nsA, nsB, addrB string, count, size, segment int) {
	t.Helper()
	var rc *net.UDPConn
	var err error
	inNetns(t, nsB, func() {
		var pc net.PacketConn
		pc, err = net.ListenPacket("udp", net.JoinHostPort(addrB, "0"))
		if err == nil {
			rc = pc.(*net.UDPConn)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rc.SetReadBuffer(4 << 20)
	var sc *net.UDPConn
	inNetns(t, nsA, func() { sc, err = net.DialUDP("udp", nil, rc.LocalAddr().(*net.UDPAddr)) })
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	per := 1
	if segment != 0 {
		raw, _ := sc.SyscallConn()
		var serr error
		raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_SEGMENT, segment) })
		if serr != nil {
			t.Fatalf("UDP_SEGMENT: %v", serr)
		}
		per = 8
	}
	got := make([]bool, count)
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 65536)
		rc.SetReadDeadline(time.Now().Add(linkDeadline))
		for n := 0; n < count; {
			l, err := rc.Read(buf)
			if err != nil {
				done <- err
				return
			}
			if l != size {
				done <- errors.New("datagram of the wrong size")
				return
			}
			i := int(binary.BigEndian.Uint32(buf))
			if i >= count || got[i] || !bytes.Equal(buf[4:l], fill(i, size)[4:]) {
				done <- errors.New("datagram duplicated or corrupted")
				return
			}
			got[i] = true
			n++
		}
		done <- nil
	}()
	msg := make([]byte, 0, per*size)
	for i := 0; i < count; i += per {
		msg = msg[:0]
		for j := i; j < i+per && j < count; j++ {
			msg = append(msg, fill(j, size)...)
		}
		if _, err := sc.Write(msg); err != nil {
			t.Fatalf("send: %v", err)
		}
	}
	if err := <-done; err != nil {
		missing := 0
		for _, g := range got {
			if !g {
				missing++
			}
		}
		t.Fatalf("UDP burst: %v; %d of %d datagrams missing", err, missing, count)
	}
}

func fill(i, size int) []byte {
	b := make([]byte, size)
	binary.BigEndian.PutUint32(b, uint32(i))
	for j := 4; j < size; j++ {
		b[j] = byte(i + j)
	}
	return b
}

func openSystem(t testing.TB, name string, cfg Config) Port {
	t.Helper()
	p, err := OpenSystem(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestSystemForwarding(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name   string
		cfgB   Config
		noVnet bool
	}{
		{"offload", Config{SockBufSize: 4 << 20}, false},
		{"disable-offload", Config{SockBufSize: 4 << 20, DisableOffload: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t)
			a := openSystem(t, p.hostA, Config{SockBufSize: 4 << 20})
			b := openSystem(t, p.hostB, tc.cfgB)
			if got := b.Offloads(); (got == Offloads{}) != tc.noVnet {
				t.Fatalf("offloads %+v with DisableOffload %v", got, tc.noVnet)
			}
			fw := forward(t, a, b, nil)

			t.Run("ping", func(t *testing.T) { ping(t, p.nsA, addrB4); ping(t, p.nsB, addrA6) })
			t.Run("tcp4", func(t *testing.T) { tcpEcho(t, p.nsA, p.nsB, addrB4, transferSize) })
			t.Run("tcp6", func(t *testing.T) { tcpEcho(t, p.nsA, p.nsB, addrB6, transferSize) })
			t.Run("udp", func(t *testing.T) { udpBurst(t, p.nsA, p.nsB, addrB4, 200, 1200, 0) })
			t.Run("udp-gso", func(t *testing.T) { udpBurst(t, p.nsA, p.nsB, addrB6, 400, 1000, 1000) })

			// The namespaces' veths have TSO on: super-frames must have
			// come through whole, both ways.
			if fw.gso[0].Load() == 0 || fw.gso[1].Load() == 0 {
				t.Errorf("super-frames read: %d from A, %d from B; want some each way", fw.gso[0].Load(), fw.gso[1].Load())
			}
			sa, sb := a.Stats(), b.Stats()
			t.Logf("A: %+v", sa)
			t.Logf("B: %+v", sb)
			if tc.noVnet {
				if sb.Offload.Segmented == 0 || sb.Offload.Segments <= sb.Offload.Segmented {
					t.Errorf("B took no super-frame apart in software: %+v", sb.Offload)
				}
			} else if sa.Offload != (Stats{}).Offload || sb.Offload != (Stats{}).Offload {
				t.Errorf("software offload used between two vnet ports: A %+v, B %+v", sa.Offload, sb.Offload)
			}
			if sa.RxPackets == 0 || sa.TxPackets == 0 || sb.RxBytes == 0 || sb.TxBytes == 0 {
				t.Errorf("counters not moving: A %+v, B %+v", sa, sb)
			}
		})
	}
}

// TestSystemVLAN sends tagged frames from a raw socket in A and checks that
// the port reads them with their tags in the data, whatever the kernel did
// with the tag, and that B receives them tagged.
func TestSystemVLAN(t *testing.T) {
	needRoot(t)
	for _, m := range offloadModes {
		cfg := m.cfg
		t.Run(m.name, func(t *testing.T) {
			p := newPair(t)
			a := openSystem(t, p.hostA, cfg)
			b := openSystem(t, p.hostB, cfg)
			seen := make(chan []byte, 64)
			forward(t, a, b, func(from int, pk *packet.Packet) {
				if d := pk.Data(); from == 0 && bytes.Contains(d, []byte("govs-vlan")) {
					select {
					case seen <- bytes.Clone(d):
					default:
					}
				}
			})
			tx := rawSocket(t, p.nsA, p.peerA)
			rx := rawSocket(t, p.nsB, p.peerB)
			for _, tc := range []struct {
				name string
				tags []byte
			}{
				{"802.1Q", []byte{0x81, 0x00, 0x00, 0x0a}},
				{"802.1Q-prio0-vid0", []byte{0x81, 0x00, 0xe0, 0x00}},
				{"QinQ", []byte{0x88, 0xa8, 0x00, 0x64, 0x81, 0x00, 0x00, 0x0a}},
			} {
				frame := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1}
				frame = append(frame, tc.tags...)
				frame = append(frame, 0x88, 0xb5)
				frame = append(frame, "govs-vlan "+tc.name+strings.Repeat(".", 40)...)
				if err := unix.Send(tx, frame, 0); err != nil {
					t.Fatal(err)
				}
				select {
				case got := <-seen:
					if !bytes.Equal(got, frame) {
						t.Errorf("%s: port read\n% x\nwant\n% x", tc.name, got, frame)
					}
				case <-time.After(linkDeadline):
					t.Fatalf("%s: the port never read the frame", tc.name)
				}
				// B's stack moves the outer tag to metadata again: check
				// it with PACKET_AUXDATA as the port does.
				got := recvTagged(t, rx, "govs-vlan "+tc.name)
				if !bytes.Equal(got, frame) {
					t.Errorf("%s: B received\n% x\nwant\n% x", tc.name, got, frame)
				}
			}
		})
	}
}

// recvTagged receives on a raw socket until a frame containing marker
// arrives and returns it with the VLAN tag from its auxdata put back.
func recvTagged(t *testing.T, fd int, marker string) []byte {
	t.Helper()
	buf := make([]byte, 4096)
	oob := make([]byte, 64)
	deadline := time.Now().Add(linkDeadline)
	for time.Now().Before(deadline) {
		n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, 0)
		if err != nil {
			t.Fatalf("waiting for %q: %v", marker, err)
		}
		if !bytes.Contains(buf[:n], []byte(marker)) {
			continue
		}
		status, tci, tpid := auxdata(oob[:oobn])
		f := bytes.Clone(buf[:n])
		if status&unix.TP_STATUS_VLAN_VALID != 0 {
			if status&unix.TP_STATUS_VLAN_TPID_VALID == 0 {
				tpid = 0x8100
			}
			f = append(f[:12:12], append([]byte{byte(tpid >> 8), byte(tpid), byte(tci >> 8), byte(tci)}, buf[12:n]...)...)
		}
		return f
	}
	t.Fatalf("%q never arrived", marker)
	return nil
}

func TestTapForwarding(t *testing.T) {
	needRoot(t)
	for _, m := range offloadModes {
		cfg := m.cfg
		t.Run(m.name, func(t *testing.T) {
			tp, nsA, nsB, hostB := tapPair(t, cfg)
			if got := tp.Offloads(); (got == Offloads{}) != cfg.DisableOffload || !cfg.DisableOffload && !(got.Csum && got.TSO4 && got.TSO6) {
				t.Fatalf("tap offloads %+v", got)
			}
			b := openSystem(t, hostB, Config{SockBufSize: 4 << 20})
			fw := forward(t, tp, b, nil)

			t.Run("ping", func(t *testing.T) { ping(t, nsA, addrB4); ping(t, nsB, addrA6) })
			t.Run("tcp4", func(t *testing.T) { tcpEcho(t, nsA, nsB, addrB4, transferSize) })
			t.Run("tcp6", func(t *testing.T) { tcpEcho(t, nsB, nsA, addrA6, transferSize) })
			t.Run("udp-gso", func(t *testing.T) { udpBurst(t, nsB, nsA, addrA4, 400, 1000, 1000) })

			st := tp.Stats()
			t.Logf("tap: %+v", st)
			if cfg.DisableOffload {
				if fw.gso[0].Load() != 0 {
					t.Errorf("a tap without IFF_VNET_HDR handed over %d super-frames", fw.gso[0].Load())
				}
				if st.Offload.Segmented == 0 {
					t.Errorf("no super-frame from B was segmented in software for the tap: %+v", st.Offload)
				}
			} else {
				if fw.gso[0].Load() == 0 {
					t.Errorf("the tap handed over no super-frames")
				}
				if st.Offload != (Stats{}).Offload {
					t.Errorf("software offload used on a vnet tap: %+v", st.Offload)
				}
			}
		})
	}
}

func TestTapLifecycle(t *testing.T) {
	needRoot(t)
	exists := func(name string) bool { _, err := ifIndex(name); return err == nil }

	t.Run("created-and-removed", func(t *testing.T) {
		name := uniqueName("t")
		tp, err := OpenTap(name, Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { exec.Command("ip", "link", "del", name).Run() })
		li, err := GetLinkInfo(name)
		if err != nil || !li.AdminUp || li.Index == 0 || len(li.MAC) != 6 {
			t.Fatalf("after OpenTap: %+v, %v", li, err)
		}
		if err := tp.Close(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, name+" to vanish", linkDeadline, func() bool { return !exists(name) })
	})
	t.Run("attach-persistent", func(t *testing.T) {
		name := uniqueName("t")
		sh(t, "ip", "tuntap", "add", "dev", name, "mode", "tap")
		t.Cleanup(func() { exec.Command("ip", "link", "del", name).Run() })
		tp, err := OpenTap(name, Config{})
		if err != nil {
			t.Fatal(err)
		}
		if tp.(*tapPort).created {
			t.Error("attached to an existing tap but thinks it created it")
		}
		tp.Close()
		if !exists(name) {
			t.Error("closing removed a persistent tap govs did not create")
		}
	})
	t.Run("not-a-tap", func(t *testing.T) {
		ns := newNetns(t)
		host, _ := addVeth(t, ns)
		if tp, err := OpenTap(host, Config{}); err == nil {
			tp.Close()
			t.Fatal("OpenTap took a veth")
		}
	})
}

func TestCloseUnblocksRead(t *testing.T) {
	needRoot(t)
	ns := newNetns(t)
	host, _ := addVeth(t, ns)
	sys, err := OpenSystem(host, Config{})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := OpenTap(uniqueName("t"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Port{sys, tp} {
		done := make(chan error, 1)
		go func() {
			pkts := []*packet.Packet{packet.New()}
			for {
				if _, err := p.Read(pkts); err != nil {
					done <- err
					return
				}
			}
		}()
		select {
		case err := <-done:
			t.Fatalf("%s: Read returned before Close: %v", p.Name(), err)
		case <-time.After(100 * time.Millisecond):
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if !errors.Is(err, ErrClosed) {
				t.Errorf("%s: Read after Close: %v, want ErrClosed", p.Name(), err)
			}
		case <-time.After(linkDeadline):
			t.Fatalf("%s: Close did not unblock Read", p.Name())
		}
		if _, err := p.Write([]*packet.Packet{packet.New()}); !errors.Is(err, ErrClosed) {
			t.Errorf("%s: Write after Close: %v", p.Name(), err)
		}
		if err := p.Close(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s: second Close: %v", p.Name(), err)
		}
	}
}

func TestPromiscuous(t *testing.T) {
	needRoot(t)
	ns := newNetns(t)
	host, _ := addVeth(t, ns)
	// PACKET_MR_PROMISC raises dev->promiscuity, which SIOCGIFFLAGS does
	// not show (dev_get_flags reports only the user's IFF_PROMISC); the
	// count is IFLA_PROMISCUITY.
	promisc := func() bool {
		_, attrs, err := getLink(host)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range attrs {
			if a.Attr.Type == unix.IFLA_PROMISCUITY {
				return binary.NativeEndian.Uint32(a.Value) != 0
			}
		}
		t.Fatal("no IFLA_PROMISCUITY")
		return false
	}
	if promisc() {
		t.Fatal("promiscuous before the port opened")
	}
	p, err := OpenSystem(host, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !promisc() {
		t.Error("not promiscuous while the port is open")
	}
	p.Close()
	if promisc() {
		t.Error("still promiscuous after Close")
	}
	if mtu, err := MTU(host); err != nil || mtu != 1500 {
		t.Errorf("MTU: %d, %v", mtu, err)
	}
}

func TestSockBufSize(t *testing.T) {
	needRoot(t)
	ns := newNetns(t)
	host, _ := addVeth(t, ns)
	p := openSystem(t, host, Config{SockBufSize: 1 << 20})
	check := func(want int) {
		t.Helper()
		s := p.(*systemPort)
		s.rc.Control(func(fd uintptr) {
			for _, opt := range []int{unix.SO_RCVBUF, unix.SO_SNDBUF} {
				v, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, opt)
				if err != nil || v != 2*want { // socket(7): the kernel doubles it
					t.Errorf("option %d: %d, %v; want %d", opt, v, err, 2*want)
				}
			}
		})
	}
	check(1 << 20)
	// Above net.core.rmem_max (4 MiB here): SO_RCVBUFFORCE ignores it.
	if err := p.(SockBufSetter).SetSockBuf(16 << 20); err != nil {
		t.Fatal(err)
	}
	check(16 << 20)
}

// TestIgnoreOutgoing checks that a port does not read frames others send
// out of its device, with PACKET_IGNORE_OUTGOING and with the fallback on
// sll_pkttype for kernels before 4.20.
func TestIgnoreOutgoing(t *testing.T) {
	needRoot(t)
	for _, fallback := range []bool{false, true} {
		ns := newNetns(t)
		host, peer := addVeth(t, ns)
		p := openSystem(t, host, Config{})
		s := p.(*systemPort)
		if !s.ignoreOutgoing {
			t.Fatal("PACKET_IGNORE_OUTGOING refused on a kernel that has it")
		}
		if fallback {
			s.rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 0) })
			s.ignoreOutgoing = false
		}
		out := rawSocket(t, "", host)
		in := rawSocket(t, ns, peer)
		mk := func(marker string) []byte {
			f := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 2, 0x88, 0xb5}
			return append(f, (marker + strings.Repeat(".", 50))...)
		}
		if err := unix.Send(out, mk("outgoing"), 0); err != nil {
			t.Fatal(err)
		}
		if err := unix.Send(in, mk("incoming"), 0); err != nil {
			t.Fatal(err)
		}
		pkts := []*packet.Packet{packet.New(), packet.New()}
		watchdog := time.AfterFunc(linkDeadline, func() { p.Close() })
		defer watchdog.Stop()
		for found := false; !found; {
			n, err := p.Read(pkts)
			if err != nil {
				t.Fatalf("fallback %v: waiting for the incoming frame: %v", fallback, err)
			}
			for _, pk := range pkts[:n] {
				if bytes.Contains(pk.Data(), []byte("outgoing")) {
					t.Fatalf("fallback %v: read a frame sent out of the device", fallback)
				}
				found = found || bytes.Contains(pk.Data(), []byte("incoming"))
			}
		}
	}
}

func TestLinkInfo(t *testing.T) {
	needRoot(t)
	ns := newNetns(t)
	host, _ := addVeth(t, ns, addrA4+"/24")
	li, err := GetLinkInfo(host)
	if err != nil {
		t.Fatal(err)
	}
	idx, _ := ifIndex(host)
	if li.Index != idx || li.MTU != 1500 || len(li.MAC) != 6 || !li.AdminUp || !li.OperUp || li.Speed != 10000 || li.Duplex != "full" {
		t.Errorf("%+v", li)
	}
	if err := SetMTU(host, 9000); err != nil {
		t.Fatal(err)
	}
	if li, err := GetLinkInfo(host); err != nil || li.MTU != 9000 {
		t.Errorf("after SetMTU 9000: %+v, %v", li, err)
	}
	sh(t, "ip", "link", "set", host, "down")
	if li, err := GetLinkInfo(host); err != nil || li.AdminUp || li.OperUp {
		t.Errorf("after link down: %+v, %v", li, err)
	}
	sh(t, "ip", "link", "set", host, "up")
	exec.Command("ip", "netns", "exec", ns, "ping", "-c", "2", "-i", "0.2", "-W", "1", "10.199.0.9").Run()
	st, err := KernelStats(host)
	if err != nil {
		t.Fatal(err)
	}
	if st.RxPackets == 0 || st.RxBytes == 0 { // the ARP requests
		t.Errorf("kernel stats %+v", st)
	}
	if _, err := GetLinkInfo("gvndnonexist"); !errors.Is(err, unix.ENODEV) {
		t.Errorf("nonexistent link: %v", err)
	}
}

// TestSteadyStateAllocs checks that neither path allocates per batch once
// warm, the software segmentation path included.
func TestSteadyStateAllocs(t *testing.T) {
	needRoot(t)
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race: sync.Pool drops items on purpose")
	}
	ns := newNetns(t)
	hostA, _ := addVeth(t, ns)
	hostB, _ := addVeth(t, ns)
	a := openSystem(t, hostA, Config{})
	plain := openSystem(t, hostB, Config{DisableOffload: true})
	tp, err := OpenTap(uniqueName("t"), Config{DisableOffload: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Close() })

	batch := newBatch()
	fill := func() { fillGSO(batch) }
	for _, port := range []Port{a, plain, tp} {
		allocs := testing.AllocsPerRun(20, func() {
			fill()
			if n, err := port.Write(batch); err != nil || n != len(batch) {
				t.Fatalf("%s: wrote %d of %d: %v", port.Name(), n, len(batch), err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per Write", port.Name(), allocs)
		}
	}

	// Read: a veth pair with both ends here, one port on each.
	x, y := localVeth(t)
	wx := openSystem(t, x, Config{SockBufSize: 8 << 20})
	for _, cfg := range []Config{{}, {DisableOffload: true}} {
		cfg.SockBufSize = 8 << 20
		ry := openSystem(t, y, cfg)
		rbatch := newBatch()
		watchdog := time.AfterFunc(linkDeadline, func() { ry.Close() })
		allocs := testing.AllocsPerRun(20, func() {
			fill()
			if n, err := wx.Write(batch); err != nil || n != len(batch) {
				t.Fatalf("wrote %d of %d: %v", n, len(batch), err)
			}
			for got := 0; got < len(batch); {
				n, err := ry.Read(rbatch)
				if err != nil {
					t.Fatal(err)
				}
				got += n
			}
		})
		watchdog.Stop()
		if allocs != 0 {
			t.Errorf("Read %+v: %v allocations per batch", cfg, allocs)
		}
		ry.Close()
	}
}

// fillGSO fills batch with gsoFrame super-frames.
func fillGSO(batch []*packet.Packet) {
	for i, p := range batch {
		f := gsoFrame(i)
		p.SetData(f.b)
		p.Offload = f.o
	}
}

// localVeth makes a veth pair with both ends in this namespace, up and
// without IPv6; it returns once both are operationally up (until then x
// drops what it sends, and reads on y wait forever).
func localVeth(t *testing.T) (x, y string) {
	t.Helper()
	x, y = uniqueName("h"), uniqueName("p")
	sh(t, "ip", "link", "add", x, "type", "veth", "peer", "name", y)
	t.Cleanup(func() { exec.Command("ip", "link", "del", x).Run() })
	for _, dev := range []string{x, y} {
		os.WriteFile("/proc/sys/net/ipv6/conf/"+dev+"/disable_ipv6", []byte("1"), 0)
		sh(t, "ip", "link", "set", dev, "up")
	}
	for _, dev := range []string{x, y} {
		waitFor(t, dev+" up", linkDeadline, func() bool { return linkUp(dev) })
	}
	return x, y
}
