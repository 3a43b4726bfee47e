//go:build linux

package netdev

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govs/govs/datapath/packet"
)

// Namespaces and links made here are named gvnd<pid><seq><role>, so that
// they clash neither with other packages' tests nor with a concurrent run.
var nameSeq atomic.Int32

func uniqueName(role string) string {
	return fmt.Sprintf("gvnd%04x%02d%s", os.Getpid()&0xffff, nameSeq.Add(1)%100, role)
}

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test creates network namespaces, veths and taps: it must run as root (CI runs go test as root)")
	}
	for _, tool := range []string{"ip", "ping"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("this test needs %s (iproute2, iputils-ping): %v", tool, err)
		}
	}
}

func sh(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func newNetns(t testing.TB) string {
	t.Helper()
	name := uniqueName("n")
	sh(t, "ip", "netns", "add", name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	sh(t, "ip", "-n", name, "link", "set", "lo", "up")
	return name
}

// addVeth makes a veth pair whose host end stays in this namespace, up and
// without IPv6 (so that it sends nothing of its own), and whose peer goes
// into ns, up, with addrs. It returns once both ends are operationally up:
// before that (linkwatch runs late on a loaded machine) a veth drops what
// it sends.
func addVeth(t testing.TB, ns string, addrs ...string) (host, peer string) {
	t.Helper()
	host, peer = uniqueName("h"), uniqueName("p")
	sh(t, "ip", "link", "add", host, "type", "veth", "peer", "name", peer, "netns", ns)
	t.Cleanup(func() { exec.Command("ip", "link", "del", host).Run() })
	os.WriteFile("/proc/sys/net/ipv6/conf/"+host+"/disable_ipv6", []byte("1"), 0)
	sh(t, "ip", "link", "set", host, "up")
	configure(t, ns, peer, addrs...)
	waitFor(t, host+" up", linkDeadline, func() bool { return linkUp(host) })
	waitFor(t, peer+" up", linkDeadline, func() bool { return linkUpIn(t, ns, peer) })
	return host, peer
}

// linkDeadline bounds waits for links and daemons: generous, for a loaded
// machine; passing is unaffected.
const linkDeadline = 60 * time.Second

// linkUpIn reports whether dev in namespace ns is operationally up.
func linkUpIn(t testing.TB, ns, dev string) bool {
	up := false
	inNetns(t, ns, func() { up = linkUp(dev) })
	return up
}

func configure(t testing.TB, ns, dev string, addrs ...string) {
	t.Helper()
	for _, a := range addrs {
		args := []string{"ip", "-n", ns, "addr", "add", a, "dev", dev}
		if strings.Contains(a, ":") {
			args = append(args, "nodad")
		}
		sh(t, args...)
	}
	sh(t, "ip", "-n", ns, "link", "set", dev, "up")
}

// inNetns runs f on a thread in the named namespace: sockets f creates stay
// in it.
func inNetns(t testing.TB, ns string, f func()) {
	t.Helper()
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	defer orig.Close()
	target, err := os.Open("/run/netns/" + ns)
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("setns %s: %v", ns, err)
	}
	defer func() {
		// A thread that cannot go back stays locked, and so dies with
		// its goroutine instead of serving others in the wrong namespace.
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			t.Errorf("setns back: %v", err)
			return
		}
		runtime.UnlockOSThread()
	}()
	f()
}

// forwarder moves frames between two ports both ways, the way the datapath
// will, and watches what goes through.
type forwarder struct {
	wg      sync.WaitGroup
	gso     [2]atomic.Int64 // super-frames read from a, from b
	frames  [2]atomic.Int64
	errs    chan error
	inspect func(from int, p *packet.Packet) // called in the forwarding goroutines
}

func forward(t *testing.T, a, b Port, inspect func(from int, p *packet.Packet)) *forwarder {
	f := &forwarder{errs: make(chan error, 2), inspect: inspect}
	f.wg.Add(2)
	go f.loop(0, a, b)
	go f.loop(1, b, a)
	t.Cleanup(func() {
		a.Close()
		b.Close()
		f.wg.Wait()
		close(f.errs)
		for err := range f.errs {
			t.Errorf("forwarder: %v", err)
		}
	})
	return f
}

// newBatch returns BatchSize new packets.
func newBatch() []*packet.Packet {
	pkts := make([]*packet.Packet, BatchSize)
	for i := range pkts {
		pkts[i] = packet.New()
	}
	return pkts
}

func (f *forwarder) loop(dir int, src, dst Port) {
	defer f.wg.Done()
	pkts := newBatch()
	for {
		n, err := src.Read(pkts)
		if err != nil {
			if !errors.Is(err, ErrClosed) {
				f.errs <- fmt.Errorf("read %s: %w", src.Name(), err)
			}
			return
		}
		for _, p := range pkts[:n] {
			if p.Offload.GSO != packet.GSONone {
				f.gso[dir].Add(1)
			}
			if f.inspect != nil {
				f.inspect(dir, p)
			}
		}
		f.frames[dir].Add(int64(n))
		if _, err := dst.Write(pkts[:n]); err != nil && !errors.Is(err, ErrClosed) {
			f.errs <- fmt.Errorf("write %s: %w", dst.Name(), err)
			return
		}
	}
}

// rawSocket opens an AF_PACKET socket with PACKET_AUXDATA on dev in ns, to
// send and receive frames independently of the code under test.
func rawSocket(t testing.TB, ns, dev string) int {
	t.Helper()
	fd := -1
	f := func() {
		ifi, err := net.InterfaceByName(dev)
		if err != nil {
			t.Fatal(err)
		}
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
			t.Fatal(err)
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
			t.Fatal(err)
		}
		tv := unix.Timeval{Sec: 10}
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			t.Fatal(err)
		}
	}
	if ns == "" {
		f()
	} else {
		inNetns(t, ns, f)
	}
	return fd
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// offloadModes are the two ways a port is opened: with a virtio_net_hdr
// (offloads handed over) and without (every frame finished in software).
var offloadModes = []struct {
	name string
	cfg  Config
}{{"vnet", Config{}}, {"plain", Config{DisableOffload: true}}}

// tapPair is a tap device opened with cfg and moved into a new namespace
// A with addrA4/addrA6, and a veth whose peer is in a new namespace B with
// addrB4/addrB6; the veth's host end is hostB.
func tapPair(t *testing.T, cfg Config) (tp Port, nsA, nsB, hostB string) {
	t.Helper()
	nsA, nsB = newNetns(t), newNetns(t)
	tapName := uniqueName("t")
	tp, err := OpenTap(tapName, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Close() })
	// A tap can move to another namespace with its file open.
	sh(t, "ip", "link", "set", tapName, "netns", nsA)
	configure(t, nsA, tapName, addrA4+"/24", addrA6+"/64")
	hostB, _ = addVeth(t, nsB, addrB4+"/24", addrB6+"/64")
	return tp, nsA, nsB, hostB
}
