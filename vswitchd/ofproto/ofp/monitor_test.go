package ofp

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"
)

// The requests in testdata/requests/monitor-*.bin are laid out as OVS's
// ofputil_append_flow_monitor_request and checked with Debian's
// `ovs-ofctl ofp-print`, which prints each as the comment says.
func TestDecodeFlowMonitor(t *testing.T) {
	// NXM_OF_ETH_TYPE=0x0800, NXM_OF_IP_PROTO=6.
	want, err := DecodeNXMatch([]byte{0, 0, 6, 2, 8, 0, 0, 0, 0x0c, 1, 6})
	if err != nil {
		t.Fatal(err)
	}
	tcp := func(m *Match) bool { return reflect.DeepEqual(*m, want) }
	for _, tc := range []struct {
		file string
		want string // monitors as id/command/flags/out_port/table/tcp
		err  Errno
	}{
		// id=1 flags=initial,add,delete,modify,actions,own
		// id=2 flags=add,delete out_port=2 table=1 tcp
		{file: "monitor-nx-of10.bin", want: "1/0/0x3f/0xffffffff/255/false 2/0/0x6/0x2/1/true"},
		// id=1 flags=add,delete,modify,own tcp
		{file: "monitor-nx-of12.bin", want: "1/0/0x2e/0xffffffff/255/true"},
		// id=1 flags=initial,add,delete,modify,actions,own
		// id=2 flags=add,delete,modify out_port=2 table=3 tcp
		{file: "monitor-onf-of13.bin", want: "1/0/0x3f/0xffffffff/255/false 2/0/0xe/0x2/3/true"},
		{file: "monitor-of14.bin", want: "1/0/0x3f/0xffffffff/255/false 2/0/0xe/0x2/3/true"},
		// id=1 command=delete
		{file: "monitor-of15-delete.bin", want: "1/2/0x0/0x0/0/false"},
		{file: "monitor-of14-badflags.bin", err: MonitorBadFlags},
	} {
		t.Run(tc.file, func(t *testing.T) {
			m, err := Decode(readRequest(t, tc.file))
			if tc.err != 0 {
				if e, ok := err.(*Error); !ok || e.Errno != tc.err {
					t.Fatalf("got %v, want %v", err, tc.err)
				}
				return
			}
			req, ok := m.(*FlowMonitorRequest)
			if err != nil || !ok {
				t.Fatalf("got %T %v", m, err)
			}
			got := ""
			for i, fm := range req.Monitors {
				if i > 0 {
					got += " "
				}
				got += fmt.Sprintf("%d/%d/%#x/%#x/%d/%v", fm.ID, fm.Command, fm.Flags, fm.OutPort, fm.Table, tcp(&fm.Match))
			}
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	for _, file := range []string{"monitor-cancel-of10.bin", "monitor-cancel-onf-of13.bin"} {
		m, err := Decode(readRequest(t, file))
		if c, ok := m.(*FlowMonitorCancel); err != nil || !ok || c.ID != 1 {
			t.Errorf("%s: %+v %v", file, m, err)
		}
	}
}

// TestEncodeFlowUpdates checks the framing of flow monitor replies; their
// contents were checked with Debian's `ovs-ofctl ofp-print` (see the
// differential test for the whole).
func TestEncodeFlowUpdates(t *testing.T) {
	acts := []Action{{Type: ActOutput, Port: 1}}
	ups := []FlowUpdate{
		{Event: UpdateInitial, Table: 1, Priority: 5, WithActions: true, Actions: acts},
		{Event: UpdateDeleted, Reason: RemovedHardTimeout},
		{Event: UpdateAbbrev, Xid: 0x1234},
	}
	for _, v := range []Version{V10, V11, V12, V13, V14, V15} {
		msgs := EncodeFlowUpdates(v, 7, ups)
		if len(msgs) != 1 {
			t.Fatalf("%s: %d messages", v, len(msgs))
		}
		m := msgs[0]
		h := ParseHeader(m)
		if int(h.Length) != len(m) || h.Xid != 7 || h.Version != v {
			t.Errorf("%s: header %+v for %d bytes", v, h, len(m))
		}
		// Walk the updates by their lengths: they fill the body.
		body := m[16:]
		switch v {
		case V10:
			body = m[24:]
		case V11, V12, V13:
			body = m[24:]
		}
		n := 0
		for len(body) > 0 {
			l := int(binary.BigEndian.Uint16(body))
			if l < 8 || l%8 != 0 || l > len(body) {
				t.Fatalf("%s: update of length %d with %d bytes", v, l, len(body))
			}
			body = body[l:]
			n++
		}
		if n != len(ups) {
			t.Errorf("%s: %d updates", v, n)
		}
		if p := EncodeFlowMonitorPaused(v, true); int(ParseHeader(p).Length) != len(p) {
			t.Errorf("%s: resumed %x", v, p)
		}
	}
	// Many updates split into several replies, all but the last marked
	// "more".
	many := make([]FlowUpdate, 2000)
	for i := range many {
		many[i] = FlowUpdate{Event: UpdateAdded, WithActions: true, Actions: acts}
	}
	msgs := EncodeFlowUpdates(V15, 0, many)
	if len(msgs) < 2 {
		t.Fatalf("%d messages", len(msgs))
	}
	for i, m := range msgs {
		more := binary.BigEndian.Uint16(m[10:])&StatsFlagMore != 0
		if len(m) > MaxLen || more != (i < len(msgs)-1) {
			t.Errorf("message %d: %d bytes, more %v", i, len(m), more)
		}
	}
}
