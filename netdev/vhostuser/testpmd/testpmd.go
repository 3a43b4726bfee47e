// Package testpmd runs DPDK's dpdk-testpmd with a virtio-user port: the real
// vhost-user frontend that govs' tests use in place of a VM. Processes are
// stopped by the pid the test started, and their hugepage files removed.
// netdev/vhostuser/testdata/setup.sh installs testpmd and reserves hugepages.
package testpmd

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Need fails the test unless it runs as root with dpdk-testpmd and at
// least freePages free hugepages mounted on /dev/hugepages.
func Need(t testing.TB, freePages int) {
	t.Helper()
	const setup = "run netdev/vhostuser/testdata/setup.sh as root"
	if os.Geteuid() != 0 {
		t.Fatal("the testpmd tests need root (hugepages, DPDK): " + setup)
	}
	if _, err := exec.LookPath("dpdk-testpmd"); err != nil {
		t.Fatal("dpdk-testpmd not found (Debian package dpdk-dev): " + setup)
	}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`HugePages_Free:\s+(\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no HugePages_Free in /proc/meminfo")
	}
	if n, _ := strconv.Atoi(string(m[1])); n < freePages {
		t.Fatalf("%s free hugepages, these tests need %d: %s", m[1], freePages, setup)
	}
	if err := exec.Command("mountpoint", "-q", "/dev/hugepages").Run(); err != nil {
		t.Fatal("/dev/hugepages is not mounted: " + setup)
	}
}

// Options say how to run one testpmd.
type Options struct {
	// Socket is the vhost-user socket; with Server, testpmd serves it.
	Socket string
	Server bool
	// Mode is testpmd's --forward-mode (txonly, rxonly, icmpecho, io...).
	Mode string
	// QueueSize is the virtqueue size (256 if 0); Mbufs the mbuf pool
	// (4096 if 0); Queues the queue pairs (1 if 0), each used by testpmd.
	QueueSize, Mbufs, Queues int
	// VdevOpts are appended to the vdev's options (",packed_vq=1");
	// Extra to testpmd's own.
	VdevOpts string
	Extra    []string
	// MAC is the virtio-user port's address ("" for DPDK's default).
	MAC string
}

// Process is a running testpmd.
type Process struct {
	cmd    *exec.Cmd
	prefix string
	done   chan struct{}

	mu  sync.Mutex
	out bytes.Buffer // guarded by mu
}

var seq struct {
	sync.Mutex
	n int
}

// Start runs testpmd as o says, both of its lcores on CPU 0, and stops it
// when the test ends (logging its last output if the test failed).
func Start(t testing.TB, o Options) *Process {
	t.Helper()
	seq.Lock()
	seq.n++
	prefix := fmt.Sprintf("govstp%d_%d", os.Getpid(), seq.n)
	seq.Unlock()
	qs, mbufs := o.QueueSize, o.Mbufs
	if qs == 0 {
		qs = 256
	}
	if mbufs == 0 {
		mbufs = 4096
	}
	queues := max(o.Queues, 1)
	vdev := fmt.Sprintf("net_virtio_user0,path=%s,queues=%d,queue_size=%d", o.Socket, queues, qs)
	if o.MAC != "" {
		vdev += ",mac=" + o.MAC
	}
	vdev += o.VdevOpts
	if o.Server {
		vdev += ",server=1"
	}
	args := []string{
		"--lcores", "0@0,1@0", "--file-prefix=" + prefix, "--socket-mem", "128", "--single-file-segments",
		"--no-pci", "--vdev", vdev, "--log-level=lib.eal:error",
		"--", fmt.Sprintf("--total-num-mbufs=%d", mbufs), fmt.Sprintf("--rxd=%d", qs), fmt.Sprintf("--txd=%d", qs),
		"--forward-mode=" + o.Mode, "--stats-period", "1",
		fmt.Sprintf("--rxq=%d", queues), fmt.Sprintf("--txq=%d", queues),
	}
	p := &Process{prefix: prefix, done: make(chan struct{})}
	p.cmd = exec.Command("dpdk-testpmd", append(args, o.Extra...)...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start testpmd: %v", err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("testpmd %s output:\n%s", prefix, Tail(p.Output(), 3000))
		}
	})
	return p
}

// Write collects testpmd's output.
func (p *Process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

// Output returns what testpmd printed so far.
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// Stop interrupts testpmd by its pid (it prints its final statistics),
// waits for it and removes its hugepage files. It may be called again.
func (p *Process) Stop() {
	select {
	case <-p.done:
	default:
		p.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
	}
	files, _ := filepath.Glob("/dev/hugepages/" + p.prefix + "*")
	for _, f := range files {
		os.Remove(f)
	}
	os.RemoveAll("/var/run/dpdk/" + p.prefix)
}

// WaitOutput waits up to d until testpmd has printed something matching re.
func (p *Process) WaitOutput(re string, d time.Duration) bool {
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if rx.MatchString(p.Output()) {
			return true
		}
		select {
		case <-p.done:
			return rx.MatchString(p.Output())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return false
}

var nicRxRe = regexp.MustCompile(`NIC statistics for port 0\s+#+\s+RX-packets:\s*(\d+)`)

// nicRx returns RX-packets of every periodic statistics block (--stats-period
// 1: one a second) testpmd has printed so far, oldest first.
func (p *Process) nicRx() []uint64 {
	var rx []uint64
	for _, m := range nicRxRe.FindAllStringSubmatch(p.Output(), -1) {
		n, _ := strconv.ParseUint(m[1], 10, 64)
		rx = append(rx, n)
	}
	return rx
}

// WaitRx waits up to d until testpmd's periodic statistics show at least
// n frames received, and returns the last count it saw.
func (p *Process) WaitRx(n uint64, d time.Duration) (uint64, bool) {
	var last uint64
	ok := p.waitStats(d, func(rx []uint64) bool {
		last = rx[len(rx)-1]
		return last >= n
	})
	return last, ok
}

// WaitRxSettled waits up to d until two periodic statistics blocks printed
// after the call show the same RX-packets: for a whole statistics period,
// nothing was left for testpmd to receive.
func (p *Process) WaitRxSettled(d time.Duration) bool {
	seen := len(p.nicRx())
	return p.waitStats(d, func(rx []uint64) bool {
		rx = rx[seen:]
		return len(rx) >= 2 && rx[len(rx)-1] == rx[len(rx)-2]
	})
}

func (p *Process) waitStats(d time.Duration, cond func(rx []uint64) bool) bool {
	deadline := time.Now().Add(d)
	for {
		if rx := p.nicRx(); len(rx) > 0 && cond(rx) {
			return true
		}
		if time.Now().After(deadline) || p.Exited() {
			return false
		}
		time.Sleep(50 * time.Millisecond) // polling the output testpmd prints once a second
	}
}

// Totals returns RX-packets and TX-packets of the final statistics, which
// testpmd prints when stopped. RX is the last periodic NIC count if that is
// larger: the forwarding statistics can leave out frames testpmd took from
// the rings (on a loaded machine, 608 of the 428 673 its NIC count had;
// testpmd discards what it finds as forwarding starts, flush_fwd_rx_queues).
func (p *Process) Totals() (rx, tx uint64, err error) {
	defer func() {
		if n := p.nicRx(); err == nil && len(n) > 0 && n[len(n)-1] > rx {
			rx = n[len(n)-1]
		}
	}()
	out := p.Output()
	i := bytes.LastIndex([]byte(out), []byte("Forward statistics for port 0"))
	if i < 0 {
		return 0, 0, fmt.Errorf("no final statistics in testpmd output:\n%s", Tail(out, 3000))
	}
	out = out[i:]
	rxm := regexp.MustCompile(`RX-packets:\s*(\d+)`).FindStringSubmatch(out)
	txm := regexp.MustCompile(`TX-packets:\s*(\d+)`).FindStringSubmatch(out)
	if rxm == nil || txm == nil {
		return 0, 0, fmt.Errorf("no packet counts in:\n%s", Tail(out, 3000))
	}
	rx, _ = strconv.ParseUint(rxm[1], 10, 64)
	tx, _ = strconv.ParseUint(txm[1], 10, 64)
	return rx, tx, nil
}

// Tail returns the last n bytes of s.
func Tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Exited reports whether testpmd has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
