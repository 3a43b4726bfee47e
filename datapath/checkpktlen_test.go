package datapath

import (
	"bytes"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/govs/govs/datapath/dptest"
)

func sized(payload int) []byte {
	return dptest.Frame{
		Src: dptest.MAC("00:00:00:00:00:01"), Dst: dptest.MAC("00:00:00:00:00:02"),
		IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")},
		UDP:  &dptest.UDP{Src: 1, Dst: 2}, Payload: make([]byte, payload),
	}.Bytes()
}

// check_pkt_len: one flow sends each packet down the branch its length
// picks, the packets output before it unchanged by a branch's changes;
// Execute (packet-outs) picks the same way.
func TestCheckPktLen(t *testing.T) {
	r := newRig(t, 4)
	var calls atomic.Int64
	acts := Actions{Output(3), CheckPktLen(100, Actions{PushVLAN(0, 7), Output(2)}, Actions{Output(4)})}
	if got, want := acts.String(), "3,check_pkt_len(size=100,gt(push_vlan(vid=7,pcp=0),2),le(4))"; got != want {
		t.Errorf("String: %s, want %s", got, want)
	}
	if !acts.Equal(Actions{Output(3), CheckPktLen(100, Actions{PushVLAN(0, 7), Output(2)}, Actions{Output(4)})}) ||
		acts.Equal(Actions{Output(3), CheckPktLen(101, Actions{PushVLAN(0, 7), Output(2)}, Actions{Output(4)})}) {
		t.Error("Equal does not compare the check's arguments")
	}
	r.dp.SetUpcall(static(acts, &calls))
	small, large := sized(10), sized(200) // 52 and 242 bytes
	r.ports[1].Inject(small)
	r.rxDone(t, 1, 1)
	r.ports[1].Inject(large)
	r.ports[1].Inject(small)
	r.rxDone(t, 1, 3)
	if n := calls.Load(); n != 1 {
		t.Errorf("%d upcalls, want 1: one flow serves every length", n)
	}
	tagged := func(b []byte) []byte {
		return append(append(append([]byte{}, b[:12]...), 0x81, 0, 0, 7), b[12:]...)
	}
	for no, want := range map[uint32][][]byte{3: {small, large, small}, 2: {tagged(large)}, 4: {small, small}} {
		sent := r.ports[no].Sent()
		if len(sent) != len(want) {
			t.Errorf("port %d: %d frames, want %d", no, len(sent), len(want))
			continue
		}
		for i := range want {
			if !bytes.Equal(sent[i], want[i]) {
				t.Errorf("port %d frame %d:\n got %x\nwant %x", no, i, sent[i], want[i])
			}
		}
	}
	if err := r.dp.Execute(large, 1, acts); err != nil {
		t.Fatal(err)
	}
	if sent := r.ports[2].Sent(); len(sent) != 2 {
		t.Errorf("Execute of a large frame: port 2 got %d frames, want 2", len(sent))
	}
}
