package vhostuser

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev/internal/pkttest"
)

// testLogger records the port's warnings for the test's log.
type testLogger struct {
	t  testing.TB
	mu sync.Mutex
	n  int
}

func (l *testLogger) Warnf(format string, args ...any) {
	l.mu.Lock()
	l.n++
	l.mu.Unlock()
	l.t.Logf("WARN "+format, args...)
}

func (l *testLogger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func testConfig(t testing.TB) Config {
	cfg := DefaultConfig()
	cfg.Logger = &testLogger{t: t}
	cfg.ReconnectInterval = 20 * time.Millisecond
	return cfg
}

// testDeadline bounds what a test waits for: generous, for a loaded
// machine (the port's goroutines may not run for a while); passing is
// unaffected.
const testDeadline = 60 * time.Second

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	if !eventually(d, cond) {
		t.Fatalf("timed out after %v waiting for %s", d, what)
	}
}

// eventually polls cond until it holds (true) or d passes (false), for a
// test that reports the failure itself.
func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

func newPkts(n int) []*packet.Packet {
	pkts := make([]*packet.Packet, n)
	for i := range pkts {
		pkts[i] = packet.New()
	}
	return pkts
}

func resetAll(pkts []*packet.Packet) {
	for _, pk := range pkts {
		pk.Reset()
	}
}

// readWithin reads from p, failing the test if nothing comes within d.
func readWithin(t testing.TB, p *Port, pkts []*packet.Packet, d time.Duration) int {
	t.Helper()
	type res struct {
		n   int
		err error
	}
	ch := make(chan res, 1)
	go func() {
		n, err := p.Read(pkts)
		ch <- res{n, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("Read: %v", r.err)
		}
		return r.n
	case <-time.After(d):
		t.Fatalf("Read: nothing within %v", d)
	}
	return 0
}

// readAll reads until want frames came, failing after d.
func readAll(t testing.TB, p *Port, want int, d time.Duration) []*packet.Packet {
	t.Helper()
	var got []*packet.Packet
	deadline := time.Now().Add(d)
	for len(got) < want {
		pkts := newPkts(32)
		n := readWithin(t, p, pkts, time.Until(deadline))
		got = append(got, pkts[:n]...)
	}
	return got
}

// udpFrame is an Ethernet/IPv4/UDP frame of n bytes from port sport.
func udpFrame(n int, sport uint16) []byte {
	f := pkttest.Frame{
		Dst: [6]byte{2, 0, 0, 0, 0, 2}, Src: [6]byte{2, 0, 0, 0, 0, 1},
		SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"),
		UDP: &pkttest.UDP{SrcPort: sport, DstPort: 9},
	}
	f.Payload = make([]byte, max(0, n-42))
	for i := range f.Payload {
		f.Payload[i] = byte(i * 7)
	}
	return f.Bytes()
}

// tcpFrame is a TCP frame with payload bytes, IPv4 or IPv6.
func tcpFrame(v6 bool, payload int) pkttest.Frame {
	f := pkttest.Frame{
		Dst: [6]byte{2, 0, 0, 0, 0, 2}, Src: [6]byte{2, 0, 0, 0, 0, 1},
		SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"),
		TCP: &pkttest.TCP{SrcPort: 1234, DstPort: 80, Seq: 1000, Flags: pkttest.ACK | pkttest.PSH, Window: 500},
	}
	if v6 {
		f.SrcIP, f.DstIP = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
	}
	f.Payload = make([]byte, payload)
	for i := range f.Payload {
		f.Payload[i] = byte(i)
	}
	return f
}

func pktWith(frame []byte, o packet.Offload) *packet.Packet {
	p := packet.New()
	p.SetData(frame)
	p.Offload = o
	return p
}

// sleepingRead leaves a Read of p asleep on tx, the guest's transmit ring,
// once a frame sent on it has been read; the channel gets how many frames
// the sleeping Read returns.
func sleepingRead(t *testing.T, p *Port, tx *fakeRing) <-chan int {
	t.Helper()
	frame := udpFrame(80, 1)
	tx.tx(hdrFor(tx.f, packet.Offload{}, len(frame)), frame, txLayout{})
	readWithin(t, p, newPkts(8), testDeadline)
	done := make(chan int, 1)
	go func() {
		n, _ := p.Read(newPkts(8))
		done <- n
	}()
	waitFor(t, "the reader asleep", testDeadline, func() bool { return p.sleeping.Load() })
	return done
}

// kickWakes sends a frame on tx: its kick must wake the Read sleepingRead
// left asleep, with that one frame.
func kickWakes(t *testing.T, tx *fakeRing, done <-chan int) {
	t.Helper()
	frame := udpFrame(80, 1)
	tx.tx(hdrFor(tx.f, packet.Offload{}, len(frame)), frame, txLayout{})
	select {
	case n := <-done:
		if n != 1 {
			t.Fatalf("woke with %d frames", n)
		}
	case <-time.After(testDeadline):
		t.Fatal("the kick did not wake Read")
	}
}
