package bridge

import (
	"slices"
	"strings"
	"testing"

	"github.com/govs/govs/schema/vswitchd"
)

func TestBuild(t *testing.T) {
	var d db
	br := d.bridge("br0", "p1", "p2")
	tag := 10
	mode := "trunk"
	d.port("p1").Tag = &tag
	d.port("p2").Trunks = []int{20, 10}
	d.port("p2").VLANMode = &mode
	d.iface("p2").Type = ""
	br.OtherConfig = map[string]string{"mac-aging-time": "60", "mac-table-size": "-1", "hwaddr": "01:00:00:00:00:01"}
	// A second bridge claiming p1's port row, and a dangling reference.
	other := d.bridge("br1")
	other.Ports = append(other.Ports, d.port("p1").UUID, "00000000-dead-4000-8000-000000000000")

	got := Build(d.rows)
	if got.NextCfg != 2 || len(got.Bridges) != 2 {
		t.Fatalf("Build: %+v", got)
	}
	b0 := got.Bridges[0]
	if b0.MACAgingTime != 60 || b0.MACTableSize != DefaultMACTableSize || b0.HWAddr != nil {
		t.Errorf("other_config parsed as %+v", b0)
	}
	names := []string{}
	for _, p := range b0.Ports {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"br0", "p1", "p2"}) {
		t.Errorf("ports %v", names)
	}
	if p1 := b0.Ports[1]; p1.Tag != 10 || p1.Ifaces[0].Type != TypeSystem {
		t.Errorf("p1 %+v", p1)
	}
	if p2 := b0.Ports[2]; !slices.Equal(p2.Trunks, []int{10, 20}) || p2.VLANMode != "trunk" || p2.Tag != -1 {
		t.Errorf("p2 %+v", p2)
	}
	if len(got.Bridges[1].Ports) != 1 {
		t.Errorf("br1 ports %+v", got.Bridges[1].Ports)
	}
	joined := strings.Join(got.Problems, "\n")
	for _, want := range []string{"mac-table-size", "hwaddr", "port p1 is already in bridge br0"} {
		if !strings.Contains(joined, want) {
			t.Errorf("problems lack %q:\n%s", want, joined)
		}
	}
	if empty := Build(Rows{Bridges: []vswitchd.Bridge{{Name: "x"}}}); len(empty.Bridges) != 0 || empty.OVSUUID != "" {
		t.Errorf("no Open_vSwitch row: %+v", empty)
	}
}

// TestBuildCTZones: the zones of datapaths:netdev with their policies (an
// empty one for a zone without a policy row); another type's zones are
// reported, not applied.
func TestBuildCTZones(t *testing.T) {
	tp := "tp-1"
	rows := Rows{
		OpenVSwitch: []vswitchd.OpenvSwitch{{UUID: "ovs", Datapaths: map[string]string{"netdev": "dp-n", "system": "dp-s"}}},
		Datapaths: []vswitchd.Datapath{{UUID: "dp-n", CTZones: map[int]string{5: "z-5", 6: "z-6"}},
			{UUID: "dp-s", CTZones: map[int]string{7: "z-5"}}},
		CTZones:    []vswitchd.CTZone{{UUID: "z-5", TimeoutPolicy: &tp}, {UUID: "z-6"}},
		CTPolicies: []vswitchd.CTTimeoutPolicy{{UUID: tp, Timeouts: map[string]int{"udp_first": 1, "icmp_reply": 2}}},
	}
	d := Build(rows)
	if len(d.CTZones) != 2 || d.CTZones[5]["udp_first"] != 1 || d.CTZones[5]["icmp_reply"] != 2 || len(d.CTZones[6]) != 0 {
		t.Errorf("CTZones: %v", d.CTZones)
	}
	if !slices.ContainsFunc(d.Problems, func(p string) bool { return strings.HasPrefix(p, "datapath system: ct_zones not applied") }) {
		t.Errorf("problems: %q", d.Problems)
	}
}

// TestBuildPrefixes: a bridge's Flow_Table rows give its tables' prefix
// fields (OVS's names, in the sorted order of OVS's IDL), none for
// "none", OVS's default (left out) for a row without prefixes or with
// none usable; OVS's warnings and INFO lines.
func TestBuildPrefixes(t *testing.T) {
	var d db
	br := d.bridge("br0")
	rows := []vswitchd.FlowTable{
		{UUID: "00000000-0000-4000-8000-0000000000f0", Prefixes: []string{"nw_src", "ipv6_dst"}},
		{UUID: "00000000-0000-4000-8000-0000000000f1", Prefixes: []string{"none", "nw_src"}},
		{UUID: "00000000-0000-4000-8000-0000000000f2", FlowLimit: ptrTo(100), Name: ptrTo("t2")},
		{UUID: "00000000-0000-4000-8000-0000000000f3", Prefixes: []string{"eth_src", "bogus"}},
		{UUID: "00000000-0000-4000-8000-0000000000f4", Prefixes: []string{"tun_id", "ip_dst"}},
	}
	d.rows.FlowTables = rows
	br.FlowTables = map[int]string{0: rows[0].UUID, 1: rows[1].UUID, 2: rows[2].UUID, 3: rows[3].UUID, 4: rows[4].UUID,
		5: "00000000-dead-4000-8000-000000000000"}
	got := Build(d.rows)
	p := got.Bridges[0].Prefixes
	if _, none := p[1]; len(p) != 3 || !slices.Equal(p[0], []string{"ipv6_dst", "ip_src"}) || !none || len(p[1]) != 0 || !slices.Equal(p[4], []string{"ip_dst"}) {
		t.Errorf("prefixes %v, want tables 0 ipv6_dst,ip_src, 1 none, 4 ip_dst", p)
	}
	for _, w := range []string{
		"bridge br0: 'prefixes' with incompatible field: eth_src",
		"bridge br0: 'prefixes' with unknown field: bogus",
		"bridge br0 table 4: 'prefixes': govs keeps no prefix trie on tun_id, field not used",
		"bridge br0 table 2: Flow_Table flow_limit, name not implemented by govs, not applied",
	} {
		if !slices.Contains(got.Problems, w) {
			t.Errorf("problems lack %q: %q", w, got.Problems)
		}
	}
	wantNotes := []string{
		"bridge br0 table 0: Prefix lookup with: ipv6_dst,ip_src.",
		"bridge br0 table 1: Prefix lookup with: none.",
		"bridge br0 table 4: Prefix lookup with: ip_dst,tun_id.",
	}
	if !slices.Equal(got.Notes, wantNotes) {
		t.Errorf("notes %q, want %q", got.Notes, wantNotes)
	}
}

func ptrTo[T any](v T) *T { return &v }
