package ofproto

import (
	"fmt"
	"math/rand"
	"net/netip"
	"strings"
	"testing"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

func conjunction(id uint32, k, n uint8) ofp.Action {
	return ofp.Action{Type: ofp.ActConjunction, ID: id, Clause: k - 1, NClauses: n}
}

// conjTable loads an OVN-style address-set ACL: ip_src in {.1,.2,.3} and
// tcp_dst in {80,443} outputs to 2 (conjunction 1, priority 100); a
// second conjunction at priority 200 (ip_src .3 and tcp_dst 443) has no
// conj_id flow: its lookup with conj_id=2 finds the catch-all, as OVS's
// classifier does; an ordinary flow at priority 150 for ip_src .2 to
// port 3; everything else to 4.
func conjTable(t *testing.T, br *Bridge) {
	t.Helper()
	tcp := func(fields map[ofp.FieldID][2]uint64) map[ofp.FieldID][2]uint64 {
		fields[ofp.FieldEthType] = [2]uint64{flow.EthTypeIPv4, 0}
		fields[ofp.FieldIPProto] = [2]uint64{6, 0}
		return fields
	}
	mustMod(t, br, fmSpec{cmd: ofp.FlowDelete, table: ofp.TableAll})
	for _, src := range []uint64{1, 2, 3} {
		mustMod(t, br, fmSpec{prio: 100, match: tcp(map[ofp.FieldID][2]uint64{ofp.FieldIPv4Src: {0x0a000000 | src, 0}}), actions: []ofp.Action{conjunction(1, 1, 2)}})
	}
	for _, port := range []uint64{80, 443} {
		mustMod(t, br, fmSpec{prio: 100, match: tcp(map[ofp.FieldID][2]uint64{ofp.FieldTCPDst: {port, 0}}), actions: []ofp.Action{conjunction(1, 2, 2)}})
	}
	mustMod(t, br, fmSpec{prio: 100, match: tcp(map[ofp.FieldID][2]uint64{ofp.FieldConjID: {1, 0}}), actions: []ofp.Action{output(2)}})
	mustMod(t, br, fmSpec{prio: 200, match: tcp(map[ofp.FieldID][2]uint64{ofp.FieldIPv4Src: {0x0a000003, 0}}), actions: []ofp.Action{conjunction(2, 1, 2)}})
	mustMod(t, br, fmSpec{prio: 200, match: tcp(map[ofp.FieldID][2]uint64{ofp.FieldTCPDst: {443, 0}}), actions: []ofp.Action{conjunction(2, 2, 2)}})
	mustMod(t, br, fmSpec{prio: 150, match: tcp(map[ofp.FieldID][2]uint64{ofp.FieldIPv4Src: {0x0a000002, 0}, ofp.FieldTCPDst: {22, 0}}), actions: []ofp.Action{output(3)}})
	mustMod(t, br, fmSpec{prio: 0, actions: []ofp.Action{output(4)}})
}

// TestConjunctiveMatch: a conjunctive match takes the conj_id flow only
// when every clause matched, and the megaflows it installs serve only
// packets a fresh translation treats the same.
func TestConjunctiveMatch(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1), trunk("p2", 2), trunk("p3", 3), trunk("p4", 4)}})
	conjTable(t, br)
	frame := func(src string, dport uint16) []byte {
		return dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
			IPv4: &dptest.IPv4{Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr("10.0.0.9")},
			TCP:  &dptest.TCP{Src: 1000, Dst: dport}}.Bytes()
	}
	for _, src := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"} {
		for _, port := range []uint16{80, 443, 22} {
			want := "4"
			switch {
			case src == "10.0.0.2" && port == 22:
				want = "3"
			case src == "10.0.0.3" && port == 443:
				want = "4"
			case src != "10.0.0.4" && port != 22:
				want = "2"
			}
			if got, _ := tb.xlate(1, frame(src, port)); got != want {
				t.Errorf("%s to port %d: %s, want %s", src, port, got, want)
			}
		}
	}
	out, err := tb.Trace("br0", "in_port=1,tcp,nw_src=10.0.0.1,tp_dst=80")
	if err != nil || !strings.Contains(out, "conj_id=1,tcp, priority 100") {
		t.Errorf("trace: %v\n%s", err, out)
	}

	// Megaflow property over random packets.
	rng := rand.New(rand.NewSource(2))
	type entry struct {
		key  flow.Key
		mask flow.Mask
		acts string
	}
	var installed []entry
	for i := 0; i < 2000; i++ {
		u := []datapath.Upcall{{}}
		src := fmt.Sprintf("10.0.0.%d", 1+rng.Intn(5))
		flow.Extract(frame(src, []uint16{80, 443, 22, 8080}[rng.Intn(4)]), 1, &u[0].Key)
		k := u[0].Key
		tb.Revalidate(u)
		fresh := u[0].Actions.String()
		cached := false
		for _, e := range installed {
			mk := e.key.Masked(&e.mask)
			if k.MatchesMasked(&mk, &e.mask) {
				if e.acts != fresh {
					t.Fatalf("packet %v: megaflow %v/%v gives %s, a fresh translation %s", k, e.key, e.mask, e.acts, fresh)
				}
				cached = true
				break
			}
		}
		if !cached {
			installed = append(installed, entry{key: k, mask: u[0].Mask, acts: fresh})
		}
	}
}

// TestConjunctionRefused: conjunction mixed with another action is
// refused with OVS's error.
func TestConjunctionRefused(t *testing.T) {
	tb := newTestBacker(t)
	br := tb.bridge("br0", BridgeConfig{Ports: []PortConfig{trunk("p1", 1)}})
	err := br.FlowMod(fmSpec{prio: 5, actions: []ofp.Action{conjunction(1, 1, 2), output(1)}}.mod())
	if err == nil || err.Errno != ofp.BadConjunction {
		t.Errorf("conjunction with output: %v", err)
	}
}
