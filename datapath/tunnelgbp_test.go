package datapath

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/netdev/tunnel"
)

// VXLAN's Group Based Policy extension: a tnl_push whose header carries a
// policy ID and flags sends the G bit with them; a vport with exts=gbp
// decapsulates such a packet with tun_gbp_id and tun_gbp_flags in its key,
// shown in the datapath flow as OVS's vxlan(gbp(...)); a vport without it
// drops the packet as a tunnel pop error, and also one with reserved
// flag bits set.
func TestTunnelPushPopGBP(t *testing.T) {
	h := tunnel.Header{Kind: tunnel.KindVXLAN, EthDst: dptest.MAC("02:00:00:00:00:02"), EthSrc: dptest.MAC("02:00:00:00:00:01"),
		Src: netip.MustParseAddr("172.31.0.1"), Dst: netip.MustParseAddr("172.31.0.2"), TTL: 64, Key: 42, DstPort: 4789,
		GBPID: 77, GBPFlags: 0x08}
	for _, gbp := range []bool{true, false} {
		name := "exts=gbp"
		if !gbp {
			name = "no exts"
		}
		t.Run(name, func(t *testing.T) {
			r := newRig(t, 2)
			vport := tunnel.NewVport("vp", tunnel.KindVXLAN)
			if gbp {
				vport = tunnel.NewGBPVport("vp")
			}
			if err := r.dp.AddPort(3, vport); err != nil {
				t.Fatal(err)
			}
			var popped popRecorder
			_, enc := encapOne(t, r, h, &popped)
			vx := enc[14+20+8:]
			if want := []byte{0x88, 0x08, 0, 77, 0, 0, 42, 0}; !bytes.Equal(vx[:8], want) {
				t.Fatalf("VXLAN header %x, want %x", vx[:8], want)
			}
			r.ports[2].Inject(enc)
			if !gbp {
				dptest.Eventually(t, "pop error counted", func() bool { pop, _ := r.dp.TunnelErrors(); return pop == 1 })
				if _, n := popped.last(); n != 0 || len(r.ports[1].Sent()) != 0 {
					t.Errorf("a G-bit packet went through a vport without exts=gbp: %d keys, %d frames", n, len(r.ports[1].Sent()))
				}
				return
			}
			dptest.Eventually(t, "decapsulated frame on port 1", func() bool { return len(r.ports[1].Sent()) == 1 })
			k, _ := popped.last()
			if k.TunGBPID != 77 || k.TunGBPFlags != 0x08 || k.TunID != 42 {
				t.Errorf("key after tnl_pop: %v", k)
			}
			m := flow.Exact()
			if got, want := flow.FormatODP(&k, &m, flow.ODPFormat{}), ",tp_dst=4789,vxlan(gbp(id=77,flags=0x8)),"; !strings.Contains(got, want) {
				t.Errorf("datapath flow %s, want %s in it", got, want)
			}
			// A reserved bit beside the policy flags: malformed.
			bad := bytes.Clone(enc)
			bad[14+20+8+1] |= 0x01
			r.ports[2].Inject(bad)
			dptest.Eventually(t, "pop error counted", func() bool { pop, _ := r.dp.TunnelErrors(); return pop == 1 })
			if n := len(r.ports[1].Sent()); n != 1 {
				t.Errorf("port 1 sent %d frames, want 1", n)
			}
		})
	}
}

// The vxlan(gbp()) attribute of a datapath flow prints its fields as the
// mask has them, as OVS's format_odp_tun_vxlan_opt.
func TestFormatODPGBPMask(t *testing.T) {
	k := flow.Key{InPort: 3, TunID: 42, TunFlags: flow.TunFlagKey, TunTTL: 64, TunGBPID: 77, TunGBPFlags: 0x40}
	k.TunSrc = netip.MustParseAddr("::ffff:172.31.0.1").As16()
	k.TunDst = netip.MustParseAddr("::ffff:172.31.0.2").As16()
	for _, c := range []struct {
		id      uint16
		flags   uint8
		verbose bool
		want    string
	}{
		{0xffff, 0xff, false, "vxlan(gbp(id=77,flags=0x40))"},
		{0xff00, 0, false, "vxlan(gbp(id=77/0xff00))"},
		{0, 0xff, false, "vxlan(gbp(flags=0x40))"},
		{0, 0x40, false, "vxlan(gbp(flags=0x40/0x40))"},
		{0, 0, false, "vxlan(gbp())"},
		{0, 0, true, "vxlan(gbp(id=77/0,flags=0x40/0))"},
	} {
		m := flow.Mask{InPort: ^uint32(0), TunID: ^uint64(0), TunGBPID: c.id, TunGBPFlags: c.flags}
		m.TunDst, m.TunSrc = k.TunDst, k.TunSrc
		for i := range m.TunDst {
			m.TunDst[i], m.TunSrc[i] = 0xff, 0xff
		}
		if got := flow.FormatODP(&k, &m, flow.ODPFormat{Verbose: c.verbose}); !strings.Contains(got, c.want) {
			t.Errorf("mask id %#x flags %#x: %s, want %s in it", c.id, c.flags, got, c.want)
		}
	}
}
