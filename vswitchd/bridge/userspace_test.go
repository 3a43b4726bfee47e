package bridge

import (
	"strings"
	"testing"
)

func TestParseSockBufSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"212992", 212992, true},
		{"1048576", 1048576, true},
		{"1073741823", 1073741823, true},
		{"212991", 0, false},
		{"100", 0, false},
		{"0", 0, false},
		{"-1", 0, false},
		{"1073741824", 0, false},
		{"2000000000", 0, false},
		{"99999999999999999999", 0, false},
		{"abc", 0, false},
		{"", 0, false},
		{" 1048576", 0, false},
		{"1M", 0, false},
		{"0x100000", 0, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSockBufSize(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("ParseSockBufSize(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "212992..1073741823") {
				t.Errorf("error %q does not name the range", err)
			}
		})
	}
}

func TestParseTSOEnable(t *testing.T) {
	for _, tc := range []struct {
		in       string
		want, ok bool
	}{
		{"true", true, true},
		{"false", false, true},
		{"TRUE", false, false},
		{"yes", false, false},
		{"", false, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseTSOEnable(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("ParseTSOEnable(%q) = %v, %v", tc.in, got, err)
			}
		})
	}
}

func TestBuildUserspaceOptions(t *testing.T) {
	for _, tc := range []struct {
		name       string
		global     map[string]string
		iface      map[string]string
		wantGlobal Option[int]
		wantIface  Option[int]
		wantTSO    Option[bool]
		problem    string
	}{
		{name: "defaults", wantTSO: Option[bool]{Value: true}},
		{name: "global", global: map[string]string{KeySockBufSize: "1048576", KeyTSOEnable: "false"},
			wantGlobal: Option[int]{Value: 1048576}, wantTSO: Option[bool]{Value: false}},
		{name: "per-interface", iface: map[string]string{KeySockBufSize: "4194304"},
			wantIface: Option[int]{Value: 4194304}, wantTSO: Option[bool]{Value: true}},
		{name: "bad global", global: map[string]string{KeySockBufSize: "abc"},
			wantGlobal: Option[int]{Bad: true}, wantTSO: Option[bool]{Value: true},
			problem: `Open_vSwitch: ignoring invalid other_config:userspace-sock-buf-size="abc" (must be an integer in the range 212992..1073741823), keeping the previous setting`},
		{name: "bad interface", iface: map[string]string{KeySockBufSize: "100"},
			wantIface: Option[int]{Bad: true}, wantTSO: Option[bool]{Value: true},
			problem: `interface p1: ignoring invalid other_config:userspace-sock-buf-size="100"`},
		{name: "bad tso", global: map[string]string{KeyTSOEnable: "maybe"},
			wantTSO: Option[bool]{Value: true, Bad: true}, problem: "other_config:userspace-tso-enable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d db
			d.bridge("br0", "p1")
			d.rows.OpenVSwitch[0].OtherConfig = tc.global
			d.iface("p1").OtherConfig = tc.iface
			got := Build(d.rows)
			if got.SockBufSize != tc.wantGlobal || got.TSO != tc.wantTSO {
				t.Errorf("global: sock buf %+v, tso %+v", got.SockBufSize, got.TSO)
			}
			if ifc := got.Bridges[0].Ports[1].Ifaces[0]; ifc.SockBufSize != tc.wantIface {
				t.Errorf("interface: sock buf %+v", ifc.SockBufSize)
			}
			joined := strings.Join(got.Problems, "\n")
			if tc.problem == "" && joined != "" || !strings.Contains(joined, tc.problem) {
				t.Errorf("problems %q, want %q", joined, tc.problem)
			}
		})
	}
}

// TestSockBufLive: the sizes follow the global and per-interface keys on
// running ports, a bad value keeps what runs, and removal restores the
// kernel default.
func TestSockBufLive(t *testing.T) {
	h := newHarness()
	var d db
	d.bridge("br0", "p1", "p2", "i1:internal")
	ovs := &d.rows.OpenVSwitch[0]
	bufs := func() map[string]string {
		r := h.sw.Report(Build(d.rows))
		out := map[string]string{}
		for _, n := range []string{"p1", "p2", "i1"} {
			st := statusOf(r, d.iface(n).UUID).Status
			out[n] = st[StatusRxBuf] + "/" + st[StatusTxBuf] + st[StatusSockBuf]
		}
		return out
	}
	step := func(what string, global, p1 string, want map[string]string) {
		t.Helper()
		ovs.OtherConfig = map[string]string{}
		if global != "" {
			ovs.OtherConfig[KeySockBufSize] = global
		}
		d.iface("p1").OtherConfig = map[string]string{}
		if p1 != "" {
			d.iface("p1").OtherConfig[KeySockBufSize] = p1
		}
		h.sw.Apply(Build(d.rows))
		if got := bufs(); got["p1"] != want["p1"] || got["p2"] != want["p2"] || got["i1"] != want["i1"] {
			t.Fatalf("%s: buffers %v, want %v", what, got, want)
		}
	}
	def := "212992/212992"
	step("initial", "", "", map[string]string{"p1": def, "p2": def, "i1": "/none"})
	step("global", "1048576", "", map[string]string{"p1": "2097152/2097152", "p2": "2097152/2097152", "i1": "/none"})
	step("per-interface", "1048576", "4194304", map[string]string{"p1": "8388608/8388608", "p2": "2097152/2097152", "i1": "/none"})
	for _, bad := range []string{"abc", "100", "2000000000"} {
		step("bad global "+bad, bad, "4194304", map[string]string{"p1": "8388608/8388608", "p2": "2097152/2097152", "i1": "/none"})
		step("bad per-interface "+bad, "1048576", bad, map[string]string{"p1": "8388608/8388608", "p2": "2097152/2097152", "i1": "/none"})
	}
	step("per-interface removed", "1048576", "", map[string]string{"p1": "2097152/2097152", "p2": "2097152/2097152", "i1": "/none"})
	step("global removed", "", "", map[string]string{"p1": def, "p2": def, "i1": "/none"})
	// Sizes change in place; only turning the key on and off reopens a
	// system port (ring <-> socket buffer), under the same port number.
	want := "add 1 br0 add 2 i1 add 3 p1 add 4 p2 " +
		"del 3 p1 add 3 p1 del 4 p2 add 4 p2 " +
		"del 3 p1 add 3 p1 del 4 p2 add 4 p2"
	if got := strings.Join(h.dp.log, " "); got != want {
		t.Errorf("datapath changes:\n got %s\nwant %s", got, want)
	}
}

// TestTSOToggle: userspace-tso-enable=false reopens every port without
// offloads under the same datapath and OpenFlow numbers, and back.
func TestTSOToggle(t *testing.T) {
	h := newHarness()
	var d db
	d.bridge("br0", "p1", "i1:internal")
	ovs := &d.rows.OpenVSwitch[0]
	ovs.OtherConfig = map[string]string{KeySockBufSize: "1048576"}
	h.sw.Apply(Build(d.rows))
	before := h.sw.Report(Build(d.rows))
	dpBefore := map[uint32]string{}
	for k, v := range h.dp.ports {
		dpBefore[k] = v
	}
	for _, tso := range []string{"false", "true"} {
		ovs.OtherConfig[KeyTSOEnable] = tso
		h.sw.Apply(Build(d.rows))
		r := h.sw.Report(Build(d.rows))
		for _, n := range []string{"br0", "p1", "i1"} {
			u := d.iface(n).UUID
			st := statusOf(r, u)
			if st.OFPort != statusOf(before, u).OFPort || st.Error != "" {
				t.Errorf("tso=%s: %s ofport %d (was %d), error %q", tso, n, st.OFPort, statusOf(before, u).OFPort, st.Error)
			}
			if st.Status[StatusTCPSeg] != tso || st.Status[StatusTCPCsum] != tso {
				t.Errorf("tso=%s: %s status %v", tso, n, st.Status)
			}
			if dev := h.devs.open[n]; dev == nil || dev.closed || dev.cfg.DisableOffload != (tso == "false") {
				t.Errorf("tso=%s: %s device %+v", tso, n, dev)
			}
		}
		if got := statusOf(r, d.iface("p1").UUID).Status[StatusRxBuf]; got != "2097152" {
			t.Errorf("tso=%s: reopened p1 has rx_sock_buf %s", tso, got)
		}
		if len(h.dp.ports) != len(dpBefore) {
			t.Errorf("datapath ports %v, were %v", h.dp.ports, dpBefore)
		}
		for k, v := range dpBefore {
			if h.dp.ports[k] != v {
				t.Errorf("datapath ports %v, were %v", h.dp.ports, dpBefore)
			}
		}
	}
	// Unchanged settings touch nothing.
	n := len(h.dp.log)
	h.sw.Apply(Build(d.rows))
	if len(h.dp.log) != n {
		t.Errorf("reapplying touched the datapath: %v", h.dp.log[n:])
	}
}
