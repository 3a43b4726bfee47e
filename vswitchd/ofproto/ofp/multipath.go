package ofp

import (
	"encoding/binary"
	"math/bits"
)

// HashFields is what multipath and bundle hash (OVS's enum
// nx_hash_fields).
type HashFields uint16

const (
	HashEthSrc HashFields = iota
	HashSymmetricL4
	HashSymmetricL3L4
	HashSymmetricL3L4UDP
	HashNwSrc
	HashNwDst
	HashSymmetricL3
)

var hashFieldNames = [...]string{"eth_src", "symmetric_l4", "symmetric_l3l4", "symmetric_l3l4+udp", "nw_src", "nw_dst", "symmetric_l3"}

func (h HashFields) valid() bool { return int(h) < len(hashFieldNames) }

// String is OVS's flow_hash_fields_to_str.
func (h HashFields) String() string {
	if h.valid() {
		return hashFieldNames[h]
	}
	return "<unknown>"
}

// Multipath link choice algorithms (OVS's enum nx_mp_algorithm).
const (
	MultipathModuloN uint16 = iota
	MultipathHashThreshold
	MultipathHRW
	MultipathIterHash
)

var multipathAlgNames = [...]string{"modulo_n", "hash_threshold", "hrw", "iter_hash"}

// Multipath is NXAST_MULTIPATH's arguments: hash Fields with Basis, pick
// one of MaxLink+1 links with Algorithm (and Arg), write it to Dst.
type Multipath struct {
	Fields    HashFields
	Basis     uint16
	Algorithm uint16
	MaxLink   uint16
	Arg       uint32
	Dst       FieldRef
}

// Format is OVS's multipath_format, dst named by name.
func (m *Multipath) Format(dst string) string {
	alg := "<unknown>"
	if int(m.Algorithm) < len(multipathAlgNames) {
		alg = multipathAlgNames[m.Algorithm]
	}
	return "multipath(" + m.Fields.String() + "," + itoa(int(m.Basis)) + "," + alg + "," +
		itoa(int(m.MaxLink)+1) + "," + utoa(uint64(m.Arg)) + "," + dst + ")"
}

func utoa(v uint64) string {
	if v < 10 {
		return string(rune('0' + v))
	}
	return utoa(v/10) + string(rune('0'+v%10))
}

// decodeMultipath decodes NXAST_MULTIPATH (struct nx_action_multipath, 32
// bytes) with the checks of OVS's decode_NXAST_RAW_MULTIPATH, in its
// order: an unknown destination is OFPBAC_BAD_SET_TYPE; unknown hash
// fields or algorithm, or a destination too narrow for the links,
// OFPBAC_BAD_ARGUMENT; then mf_check_dst's errors.
func decodeMultipath(b []byte) (Action, *Error) {
	if err := fixedLen(b, 32); err != nil {
		return Action{}, err
	}
	m := &Multipath{
		Fields:    HashFields(binary.BigEndian.Uint16(b[10:])),
		Basis:     binary.BigEndian.Uint16(b[12:]),
		Algorithm: binary.BigEndian.Uint16(b[16:]),
		MaxLink:   binary.BigEndian.Uint16(b[18:]),
		Arg:       binary.BigEndian.Uint32(b[20:]),
	}
	ofsNBits := binary.BigEndian.Uint16(b[26:])
	ofs, nbits := int(ofsNBits>>6), int(ofsNBits&0x3f)+1
	h := binary.BigEndian.Uint32(b[28:])
	if fd := FieldByHeader(h); fd == nil || h&0x100 != 0 || tunMetadataIndex(h) >= 0 {
		_, err := decodeRef(h, ofs, nbits, BadSetType)
		return Action{}, err
	}
	nLinks := uint32(m.MaxLink) + 1
	switch {
	case !m.Fields.valid():
		return Action{}, actErr(BadActionArgument, "multipath: unsupported fields")
	case m.Algorithm > MultipathIterHash:
		return Action{}, actErr(BadActionArgument, "multipath: unsupported algorithm")
	case nbits < bits.Len32(nLinks-1):
		return Action{}, actErr(BadActionArgument, "multipath: destination too narrow for "+utoa(uint64(nLinks))+" links")
	}
	ref, err := decodeRef(h, ofs, nbits, BadSetType)
	if err != nil {
		return Action{}, err
	}
	if !ref.Field.Writable {
		return Action{}, actErr(BadSetArgument, "multipath to read-only field "+ref.Field.Name)
	}
	m.Dst = ref
	return Action{Type: ActMultipath, Multipath: m}, nil
}

// appendMultipath encodes m as NXAST_MULTIPATH (OVS's encode_MULTIPATH).
func appendMultipath(b []byte, m *Multipath) []byte {
	b = nxActionHeader(b, 32, nxastMultipath)
	b = put16(b, uint16(m.Fields))
	b = put16(b, m.Basis)
	b = pad(b, 2)
	b = put16(b, m.Algorithm)
	b = put16(b, m.MaxLink)
	b = put32(b, m.Arg)
	b = pad(b, 2)
	b = put16(b, uint16(m.Dst.Ofs<<6|(m.Dst.NBits-1)))
	return put32(b, m.Dst.Field.header(true))
}

// Link is the link multipath_algorithm picks for hash.
func (m *Multipath) Link(hash uint32) uint16 {
	n := uint32(m.MaxLink) + 1
	switch m.Algorithm {
	case MultipathModuloN:
		return uint16(hash % n)
	case MultipathHashThreshold:
		if n == 1 {
			return 0
		}
		return uint16(hash / (^uint32(0)/n + 1))
	case MultipathHRW:
		if n > 64 {
			return iterHash(hash, n, 0)
		}
		best, bestWeight := uint32(0), hash2Words(hash, 0)
		for link := uint32(1); link < n; link++ {
			if w := hash2Words(hash, link); w > bestWeight {
				best, bestWeight = link, w
			}
		}
		return uint16(best)
	}
	return iterHash(hash, n, m.Arg)
}

// iterHash is OVS's algorithm_iter_hash.
func iterHash(hash, n, modulo uint32) uint16 {
	if modulo < n || modulo/2 > n {
		modulo = 1 << bits.Len32(n-1) // round_up_pow2
	}
	for i := uint32(0); ; i++ {
		if link := hash2Words(hash, i) % modulo; link < n {
			return uint16(link)
		}
	}
}

// BundleMax is the most members a bundle may have (OVS's
// BUNDLE_MAX_SLAVES).
const BundleMax = 2048

// Bundle algorithms (OVS's enum nx_bd_algorithm).
const (
	BundleActiveBackup uint16 = iota
	BundleHRW
)

// Bundle is NXAST_BUNDLE's and NXAST_BUNDLE_LOAD's arguments: choose a
// live member of Members by Algorithm over the hash of Fields with Basis,
// and output to it or, for bundle_load (Load), write its number to Dst.
type Bundle struct {
	Algorithm uint16
	Fields    HashFields
	Basis     uint16
	Members   []uint16
	Load      bool
	Dst       FieldRef
}

// nxmInPort is NXM_OF_IN_PORT's header, the only member type.
const nxmInPort = 0x00000002

// decodeBundleAction decodes NXAST_BUNDLE and NXAST_BUNDLE_LOAD (struct
// nx_action_bundle, 32 bytes, then the member ports, padded to 8 bytes)
// with the checks of OVS's decode_bundle and bundle_check, in its order.
func decodeBundleAction(load bool, b []byte) (Action, *Error) {
	if len(b) < 32 {
		return Action{}, actErr(BadActionLen, "bundle")
	}
	bd := &Bundle{
		Algorithm: binary.BigEndian.Uint16(b[10:]),
		Fields:    HashFields(binary.BigEndian.Uint16(b[12:])),
		Basis:     binary.BigEndian.Uint16(b[14:]),
		Load:      load,
	}
	n := int(binary.BigEndian.Uint16(b[20:]))
	var err *Error
	switch {
	case !bd.Fields.valid():
		err = actErr(BadActionArgument, "bundle: unsupported fields")
	case n > BundleMax:
		err = actErr(BadActionArgument, "bundle: too many members")
	case bd.Algorithm > BundleHRW:
		err = actErr(BadActionArgument, "bundle: unsupported algorithm")
	case binary.BigEndian.Uint32(b[16:]) != nxmInPort:
		err = actErr(BadActionArgument, "bundle: unsupported member type")
	}
	if binary.BigEndian.Uint32(b[28:]) != 0 {
		err = actErr(BadActionArgument, "bundle: reserved field is nonzero")
	}
	ofsNBits, h := binary.BigEndian.Uint16(b[22:]), binary.BigEndian.Uint32(b[24:])
	var dstErr *Error
	if load {
		ofs, nbits := int(ofsNBits>>6), int(ofsNBits&0x3f)+1
		if fd := FieldByHeader(h); fd == nil || h&0x100 != 0 || tunMetadataIndex(h) >= 0 {
			_, e := decodeRef(h, ofs, nbits, BadSetType)
			return Action{}, e
		}
		if nbits < 16 {
			err = actErr(BadActionArgument, "bundle_load: destination narrower than 16 bits")
		}
		bd.Dst, dstErr = decodeRef(h, ofs, nbits, BadSetType)
		if dstErr == nil && !bd.Dst.Field.Writable {
			dstErr = actErr(BadSetArgument, "bundle_load to read-only field "+bd.Dst.Field.Name)
		}
	} else if ofsNBits != 0 || h != 0 {
		err = actErr(BadActionArgument, "bundle: nonzero reserved fields")
	}
	members := b[32:]
	if len(members) < 2*n {
		err = actErr(BadActionLen, "bundle: members truncated")
	} else {
		bd.Members = make([]uint16, n)
		for i := range bd.Members {
			bd.Members[i] = binary.BigEndian.Uint16(members[2*i:])
		}
	}
	if err != nil {
		return Action{}, err
	}
	// bundle_check.
	if dstErr != nil {
		return Action{}, dstErr
	}
	for _, p := range bd.Members {
		switch {
		case p == 0xffff: // OFPP_NONE
		case p == 0xfffd: // OFPP_CONTROLLER: no max_len to give it
			return Action{}, actErr(BadOutPort, "bundle: controller member")
		case p >= 0xff00 && p < 0xfff8:
			return Action{}, actErr(BadOutPort, "bundle: member "+itoa(int(p)))
		}
	}
	return Action{Type: ActBundle, Bundle: bd}, nil
}

// appendBundleAction encodes bd as NXAST_BUNDLE or NXAST_BUNDLE_LOAD (OVS's
// encode_BUNDLE).
func appendBundleAction(b []byte, bd *Bundle) []byte {
	sub := uint16(nxastBundle)
	if bd.Load {
		sub = nxastBundleLoad
	}
	membersLen := (2*len(bd.Members) + 7) &^ 7
	b = nxActionHeader(b, 32+membersLen, sub)
	b = put16(b, bd.Algorithm)
	b = put16(b, uint16(bd.Fields))
	b = put16(b, bd.Basis)
	b = put32(b, nxmInPort)
	b = put16(b, uint16(len(bd.Members)))
	if bd.Load {
		b = put16(b, uint16(bd.Dst.Ofs<<6|(bd.Dst.NBits-1)))
		b = put32(b, bd.Dst.Field.header(true))
	} else {
		b = pad(b, 6)
	}
	b = pad(b, 4)
	for _, p := range bd.Members {
		b = put16(b, p)
	}
	return pad(b, membersLen-2*len(bd.Members))
}

// Format is OVS's bundle_format, ports named by port and dst by dst.
func (bd *Bundle) Format(port func(uint16) string, dst string) string {
	alg := "<unknown>"
	switch bd.Algorithm {
	case BundleHRW:
		alg = "hrw"
	case BundleActiveBackup:
		alg = "active_backup"
	}
	s := "bundle("
	if bd.Load {
		s = "bundle_load("
	}
	s += bd.Fields.String() + "," + itoa(int(bd.Basis)) + "," + alg + ",ofport,"
	if bd.Load {
		s += dst + ","
	}
	s += "members:"
	for i, p := range bd.Members {
		if i > 0 {
			s += ","
		}
		s += port(p)
	}
	return s + ")"
}

// Choose is OVS's bundle_execute: the member picked for the flow whose
// hash (HashFlow of bd.Fields) is hash, 0xffff (OFPP_NONE) if no member
// is live. The hash is consulted only by hrw with more than one member.
func (bd *Bundle) Choose(hash uint32, live func(uint16) bool) uint16 {
	if bd.Algorithm == BundleActiveBackup {
		for _, p := range bd.Members {
			if live(p) {
				return p
			}
		}
		return 0xffff
	}
	best, bestHash := -1, uint32(0)
	for i, p := range bd.Members {
		if !live(p) {
			continue
		}
		if h := hash2Words(uint32(i), hash); best < 0 || h > bestHash {
			best, bestHash = i, h
		}
	}
	if best < 0 {
		return 0xffff
	}
	return bd.Members[best]
}

// HashesFlow reports whether Choose consults the flow's hash.
func (bd *Bundle) HashesFlow() bool {
	return bd.Algorithm == BundleHRW && len(bd.Members) > 1
}

// MemberPort is member p of a bundle as a 32-bit OpenFlow port.
func MemberPort(p uint16) uint32 { return widenPort10(p) }
