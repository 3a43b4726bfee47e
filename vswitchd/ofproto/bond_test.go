package ofproto

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/vswitchd/lacp"
)

func member(name string, no uint32, bond string, slb, enabled, active bool) PortConfig {
	pc := trunk(name, no)
	pc.Bond, pc.BondSLB, pc.BondEnabled, pc.BondActive = bond, slb, enabled, active
	return pc
}

// abPorts is an active-backup bond0 of a0 and a1, with members enabled as
// en0 and en1 and a0 or a1 (or neither: -1) active, and ports p3 and p4.
func abPorts(en0, en1 bool, active int) BridgeConfig {
	return BridgeConfig{Ports: []PortConfig{
		member("a0", 1, "bond0", false, en0, active == 0), member("a1", 2, "bond0", false, en1, active == 1),
		trunk("p3", 3), trunk("p4", 4),
	}}
}

// TestNormalActiveBackup: NORMAL treats an active-backup bond as one port:
// it learns on the bond, floods to it once (on its active member) and
// never back into it, sends on the active member and drops what arrives
// on the backup one; after a failover the same MAC entry sends on the new
// active member.
func TestNormalActiveBackup(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", abPorts(true, true, 0))
	tb.run(t, []step{
		{3, eth(macA, macB), "1,4"},   // flood: once into the bond, on its active member
		{1, eth(macB, macA), "3"},     // learned on the bond, received on the active member
		{2, eth(macC, macA), "drop"},  // the backup member's traffic is refused
		{2, eth(macC, bcast), "drop"}, // and its broadcasts
		{1, eth(macB, bcast), "3,4"},  // a flood from the bond does not go back into it
		{3, eth(macA, macB), "1"},     // B is on the bond
		{3, eth(macA, macC), "1,4"},   // C was not learned
	})
	if got := br.FDBShow(); !strings.Contains(got, "    1     0  00:00:00:00:00:0b") {
		t.Errorf("fdb/show does not show B on the bond's first member:\n%s", got)
	}
	// Failover: a0 disabled, a1 active. B stays learned on the bond.
	br.Reconfigure(abPorts(false, true, 1))
	tb.run(t, []step{
		{3, eth(macA, macB), "2"},
		{1, eth(macB, macA), "drop"},
		{2, eth(macB, macA), "3"},
	})
	// No member enabled: the bond is a port that sends nothing.
	br.Reconfigure(abPorts(false, false, -1))
	tb.run(t, []step{
		{3, eth(macA, macB), "drop"},
		{3, eth(macA, bcast), "4"},
	})
}

// TestNormalSLB: a balance-slb bond sends each source MAC on one enabled
// member, takes unicast on any member but multicast only on the active
// one, and drops a packet whose source it learned elsewhere (its own
// flood come back).
func TestNormalSLB(t *testing.T) {
	tb := newTestBacker(t)
	tb.bridge("br0", BridgeConfig{Ports: []PortConfig{
		member("a0", 1, "bond0", true, true, true), member("a1", 2, "bond0", true, true, false),
		trunk("p3", 3), trunk("p4", 4),
	}})
	seen := map[string]bool{}
	for _, src := range []string{"00:00:00:00:01:01", "00:00:00:00:01:02", "00:00:00:00:01:03", "00:00:00:00:01:04", "00:00:00:00:01:05", "00:00:00:00:01:06"} {
		got, _ := tb.xlate(3, eth(src, bcast))
		seen[got] = true
		again, _ := tb.xlate(3, eth(src, bcast))
		if again != got {
			t.Errorf("source %s sent on %s, then on %s", src, got, again)
		}
	}
	if !seen["1,4"] || !seen["2,4"] || len(seen) != 2 {
		t.Errorf("floods from six sources went to %v, want both members", seen)
	}
	tb.run(t, []step{
		{2, eth(macB, "00:00:00:00:01:02"), "3"},    // unicast on the non-active member is taken
		{2, eth(macC, bcast), "drop"},               // multicast only on the active member
		{1, eth("00:00:00:00:01:01", macB), "drop"}, // a source learned on p3 came back
		{1, eth(macC, bcast), "3,4"},                // broadcast on the active member
	})
}

// tcpPorts is a balance-tcp bond0 of a0 and a1 with LACP st, both
// enabled, a0 active, and port p3.
func tcpPorts(st lacp.Status, fallback bool) BridgeConfig {
	cfg := BridgeConfig{Ports: []PortConfig{member("a0", 1, "bond0", false, true, true), member("a1", 2, "bond0", false, true, false), trunk("p3", 3)}}
	for i := range 2 {
		cfg.Ports[i].BondTCP, cfg.Ports[i].BondLACP, cfg.Ports[i].BondFallbackAB = true, st, fallback
	}
	return cfg
}

// TestNormalBalanceTCP: with LACP negotiated, a balance-tcp bond sends
// each TCP connection on the member its addresses and ports hash to, the
// megaflow matching them; slow protocols frames received on a member go
// to the LACP state machine; without a partner nothing passes, or the
// bond runs active-backup with lacp-fallback-ab.
func TestNormalBalanceTCP(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", tcpPorts(lacp.Negotiated, false))
	tb.run(t, []step{{1, eth(macB, macA), "3"}}) // learn B on the bond
	seen := map[string]bool{}
	for sport := uint16(40000); sport < 40016; sport++ {
		f := dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
			IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
			TCP:  &dptest.TCP{Src: sport, Dst: 5201}}.Bytes()
		got, mask := tb.xlate(3, f)
		seen[got] = true
		if mask.TpSrc != 0xffff || mask.TpDst != 0xffff || mask.NwProto != 0xff {
			t.Errorf("megaflow mask does not cover the hashed fields: %+v", mask)
		}
	}
	if !seen["1"] || !seen["2"] || len(seen) != 2 {
		t.Errorf("16 connections went to %v, want both members", seen)
	}
	slow := dptest.Frame{Src: dptest.MAC(macB), Dst: [6]byte{0x01, 0x80, 0xc2, 0, 0, 2}, EtherType: lacp.EthTypeSlow, Payload: make([]byte, 110)}.Bytes()
	if got, _ := tb.xlate(2, slow); got != "userspace(pid=0,slow_path(lacp))" {
		t.Errorf("slow protocols frame: %s", got)
	}
	br.Reconfigure(tcpPorts(lacp.Configured, false))
	tb.run(t, []step{{3, eth(macA, macB), "drop"}, {1, eth(macB, macA), "drop"}})
	br.Reconfigure(tcpPorts(lacp.Configured, true))
	tb.run(t, []step{{3, eth(macA, macB), "1"}, {2, eth(macB, macA), "drop"}, {1, eth(macB, macA), "3"}})
}

// TestBondRebalance: a balance-tcp bond's connections fall in buckets
// assigned round robin to its members; with all the load on one member,
// rebalancing moves buckets to the other until their loads are close,
// the moved connections then leave on it, and the loads are halved.
func TestBondRebalance(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", tcpPorts(lacp.Negotiated, false))
	tb.run(t, []step{{1, eth(macB, macA), "3"}})
	conn := func(sport uint16) string {
		f := dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
			IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
			TCP:  &dptest.TCP{Src: sport, Dst: 5201}}.Bytes()
		got, _ := tb.xlate(3, f)
		return got
	}
	for sport := uint16(40000); sport < 40016; sport++ {
		conn(sport)
	}
	hashes := br.BondHashes("bond0")
	if len(hashes) < 8 {
		t.Fatalf("16 connections fell in %d buckets: %+v", len(hashes), hashes)
	}
	h := br.snap.Load().bonds["bond0"].hash
	for _, e := range hashes {
		br.BondMigrate("bond0", e.Hash, "a0")
		h.tx[e.Hash].Store(200 * 1024)
	}
	for sport := uint16(40000); sport < 40016; sport++ {
		if got := conn(sport); got != "1" {
			t.Fatalf("after migrating every bucket to a0, port %d goes to %s", sport, got)
		}
	}
	logs := br.BondRebalance("bond0")
	if len(logs) == 0 || !strings.HasPrefix(logs[0], "bond bond0: shift 200kB of load (with hash ") {
		t.Fatalf("rebalancing logged %q", logs)
	}
	load := map[string]uint64{}
	for _, e := range br.BondHashes("bond0") {
		load[e.Member] += e.TxBytes
		if e.TxBytes != 100*1024 {
			t.Errorf("bucket %d: load %d after rebalancing, want halved to %d", e.Hash, e.TxBytes, 100*1024)
		}
	}
	if d := int64(load["a0"]) - int64(load["a1"]); d > 100*1024 || d < -100*1024 {
		t.Errorf("loads after rebalancing: %v", load)
	}
	seen := map[string]bool{}
	for sport := uint16(40000); sport < 40016; sport++ {
		seen[conn(sport)] = true
	}
	if !seen["2"] {
		t.Errorf("no connection moved to a1: %v", seen)
	}
	// Balanced now: nothing more to move.
	if logs := br.BondRebalance("bond0"); len(logs) != 0 {
		t.Errorf("second rebalancing moved %q", logs)
	}
}

// TestBondHashMAC: balance-slb's buckets are OVS's, as Debian's
// ovs-appctl bond/hash prints them.
func TestBondHashMAC(t *testing.T) {
	for _, c := range []struct {
		mac         [6]byte
		vlan        uint16
		basis, want uint32
	}{
		{[6]byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55}, 0, 0, 226},
		{[6]byte{0x02, 0, 0, 0, 0, 1}, 0, 0, 38},
		{[6]byte{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}, 10, 0, 247},
		{[6]byte{0x02, 0, 0, 0, 0, 1}, 0, 7, 50},
	} {
		if got := BondHashMAC(c.mac, c.vlan, c.basis) & bondMask; got != c.want {
			t.Errorf("bond/hash %x %d %d: %d, want %d", c.mac, c.vlan, c.basis, got, c.want)
		}
	}
}

// TestBondJoinForgets: a port that becomes a bond member forgets what it
// learned as a plain port. A balance-slb bond would otherwise refuse the
// peer's frames as looped back (its MAC learned on "another port", the
// member's old self) until the entry aged out: vswitchd configures the
// ports before their bond.
func TestBondJoinForgets(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("s0", 1), trunk("s1", 2), trunk("p3", 3)}})
	tb.run(t, []step{{1, eth(macB, bcast), "2,3"}}) // B learned on s0, a plain port
	br.Reconfigure(BridgeConfig{Ports: []PortConfig{
		member("s0", 1, "bond0", true, true, true), member("s1", 2, "bond0", true, true, false), trunk("p3", 3),
	}})
	tb.run(t, []step{
		{3, eth(macA, bcast), "1"}, // A learned on p3
		{1, eth(macB, macA), "3"},  // B's reply on the active member is not a loop
		{3, eth(macA, macB), "1"},  // and B is on the bond now
	})
}
