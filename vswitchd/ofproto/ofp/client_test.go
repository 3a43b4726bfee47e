package ofp

import (
	"reflect"
	"testing"
	"time"
)

// The controller-side encoders are checked against the switch's decoders
// and the controller-side decoders against the switch's encoders.

func testMatch() Match {
	var m Match
	m.Flow.EthType, m.Mask.EthType = 0x0800, 0xffff
	m.Flow.NwProto, m.Mask.NwProto = 6, 0xff
	m.Flow.IPv4Src, m.Mask.IPv4Src = [4]byte{10, 0, 0, 0}, [4]byte{255, 0, 0, 0}
	m.Flow.TpDst, m.Mask.TpDst = 80, 0xffff
	m.Flow.Regs[3], m.Mask.Regs[3] = 7, 0xff
	return m
}

func TestClientFlowModRoundTrip(t *testing.T) {
	acts := []Action{{Type: ActOutput, Port: 2}, {Type: ActResubmit, Port: PortInPort, Table: 3}}
	for _, v := range []Version{V10, V12, V13, V14, V15} {
		for _, cmd := range []uint8{FlowAdd, FlowModify, FlowDeleteStrict} {
			fm := &FlowMod{Match: testMatch(), Priority: 100, Command: cmd, Table: 1, IdleTimeout: 5,
				HardTimeout: 7, BufferID: 0xffffffff, OutPort: PortAny, OutGroup: GroupAny, Actions: acts}
			if cmd == FlowAdd {
				fm.NewCookie = 0x42
			} else {
				fm.Cookie = Cookie{Value: 0x40, Mask: 0xf0}
			}
			msg, err := Decode(EncodeFlowMod(v, 9, fm))
			if err != nil {
				t.Fatalf("%s cmd %d: %v", v, cmd, err)
			}
			got := msg.(*FlowMod)
			if got.Xid != 9 || got.Command != cmd || got.Priority != 100 || got.Table != 1 || got.IdleTimeout != 5 ||
				got.HardTimeout != 7 || !reflect.DeepEqual(got.Match, fm.Match) || !sameActions(got.Actions, acts) {
				t.Errorf("%s cmd %d: decoded %+v", v, cmd, *got)
			}
			if cmd == FlowAdd && got.NewCookie != 0x42 {
				t.Errorf("%s: cookie %#x", v, got.NewCookie)
			}
			if cmd != FlowAdd && got.Cookie != fm.Cookie {
				t.Errorf("%s: cookie filter %+v", v, got.Cookie)
			}
		}
	}
}

// sameActions compares what the test's actions set.
func sameActions(a, b []Action) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].Port != b[i].Port || a[i].Table != b[i].Table {
			return false
		}
	}
	return true
}

func TestClientFlowStatsRoundTrip(t *testing.T) {
	for _, v := range []Version{V10, V12, V13, V14, V15} {
		req := &StatsRequest{Kind: StatsFlow, Table: TableAll, OutPort: PortAny, OutGroup: GroupAny, Match: testMatch(),
			Cookie: 0x10, CookieMask: 0xff}
		msg, err := Decode(EncodeFlowStatsRequest(v, 4, req))
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		got := msg.(*StatsRequest)
		if got.Kind != StatsFlow || got.Table != TableAll || got.OutPort != PortAny || !reflect.DeepEqual(got.Match, req.Match) ||
			got.Cookie != 0x10 || got.CookieMask != 0xff || got.NX != (v == V10) {
			t.Errorf("%s: decoded %+v", v, got)
		}

		fs := []FlowStats{{Table: 2, Duration: 3*time.Second + 5*time.Millisecond, Priority: 9, Cookie: 0x77,
			Packets: 5, Bytes: 500, IdleAge: 2 * time.Second, HardAge: 3 * time.Second, Match: testMatch(),
			Actions: []Action{{Type: ActOutput, Port: PortNormal}}}}
		msgs := EncodeFlowStatsReply(v, 4, v == V10, fs)
		r, err := DecodeStatsReply(msgs[0])
		if err != nil {
			t.Fatal(err)
		}
		flows, err := DecodeFlowStats(r)
		if err != nil || len(flows) != 1 {
			t.Fatalf("%s: %v %v", v, flows, err)
		}
		want := fs[0]
		switch v {
		case V10:
		case V15: // OXS carries the idle time, not the hard age
			want.HardAge = -1
		default:
			want.IdleAge, want.HardAge = -1, -1
		}
		fl := flows[0]
		if !sameActions(fl.Actions, want.Actions) {
			t.Errorf("%s: actions %+v", v, fl.Actions)
		}
		fl.Actions, want.Actions = nil, nil
		if !reflect.DeepEqual(fl, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", v, fl, want)
		}
	}
}

func TestClientFeaturesRoundTrip(t *testing.T) {
	ports := []Port{{No: 1, HWAddr: [6]byte{1, 2, 3, 4, 5, 6}, Name: "p1", Config: PortConfigDown, State: PortStateDown,
		Curr: Feature10GBFD | FeatureCopper, CurrSpeed: 10000000}, {No: PortLocal, Name: "br0"}}
	for _, v := range []Version{V10, V11, V12, V13, V14, V15} {
		f := &Features{DatapathID: 0x1234, NTables: 254, Capabilities: 0xc7, Ports: ports}
		got, err := DecodeFeaturesReply(EncodeFeaturesReply(v, 2, f))
		if err != nil {
			t.Fatal(err)
		}
		if got.DatapathID != 0x1234 || got.NTables != 254 || got.Capabilities != 0xc7 {
			t.Errorf("%s: %+v", v, got)
		}
		r, err := DecodeStatsReply(EncodePortDescReply(v, 3, ports)[0])
		if err != nil {
			t.Fatal(err)
		}
		pd, err := DecodePorts(v, r.Body)
		if err != nil {
			t.Fatal(err)
		}
		want := ports
		if v == V10 {
			want = []Port{ports[0], ports[1]}
			want[0].CurrSpeed = 0 // 1.0 has no speeds
		}
		if !reflect.DeepEqual(pd, want) {
			t.Errorf("%s: ports %+v, want %+v", v, pd, want)
		}
		if v <= V12 && !reflect.DeepEqual(got.Ports, want) {
			t.Errorf("%s: features ports %+v", v, got.Ports)
		}
	}
}

func TestClientPortStatsRoundTrip(t *testing.T) {
	in := []PortStats{{No: 1, RxPackets: 1, TxPackets: 2, RxBytes: 3, TxBytes: 4, RxDropped: 5, TxDropped: 6, RxErrors: 7,
		TxErrors: 8, RxFrameErr: Unknown, RxOverErr: 9, RxCRCErr: 10, Collision: 11, Duration: 3*time.Second + 7},
		{No: PortLocal, RxPackets: 12}}
	for _, v := range []Version{V10, V11, V12, V13, V14, V15} {
		msg, err := Decode(EncodePortStatsRequest(v, 5, 7))
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if r := msg.(*StatsRequest); r.Kind != StatsPort || r.Port != 7 {
			t.Errorf("%s: request %+v", v, r)
		}
		msg, err = Decode(EncodeQueueStatsRequest(v, 5, 7, 9))
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if r := msg.(*StatsRequest); r.Kind != StatsQueue || r.Port != 7 || r.Queue != 9 {
			t.Errorf("%s: queue request %+v", v, r)
		}
		r, err := DecodeStatsReply(EncodePortStatsReply(v, 5, in)[0])
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodePortStats(r)
		if err != nil {
			t.Fatal(err)
		}
		want := append([]PortStats(nil), in...)
		if v < V13 {
			want[0].Duration, want[1].Duration = -1, -1
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", v, got, want)
		}
		for _, nx := range []bool{false, true} {
			if nx && v != V10 {
				continue
			}
			r, err := DecodeStatsReply(EncodeAggregateReply(v, 6, nx, 10, 20, 3)[0])
			if err != nil {
				t.Fatal(err)
			}
			if p, b, f, err := DecodeAggregate(r); err != nil || p != 10 || b != 20 || f != 3 {
				t.Errorf("%s nx=%v: aggregate %d %d %d %v", v, nx, p, b, f, err)
			}
		}
	}
}

func TestClientPortModRoundTrip(t *testing.T) {
	for _, v := range []Version{V10, V11, V12, V13, V14, V15} {
		in := &PortMod{Port: 3, HWAddr: [6]byte{1, 2, 3, 4, 5, 6}, Config: PortConfigDown, Mask: PortConfigDown | PortConfigNoFwd}
		msg, err := Decode(EncodePortMod(v, 4, in))
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		got := msg.(*PortMod)
		if got.Port != 3 || got.HWAddr != in.HWAddr || got.Config != in.Config || got.Mask != in.Mask {
			t.Errorf("%s: %+v", v, got)
		}
	}
}

func TestClientPacketOutRoundTrip(t *testing.T) {
	for _, v := range []Version{V10, V11, V12, V13, V14, V15} {
		in := &PacketOut{InPort: 3, Actions: []Action{{Type: ActOutput, Port: 2}}, Data: []byte{1, 2, 3}}
		msg, err := Decode(EncodePacketOut(v, 4, in))
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		got := msg.(*PacketOut)
		if got.InPort != 3 || got.BufferID != 0xffffffff || !sameActions(got.Actions, in.Actions) || !reflect.DeepEqual(got.Data, in.Data) {
			t.Errorf("%s: %+v", v, got)
		}
	}
}

func TestClientGroupRoundTrip(t *testing.T) {
	buckets := []Bucket{{ID: 0, Weight: 1, WatchPort: PortAny, WatchGroup: GroupAny, Actions: []Action{{Type: ActOutput, Port: 1}}},
		{ID: 1, Weight: 5, WatchPort: 2, WatchGroup: GroupAny, Actions: []Action{{Type: ActOutput, Port: 2}}}}
	for _, v := range []Version{V11, V12, V13, V14, V15} {
		gm := &GroupMod{Command: GroupAdd, Type: GroupSelect, ID: 7, CommandBucketID: BucketAll, Buckets: buckets}
		msg, err := Decode(EncodeGroupMod(v, 3, gm))
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		got := msg.(*GroupMod)
		if got.Command != GroupAdd || got.Type != GroupSelect || got.ID != 7 || len(got.Buckets) != 2 ||
			got.Buckets[1].Weight != 5 || got.Buckets[1].WatchPort != 2 || !sameActions(got.Buckets[1].Actions, buckets[1].Actions) {
			t.Errorf("%s: %+v", v, got)
		}
		if _, err := Decode(EncodeGroupDescRequest(v, 4, GroupAllGroups)); err != nil {
			t.Errorf("%s: desc request: %v", v, err)
		}
		r, err := DecodeStatsReply(EncodeGroupDescReply(v, 4, []GroupDesc{{Type: GroupSelect, ID: 7, Buckets: buckets}})[0])
		if err != nil {
			t.Fatal(err)
		}
		gd, err := DecodeGroupDesc(r)
		if err != nil || len(gd) != 1 || gd[0].ID != 7 || len(gd[0].Buckets) != 2 || gd[0].Buckets[1].Weight != 5 {
			t.Errorf("%s: %+v %v", v, gd, err)
		}
	}
}

func TestClientMeterRoundTrip(t *testing.T) {
	for _, v := range []Version{V13, V14, V15} {
		msg, err := Decode(EncodeMeterConfigRequest(v, 2, 7))
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if r := msg.(*StatsRequest); r.Kind != StatsMeterConfig || r.Meter != 7 {
			t.Errorf("%s: %+v", v, r)
		}
		in := []MeterConfig{{ID: 7, Flags: MeterKbps | MeterBurst, Bands: []MeterBand{{Type: BandDrop, Rate: 100, Burst: 10}}}}
		r, err := DecodeStatsReply(EncodeMeterConfigReply(v, 2, in)[0])
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeMeterConfig(r)
		if err != nil || !reflect.DeepEqual(got, in) {
			t.Errorf("%s: %+v %v", v, got, err)
		}
	}
}
