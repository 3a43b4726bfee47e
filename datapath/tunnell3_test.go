package datapath

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/netdev/tunnel"
)

// legacy_l3 GRE: tnl_push sends the packet behind the Ethernet header and
// VLAN tags with its Ethernet type as the GRE protocol, over IPv4 or
// IPv6; an 802.3 frame is dropped and counted. tnl_pop gives the IP
// packet back behind a dummy Ethernet header (addresses zero, the GRE
// protocol its type) and marks its key TunFlagL3; an Ethernet (0x6558)
// packet's key is not marked.
func TestTunnelGREL3PushPop(t *testing.T) {
	for _, underlay := range [][2]string{{"172.31.0.1", "172.31.0.2"}, {"2001:db8::1", "2001:db8::2"}} {
		t.Run(underlay[0], func(t *testing.T) {
			r := newRig(t, 2)
			if err := r.dp.AddPort(3, tunnel.NewVport("gre_sys", tunnel.KindGRE)); err != nil {
				t.Fatal(err)
			}
			h := tunnel.Header{Kind: tunnel.KindGRE, EthDst: dptest.MAC("02:00:00:00:00:02"), EthSrc: dptest.MAC("02:00:00:00:00:01"),
				Src: netip.MustParseAddr(underlay[0]), Dst: netip.MustParseAddr(underlay[1]), TTL: 64, Proto: flow.EthTypeIPv4}
			var popped popRecorder
			inner, enc := encapOne(t, r, h, &popped)
			got, in, err := tunnel.Parse(enc)
			if err != nil || got.Proto != flow.EthTypeIPv4 || !bytes.Equal(in, inner[14:]) {
				t.Fatalf("encapsulated frame %x: %+v, %v", enc, got, err)
			}
			// A tagged frame: the tag goes with the Ethernet header.
			r.ports[1].Inject(frame(dptest.Tag{VID: 5}))
			dptest.Eventually(t, "tagged frame encapsulated", func() bool { return len(r.ports[2].Sent()) == 2 })
			if _, in, err := tunnel.Parse(r.ports[2].Sent()[1]); err != nil || !bytes.Equal(in, inner[14:]) {
				t.Errorf("tagged frame encapsulated as %x, %v", in, err)
			}
			// An 802.3 frame has no type for the GRE protocol.
			raw := append(bytes.Clone(inner[:12]), 0x00, 0x20)
			raw = append(raw, make([]byte, 32)...)
			r.ports[1].Inject(raw)
			dptest.Eventually(t, "802.3 frame counted", func() bool { _, push := r.dp.TunnelErrors(); return push == 1 })

			r.ports[2].Inject(enc)
			dptest.Eventually(t, "decapsulated packet on port 1", func() bool { return len(r.ports[1].Sent()) == 1 })
			want := append(make([]byte, 12), 0x08, 0x00)
			want = append(want, inner[14:]...)
			if s := r.ports[1].Sent()[0]; !bytes.Equal(s, want) {
				t.Fatalf("decapsulated %x, want %x", s, want)
			}
			k, _ := popped.last()
			if k.TunFlags&flow.TunFlagL3 == 0 || k.EthType != flow.EthTypeIPv4 || k.EthSrc != ([6]byte{}) || k.EthDst != ([6]byte{}) ||
				netip.AddrFrom16(k.TunSrc).Unmap() != h.Src || k.IPv4Dst != netip.MustParseAddr("10.0.0.2").As4() {
				t.Errorf("key after tnl_pop: %v", k)
			}
			// The same tunnel carrying Ethernet: not marked.
			h.Proto = 0
			l2, _ := tunnel.Build(&h, inner)
			r.ports[2].Inject(l2)
			dptest.Eventually(t, "decapsulated frame on port 1", func() bool { return len(r.ports[1].Sent()) == 2 })
			if k, n := popped.last(); n != 2 || k.TunFlags&flow.TunFlagL3 != 0 || k.EthSrc != dptest.MAC("00:00:00:00:00:01") {
				t.Errorf("key of an Ethernet GRE packet: %v (%d keys)", k, n)
			}
		})
	}
}
