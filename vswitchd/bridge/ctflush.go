package bridge

// FlushConntrackZone forgets the connections of zone
// (NXT_CT_FLUSH_ZONE from a controller).
func (o ofSource) FlushConntrackZone(zone uint16) {
	if f, ok := o.of().(interface{ FlushConntrackZone(uint16) }); ok {
		f.FlushConntrackZone(zone)
	}
}
