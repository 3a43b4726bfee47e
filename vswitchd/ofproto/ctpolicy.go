package ofproto

import (
	"maps"
	"sort"
	"strconv"
	"strings"

	"github.com/govs/govs/datapath/conntrack"
)

// Conntrack zones' timeout policies (OVS's ct_zone/ct_timeout_policy of
// ofproto-dpif.c): each distinct policy the zones name is set in the
// tracker once under an ID of its own, the lowest free from 1, and a ct
// action that commits in a zone with a policy carries its ID
// (`ct(commit,zone=5,timeout=1)`), so the connection keeps that policy.
// A zone given another policy takes another ID; a policy no zone names
// any more is removed from the tracker, and its connections go back to
// the default timeouts.

type ctPolicy struct {
	id   uint32
	refs int
}

type ctPolicies struct {
	byKey map[string]*ctPolicy // the policy's attributes, canonical -> policy
	ids   map[uint32]bool      // IDs in use
	zones map[uint16]uint32    // zone -> policy ID; replaced whole, read by xlate
}

// policyKey is a canonical text of p.
func policyKey(p conntrack.TimeoutPolicy) string {
	var b strings.Builder
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(k + "=" + strconv.FormatUint(uint64(p[k]), 10) + " ")
	}
	return b.String()
}

// SetCTZonePolicies makes zones (from the Datapath row's ct_zones) the
// zones' timeout policies. Installed flows are translated again if a
// zone's policy changed. A policy the tracker refuses leaves its zones
// without one; the errors are returned.
func (b *Backer) SetCTZonePolicies(zones map[uint16]conntrack.TimeoutPolicy) []error {
	b.ctMu.Lock()
	defer b.ctMu.Unlock()
	ps := &b.ctPol
	if ps.byKey == nil {
		ps.byKey, ps.ids = map[string]*ctPolicy{}, map[uint32]bool{}
	}
	tr := b.dp.Conntrack()
	var errs []error
	next := map[uint16]uint32{}
	used := map[string]bool{}
	zs := make([]int, 0, len(zones))
	for z := range zones {
		zs = append(zs, int(z))
	}
	sort.Ints(zs)
	for _, z := range zs {
		p := zones[uint16(z)]
		k := policyKey(p)
		cp := ps.byKey[k]
		if cp == nil {
			id := uint32(1)
			for ps.ids[id] {
				id++
			}
			if err := tr.SetTimeoutPolicy(id, p); err != nil {
				errs = append(errs, err)
				continue
			}
			cp = &ctPolicy{id: id}
			ps.byKey[k], ps.ids[id] = cp, true
		}
		used[k] = true
		next[uint16(z)] = cp.id
	}
	for k, cp := range ps.byKey {
		if !used[k] {
			tr.DelTimeoutPolicy(cp.id)
			delete(ps.byKey, k)
			delete(ps.ids, cp.id)
		}
	}
	if !maps.Equal(next, ps.zones) {
		ps.zones = next
		b.ctZoneTP.Store(&next)
		b.dp.Revalidate()
	}
	return errs
}

// ctTimeoutPolicy is the ID of zone's timeout policy, 0 for none.
func (b *Backer) ctTimeoutPolicy(zone uint16) uint32 {
	if m := b.ctZoneTP.Load(); m != nil {
		return (*m)[zone]
	}
	return conntrack.DefaultPolicy
}
