package bridge

import (
	"fmt"
	"slices"
	"testing"

	"github.com/govs/govs/schema/vswitchd"
)

// mirror adds a Mirror row to the first bridge; set fills it in.
func (d *db) mirror(name string, set func(m *vswitchd.Mirror)) {
	m := vswitchd.Mirror{UUID: d.uuid(), Name: name}
	set(&m)
	d.rows.Mirrors = append(d.rows.Mirrors, m)
	d.rows.Bridges[0].Mirrors = append(d.rows.Bridges[0].Mirrors, m.UUID)
}

// Mirror rows resolve as OVS's mirror_configure: the errors it logs, and
// the mirrors that run.
func TestMirrorSpecs(t *testing.T) {
	var d db
	d.bridge("br0", "p1", "p2", "p3")
	d.bridge("br1", "q1")
	uuid := func(port string) *string { return &d.port(port).UUID }
	vlan := 7
	snap := 100
	d.mirror("all", func(m *vswitchd.Mirror) { m.SelectAll, m.OutputPort = true, uuid("p3") })
	d.mirror("both", func(m *vswitchd.Mirror) {
		m.SelectSrcPort, m.OutputPort, m.OutputVLAN, m.Snaplen = []string{*uuid("p1")}, uuid("p3"), &vlan, &snap
	})
	d.mirror("none", func(m *vswitchd.Mirror) { m.SelectSrcPort = []string{*uuid("p1")} })
	d.mirror("away", func(m *vswitchd.Mirror) { m.SelectSrcPort, m.OutputPort = []string{*uuid("p1")}, uuid("q1") })
	d.mirror("rspan", func(m *vswitchd.Mirror) {
		m.SelectDstPort, m.SelectSrcPort, m.SelectVLAN, m.OutputVLAN = []string{*uuid("p2"), *uuid("q1")}, []string{*uuid("p1")}, []int{3, 1}, &vlan
	})
	got := Build(d.rows)
	want := []string{
		"bridge br0: mirror both specifies both output port and output vlan; ignoring output vlan",
		"bridge br0: mirror none does not specify output; ignoring",
		"bridge br0: mirror away outputs to port not on bridge",
		"bridge br0: mirror rspan cannot match on nonexistent port q1",
	}
	if !slices.Equal(got.Problems, want) {
		t.Errorf("problems:\n%q\nwant:\n%q", got.Problems, want)
	}
	var ms []string
	for _, m := range got.Bridges[0].Mirrors {
		ms = append(ms, fmt.Sprintf("%s src=%v dst=%v vlans=%v out=%q/%d snaplen=%d", m.Name, m.Src, m.Dst, m.VLANs, m.Out, m.OutVLAN, m.Snaplen))
	}
	wantMs := []string{
		"all src=[br0 p1 p2 p3] dst=[br0 p1 p2 p3] vlans=[] out=\"p3\"/0 snaplen=0",
		"both src=[p1] dst=[] vlans=[] out=\"p3\"/0 snaplen=100",
		"rspan src=[p1] dst=[p2] vlans=[1 3] out=\"\"/7 snaplen=0",
	}
	if !slices.Equal(ms, wantMs) {
		t.Errorf("mirrors:\n%q\nwant:\n%q", ms, wantMs)
	}
}

// A bridge runs at most 32 mirrors; the others are refused, with OVS's
// message.
func TestMirrorLimit(t *testing.T) {
	var d db
	d.bridge("br0", "p1", "p2")
	for i := range 33 {
		d.mirror(fmt.Sprintf("m%02d", i), func(m *vswitchd.Mirror) { m.SelectAll, m.OutputPort = true, &d.port("p2").UUID })
	}
	got := Build(d.rows)
	want := []string{"maximum of 32 port mirrors reached, cannot create m32"}
	if !slices.Equal(got.Problems, want) {
		t.Errorf("problems: %q, want %q", got.Problems, want)
	}
	if n := len(ofMirrors(&got.Bridges[0])); n != 32 {
		t.Errorf("%d mirrors run, want 32", n)
	}
}

// FuzzMirrorSpec resolves Mirror rows with arbitrary values: a mirror
// either runs or is reported, never dropped silently, and resolves the
// same way twice.
func FuzzMirrorSpec(f *testing.F) {
	f.Add("m", true, uint8(1), 0, 0, []byte{1, 2})
	f.Add("m", false, uint8(3), 4095, 14, []byte{})
	f.Add("", false, uint8(0), -1, 70000, []byte{0xff})
	f.Fuzz(func(t *testing.T, name string, all bool, sel uint8, outVLAN, snaplen int, vlans []byte) {
		var d db
		d.bridge("br0", "p1", "p2")
		d.bridge("br1", "q1")
		ports := []string{d.port("p1").UUID, d.port("p2").UUID, d.port("q1").UUID, "dangling"}
		d.mirror(name, func(m *vswitchd.Mirror) {
			m.SelectAll = all
			for i, u := range ports {
				if sel&(1<<i) != 0 {
					m.SelectSrcPort = append(m.SelectSrcPort, u)
				}
				if sel&(16<<i) != 0 {
					m.SelectDstPort = append(m.SelectDstPort, u)
				}
			}
			if out := ports[int(sel)%len(ports)]; sel&4 != 0 {
				m.OutputPort = &out
			}
			if outVLAN != 0 {
				m.OutputVLAN = &outVLAN
			}
			if snaplen != 0 {
				m.Snaplen = &snaplen
			}
			for _, v := range vlans {
				m.SelectVLAN = append(m.SelectVLAN, int(v)*17)
			}
		})
		got, again := Build(d.rows), Build(d.rows)
		if !slices.Equal(got.Problems, again.Problems) || fmt.Sprint(got.Bridges) != fmt.Sprint(again.Bridges) {
			t.Fatal("resolving the same rows twice differs")
		}
		if len(got.Bridges[0].Mirrors) == 0 && len(got.Problems) == 0 {
			t.Fatal("mirror dropped silently")
		}
		ofMirrors(&got.Bridges[0])
	})
}
