package ofp

import "github.com/govs/govs/datapath/flow"

// A Protocol is what a flow's shorthand keyword stands for: an Ethernet
// type and, for some, an IP protocol (0: any).
type Protocol struct {
	EthType uint16
	NwProto uint8
}

// MPLS Ethernet types: govs matches them as types, with no MPLS fields.
const (
	EthTypeMPLS      = 0x8847
	EthTypeMPLSMcast = 0x8848
)

// protocolNames are the keywords OVS 3.1's match_format prints, in the
// order it tries them.
var protocolNames = []struct {
	name string
	p    Protocol
}{
	{"ip", Protocol{flow.EthTypeIPv4, 0}}, {"ipv6", Protocol{flow.EthTypeIPv6, 0}},
	{"icmp", Protocol{flow.EthTypeIPv4, flow.IPProtoICMP}}, {"icmp6", Protocol{flow.EthTypeIPv6, flow.IPProtoICMPv6}},
	{"tcp", Protocol{flow.EthTypeIPv4, flow.IPProtoTCP}}, {"tcp6", Protocol{flow.EthTypeIPv6, flow.IPProtoTCP}},
	{"udp", Protocol{flow.EthTypeIPv4, flow.IPProtoUDP}}, {"udp6", Protocol{flow.EthTypeIPv6, flow.IPProtoUDP}},
	{"sctp", Protocol{flow.EthTypeIPv4, flow.IPProtoSCTP}}, {"sctp6", Protocol{flow.EthTypeIPv6, flow.IPProtoSCTP}},
	{"arp", Protocol{flow.EthTypeARP, 0}}, {"rarp", Protocol{flow.EthTypeRARP, 0}},
	{"mpls", Protocol{EthTypeMPLS, 0}}, {"mplsm", Protocol{EthTypeMPLSMcast, 0}},
}

// Protocols are the shorthand keywords a flow may start with, OVS 3.1's
// ofp_parse_protocol's: the names match_format prints and the aliases
// ipv4, ip4 and ip6. OVS 3.1 has no igmp.
var Protocols = func() map[string]Protocol {
	m := map[string]Protocol{"ipv4": {flow.EthTypeIPv4, 0}, "ip4": {flow.EthTypeIPv4, 0}, "ip6": {flow.EthTypeIPv6, 0}}
	for _, n := range protocolNames {
		m[n.name] = n.p
	}
	return m
}()

// ProtocolName is the keyword match_format prints for a match on Ethernet
// type ethType and, if protoMatched, IP protocol nwProto: "tcp" (withProto
// true: the keyword says the protocol too), "ip", ..., or "" if none
// (the type is printed as dl_type).
func ProtocolName(ethType uint16, nwProto uint8, protoMatched bool) (name string, withProto bool) {
	if protoMatched && nwProto != 0 {
		for _, n := range protocolNames {
			if n.p.EthType == ethType && n.p.NwProto == nwProto {
				return n.name, true
			}
		}
	}
	for _, n := range protocolNames {
		if n.p.EthType == ethType && n.p.NwProto == 0 {
			return n.name, false
		}
	}
	return "", false
}
