package tests

// End-to-end tests of the ports' kernel-side settings: userspace-tso-enable
// and userspace-sock-buf-size, applied live. Kernel objects are named gvof*.

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const (
	gvofBridge   = "gvofbr"
	gvofInternal = "gvofi0"
	gvofHostIP   = "10.251.77.1" // on gvofInternal, in the root namespace
	gvofNSIP     = "10.251.77.2" // eth0 of namespace gvof-a
)

// gvofAddNS is vswAddNS with this file's prefix: namespace gvof-<tag> whose
// eth0 holds addr, host side gvof<tag>.
func gvofAddNS(t *testing.T, tag, addr string) *vswNS {
	t.Helper()
	return vswAddPrefixedNS(t, "gvof", tag, addr)
}

// gvofInNS runs f on a thread in namespace ns, for creating sockets there:
// a socket stays in the namespace it was created in. The thread is not
// unlocked, so the runtime discards it afterwards.
func gvofInNS(t *testing.T, ns string, f func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		fd, err := unix.Open("/var/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// gvofStatus returns Interface.status of name.
func gvofStatus(e *vswEnv, name string) map[string]string {
	e.t.Helper()
	out := e.mustVsctl("--", "get", "interface", name, "status")
	m := map[string]string{}
	for _, kv := range regexp.MustCompile(`([a-z_]+)=("[^"]*"|[^,}]*)`).FindAllStringSubmatch(out, -1) {
		m[kv[1]] = strings.Trim(kv[2], `"`)
	}
	return m
}

// gvofWaitStatus waits until name's status has key=want for every pair.
func gvofWaitStatus(e *vswEnv, name string, kv ...string) {
	e.t.Helper()
	var last map[string]string
	deadline := time.Now().Add(vswTimeout)
	for {
		last = gvofStatus(e, name)
		ok := true
		for i := 0; i < len(kv); i += 2 {
			ok = ok && last[kv[i]] == kv[i+1]
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: status %v, want %v", name, last, kv)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// gvofSSBufs returns the rb/tb of the switch's packet socket on dev, from
// ss -f link -m -p.
func gvofSSBufs(t *testing.T, pid int, dev string) (rb, tb int) {
	t.Helper()
	out, err := vswRun("ss", "-H", "-f", "link", "-m", "-p")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out, "\n")
	re := regexp.MustCompile(`skmem:\(r\d+,rb(\d+),t\d+,tb(\d+)`)
	for i, l := range lines {
		if !strings.Contains(l, fmt.Sprintf("pid=%d,", pid)) || !regexp.MustCompile(`\*:`+dev+`\s`).MatchString(l+" ") {
			continue
		}
		// skmem is on the same line or the next.
		m := re.FindStringSubmatch(l)
		if m == nil && i+1 < len(lines) {
			m = re.FindStringSubmatch(lines[i+1])
		}
		if m != nil {
			rb, _ = strconv.Atoi(m[1])
			tb, _ = strconv.Atoi(m[2])
			return rb, tb
		}
	}
	t.Fatalf("no packet socket of pid %d on %s in ss output:\n%s", pid, dev, out)
	return 0, 0
}

// gvofTCP sends 1 MiB of random bytes from namespace ns to the root
// namespace through the switch, and 1 MiB back, and checks both arrive
// byte-identical.
func gvofTCP(t *testing.T, ns string) {
	t.Helper()
	const size = 1 << 20
	up, down := make([]byte, size), make([]byte, size)
	rand.Read(up)
	rand.Read(down)
	ln, err := net.Listen("tcp4", gvofHostIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srvErr := make(chan error, 1)
	var gotUp []byte
	go func() {
		c, err := ln.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(vswTimeout))
		sent := make(chan error, 1)
		go func() { _, err := c.Write(down); sent <- err }()
		gotUp, err = io.ReadAll(io.LimitReader(c, size))
		if err == nil {
			err = <-sent
		}
		srvErr <- err
	}()
	var c net.Conn
	gvofInNS(t, ns, func() (err error) {
		c, err = net.DialTimeout("tcp4", ln.Addr().String(), vswTimeout)
		return err
	})
	defer c.Close()
	c.SetDeadline(time.Now().Add(vswTimeout))
	sent := make(chan error, 1)
	go func() { _, err := c.Write(up); sent <- err }()
	gotDown, err := io.ReadAll(io.LimitReader(c, size))
	if err != nil {
		t.Fatalf("receiving in %s: %v", ns, err)
	}
	if err := <-sent; err != nil {
		t.Fatalf("sending from %s: %v", ns, err)
	}
	if err := <-srvErr; err != nil {
		t.Fatalf("server: %v", err)
	}
	if sha256.Sum256(gotUp) != sha256.Sum256(up) || len(gotUp) != size {
		t.Errorf("%s -> root: %d bytes received, not identical to the %d sent", ns, len(gotUp), size)
	}
	if sha256.Sum256(gotDown) != sha256.Sum256(down) || len(gotDown) != size {
		t.Errorf("root -> %s: %d bytes received, not identical to the %d sent", ns, len(gotDown), size)
	}
}

// gvofUDP sends a burst of datagrams of mixed sizes (some above the MTU, so
// IP-fragmented) each way and checks that every one arrives intact.
func gvofUDP(t *testing.T, ns string) {
	t.Helper()
	const count = 48
	sizes := []int{18, 100, 1000, 1472, 3000, 8000}
	var nsConn *net.UDPConn
	gvofInNS(t, ns, func() (err error) {
		nsConn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(gvofNSIP)})
		return err
	})
	defer nsConn.Close()
	hostConn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(gvofHostIP)})
	if err != nil {
		t.Fatal(err)
	}
	defer hostConn.Close()
	for _, c := range []*net.UDPConn{nsConn, hostConn} {
		c.SetReadBuffer(8 << 20)
	}
	burst := func(from, to *net.UDPConn, dir string) {
		want := map[[32]byte]bool{}
		for i := range count {
			b := make([]byte, sizes[i%len(sizes)])
			rand.Read(b)
			if len(b) >= 2 {
				binary.BigEndian.PutUint16(b, uint16(i))
			}
			want[sha256.Sum256(b)] = true
			if _, err := from.WriteToUDP(b, to.LocalAddr().(*net.UDPAddr)); err != nil {
				t.Fatalf("%s: send: %v", dir, err)
			}
		}
		buf := make([]byte, 65536)
		to.SetReadDeadline(time.Now().Add(vswTimeout))
		for got := 0; got < count; got++ {
			n, _, err := to.ReadFromUDP(buf)
			if err != nil {
				t.Fatalf("%s: %d of %d datagrams arrived: %v", dir, got, count, err)
			}
			h := sha256.Sum256(buf[:n])
			if !want[h] {
				t.Fatalf("%s: a %d-byte datagram arrived that was not sent (or twice)", dir, n)
			}
			delete(want, h)
		}
	}
	burst(nsConn, hostConn, ns+" -> root")
	burst(hostConn, nsConn, "root -> "+ns)
}

// gvofSetup starts a switch with bridge gvofbr holding veth gvofa (namespace
// gvof-a), veth gvofb (namespace gvof-b, no traffic) and internal port
// gvofi0, addressed in the root namespace.
func gvofSetup(t *testing.T) (*vswEnv, *vswNS) {
	e := vswNewEnv(t)
	a := gvofAddNS(t, "a", gvofNSIP+"/24")
	b := gvofAddNS(t, "b", "")
	e.mustVsctl("add-br", gvofBridge, "--", "set", "bridge", gvofBridge, "datapath_type=netdev",
		"--", "add-port", gvofBridge, a.Host, "--", "add-port", gvofBridge, b.Host,
		"--", "add-port", gvofBridge, gvofInternal, "--", "set", "interface", gvofInternal, "type=internal")
	t.Cleanup(func() { vswRun("ip", "link", "del", gvofInternal) })
	for _, c := range [][]string{
		{"ip", "addr", "add", gvofHostIP + "/24", "dev", gvofInternal},
		{"ip", "link", "set", gvofInternal, "up"},
	} {
		if _, err := vswRun(c[0], c[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	a.waitPing(gvofHostIP)
	return e, a
}

// TestVswitchdOffloadToggle: TCP and UDP arrive intact through a veth and an
// internal (tap) port with offloads on, and after userspace-tso-enable=false
// reopened the ports live without changing their ofports.
func TestVswitchdOffloadToggle(t *testing.T) {
	e, a := gvofSetup(t)
	ports := []string{a.Host, gvofInternal, gvofBridge}
	ofports := map[string]int{}
	for _, p := range ports {
		ofports[p] = e.ofport(p)
		gvofWaitStatus(e, p, "tx_tcp_seg_offload", "true", "tx_tcp_csum_offload", "true")
	}
	gvofWaitStatus(e, gvofInternal, "sock_buf", "none")
	for _, tso := range []string{"true", "false", "true"} {
		t.Run("tso="+tso, func(t *testing.T) {
			e.mustVsctl("set", "open_vswitch", ".", "other_config:userspace-tso-enable="+tso)
			for _, p := range ports {
				gvofWaitStatus(e, p, "tx_tcp_seg_offload", tso, "tx_tcp_csum_offload", tso, "tx_udp_csum_offload", tso)
				t.Logf("%s status: %s", p, e.mustVsctl("get", "interface", p, "status"))
				if n := e.ofport(p); n != ofports[p] {
					t.Errorf("%s: ofport %d, was %d", p, n, ofports[p])
				}
			}
			if out, _ := vswRun("ip", "-br", "addr", "show", gvofInternal); !strings.Contains(out, gvofHostIP) {
				t.Fatalf("%s lost its address across the reopen: %s", gvofInternal, out)
			}
			a.waitPing(gvofHostIP)
			gvofTCP(t, a.Name)
			gvofUDP(t, a.Name)
		})
	}
	if log, _ := os.ReadFile(e.logPath()); !bytes.Contains(log, []byte(a.Host+": reopened with offloads off")) {
		t.Errorf("the log does not show %s reopened", a.Host)
	}
}

// TestVswitchdSockBuf: the global and per-interface userspace-sock-buf-size
// resize the running sockets (Interface status, cross-checked with ss),
// removal restores the ring's buffer and the kernel's default send buffer, and bad values are refused with a
// WARN while pings go through without loss.
func TestVswitchdSockBuf(t *testing.T) {
	e, a := gvofSetup(t)
	pid := vswReadPid(e.dir + "/ovs-vswitchd.pid")
	b := "gvofb"
	def := func(key string) string {
		v, err := os.ReadFile("/proc/sys/net/core/" + key)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(v))
	}
	// Unset, a system port reads its receive ring, whose socket keeps the
	// frames larger than a slot in a receive buffer of 16 MiB (read back
	// doubled); its send buffer is the kernel's default.
	rdef, wdef := gvsbRingRx, def("wmem_default")
	check := func(dev, rx, tx string) {
		t.Helper()
		gvofWaitStatus(e, dev, "rx_sock_buf", rx, "tx_sock_buf", tx)
		rb, tb := gvofSSBufs(t, pid, dev)
		t.Logf("%s: status %s/%s, ss rb%d tb%d", dev, rx, tx, rb, tb)
		if strconv.Itoa(rb) != rx || strconv.Itoa(tb) != tx {
			t.Errorf("%s: ss shows rb%d tb%d, status %s/%s", dev, rb, tb, rx, tx)
		}
	}
	check(a.Host, rdef, wdef)
	check(b, rdef, wdef)

	e.mustVsctl("set", "open_vswitch", ".", "other_config:userspace-sock-buf-size=1048576")
	check(a.Host, "2097152", "2097152")
	check(b, "2097152", "2097152")
	gvofWaitStatus(e, gvofInternal, "sock_buf", "none")

	e.mustVsctl("set", "interface", a.Host, "other_config:userspace-sock-buf-size=4194304")
	check(a.Host, "8388608", "8388608")
	check(b, "2097152", "2097152")

	// Above net.core.rmem_max: SO_RCVBUFFORCE is not capped.
	e.mustVsctl("set", "open_vswitch", ".", "other_config:userspace-sock-buf-size=67108864")
	check(b, "134217728", "134217728")
	check(a.Host, "8388608", "8388608")

	// Bad values, global and per interface, while pings run.
	ping := exec.Command("ip", "netns", "exec", a.Name, "ping", "-q", "-n", "-c", "60", "-i", "0.05", "-w", vswPingDeadline, gvofHostIP)
	var pout bytes.Buffer
	ping.Stdout, ping.Stderr = &pout, &pout
	if err := ping.Start(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"abc", "100", "2000000000"} {
		e.mustVsctl("set", "open_vswitch", ".", "other_config:userspace-sock-buf-size="+bad)
		e.mustVsctl("set", "interface", a.Host, "other_config:userspace-sock-buf-size="+bad)
		for _, where := range []string{"Open_vSwitch", "interface " + a.Host} {
			want := fmt.Sprintf(`|WARN|%s: ignoring invalid other_config:userspace-sock-buf-size="%s" (must be an integer in the range 212992..1073741823)`, where, bad)
			vswWait(t, vswTimeout, "WARN "+want, func() bool {
				log, _ := os.ReadFile(e.logPath())
				return bytes.Contains(log, []byte(want))
			})
		}
		check(b, "134217728", "134217728")
		check(a.Host, "8388608", "8388608")
	}
	if err := ping.Wait(); err != nil || !strings.Contains(pout.String(), " 0% packet loss") {
		t.Errorf("ping during bad values: %v\n%s", err, pout.String())
	}

	// Removal: per interface back to the global, global back to default.
	e.mustVsctl("set", "open_vswitch", ".", "other_config:userspace-sock-buf-size=1048576")
	e.mustVsctl("remove", "interface", a.Host, "other_config", "userspace-sock-buf-size")
	check(a.Host, "2097152", "2097152")
	e.mustVsctl("remove", "open_vswitch", ".", "other_config", "userspace-sock-buf-size")
	check(a.Host, rdef, wdef)
	check(b, rdef, wdef)
	a.waitPing(gvofHostIP)
}
