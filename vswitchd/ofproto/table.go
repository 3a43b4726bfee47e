package ofproto

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// NumTables is how many flow tables a bridge has (0..254; OpenFlow's
// table 255 means "all").
const NumTables = 255

// hiddenTable is OVS's last table, which only the switch itself may
// change (OFPBRC_EPERM for controllers).
const hiddenTable = 254

// rule is one OpenFlow flow. Immutable once published, except its
// counters.
type rule struct {
	table    uint8
	match    ofp.Match
	priority uint16
	cookie   uint64
	actions  []ofp.Action
	idle     uint16
	hard     uint16
	flags    uint16
	imp      uint16
	// created and modified are bridge clock readings (for duration and
	// the hard timeout, which counts from the last modification).
	created, modified time.Duration
	stats             *ruleStats
}

// ruleStats are a rule's counters, shared by the rule's successive
// versions (a modify keeps them unless RESET_COUNTS).
type ruleStats struct {
	packets, bytes atomic.Uint64
	// used is the bridge clock when a packet last matched, as nanoseconds.
	used atomic.Int64
}

// flowTables is an immutable set of tables; a change makes a new one
// (sharing the tables it does not change) and swaps it in.
type flowTables struct {
	t [NumTables][]*rule // by priority, highest first; ties in insertion order
}

// sameMatch reports whether r has exactly m and priority (strict match).
func (r *rule) sameMatch(m *ofp.Match, prio uint16) bool {
	return r.priority == prio && r.match == *m
}

// narrower reports whether r's match is at least as specific as m (a
// loose match: every packet r matches, m matches).
func (r *rule) narrower(m *ofp.Match) bool { return m.Includes(&r.match) }

// overlaps reports whether some packet could match both r and m at the
// same priority (CHECK_OVERLAP).
func (r *rule) overlaps(m *ofp.Match, prio uint16) bool {
	if r.priority != prio {
		return false
	}
	common := r.match.Mask.Masked(&m.Mask)
	return r.match.Flow.Masked(&common) == m.Flow.Masked(&common)
}

// outputsTo reports whether r's actions output to port / group (the
// out_port / out_group filters; ANY passes all).
func (r *rule) outputsTo(port, group uint32) bool {
	if port != ofp.PortAny && !slices.Contains(ofp.Outputs(r.actions), port) {
		return false
	}
	return group == ofp.GroupAny || slices.Contains(ofp.Groups(r.actions), group)
}

// insert returns tbl with r added after the rules of higher or equal
// priority.
func insert(tbl []*rule, r *rule) []*rule {
	i := 0
	for i < len(tbl) && tbl[i].priority >= r.priority {
		i++
	}
	n := make([]*rule, 0, len(tbl)+1)
	n = append(n, tbl[:i]...)
	n = append(n, r)
	return append(n, tbl[i:]...)
}
