package ofp

import (
	"encoding/hex"
	"slices"
	"testing"
	"time"
)

// set_queue, pop_queue and enqueue in every version, in the bytes of
// OVS's struct layouts (what Debian's `ovs-ofctl parse-actions` takes
// and prints as these actions): NXAST_SET_QUEUE in OpenFlow 1.0 (its
// queue in the last 4 bytes), OFPAT11_SET_QUEUE from 1.1,
// NXAST_POP_QUEUE in all, ofp10_action_enqueue in 1.0 and, from 1.1,
// set_queue, output (max_len 0xffff) and pop_queue for an enqueue.
func TestQueueActionsCodec(t *testing.T) {
	const (
		nxSetQueue5  = "ffff001000002320000400000000" + "0005"
		setQueue5    = "0015000800000005"
		popQueue     = "ffff00100000232000050000" + "00000000"
		enqueue10    = "000b00100002000000000000" + "00000007"
		enqueueLocal = "000b0010fffe000000000000" + "00000003"
		output2      = "00000010" + "00000002" + "ffff000000000000"
	)
	for _, tc := range []struct {
		v          Version
		wire, text string
		// back is how the actions encode again ("": as wire).
		back string
	}{
		{V10, nxSetQueue5 + popQueue + enqueue10, "set_queue:5,pop_queue,enqueue:2:7", ""},
		{V10, enqueueLocal, "enqueue:LOCAL:3", ""},
		{V10, "000b0010fff8000000000000ffffffff", "enqueue:IN_PORT:4294967295", ""},
		// Padding is not checked (OVS's decoders do not), and sent as
		// zeros.
		{V10, "ffff00100000232000041111" + "00000005", "set_queue:5", nxSetQueue5},
		{V10, "000b00100002010203040506" + "00000007", "enqueue:2:7", enqueue10},
		{V11, setQueue5 + popQueue, "set_queue:5,pop_queue", ""},
		{V13, setQueue5 + popQueue, "set_queue:5,pop_queue", ""},
		{V15, setQueue5 + popQueue, "set_queue:5,pop_queue", ""},
		{V13, "0015000800000007" + output2 + popQueue, "set_queue:7,output:2,pop_queue", ""},
	} {
		wire, _ := hex.DecodeString(tc.wire)
		acts, err := DecodeActions(tc.v, wire)
		if err != nil {
			t.Errorf("%v %s: %v", tc.v, tc.wire, err)
			continue
		}
		if got := FormatActions(acts, tc.v, nil); got != tc.text {
			t.Errorf("%v %s: printed %q, want %q", tc.v, tc.wire, got, tc.text)
		}
		back := tc.back
		if back == "" {
			back = tc.wire
		}
		if got := hex.EncodeToString(AppendActions(nil, tc.v, acts)); got != back {
			t.Errorf("%v %s: encoded back as %s, want %s", tc.v, tc.wire, got, back)
		}
	}

	// encode_ENQUEUE: an enqueue in every version.
	enq := []Action{{Type: ActEnqueue, Port: 2, ID: 7}}
	for v, want := range map[Version]string{
		V10: enqueue10,
		V11: "0015000800000007" + output2 + popQueue,
		V13: "0015000800000007" + output2 + popQueue,
		V15: "0015000800000007" + output2 + popQueue,
	} {
		if got := hex.EncodeToString(AppendActions(nil, v, enq)); got != want {
			t.Errorf("%v: enqueue:2:7 encoded as %s, want %s", v, got, want)
		}
	}
	// set_queue: Nicira's before 1.1.
	sq := []Action{{Type: ActSetQueue, ID: 5}}
	for v, want := range map[Version]string{V10: nxSetQueue5, V11: setQueue5, V12: setQueue5, V13: setQueue5, V14: setQueue5, V15: setQueue5} {
		if got := hex.EncodeToString(AppendActions(nil, v, sq)); got != want {
			t.Errorf("%v: set_queue:5 encoded as %s, want %s", v, got, want)
		}
	}

	// Refused as OVS refuses them.
	for _, tc := range []struct {
		v    Version
		wire string
		want Errno
	}{
		// NXAST_SET_QUEUE is OpenFlow 1.0's only.
		{V13, nxSetQueue5, BadActionVendorType},
		{V11, nxSetQueue5, BadActionVendorType},
		// OFPAT11_SET_QUEUE is not 1.0's.
		{V10, setQueue5, BadActionType},
		{V11, "0015001000000005" + "0000000000000000", BadActionLen},
		{V10, "ffff0018000023200004000000000005" + "0000000000000000", BadActionLen},
		{V13, "ffff0018000023200005000000000000" + "0000000000000000", BadActionLen},
		{V10, "000b000800020000", BadActionLen},
		// enqueue to a port beyond OFPP_MAX that is not IN_PORT or
		// LOCAL.
		{V10, "000b0010ff00000000000000" + "00000007", BadOutPort},
		{V10, "000b0010fffa000000000000" + "00000007", BadOutPort},
		{V10, "000b0010fffd000000000000" + "00000007", BadOutPort},
	} {
		wire, _ := hex.DecodeString(tc.wire)
		if acts, err := DecodeActions(tc.v, wire); err == nil || err.Errno != tc.want {
			t.Errorf("%v %s: %v, %v; want %s", tc.v, tc.wire, acts, err, tc.want)
		}
	}
}

// An enqueue's port is a port an output names (dump-flows out_port=).
func TestQueueOutputs(t *testing.T) {
	acts := []Action{{Type: ActSetQueue, ID: 1}, {Type: ActEnqueue, Port: 4, ID: 2}, {Type: ActPopQueue}}
	if got := Outputs(acts); len(got) != 1 || got[0] != 4 {
		t.Errorf("Outputs: %v", got)
	}
	// And the three print as OVS's format_SET_QUEUE, _POP_QUEUE and
	// _ENQUEUE, the port by name.
	if got := FormatActions(acts, V13, PortNames{4: "eth4"}); got != "set_queue:1,enqueue:eth4:2,pop_queue" {
		t.Errorf("printed %q", got)
	}
}

// TestQueueStatsReply: a QUEUE statistics reply decodes back to what was
// encoded in every version (the duration from 1.3; none reported as all
// ones), at each version's entry size.
func TestQueueStatsReply(t *testing.T) {
	stats := []QueueStats{
		{Port: 2, Queue: 0, TxBytes: 696, TxPackets: 10, Duration: 5*time.Second + 38},
		{Port: 2, Queue: 1, TxBytes: 2818988, TxPackets: 236, TxErrors: 43, Duration: -1},
	}
	for _, tc := range []struct {
		v    Version
		size int
	}{{V10, 32}, {V11, 32}, {V12, 32}, {V13, 40}, {V14, 48}, {V15, 48}} {
		msgs := EncodeQueueStatsReply(tc.v, 7, stats)
		if len(msgs) != 1 {
			t.Fatalf("%v: %d messages", tc.v, len(msgs))
		}
		r, err := DecodeStatsReply(msgs[0])
		if err != nil {
			t.Fatalf("%v: %v", tc.v, err)
		}
		if len(r.Body) != 2*tc.size {
			t.Errorf("%v: body of %d bytes, want %d", tc.v, len(r.Body), 2*tc.size)
		}
		got, err := DecodeQueueStats(r)
		if err != nil {
			t.Fatalf("%v: %v", tc.v, err)
		}
		want := slices.Clone(stats)
		for i := range want {
			switch {
			case tc.v < V13:
				want[i].Duration = -1
			case want[i].Duration < 0:
				want[i].Duration = time.Duration(^uint32(0))*time.Second + time.Duration(^uint32(0))
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%v: decoded %+v, want %+v", tc.v, got, want)
		}
	}
}

// TestQueueConfigDecode: OFPT_QUEUE_GET_CONFIG_REQUEST (1.0, 1.3) and
// OFPMP_QUEUE_DESC (1.4) decode to their port and queue; a body of the
// wrong length is OFPBRC_BAD_LEN, and QUEUE_DESC before 1.4 is refused.
func TestQueueConfigDecode(t *testing.T) {
	for _, tc := range []struct {
		hex         string
		port, queue uint32
		err         Errno
	}{
		{"0114000c0000000700010000", 1, QueueAll, 0},
		{"0416001000000007fffffffe00000000", PortLocal, QueueAll, 0},
		{"0516001000000007fffffffe00000000", 0, 0, BadType},
		{"0114000a000000070001", 0, 0, BadLen},
		{"0412001800000007000f00000000000000000001" + "00000005", 0, 0, BadStat},
		{"0512001800000007000f00000000000000000001" + "00000005", 1, 5, 0},
		{"0512001400000007000f00000000000000000001", 0, 0, BadLen},
	} {
		b, _ := hex.DecodeString(tc.hex)
		m, err := Decode(b)
		if tc.err != 0 {
			if e, ok := err.(*Error); !ok || e.Errno != tc.err {
				t.Errorf("%s: %v, want %s", tc.hex, err, tc.err)
			}
			continue
		}
		switch m := m.(type) {
		case *QueueGetConfigRequest:
			if m.Port != tc.port || tc.queue != QueueAll {
				t.Errorf("%s: port %#x", tc.hex, m.Port)
			}
		case *StatsRequest:
			if m.Kind != StatsQueueDesc || m.Port != tc.port || m.Queue != tc.queue {
				t.Errorf("%s: %+v", tc.hex, m)
			}
		default:
			t.Errorf("%s: %T %v", tc.hex, m, err)
		}
	}
}
