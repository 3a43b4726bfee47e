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

// tunMetadataInUse reports whether a flow matches on or acts on
// tun_metadata<idx>. None can yet: flows using tun_metadata are refused
// when decoded (OFPBMC_BAD_FIELD). Called with flowMu held.
func (br *Bridge) tunMetadataInUse(idx int) bool {
	return false
}
