package conntrack

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// benchConns is how many connections the lookup benchmarks spread over.
const benchConns = 4096

func benchFrames(tb testing.TB, tr *Tracker) [][]byte {
	frames := make([][]byte, benchConns)
	for i := range frames {
		frames[i] = udp4("10.0.0.1", "10.0.0.2", uint16(1024+i), 53)
		var md Meta
		tr.Execute(append([]byte(nil), frames[i]...), &md, &Action{Commit: true}, false)
	}
	if tr.NConns() != benchConns {
		tb.Fatalf("%d connections", tr.NConns())
	}
	return frames
}

// BenchmarkLookup is ct() on a packet of an established connection.
func BenchmarkLookup(b *testing.B) {
	tr := New(Config{})
	defer tr.Close()
	frames := benchFrames(b, tr)
	act := &Action{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var md Meta
		tr.Execute(frames[i&(benchConns-1)], &md, act, false)
	}
}

// BenchmarkLookupParallel is BenchmarkLookup from GOMAXPROCS workers.
func BenchmarkLookupParallel(b *testing.B) {
	tr := New(Config{})
	defer tr.Close()
	frames := benchFrames(b, tr)
	act := &Action{}
	var next atomic.Uint32
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(1)) * 977
		for pb.Next() {
			var md Meta
			tr.Execute(frames[i&(benchConns-1)], &md, act, false)
			i++
		}
	})
}

// BenchmarkCommit is ct(commit) of new connections, each expired at once
// so that the table stays small.
func BenchmarkCommit(b *testing.B) {
	tr := New(Config{})
	defer tr.Close()
	f := udp4("10.0.0.1", "10.0.0.2", 1, 53)
	act := &Action{Commit: true}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f[14+12] = byte(i >> 16)
		f[14+20] = byte(i >> 8)
		f[14+21] = byte(i)
		var md Meta
		tr.Execute(f, &md, act, false)
		if i&0xffff == 0xffff {
			tr.Flush(-1)
		}
	}
}

// BenchmarkSNAT is ct(commit,nat(src)) of new connections.
func BenchmarkSNAT(b *testing.B) {
	tr := New(Config{})
	defer tr.Close()
	act := &Action{Commit: true, NAT: &NATRange{Src: true, MinAddr: a4("192.168.0.1"), MaxAddr: a4("192.168.0.1")}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f := udp4("10.0.0.1", "10.0.0.2", uint16(i), 53)
		f[14+12+2] = byte(i >> 16)
		var md Meta
		tr.Execute(f, &md, act, false)
		if i&0x3fff == 0x3fff {
			tr.Flush(-1)
		}
	}
}

// BenchmarkTableMemory commits b.N connections (up to 1 M, then a new
// table) and reports the live heap each one costs after a collection: the
// connection and its two table entries.
func BenchmarkTableMemory(b *testing.B) {
	const max = 1 << 20
	f := udp4("10.0.0.1", "10.0.0.2", 1, 53)
	act := &Action{Commit: true}
	var before, after runtime.MemStats
	var tr *Tracker
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%max == 0 {
			tr = New(Config{})
		}
		f[14+12] = byte(i >> 16)
		f[14+20] = byte(i >> 8)
		f[14+21] = byte(i)
		var md Meta
		tr.Execute(f, &md, act, false)
	}
	b.StopTimer()
	n := b.N % max
	if n == 0 {
		n = min(b.N, max)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(n), "B/conn")
	if tr.NConns() != n {
		b.Fatalf("%d connections, want %d", tr.NConns(), n)
	}
	runtime.KeepAlive(tr)
}
