package bridge

import (
	"fmt"
	"slices"

	"github.com/govs/govs/schema/vswitchd"
	"github.com/govs/govs/vswitchd/ofproto"
)

// MirrorSpec is one Mirror row of a bridge, resolved as OVS's bridge.c
// mirror_configure does: ports by name, only the bridge's own.
type MirrorSpec struct {
	UUID, Name string
	// Src and Dst are the ports whose received and sent packets the
	// mirror selects (every port for select_all), sorted.
	Src, Dst []string
	// VLANs is select_vlan, sorted; empty selects all.
	VLANs []int
	// Out is output_port's name; "" for output to OutVLAN.
	Out     string
	OutVLAN int
	// Snaplen is snaplen, 0 if unset.
	Snaplen int
	// Refused: the bridge already runs ofproto.MaxMirrors mirrors; the
	// mirror runs nothing and shows empty statistics.
	Refused bool
}

// mirrorSpecs resolves br's Mirror rows against spec's ports, with the
// errors OVS logs. Rows are taken in UUID order, the order of an OVSDB
// set, which is how OVS numbers them.
func mirrorSpecs(br vswitchd.Bridge, spec *BridgeSpec, rows map[string]vswitchd.Mirror, ports map[string]vswitchd.Port, problems *[]string) []MirrorSpec {
	onBridge := map[string]bool{}
	for _, p := range spec.Ports {
		onBridge[p.Name] = true
	}
	var specs []MirrorSpec
	for _, u := range slices.Sorted(slices.Values(br.Mirrors)) {
		m, ok := rows[u]
		if !ok {
			continue
		}
		where := fmt.Sprintf("bridge %s: mirror %s", br.Name, m.Name)
		ms := MirrorSpec{UUID: m.UUID, Name: m.Name, VLANs: slices.Sorted(slices.Values(m.SelectVLAN))}
		var out *vswitchd.Port
		if m.OutputPort != nil {
			if p, ok := ports[*m.OutputPort]; ok {
				out = &p
			}
		}
		switch {
		case out != nil:
			if !onBridge[out.Name] {
				*problems = append(*problems, where+" outputs to port not on bridge")
				continue
			}
			ms.Out = out.Name
			if m.OutputVLAN != nil {
				*problems = append(*problems, where+" specifies both output port and output vlan; ignoring output vlan")
			}
		case m.OutputVLAN != nil:
			ms.OutVLAN = *m.OutputVLAN
		default:
			*problems = append(*problems, where+" does not specify output; ignoring")
			continue
		}
		if m.Snaplen != nil {
			ms.Snaplen = *m.Snaplen
		}
		if m.SelectAll {
			for _, p := range spec.Ports {
				ms.Src = append(ms.Src, p.Name)
			}
			ms.Dst = ms.Src
		} else {
			ms.Src = mirrorPorts(where, m.SelectSrcPort, ports, onBridge, problems)
			ms.Dst = mirrorPorts(where, m.SelectDstPort, ports, onBridge, problems)
		}
		if len(specs) >= ofproto.MaxMirrors {
			*problems = append(*problems, fmt.Sprintf("maximum of %d port mirrors reached, cannot create %s", ofproto.MaxMirrors, m.Name))
			ms = MirrorSpec{UUID: m.UUID, Name: m.Name, Refused: true}
		}
		specs = append(specs, ms)
	}
	return specs
}

// mirrorPorts returns the names of the ports of uuids, sorted, leaving out
// (and reporting) those not on the bridge.
func mirrorPorts(where string, uuids []string, ports map[string]vswitchd.Port, onBridge map[string]bool, problems *[]string) []string {
	var names []string
	for _, u := range uuids {
		p, ok := ports[u]
		if !ok {
			continue // a weak reference to a deleted port
		}
		if !onBridge[p.Name] {
			*problems = append(*problems, where+" cannot match on nonexistent port "+p.Name)
			continue
		}
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

// ofMirrors turns spec's mirrors into ofproto's terms: ports become their
// interfaces.
func ofMirrors(spec *BridgeSpec) []ofproto.MirrorConfig {
	ifaces := map[string][]string{}
	for _, p := range spec.Ports {
		for _, i := range p.Ifaces {
			ifaces[p.Name] = append(ifaces[p.Name], i.Name)
		}
	}
	names := func(ports []string) []string {
		var out []string
		for _, p := range ports {
			out = append(out, ifaces[p]...)
		}
		return out
	}
	var cfgs []ofproto.MirrorConfig
	for _, m := range spec.Mirrors {
		if m.Refused {
			continue
		}
		c := ofproto.MirrorConfig{Key: m.UUID, Name: m.Name, Src: names(m.Src), Dst: names(m.Dst),
			VLANs: m.VLANs, OutVLAN: m.OutVLAN, Snaplen: m.Snaplen}
		if m.Out != "" {
			c.Out = names([]string{m.Out})
		}
		cfgs = append(cfgs, c)
	}
	return cfgs
}

// MirrorStatser is an OFBridge that counts what its mirrors send.
type MirrorStatser interface {
	MirrorStats(key string) (packets, bytes uint64, ok bool)
}

// MirrorStatus is the Mirror column the switch writes: statistics
// (tx_packets, tx_bytes), nil to clear it, as OVS's mirror_refresh_stats.
type MirrorStatus struct {
	UUID  string
	Stats map[string]int
}

// refreshMirrors reads every running mirror's counters. Caller holds mu.
func (s *Switch) refreshMirrors() {
	s.mirrorStats = map[string]map[string]int{}
	if s.last == nil {
		return
	}
	for _, spec := range s.last.Bridges {
		rb := s.bridges[spec.Name]
		if rb == nil {
			continue
		}
		ms, ok := rb.of.(MirrorStatser)
		if !ok {
			continue
		}
		for _, m := range spec.Mirrors {
			st := map[string]int{}
			if p, b, ok := ms.MirrorStats(m.UUID); ok {
				st["tx_packets"], st["tx_bytes"] = int(p), int(b)
			}
			s.mirrorStats[m.UUID] = st
		}
	}
}

// mirrorStatus reports the mirrors of br. Caller holds mu.
func (s *Switch) mirrorStatus(br *BridgeSpec) []MirrorStatus {
	var r []MirrorStatus
	for _, m := range br.Mirrors {
		st := s.mirrorStats[m.UUID]
		if st == nil {
			// Not yet read: statistics come with the periodic refresh.
			continue
		}
		r = append(r, MirrorStatus{UUID: m.UUID, Stats: st})
	}
	return r
}
