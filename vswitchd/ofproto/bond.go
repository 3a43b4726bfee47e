package ofproto

import "github.com/govs/govs/datapath/flow"

// NORMAL's view of bonds, as OVS's bond.c without LACP: a bond is one port
// named after it; what it receives is admitted by bond_check_admissibility
// and what it sends leaves on the member bond_choose_output_member picks.

// learnName is the port NORMAL learns MACs on for p: its bond, or itself.
func (p *port) learnName() string {
	if p.bond != nil {
		return p.bond.name
	}
	return p.name
}

// bondAdmits reports whether a packet received on in, a bond member, may
// enter the bridge: multicast only on the active member, anything only on
// the active member of an active-backup bond; a balance-slb bond drops
// what has its source learned on another port (its own flood coming back
// on another member), but gratuitous ARPs (the host moved).
func (x *xlate) bondAdmits(in *port, src, dst flow.MAC, vid uint16) bool {
	b := in.bond
	if (dst.IsMulticast() || !b.slb) && in != b.active {
		x.report("->", "bonding refused admissibility, dropping")
		return false
	}
	if !b.slb {
		return true
	}
	ml := in.br.br.ml
	ml.mu.Lock()
	name, known := ml.lookup(src, vid)
	ml.mu.Unlock()
	if known && name != b.name && !x.isGratuitousARP() {
		x.report("->", "SLB bond thinks this packet looped back, dropping")
		return false
	}
	return true
}

// isGratuitousARP is OVS's is_gratuitous_arp: a broadcast ARP reply, or
// request for its own address (gratuitousARP consulted the fields).
func (x *xlate) isGratuitousARP() bool {
	k := x.key
	if k.EthType != flow.EthTypeARP || !flow.MAC(k.EthDst).IsBroadcast() {
		return false
	}
	return k.NwProto == 2 || k.NwProto == 1 && k.IPv4Src == k.IPv4Dst
}

// bondOut is the member of b that sends this flow, nil if none is
// enabled: the active member, or for balance-slb the enabled member the
// source MAC and VLAN hash to. (OVS hashes to one of 256 buckets that
// rebalancing moves between members; govs does not rebalance.)
func (x *xlate) bondOut(b *bond, vid uint16) *port {
	if !b.slb || len(b.enabled) == 0 {
		return b.active
	}
	h := uint32(2166136261)
	for _, c := range x.key.EthSrc {
		h = (h ^ uint32(c)) * 16777619
	}
	h = (h ^ uint32(vid)) * 16777619
	return b.enabled[h%uint32(len(b.enabled))]
}

// floodsTo reports whether a flood of a packet received on in goes out p:
// not back to in or its bond, and to a bond once, on its chosen member.
func (x *xlate) floodsTo(in, p *port, vid uint16) bool {
	if p == in {
		return false
	}
	if p.bond == nil {
		return true
	}
	return p.bond != in.bond && p == x.bondOut(p.bond, vid)
}

// learnedPort resolves the port name a MAC was learned on to the port
// that outputs to it; isIn reports that it is in (or in's bond).
func (x *xlate) learnedPort(in *port, name string, vid uint16) (out *port, isIn bool) {
	if b := in.br.bonds[name]; b != nil {
		return x.bondOut(b, vid), b == in.bond
	}
	out = in.br.byName[name]
	return out, out == in && out != nil
}
