package ofp

import "github.com/govs/govs/datapath/flow"

// RetargetLegacyPorts gives an OpenFlow 1.0 mod_tp_src or mod_tp_dst in
// acts, decoded as the TCP port, the field of the transport protocol m
// matches, UDP's or SCTP's: OVS's OFPACT_SET_L4_*_PORT takes the protocol
// from the flow's match, and OXM encodes it back as that field.
func RetargetLegacyPorts(acts []Action, m *Match) {
	if m.Mask.NwProto != 0xff {
		return
	}
	var src, dst FieldID
	switch m.Flow.NwProto {
	case flow.IPProtoUDP:
		src, dst = FieldUDPSrc, FieldUDPDst
	case flow.IPProtoSCTP:
		src, dst = FieldSCTPSrc, FieldSCTPDst
	default:
		return
	}
	for i := range acts {
		a := &acts[i]
		switch {
		case a.Type == ActClone || a.Type == ActWriteActions:
			RetargetLegacyPorts(a.Nested, m)
		case a.Type != ActSetField || a.raw != rawLegacy:
		case a.Field.ID == FieldTCPSrc:
			a.Field = fields[src]
		case a.Field.ID == FieldTCPDst:
			a.Field = fields[dst]
		}
	}
}
