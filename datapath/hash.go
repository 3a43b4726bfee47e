package datapath

import (
	"strconv"

	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/datapath/packet"
)

// ActionHash sets the packet's dp_hash, which the key of its next pass
// after a recirculation carries, to the hash HashAlg computes with basis
// HashBasis (OVS's hash action, which select groups put before a recirc).
const ActionHash ActionKind = 48

// Hash algorithms of an ActionHash (OVS's enum ovs_hash_alg).
const (
	// HashL4 is OVS_HASH_ALG_L4: hash_int of the packet's 5-tuple hash
	// (the netdev datapath's RSS hash of a packet that came without
	// one) with the basis.
	HashL4 uint8 = iota
	// HashSymL4 is OVS_HASH_ALG_SYM_L4: the symmetric hash of the
	// addresses, the protocol and TCP's and SCTP's ports.
	HashSymL4
)

// Hash returns the action that sets the packet's dp_hash with algorithm
// alg and basis.
func Hash(alg uint8, basis uint32) Action {
	return Action{Kind: ActionHash, HashAlg: alg, HashBasis: basis}
}

// hashString formats a hash action as OVS's format_odp_hash_action.
func (a Action) hashString() string {
	switch a.HashAlg {
	case HashL4:
		return "hash(l4(" + strconv.FormatUint(uint64(a.HashBasis), 10) + "))"
	case HashSymL4:
		return "hash(sym_l4(" + strconv.FormatUint(uint64(a.HashBasis), 10) + "))"
	}
	return "hash(Unknown hash algorithm(" + strconv.FormatUint(uint64(a.HashAlg), 10) + "))"
}

// PacketHash is the dp_hash the hash action with alg and basis gives a
// packet of key k, as OVS's netdev datapath computes it
// (odp_execute_actions): an ofproto translation that cannot recirculate
// (a packet-out's) picks with it what the next pass would.
func PacketHash(k *flow.Key, alg uint8, basis uint32) uint32 {
	if alg == HashSymL4 {
		return flow.HashSymmetricL3L4(k, basis, false)
	}
	return flow.HashInt(flow.Hash5Tuple(k, 0), basis)
}

// setHash sets p's dp_hash as the hash action alg, basis does, from the
// packet as it is (its headers parsed again, as OVS's flow_extract in
// the action).
func setHash(p *packet.Packet, alg uint8, basis uint32) {
	var k flow.Key
	extract(p, p.InPort, &k)
	p.DpHash = PacketHash(&k, alg, basis)
}
