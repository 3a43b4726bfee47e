package vhostuser

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev"
	"github.com/govs/govs/netdev/internal/pkttest"
)

var _ netdev.Port = (*Port)(nil)

// allFeatures is what the fake front-end asks for: everything, with split
// rings; packedFeatures the same with packed rings.
const (
	allFeatures    = backendFeatures &^ (1 << featRingPacked)
	packedFeatures = backendFeatures
)

func hdrFor(f *fakeFrontend, o packet.Offload, frameLen int) []byte {
	h := make([]byte, f.hdrLen())
	netdev.EncodeVirtioNetHdr(h, &o, frameLen)
	return h
}

func TestNegotiation(t *testing.T) {
	for _, tc := range []struct {
		name       string
		features   uint64
		noProto    bool
		cfg        func(*Config)
		wantHdr    int
		wantCsum   bool
		wantOffers uint64
	}{
		{name: "virtio 1.0", features: allFeatures, wantHdr: 12, wantCsum: true},
		{name: "legacy without mergeable buffers", features: allFeatures &^ (1<<featVersion1 | 1<<featNetMrgRxbuf), wantHdr: 10, wantCsum: true},
		{name: "legacy with mergeable buffers", features: allFeatures &^ (1 << featVersion1), wantHdr: 12, wantCsum: true},
		{name: "without protocol features", features: allFeatures, noProto: true, wantHdr: 12, wantCsum: true},
		{name: "offloads disabled", features: allFeatures, cfg: func(c *Config) { c.DisableOffload = true }, wantHdr: 12},
		{name: "four queue pairs offered", features: allFeatures, cfg: func(c *Config) { c.MaxQueuePairs = 4 }, wantHdr: 12, wantCsum: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			p, f := listenPair(t, cfg)
			offered := binary.LittleEndian.Uint64(f.must(reqGetFeatures, nil))
			if offered != p.offeredFeatures() || offered&(1<<featProtocolFeature) == 0 {
				t.Fatalf("GET_FEATURES %#x", offered)
			}
			if cfg.DisableOffload && offered&(1<<featNetCsum|1<<featNetGuestTSO4) != 0 {
				t.Fatalf("offloads offered while disabled: %#x", offered)
			}
			if pf := binary.LittleEndian.Uint64(f.must(reqGetProtocolFeatures, nil)); pf != backendProtocolFeatures {
				t.Fatalf("GET_PROTOCOL_FEATURES %#x", pf)
			}
			if qn := binary.LittleEndian.Uint64(f.must(reqGetQueueNum, nil)); qn != uint64(p.cfg.MaxQueuePairs) {
				t.Fatalf("GET_QUEUE_NUM %d", qn)
			}
			if tc.noProto {
				f.must(reqSetOwner, nil)
				f.features = tc.features &^ (1 << featProtocolFeature) & offered
				f.must(reqSetFeatures, u64(f.features))
				f.sendMemTable()
				f.setupRing(0, 64)
				f.setupRing(1, 64)
			} else {
				f.negotiate(tc.features, 1, 64)
			}
			f.waitReady(p)
			st := p.Status()
			if st["status"] != "connected" || st["features"] != fmt.Sprintf("0x%016x", f.features) ||
				st["n_rxq"] != "1" || st["n_txq"] != "1" || st["mode"] != "server" || st["vring_1_size"] != "64" {
				t.Fatalf("status %v", st)
			}
			if off := p.Offloads(); off.Csum != tc.wantCsum || off.TSO4 != tc.wantCsum {
				t.Fatalf("Offloads %+v", off)
			}
			if f.hdrLen() != tc.wantHdr {
				t.Fatalf("header %d", f.hdrLen())
			}
			frame := udpFrame(200, 1)
			f.rings[1].tx(hdrFor(f, packet.Offload{}, len(frame)), frame, txLayout{})
			pkts := newPkts(4)
			if n := readWithin(t, p, pkts, testDeadline); n != 1 || !bytes.Equal(pkts[0].Data(), frame) {
				t.Fatalf("read %d frames, %x", n, pkts[0].Data())
			}
			f.rings[0].postRx(4, 2048, txLayout{})
			if n, err := p.Write(pkts[:1]); n != 1 || err != nil {
				t.Fatalf("Write: %d, %v", n, err)
			}
			got, err := f.rings[0].recv()
			if err != nil || len(got) != 1 || !bytes.Equal(got[0].data, frame) || len(got[0].hdr) != tc.wantHdr {
				t.Fatalf("received %v, %v", got, err)
			}
		})
	}
}

func TestReplyAck(t *testing.T) {
	p, f := listenPair(t, testConfig(t))
	f.negotiate(allFeatures, 1, 64)
	if f.protocol&(1<<protoReplyAck) == 0 {
		t.Fatal("REPLY_ACK not negotiated")
	}
	// A request the back-end does not do, with need_reply: a failure.
	r, err := f.send(reqNetSetMTU, flagNeedReply, u64(1500), nil, true)
	if err != nil || binary.LittleEndian.Uint64(r) == 0 {
		t.Fatalf("NET_SET_MTU: %x, %v", r, err)
	}
	// Unknown requests are ignored, and nacked when asked.
	r, err = f.send(request(200), flagNeedReply, nil, nil, true)
	if err != nil || binary.LittleEndian.Uint64(r) != 1 {
		t.Fatalf("unknown request: %x, %v", r, err)
	}
	if !p.Running() || p.Counters().ProtocolErrors != 0 {
		t.Fatalf("device dropped: %+v", p.Counters())
	}
}

func TestMemTableTranslation(t *testing.T) {
	p, f := listenPair(t, testConfig(t))
	f.negotiate(allFeatures, 1, 256)
	waitFor(t, "running", testDeadline, p.Running)
	tx, rx := f.rings[1], f.rings[0]
	// Buffers straddling the two regions: contiguous to the guest, apart
	// in the front-end's address space and in the file.
	f.dataPos = f.regions[1].off - 700
	frame := udpFrame(1400, 2)
	tx.tx(hdrFor(f, packet.Offload{}, len(frame)), frame, txLayout{})
	pkts := newPkts(1)
	if readWithin(t, p, pkts, testDeadline) != 1 || !bytes.Equal(pkts[0].Data(), frame) {
		t.Fatal("frame across regions read wrong")
	}
	f.dataPos = f.regions[1].off - 500
	rx.postRx(1, 2048, txLayout{})
	if n, _ := p.Write(pkts); n != 1 {
		t.Fatal("Write failed")
	}
	got, err := rx.recv()
	if err != nil || len(got) != 1 || !bytes.Equal(got[0].data, frame) {
		t.Fatalf("frame across regions written wrong: %v", err)
	}
	// A new table while running (as on memory hot-plug; here the same
	// regions again): the rings are remapped and keep their indexes.
	f.sendMemTable()
	tx.tx(hdrFor(f, packet.Offload{}, len(frame)), frame, txLayout{})
	if readWithin(t, p, pkts, testDeadline) != 1 {
		t.Fatal("no frame after a new memory table")
	}
	if tx.reclaim() != 2 {
		t.Fatal("used entries lost across SET_MEM_TABLE")
	}
}

func TestDequeue(t *testing.T) {
	tcp4 := tcpFrame(false, 30000)
	tso4, tso4o := tcp4.GSO(1448)
	tcp6 := tcpFrame(true, 500)
	csumFrame, csumO := tcp6.Partial()
	big := tcpFrame(false, 65000)
	bigFrame, bigO := big.GSO(1448)
	for _, tc := range []struct {
		name  string
		frame []byte
		o     packet.Offload
		lay   txLayout
	}{
		{name: "one descriptor", frame: udpFrame(60, 1)},
		{name: "header split from data", frame: udpFrame(1514, 1), lay: txLayout{pieces: 2}},
		{name: "seven descriptors", frame: udpFrame(1514, 1), lay: txLayout{pieces: 7}},
		{name: "header over several descriptors", frame: udpFrame(60, 1), lay: txLayout{pieces: 30}},
		{name: "indirect", frame: udpFrame(1514, 1), lay: txLayout{pieces: 1, indirect: true}},
		{name: "indirect table of 19", frame: udpFrame(9000, 1), lay: txLayout{pieces: 19, indirect: true}},
		{name: "partial checksum", frame: csumFrame, o: csumO, lay: txLayout{pieces: 2}},
		{name: "TSO super-frame", frame: tso4, o: tso4o, lay: txLayout{pieces: 18, indirect: true}},
		{name: "64 KiB super-frame", frame: bigFrame, o: bigO},
	} {
		for _, layout := range ringLayouts {
			t.Run(layout.name+"/"+tc.name, func(t *testing.T) {
				p, f := listenPair(t, testConfig(t))
				f.negotiate(allFeatures|layout.features, 1, 256)
				waitFor(t, "running", testDeadline, p.Running)
				r := f.rings[1]
				for range 3 {
					if !r.tx(hdrFor(f, tc.o, len(tc.frame)), tc.frame, tc.lay) {
						t.Fatal("ring full")
					}
				}
				got := readAll(t, p, 3, testDeadline)
				for _, pk := range got {
					if !bytes.Equal(pk.Data(), tc.frame) {
						t.Fatalf("frame of %d bytes differs", pk.Len())
					}
					if pk.Offload != tc.o {
						t.Fatalf("offload %+v, want %+v", pk.Offload, tc.o)
					}
				}
				if n := r.reclaim(); n != 3 {
					t.Fatalf("%d chains returned", n)
				}
				if r.calls() == 0 {
					t.Fatal("the guest was not signalled")
				}
				if st := p.Stats(); st.RxPackets != 3 || st.RxBytes != uint64(3*len(tc.frame)) || st.RxErrors != 0 {
					t.Fatalf("stats %+v", st)
				}
			})
		}
	}
}

// ringLayouts runs a test on split and on packed rings.
var ringLayouts = []struct {
	name     string
	features uint64
}{
	{"split", 0},
	{"packed", 1 << featRingPacked},
}

func TestEnqueue(t *testing.T) {
	tso := tcpFrame(false, 20000)
	tsoFrame, tsoO := tso.GSO(1000)
	tso6 := tcpFrame(true, 9000)
	tso6Frame, tso6O := tso6.GSO(1400)
	c4 := tcpFrame(false, 700)
	csumFrame, csumO := c4.Partial()
	for _, tc := range []struct {
		name     string
		features uint64
		frame    []byte
		o        packet.Offload
		bufSize  int
		lay      txLayout
		wantBufs int // per frame, 0 = don't check
		wantSegs int // frames the guest gets per frame sent
	}{
		{name: "mergeable, one buffer", features: allFeatures, frame: udpFrame(1514, 1), bufSize: 2048, wantBufs: 1, wantSegs: 1},
		{name: "mergeable over 512-byte buffers", features: allFeatures, frame: udpFrame(1514, 1), bufSize: 512, wantBufs: 3, wantSegs: 1},
		{name: "mergeable, split buffers", features: allFeatures, frame: udpFrame(1514, 1), bufSize: 600, lay: txLayout{pieces: 4}, wantBufs: 3, wantSegs: 1},
		{name: "indirect buffers", features: allFeatures, frame: udpFrame(1000, 1), bufSize: 1500, lay: txLayout{pieces: 3, indirect: true}, wantBufs: 1, wantSegs: 1},
		{name: "big buffers without mergeable", features: allFeatures &^ (1 << featNetMrgRxbuf), frame: udpFrame(1514, 1), bufSize: 65562, lay: txLayout{pieces: 17}, wantBufs: 1, wantSegs: 1},
		{name: "TSO passed to the guest", features: allFeatures, frame: tsoFrame, o: tsoO, bufSize: 4096, wantSegs: 1},
		{name: "TSO6 passed to the guest", features: allFeatures, frame: tso6Frame, o: tso6O, bufSize: 4096, wantSegs: 1},
		{name: "TSO segmented for a guest without it", features: allFeatures &^ (1<<featNetGuestTSO4 | 1<<featNetGuestTSO6), frame: tsoFrame, o: tsoO, bufSize: 2048, wantSegs: 20},
		{name: "partial checksum passed", features: allFeatures, frame: csumFrame, o: csumO, bufSize: 2048, wantSegs: 1},
		{name: "partial checksum completed", features: allFeatures &^ (1<<featNetGuestCsum | 1<<featNetGuestTSO4 | 1<<featNetGuestTSO6), frame: csumFrame, o: csumO, bufSize: 2048, wantSegs: 1},
	} {
		for _, layout := range ringLayouts {
			t.Run(layout.name+"/"+tc.name, func(t *testing.T) {
				p, f := listenPair(t, testConfig(t))
				f.negotiate(tc.features|layout.features, 1, 256)
				waitFor(t, "running", testDeadline, p.Running)
				r := f.rings[0]
				r.postRx(200, tc.bufSize, tc.lay)
				pkts := []*packet.Packet{pktWith(tc.frame, tc.o), pktWith(tc.frame, tc.o)}
				if n, err := p.Write(pkts); n != 2 || err != nil {
					t.Fatalf("Write: %d, %v (%+v)", n, err, p.Counters())
				}
				got, err := r.recv()
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 2*tc.wantSegs {
					t.Fatalf("guest got %d frames, want %d", len(got), 2*tc.wantSegs)
				}
				var o packet.Offload
				for _, g := range got {
					if tc.wantBufs != 0 && g.nbufs != tc.wantBufs {
						t.Fatalf("frame in %d buffers, want %d", g.nbufs, tc.wantBufs)
					}
					if err := netdev.DecodeVirtioNetHdr(g.hdr, &o); err != nil {
						t.Fatal(err)
					}
					switch {
					case tc.wantSegs > 1:
						if o.GSO != packet.GSONone || o.Flags&packet.NeedsCsum != 0 {
							t.Fatalf("segment with offload %+v", o)
						}
						if _, err := pkttest.Parse(g.data); err != nil {
							t.Fatalf("segment: %v", err)
						}
					case tc.features&(1<<featNetGuestCsum) == 0 && tc.o.Flags&packet.NeedsCsum != 0:
						if o.Flags&packet.NeedsCsum != 0 {
							t.Fatal("partial checksum given to a guest without GUEST_CSUM")
						}
						if _, err := pkttest.Parse(g.data); err != nil {
							t.Fatalf("completed checksum: %v", err)
						}
					default:
						if !bytes.Equal(g.data, tc.frame) {
							t.Fatal("frame differs")
						}
						want := tc.o
						want.Flags &^= packet.CsumValid
						o.Flags &^= packet.CsumValid
						if o != want {
							t.Fatalf("offload %+v, want %+v", o, want)
						}
					}
				}
				if st := p.Stats(); st.TxPackets != 2 || st.TxDropped != 0 {
					t.Fatalf("stats %+v", st)
				}
			})
		}
	}
}

func TestEnqueueTooBigWithoutMergeable(t *testing.T) {
	p, f := listenPair(t, testConfig(t))
	f.negotiate(allFeatures&^(1<<featNetMrgRxbuf), 1, 64)
	waitFor(t, "running", testDeadline, p.Running)
	r := f.rings[0]
	r.postRx(4, 1000, txLayout{})
	big, small := pktWith(udpFrame(1514, 1), packet.Offload{}), pktWith(udpFrame(500, 1), packet.Offload{})
	if n, _ := p.Write([]*packet.Packet{big, small}); n != 1 {
		t.Fatalf("sent %d, want only the small frame", n)
	}
	got, _ := r.recv()
	if len(got) != 1 || len(got[0].data) != 500 {
		t.Fatalf("guest got %v", got)
	}
	if st := p.Stats(); st.TxDropped != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestEventIdx(t *testing.T) {
	for _, tc := range []struct {
		name     string
		features uint64
	}{
		{"event index", allFeatures},
		{"flags", allFeatures &^ (1 << featRingEventIdx)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, f := listenPair(t, testConfig(t))
			f.negotiate(tc.features, 1, 256)
			waitFor(t, "running", testDeadline, p.Running)
			eventIdx := tc.features&(1<<featRingEventIdx) != 0
			rx, tx := f.rings[0], f.rings[1]
			rx.postRx(100, 2048, txLayout{})
			pk := pktWith(udpFrame(100, 1), packet.Offload{})
			// The guest wants no interrupt.
			if eventIdx {
				rx.setUsedEvent(rx.usedIdx() + 10)
			} else {
				rx.setAvailFlags(virtqAvailFNoInterrupt)
			}
			for range 5 {
				p.Write([]*packet.Packet{pk})
			}
			if c := rx.calls(); c != 0 {
				t.Fatalf("%d calls while suppressed", c)
			}
			if eventIdx {
				// Passing used_event signals once.
				for range 6 {
					p.Write([]*packet.Packet{pk})
				}
				if c := rx.calls(); c != 1 {
					t.Fatalf("%d calls when passing used_event, want 1", c)
				}
			} else {
				rx.setAvailFlags(0)
				p.Write([]*packet.Packet{pk})
				if c := rx.calls(); c != 1 {
					t.Fatalf("%d calls, want 1", c)
				}
			}
			// Read asks for a kick before it sleeps: avail_event at the next
			// entry, or NO_NOTIFY clear.
			done := sleepingRead(t, p, tx)
			if eventIdx {
				if ev := tx.availEvent(); ev != tx.availIdx {
					t.Fatalf("avail_event %d, want %d", ev, tx.availIdx)
				}
			} else if tx.usedFlags()&virtqUsedFNoNotify != 0 {
				t.Fatal("NO_NOTIFY set while the reader sleeps")
			}
			kickWakes(t, tx, done)
		})
	}
}

func TestMultiqueue(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxQueuePairs = 4
	p, f := listenPair(t, cfg)
	f.negotiate(allFeatures, 4, 128)
	waitFor(t, "running", testDeadline, func() bool { return p.Status()["n_rxq"] == "4" })
	for q := range 4 {
		for i := range 5 {
			frame := udpFrame(100, uint16(q*100+i))
			f.rings[2*q+1].tx(hdrFor(f, packet.Offload{}, len(frame)), frame, txLayout{})
		}
	}
	got := readAll(t, p, 20, testDeadline)
	if len(got) != 20 {
		t.Fatalf("read %d", len(got))
	}
	for q := range 4 {
		if n := f.rings[2*q+1].reclaim(); n != 5 {
			t.Fatalf("tx queue %d returned %d", q, n)
		}
		f.rings[2*q].postRx(64, 2048, txLayout{})
	}
	// 64 flows, each sent twice: every flow lands on one queue, and the
	// flows spread over several queues.
	var pkts []*packet.Packet
	for i := range 64 {
		pkts = append(pkts, pktWith(udpFrame(100, uint16(i)), packet.Offload{}))
	}
	for range 2 {
		for b := 0; b < len(pkts); b += 32 {
			if n, _ := p.Write(pkts[b : b+32]); n != 32 {
				t.Fatalf("Write %d", n)
			}
		}
	}
	queueOf := map[string]int{}
	used := 0
	for q := range 4 {
		got, err := f.rings[2*q].recv()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > 0 {
			used++
		}
		for _, g := range got {
			k := string(g.data)
			if prev, ok := queueOf[k]; ok && prev != q {
				t.Fatalf("a flow on queues %d and %d", prev, q)
			}
			queueOf[k] = q
		}
	}
	if used < 3 || len(queueOf) != 64 {
		t.Fatalf("%d flows over %d queues", len(queueOf), used)
	}
	// The guest uses fewer pairs than offered: the status follows it.
	if st := p.Status(); st["num_of_vrings"] != "8" {
		t.Fatalf("status %v", st)
	}
}

func TestGetVringBase(t *testing.T) {
	p, f := listenPair(t, testConfig(t))
	f.negotiate(allFeatures, 1, 64)
	waitFor(t, "running", testDeadline, p.Running)
	tx, rx := f.rings[1], f.rings[0]
	frame := udpFrame(100, 1)
	for range 5 {
		tx.tx(hdrFor(f, packet.Offload{}, len(frame)), frame, txLayout{})
	}
	readAll(t, p, 5, testDeadline)
	r := f.must(reqGetVringBase, vringState(1, 0))
	if idx, num := binary.LittleEndian.Uint32(r), binary.LittleEndian.Uint32(r[4:]); idx != 1 || num != 5 {
		t.Fatalf("GET_VRING_BASE: ring %d base %d", idx, num)
	}
	f.must(reqGetVringBase, vringState(0, 0))
	if p.Running() {
		t.Fatal("running after both rings stopped")
	}
	// Stopped rings are left alone.
	tx.tx(hdrFor(f, packet.Offload{}, len(frame)), frame, txLayout{})
	rx.postRx(4, 2048, txLayout{})
	if n, _ := p.Write(newPkts(1)); n != 0 || p.Counters().TxNoDeviceDrops != 1 {
		t.Fatalf("Write to a stopped ring: %d, %+v", n, p.Counters())
	}
	if tx.usedIdx() != 5 {
		t.Fatal("a stopped ring was processed")
	}
	// Restarted from the base, it goes on with the frame sent meanwhile.
	tx.kick, _ = dupEventfd(t)
	rx.kick, _ = dupEventfd(t)
	tx.start(5)
	rx.start(0)
	if got := readAll(t, p, 1, testDeadline); len(got) != 1 || !bytes.Equal(got[0].Data(), frame) {
		t.Fatal("no frame after restart")
	}
}

func TestTxRetries(t *testing.T) {
	for _, retries := range []int{0, 3, MaxTxRetries} {
		t.Run(fmt.Sprint(retries), func(t *testing.T) {
			cfg := testConfig(t)
			cfg.TxRetriesMax = retries
			p, f := listenPair(t, cfg)
			f.negotiate(allFeatures, 1, 64)
			waitFor(t, "running", testDeadline, p.Running)
			f.rings[0].postRx(4, 2048, txLayout{})
			pkts := newPkts(10)
			for _, pk := range pkts {
				pk.SetData(udpFrame(100, 1))
			}
			if n, err := p.Write(pkts); n != 4 || err != nil {
				t.Fatalf("Write: %d, %v", n, err)
			}
			c := p.Counters()
			if c.TxRetries != uint64(retries) || c.TxRingFullDrops != 6 || p.Stats().TxDropped != 6 {
				t.Fatalf("counters %+v, stats %+v", c, p.Stats())
			}
			if st := p.Status(); st["tx-retries-max"] != fmt.Sprint(retries) {
				t.Fatalf("status %v", st)
			}
		})
	}
	p, _ := listenPair(t, testConfig(t))
	if p.SetTxRetriesMax(33) == nil || p.SetTxRetriesMax(-1) == nil || p.SetTxRetriesMax(0) != nil {
		t.Fatal("SetTxRetriesMax range")
	}
	cfg := DefaultConfig()
	cfg.TxRetriesMax = 40
	if _, err := Listen("x", t.TempDir()+"/s", cfg); err == nil {
		t.Fatal("tx-retries-max 40 accepted")
	}
}

func dupEventfd(t *testing.T) (int, error) {
	t.Helper()
	fd, err := eventfd()
	if err != nil {
		t.Fatal(err)
	}
	return fd, nil
}
