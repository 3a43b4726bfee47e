package ofproto

import (
	"math/bits"
	"slices"
	"strings"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
)

// MaxMirrors is how many mirrors a bridge runs, as OVS's MAX_MIRRORS: a
// translation keeps the mirrors it already sent to in a 32-bit mask.
const MaxMirrors = 32

// MirrorConfig is one port mirror (a Mirror row), in the terms of OVS's
// ofproto-dpif-mirror.c mirror_set: ports are given by their interfaces,
// every interface of each selected port (all members of a bond).
type MirrorConfig struct {
	// Key identifies the mirror across reconfigurations (its row's UUID):
	// its statistics survive a change of its settings.
	Key  string
	Name string
	// Src selects the packets received on these interfaces, Dst those
	// sent to them.
	Src, Dst []string
	// VLANs is select_vlan: only packets in these VLANs are mirrored;
	// empty selects every VLAN.
	VLANs []int
	// Out is the output port's interfaces; empty means OutVLAN.
	Out []string
	// OutVLAN is output_vlan (RSPAN): copies go, tagged with it, to every
	// port that carries it, except mirror output ports.
	OutVLAN int
	// Snaplen truncates each copy to this many bytes; 0 sends them whole.
	Snaplen int
}

// mirror is one mirror of a bridge snapshot. Immutable.
type mirror struct {
	name string
	// vlans are the selected VLANs, nil for all.
	vlans *vlanSet
	// outName names the output port ("" for output to outVLAN); out is
	// one of its interfaces (for a bond, mirrorOutPort picks the member
	// that sends), nil if none runs.
	outName string
	out     *port
	outVLAN uint16
	snaplen int
	// dups are this mirror and the others with the same output: a packet
	// sent to one is not sent to them again.
	dups uint32
	// counter counts what the mirror sends; the Bridge keeps it across
	// snapshots.
	counter *datapath.Counter
}

// newMirrors resolves cfg's mirrors against s's ports, marking the
// ports' selections, and forgets the counters of mirrors gone. Interfaces
// s does not have (not attached) are left out. br.backer.mu is held.
func (br *Bridge) newMirrors(s *snapshot, cfg []MirrorConfig) {
	counters := map[string]*datapath.Counter{}
	for i, mc := range cfg {
		if i == MaxMirrors {
			break // the caller refuses the others (bridge.mirrorSpecs)
		}
		m := &mirror{name: mc.Name, outName: strings.Join(mc.Out, ","), outVLAN: uint16(mc.OutVLAN), snaplen: mc.Snaplen}
		if m.counter = br.mirrorCounters[mc.Key]; m.counter == nil {
			m.counter = new(datapath.Counter)
		}
		counters[mc.Key] = m.counter
		if len(mc.VLANs) > 0 {
			m.vlans = new(vlanSet)
			for _, v := range mc.VLANs {
				if v >= 0 && v <= 4095 {
					m.vlans.set(uint16(v))
				}
			}
		}
		bit := uint32(1) << i
		for _, name := range mc.Src {
			if p := s.byName[name]; p != nil {
				p.srcMirrors |= bit
			}
		}
		for _, name := range mc.Dst {
			if p := s.byName[name]; p != nil {
				p.dstMirrors |= bit
			}
		}
		for _, name := range mc.Out {
			if p := s.byName[name]; p != nil {
				p.mirrorOut = true
				if m.out == nil {
					m.out = p
				}
			}
		}
		s.mirrors = append(s.mirrors, m)
	}
	br.mirrorCounters = counters
	for _, m := range s.mirrors {
		for j, o := range s.mirrors {
			if m.outName == o.outName && (m.outName != "" || m.outVLAN == o.outVLAN) {
				m.dups |= 1 << j
			}
		}
	}
}

// MirrorStats returns the packets and bytes the mirror with key has sent
// since it was created, and false if the bridge runs no such mirror.
func (br *Bridge) MirrorStats(key string) (packets, bytes uint64, ok bool) {
	b := br.backer
	b.mu.Lock()
	c := br.mirrorCounters[key]
	b.mu.Unlock()
	if c == nil {
		return 0, 0, false
	}
	packets, bytes = c.Load()
	return packets, bytes, true
}

// mirrorPacket sends the packet to the mirrors of mirrors that select
// it, as received on or sent to p with the flow's VLAN (OVS's
// mirror_packet): each mirror at most once per translation, with its
// VLAN and snaplen.
func (x *xlate) mirrorPacket(p *port, mirrors uint32) {
	mirrors &^= x.mirrored
	if mirrors == 0 {
		return
	}
	// Whether p admits the VLAN, and which VLAN the packet is in, read
	// the tag.
	x.mask.VLANTCI |= flow.VLANVIDMask | flow.VLANPresent
	inVLAN := x.cur.xvlan()
	if !p.inputVIDValid(inVLAN.vid) {
		return
	}
	v := inputTranslate(p, inVLAN)
	s := p.br
	if len(s.bonds) > 0 {
		// A balance-slb bond's member is chosen by the source MAC.
		x.mask.EthSrc = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	for mirrors != 0 {
		i := bits.TrailingZeros32(mirrors)
		if i >= len(s.mirrors) {
			break
		}
		m := s.mirrors[i]
		if m.vlans != nil && !m.vlans.has(v.vid) {
			mirrors &^= 1 << i
			continue
		}
		x.mirrored |= m.dups
		if !slices.Contains(x.mirrorCounters, m.counter) {
			x.mirrorCounters = append(x.mirrorCounters, m.counter)
		}
		x.report("->", "mirroring to mirror %s", m.name)
		x.snaplen = m.snaplen
		switch {
		case m.outName != "":
			// Without a running interface the port sends nothing.
			if m.out != nil {
				if out := x.mirrorOutPort(m.out, v.vid); out != nil {
					x.outputNormal(out, v)
				}
			}
		default:
			x.mask.EthDst = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
			if v.vid == m.outVLAN || isReservedMAC(flow.MAC(x.key.EthDst)) {
				break
			}
			rv := v
			rv.vid = m.outVLAN
			for _, q := range s.ports {
				if q.includesVLAN(rv.vid) && !q.mirrorOut && (q.bond == nil || q == x.bondOut(q.bond, rv.vid)) {
					x.outputNormal(q, rv)
				}
			}
		}
		x.snaplen = 0
		// The outputs may have mirrored too.
		mirrors &^= x.mirrored
	}
}

// mirrorOutPort is the interface of a mirror's output port that sends: the
// port, or the chosen member of its bond.
func (x *xlate) mirrorOutPort(out *port, vid uint16) *port {
	if out.bond != nil {
		return x.bondOut(out.bond, vid)
	}
	return out
}

// withMirrorCounts returns acts with, in front, the actions that count
// the packets for the mirrors the translation sent them to.
func (x *xlate) withMirrorCounts(acts datapath.Actions) datapath.Actions {
	if len(x.mirrorCounters) == 0 {
		return acts
	}
	out := make(datapath.Actions, 0, len(x.mirrorCounters)+len(acts))
	for _, c := range x.mirrorCounters {
		out = append(out, datapath.Count(c))
	}
	return append(out, acts...)
}
