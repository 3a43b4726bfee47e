//go:build linux

package netdev

import (
	"testing"
)

func setTxRing(t *testing.T) {
	old := txRingOn
	txRingOn = true
	t.Cleanup(func() { txRingOn = old })
}

// TestSystemTxRing: with GOVS_SYSTEM_TX_RING=1 system ports send through
// their send ring, with and without a virtio_net_hdr, super-frames whole
// or cut in software.
func TestSystemTxRing(t *testing.T) {
	needRoot(t)
	setTxRing(t)
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"offload", Config{}},
		{"disable-offload", Config{DisableOffload: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t)
			a := openSystem(t, p.hostA, Config{})
			b := openSystem(t, p.hostB, tc.cfg)
			for _, port := range []Port{a, b} {
				if port.(*systemPort).txr == nil {
					t.Fatalf("%s has no send ring", port.Name())
				}
			}
			forward(t, a, b, nil)
			t.Run("ping", func(t *testing.T) { ping(t, p.nsA, addrB4); ping(t, p.nsB, addrA6) })
			t.Run("tcp4", func(t *testing.T) { tcpEcho(t, p.nsA, p.nsB, addrB4, transferSize) })
			t.Run("tcp6", func(t *testing.T) { tcpEcho(t, p.nsA, p.nsB, addrB6, transferSize) })
			t.Run("udp", func(t *testing.T) { udpBurst(t, p.nsA, p.nsB, addrB4, 200, 1200, 0) })
			t.Run("udp-gso", func(t *testing.T) { udpBurst(t, p.nsA, p.nsB, addrB6, 400, 1000, 1000) })
			sa, sb := a.Stats(), b.Stats()
			t.Logf("A: %+v", sa)
			t.Logf("B: %+v", sb)
			if sa.TxPackets == 0 || sb.TxPackets == 0 {
				t.Errorf("nothing sent: A %+v, B %+v", sa, sb)
			}
		})
	}
}

// TestSystemTxRingAllocs: Write through the send ring allocates nothing,
// with super-frames sent whole and cut in software.
func TestSystemTxRingAllocs(t *testing.T) {
	needRoot(t)
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race: sync.Pool drops items on purpose")
	}
	setTxRing(t)
	ns := newNetns(t)
	hostA, _ := addVeth(t, ns)
	hostB, _ := addVeth(t, ns)
	batch := newBatch()
	for _, port := range []Port{openSystem(t, hostA, Config{}), openSystem(t, hostB, Config{DisableOffload: true})} {
		allocs := testing.AllocsPerRun(20, func() {
			fillGSO(batch)
			if n, err := port.Write(batch); err != nil || n == 0 {
				t.Fatalf("%s: wrote %d of %d: %v", port.Name(), n, len(batch), err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per Write", port.Name(), allocs)
		}
	}
}
