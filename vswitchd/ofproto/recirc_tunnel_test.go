package ofproto

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/netdev/tunnel"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// After ct(table=1) the thawed translation has the bridge's Geneve
// option map, as OVN's pipeline between two chassis needs: a packet from
// the VIF gets tun_metadata0 set after ct and tnl_push sends it as an
// option; a packet from the tunnel still matches its tun_metadata0 after
// ct. Both lost them.
func TestCtRecirculationTunMetadata(t *testing.T) {
	tb := newTestBacker(t)
	tb.SetTunnelEnv(&fakeTnlEnv{neigh: map[netip.Addr]net.HardwareAddr{
		netip.MustParseAddr("172.31.0.2"): {2, 0, 0, 0, 0, 0x20}}})
	tnl := &TunnelConfig{Kind: tunnel.KindGeneve, Remote: netip.MustParseAddr("172.31.0.2"), InKey: 5, OutKey: 5, DstPort: 6081}
	br := tb.bridge("br-int", BridgeConfig{Ports: []PortConfig{trunk("vif", 1), {Name: "tun0", OFPort: 2, DPPort: 6081, Tag: -1, Tunnel: tnl}}})
	tb.bridge("br-phy", BridgeConfig{Ports: []PortConfig{trunk("ul", 2), {Name: "br-phy", OFPort: LocalOFPort, DPPort: 3, Tag: -1}}})
	if err := br.TLVTableMod(&ofp.TLVTableMod{Command: ofp.TLVAdd, Maps: []ofp.TLVMap{{Class: 0x102, Type: 0x80, Len: 4, Index: 0}}}); err != nil {
		t.Fatal(err)
	}
	ct := ofp.Action{Type: ofp.ActCT, CT: &ofp.CT{ZoneImm: 5, Table: 1}}
	set := ofp.Action{Type: ofp.ActSetField, Field: ofp.TunMetadataField(0, 4), Value: []byte{0, 5, 0, 2}, Mask: []byte{0xff, 0xff, 0xff, 0xff}}
	for _, in := range []uint64{1, 2} {
		mustMod(t, br, fmSpec{prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {in, 0}, ofp.FieldEthType: {flow.EthTypeIPv4, 0}}, actions: []ofp.Action{ct}})
	}
	mustMod(t, br, fmSpec{table: 1, prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {1, 0}}, actions: []ofp.Action{set, output(2)}})
	fm := fmSpec{table: 1, prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldInPort: {2, 0}}, actions: []ofp.Action{output(1)}}.mod()
	fm.Match.TunMD = []ofp.TunMDEntry{{Idx: 0, Value: []byte{0x0a, 0x00, 0x01}}}
	if err := br.FlowMod(fm); err != nil {
		t.Fatal(err)
	}

	frame := dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
		IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
		TCP:  &dptest.TCP{Src: 40000, Dst: 80, Flags: dptest.SYN}}.Bytes()
	pass := func(in uint32, recirc uint32, opts ...byte) string {
		u := []datapath.Upcall{{}}
		flow.Extract(frame, in, &u[0].Key)
		k := &u[0].Key
		k.RecircID = recirc
		if recirc != 0 {
			k.CtState, k.CtZone = ofp.CtTrk|ofp.CtNew, 5
		}
		if in == 6081 {
			k.TunID, k.TunSrc, k.TunDst = 5, netip.MustParseAddr("::ffff:172.31.0.2").As16(), netip.MustParseAddr("::ffff:172.31.0.1").As16()
			k.TunFlags = flow.TunFlagKey
			k.TunOptsLen = uint8(copy(k.TunOpts[:], opts))
		}
		tb.Upcall(u)
		return u[0].Actions.String()
	}
	if got := pass(1, 0); got != "ct(zone=5),recirc(0x1)" {
		t.Fatalf("from the VIF: %s", got)
	}
	if got, want := pass(1, 1), "options({class=0x102,type=0x80,len=4,0x50002})"; !strings.Contains(got, want) {
		t.Errorf("from the VIF after ct: %s, want %s in it", got, want)
	}
	opt := []byte{0x01, 0x02, 0x80, 0x01, 0x00, 0x0a, 0x00, 0x01}
	if got := pass(6081, 0, opt...); got != "ct(zone=5),recirc(0x2)" {
		t.Fatalf("from the tunnel: %s", got)
	}
	if got := pass(6081, 2, opt...); got != "1" {
		t.Errorf("from the tunnel after ct: %s, want 1", got)
	}
}
