//go:build linux

package netdev

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// afxdpPair is a pair of namespaces whose veths' peers send complete
// checksums (tx offload off, as OVS's AF_XDP documentation sets up: an
// AF_XDP frame has no metadata to carry a partial one).
func afxdpPair(t *testing.T) pair {
	t.Helper()
	if _, err := exec.LookPath("ethtool"); err != nil {
		t.Fatalf("this test needs ethtool: %v", err)
	}
	p := newPair(t)
	for _, x := range [][2]string{{p.nsA, p.peerA}, {p.nsB, p.peerB}} {
		sh(t, "ip", "netns", "exec", x[0], "ethtool", "-K", x[1], "tx", "off")
	}
	return p
}

func openAFXDPPort(t *testing.T, name string, cfg AFXDPConfig) Port {
	t.Helper()
	p, err := OpenAFXDP(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// xdpAttached reports whether dev has an XDP program.
func xdpAttached(t *testing.T, dev string) bool {
	return strings.Contains(sh(t, "ip", "link", "show", "dev", dev), " prog/xdp")
}

func TestAFXDPForwarding(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		cfg  AFXDPConfig
		want XDPMode
	}{
		{AFXDPConfig{Mode: XDPGeneric, NeedWakeup: true}, XDPGeneric},
		{AFXDPConfig{Mode: XDPNative}, XDPNative},
		// veth has no zero-copy: best-effort settles on native.
		{AFXDPConfig{Mode: XDPBestEffort, NeedWakeup: true}, XDPNative},
	} {
		t.Run(tc.cfg.Mode.String(), func(t *testing.T) {
			p := afxdpPair(t)
			a := openAFXDPPort(t, p.hostA, tc.cfg)
			b := openAFXDPPort(t, p.hostB, tc.cfg)
			if got := a.(*afxdpPort).Mode(); got != tc.want {
				t.Errorf("mode %v, want %v", got, tc.want)
			}
			if !xdpAttached(t, p.hostA) {
				t.Fatalf("%s has no XDP program:\n%s", p.hostA, sh(t, "ip", "link", "show", "dev", p.hostA))
			}
			forward(t, a, b, nil)
			t.Run("ping", func(t *testing.T) { ping(t, p.nsA, addrB4); ping(t, p.nsB, addrA6) })
			t.Run("tcp4", func(t *testing.T) { tcpEcho(t, p.nsA, p.nsB, addrB4, transferSize) })
			t.Run("udp", func(t *testing.T) { udpBurst(t, p.nsA, p.nsB, addrB4, 200, 1200, 0) })
			sa, sb := a.Stats(), b.Stats()
			t.Logf("A: %+v", sa)
			t.Logf("B: %+v", sb)
			if sa.RxPackets == 0 || sa.TxPackets == 0 || sb.RxBytes == 0 || sb.TxBytes == 0 {
				t.Errorf("counters not moving: A %+v, B %+v", sa, sb)
			}
			a.Close()
			if xdpAttached(t, p.hostA) {
				t.Errorf("XDP program left on %s after Close", p.hostA)
			}
		})
	}
}

// TestAFXDPErrors: a device that cannot run a mode says why, and leaves no
// program behind; a device with another's program keeps it.
func TestAFXDPErrors(t *testing.T) {
	needRoot(t)
	if _, err := OpenAFXDP("gvnd-no-such", AFXDPConfig{}); err == nil {
		t.Fatal("opened a missing device")
	}
	p := afxdpPair(t)
	_, err := OpenAFXDP(p.hostA, AFXDPConfig{Mode: XDPNativeZC})
	if err == nil || !strings.Contains(err.Error(), "native-with-zerocopy") {
		t.Fatalf("zero-copy on a veth: %v, want a native-with-zerocopy error", err)
	}
	t.Logf("zero-copy on a veth: %v", err)
	if xdpAttached(t, p.hostA) {
		t.Errorf("XDP program left on %s after a failed open", p.hostA)
	}
	a := openAFXDPPort(t, p.hostA, AFXDPConfig{Mode: XDPGeneric})
	if _, err := OpenAFXDP(p.hostA, AFXDPConfig{Mode: XDPGeneric}); err == nil {
		t.Error("a second port took a device that has one")
	}
	if !xdpAttached(t, p.hostA) {
		t.Error("a failed second open removed the first port's program")
	}
	a.Close()
}

// TestAFXDPSteadyStateAllocs: Read and Write allocate nothing per batch,
// whether Write sends frames as they are or cuts super-frames.
func TestAFXDPSteadyStateAllocs(t *testing.T) {
	needRoot(t)
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race: sync.Pool drops items on purpose")
	}
	x, y := localVeth(t)
	wx := openSystem(t, x, Config{SockBufSize: 8 << 20})
	ry := openAFXDPPort(t, y, AFXDPConfig{Mode: XDPNative, NeedWakeup: true})
	batch, rbatch := newBatch(), newBatch()
	gso := func() { fillGSO(batch) }
	frames := make([][]byte, len(batch))
	for i := range frames {
		frames[i] = ringTestFrame(i)
	}
	plain := func() {
		for i, p := range batch {
			p.Reset()
			p.SetData(frames[i])
		}
	}
	if allocs := testing.AllocsPerRun(20, func() {
		gso()
		if n, err := ry.Write(batch); err != nil || n != len(batch) {
			t.Fatalf("wrote %d of %d: %v", n, len(batch), err)
		}
	}); allocs != 0 {
		t.Errorf("%v allocations per Write", allocs)
	}
	watchdog := time.AfterFunc(linkDeadline, func() { ry.Close() })
	defer watchdog.Stop()
	allocs := testing.AllocsPerRun(20, func() {
		plain()
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
	if allocs != 0 {
		t.Errorf("%v allocations per Read batch", allocs)
	}
}
