package vhostuser

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/govs/govs/datapath/packet"
)

// TestPackedRingWraps runs frames of 1 to 3 descriptors through packed
// rings of 16 entries many laps over, both ways, with event indexes or
// without.
func TestPackedRingWraps(t *testing.T) {
	for _, features := range []uint64{packedFeatures, packedFeatures &^ (1 << featRingEventIdx), packedFeatures &^ (1 << featNetMrgRxbuf)} {
		t.Run(fmt.Sprintf("%#x", features), func(t *testing.T) {
			p, f := listenPair(t, testConfig(t))
			f.negotiate(features, 1, 16)
			waitFor(t, "running", testDeadline, p.Running)
			tx, rx := f.rings[1], f.rings[0]
			var sent [][]byte
			for round := range 40 {
				var batch [][]byte
				for i := range 5 {
					frame := udpFrame(100+(round*37+i)%800, uint16(round*5+i))
					if !tx.tx(hdrFor(f, packet.Offload{}, len(frame)), frame, txLayout{pieces: 1 + (round+i)%3}) {
						break
					}
					batch = append(batch, frame)
				}
				got := readAll(t, p, len(batch), testDeadline)
				for i, g := range got {
					if !bytes.Equal(g.Data(), batch[i]) {
						t.Fatalf("round %d frame %d differs", round, i)
					}
				}
				if n := tx.reclaim(); n != len(batch) {
					t.Fatalf("round %d: %d of %d returned", round, n, len(batch))
				}
				// Back to the guest, through buffers that take a
				// frame in one or two (mergeable) pieces.
				rx.postRx(6, 1024, txLayout{pieces: 1 + round%2})
				if n, _ := p.Write(got); n != len(got) {
					t.Fatalf("round %d: wrote %d of %d (%+v)", round, n, len(got), p.Counters())
				}
				back, err := rx.recv()
				if err != nil || len(back) != len(got) {
					t.Fatalf("round %d: guest got %d, %v", round, len(back), err)
				}
				for i, b := range back {
					if !bytes.Equal(b.data, batch[i]) {
						t.Fatalf("round %d: frame %d back differs", round, i)
					}
				}
				rx.reclaim()
				sent = append(sent, batch...)
				// Leave the rest posted buffers be: drain them by
				// writing, so the next round starts clean.
				for rx.freeDescs != rx.num {
					fill := pktWith(udpFrame(60, 1), packet.Offload{})
					if n, _ := p.Write([]*packet.Packet{fill}); n != 1 {
						t.Fatalf("round %d: filler not taken", round)
					}
					rx.recv()
				}
			}
			if len(sent) < 5*16 {
				t.Fatalf("only %d frames", len(sent))
			}
			// GET_VRING_BASE carries the wrap counter in bit 15.
			r := f.must(reqGetVringBase, vringState(1, 0))
			base := binary.LittleEndian.Uint32(r[4:])
			want := uint32(tx.availPos)
			if tx.availWrap {
				want |= packedWrapBit
			}
			if base != want {
				t.Fatalf("GET_VRING_BASE %#x, want %#x", base, want)
			}
		})
	}
}

// TestPackedNotifications checks both event suppression structures.
func TestPackedNotifications(t *testing.T) {
	for _, eventIdx := range []bool{false, true} {
		t.Run(fmt.Sprint("event index ", eventIdx), func(t *testing.T) {
			features := uint64(packedFeatures)
			if !eventIdx {
				features &^= 1 << featRingEventIdx
			}
			p, f := listenPair(t, testConfig(t))
			f.negotiate(features, 1, 64)
			waitFor(t, "running", testDeadline, p.Running)
			tx, rx := f.rings[1], f.rings[0]
			if _, fl := rx.packedDeviceEvent(); fl != ringEventFlagsDisable {
				t.Fatalf("receive ring asks for kicks: %d", fl)
			}
			// The guest wants no interrupt: no call.
			rx.setPackedDriverEvent(0, ringEventFlagsDisable)
			rx.postRx(8, 2048, txLayout{})
			pk := pktWith(udpFrame(100, 1), packet.Offload{})
			p.Write([]*packet.Packet{pk})
			if c := rx.calls(); c != 0 {
				t.Fatalf("%d calls while disabled", c)
			}
			rx.setPackedDriverEvent(0, ringEventFlagsEnable)
			p.Write([]*packet.Packet{pk})
			if c := rx.calls(); c != 1 {
				t.Fatalf("%d calls while enabled", c)
			}
			if eventIdx {
				// Signal when the used position passes 5 (lap 1).
				rx.setPackedDriverEvent(5|packedWrapBit, ringEventFlagsDesc)
				p.Write([]*packet.Packet{pk, pk})
				if c := rx.calls(); c != 0 {
					t.Fatalf("%d calls before the event", c)
				}
				p.Write([]*packet.Packet{pk, pk})
				if c := rx.calls(); c != 1 {
					t.Fatalf("%d calls passing the event", c)
				}
			}
			// A sleeping reader asks for a kick at its position (event
			// index) or for every kick.
			done := sleepingRead(t, p, tx)
			desc, fl := tx.packedDeviceEvent()
			switch {
			case eventIdx && (fl != ringEventFlagsDesc || desc != 1|packedWrapBit):
				t.Fatalf("device event %#x/%d, want 1|wrap/desc", desc, fl)
			case !eventIdx && fl != ringEventFlagsEnable:
				t.Fatalf("device event flags %d, want enable", fl)
			}
			kickWakes(t, tx, done)
		})
	}
}

// TestPackedZeroCopy holds packed descriptors out of order: released
// frames come back under their buffer IDs while older ones are still out.
func TestPackedZeroCopy(t *testing.T) {
	p, f := zcPair(t, packedFeatures, 16)
	tx := f.rings[1]
	for i := range 6 {
		sendUDP(t, f, 1500, uint16(i), txLayout{pieces: 1})
	}
	pkts := readAll(t, p, 6, testDeadline)
	for _, pk := range pkts {
		if pk.Ext() == nil {
			t.Fatal("a full-size frame was copied")
		}
	}
	if tx.reclaim() != 0 {
		t.Fatal("buffers returned while out")
	}
	// Release the later half first. Releases go back to the guest at a
	// Read, so a reader goes on reading, as the datapath does: a single
	// Read could return with the frame sent below before it sees the
	// first half released (seen under load: stuck at 4 of 7).
	resetAll(pkts[3:6])
	go func() {
		pk := newPkts(1)
		for {
			if _, err := p.Read(pk); err != nil {
				return // closed when the test ends
			}
			resetAll(pk)
		}
	}()
	got := 0
	waitFor(t, "3 buffers back", testDeadline, func() bool { got += tx.reclaim(); return got == 3 })
	resetAll(pkts[:3])
	frame := udpFrame(70, 9)
	tx.tx(hdrFor(f, packet.Offload{}, len(frame)), frame, txLayout{})
	waitFor(t, "all buffers back", testDeadline, func() bool { got += tx.reclaim(); return got == 7 })
	if tx.freeDescs != tx.num {
		t.Fatalf("%d descriptors free of %d", tx.freeDescs, tx.num)
	}
}

// TestPackedBadDescriptors: a bad buffer costs the frame, a chain whose
// extent cannot be known (packed chains have no next field to trust)
// costs the device.
func TestPackedBadDescriptors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		build    func(f *fakeFrontend, r *fakeRing) int // descriptors the chain takes
		breaking bool
	}{
		{name: "address outside memory", build: func(f *fakeFrontend, r *fakeRing) int {
			r.putPacked(0, 0xdead00000000, 100, 7, 0)
			return 1
		}},
		{name: "writable descriptor in a transmit chain", build: func(f *fakeFrontend, r *fakeRing) int {
			r.putPacked(0, f.gpa(f.allocData(256)), 100, 7, virtqDescFWrite)
			return 1
		}},
		{name: "bad buffer inside a chain", build: func(f *fakeFrontend, r *fakeRing) int {
			r.putPacked(0, f.gpa(f.allocData(256)), 12, 7, virtqDescFNext)
			r.putPacked(1, 0xdead00000000, 100, 7, virtqDescFNext)
			r.putPacked(2, f.gpa(f.allocData(256)), 100, 7, 0)
			return 3
		}},
		{name: "chain around the whole ring", breaking: true, build: func(f *fakeFrontend, r *fakeRing) int {
			for i := range r.num {
				r.putPacked(uint16(i), f.gpa(f.allocData(64)), 1, 7, virtqDescFNext)
			}
			return r.num
		}},
		{name: "nested indirect", breaking: true, build: func(f *fakeFrontend, r *fakeRing) int {
			off := f.allocData(64)
			putTableDesc(f.mem[off:], 0, f.gpa(off), 16, 0, virtqDescFIndirect)
			r.putPacked(0, f.gpa(off), 16, 7, virtqDescFIndirect)
			return 1
		}},
		{name: "indirect and next", breaking: true, build: func(f *fakeFrontend, r *fakeRing) int {
			off := f.allocData(64)
			r.putPacked(0, f.gpa(off), 16, 7, virtqDescFIndirect|virtqDescFNext)
			r.putPacked(1, f.gpa(off), 16, 7, 0)
			return 2
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, f := listenPair(t, testConfig(t))
			f.negotiate(packedFeatures, 1, 16)
			waitFor(t, "running", testDeadline, p.Running)
			r := f.rings[1]
			n := tc.build(f, r)
			r.makeAvailPacked(n, 7)
			r.kickNow()
			go p.Read(newPkts(4))
			if tc.breaking {
				waitFor(t, "the device dropped", testDeadline, func() bool { return p.Status()["status"] == "disconnected" })
				if c := p.Counters(); c.RingErrors != 1 {
					t.Fatalf("counters %+v", c)
				}
				return
			}
			waitFor(t, "the frame dropped", testDeadline, func() bool { return p.Stats().RxErrors == 1 })
			if got := r.reclaim(); got != 1 || r.freeDescs != r.num {
				t.Fatalf("%d buffers back, %d descriptors free", got, r.freeDescs)
			}
			if !p.Running() {
				t.Fatal("device dropped for a bad frame")
			}
		})
	}
}
