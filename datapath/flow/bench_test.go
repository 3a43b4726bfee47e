package flow_test

import (
	"testing"

	"github.com/govs/govs/datapath/flow"
)

func BenchmarkExtract(b *testing.B) {
	seeds := seedFrames()
	for _, bc := range []struct {
		name  string
		frame []byte
	}{
		{"ipv4-udp", seeds[0]},
		{"vlan-ipv4-tcp", seeds[1]},
		{"ipv6-ext-udp", seeds[4]},
		{"arp", seeds[6]},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var k flow.Key
			b.SetBytes(int64(len(bc.frame)))
			b.ReportAllocs()
			for b.Loop() {
				flow.Extract(bc.frame, 1, &k)
			}
		})
	}
}

func BenchmarkKeyHash(b *testing.B) {
	var k flow.Key
	flow.Extract(seedFrames()[0], 1, &k)
	b.ReportAllocs()
	var h uint64
	for b.Loop() {
		h += k.Hash()
	}
	_ = h
}
