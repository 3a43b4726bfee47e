package ofptext

import (
	"strings"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Protocols is a set of OpenFlow protocols (OVS's enum ofputil_protocol):
// a version and, for OpenFlow 1.0, a flow format (standard or NXM) and
// whether flow mods carry a table ID.
type Protocols uint16

// The protocols, in OVS's order (the first usable and allowed one is
// chosen).
const (
	ProtoOF10Std    Protocols = 1 << iota // OpenFlow10-table_id
	ProtoOF10StdTID                       // OpenFlow10+table_id
	ProtoOF10NXM                          // NXM-table_id
	ProtoOF10NXMTID                       // NXM+table_id
	ProtoOF11                             // OpenFlow11
	ProtoOF12                             // OXM-OpenFlow12
	ProtoOF13
	ProtoOF14
	ProtoOF15

	ProtoAny        = 1<<9 - 1
	ProtoOF10StdAny = ProtoOF10Std | ProtoOF10StdTID
	ProtoOF10NXMAny = ProtoOF10NXM | ProtoOF10NXMTID
	ProtoOF10Any    = ProtoOF10StdAny | ProtoOF10NXMAny
	ProtoOXM        = ProtoOF12 | ProtoOF13 | ProtoOF14 | ProtoOF15
	ProtoOF11Up     = ProtoOF11 | ProtoOXM
	ProtoNXMOF11Up  = ProtoOF10NXMAny | ProtoOF11Up
	ProtoNXMOXM     = ProtoOF10NXMAny | ProtoOXM
	ProtoOF12Up     = ProtoOXM
	ProtoOF13Up     = ProtoOF13 | ProtoOF14 | ProtoOF15
	ProtoOF15Up     = ProtoOF15
	ProtoTID        = ProtoOF10StdTID | ProtoOF10NXMTID | ProtoOF11Up
)

var protoNames = [...]string{"OpenFlow10-table_id", "OpenFlow10+table_id", "NXM-table_id", "NXM+table_id",
	"OpenFlow11", "OXM-OpenFlow12", "OXM-OpenFlow13", "OXM-OpenFlow14", "OXM-OpenFlow15"}

// String names the set as OVS's ofputil_protocols_to_string: "any",
// "OpenFlow10", "NXM" and "OXM" for those groups, the rest one by one.
func (p Protocols) String() string {
	if p == 0 {
		return "none"
	}
	var out []string
	for p != 0 {
		switch {
		case p&ProtoAny == ProtoAny:
			out, p = append(out, "any"), p&^ProtoAny
		case p&ProtoOF10StdAny == ProtoOF10StdAny:
			out, p = append(out, "OpenFlow10"), p&^ProtoOF10StdAny
		case p&ProtoOF10NXMAny == ProtoOF10NXMAny:
			out, p = append(out, "NXM"), p&^ProtoOF10NXMAny
		case p&ProtoOXM == ProtoOXM:
			out, p = append(out, "OXM"), p&^ProtoOXM
		default:
			bit := p & -p
			out, p = append(out, protoNames[bitIndex(bit)]), p&^bit
		}
	}
	return strings.Join(out, ",")
}

func bitIndex(b Protocols) int {
	i := 0
	for b > 1 {
		b >>= 1
		i++
	}
	return i
}

// Version is a single protocol's OpenFlow version.
func (p Protocols) Version() ofp.Version {
	switch {
	case p&ProtoOF10Any != 0:
		return ofp.V10
	case p == ProtoOF11:
		return ofp.V11
	case p == ProtoOF12:
		return ofp.V12
	case p == ProtoOF13:
		return ofp.V13
	case p == ProtoOF14:
		return ofp.V14
	}
	return ofp.V15
}

// VersionProtocols are the protocols of the versions vs (OVS's
// ofputil_protocols_from_version_bitmap).
func VersionProtocols(vs ofp.Versions) Protocols {
	var p Protocols
	for v, ps := range map[ofp.Version]Protocols{ofp.V10: ProtoOF10Any, ofp.V11: ProtoOF11, ofp.V12: ProtoOF12,
		ofp.V13: ProtoOF13, ofp.V14: ProtoOF14, ofp.V15: ProtoOF15} {
		if vs.Has(v) {
			p |= ps
		}
	}
	return p
}

// fieldProtocols are the fields OpenFlow 1.0 or 1.1 can match (OVS's
// meta-flow.h "OF1.0:" and "OF1.1:" lines), by the codec's names: how
// (exact, CIDR or bitwise mask). Every other field is NXM's and OXM's
// only.
var fieldProtocols = map[string][2]maskKind{
	"in_port": {exactMask, exactMask}, "eth_src": {exactMask, bitwiseMask}, "eth_dst": {exactMask, bitwiseMask},
	"eth_type": {exactMask, exactMask}, "vlan_tci": {exactMask, exactMask}, "vlan_vid": {exactMask, exactMask},
	"vlan_pcp": {exactMask, exactMask}, "ip_src": {cidrMask, bitwiseMask}, "ip_dst": {cidrMask, bitwiseMask},
	"ip_proto": {exactMask, exactMask}, "nw_proto": {exactMask, exactMask}, "nw_tos": {exactMask, exactMask},
	"ip_dscp": {exactMask, exactMask}, "arp_op": {exactMask, exactMask}, "arp_spa": {cidrMask, bitwiseMask},
	"arp_tpa": {cidrMask, bitwiseMask}, "tcp_src": {exactMask, exactMask}, "tcp_dst": {exactMask, exactMask},
	"udp_src": {exactMask, exactMask}, "udp_dst": {exactMask, exactMask}, "icmp_type": {exactMask, exactMask},
	"icmp_code":   {exactMask, exactMask},
	"in_port_oxm": {noMask, exactMask}, "ip_ecn": {noMask, exactMask}, "nw_ecn": {noMask, exactMask},
	"sctp_src": {noMask, exactMask}, "sctp_dst": {noMask, exactMask}, "mpls_label": {noMask, exactMask},
	"mpls_tc": {noMask, exactMask}, "metadata": {noMask, bitwiseMask},
}

// maskKind is how an OpenFlow version matches a field: not at all,
// exactly, on an IPv4 prefix, or on any bits.
type maskKind uint8

const (
	noMask maskKind = iota
	exactMask
	cidrMask
	bitwiseMask
)

// fieldUsable is what matching field fd with mask msk (nil: exact)
// leaves usable (OVS's mf_set, with extract-ofp-fields'
// usable_protocols_exact, _cidr and _bitwise).
func fieldUsable(fd *ofp.Field, msk []byte) Protocols {
	if msk != nil && allZeros(msk) {
		return ProtoAny
	}
	kinds := fieldProtocols[fd.Name]
	of10, of11 := kinds[0], kinds[1]
	set := func(with10, with11 bool) Protocols {
		switch {
		case with10 && with11:
			return ProtoAny
		case with11:
			return ProtoNXMOF11Up
		}
		return ProtoNXMOXM
	}
	if msk == nil || coversField(fd, msk) {
		return set(of10 != noMask, of11 != noMask)
	}
	cidr := set(of10 == cidrMask, of11 == bitwiseMask)
	bitwise := set(false, of11 == bitwiseMask)
	var m32 [4]byte
	copy(m32[:], msk)
	if cidr == bitwise || isCIDR(m32[:]) {
		return cidr
	}
	return bitwise
}

// coversField reports whether msk covers all of fd's bits (the low
// Bits() of its bytes).
func coversField(fd *ofp.Field, msk []byte) bool {
	bits := fd.Bits()
	for i := len(msk) - 1; i >= 0 && bits > 0; i-- {
		want := byte(0xff)
		if bits < 8 {
			want = byte(1)<<bits - 1
		}
		if msk[i]&want != want {
			return false
		}
		bits -= 8
	}
	return true
}

func allZeros(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// isCIDR reports whether a 32-bit mask is a prefix (ip_is_cidr).
func isCIDR(m []byte) bool {
	x := uint32(m[0])<<24 | uint32(m[1])<<16 | uint32(m[2])<<8 | uint32(m[3])
	x = ^x
	return x&(x+1) == 0
}

// actionsUsable is what an action list leaves usable as OVS's
// ofpacts_parse: push_vlan needs OpenFlow 1.1+, a set_field (not a
// load) its field's exact-match protocols, meter 1.3+, write_metadata NXM or 1.1+. A
// clone's list starts over (OVS parses it with the same set, which it
// resets); a ct's exec folds in.
func actionsUsable(acts []ofp.Action) Protocols {
	p := Protocols(ProtoAny)
	for i := range acts {
		a := &acts[i]
		switch a.Type {
		case ofp.ActPushVLAN:
			p &= ProtoOF11Up
		case ofp.ActSetField:
			// set_tunnel and load are Nicira actions in every protocol
			// (OVS's parse_reg_load leaves the protocols as they are).
			if _, tunnel := a.SetTunnelID(); !a.Legacy() && !a.RegLoad() && !tunnel {
				p &= fieldUsable(a.Field, nil)
			}
		case ofp.ActMeter:
			p &= ProtoOF13Up
		case ofp.ActWriteMetadata:
			p &= ProtoNXMOF11Up
		case ofp.ActClone, ofp.ActWriteActions:
			p = actionsUsable(a.Nested)
		case ofp.ActCT:
			p &= actionsUsable(a.Nested)
		}
	}
	return p
}

// Inconsistent reports whether an action works on a header the packet
// k (as the actions before it leave it) does not have, where OVS's
// ofpacts_check calls inconsistent_match (which leaves only OpenFlow 1.0
// usable): OpenFlow 1.0's mod_nw_* and mod_tp_*, dec_ttl of a non-IP
// packet (check_set_ip), strip_vlan or OpenFlow 1.1's set_vlan_* of an
// untagged one, fin_timeout of a non-TCP one.
func Inconsistent(acts []ofp.Action, k flow.Key) bool {
	ipAny := func() bool { return k.EthType == flow.EthTypeIPv4 || k.EthType == flow.EthTypeIPv6 }
	for i := range acts {
		a := &acts[i]
		switch a.Type {
		case ofp.ActSetField:
			if !a.Legacy() {
				continue
			}
			switch a.Field.Name {
			case "ip_src", "ip_dst":
				if k.EthType != flow.EthTypeIPv4 {
					return true
				}
			case "nw_tos", "ip_dscp", "nw_ecn", "ip_ecn", "nw_ttl":
				if !ipAny() {
					return true
				}
			case "tcp_src", "tcp_dst", "udp_src", "udp_dst", "sctp_src", "sctp_dst":
				p := k.NwProto
				if !ipAny() || k.NwFrag&flow.FragLater != 0 || p != flow.IPProtoTCP && p != flow.IPProtoUDP && p != flow.IPProtoSCTP {
					return true
				}
			}
		case ofp.ActPopVLAN:
			if k.VLANTCI&flow.VLANPresent == 0 {
				return true
			}
			k.VLANTCI = 0
		case ofp.ActDecTTL:
			if !ipAny() {
				return true
			}
		case ofp.ActSetVLANVID, ofp.ActSetVLANPCP:
			if a.NoPush && k.VLANTCI&flow.VLANPresent == 0 {
				return true
			}
			k.VLANTCI |= flow.VLANPresent
		case ofp.ActPushVLAN:
			k.VLANTCI |= flow.VLANPresent
		case ofp.ActFinTimeout:
			if k.NwProto != flow.IPProtoTCP {
				return true
			}
		case ofp.ActClone, ofp.ActCT:
			if Inconsistent(a.Nested, k) {
				return true
			}
		}
	}
	return false
}

// ActionsUsable returns the protocols that can carry acts (a bucket's,
// a packet-out's), as the usable protocols OVS's action parsers narrow.
func ActionsUsable(acts []ofp.Action) Protocols { return actionsUsable(acts) }
