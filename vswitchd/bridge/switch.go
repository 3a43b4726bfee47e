// Package bridge owns the running switch: it diffs an immutable Desired
// snapshot of the database against the bridges, ports and interfaces that
// run, applies the difference to the datapath and the per-bridge OpenFlow
// switches, and reports back what the database should show (ofport, error,
// status, statistics, cur_cfg).
package bridge

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/netdev"
	"github.com/govs/govs/netdev/tunnel"
	"github.com/govs/govs/netdev/vhostuser"
	"github.com/govs/govs/vswitchd/ofproto"
	"github.com/govs/govs/vswitchd/ofproto/connmgr"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Switch is the running state. All methods are safe for concurrent use.
type Switch struct {
	dp      Datapath
	backer  Backer
	devs    Devices
	log     Logger
	counter func(name string) // coverage counter bump; may be nil

	mu sync.Mutex // guards everything below
	// bridges by name.
	bridges map[string]*runBridge
	// ifaces by interface name, over all bridges (names are global, as
	// kernel interface names are), bridges' local ports included.
	ifaces map[string]*iface
	// dpPorts holds the datapath port numbers in use.
	dpPorts map[uint32]bool
	// last is the snapshot most recently applied; nil before the first.
	last *Desired
	// sockBuf and tso are the global userspace-sock-buf-size (0: the
	// kernel default) and userspace-tso-enable that run: the last valid
	// values the database held.
	sockBuf int
	tso     bool
	// pmdMask is the pmd-cpu-mask applied ("" for none).
	pmdMask string
	// ofRundir is where bridges serve OpenFlow (<bridge>.mgmt), "" for
	// nowhere; ofLog is the connections' logger (ServeOpenFlow).
	ofRundir  string
	ofLog     connmgr.Logger
	ofRconn   connmgr.Logger
	ofChanged chan struct{} // see OpenFlowChanged
	// bonds are the running bonds by port name; bondWake: BondsChanged.
	bonds    map[string]*bondRun
	bondWake chan struct{}
	// vports are the running tunnel vports by name; router is the
	// route table tunnel status reads (SetRouter), nil for none.
	vports map[string]*vportRun
	router *tunnel.Router
	// lacpRx queues bond members' slow protocols frames (slowFrame);
	// lacpWarned is when lacpWarn last logged.
	lacpRx     chan lacpFrame
	lacpWarned time.Time
	// stps are the bridges' running STPs by bridge name; stpRx queues
	// the BPDUs ports received (queueBPDU), stpWake is STPChanged and
	// stpTimer its next tick; stpLog is the stp module's logger (nil:
	// log); stpProblems are the configuration errors last logged;
	// stpWarned is when stpWarn last logged.
	stps        map[string]*stpRun
	stpRx       chan stpFrame
	stpWake     chan struct{}
	stpTimer    *time.Timer
	stpLog      Logger
	stpProblems []string
	stpWarned   time.Time
	// rstps are the bridges running RSTP by name; rstpRx queues the
	// BPDUs their ports receive (queueBPDU); rstpWake:
	// RSTPChanged.
	rstps    map[string]*rstpRun
	rstpRx   chan stpFrame
	rstpWake chan struct{}
	// mirrorStats are the mirrors' statistics columns by Mirror UUID,
	// as Refresh last read them.
	mirrorStats map[string]map[string]int
}

// SetRouter gives tunnel ports the route table their status reads.
func (s *Switch) SetRouter(r *tunnel.Router) {
	s.mu.Lock()
	s.router = r
	s.mu.Unlock()
}

type runBridge struct {
	name string
	of   OFBridge
	// ofports maps OpenFlow port numbers to the interface holding them.
	ofports map[int]string
	mac     net.HardwareAddr
	dpid    uint64
	pushed  *ofproto.BridgeConfig
	// dpType is Bridge.datapath_type, "system" when empty (OVS's
	// ofproto type, which dpif/dump-dps shows).
	dpType string
	// mgmt serves the bridge's management socket; nil if none.
	mgmt *connmgr.Manager
}

// iface is one interface of the running switch.
type iface struct {
	spec   IfaceSpec
	bridge string
	port   PortSpec // the Port row it belongs to (Ifaces unused)
	local  bool     // the bridge's own port, OFPP_LOCAL
	state  PortState
	err    string // Interface.error; "" when fine
	ofport int    // -1 when it has none
	dpPort uint32 // 0 when not in the datapath (patch ports, detached)
	// vport is a tunnel port's datapath vport (dpPort its number);
	// router the route table its status reads.
	vport  string
	router *tunnel.Router
	// attachedAt is when the interface last became attached (the
	// OpenFlow port's duration).
	attachedAt time.Time
	dev        netdev.Port
	// link is the kernel state as last read; nil when unknown.
	link       *netdev.LinkInfo
	linkResets int
	stats      netdev.Stats

	// sockBufReq is the interface's own userspace-sock-buf-size that
	// runs (the last valid one), 0 to follow the global setting.
	sockBufReq int
	// underlay is set while ifc is a system port on a bridge a tunnel's
	// route leaves by (syncUnderlays).
	underlay bool
	// The settings dev was opened or last configured with, and what it
	// negotiated; meaningless while dev is nil.
	tso            bool
	sockBuf        int // 0: the kernel default
	rxQueues       int // receive queues (options:n_rxq), 0 meaning 1
	offloads       netdev.Offloads
	rcvBuf, sndBuf int // getsockopt's sizes; 0 when it has no socket

	// ofConfig holds the OFPPC_* bits OFPT_PORT_MOD set, but
	// OFPPC_PORT_DOWN, which is the device's administrative state.
	ofConfig uint32

	// A vhost-user port's live options as they run, its counters as
	// last read and whether its front-end ran a queue then.
	zeroCopy  bool
	txRetries int
	vhostCtr  vhostuser.Counters
	vhostUp   bool

	// policing is the ingress policing the datapath port runs (zero:
	// none), policed what it dropped as last read; policingWarned is
	// set once a policing the port cannot run was logged.
	policing       datapath.Policing
	policed        uint64
	policingWarned bool
	// qos is the QoS the datapath port runs (since qosAt), qosPoliced
	// what its egress-policer dropped as last read; qosWarned as
	// policingWarned.
	qos        QoSSpec
	qosAt      time.Time
	qosPoliced uint64
	qosWarned  bool
}

// kind is how ifc runs (its driver's kind).
func (ifc *iface) kind() PortKind { return ifc.driver().kind() }

// NewSwitch returns an empty switch over the given datapath. counter, if
// not nil, is called with the name of each coverage event.
func NewSwitch(dp Datapath, backer Backer, devs Devices, log Logger, counter func(string)) *Switch {
	s := &Switch{
		dp: dp, backer: backer, devs: devs, log: log, counter: counter,
		bridges: map[string]*runBridge{},
		ifaces:  map[string]*iface{},
		dpPorts: map[uint32]bool{},
		tso:     true,

		ofChanged: make(chan struct{}, 1),
		bonds:     map[string]*bondRun{},
		bondWake:  make(chan struct{}, 1),
		lacpRx:    make(chan lacpFrame, lacpQueueLen),
		stps:      map[string]*stpRun{},
		rstps:     map[string]*rstpRun{},
		rstpRx:    make(chan stpFrame, stpQueueLen),
		rstpWake:  make(chan struct{}, 1),
		stpRx:     make(chan stpFrame, stpQueueLen),
		stpWake:   make(chan struct{}, 1),
	}
	if sp, ok := backer.(SlowProtocols); ok {
		sp.SetSlowProtocolsHandler(s.slowFrame)
	}
	return s
}

func (s *Switch) count(name string) {
	if s.counter != nil {
		s.counter(name)
	}
}

// want is one interface the snapshot asks for.
type want struct {
	bridge string
	port   PortSpec
	spec   IfaceSpec
	local  bool
	// err, if set, is a configuration error found while collecting.
	err string
}

// Apply makes the running switch match d. It is idempotent: applying the
// same snapshot again touches nothing. The caller logs d.Problems.
func (s *Switch) Apply(d *Desired) {
	// After mu is released: controller connections may wait for it.
	defer s.applyOpenFlow()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count("bridge_reconfigure")
	s.last = d
	datapath.SetDummyName(allDummy(d))
	if !d.SockBufSize.Bad {
		s.sockBuf = d.SockBufSize.Value
	}
	if !d.TSO.Bad {
		s.tso = d.TSO.Value
	}
	if !d.BundleIdle.Bad {
		connmgr.SetBundleIdleTimeout(d.BundleIdle.Value)
	}
	s.applyPMDCPUs(d)
	if fs, ok := s.dp.(FlowSettings); ok {
		if !d.FlowLimit.Bad {
			fs.SetFlowLimit(d.FlowLimit.Value)
		}
		if !d.MaxIdle.Bad {
			fs.SetMaxIdle(d.MaxIdle.Value)
		}
	}

	if cs, ok := s.backer.(CTSettings); ok {
		for _, err := range cs.SetCTZonePolicies(d.CTZones) {
			s.log.Warnf("%v", err)
		}
	}

	wants, order := collect(d)

	// Removals first, so that names, port numbers and OpenFlow numbers are
	// free for what replaces them.
	for name, ifc := range s.ifaces {
		w, ok := wants[name]
		if ok && w.bridge == ifc.bridge && w.local == ifc.local && w.spec.identity() == ifc.spec.identity() {
			continue
		}
		s.remove(ifc)
	}
	brSpecs := map[string]*BridgeSpec{}
	for i := range d.Bridges {
		brSpecs[d.Bridges[i].Name] = &d.Bridges[i]
	}
	for name := range s.bridges {
		if _, ok := brSpecs[name]; !ok {
			s.stopOpenFlow(s.bridges[name])
			s.backer.DelBridge(name)
			delete(s.bridges, name)
			s.log.Infof("bridge %s: deleted", name)
		}
	}
	for _, br := range d.Bridges {
		rb, ok := s.bridges[br.Name]
		if !ok {
			rb = &runBridge{name: br.Name, of: s.backer.AddBridge(br.Name), ofports: map[int]string{}}
			s.bridges[br.Name] = rb
			s.log.Infof("bridge %s: created", br.Name)
			s.startOpenFlow(rb)
		}
		rb.dpType = cmp.Or(br.DatapathType, "system")
	}

	reserved := reservations(wants, order)
	for _, name := range order {
		w := wants[name]
		ifc, ok := s.ifaces[name]
		if !ok {
			ifc = &iface{spec: w.spec, bridge: w.bridge, local: w.local, ofport: -1}
			s.ifaces[name] = ifc
		}
		oldMTU := ifc.spec.MTURequest
		ifc.spec, ifc.port = w.spec, w.port
		if !w.spec.SockBufSize.Bad {
			ifc.sockBufReq = w.spec.SockBufSize.Value
		}
		if w.err != "" {
			s.fail(ifc, StateFailed, w.err)
			continue
		}
		if ifc.state != StateAttached {
			s.attach(ifc, reserved)
		} else {
			ifc.driver().apply(s, ifc, ifc.spec.MTURequest != oldMTU)
		}
		if ifc.state == StateAttached {
			s.applyPolicing(ifc)
			s.applyQoS(ifc)
		}
	}

	for i := range d.Bridges {
		s.pickAddress(s.bridges[d.Bridges[i].Name], &d.Bridges[i])
	}
	// RSTP first: the port states gate the configuration syncBonds
	// pushes, so that a loop never forwards before RSTP runs on it.
	s.syncRSTP()
	s.syncSTP()
	s.syncBonds()
	s.syncUnderlays()
}

// collect lists the interfaces d asks for, by name, and their order of
// attachment: bridge by bridge, the local port first.
func collect(d *Desired) (map[string]want, []string) {
	wants := map[string]want{}
	var order []string
	for _, br := range d.Bridges {
		wants[br.Name] = want{bridge: br.Name, local: true, port: PortSpec{Name: br.Name, Tag: -1},
			spec: IfaceSpec{Name: br.Name, Type: internalType(br.DatapathType)}}
		order = append(order, br.Name)
	}
	for _, br := range d.Bridges {
		for _, p := range br.Ports {
			port := p
			port.Ifaces = nil
			for _, spec := range p.Ifaces {
				if spec.Name == br.Name {
					// The database's row for the local port configures
					// it, whatever its type.
					local := wants[br.Name]
					local.port, local.spec.UUID, local.spec.MTURequest = port, spec.UUID, spec.MTURequest
					local.spec.SockBufSize = spec.SockBufSize
					wants[br.Name] = local
					continue
				}
				if _, clash := wants[spec.Name]; clash {
					// Another bridge's local port has the name; Report
					// tells the database.
					continue
				}
				w := want{bridge: br.Name, port: port, spec: spec, err: spec.ConfigError}
				wants[spec.Name] = w
				order = append(order, spec.Name)
			}
		}
	}
	return wants, order
}

// reservations returns, per bridge, the OpenFlow port numbers that wanted
// interfaces ask for or held before, so that a new interface does not take
// a number an older one is about to get back.
func reservations(wants map[string]want, order []string) map[string]map[int]string {
	r := map[string]map[int]string{}
	for _, name := range order {
		w := wants[name]
		if r[w.bridge] == nil {
			r[w.bridge] = map[int]string{}
		}
		for _, n := range []int{w.spec.OFPortRequest, w.spec.StoredOFPort} {
			if n > 0 && n != LocalOFPort {
				if _, taken := r[w.bridge][n]; !taken {
					r[w.bridge][n] = name
				}
			}
		}
	}
	return r
}

// attach brings ifc up: opens its device, adds it to the datapath and
// gives it an OpenFlow port number. On failure ifc records why.
func (s *Switch) attach(ifc *iface, reserved map[string]map[int]string) {
	rb := s.bridges[ifc.bridge]
	name := ifc.spec.Name
	if !ifc.driver().attach(s, ifc) {
		return
	}

	if ifc.ofport <= 0 {
		ifc.ofport = s.allocOFPort(rb, ifc, reserved[ifc.bridge])
	}
	rb.ofports[ifc.ofport] = name
	ifc.state, ifc.err, ifc.attachedAt = StateAttached, "", time.Now()
	s.count("ofproto_update_port")
	s.log.Infof("bridge %s: added interface %s on port %d", rb.name, name, ifc.ofport)
}

// fail records why ifc does not run. The WARN is logged once per distinct
// error, not at every reconfiguration.
func (s *Switch) fail(ifc *iface, state PortState, msg string) {
	if ifc.state == StateAttached {
		s.detach(ifc)
	}
	if msg != ifc.err {
		s.log.Warnf("%s", msg)
	}
	ifc.state, ifc.err = state, msg
	ifc.link = nil
	if ifc.ofport > 0 && state != StateMissing {
		delete(s.bridges[ifc.bridge].ofports, ifc.ofport)
		ifc.ofport = -1
	}
}

// detach takes ifc out of the datapath; its OpenFlow number stays.
func (s *Switch) detach(ifc *iface) {
	if ifc.dev != nil {
		if err := s.dp.DelPort(ifc.dpPort); err != nil {
			s.log.Warnf("%s: deleting datapath port %d: %v", ifc.spec.Name, ifc.dpPort, err)
		}
		s.count("dpif_port_del")
		delete(s.dpPorts, ifc.dpPort)
		ifc.dev.Close()
		ifc.dev, ifc.dpPort = nil, 0
	}
	if ifc.vport != "" {
		s.releaseVport(ifc)
	}
	ifc.state = StateNew
}

// remove forgets ifc entirely.
func (s *Switch) remove(ifc *iface) {
	wasAttached := ifc.state == StateAttached
	s.detach(ifc)
	if rb := s.bridges[ifc.bridge]; rb != nil && ifc.ofport > 0 {
		delete(rb.ofports, ifc.ofport)
		if wasAttached {
			s.log.Infof("bridge %s: deleted interface %s on port %d", rb.name, ifc.spec.Name, ifc.ofport)
		}
	}
	delete(s.ifaces, ifc.spec.Name)
}

func (s *Switch) allocDPPort() uint32 {
	for n := uint32(1); ; n++ {
		if !s.dpPorts[n] {
			return n
		}
	}
}

// allocOFPort picks ifc's OpenFlow port number: the local port's fixed
// number; else ofport_request if free; else the number the database held
// for it if free; else the lowest number nobody holds or expects.
func (s *Switch) allocOFPort(rb *runBridge, ifc *iface, reserved map[int]string) int {
	if ifc.local {
		return LocalOFPort
	}
	free := func(n int) bool {
		_, used := rb.ofports[n]
		owner, res := reserved[n]
		return !used && (!res || owner == ifc.spec.Name)
	}
	if n := ifc.spec.OFPortRequest; n > 0 {
		if free(n) {
			return n
		}
		s.log.Warnf("bridge %s: interface %s: requested ofport %d is in use by %s", rb.name, ifc.spec.Name, n, rb.ofports[n])
	}
	if n := ifc.spec.StoredOFPort; n > 0 && n < LocalOFPort && free(n) {
		return n
	}
	for n := 1; ; n++ {
		if free(n) {
			return n
		}
	}
}

// applyMTU applies mtu_request, if any, and rereads the link state of a
// kernel interface.
func (s *Switch) applyMTU(ifc *iface) {
	if ifc.spec.MTURequest > 0 && ifc.dev != nil {
		if err := s.devs.SetMTU(ifc.spec.Name, ifc.spec.MTURequest); err != nil {
			// OVS's text (netdev_set_mtu), with the range the device
			// accepts when the kernel says.
			rng := ""
			if l, lerr := s.devs.Link(ifc.spec.Name); lerr == nil && l.MaxMTU > 0 {
				rng = fmt.Sprintf(" (mtu_request %d; the device accepts %d..%d)", ifc.spec.MTURequest, l.MinMTU, l.MaxMTU)
			}
			s.log.Warnf("failed to set MTU for network device %s: %s%s", ifc.spec.Name, Strerror(err), rng)
		}
	}
	if l, err := s.devs.Link(ifc.spec.Name); err == nil {
		ifc.link = &l
	}
}

// pickAddress chooses the bridge's MAC and datapath ID as OVS's bridge.c
// does: other_config:hwaddr, else the lowest universally administered
// unicast MAC among the bridge's system interfaces, else one derived from
// the bridge's UUID; the datapath ID is other_config:datapath-id, else the
// MAC.
func (s *Switch) pickAddress(rb *runBridge, spec *BridgeSpec) {
	mac := spec.HWAddr
	if mac == nil {
		for _, ifc := range s.ifaces {
			if ifc.bridge != rb.name || ifc.local || ifc.state != StateAttached || ifc.link == nil {
				continue
			}
			if src, ok := ifc.driver().(addressSource); !ok || !src.addressSource() {
				continue
			}
			m := ifc.link.MAC
			if len(m) != 6 || m[0]&3 != 0 || isZero(m) {
				continue
			}
			if mac == nil || slices.Compare(m, mac) < 0 {
				mac = m
			}
		}
	}
	if mac == nil {
		mac = MACFromUUID(spec.UUID)
	}
	dpid := spec.DatapathID
	if dpid == 0 {
		for _, b := range mac {
			dpid = dpid<<8 | uint64(b)
		}
	}
	if !slices.Equal(mac, rb.mac) {
		if ifc := s.ifaces[rb.name]; ifc != nil && ifc.state == StateAttached {
			// Not retried on failure: the next change of address does.
			rb.mac = slices.Clone(mac)
			if err := s.devs.SetMAC(rb.name, mac); err != nil {
				s.log.Warnf("bridge %s: setting MAC address to %s failed: %s", rb.name, mac, Strerror(err))
			} else if l, err := s.devs.Link(rb.name); err == nil {
				ifc.link = &l
			}
		}
	}
	if dpid != rb.dpid {
		rb.dpid = dpid
		s.log.Infof("bridge %s: using datapath ID %016x", rb.name, dpid)
	}
}

// MACFromUUID derives a bridge's default MAC from its UUID as OVS does:
// the first six bytes of the UUID as OVS stores it (four host-order
// 32-bit words, here little-endian), marked locally administered unicast.
func MACFromUUID(u string) net.HardwareAddr {
	hex := strings.ReplaceAll(u, "-", "")
	var words [2]uint32
	for i := range words {
		if len(hex) < 8*(i+1) {
			break
		}
		fmt.Sscanf(hex[8*i:8*(i+1)], "%08x", &words[i])
	}
	mac := net.HardwareAddr{
		byte(words[0]), byte(words[0] >> 8), byte(words[0] >> 16), byte(words[0] >> 24),
		byte(words[1]), byte(words[1] >> 8),
	}
	mac[0] = mac[0]&^1 | 2
	return mac
}

func (s *Switch) ofConfig(rb *runBridge, spec *BridgeSpec) ofproto.BridgeConfig {
	cfg := ofproto.BridgeConfig{MACAgingTime: time.Duration(spec.MACAgingTime) * time.Second, MACTableSize: spec.MACTableSize,
		FailSecure: spec.FailSecure, HasControllers: len(spec.Controllers) > 0, FloodVLANs: spec.FloodVLANs,
		Prefixes: spec.Prefixes}
	for _, ifc := range s.ifaces {
		if ifc.bridge != rb.name || ifc.state != StateAttached {
			continue
		}
		pc := ofproto.PortConfig{
			Name: ifc.spec.Name, OFPort: ifc.ofport, DPPort: ifc.dpPort,
			Tag: ifc.port.Tag, Trunks: ifc.port.Trunks, VLANMode: ifc.port.VLANMode,
			NoRecv: ifc.ofConfig&ofp.PortConfigNoRecv != 0, NoFwd: ifc.ofConfig&ofp.PortConfigNoFwd != 0,
			NoFlood:   ifc.ofConfig&ofp.PortConfigNoFlood != 0,
			QueueDSCP: ifc.port.QueueDSCP,
		}
		if !ifc.local {
			pc.PatchPeer, pc.Tunnel = ifc.spec.PatchPeer, ifc.spec.Tunnel
		}
		if b := s.bondOf(ifc); b != nil && b.spec.Single {
			pc.LACP = true
		} else if b != nil {
			pc.Bond, pc.BondSLB, pc.BondTCP = b.name, b.spec.Mode == BondBalanceSLB, b.spec.Mode == BondBalanceTCP
			pc.BondEnabled, pc.BondActive = b.members[ifc.spec.Name].enabled, b.active == ifc.spec.Name
			if b.lacp != nil {
				pc.BondLACP, pc.BondFallbackAB = b.lacp.Status(), b.spec.LACP.FallbackAB
				pc.BondMayEnable = b.members[ifc.spec.Name].carrier
			}
		}
		var stpOn bool
		if pc.Gate, stpOn = s.stpGateOf(ifc); stpOn {
			cfg.SpanningTree = "STP"
		}
		if g, on := s.rstpGateOf(rb.name, ifc.spec.Name); on {
			pc.Gate, cfg.SpanningTree = g, "RSTP"
		}
		cfg.Ports = append(cfg.Ports, pc)
	}
	slices.SortFunc(cfg.Ports, func(a, b ofproto.PortConfig) int { return strings.Compare(a.Name, b.Name) })
	cfg.Mirrors = ofMirrors(spec)
	return cfg
}

// LinkChanged tells the switch that the kernel interface name changed:
// it exists with ifindex, or (present false) the one with ifindex is gone.
// It returns true if the switch needs a reconfiguration (Reapply) and a
// write-back. Notifications may be stale (about a device already replaced),
// so the kernel is asked when the index is not the one the switch uses.
func (s *Switch) LinkChanged(name string, ifindex int, present bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ifc, ok := s.ifaces[name]
	if !ok || ifc.kind() != KindKernel {
		// Only kernel interfaces have links; a vhost-user port named
		// like a kernel interface is not that interface.
		return false
	}
	switch ifc.state {
	case StateAttached:
		if ifc.link == nil || ifc.link.Index == ifindex && present {
			if s.stps[ifc.bridge] != nil {
				// The carrier may have changed: STP disables a port
				// without it.
				s.carrier(ifc, true)
				s.syncSTP()
			}
			if s.bondOf(ifc) != nil {
				// A member's carrier may have changed; the daemon
				// then writes Port.bond_active_slave (BondsChanged).
				s.runBonds(true)
				s.wakeBonds()
			}
			if s.inRSTP(ifc) {
				s.carrier(ifc, true)
				s.wakeRSTP()
			}
			return false
		}
		if ifc.link.Index != ifindex {
			if l, err := s.devs.Link(name); err == nil && l.Index == ifc.link.Index {
				return false
			}
		}
		// Gone, or replaced by a new interface of the same name: the
		// socket is bound to the old one.
		s.fail(ifc, StateMissing, fmt.Sprintf("could not open network device %s (%s)", name, Strerror(syscall.ENODEV)))
		s.pushConfigs()
		return true
	case StateMissing:
		return true
	}
	return false
}

// Rescan checks every running interface against the kernel, for when
// link notifications were lost. It returns true as LinkChanged does.
func (s *Switch) Rescan() bool {
	s.mu.Lock()
	var names []string
	for name, ifc := range s.ifaces {
		if (ifc.state == StateAttached || ifc.state == StateMissing) && ifc.kind() == KindKernel {
			names = append(names, name)
		}
	}
	s.mu.Unlock()
	changed := false
	for _, name := range names {
		l, err := s.devs.Link(name)
		if s.LinkChanged(name, l.Index, err == nil) {
			changed = true
		}
	}
	return changed
}

// Missing reports whether some interface waits for its device, so that
// the caller retries (Reapply) now and then even without a link event.
func (s *Switch) Missing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ifc := range s.ifaces {
		if ifc.state == StateMissing {
			return true
		}
	}
	return false
}

// Reapply applies the last snapshot again, retrying what is not attached.
func (s *Switch) Reapply() {
	s.mu.Lock()
	d := s.last
	s.mu.Unlock()
	if d != nil {
		s.Apply(d)
	}
}

// pushConfigs sends each bridge its OpenFlow configuration if it changed.
// Caller holds mu.
func (s *Switch) pushConfigs() {
	if s.last == nil {
		return
	}
	for i := range s.last.Bridges {
		spec := &s.last.Bridges[i]
		rb := s.bridges[spec.Name]
		if rb == nil {
			continue
		}
		cfg := s.ofConfig(rb, spec)
		if rb.pushed == nil || !reflect.DeepEqual(*rb.pushed, cfg) {
			rb.of.Reconfigure(cfg)
			rb.pushed = &cfg
		}
	}
}

// Close takes every port out of the datapath and removes every bridge.
func (s *Switch) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ifc := range s.ifaces {
		s.remove(ifc)
	}
	for name, rb := range s.bridges {
		s.stopOpenFlow(rb)
		s.backer.DelBridge(name)
		delete(s.bridges, name)
	}
	s.last = nil
	s.syncSTP()
	s.syncBonds()
	s.syncRSTP()
}

// State returns the lifecycle state of the named interface and whether
// the switch knows it.
func (s *Switch) State(name string) (PortState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ifc, ok := s.ifaces[name]
	if !ok {
		return 0, false
	}
	return ifc.state, true
}

// Strerror renders err as OVS's ovs_strerror would: the C library's text
// for an errno, which Go spells in lower case.
func Strerror(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		msg := errno.Error()
		if msg == "" {
			return msg
		}
		return strings.ToUpper(msg[:1]) + msg[1:]
	}
	return err.Error()
}
