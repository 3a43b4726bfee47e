package ofproto

import (
	"net/netip"
	"regexp"
	"testing"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/dptest"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

func drop(rate uint32) ofp.MeterBand { return ofp.MeterBand{Type: ofp.BandDrop, Rate: rate} }

func TestMeterModErrors(t *testing.T) {
	_, br := emptyTables(t)
	add := func(id uint32, flags uint16, bands ...ofp.MeterBand) *ofp.MeterMod {
		return &ofp.MeterMod{Command: ofp.MeterAdd, Flags: flags, ID: id, Bands: bands}
	}
	if err := br.MeterMod(add(1, ofp.MeterKbps, drop(100))); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		m    *ofp.MeterMod
		want ofp.Errno
	}{
		{"exists", add(1, ofp.MeterKbps, drop(100)), ofp.MeterExists},
		{"id 0", add(0, ofp.MeterKbps, drop(100)), ofp.InvalidMeter},
		{"all", add(ofp.MeterAll, ofp.MeterKbps, drop(100)), ofp.InvalidMeter},
		{"beyond max", add(ofp.MeterMax+1, ofp.MeterKbps, drop(100)), ofp.InvalidMeter},
		{"dscp_remark", add(2, ofp.MeterKbps, ofp.MeterBand{Type: ofp.BandDSCPRemark, Rate: 1}), ofp.MeterBadBand},
		{"rate 0", add(2, ofp.MeterKbps, drop(0)), ofp.MeterBadRate},
		{"unknown flag", add(2, 0x10, drop(1)), ofp.MeterBadFlags},
		{"too many bands", add(2, ofp.MeterKbps, make([]ofp.MeterBand, 9)...), ofp.OutOfBands},
		{"modify unknown", &ofp.MeterMod{Command: ofp.MeterModify, ID: 9, Flags: ofp.MeterKbps, Bands: []ofp.MeterBand{drop(1)}}, ofp.UnknownMeter},
	} {
		if err := br.MeterMod(tc.m); err == nil || err.Errno != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	if cfgs, ok := br.MeterConfigs(ofp.MeterAll); !ok || len(cfgs) != 1 || cfgs[0].ID != 1 {
		t.Errorf("refused meter mods changed the meters: %+v", cfgs)
	}
	if _, ok := br.MeterStats(2); ok {
		t.Error("stats of a meter that does not exist")
	}
}

// A flow's meter becomes a datapath meter action; a flow cannot use a
// meter that does not exist; deleting the meter deletes the flow and
// frees the datapath meter.
// translateIPv4 returns the datapath actions of an IPv4 frame from macA
// to macB arriving on port 1.
func translateIPv4(tb *testBacker) string {
	frame := dptest.Frame{Src: dptest.MAC(macA), Dst: dptest.MAC(macB),
		IPv4: &dptest.IPv4{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2")}}.Bytes()
	u := []datapath.Upcall{{}}
	flow.Extract(frame, 1, &u[0].Key)
	tb.Revalidate(u)
	return u[0].Actions.String()
}

func TestMeterTranslation(t *testing.T) {
	tb, br := emptyTables(t)
	sink := &removedSink{}
	br.SetAsync(sink)
	meter := ofp.Action{Type: ofp.ActMeter, ID: 7}
	if err := br.FlowMod(fmSpec{actions: []ofp.Action{meter, output(2)}}.mod()); err == nil || err.Errno != ofp.InvalidMeter {
		t.Fatalf("a flow with a missing meter: %v", err)
	}
	if err := br.MeterMod(&ofp.MeterMod{Command: ofp.MeterAdd, Flags: ofp.MeterPktps, ID: 7, Bands: []ofp.MeterBand{drop(10)}}); err != nil {
		t.Fatal(err)
	}
	mustMod(t, br, fmSpec{prio: 5, flags: ofp.FlagSendFlowRem, actions: []ofp.Action{meter, output(2)}})
	mustMod(t, br, fmSpec{prio: 1, actions: []ofp.Action{output(3)}})
	xl := func() string { return translateIPv4(tb) }
	if got := xl(); got != "meter(0),2" {
		t.Errorf("translated to %q, want meter(0),2", got)
	}
	if st, ok := br.MeterStats(7); !ok || st[0].FlowCount != 1 {
		t.Errorf("meter stats %+v", st)
	}
	if err := br.MeterMod(&ofp.MeterMod{Command: ofp.MeterDelete, ID: ofp.MeterAll}); err != nil {
		t.Fatal(err)
	}
	if got := xl(); got != "3" {
		t.Errorf("after the meter's deletion translated to %q, want 3", got)
	}
	if len(sink.got) != 1 || sink.got[0].Reason != ofp.FlowRemovedMeter {
		t.Errorf("flow removed messages %+v, want one for the meter", sink.got)
	}
	if _, ok := tb.dp.MeterGet(0); ok {
		t.Error("the datapath meter outlived its OpenFlow meter")
	}
}

// A controller action with a meter meters only its packet-ins: the
// datapath action is OVS's sample(meter, userspace), the rest of the
// actions run on every packet; a meter that does not exist meters
// nothing, and the flow is accepted as OVS accepts it.
func TestMeterControllerAction(t *testing.T) {
	tb, br := emptyTables(t)
	if err := br.MeterMod(&ofp.MeterMod{Command: ofp.MeterAdd, Flags: ofp.MeterPktps, ID: 7, Bands: []ofp.MeterBand{drop(10)}}); err != nil {
		t.Fatal(err)
	}
	ctl := func(meter uint32) ofp.Action {
		return ofp.Action{Type: ofp.ActController, Port: ofp.PortController, MaxLen: 0xffff, Reason: ofp.PacketInAction, ID: meter}
	}
	xl := func() string { return regexp.MustCompile(`cookie=\d+`).ReplaceAllString(translateIPv4(tb), "cookie=C") }
	mustMod(t, br, fmSpec{prio: 5, actions: []ofp.Action{ctl(7), output(2)}})
	if got, want := xl(), "sample(sample=100.0%,actions(meter(0),userspace(pid=0,controller(cookie=C)))),2"; got != want {
		t.Errorf("translated to %q, want %q", got, want)
	}
	if st, ok := br.MeterStats(7); !ok || st[0].FlowCount != 0 {
		t.Errorf("meter stats %+v: a controller action's meter counts no flow, as in OVS", st)
	}
	mustMod(t, br, fmSpec{prio: 5, actions: []ofp.Action{ctl(9), output(2)}})
	if got, want := xl(), "userspace(pid=0,controller(cookie=C)),2"; got != want {
		t.Errorf("with a missing meter translated to %q, want %q", got, want)
	}
}
