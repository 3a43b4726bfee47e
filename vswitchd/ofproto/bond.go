package ofproto

import (
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/lacp"
)

// NORMAL's view of bonds, as OVS's bond.c: a bond is one port
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
// enter the bridge (bond_check_admissibility). With LACP negotiated,
// anything on a member LACP enables; LACP without a partner drops
// everything, unless lacp-fallback-ab makes the bond active-backup, and
// so does balance-tcp without LACP. Otherwise multicast only on the
// active member, anything only on the active member of an active-backup
// bond; a balance-slb bond drops what has its source learned on another
// port (its own flood coming back on another member), but gratuitous ARPs
// (the host moved).
func (x *xlate) bondAdmits(in *port, src, dst flow.MAC, vid uint16) bool {
	b := in.bond
	refuse := func() bool {
		x.report("->", "bonding refused admissibility, dropping")
		return false
	}
	switch b.lacp {
	case lacp.Negotiated:
		if !in.enabled && !in.mayEnable {
			return refuse()
		}
		return true
	case lacp.Configured:
		if !b.fallbackAB {
			return refuse()
		}
	case lacp.Disabled:
		if b.tcp {
			return refuse()
		}
	}
	if dst.IsMulticast() && in != b.active {
		return refuse()
	}
	if b.tcp && !b.fallbackAB || !b.slb && in != b.active {
		return refuse()
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

// bondOut is the member of b that sends this flow, nil if none
// (bond_choose_output_member): the active member of an active-backup
// bond, or of any bond whose LACP has no partner and lacp-fallback-ab
// (none without it); for balance-slb and balance-tcp (with LACP
// negotiated only) the member of the hash bucket the flow falls in
// (bondBucket), which a bucket not assigned to an enabled member is given
// now, round robin over the enabled members, as get_enabled_member.
func (x *xlate) bondOut(b *bond, vid uint16) *port {
	e := x.bondEntry(b, vid)
	switch {
	case e >= 0:
	case b.lacp == lacp.Configured:
		if !b.fallbackAB {
			return nil
		}
		return b.active
	case b.tcp && b.lacp != lacp.Negotiated:
		return nil
	default:
		return b.active
	}
	if len(b.enabled) == 0 {
		return b.active
	}
	h := b.hash
	h.mu.Lock()
	defer h.mu.Unlock()
	if m := b.member(h.members[e]); m != nil && m.enabled {
		return m
	}
	m := b.enabled[h.next%uint32(len(b.enabled))]
	h.next++
	h.members[e] = m.name
	return m
}

// bondEntry is the hash bucket of this flow in b, -1 if b does not
// balance it (active-backup, or LACP not negotiated).
func (x *xlate) bondEntry(b *bond, vid uint16) int {
	slb, tcp := b.slb, b.tcp
	if b.lacp == lacp.Configured {
		slb, tcp = false, false
	}
	switch {
	case tcp && b.lacp != lacp.Negotiated, !slb && !tcp:
		return -1
	}
	var h uint32
	if tcp {
		h = x.hashL3L4()
	} else {
		h = BondHashMAC(x.key.EthSrc, vid, 0)
	}
	return int(h & bondMask)
}

// bondAccount credits what this translation forwarded to out, a bond
// member, to the flow's hash bucket (bond_account), which rebalancing
// weighs: the missed packet, or what the installed flow forwarded since
// the last revalidation.
func (x *xlate) bondAccount(out *port, vid uint16) {
	if x.bytes == 0 || x.mode != modePacket && x.mode != modeRefresh {
		return
	}
	if e := x.bondEntry(out.bond, vid); e >= 0 {
		out.bond.hash.tx[e].Add(x.bytes)
	}
}

// member returns b's member named name, nil if none.
func (b *bond) member(name string) *port {
	for _, m := range b.members {
		if m.name == name {
			return m
		}
	}
	return nil
}

func fnv1a(h uint32, b []byte) uint32 {
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	return h
}

// hashL3L4 hashes what OVS's balance-tcp hashes (symmetric L3 and L4:
// both directions of a connection hash alike), adding the fields to the
// mask: the IP addresses and protocol, and the ports of TCP, UDP and
// SCTP; for other packets the Ethernet addresses, which NORMAL consulted
// already.
func (x *xlate) hashL3L4() uint32 {
	k, m := x.key, x.mask
	h := uint32(2166136261)
	switch k.EthType {
	case flow.EthTypeIPv4:
		m.IPv4Src, m.IPv4Dst = [4]byte{0xff, 0xff, 0xff, 0xff}, [4]byte{0xff, 0xff, 0xff, 0xff}
		var a [4]byte
		for i := range a {
			a[i] = k.IPv4Src[i] ^ k.IPv4Dst[i]
		}
		h = fnv1a(h, a[:])
	case flow.EthTypeIPv6:
		ones := [16]byte{}
		for i := range ones {
			ones[i] = 0xff
		}
		m.IPv6Src, m.IPv6Dst = ones, ones
		var a [16]byte
		for i := range a {
			a[i] = k.IPv6Src[i] ^ k.IPv6Dst[i]
		}
		h = fnv1a(h, a[:])
	default:
		var a [6]byte
		for i := range a {
			a[i] = k.EthSrc[i] ^ k.EthDst[i]
		}
		return mix(fnv1a(h, a[:]))
	}
	m.NwProto = 0xff
	h = (h ^ uint32(k.NwProto)) * 16777619
	switch k.NwProto {
	case flow.IPProtoTCP, flow.IPProtoUDP, flow.IPProtoSCTP:
		m.TpSrc, m.TpDst = 0xffff, 0xffff
		p := k.TpSrc ^ k.TpDst
		h = fnv1a(h, []byte{byte(p >> 8), byte(p)})
	}
	return mix(h)
}

// mix is MurmurHash3's finalizer: FNV's low bits depend only on the low
// bits of the bytes hashed, and the member is chosen by the low bits.
func mix(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	return h ^ h>>16
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
