package ofp

import (
	"encoding/binary"
	"slices"
)

// TableFeatures is one table of an OFPMP_TABLE_FEATURES reply.
type TableFeatures struct {
	ID         uint8
	Name       string
	MaxEntries uint32
	// Next are the tables goto_table may name from this one; none means
	// the table has no goto_table instruction (OVS's last table).
	Next []uint8
}

// Table feature property types (OFPTFPT13_*); each _MISS variant is the
// type plus one.
const (
	tfpInstructions  = 0
	tfpNextTables    = 2
	tfpWriteActions  = 4
	tfpApplyActions  = 6
	tfpMatch         = 8
	tfpWildcards     = 10
	tfpWriteSetfield = 12
	tfpApplySetfield = 14
)

// tableActionTypes are the OpenFlow 1.1+ action types govs' tables
// execute, as OVS lists its own (ofpact_bitmap_to_openflow): output,
// push_vlan, pop_vlan (strip_vlan), set_queue, group, set_nw_ttl,
// dec_nw_ttl, set_field. OVS also lists the MPLS actions, which govs
// refuses (OFPBAC_BAD_TYPE).
var tableActionTypes = []uint16{at11Output, at11PushVLAN, at11PopVLAN, at11SetQueue, at11Group, at11SetNWTTL, at11DecNWTTL, at12SetField}

// tableFields returns the OXM/NXM headers of every field a table
// matches, with the has-mask bit for those it matches under any mask
// (match) and without (wild), and of those set_field writes, in header
// order. A field with both headers is listed by its OXM one;
// tun_metadata<n> with OVS's 124 bytes.
func tableFields() (match, wild, write []uint32) {
	seen := map[*Field]bool{}
	add := func(fd *Field) {
		if seen[fd] {
			return
		}
		seen[fd] = true
		h := fd.OXM
		if h == 0 {
			h = fd.NXM
		}
		m := h
		if fd.Maskable {
			m = h&^0xff | 1<<8 | uint32(2*fd.Len)
		}
		match = append(match, m)
		wild = append(wild, h)
		if fd.Writable {
			write = append(write, h)
		}
	}
	for _, fd := range fieldNames {
		add(fd)
	}
	for i := 0; i < TLVMaxFields; i++ {
		add(TunMetadataField(i, TLVMaxOptLen))
	}
	slices.Sort(match)
	slices.Sort(wild)
	slices.Sort(write)
	return match, wild, write
}

// EncodeTableFeaturesReply answers a TABLE_FEATURES request (1.3+) with
// the properties OVS sends (ofputil_append_table_features): instructions
// (meter only in 1.3 and 1.4, where it is an instruction), next tables,
// write and apply actions and set-fields, each again for table misses,
// then the match fields (masked where any mask goes) and wildcards; every
// metadata bit matched and written; no eviction, no vacancy events.
func EncodeTableFeaturesReply(v Version, xid uint32, tables []TableFeatures) [][]byte {
	match, wild, write := tableFields()
	r := newStatsReply(v, xid, StatsTableFeatures, false)
	for i := range tables {
		t := &tables[i]
		var b []byte
		b = put16(b, 0) // length, set below
		b = put8(b, t.ID)
		b = pad(b, 5)
		b = putString(b, t.Name, 32)
		b = put64(b, ^uint64(0)) // metadata_match
		b = put64(b, ^uint64(0)) // metadata_write
		b = put32(b, 0)          // capabilities (config in 1.3)
		b = put32(b, t.MaxEntries)
		insts := []uint16{1, 2, 3, 4, 5} // goto_table, write_metadata, write/apply/clear_actions
		if len(t.Next) == 0 {
			insts = insts[1:]
		}
		if v < V15 {
			insts = append(insts, 6) // OFPIT13_METER
		}
		for miss := uint16(0); miss < 2; miss++ {
			b = tableProp(b, tfpInstructions+miss, func(b []byte) []byte {
				for _, in := range insts {
					b = put16(put16(b, in), 4)
				}
				return b
			})
			b = tableProp(b, tfpNextTables+miss, func(b []byte) []byte { return append(b, t.Next...) })
			for _, p := range [][2]uint16{{tfpWriteActions, tfpWriteSetfield}, {tfpApplyActions, tfpApplySetfield}} {
				b = tableProp(b, p[0]+miss, func(b []byte) []byte {
					for _, a := range tableActionTypes {
						b = put16(put16(b, a), 4)
					}
					return b
				})
				b = tableProp(b, p[1]+miss, func(b []byte) []byte { return putHeaders(b, write) })
			}
		}
		b = tableProp(b, tfpMatch, func(b []byte) []byte { return putHeaders(b, match) })
		b = tableProp(b, tfpWildcards, func(b []byte) []byte { return putHeaders(b, wild) })
		binary.BigEndian.PutUint16(b, uint16(len(b)))
		r.add(b)
	}
	return r.done()
}

// tableProp appends a table feature property of type typ whose body
// body appends, padded to 8 bytes (the length excludes the padding).
func tableProp(b []byte, typ uint16, body func([]byte) []byte) []byte {
	start := len(b)
	b = put16(put16(b, typ), 0)
	b = body(b)
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
	return padTo8(b, start)
}

func putHeaders(b []byte, hs []uint32) []byte {
	for _, h := range hs {
		b = put32(b, h)
	}
	return b
}
