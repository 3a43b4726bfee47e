package bridge

import (
	"slices"
	"strings"
	"testing"

	"github.com/govs/govs/netdev"
	"github.com/govs/govs/netdev/vhostuser"
)

// fakeVhost is a vhost-user port as the switch sees it.
type fakeVhost struct {
	*fakePort
	req       OpenRequest
	zeroCopy  bool
	txRetries int
	running   bool
}

func (p *fakeVhost) SetZeroCopy(on bool) { p.zeroCopy = on }
func (p *fakeVhost) SetTxRetriesMax(n int) error {
	p.txRetries = n
	return nil
}
func (p *fakeVhost) Status() map[string]string {
	return map[string]string{"socket": p.req.SocketPath, "status": "connected"}
}
func (p *fakeVhost) Counters() vhostuser.Counters {
	return vhostuser.Counters{TxRetries: 5, TxRingFullDrops: 2}
}
func (p *fakeVhost) Running() bool { return p.running }

func (f *fakeDevs) openVhost(req OpenRequest) (netdev.Port, error) {
	if f.vhost == nil {
		f.vhost = map[string]*fakeVhost{}
	}
	p := &fakeVhost{fakePort: &fakePort{name: req.Name}, req: req,
		zeroCopy: req.Vhost.ZeroCopy, txRetries: req.Vhost.TxRetriesMax, running: true}
	f.vhost[req.Name] = p
	return p, nil
}

func TestKindOf(t *testing.T) {
	for typ, want := range map[string]PortKind{
		TypeSystem: KindKernel, TypeInternal: KindKernel, TypeTap: KindKernel, TypePatch: KindPatch,
		TypeVhostUser: KindVhost, TypeVhostUserClient: KindVhost, TypeVXLAN: KindPatch, "stt": KindUnknown,
	} {
		if got := KindOf(typ); got != want {
			t.Errorf("KindOf(%q) = %v, want %v", typ, got, want)
		}
	}
	if !slices.Contains(IfaceTypes, TypeVhostUser) || !slices.Contains(IfaceTypes, TypeVhostUserClient) {
		t.Errorf("IfaceTypes %v lacks the vhost-user types", IfaceTypes)
	}
}

func TestVhostSockDir(t *testing.T) {
	var d db
	d.bridge("br0", "vhu0:dpdkvhostuser", "vhc0:dpdkvhostuserclient:vhost-server-path=/tmp/x.sock", "vhc1:dpdkvhostuserclient")
	for _, c := range []struct {
		dir, want string
		problem   bool
	}{
		{"", "/run/ovs/vhu0", false},
		{"vhost", "/run/ovs/vhost/vhu0", false},
		{"../etc", "/run/ovs/vhu0", true},
	} {
		d.rows.OpenVSwitch[0].OtherConfig = map[string]string{}
		if c.dir != "" {
			d.rows.OpenVSwitch[0].OtherConfig[KeyVhostSockDir] = c.dir
		}
		des := BuildIn(d.rows, "/run/ovs")
		paths := map[string]string{}
		for _, p := range des.Bridges[0].Ports {
			paths[p.Name] = p.Ifaces[0].VhostPath
		}
		if paths["vhu0"] != c.want || paths["vhc0"] != "/tmp/x.sock" || paths["vhc1"] != "" {
			t.Errorf("vhost-sock-dir %q: paths %v, want vhu0 at %s", c.dir, paths, c.want)
		}
		if got := len(des.Problems) > 0; got != c.problem {
			t.Errorf("vhost-sock-dir %q: problems %q", c.dir, des.Problems)
		}
	}
}

func TestVhostPorts(t *testing.T) {
	h := newHarness()
	var d db
	d.bridge("br0", "p1", "vhu0:dpdkvhostuser", "vhc0:dpdkvhostuserclient")
	apply := func() Report {
		t.Helper()
		des := BuildIn(d.rows, "/run/ovs")
		h.sw.Apply(des)
		h.sw.Refresh()
		return h.sw.Report(des)
	}
	r := apply()

	srv := h.devs.vhost["vhu0"]
	if srv == nil || srv.req.Type != TypeVhostUser || srv.req.SocketPath != "/run/ovs/vhu0" ||
		srv.req.Vhost.TxRetriesMax != vhostuser.DefaultTxRetries || srv.req.Vhost.ZeroCopy {
		t.Fatalf("server port opened as %+v", srv)
	}
	st := statusOf(r, d.iface("vhu0").UUID)
	if st.OFPort <= 0 || st.Error != "" || st.Link == nil || !st.Link.AdminUp || !st.Link.LinkUp ||
		st.Stats["ovs_tx_retries"] != 5 || st.Stats["ovs_tx_failure_drops"] != 2 || st.Stats["rx_packets"] != 7 ||
		st.Status["socket"] != "/run/ovs/vhu0" {
		t.Errorf("vhu0 status %+v link %+v", st, st.Link)
	}
	// A client port without a path is there, unconfigured, as in OVS.
	st = statusOf(r, d.iface("vhc0").UUID)
	if _, opened := h.devs.vhost["vhc0"]; opened || st.OFPort <= 0 || st.Error != "" || st.Link == nil || st.Link.LinkUp {
		t.Errorf("vhc0 without a path: %+v link %+v", st, st.Link)
	}
	// No kernel-link handling for vhost-user ports.
	if _, ok := h.devs.mtus["vhu0"]; ok {
		t.Error("mtu set on a vhost-user port")
	}
	if h.sw.LinkChanged("vhu0", 99, false) {
		t.Error("a link event for vhu0's name affects the vhost-user port")
	}
	if s, _ := h.sw.State("vhu0"); s != StateAttached {
		t.Errorf("vhu0 is %v after a link event", s)
	}

	// The path set: the client connects, keeping its OpenFlow number.
	vhc0 := st.OFPort
	d.iface("vhc0").Options = map[string]string{OptVhostServerPath: "/tmp/a.sock"}
	r = apply()
	cl := h.devs.vhost["vhc0"]
	if cl == nil || cl.req.SocketPath != "/tmp/a.sock" || statusOf(r, d.iface("vhc0").UUID).OFPort != vhc0 {
		t.Fatalf("vhc0 with a path: %+v, %+v", cl, statusOf(r, d.iface("vhc0").UUID))
	}

	// Live options: in place, nothing reopened.
	dpLog := len(h.dp.log)
	d.iface("vhc0").Options = map[string]string{OptVhostServerPath: "/tmp/a.sock", OptDQZeroCopy: "true", OptTxRetriesMax: "3"}
	d.iface("vhu0").Options = map[string]string{OptTxRetriesMax: "33"}
	apply()
	if h.devs.vhost["vhc0"] != cl || !cl.zeroCopy || cl.txRetries != 3 || len(h.dp.log) != dpLog {
		t.Errorf("live options: zero copy %v, retries %d, datapath %v", cl.zeroCopy, cl.txRetries, h.dp.log[dpLog:])
	}
	if srv.txRetries != vhostuser.DefaultTxRetries || h.devs.vhost["vhu0"] != srv {
		t.Errorf("tx-retries-max=33: retries %d, want OVS's default", srv.txRetries)
	}
	d.iface("vhc0").Options = map[string]string{OptVhostServerPath: "/tmp/a.sock", OptTxRetriesMax: "0"}
	apply()
	if cl.zeroCopy || cl.txRetries != 0 || len(h.dp.log) != dpLog {
		t.Errorf("live options back: zero copy %v, retries %d, datapath %v", cl.zeroCopy, cl.txRetries, h.dp.log[dpLog:])
	}
	if !slices.ContainsFunc(h.log.lines, func(l string) bool {
		return l == "INFO|Max Tx retries for vhost device 'vhc0' set to 0"
	}) {
		t.Errorf("no OVS log line for tx-retries-max: %q", h.log.lines)
	}

	// A new path reopens only that port, with the options that run.
	d.iface("vhc0").Options = map[string]string{OptVhostServerPath: "/tmp/b.sock", OptTxRetriesMax: "0"}
	r = apply()
	cl2 := h.devs.vhost["vhc0"]
	if cl2 == cl || !cl.closed || cl2.req.SocketPath != "/tmp/b.sock" || cl2.req.Vhost.TxRetriesMax != 0 ||
		statusOf(r, d.iface("vhc0").UUID).OFPort != vhc0 || srv.closed || h.devs.open["p1"].closed {
		t.Errorf("path change: old closed %v, new %+v, others closed %v %v", cl.closed, cl2.req, srv.closed, h.devs.open["p1"].closed)
	}
	if got := strings.Join(h.dp.log[dpLog:], ","); strings.Count(got, "del") != 1 || !strings.Contains(got, "vhc0") {
		t.Errorf("path change: datapath %s", got)
	}

	// Link down and up again counts a reset.
	cl2.running = false
	r = apply()
	cl2.running = true
	r = apply()
	if st := statusOf(r, d.iface("vhc0").UUID); st.Link == nil || !st.Link.LinkUp || st.Link.LinkResets != 1 {
		t.Errorf("link resets: %+v", st.Link)
	}

	// userspace-tso-enable=false reopens the port without offloads.
	d.rows.OpenVSwitch[0].OtherConfig = map[string]string{KeyTSOEnable: "false"}
	r = apply()
	if srv2 := h.devs.vhost["vhu0"]; srv2 == srv || !srv.closed || !srv2.req.Vhost.DisableOffload ||
		srv2.req.SocketPath != "/run/ovs/vhu0" || statusOf(r, d.iface("vhu0").UUID).OFPort <= 0 {
		t.Errorf("tso off: vhu0 reopened as %+v", srv2.req)
	}

	// A server port name with a slash is refused as OVS does.
	d.bridge("br1", `a\b:dpdkvhostuser`)
	r = apply()
	if st := statusOf(r, d.iface(`a\b`).UUID); st.OFPort != -1 || st.Error != `could not open network device a\b (Invalid argument)` {
		t.Errorf(`a\b: %+v`, st)
	}
}
