package ofproto

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/netdev/tunnel"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// VXLAN's Group Based Policy: a decapsulated packet's tun_gbp_id matches
// exactly and under a mask, the megaflow consulting it; a set_field of tun_gbp_id and tun_gbp_flags is sent in the
// header of a tunnel with exts=gbp (the megaflow then matching both
// fields) and not by one without.
func TestTunnelGBP(t *testing.T) {
	for _, gbp := range []bool{true, false} {
		tb := newTestBacker(t)
		tb.SetTunnelEnv(&fakeTnlEnv{neigh: map[netip.Addr]net.HardwareAddr{
			netip.MustParseAddr("172.31.0.2"): {2, 0, 0, 0, 0, 0x20}}})
		tnl := &TunnelConfig{Kind: tunnel.KindVXLAN, Remote: netip.MustParseAddr("172.31.0.2"), InKey: 42, OutKey: 42,
			DstPort: 4789, GBP: gbp}
		br := tb.bridge("br-int", BridgeConfig{Ports: []PortConfig{trunk("vif", 1), {Name: "tun0", OFPort: 2, DPPort: 4789, Tag: -1, Tunnel: tnl}}})
		tb.bridge("br-phy", BridgeConfig{Ports: []PortConfig{trunk("ul", 2), {Name: "br-phy", OFPort: LocalOFPort, DPPort: 3, Tag: -1}}})
		id, flags := ofp.FieldByID(ofp.FieldTunGBPID), ofp.FieldByID(ofp.FieldTunGBPFlags)
		for _, fm := range []fmSpec{
			{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {2, 0}, ofp.FieldTunGBPID: {77, 0}}, actions: []ofp.Action{output(1)}},
			{prio: 9, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {2, 0}, ofp.FieldTunGBPID: {0x100, 0xff00}}, actions: []ofp.Action{output(1)}},
			{prio: 5, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {2, 0}}},
			{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {1, 0}}, actions: []ofp.Action{
				ofp.LoadAction(id, []byte{0, 88}, []byte{0xff, 0xff}), ofp.LoadAction(flags, []byte{0x08}, []byte{0xff}), output(2)}},
		} {
			if err := br.FlowMod(fm.mod()); err != nil {
				t.Fatal(err)
			}
		}
		acts, mask := tb.xlate(1, eth(macA, macB))
		wantHdr := "vxlan(flags=0x8808" + "0058,vni=0x2a)"
		if !gbp {
			wantHdr = "vxlan(flags=0x8000000,vni=0x2a)"
		}
		if !strings.Contains(acts, wantHdr) {
			t.Errorf("gbp %v: output to tun0: %s, want %s in it", gbp, acts, wantHdr)
		}
		if gbp && (mask.TunGBPID != 0xffff || mask.TunGBPFlags != 0xff) {
			t.Errorf("encap mask tun_gbp_id %#x tun_gbp_flags %#x", mask.TunGBPID, mask.TunGBPFlags)
		}

		decap := func(gbpID uint16) datapath.Upcall {
			u := []datapath.Upcall{{}}
			flow.Extract(eth(macB, macA), 4789, &u[0].Key)
			k := &u[0].Key
			k.TunID, k.TunSrc, k.TunDst = 42, netip.MustParseAddr("::ffff:172.31.0.2").As16(), netip.MustParseAddr("::ffff:172.31.0.1").As16()
			k.TunFlags, k.TunGBPID, k.TunGBPFlags = flow.TunFlagKey, gbpID, 0x40
			tb.Upcall(u)
			return u[0]
		}
		for _, c := range []struct {
			id         uint16
			acts, tunl string
		}{
			{77, "1", "vxlan(gbp(id=77)),"},
			// The exact rule's subtable was looked up too.
			{0x1ff, "1", "vxlan(gbp(id=511)),"},
			{5, "drop", "vxlan(gbp(id=5)),"},
		} {
			u := decap(c.id)
			if got := u.Actions.String(); got != c.acts {
				t.Errorf("tun_gbp_id=%d: %s, want %s", c.id, got, c.acts)
			}
			if got := flow.FormatODP(&u.Key, &u.Mask, flow.ODPFormat{}); !strings.Contains(got, c.tunl) {
				t.Errorf("tun_gbp_id=%d: megaflow %s, want %s in it", c.id, got, c.tunl)
			}
		}
	}
}
