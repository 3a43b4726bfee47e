package netdev

import (
	"sync/atomic"
	"testing"

	"github.com/govs/govs/datapath/packet"
)

// tails makes the frames a forwarder passes on look like zero-copy frames
// from a vhost-user port: their first head bytes in the packet, the rest
// in memory of its own, released when the packet is reset.
type tails struct {
	head                   int
	made, released, copied atomic.Int64
}

type tailMem struct {
	b  []byte
	tl *tails
}

func (m *tailMem) CopyExternal(dst, src []byte) {
	copy(dst, src)
	m.tl.copied.Add(1)
}

func (m *tailMem) ReleaseExternal() {
	clear(m.b) // a frame sent after its release would show
	m.tl.released.Add(1)
}

func (tl *tails) externalize(_ int, p *packet.Packet) {
	d := p.Data()
	if len(d) <= tl.head {
		return
	}
	b := append([]byte(nil), d[tl.head:]...)
	p.SetLen(tl.head)
	p.SetExternal(b, &tailMem{b: b, tl: tl})
	tl.made.Add(1)
}

// check checks that the tails were released and, if vectored, that they
// were sent from where they were, never copied.
func (tl *tails) check(t *testing.T, vectored bool) {
	t.Helper()
	made, rel, copied := tl.made.Load(), tl.released.Load(), tl.copied.Load()
	t.Logf("%d frames with external tails, %d released, %d copied", made, rel, copied)
	// The tails of each direction's last batch go at the next Read.
	if made == 0 || rel < made-2*BatchSize {
		t.Errorf("%d frames with external tails, %d released", made, rel)
	}
	if vectored != (copied == 0) {
		t.Errorf("%d of %d tails copied", copied, made)
	}
}

// Ports send frames whose tails are outside their packets (vectored
// writes; linearized where the frame is finished in software): TCP with
// TSO super-frames and UDP with GSO, both ways, whole and in order.
func TestExternalTailWrite(t *testing.T) {
	needRoot(t)
	for _, m := range offloadModes {
		cfg := m.cfg
		t.Run("system-"+m.name, func(t *testing.T) {
			p := newPair(t)
			tl := &tails{head: 64}
			// B always takes offloads, so that A gets GSO frames to
			// finish in software when it does not.
			forward(t, openSystem(t, p.hostA, cfg), openSystem(t, p.hostB, Config{}), tl.externalize)
			ping(t, p.nsA, addrB4)
			tcpEcho(t, p.nsA, p.nsB, addrB4, transferSize)
			udpBurst(t, p.nsB, p.nsA, addrA4, 400, 1000, 1000)
			tl.check(t, !cfg.DisableOffload)
		})
		t.Run("tap-"+m.name, func(t *testing.T) {
			tp, nsA, nsB, hostB := tapPair(t, cfg)
			tl := &tails{head: 64}
			forward(t, tp, openSystem(t, hostB, Config{}), tl.externalize)
			ping(t, nsA, addrB4)
			tcpEcho(t, nsB, nsA, addrA4, transferSize)
			udpBurst(t, nsB, nsA, addrA4, 400, 1000, 1000)
			tl.check(t, !cfg.DisableOffload)
		})
	}
}
