package ofp

import (
	"encoding/binary"
	"testing"

	"github.com/govs/govs/datapath/flow"
)

// BenchmarkDecodeFlowMod decodes an OpenFlow 1.4 flow mod of the kind
// `ovs-ofctl add-flows` sends by the hundred thousand, alone and inside a
// bundle: ip, nw_dst, in_port, priority, one output action.
func BenchmarkDecodeFlowMod(b *testing.B) {
	fm := &FlowMod{Header: Header{Version: V14}, Command: FlowAdd, Priority: 101, BufferID: 0xffffffff,
		OutPort: PortAny, OutGroup: GroupAny, Actions: []Action{{Type: ActOutput, Port: 2}}}
	for _, f := range []struct {
		id  FieldID
		val []byte
	}{{FieldInPort, []byte{0, 0, 0, 1}}, {FieldEthType, []byte{8, 0}}, {FieldIPv4Dst, []byte{10, 0, 1, 2}}} {
		fd := FieldByID(f.id)
		fd.SetMasked(&fm.Match.Flow, f.val, ones[:fd.Len])
		fd.SetMasked(&fm.Match.Mask, ones[:fd.Len], ones[:fd.Len])
	}
	if fm.Match.Flow.EthType != flow.EthTypeIPv4 {
		b.Fatal("match not set")
	}
	msg := EncodeFlowMod(V14, 7, fm)
	// OFPT_BUNDLE_ADD_MESSAGE around it: bundle id, pad, flags.
	add := newMsg(V14, type14BundleAdd, 7, 16+len(msg))
	add = binary.BigEndian.AppendUint32(add, 1)
	add = append(add, 0, 0, 0, 1)
	add = finish(append(add, msg...))
	for _, tc := range []struct {
		name string
		msg  []byte
	}{{"flowmod", msg}, {"bundled", add}} {
		b.Run(tc.name, func(b *testing.B) {
			if _, err := Decode(tc.msg); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				Decode(tc.msg)
			}
		})
	}
}
