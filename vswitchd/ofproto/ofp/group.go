package ofp

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Group types (ofp11_group_type).
const (
	GroupAll          = 0
	GroupSelect       = 1
	GroupIndirect     = 2
	GroupFastFailover = 3
)

// Group mod commands (ofp11_group_mod_command / ofp15_group_mod_command,
// and OVS's add_or_mod extension).
const (
	GroupAdd          = 0
	GroupModify       = 1
	GroupDelete       = 2
	GroupInsertBucket = 3 // OpenFlow 1.5
	GroupRemoveBucket = 5 // OpenFlow 1.5
	GroupAddOrMod     = 0x8000
)

// Special group and bucket numbers.
const (
	GroupMax         = 0xffffff00 // OFPG_MAX
	GroupAllGroups   = 0xfffffffc // OFPG_ALL
	BucketMax        = 0xffffff00 // OFPG15_BUCKET_MAX
	BucketFirst      = 0xfffffffd // OFPG15_BUCKET_FIRST
	BucketLast       = 0xfffffffe // OFPG15_BUCKET_LAST
	BucketAll        = 0xffffffff // OFPG15_BUCKET_ALL
	statsGroupFeats  = 8          // OFPMP_GROUP_FEATURES
	ntrVendor        = 0x0000154d // NTR_VENDOR_ID (Netronome)
	ntrSelection     = 1          // NTRT_SELECTION_METHOD
	maxSelectionName = 16         // NTR_MAX_SELECTION_METHOD_LEN
)

// StatsGroupFeatures is OFPMP_GROUP_FEATURES (OpenFlow 1.2+).
const StatsGroupFeatures StatsKind = statsGroupFeats

// Group mod errors (OFPET_GROUP_MOD_FAILED, OpenFlow 1.1+). They are
// numbered apart from errors.go's list so that each file can grow.
const (
	GroupExists           Errno = 200 + iota // OFPGMFC_GROUP_EXISTS
	GroupInvalid                             // OFPGMFC_INVALID_GROUP
	GroupOutOfBuckets                        // OFPGMFC_OUT_OF_BUCKETS
	GroupChainingUnsup                       // OFPGMFC_CHAINING_UNSUPPORTED
	GroupWatchUnsupported                    // OFPGMFC_WATCH_UNSUPPORTED
	GroupLoop                                // OFPGMFC_LOOP
	GroupUnknown                             // OFPGMFC_UNKNOWN_GROUP
	GroupChained                             // OFPGMFC_CHAINED_GROUP
	GroupBadType                             // OFPGMFC_BAD_TYPE
	GroupBadCommand                          // OFPGMFC_BAD_COMMAND
	GroupBadBucket                           // OFPGMFC_BAD_BUCKET
	GroupBadWatch                            // OFPGMFC_BAD_WATCH
	GroupUnknownBucket                       // OFPGMFC_UNKNOWN_BUCKET (OpenFlow 1.5)
	GroupBucketExists                        // OFPGMFC_BUCKET_EXISTS (OpenFlow 1.5)
	BadPropType                              // OFPBPC_BAD_TYPE in a group mod's properties
	BadPropExperimenter                      // OFPBPC_BAD_EXPERIMENTER
)

func init() {
	for e, c := range map[Errno]struct {
		name string
		code uint16
	}{
		GroupExists: {"OFPGMFC_GROUP_EXISTS", 0}, GroupInvalid: {"OFPGMFC_INVALID_GROUP", 1},
		GroupOutOfBuckets: {"OFPGMFC_OUT_OF_BUCKETS", 4}, GroupChainingUnsup: {"OFPGMFC_CHAINING_UNSUPPORTED", 5},
		GroupWatchUnsupported: {"OFPGMFC_WATCH_UNSUPPORTED", 6}, GroupLoop: {"OFPGMFC_LOOP", 7},
		GroupUnknown: {"OFPGMFC_UNKNOWN_GROUP", 8}, GroupChained: {"OFPGMFC_CHAINED_GROUP", 9},
		GroupBadType: {"OFPGMFC_BAD_TYPE", 10}, GroupBadCommand: {"OFPGMFC_BAD_COMMAND", 11},
		GroupBadBucket: {"OFPGMFC_BAD_BUCKET", 12}, GroupBadWatch: {"OFPGMFC_BAD_WATCH", 13},
		GroupUnknownBucket: {"OFPGMFC_UNKNOWN_BUCKET", 15}, GroupBucketExists: {"OFPGMFC_BUCKET_EXISTS", 16},
	} {
		errnoExtra[e] = c.name
		// OpenFlow 1.0 has no OFPET_GROUP_MOD_FAILED: OVS sends the
		// same type and code as a Nicira vendor error (NX1.0(6,n)).
		codes := allVersions(6, c.code)
		codes[0] = errCode{vendor: NiciraVendor, typ: 6, code: c.code}
		errCodes[e] = codes
	}
	// Property errors (OFPET14_BAD_PROPERTY in 1.4+; OVS's NX code before).
	nx := errCode{vendor: NiciraVendor, typ: 1, code: 524}
	errnoExtra[BadPropType] = "OFPBPC_BAD_TYPE"
	errCodes[BadPropType] = [6]errCode{nx, nx, nx, nx, {typ: 14, code: 0}, {typ: 14, code: 0}}
	errnoExtra[BadPropExperimenter] = "OFPBPC_BAD_EXPERIMENTER"
	errCodes[BadPropExperimenter] = [6]errCode{nx, nx, nx, nx, {typ: 14, code: 5}, {typ: 14, code: 5}}
}

// Bucket is one bucket of a group.
type Bucket struct {
	// ID is the bucket's OpenFlow 1.5 bucket_id; earlier versions number
	// buckets from 0 in order, as OVS does.
	ID         uint32
	Weight     uint16
	WatchPort  uint32
	WatchGroup uint32
	Actions    []Action
}

// watches reports whether b watches something (a fast-failover bucket must).
func (b *Bucket) watches() bool { return b.WatchPort != PortAny || b.WatchGroup != GroupAny }

// GroupProps are a group's OVS selection properties (the Netronome
// experimenter property OpenFlow 1.5 carries): Method "" (the default),
// "hash" or "dp_hash", its parameter, and the fields "hash" hashes.
type GroupProps struct {
	Method string
	Param  uint64
	Fields []HashField
}

// HashField is one field of a selection method, with its mask (nil: all
// of it).
type HashField struct {
	Field *Field
	Mask  []byte
}

// GroupMod is OFPT_GROUP_MOD.
type GroupMod struct {
	Header
	Command uint16
	Type    uint8
	ID      uint32
	// CommandBucketID is OpenFlow 1.5's: where insert_bucket inserts,
	// which bucket remove_bucket removes (BucketAll if not 1.5).
	CommandBucketID uint32
	Buckets         []Bucket
	Props           GroupProps
}

const groupModName = "OFPT_GROUP_MOD"

func groupErr(e Errno, format string, args ...any) *Error {
	return &Error{Errno: e, Name: groupModName, Detail: fmt.Sprintf(format, args...)}
}

// groupLayout15 reports whether version v's group messages have OpenFlow
// 1.5's layout (bucket ids, properties): 1.5's own and 1.0's Nicira
// NXT_GROUP_MOD and NXST_GROUP_DESC, which OVS encodes as 1.5's with the
// buckets' actions in 1.0's encoding.
func groupLayout15(v Version) bool { return v == V10 || v >= V15 }

// nxtGroupMod is NXT_GROUP_MOD, OpenFlow 1.0's OFPT_GROUP_MOD.
const nxtGroupMod = 31

// decodeGroupMod decodes OFPT_GROUP_MOD of OpenFlow 1.1 to 1.5 and
// NXT_GROUP_MOD of 1.0 (OVS's ofputil_decode_group_mod and
// ofputil_check_group_mod).
func decodeGroupMod(h Header, body []byte) (Message, error) {
	v := h.Version
	gm := &GroupMod{Header: h, CommandBucketID: BucketAll}
	var buckets, props []byte
	if !groupLayout15(v) {
		if len(body) < 8 {
			return nil, groupErr(BadLen, "%d bytes of body", len(body))
		}
		gm.Command, gm.Type, gm.ID = binary.BigEndian.Uint16(body), body[2], binary.BigEndian.Uint32(body[4:])
		buckets = body[8:]
	} else {
		if len(body) < 16 {
			return nil, groupErr(BadLen, "%d bytes of body", len(body))
		}
		gm.Command, gm.Type, gm.ID = binary.BigEndian.Uint16(body), body[2], binary.BigEndian.Uint32(body[4:])
		n := int(binary.BigEndian.Uint16(body[8:]))
		gm.CommandBucketID = binary.BigEndian.Uint32(body[12:])
		if n > len(body)-16 {
			return nil, groupErr(BadLen, "bucket array of %d bytes with %d left", n, len(body)-16)
		}
		buckets, props = body[16:16+n], body[16+n:]
	}
	var err *Error
	if !groupLayout15(v) {
		gm.Buckets, err = decodeBuckets11(v, buckets)
	} else {
		gm.Buckets, err = decodeBuckets15(v, buckets)
	}
	if err != nil {
		err.Name = groupModName
		return nil, err
	}
	if err := decodeGroupProps(&gm.Props, props); err != nil {
		return nil, err
	}
	if err := checkGroupMod(gm); err != nil {
		return nil, err
	}
	return gm, nil
}

// decodeBuckets11 decodes ofp11_buckets, numbering them from 0.
func decodeBuckets11(v Version, b []byte) ([]Bucket, *Error) {
	var out []Bucket
	for len(b) > 0 {
		if len(b) < 16 {
			return nil, &Error{Errno: GroupBadBucket, Detail: fmt.Sprintf("bucket of %d bytes", len(b))}
		}
		n := int(binary.BigEndian.Uint16(b))
		if n < 16 || n%8 != 0 || n > len(b) {
			return nil, &Error{Errno: GroupBadBucket, Detail: fmt.Sprintf("bucket length %d with %d bytes left", n, len(b))}
		}
		bk := Bucket{ID: uint32(len(out)), Weight: binary.BigEndian.Uint16(b[2:]),
			WatchPort: binary.BigEndian.Uint32(b[4:]), WatchGroup: binary.BigEndian.Uint32(b[8:])}
		if err := checkWatchPort(bk.WatchPort); err != nil {
			return nil, err
		}
		acts, err := DecodeActions(v, b[16:n])
		if err != nil {
			return nil, err
		}
		bk.Actions = acts
		out = append(out, bk)
		if len(out) > BucketMax {
			return nil, &Error{Errno: GroupOutOfBuckets}
		}
		b = b[n:]
	}
	return out, nil
}

// checkWatchPort refuses a watch port that is no port: one of the
// reserved numbers other than ANY (and LOCAL/IN_PORT/... OVS refuses as
// OFPGMFC_BAD_WATCH too).
func checkWatchPort(p uint32) *Error {
	if p >= PortMax && p != PortAny && p != PortLocal {
		return &Error{Errno: GroupBadWatch, Detail: fmt.Sprintf("watch port 0x%x", p)}
	}
	return nil
}

// Bucket property types (ofp15_group_bucket_prop_type).
const (
	bucketPropWeight     = 0
	bucketPropWatchPort  = 1
	bucketPropWatchGroup = 2
)

// decodeBuckets15 decodes ofp15_buckets with their properties, their
// actions in version v's encoding.
func decodeBuckets15(v Version, b []byte) ([]Bucket, *Error) {
	var out []Bucket
	for len(b) > 0 {
		if len(b) < 8 {
			return nil, &Error{Errno: GroupBadBucket, Detail: fmt.Sprintf("bucket of %d bytes", len(b))}
		}
		n, an := int(binary.BigEndian.Uint16(b)), int(binary.BigEndian.Uint16(b[2:]))
		if n < 8 || n%8 != 0 || n > len(b) || an > n-8 {
			return nil, &Error{Errno: GroupBadBucket, Detail: fmt.Sprintf("bucket length %d, actions %d, with %d bytes left", n, an, len(b))}
		}
		// Without a weight property the weight is 0, as OVS's.
		bk := Bucket{ID: binary.BigEndian.Uint32(b[4:]), WatchPort: PortAny, WatchGroup: GroupAny}
		if bk.ID > BucketMax {
			return nil, &Error{Errno: GroupBadBucket, Detail: fmt.Sprintf("bucket id 0x%x", bk.ID)}
		}
		acts, err := DecodeActions(v, b[8:8+an])
		if err != nil {
			return nil, err
		}
		bk.Actions = acts
		props := b[8+an : n]
		for len(props) > 0 {
			if len(props) < 4 {
				return nil, &Error{Errno: BadLen, Detail: "truncated bucket property"}
			}
			typ, pn := binary.BigEndian.Uint16(props), int(binary.BigEndian.Uint16(props[2:]))
			if pn < 4 || (pn+7)&^7 > len(props) {
				return nil, &Error{Errno: BadLen, Detail: fmt.Sprintf("bucket property of %d bytes", pn)}
			}
			p := props[4:pn]
			switch typ {
			case bucketPropWeight:
				if len(p) != 4 {
					return nil, &Error{Errno: BadLen, Detail: "weight property length"}
				}
				bk.Weight = binary.BigEndian.Uint16(p)
			case bucketPropWatchPort, bucketPropWatchGroup:
				if len(p) != 4 {
					return nil, &Error{Errno: BadLen, Detail: "watch property length"}
				}
				if typ == bucketPropWatchPort {
					bk.WatchPort = binary.BigEndian.Uint32(p)
					if err := checkWatchPort(bk.WatchPort); err != nil {
						return nil, err
					}
				} else {
					bk.WatchGroup = binary.BigEndian.Uint32(p)
				}
			default:
				return nil, &Error{Errno: BadPropType, Detail: fmt.Sprintf("bucket property %d", typ)}
			}
			props = props[(pn+7)&^7:]
		}
		out = append(out, bk)
		b = b[n:]
	}
	return out, nil
}

// decodeGroupProps decodes OpenFlow 1.5 group properties: only OVS's
// selection method (an NTR experimenter property) exists.
func decodeGroupProps(gp *GroupProps, b []byte) *Error {
	for len(b) > 0 {
		if len(b) < 4 {
			return groupErr(BadLen, "truncated group property")
		}
		typ, n := binary.BigEndian.Uint16(b), int(binary.BigEndian.Uint16(b[2:]))
		if n < 4 || (n+7)&^7 > len(b) {
			return groupErr(BadLen, "group property of %d bytes with %d left", n, len(b))
		}
		p := b[:n]
		b = b[(n+7)&^7:]
		if typ != 0xffff {
			return groupErr(BadPropType, "group property %d", typ)
		}
		if n < 12 {
			return groupErr(BadLen, "experimenter property of %d bytes", n)
		}
		if exp, sub := binary.BigEndian.Uint32(p[4:]), binary.BigEndian.Uint32(p[8:]); exp != ntrVendor || sub != ntrSelection {
			return groupErr(BadPropExperimenter, "experimenter 0x%x type %d", exp, sub)
		}
		if n < 40 {
			return groupErr(BadLen, "selection method property of %d bytes", n)
		}
		name := p[16:32]
		end := 0
		for end < len(name) && name[end] != 0 {
			end++
		}
		if end == len(name) {
			return groupErr(BadPropType, "selection method name not terminated")
		}
		gp.Method = string(name[:end])
		if gp.Method != "hash" && gp.Method != "dp_hash" {
			// OVS: "ntr selection method '%s' is not supported".
			return groupErr(BadPropType, "selection method %q not supported", gp.Method)
		}
		gp.Param = binary.BigEndian.Uint64(p[32:])
		// Each field is a header (no mask bit) and the mask of the bits
		// hashed (OVS's oxm_put_field_array).
		fields := p[40:]
		for len(fields) > 0 {
			if len(fields) < 4 {
				return groupErr(BadLen, "truncated field in selection method")
			}
			hd := binary.BigEndian.Uint32(fields)
			fd := FieldByHeader(hd)
			if fd == nil || hd>>16 == classExp || hd&0x100 != 0 || int(hd&0xff) != fd.Len {
				return groupErr(BadField, "field 0x%08x in selection method", hd)
			}
			if len(fields) < 4+fd.Len {
				return groupErr(BadLen, "truncated field in selection method")
			}
			hf := HashField{Field: fd}
			if mask := fields[4 : 4+fd.Len]; !allOnes(mask) {
				hf.Mask = append([]byte(nil), mask...)
			}
			fields = fields[4+fd.Len:]
			gp.Fields = append(gp.Fields, hf)
		}
		if gp.Method == "dp_hash" && len(gp.Fields) > 0 {
			return groupErr(BadValue, "dp_hash selection method takes no fields")
		}
	}
	return nil
}

// checkGroupMod checks what OVS's ofputil_check_group_mod does: a known
// type and command, indirect groups with one bucket, weights only for
// select groups, watches only where they mean something.
func checkGroupMod(gm *GroupMod) *Error {
	switch gm.Command {
	case GroupAdd, GroupModify, GroupAddOrMod, GroupDelete:
	case GroupInsertBucket:
		if !groupLayout15(gm.Version) {
			return groupErr(GroupBadCommand, "insert_bucket needs OpenFlow 1.5 (or 1.0's NXT_GROUP_MOD)")
		}
	case GroupRemoveBucket:
		if !groupLayout15(gm.Version) {
			return groupErr(GroupBadCommand, "remove_bucket needs OpenFlow 1.5 (or 1.0's NXT_GROUP_MOD)")
		}
		if len(gm.Buckets) > 0 {
			return groupErr(GroupBadBucket, "remove_bucket with buckets")
		}
	default:
		return groupErr(GroupBadCommand, "command %d", gm.Command)
	}
	if gm.Command == GroupDelete {
		return nil
	}
	switch gm.Type {
	case GroupIndirect:
		if gm.Command != GroupInsertBucket && gm.Command != GroupRemoveBucket && len(gm.Buckets) != 1 {
			return groupErr(GroupInvalid, "an indirect group has exactly one bucket")
		}
	case GroupAll, GroupSelect, GroupFastFailover:
	default:
		return groupErr(GroupBadType, "type %d", gm.Type)
	}
	for i := range gm.Buckets {
		b := &gm.Buckets[i]
		if b.Weight != 0 && gm.Type != GroupSelect && gm.Command != GroupInsertBucket && !groupLayout15(gm.Version) {
			return groupErr(GroupInvalid, "weight in a group that is not select")
		}
		switch gm.Type {
		case GroupAll, GroupIndirect:
			if b.watches() {
				return groupErr(GroupWatchUnsupported, "watch in a group that is not fast_failover or select")
			}
		case GroupFastFailover:
			if !b.watches() {
				return groupErr(GroupInvalid, "a fast_failover bucket without a watch")
			}
		}
	}
	return nil
}

// EncodeGroupDescReply encodes OFPMP_GROUP_DESC's reply (1.0's
// NXST_GROUP_DESC).
func EncodeGroupDescReply(v Version, xid uint32, groups []GroupDesc) [][]byte {
	r := newStatsReply(v, xid, StatsGroupDesc, v == V10)
	for i := range groups {
		r.add(appendGroupDesc(nil, v, &groups[i]))
	}
	return r.done()
}

// GroupDesc is one group of a GROUP_DESC reply.
type GroupDesc struct {
	Type    uint8
	ID      uint32
	Buckets []Bucket
	Props   GroupProps
}

func appendGroupDesc(b []byte, v Version, g *GroupDesc) []byte {
	b = put16(b, 0) // length, set below
	b = put8(b, g.Type)
	b = pad(b, 1)
	b = put32(b, g.ID)
	if !groupLayout15(v) {
		for i := range g.Buckets {
			b = appendBucket11(b, v, &g.Buckets[i])
		}
	} else {
		b = put16(b, 0) // bucket_list_len
		b = pad(b, 6)
		for i := range g.Buckets {
			b = appendBucket15(b, v, g.Type, &g.Buckets[i])
		}
		binary.BigEndian.PutUint16(b[8:], uint16(len(b)-16))
		b = appendGroupProps(b, &g.Props)
	}
	binary.BigEndian.PutUint16(b, uint16(len(b)))
	return b
}

func appendBucket11(b []byte, v Version, bk *Bucket) []byte {
	start := len(b)
	b = put16(b, 0)
	b = put16(b, bk.Weight)
	b = put32(b, bk.WatchPort)
	b = put32(b, bk.WatchGroup)
	b = pad(b, 4)
	b = AppendActions(b, v, bk.Actions)
	binary.BigEndian.PutUint16(b[start:], uint16(len(b)-start))
	return b
}

// appendBucket15 encodes an OpenFlow 1.5 bucket with the properties OVS
// includes for the group's type: a weight for select groups, watches for
// select and fast-failover groups.
func appendBucket15(b []byte, v Version, typ uint8, bk *Bucket) []byte {
	start := len(b)
	b = put16(b, 0)
	b = put16(b, 0)
	b = put32(b, bk.ID)
	b = AppendActions(b, v, bk.Actions)
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start-8))
	if typ == GroupSelect {
		b = put16(b, bucketPropWeight)
		b = put16(b, 8)
		b = put16(b, bk.Weight)
		b = pad(b, 2)
	}
	if bk.WatchPort != PortAny {
		b = put16(b, bucketPropWatchPort)
		b = put16(b, 8)
		b = put32(b, bk.WatchPort)
	}
	if bk.WatchGroup != GroupAny {
		b = put16(b, bucketPropWatchGroup)
		b = put16(b, 8)
		b = put32(b, bk.WatchGroup)
	}
	binary.BigEndian.PutUint16(b[start:], uint16(len(b)-start))
	return b
}

// appendGroupProps encodes the selection method property, if any.
func appendGroupProps(b []byte, gp *GroupProps) []byte {
	if gp.Method == "" {
		return b
	}
	start := len(b)
	b = put16(b, 0xffff)
	b = put16(b, 0)
	b = put32(b, ntrVendor)
	b = put32(b, ntrSelection)
	b = pad(b, 4)
	b = putString(b, gp.Method, maxSelectionName)
	b = put64(b, gp.Param)
	for _, f := range gp.Fields {
		b = put32(b, f.Field.header(false))
		if f.Mask != nil {
			b = append(b, f.Mask...)
		} else {
			for range f.Field.Len {
				b = append(b, 0xff)
			}
		}
	}
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
	return padTo8(b, start)
}

func allOnes(b []byte) bool {
	for _, c := range b {
		if c != 0xff {
			return false
		}
	}
	return true
}

// GroupStats is one group of a GROUP statistics reply.
type GroupStats struct {
	ID             uint32
	RefCount       uint32
	Packets, Bytes uint64
	Duration       time.Duration
	// Buckets are the buckets' packet and byte counts, in bucket order.
	Buckets [][2]uint64
}

// EncodeGroupStatsReply encodes OFPMP_GROUP's reply (1.0's NXST_GROUP,
// with 1.3's durations).
func EncodeGroupStatsReply(v Version, xid uint32, groups []GroupStats) [][]byte {
	r := newStatsReply(v, xid, StatsGroup, v == V10)
	for _, g := range groups {
		var b []byte
		b = put16(b, 0)
		b = pad(b, 2)
		b = put32(b, g.ID)
		b = put32(b, g.RefCount)
		b = pad(b, 4)
		b = put64(b, g.Packets)
		b = put64(b, g.Bytes)
		if v >= V13 || v == V10 {
			sec, nsec := splitDuration(g.Duration)
			b = put32(b, sec)
			b = put32(b, nsec)
		}
		for _, c := range g.Buckets {
			b = put64(b, c[0])
			b = put64(b, c[1])
		}
		binary.BigEndian.PutUint16(b, uint16(len(b)))
		r.add(b)
	}
	return r.done()
}

// GroupFeatures is OFPMP_GROUP_FEATURES's reply body as OVS's userspace
// datapath reports it: every type, chaining, liveness and weights, up to
// OFPG_MAX groups of each type.
type GroupFeatures struct {
	Types, Capabilities uint32
	MaxGroups           [4]uint32
	Actions             [4]uint32
}

// EncodeGroupFeaturesReply encodes OFPMP_GROUP_FEATURES's reply (1.0's
// NXST_GROUP_FEATURES).
func EncodeGroupFeaturesReply(v Version, xid uint32, f *GroupFeatures) [][]byte {
	r := newStatsReply(v, xid, StatsGroupFeatures, v == V10)
	var b []byte
	b = put32(b, f.Types)
	b = put32(b, f.Capabilities)
	for _, n := range f.MaxGroups {
		b = put32(b, n)
	}
	for _, a := range f.Actions {
		b = put32(b, a)
	}
	r.add(b)
	return r.done()
}
