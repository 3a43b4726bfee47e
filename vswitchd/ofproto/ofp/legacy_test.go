package ofp

import (
	"testing"

	"github.com/govs/govs/datapath/flow"
)

// OpenFlow 1.0's mod_tp_src on an SCTP flow and mod_nw_tos come back in
// OXM as sctp_src and ip_dscp, as OVS's.
func TestLegacyToOXM(t *testing.T) {
	acts, err := DecodeActions(V10, []byte{0, at10SetTPSrc, 0, 8, 0, 99, 0, 0, 0, at10SetNWTOS, 0, 8, 0x20, 0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	var m Match
	m.Flow.EthType, m.Mask.EthType = flow.EthTypeIPv4, 0xffff
	m.Flow.NwProto, m.Mask.NwProto = flow.IPProtoSCTP, 0xff
	RetargetLegacyPorts(acts, &m)
	back, err2 := DecodeActions(V13, AppendActions(nil, V13, acts))
	if err2 != nil {
		t.Fatal(err2)
	}
	if back[0].Field.ID != FieldSCTPSrc || back[1].Field.ID != FieldIPDSCP || back[1].Value[0] != 8 {
		t.Errorf("in OXM: %s=%x, %s=%x", back[0].Field.Name, back[0].Value, back[1].Field.Name, back[1].Value)
	}
	if w := AppendActions(nil, V10, acts); w[1] != at10SetTPSrc || w[9] != at10SetNWTOS {
		t.Errorf("OpenFlow 1.0: %x", w)
	}
}
