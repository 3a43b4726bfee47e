package ofproto

import (
	"fmt"
	"strings"

	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// multipath executes multipath(...) (OVS's multipath_execute): the link
// picked from the hash of the flow's fields goes to the destination; the
// mask gets the hashed fields and the destination's bits.
func (x *xlate) multipath(m *ofp.Multipath) {
	f := &x.of.flow
	link := m.Link(ofp.HashFlow(&f.Key, m.Fields, m.Basis))
	ofp.MaskHashFlow(&f.Key, &x.of.wc.Key, m.Fields)
	x.regLoad(m.Dst, uint64(link))
}

// bundle executes bundle(...) and bundle_load(...) (OVS's
// xlate_bundle_action): the member picked among the live ones is output
// to, or its port number (0xffff for none) loaded into the destination.
func (x *xlate) bundle(bd *ofp.Bundle) {
	f := &x.of.flow
	var hash uint32
	if bd.HashesFlow() {
		ofp.MaskHashFlow(&f.Key, &x.of.wc.Key, bd.Fields)
		hash = ofp.HashFlow(&f.Key, bd.Fields, bd.Basis)
	}
	port := bd.Choose(hash, func(p uint16) bool { return x.memberEnabled(ofp.MemberPort(p)) })
	if bd.Load {
		x.regLoad(bd.Dst, uint64(port))
		return
	}
	if port != 0xffff {
		x.ofOutput(ofp.MemberPort(port))
	}
}

// memberEnabled is OVS's member_enabled_cb: the reserved ports are
// always enabled but for CONTROLLER, which never is; a port is if it is
// live.
func (x *xlate) memberEnabled(no uint32) bool {
	switch no {
	case ofp.PortInPort, 0xfffffff9, ofp.PortNormal, ofp.PortFlood, ofp.PortAll, ofp.PortAny:
		return true
	case ofp.PortController:
		return false
	}
	return x.portLive(no)
}

// regLoad writes v to ref's bits, which the mask gets (OVS's
// nxm_reg_load), and reports the new value in a trace.
func (x *xlate) regLoad(ref ofp.FieldRef, v uint64) {
	ofp.MarkRef(&x.of.wc, ref)
	ofp.SetRef(&x.of.flow, ref, v)
	x.reportRef(ref)
}

// reportRef reports ref's bits' new value in a trace (OVS's
// xlate_report_subfield), for a field of up to 64 bits.
func (x *xlate) reportRef(ref ofp.FieldRef) {
	if x.trace == nil || ref.NBits > 64 {
		return
	}
	// OVS's xlate_report_subfield: the whole field's value, or the bits'
	// as hex without leading zeros.
	val := ofp.GetRef(&x.of.flow, ref)
	s := "0"
	if val != 0 {
		s = fmt.Sprintf("%#x", val)
	}
	x.report("->", "%s is now %s", ofp.FormatRef(ref), s)
}

// checkDst refuses a destination the translation cannot set or whose
// prerequisites m does not guarantee (OVS's mf_check_dst).
func checkDst(ref ofp.FieldRef, m *ofp.Match, what string) *ofp.Error {
	if !translatable(ref.Field.ID) {
		return &ofp.Error{Errno: ofp.BadSetType, Detail: "setting " + ref.Field.Name + " is not supported"}
	}
	if m != nil && !ref.Field.Prereqs(m) {
		return &ofp.Error{Errno: ofp.MatchInconsistent, Detail: strings.TrimSpace(what + " without its destination's prerequisites")}
	}
	return nil
}
