package bridge

import (
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/datapath/packet"
	"github.com/govs/govs/netdev"
	"github.com/govs/govs/schema/vswitchd"
	"github.com/govs/govs/vswitchd/ofproto"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

type fakePort struct {
	name   string
	closed bool
	cfg    netdev.Config
	// rcv, snd are the socket buffer sizes as getsockopt would give
	// them; system ports only.
	rcv, snd int
}

// fakeSysPort is a fakePort with socket buffers, as a system port.
type fakeSysPort struct{ *fakePort }

func (p fakeSysPort) SetSockBufs(rcv, snd int) error {
	p.rcv, p.snd = 2*rcv, 2*snd
	return nil
}
func (p fakeSysPort) SockBufs() (int, int, error) { return p.rcv, p.snd, nil }

func (p *fakePort) Name() string                          { return p.name }
func (p *fakePort) Read([]*packet.Packet) (int, error)    { return 0, netdev.ErrClosed }
func (p *fakePort) Write(b []*packet.Packet) (int, error) { return len(b), nil }
func (p *fakePort) Stats() netdev.Stats                   { return netdev.Stats{RxPackets: 7} }
func (p *fakePort) Close() error                          { p.closed = true; return nil }
func (p *fakePort) Offloads() netdev.Offloads {
	return netdev.Offloads{Csum: !p.cfg.DisableOffload, TSO4: !p.cfg.DisableOffload}
}

type fakeDP struct {
	ports map[uint32]string
	log   []string
}

func (d *fakeDP) AddPort(no uint32, p netdev.Port) error {
	if _, ok := d.ports[no]; ok {
		return syscall.EEXIST
	}
	d.ports[no] = p.Name()
	d.log = append(d.log, fmt.Sprintf("add %d %s", no, p.Name()))
	return nil
}

func (d *fakeDP) DelPort(no uint32) error {
	d.log = append(d.log, fmt.Sprintf("del %d %s", no, d.ports[no]))
	delete(d.ports, no)
	return nil
}
func (d *fakeDP) Stats() datapath.Stats { return datapath.Stats{Hit: 3, Missed: 4} }

type fakeOF struct {
	cfgs []ofproto.BridgeConfig
}

func (f *fakeOF) Reconfigure(c ofproto.BridgeConfig) { f.cfgs = append(f.cfgs, c) }
func (f *fakeOF) FDBShow() string                    { return " port  VLAN  MAC                Age\n" }
func (f *fakeOF) FDBFlush()                          {}
func (f *fakeOF) FDBStatsShow() string               { return "" }
func (f *fakeOF) FDBStatsClear()                     {}
func (f *fakeOF) FDBAdd(string, uint16, flow.MAC) (string, error) {
	return "", nil
}
func (f *fakeOF) FDBDel(uint16, flow.MAC) error       { return nil }
func (f *fakeOF) FlowMod(*ofp.FlowMod) *ofp.Error     { return &ofp.Error{Errno: ofp.EPerm} }
func (f *fakeOF) Flows() []ofp.FlowStats              { return nil }
func (f *fakeOF) EachFlow(func(*ofp.FlowStats))       {}
func (f *fakeOF) Barrier()                            {}
func (f *fakeOF) SetAsync(ofproto.AsyncSink)          {}
func (f *fakeOF) PacketOut(*ofp.PacketOut) *ofp.Error { return nil }
func (f *fakeOF) Resume(*ofp.Resume) *ofp.Error       { return nil }
func (f *fakeOF) SetFailOpen(bool)                    {}

type fakeBacker struct {
	brs map[string]*fakeOF
	// slow and sent: SlowProtocols (bond_lacp_test.go).
	slow func(dpPort uint32, frame []byte)
	sent []sentFrame
}

func (b *fakeBacker) AddBridge(name string) OFBridge {
	of := &fakeOF{}
	b.brs[name] = of
	return of
}
func (b *fakeBacker) DelBridge(name string) { delete(b.brs, name) }

type fakeDevs struct {
	exist map[string]int // name -> ifindex of existing system interfaces
	open  map[string]*fakePort
	macs  map[string]net.HardwareAddr
	mtus  map[string]int
	vhost map[string]*fakeVhost
	// noCarrier are the interfaces without carrier.
	noCarrier map[string]bool
}

func (f *fakeDevs) SockBufDefaults() (int, int, error) { return 212992, 212992, nil }

func (f *fakeDevs) Open(req OpenRequest) (netdev.Port, error) {
	name, typ, cfg := req.Name, req.Type, req.Config
	if KindOf(typ) == KindVhost {
		return f.openVhost(req)
	}
	if typ == TypeSystem {
		if _, ok := f.exist[name]; !ok {
			return nil, fmt.Errorf("open %s: %w", name, syscall.ENODEV)
		}
	}
	if p, ok := f.open[name]; ok && !p.closed {
		return nil, syscall.EBUSY
	}
	p := &fakePort{name: name, cfg: cfg}
	f.open[name] = p
	if typ == TypeSystem {
		p.rcv, p.snd = 212992, 212992
		if cfg.SockBufSize > 0 {
			p.rcv, p.snd = 2*cfg.SockBufSize, 2*cfg.SockBufSize
		}
		return fakeSysPort{p}, nil
	}
	return p, nil
}

func (f *fakeDevs) Link(name string) (netdev.LinkInfo, error) {
	idx, ok := f.exist[name]
	if !ok {
		if _, tap := f.open[name]; !tap {
			return netdev.LinkInfo{}, syscall.ENODEV
		}
	}
	return netdev.LinkInfo{Index: idx, MTU: 1500, MAC: f.macs[name], AdminUp: true, OperUp: !f.noCarrier[name]}, nil
}

func (f *fakeDevs) SetMTU(name string, mtu int) error { f.mtus[name] = mtu; return nil }
func (f *fakeDevs) SetMAC(name string, mac net.HardwareAddr) error {
	f.macs[name] = mac
	return nil
}

type testLog struct{ lines []string }

func (l *testLog) Errorf(f string, a ...any) { l.lines = append(l.lines, "ERR|"+fmt.Sprintf(f, a...)) }
func (l *testLog) Warnf(f string, a ...any)  { l.lines = append(l.lines, "WARN|"+fmt.Sprintf(f, a...)) }
func (l *testLog) Infof(f string, a ...any)  { l.lines = append(l.lines, "INFO|"+fmt.Sprintf(f, a...)) }
func (l *testLog) Debugf(f string, a ...any) {}

type harness struct {
	sw     *Switch
	dp     *fakeDP
	backer *fakeBacker
	devs   *fakeDevs
	log    *testLog
}

func newHarness() *harness {
	h := &harness{
		dp:     &fakeDP{ports: map[uint32]string{}},
		backer: &fakeBacker{brs: map[string]*fakeOF{}},
		devs: &fakeDevs{exist: map[string]int{"p1": 11, "p2": 12, "p3": 13}, open: map[string]*fakePort{},
			macs: map[string]net.HardwareAddr{}, mtus: map[string]int{}},
		log: &testLog{},
	}
	h.sw = NewSwitch(h.dp, h.backer, h.devs, h.log, nil)
	return h
}

// db builds database rows: bridges maps a bridge name to its ports, each
// "name" or "name:type" or "name:type:key=value".
type db struct {
	rows Rows
	n    int
}

func (d *db) uuid() string {
	d.n++
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", d.n, d.n)
}

func (d *db) bridge(name string, ports ...string) *vswitchd.Bridge {
	br := vswitchd.Bridge{UUID: d.uuid(), Name: name}
	for _, p := range append([]string{name + ":internal"}, ports...) {
		f := strings.SplitN(p, ":", 3)
		ifc := vswitchd.Interface{UUID: d.uuid(), Name: f[0]}
		if len(f) > 1 {
			ifc.Type = f[1]
		}
		if len(f) > 2 {
			k, v, _ := strings.Cut(f[2], "=")
			ifc.Options = map[string]string{k: v}
		}
		port := vswitchd.Port{UUID: d.uuid(), Name: f[0], Interfaces: []string{ifc.UUID}}
		d.rows.Interfaces = append(d.rows.Interfaces, ifc)
		d.rows.Ports = append(d.rows.Ports, port)
		br.Ports = append(br.Ports, port.UUID)
	}
	d.rows.Bridges = append(d.rows.Bridges, br)
	if len(d.rows.OpenVSwitch) == 0 {
		d.rows.OpenVSwitch = []vswitchd.OpenvSwitch{{UUID: d.uuid()}}
	}
	d.rows.OpenVSwitch[0].Bridges = append(d.rows.OpenVSwitch[0].Bridges, br.UUID)
	d.rows.OpenVSwitch[0].NextCfg++
	return &d.rows.Bridges[len(d.rows.Bridges)-1]
}

func (d *db) iface(name string) *vswitchd.Interface {
	for i := range d.rows.Interfaces {
		if d.rows.Interfaces[i].Name == name {
			return &d.rows.Interfaces[i]
		}
	}
	return nil
}

func (d *db) port(name string) *vswitchd.Port {
	for i := range d.rows.Ports {
		if d.rows.Ports[i].Name == name {
			return &d.rows.Ports[i]
		}
	}
	return nil
}

func statusOf(r Report, uuid string) IfaceStatus {
	for _, s := range r.Ifaces {
		if s.UUID == uuid {
			return s
		}
	}
	return IfaceStatus{UUID: "missing"}
}

func TestApplyAndReport(t *testing.T) {
	h := newHarness()
	var d db
	d.bridge("br0", "p1", "nosuchdev", "x:foobar", "i1:internal", "pa:patch:peer=pb", "pc:patch")
	d.bridge("br1", "pb:patch:peer=pa")
	want := Build(d.rows)
	h.sw.Apply(want)
	r := h.sw.Report(want)

	cases := []struct {
		name   string
		ofport int
		err    string
	}{
		{"br0", 65534, ""},
		{"p1", 2, ""},
		{"nosuchdev", -1, "could not open network device nosuchdev (No such device)"},
		{"x", -1, "could not open network device x (Address family not supported by protocol)"},
		{"i1", 1, ""},
		{"pa", 3, ""},
		{"pc", -1, "pc: patch type requires valid 'peer' argument"},
		{"br1", 65534, ""},
		{"pb", 1, ""},
	}
	for _, c := range cases {
		st := statusOf(r, d.iface(c.name).UUID)
		if st.OFPort != c.ofport || st.Error != c.err {
			t.Errorf("%s: ofport %d error %q, want %d %q", c.name, st.OFPort, st.Error, c.ofport, c.err)
		}
	}
	if state, _ := h.sw.State("nosuchdev"); state != StateMissing {
		t.Errorf("nosuchdev is %v, want missing", state)
	}
	if state, _ := h.sw.State("x"); state != StateFailed {
		t.Errorf("x is %v, want failed", state)
	}

	show := h.sw.DpifShow()
	wantShow := `netdev@ovs-netdev: hit:3 missed:4
  br0:
    br0 65534/1: (tap)
    i1 1/3: (tap)
    p1 2/4: (system)
    pa 3/none: (patch: peer=pb)
  br1:
    br1 65534/2: (tap)
    pb 1/none: (patch: peer=pa)
`
	if show != wantShow {
		t.Errorf("dpif/show:\n%s\nwant:\n%s", show, wantShow)
	}

	// Idempotent: nothing touched the second time.
	ops := len(h.dp.log)
	ofs := len(h.backer.brs["br0"].cfgs)
	h.sw.Apply(Build(d.rows))
	if len(h.dp.log) != ops || len(h.backer.brs["br0"].cfgs) != ofs {
		t.Errorf("second Apply changed something: %v", h.dp.log[ops:])
	}
	if _, err := h.sw.FDBShow("nosuch"); err == nil || err.Error() != "no such bridge" {
		t.Errorf("FDBShow(nosuch) = %v", err)
	}
}

func TestAddRemoveTouchesOnlyChange(t *testing.T) {
	h := newHarness()
	var d db
	br := d.bridge("br0", "p1", "p2")
	h.sw.Apply(Build(d.rows))
	base := len(h.dp.log)

	// Add p3: one datapath operation, others untouched.
	ifc := vswitchd.Interface{UUID: d.uuid(), Name: "p3"}
	port := vswitchd.Port{UUID: d.uuid(), Name: "p3", Interfaces: []string{ifc.UUID}}
	d.rows.Interfaces = append(d.rows.Interfaces, ifc)
	d.rows.Ports = append(d.rows.Ports, port)
	br.Ports = append(br.Ports, port.UUID)
	h.sw.Apply(Build(d.rows))
	if got := h.dp.log[base:]; len(got) != 1 || got[0] != "add 4 p3" {
		t.Fatalf("adding p3 did %v", got)
	}

	// Remove p2: one datapath operation, its number is reused later.
	br.Ports = slicesDelete(br.Ports, d.port("p2").UUID)
	h.sw.Apply(Build(d.rows))
	if got := h.dp.log[base+1:]; len(got) != 1 || got[0] != "del 3 p2" {
		t.Fatalf("removing p2 did %v", got)
	}
	if !h.devs.open["p2"].closed {
		t.Errorf("p2 not closed")
	}

	// VLAN change reconfigures OpenFlow but not the datapath.
	tag := 10
	d.port("p1").Tag = &tag
	h.sw.Apply(Build(d.rows))
	if len(h.dp.log) != base+2 {
		t.Errorf("VLAN change touched the datapath: %v", h.dp.log[base+2:])
	}
	cfgs := h.backer.brs["br0"].cfgs
	last := cfgs[len(cfgs)-1]
	for _, p := range last.Ports {
		if p.Name == "p1" && p.Tag != 10 {
			t.Errorf("p1 tag %d", p.Tag)
		}
	}
}

func slicesDelete(s []string, v string) []string {
	var out []string
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}

func TestOFPortStability(t *testing.T) {
	var d db
	d.bridge("br0", "p1", "p2", "p3")
	req := 10
	d.iface("p3").OfportRequest = &req
	// As stored by a previous run: p2 had 5, p1 had 7.
	five, seven := 5, 7
	d.iface("p2").Ofport = &five
	d.iface("p1").Ofport = &seven

	h := newHarness()
	want := Build(d.rows)
	h.sw.Apply(want)
	r := h.sw.Report(want)
	for name, n := range map[string]int{"p1": 7, "p2": 5, "p3": 10} {
		if got := statusOf(r, d.iface(name).UUID).OFPort; got != n {
			t.Errorf("%s ofport %d, want %d", name, got, n)
		}
	}

	// A duplicate request: the second gets another number and the switch
	// keeps going.
	d.iface("p2").OfportRequest = &req
	want = Build(d.rows)
	h.sw.Apply(want)
	r = h.sw.Report(want)
	if a, b := statusOf(r, d.iface("p2").UUID).OFPort, statusOf(r, d.iface("p3").UUID).OFPort; a == b || a <= 0 || b != 10 {
		t.Errorf("duplicate ofport_request gave p2 %d p3 %d", a, b)
	}
}

func TestLinkGoneAndBack(t *testing.T) {
	h := newHarness()
	var d db
	d.bridge("br0", "p1", "p2")
	want := Build(d.rows)
	h.sw.Apply(want)
	ofport := statusOf(h.sw.Report(want), d.iface("p1").UUID).OFPort

	delete(h.devs.exist, "p1")
	if !h.sw.LinkChanged("p1", 11, false) {
		t.Fatal("LinkChanged(gone) = false")
	}
	st := statusOf(h.sw.Report(want), d.iface("p1").UUID)
	if st.Error == "" || st.Link == nil || st.Link.LinkUp {
		t.Errorf("gone p1 reported %+v", st)
	}
	if state, _ := h.sw.State("p1"); state != StateMissing {
		t.Errorf("p1 %v", state)
	}
	h.sw.Reapply()
	if state, _ := h.sw.State("p1"); state != StateMissing {
		t.Errorf("p1 %v after reapply while gone", state)
	}

	h.devs.exist["p1"] = 21
	delete(h.devs.open, "p1")
	if !h.sw.LinkChanged("p1", 21, true) {
		t.Fatal("LinkChanged(back) = false")
	}
	h.sw.Reapply()
	st = statusOf(h.sw.Report(want), d.iface("p1").UUID)
	if st.Error != "" || st.OFPort != ofport {
		t.Errorf("p1 back: %+v, want ofport %d", st, ofport)
	}
	// A link event for a running port with the same ifindex is nothing,
	// nor is a stale one about a device it replaced.
	if h.sw.LinkChanged("p2", 12, true) || h.sw.LinkChanged("p2", 99, false) {
		t.Error("LinkChanged(p2 unchanged) = true")
	}
	if h.sw.Rescan() {
		t.Error("Rescan with nothing changed = true")
	}
	// Lost notifications: a rescan finds the device gone.
	delete(h.devs.exist, "p2")
	if !h.sw.Rescan() || h.sw.Missing() == false {
		t.Error("Rescan did not find p2 gone")
	}
}

func TestBridgeAddress(t *testing.T) {
	mac := MACFromUUID("0a02806a-8c8f-45fd-a5bb-698b0ab2264e")
	if mac.String() != "6a:80:02:0a:fd:45" {
		t.Errorf("MACFromUUID = %s", mac)
	}
	h := newHarness()
	var d db
	br := d.bridge("br0")
	br.OtherConfig = map[string]string{"datapath-id": "00000000000000aa"}
	want := Build(d.rows)
	h.sw.Apply(want)
	r := h.sw.Report(want)
	if len(r.Bridges) != 1 || r.Bridges[0].DatapathID != "00000000000000aa" {
		t.Errorf("bridges %+v", r.Bridges)
	}
	br.OtherConfig = map[string]string{"datapath-id": "nonsense", "mac-aging-time": "x"}
	want = Build(d.rows)
	if len(want.Problems) != 2 {
		t.Errorf("problems %q", want.Problems)
	}
	h.sw.Apply(want)
	r = h.sw.Report(want)
	if got, exp := r.Bridges[0].DatapathID, "0000"+strings.ReplaceAll(MACFromUUID(br.UUID).String(), ":", ""); got != exp {
		t.Errorf("datapath ID %s, want %s", got, exp)
	}
	if h.devs.macs["br0"].String() != MACFromUUID(br.UUID).String() {
		t.Errorf("br0 MAC %s", h.devs.macs["br0"])
	}
}

func TestNameClash(t *testing.T) {
	h := newHarness()
	var d db
	d.bridge("br0", "br1:internal", "p1")
	d.bridge("br1")
	want := Build(d.rows)
	h.sw.Apply(want)
	r := h.sw.Report(want)
	var clash IfaceStatus
	for _, ifc := range d.rows.Interfaces {
		if ifc.Name == "br1" && statusOf(r, ifc.UUID).OFPort == -1 {
			clash = statusOf(r, ifc.UUID)
		}
	}
	if clash.Error != "could not add network device br1 to ofproto (File exists)" {
		t.Errorf("clash %+v", clash)
	}
	if state, _ := h.sw.State("p1"); state != StateAttached {
		t.Errorf("p1 %v", state)
	}
}

func TestPortStateString(t *testing.T) {
	for s, want := range map[PortState]string{StateNew: "new", StateAttached: "attached", StateMissing: "missing", StateFailed: "failed", 9: "unknown"} {
		if s.String() != want {
			t.Errorf("%d: %s", s, s)
		}
	}
}
