package ofproto

import "github.com/govs/govs/vswitchd/ofproto/ofp"

// TLVTableMod applies an NXT_TLV_TABLE_MOD to the bridge's Geneve option
// map, as OVS's handle_tlv_table_mod: whole or not at all, and a mapping
// a flow uses is not deleted (NXTTMFC_INVALID_TLV_DEL).
func (br *Bridge) TLVTableMod(m *ofp.TLVTableMod) *ofp.Error {
	br.flowMu.Lock()
	defer br.flowMu.Unlock()
	t, err := br.tlv.Load().Apply(m, br.tunMetadataInUse)
	if err != nil {
		return err
	}
	br.tlv.Store(t)
	return nil
}

// TLVTable returns the bridge's Geneve option map.
func (br *Bridge) TLVTable() *ofp.TLVTable { return br.tlv.Load() }

// tunMetadataInUse reports whether a flow or group matches on or acts
// on tun_metadata<idx>. Called with flowMu held.
func (br *Bridge) tunMetadataInUse(idx int) bool {
	ft := br.tables.Load()
	used := false
	for id := range NumTables {
		ft.table(id).each(func(r *rule) {
			used = used || r.mask.mask.TunMDPresent&(1<<idx) != 0 || ofp.ActionsUseTunMD(r.actions(), idx)
		})
	}
	for _, g := range ft.groups {
		for _, b := range g.buckets {
			used = used || ofp.ActionsUseTunMD(b.Actions, idx)
		}
	}
	return used
}

// resolveTunMD fits the tun_metadata fields of a match and actions to
// the bridge's option map (NXFMFC_INVALID_TLV_FIELD if one is not
// mapped), as OVS decodes them with the switch's map.
func (br *Bridge) resolveTunMD(m *ofp.Match, acts []ofp.Action) *ofp.Error {
	t := br.tlv.Load()
	if m != nil {
		if err := m.ResolveTunMD(t); err != nil {
			return err
		}
	}
	return ofp.ResolveActions(acts, t)
}
