package bridge

import "github.com/govs/govs/vswitchd/ofproto/ofp"

type tlvMapper interface {
	TLVTableMod(m *ofp.TLVTableMod) *ofp.Error
	TLVTable() *ofp.TLVTable
}

// TLVTableMod changes the bridge's Geneve option map.
func (o ofSource) TLVTableMod(m *ofp.TLVTableMod) *ofp.Error {
	tm, ok := o.of().(tlvMapper)
	if !ok {
		return &ofp.Error{Errno: ofp.EPerm, Detail: "bridge is gone"}
	}
	return tm.TLVTableMod(m)
}

// TLVTable returns the bridge's Geneve option map.
func (o ofSource) TLVTable() *ofp.TLVTable {
	if tm, ok := o.of().(tlvMapper); ok {
		return tm.TLVTable()
	}
	return nil
}
