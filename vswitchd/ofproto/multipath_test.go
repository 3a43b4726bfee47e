package ofproto

import (
	"testing"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// multipath loads the link and the mask gets only the fields hashed;
// bundle outputs to its first live member; bundle_load needs its
// destination's prerequisites.
func TestMultipathBundleTranslation(t *testing.T) {
	tb, br := emptyTables(t)
	reg0 := ofp.FieldRef{Field: ofp.FieldByID(ofp.FieldReg0), NBits: 16}
	in := func(p uint64) map[ofp.FieldID][2]uint64 { return map[ofp.FieldID][2]uint64{ofp.FieldInPort: {p, 0}} }
	mp := ofp.Action{Type: ofp.ActMultipath, Multipath: &ofp.Multipath{Fields: ofp.HashEthSrc, Algorithm: ofp.MultipathModuloN, MaxLink: 0, Dst: reg0}}
	mustMod(t, br, fmSpec{prio: 10, match: in(1), actions: []ofp.Action{mp, {Type: ofp.ActGotoTable, Table: 1}}})
	mustMod(t, br, fmSpec{table: 1, prio: 10, match: map[ofp.FieldID][2]uint64{ofp.FieldReg0: {0, 0xffff}}, actions: []ofp.Action{output(2)}})
	got, mask := tb.xlate(1, eth(macA, macB))
	if got != "2" {
		t.Errorf("multipath to link 0: %s, want 2", got)
	}
	if mask.EthSrc != [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} || mask.IPv4Src != [4]byte{} || mask.TpSrc != 0 {
		t.Errorf("mask: %+v, want eth_src and nothing hashed else", mask)
	}

	bd := ofp.Action{Type: ofp.ActBundle, Bundle: &ofp.Bundle{Algorithm: ofp.BundleActiveBackup, Members: []uint16{9, 3, 2}}}
	mustMod(t, br, fmSpec{prio: 10, match: in(2), actions: []ofp.Action{bd}})
	if got, _ := tb.xlate(2, eth(macA, macB)); got != "3" {
		t.Errorf("bundle active_backup with member 9 missing: %s, want 3", got)
	}

	tcpSrc := ofp.FieldRef{Field: ofp.FieldByID(ofp.FieldTCPSrc), NBits: 16}
	load := ofp.Action{Type: ofp.ActBundle, Bundle: &ofp.Bundle{Algorithm: ofp.BundleHRW, Members: []uint16{1, 2}, Load: true, Dst: tcpSrc}}
	if err := br.FlowMod(fmSpec{actions: []ofp.Action{load}}.mod()); err == nil || err.Errno != ofp.MatchInconsistent {
		t.Errorf("bundle_load to tcp_src without tcp: %v", err)
	}
}
