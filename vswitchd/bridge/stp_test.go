package bridge

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govs/govs/schema/vswitchd"
	"github.com/govs/govs/vswitchd/ofproto"
	"github.com/govs/govs/vswitchd/stp"
)

// gates returns the last pushed configuration's spanning tree and gates
// by port name.
func (h *harness) gates(t *testing.T, br string) (string, map[string]ofproto.PortGate) {
	t.Helper()
	cfgs := h.backer.brs[br].cfgs
	if len(cfgs) == 0 {
		t.Fatal("no configuration pushed")
	}
	g := map[string]ofproto.PortGate{}
	for _, pc := range cfgs[len(cfgs)-1].Ports {
		g[pc.Name] = pc.Gate
	}
	return cfgs[len(cfgs)-1].SpanningTree, g
}

// TestBridgeSTP: a bridge with stp_enable runs STP on its ports but the
// local one: they start discarding, BPDUs leave on them once the hello
// time passed, a better root heard on p1 makes it the root port, and the
// status columns and stp/show say so.
func TestBridgeSTP(t *testing.T) {
	h := newHarness()
	var d db
	br := d.bridge("br0", "p1", "p2")
	br.STPEnable = true
	br.OtherConfig = map[string]string{"hwaddr": "02:00:00:00:00:01", "stp-hello-time": "1", "stp-max-age": "6", "stp-forward-delay": "4"}
	d.port("p2").OtherConfig = map[string]string{"stp-port-priority": "64", "stp-path-cost": "7"}
	want := Build(d.rows)
	for _, p := range want.Problems {
		if strings.Contains(p, "stp") || strings.Contains(p, "STP") {
			t.Errorf("problem %q", p)
		}
	}
	h.sw.Apply(want)
	tree, g := h.gates(t, "br0")
	if tree != "STP" || g["p1"] != ofproto.GateDiscard || g["p2"] != ofproto.GateDiscard || g["br0"] != ofproto.GateOpen {
		t.Errorf("pushed %q %v", tree, g)
	}
	h.sw.mu.Lock()
	h.sw.stps["br0"].last = time.Now().Add(-1500 * time.Millisecond)
	h.sw.mu.Unlock()
	h.sw.RunSTP()
	if len(h.backer.sent) != 2 {
		t.Fatalf("sent %d BPDUs, want one a port", len(h.backer.sent))
	}
	for _, f := range h.backer.sent {
		b, ok := stp.Payload(f.frame)
		bpdu, err := stp.Decode(b)
		if !ok || err != nil || bpdu.RootID.String() != "8000.020000000001" || bpdu.MaxAge != 6*256 {
			t.Errorf("sent %+v %v", bpdu, err)
		}
	}
	// A better root on p1.
	root := stp.BPDU{Type: stp.TypeConfig, RootID: stp.NewID(4096, [6]byte{2, 0, 0, 0, 0, 9}), BridgeID: stp.NewID(4096, [6]byte{2, 0, 0, 0, 0, 9}),
		PortID: 0x8001, MaxAge: 6 * 256, HelloTime: 256, ForwardDelay: 4 * 256}
	h.backer.slow(h.backer.sent[0].dpPort, stp.Frame([6]byte{2, 0, 0, 0, 0, 9}, root.Encode()))
	h.backer.slow(h.backer.sent[0].dpPort, stp.Frame([6]byte{2, 0, 0, 0, 0, 9}, []byte{0, 0}))
	if !h.sw.RunSTP() {
		t.Error("RunSTP saw no state change")
	}
	show, err := h.sw.STPShow([]string{"br0"})
	if err != nil || !strings.Contains(show, "  root-port       p1\n  root-path-cost  19\n") ||
		!strings.Contains(show, "  p2         designated listening  7     64.2\n") {
		t.Errorf("stp/show: %v\n%s", err, show)
	}
	r := h.sw.Report(want)
	if st := r.Bridges[0].Status; st["stp_designated_root"] != "1000.020000000009" || st["stp_root_path_cost"] != "19" || st["stp_bridge_id"] != "8000.020000000001" {
		t.Errorf("Bridge.status %v", st)
	}
	var p1 PortStatus
	for _, p := range r.Ports {
		if p.UUID == d.port("p1").UUID {
			p1 = p
		}
	}
	if p1.Status["stp_role"] != "root" || p1.Status["stp_state"] != "listening" || p1.Status["stp_port_id"] != "32769" ||
		p1.Stats["stp_rx_count"] != 1 || p1.Stats["stp_error_count"] != 1 {
		t.Errorf("p1 status %v statistics %v", p1.Status, p1.Stats)
	}
	if _, err := h.sw.STPShow([]string{"nosuch"}); err == nil || err.Error() != "no such stp object" {
		t.Errorf("stp/show nosuch: %v", err)
	}

	// Port numbers given to some ports only: STP is off, as OVS.
	d.port("p1").OtherConfig = map[string]string{"stp-port-num": "5"}
	h.sw.Apply(Build(d.rows))
	if tree, g := h.gates(t, "br0"); tree != "" || g["p1"] != ofproto.GateOpen {
		t.Errorf("pushed %q %v", tree, g)
	}
	if !strings.Contains(strings.Join(h.log.lines, "\n"), "ERR|bridge br0: must manually configure all STP port IDs or none, disabling") {
		t.Errorf("log:\n%s", strings.Join(h.log.lines, "\n"))
	}
	if show, _ := h.sw.STPShow(nil); show != "" {
		t.Errorf("stp/show: %q", show)
	}
}

func TestPortSTPSpec(t *testing.T) {
	for _, c := range []struct {
		oc   map[string]string
		want PortSTPSpec
	}{
		{nil, PortSTPSpec{Priority: 128, PathCost: -1}},
		{map[string]string{"stp-enable": "false"}, PortSTPSpec{Off: true, Priority: 128, PathCost: -1}},
		{map[string]string{"stp-port-num": "0x10", "stp-port-priority": "0x40", "stp-path-cost": "100x"}, PortSTPSpec{Num: 16, Priority: 64, PathCost: 100}},
		{map[string]string{"stp-port-num": "256"}, PortSTPSpec{Num: -1, Priority: 128, PathCost: -1}},
		{map[string]string{"stp-port-num": "x"}, PortSTPSpec{Num: -1, Priority: 128, PathCost: -1}},
		{map[string]string{"stp-port-priority": "300", "stp-path-cost": "70000"}, PortSTPSpec{Priority: 44, PathCost: 4464}},
	} {
		var d db
		d.bridge("br0", "p1")
		d.port("p1").OtherConfig = c.oc
		if got := portSTPSpec(*d.port("p1")); got != c.want {
			t.Errorf("%v: %+v, want %+v", c.oc, got, c.want)
		}
	}
}

// FuzzSTPSpec feeds the stp-* keys to their parsers: no panic, values
// in range, and strtoul agrees with strconv where the whole value is a
// decimal number.
func FuzzSTPSpec(f *testing.F) {
	for _, s := range [][2]string{
		{"stp-port-num", "7"}, {"stp-port-num", "0x10"}, {"stp-port-num", "256"}, {"stp-port-priority", "0377"},
		{"stp-path-cost", "65536"}, {"stp-priority", "4096"}, {"stp-hello-time", "x"}, {"stp-system-id", "02:00:00:00:00:0a"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		oc := map[string]string{key: value}
		ps := portSTPSpec(vswitchd.Port{Name: "p1", OtherConfig: oc})
		if ps.Num < -1 || ps.Num > stp.MaxPorts || ps.PathCost < -1 || ps.PathCost > 65535 {
			t.Fatalf("%s=%q: %+v", key, value, ps)
		}
		bs := stpSpec(vswitchd.Bridge{Name: "br0", STPEnable: true, OtherConfig: oc})
		if bs == nil || bs.SystemID != nil && len(bs.SystemID) != 6 || bs.SystemID != nil && bs.BadSystemID {
			t.Fatalf("%s=%q: %+v", key, value, bs)
		}
		if n, err := strconv.ParseUint(value, 10, 64); err == nil && (len(value) < 2 || value[0] != '0') && strtoul(value, 0) != n {
			t.Fatalf("strtoul(%q) = %d, want %d", value, strtoul(value, 0), n)
		}
	})
}
