package vhostuser

import (
	"fmt"
	"testing"
	"time"
)

// benchRing gives every descriptor of r its own buffer of size bytes
// (holding frame after a header, for a transmit ring), all available.
func benchRing(f *fakeFrontend, r *fakeRing, size int, frame []byte, write bool) {
	for i := range r.num {
		off := f.allocData(uint64(size))
		fl := uint16(0)
		l := uint32(size)
		if write {
			fl = virtqDescFWrite
		} else {
			copy(f.mem[off+12:], frame)
			l = uint32(12 + len(frame))
		}
		r.putDesc(uint16(i), f.gpa(off), l, fl, 0)
		r.pushAvail(uint16(i))
	}
	r.free = nil
	r.publish()
}

// recycle makes every chain the device used available again, as a guest
// that refills at once would.
func (r *fakeRing) recycle() {
	for u := r.usedIdx(); r.usedSeen != u; r.usedSeen++ {
		id, _ := r.usedEntry(r.usedSeen)
		r.pushAvail(uint16(id))
	}
	r.publish()
}

// benchPair is a port configured by cfg with a frontend that negotiated
// all features and one queue pair of 1024 entries, running.
func benchPair(b *testing.B, cfg Config) (*Port, *fakeFrontend) {
	b.Helper()
	p, f := listenPair(b, cfg)
	f.negotiate(allFeatures, 1, 1024)
	waitFor(b, "running", testDeadline, p.Running)
	return p, f
}

// startTimer starts timing b, size bytes an iteration; reportPPS with the
// start it returns reports the frames a second.
func startTimer(b *testing.B, size int) time.Time {
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	return time.Now()
}

func reportPPS(b *testing.B, pkts int, start time.Time) {
	b.ReportMetric(float64(pkts)/time.Since(start).Seconds(), "pps")
}

// BenchmarkDequeue is Read of frames the guest transmitted, 32 a batch.
func BenchmarkDequeue(b *testing.B) {
	for _, size := range []int{64, 1518} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			p, f := benchPair(b, DefaultConfig())
			r := f.rings[1]
			benchRing(f, r, 2048, udpFrame(size, 1), false)
			pkts := newPkts(32)
			start := startTimer(b, size)
			for i := 0; i < b.N; i += 32 {
				if _, err := p.Read(pkts); err != nil {
					b.Fatal(err)
				}
				r.recycle()
			}
			reportPPS(b, b.N, start)
		})
	}
}

// BenchmarkEnqueue is Write of frames into the guest's receive ring.
func BenchmarkEnqueue(b *testing.B) {
	for _, size := range []int{64, 1518} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			p, f := benchPair(b, DefaultConfig())
			r := f.rings[0]
			benchRing(f, r, 2048, nil, true)
			pkts := newPkts(32)
			for _, pk := range pkts {
				pk.SetData(udpFrame(size, 1))
			}
			start := startTimer(b, size)
			for i := 0; i < b.N; i += 32 {
				if n, _ := p.Write(pkts); n != 32 {
					b.Fatalf("sent %d", n)
				}
				r.recycle()
			}
			reportPPS(b, b.N, start)
		})
	}
}

// BenchmarkForward is guest -> port -> port -> guest with Read and Write,
// copying and in zero-copy mode (where a frame longer than zcHeadLen is
// copied once instead of twice), the packets reset after each batch as
// the datapath does.
func BenchmarkForward(b *testing.B) {
	for _, zc := range []bool{false, true} {
		for _, size := range []int{64, 1518} {
			b.Run(fmt.Sprintf("zc=%v/%d", zc, size), func(b *testing.B) {
				cfg := DefaultConfig()
				cfg.ZeroCopy = zc
				src, fs := benchPair(b, cfg)
				dst, fd := benchPair(b, DefaultConfig())
				tx, rx := fs.rings[1], fd.rings[0]
				benchRing(fs, tx, 2048, udpFrame(size, 1), false)
				benchRing(fd, rx, 2048, nil, true)
				pkts := newPkts(32)
				start := startTimer(b, size)
				for i := 0; i < b.N; i += 32 {
					n, err := src.Read(pkts)
					if err != nil {
						b.Fatal(err)
					}
					dst.Write(pkts[:n])
					resetAll(pkts[:n])
					tx.recycle()
					rx.recycle()
				}
				reportPPS(b, b.N, start)
			})
		}
	}
}
