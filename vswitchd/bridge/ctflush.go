package bridge

import "github.com/govs/govs/vswitchd/ofproto/ofp"

// FlushConntrackZone forgets the connections of zone
// (NXT_CT_FLUSH_ZONE from a controller).
func (o ofSource) FlushConntrackZone(zone uint16) {
	if f, ok := o.of().(interface{ FlushConntrackZone(uint16) }); ok {
		f.FlushConntrackZone(zone)
	}
}

// FlushConntrack forgets the connections an NXT_CT_FLUSH names.
func (o ofSource) FlushConntrack(m *ofp.CTFlush) {
	if f, ok := o.of().(interface{ FlushConntrack(*ofp.CTFlush) }); ok {
		f.FlushConntrack(m)
	}
}
