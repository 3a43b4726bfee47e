package ofproto

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/flow"
	"github.com/govs/govs/vswitchd/lacp"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// LocalOFPort is OFPP_LOCAL, the OpenFlow number of a bridge's own port.
const LocalOFPort = 65534

// BridgeConfig is one bridge's configuration, as the daemon derives it
// from the database.
type BridgeConfig struct {
	// MACAgingTime is other_config:mac-aging-time; 0 means the default
	// (300 s). OVS keeps it within 15 s..3600 s, in whole seconds.
	MACAgingTime time.Duration
	// MACTableSize is other_config:mac-table-size; 0 means the default
	// (8192, as OVS 3.1). OVS keeps it within 10..1000000.
	MACTableSize int
	// FloodVLANs is Bridge.flood_vlans: on these VLANs NORMAL learns no
	// MAC and floods every packet (OVS's is_learning_vlan). A change
	// flushes the MAC table, as OVS's.
	FloodVLANs []int
	// ForwardBPDU is other_config:forward-bpdu: NORMAL forwards frames
	// to reserved multicast addresses (01:80:c2:00:00:0x, ...) instead
	// of dropping them.
	ForwardBPDU bool
	// FailSecure is fail_mode=secure: the bridge starts with no flows
	// (standalone: with "priority=0 actions=NORMAL"), so it drops every
	// packet until flows are added. A change of mode flushes the flow
	// tables, as OVS's.
	FailSecure bool
	// HasControllers: Bridge.controller names controllers. A bridge with
	// controllers starts with no flows either, and gaining or losing its
	// controllers flushes the tables (OVS's connmgr_set_controllers).
	HasControllers bool
	// Ports are the bridge's ports, local port included; NORMAL floods
	// in this order.
	Ports []PortConfig
	// Mirrors are the bridge's port mirrors, at most MaxMirrors.
	Mirrors []MirrorConfig
	// SpanningTree names the spanning tree protocol the bridge runs
	// ("STP", "RSTP"), "" for none. With one, BPDUs never enter the
	// pipeline (gate.go) and PortConfig.Gate applies.
	SpanningTree string
	// Prefixes are the fields (ParsePrefixes') the tables keep prefix
	// tries on, of those configured otherwise than OVS's default (nw_dst,
	// nw_src); none for an empty list. A change rebuilds the tries.
	Prefixes map[uint8][]string
}

// PortConfig is one interface of a bridge: a port, or a member of a bond.
type PortConfig struct {
	// Name is the interface name.
	Name string
	// OFPort is the OpenFlow port number; LocalOFPort for the local port.
	OFPort int
	// DPPort is the datapath port number; 0 for a patch port.
	DPPort uint32
	// PatchPeer is, for type=patch, the peer interface (options:peer).
	PatchPeer string
	// Tunnel is a tunnel port's configuration, nil for other types;
	// DPPort is then its vport, which tunnels of one kind and UDP port
	// share.
	Tunnel *TunnelConfig
	// Tag is the access or native VLAN, -1 if none.
	Tag int
	// Trunks are the trunked VLANs; empty means all.
	Trunks []int
	// VLANMode is "", "access", "trunk", "native-tagged" or
	// "native-untagged", with ovs-vswitchd.conf.db(5)'s meaning: "" is
	// access if Tag is set, trunk otherwise.
	VLANMode string
	// NoRecv, NoFwd and NoFlood are the port's OpenFlow configuration
	// (OFPT_PORT_MOD): drop what it receives, send it nothing, leave it
	// out of floods.
	NoRecv, NoFwd, NoFlood bool
	// Bond is the bond (Port) the interface is a member of, "" if it is a
	// port by itself. NORMAL treats a bond's members as one port; they
	// share its VLAN configuration.
	Bond string
	// BondSLB: the bond is balance-slb (members chosen by source MAC and
	// VLAN), else active-backup.
	BondSLB bool
	// BondTCP: the bond is balance-tcp (members chosen by a hash of the
	// L2-L4 headers; only with LACP negotiated).
	BondTCP bool
	// BondLACP is the bond's LACP status. A member of a bond running LACP
	// hands what it receives of the slow protocols to the handler of
	// SetSlowProtocolsHandler, never to the pipeline.
	BondLACP lacp.Status
	// BondFallbackAB is lacp-fallback-ab: without a partner the bond runs
	// active-backup rather than dropping everything.
	BondFallbackAB bool
	// BondMayEnable: LACP lets the member carry traffic, though the bond
	// has not enabled it yet (it accepts what the member receives).
	BondMayEnable bool
	// LACP: the port, of one interface, runs LACP: what it receives of
	// the slow protocols goes to the handler of SetSlowProtocolsHandler;
	// the rest is forwarded whatever LACP says, as OVS's.
	LACP bool
	// BondEnabled: the member may carry traffic; BondActive: it is the
	// bond's active member (at most one per bond).
	BondEnabled, BondActive bool
	// Gate is what the bridge's spanning tree lets the port do; GateOpen
	// without one.
	Gate PortGate
	// QueueDSCP are the DSCPs (6 bits) of the port's QoS queues that
	// have one, by queue id: what leaves the port in such a queue
	// (set_queue) has its IP DSCP rewritten (OVS's set_queues and
	// compose_output_action__).
	QueueDSCP map[uint32]uint8
}

// vlanMode is a port's VLAN mode (OVS's enum port_vlan_mode).
type vlanMode uint8

const (
	modeTrunk vlanMode = iota
	modeAccess
	modeNativeTagged
	modeNativeUntagged
)

func (m vlanMode) String() string {
	switch m {
	case modeTrunk:
		return "trunk"
	case modeAccess:
		return "access"
	case modeNativeTagged:
		return "native-tagged"
	case modeNativeUntagged:
		return "native-untagged"
	}
	return "vlan-mode(" + strconv.Itoa(int(m)) + ")"
}

// vlanSet is a set of VLAN IDs.
type vlanSet [4096 / 64]uint64

func (s *vlanSet) has(vid uint16) bool { return s[vid/64]&(1<<(vid%64)) != 0 }
func (s *vlanSet) set(vid uint16)      { s[vid/64] |= 1 << (vid % 64) }
func (s *vlanSet) clear(vid uint16)    { s[vid/64] &^= 1 << (vid % 64) }

// port is one port of a bridge snapshot, with its VLAN configuration
// resolved as OVS's bridge.c port_configure and ofproto-dpif.c bundle_set
// do. Immutable.
type port struct {
	br        *snapshot
	name      string
	ofport    int
	dpPort    uint32
	patchPeer string
	// tnl is a tunnel port's configuration; nil for other types.
	tnl *TunnelConfig

	mode vlanMode
	// vlan is the access or native VLAN (0 if none); unused in trunk mode.
	vlan uint16
	// trunks are the VLANs a non-access port carries; nil means all.
	trunks *vlanSet
	// noRecv, noFwd, noFlood: PortConfig's.
	noRecv, noFwd, noFlood bool
	// bond is the bond p is a member of, nil if none; enabled: p may
	// carry the bond's traffic.
	bond    *bond
	enabled bool
	// mayEnable: LACP lets the member carry traffic.
	mayEnable bool
	// lacp: the port, not a bond member, runs LACP.
	lacp bool
	// srcMirrors and dstMirrors are the mirrors (bits of snapshot.mirrors)
	// that select what p receives and sends; mirrorOut: p is a mirror's
	// output, which takes no part in forwarding.
	srcMirrors, dstMirrors uint32
	mirrorOut              bool
	// gate is what the spanning tree lets the port do (gate.go).
	gate PortGate
	// dscp is PortConfig.QueueDSCP, by skb_priority (the queue id).
	dscp map[uint32]uint8
}

// bond is the members of one bond, which NORMAL treats as one port named
// after the bond: it learns on the bond and floods to it once.
type bond struct {
	name     string
	slb, tcp bool
	lacp     lacp.Status
	// fallbackAB is lacp-fallback-ab.
	fallbackAB bool
	// members are sorted by name; enabled are those that carry traffic;
	// active is the active member, nil when none is enabled.
	members, enabled []*port
	active           *port
	// hash are the buckets of a balance-slb or balance-tcp bond
	// (bondhash.go); nil for active-backup.
	hash *bondHash
}

// snapshot is an immutable configuration of one bridge, swapped in whole
// by Reconfigure and read by translations without locks.
type snapshot struct {
	br     *Bridge
	ports  []*port
	byName map[string]*port
	idle   int64 // MAC aging, seconds
	max    int   // MAC table size

	forwardBPDU bool
	// tree is BridgeConfig.SpanningTree.
	tree string
	// flood are the VLANs of BridgeConfig.FloodVLANs, nil if none.
	flood *vlanSet
	// byOFPort maps OpenFlow port numbers to ports.
	byOFPort map[int]*port
	// bonds are the bonds by name.
	bonds map[string]*bond
	// mirrors are the port mirrors; a port's mirror bits index them.
	mirrors []*mirror
}

// learned returns the port MAC entries name the port of: a port, or for a
// bond its first member (which has the bond's VLAN configuration).
func (s *snapshot) learned(name string) *port {
	if b := s.bonds[name]; b != nil {
		return b.members[0]
	}
	return s.byName[name]
}

// Bridge is one bridge's switch: its ports, MAC learning table and
// pipeline (NORMAL).
type Bridge struct {
	name string
	// uuid identifies this bridge in continuations (OVS's
	// ofproto->uuid): random, so a restarted switch's are stale.
	uuid   [16]byte
	backer *Backer
	snap   atomic.Pointer[snapshot]
	ml     *macTable
	// clock returns the time since the bridge was made; tests replace
	// it before traffic starts.
	clock func() time.Duration

	// tables are the OpenFlow flow tables translations read.
	tables atomic.Pointer[flowTables]
	// dirty: the tables changed since installed flows were last
	// revalidated for sure (Barrier).
	dirty atomic.Bool
	// failOpen is OVS's fail-open: every packet takes NORMAL, as the
	// fail-open rule OVS adds above all others (fail-open.c).
	failOpen atomic.Bool
	// live are the live OpenFlow ports (SetLivePorts), nil before the
	// first report.
	live atomic.Pointer[map[uint32]bool]
	// pinSink receives packet-ins (nil: none).
	pinSink atomic.Pointer[pinSinkBox]
	// missPin is OVS's miss rule: a table miss sends a packet-in
	// (OFPR_NO_MATCH) for the OpenFlow 1.0-1.2 connections.
	missPin atomic.Bool
	// fragMode is OVS's fragment handling mode (fragmode.go).
	fragMode atomic.Uint32
	// tableMiss are the tables' miss behaviours (ofp.TableMiss*), and
	// tableSet their eviction and vacancy settings (tablemod.go).
	tableMiss  [NumTables]atomic.Uint32
	tableSetMu sync.Mutex
	tableSet   [NumTables]tableSettings
	// tableStats count each table's lookups and matches (OVS's
	// n_matched/n_missed), credited by translations.
	tableStats [NumTables]tableCounters

	flowMu sync.Mutex // serializes changes to tables; guards the fields below
	// failSecure is whether the tables were last reset without the
	// NORMAL flow (fail_mode=secure or controllers).
	failSecure bool
	async      AsyncSink
	// tlv is the Geneve option map of the tun_metadata fields
	// (tlv.go); replaced whole, read without locks.
	tlv atomic.Pointer[ofp.TLVTable]
	// monitor is async if it is a FlowMonitorSink; while recording,
	// changes collects what the current request changed (monitor.go).
	monitor   FlowMonitorSink
	recording bool
	changes   changeLog
	// meters are the OpenFlow meters (meter.go); meterMap publishes
	// their datapath ids to translations.
	meters   map[uint32]*meter
	meterMap atomic.Pointer[map[uint32]uint32]

	// mirrorCounters are the mirrors' counters by MirrorConfig.Key;
	// guarded by backer.mu.
	mirrorCounters map[string]*datapath.Counter
	// bondHashes are the balanced bonds' buckets by bond name; guarded
	// by backer.mu.
	bondHashes map[string]*bondHash
}

func newBridge(b *Backer, name string) *Bridge {
	br := &Bridge{name: name, backer: b, ml: newMACTable()}
	rand.Read(br.uuid[:])
	start := time.Now()
	br.clock = func() time.Duration { return time.Since(start) }
	br.snap.Store(br.newSnapshot(BridgeConfig{}))
	br.resetFlows(false)
	return br
}

// Name returns the bridge's name.
func (br *Bridge) Name() string { return br.name }

// now returns the bridge clock in whole seconds.
func (br *Bridge) now() int64 { return int64(br.clock() / time.Second) }

// Reconfigure swaps in cfg. It is safe while packets flow: translations
// read the old or the new configuration, never a mix, and when it returns
// no packet is forwarded by the old one: every installed flow has been
// translated again (datapath.Revalidate). MAC entries of ports that went
// away or changed VLAN configuration are forgotten.
func (br *Bridge) Reconfigure(cfg BridgeConfig) {
	b := br.backer
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bridges[br.name] != br {
		return // deleted
	}
	old := br.snap.Load()
	s := br.newSnapshot(cfg)
	br.newMirrors(s, cfg.Mirrors)
	br.snap.Store(s)
	b.publish()
	br.flowMu.Lock()
	if noNormal := cfg.FailSecure || cfg.HasControllers; noNormal != br.failSecure {
		br.resetFlows(noNormal)
		br.flowsChanged()
	}
	br.flowMu.Unlock()
	br.setTablePrefixes(cfg.Prefixes)

	// A translation of the old configuration still in flight learns
	// only on ports the new one has unchanged (xlate.learnable), so the
	// clean-up below is final.
	br.ml.mu.Lock()
	br.ml.idle, br.ml.max = s.idle, s.max
	if (s.flood == nil) != (old.flood == nil) || s.flood != nil && *s.flood != *old.flood {
		br.ml.flush()
	}
	for name := range br.ml.ports {
		// A port that became a mirror's output forwards nothing; one
		// the spanning tree stopped learning on forgets its entries; so
		// does one that joined a bond, which learns as the bond now
		// (else a balance-slb bond takes its peer for a loop).
		if np, op := s.learned(name), old.learned(name); np == nil || op == nil || np.learnName() != name || !sameVLANConfig(np, op) ||
			np.mirrorOut != op.mirrorOut || !np.gate.Learns() && op.gate.Learns() {
			br.ml.flushPort(name)
		}
	}
	br.ml.run(br.now())
	br.ml.mu.Unlock()
	b.dp.Revalidate()
}

func (br *Bridge) newSnapshot(cfg BridgeConfig) *snapshot {
	s := &snapshot{br: br, byName: make(map[string]*port, len(cfg.Ports)), byOFPort: make(map[int]*port, len(cfg.Ports)), forwardBPDU: cfg.ForwardBPDU, tree: cfg.SpanningTree}
	idle := int64(cfg.MACAgingTime / time.Second)
	if cfg.MACAgingTime <= 0 {
		idle = DefaultMACAgingTime
	}
	s.idle = min(max(idle, minMACAgingTime), maxMACAgingTime)
	s.max = cfg.MACTableSize
	if s.max <= 0 {
		s.max = DefaultMACTableSize
	}
	s.max = min(max(s.max, minMACTableSize), maxMACTableSize)
	for _, v := range cfg.FloodVLANs {
		if v >= 0 && v <= 4095 {
			if s.flood == nil {
				s.flood = new(vlanSet)
			}
			s.flood.set(uint16(v))
		}
	}
	for _, pc := range cfg.Ports {
		if _, dup := s.byName[pc.Name]; dup {
			br.backer.log.Warnf("bridge %s: port %s configured twice; ignoring the second", br.name, pc.Name)
			continue
		}
		p := br.newPort(s, pc)
		s.ports = append(s.ports, p)
		s.byName[p.name] = p
		s.byOFPort[p.ofport] = p
		if pc.Bond == "" {
			continue
		}
		if s.bonds == nil {
			s.bonds = map[string]*bond{}
		}
		b := s.bonds[pc.Bond]
		if b == nil {
			b = &bond{name: pc.Bond, slb: pc.BondSLB, tcp: pc.BondTCP, lacp: pc.BondLACP, fallbackAB: pc.BondFallbackAB}
			if b.slb || b.tcp {
				b.hash = br.bondHashFor(pc.Bond, b.slb, b.tcp)
			}
			s.bonds[pc.Bond] = b
		}
		p.bond, p.enabled, p.mayEnable = b, pc.BondEnabled, pc.BondMayEnable
		b.members = append(b.members, p)
		if pc.BondEnabled {
			b.enabled = append(b.enabled, p)
			if pc.BondActive {
				b.active = p
			}
		}
	}
	for name, h := range br.bondHashes {
		if b := s.bonds[name]; b == nil || b.hash != h {
			delete(br.bondHashes, name)
		}
	}
	return s
}

func (br *Bridge) newPort(s *snapshot, pc PortConfig) *port {
	p := &port{br: s, name: pc.Name, ofport: pc.OFPort, dpPort: pc.DPPort, patchPeer: pc.PatchPeer, tnl: pc.Tunnel,
		noRecv: pc.NoRecv, noFwd: pc.NoFwd, noFlood: pc.NoFlood, gate: pc.Gate, lacp: pc.LACP, dscp: pc.QueueDSCP}
	if s.tree == "" {
		p.gate = GateOpen
	}
	tag := -1
	if pc.Tag >= 0 && pc.Tag <= 4095 {
		tag = pc.Tag
	}
	switch pc.VLANMode {
	case "access":
		p.mode = modeAccess
	case "trunk":
		p.mode = modeTrunk
	case "native-tagged":
		p.mode = modeNativeTagged
	case "native-untagged":
		p.mode = modeNativeUntagged
	case "":
		if tag >= 0 {
			p.mode = modeAccess
		} else {
			p.mode = modeTrunk
		}
	default:
		br.backer.log.Warnf("port %s: unknown VLAN mode %s, falling back to trunk mode", pc.Name, pc.VLANMode)
		p.mode = modeTrunk
	}
	if p.mode != modeTrunk && tag > 0 {
		p.vlan = uint16(tag)
	}
	var trunks *vlanSet
	if len(pc.Trunks) > 0 {
		trunks = new(vlanSet)
		for _, v := range pc.Trunks {
			if v >= 0 && v <= 4095 {
				trunks.set(uint16(v))
			}
		}
	}
	switch p.mode {
	case modeTrunk:
		p.trunks = trunks
	case modeNativeTagged, modeNativeUntagged:
		// A native port always trunks its native VLAN and never VLAN 0.
		p.trunks = trunks
		if p.vlan != 0 && (trunks == nil || !trunks.has(p.vlan) || trunks.has(0)) {
			t := new(vlanSet)
			if trunks != nil {
				*t = *trunks
			} else {
				for i := range t {
					t[i] = ^uint64(0)
				}
			}
			t.set(p.vlan)
			t.clear(0)
			p.trunks = t
		}
	}
	return p
}

func sameVLANConfig(a, b *port) bool {
	if a.mode != b.mode || a.vlan != b.vlan || (a.trunks == nil) != (b.trunks == nil) {
		return false
	}
	return a.trunks == nil || *a.trunks == *b.trunks
}

// trunksVLAN reports whether a non-access port carries vid tagged.
func (p *port) trunksVLAN(vid uint16) bool {
	return p.mode != modeAccess && (p.trunks == nil || p.trunks.has(vid))
}

// includesVLAN reports whether the port is a member of VLAN vid.
func (p *port) includesVLAN(vid uint16) bool {
	if p.mode == modeAccess {
		return vid == p.vlan
	}
	return p.trunksVLAN(vid)
}

// inputVIDValid reports whether a frame with outer VID vid (0 if untagged
// or priority-tagged) may enter on p.
func (p *port) inputVIDValid(vid uint16) bool {
	switch p.mode {
	case modeAccess:
		return vid == 0
	case modeNativeTagged, modeNativeUntagged:
		if vid == 0 {
			return true
		}
	}
	return p.trunksVLAN(vid)
}

// FDBShow returns the MAC table as `ovs-appctl fdb/show` prints it, least
// recently learned first.
func (br *Bridge) FDBShow() string {
	s := br.snap.Load()
	var b strings.Builder
	b.WriteString(" port  VLAN  MAC                Age\n")
	br.ml.mu.Lock()
	now := br.now()
	expired := br.ml.run(now)
	for e := br.ml.head; e != nil; e = e.links[lruList].next {
		p := s.learned(e.port.name)
		if p == nil {
			continue
		}
		if e.static {
			fmt.Fprintf(&b, "%5s  %4d  %s  static\n", ofportString(p.ofport), e.key.vlan, e.key.mac)
			continue
		}
		fmt.Fprintf(&b, "%5s  %4d  %s  %3d\n", ofportString(p.ofport), e.key.vlan, e.key.mac, now-e.used)
	}
	br.ml.mu.Unlock()
	if expired {
		br.backer.dp.RequestRevalidation()
	}
	return b.String()
}

// FDBFlush forgets every learned MAC (`ovs-appctl fdb/flush`).
func (br *Bridge) FDBFlush() {
	br.ml.mu.Lock()
	changed := br.ml.flush()
	br.ml.mu.Unlock()
	if changed {
		br.backer.dp.RequestRevalidation()
	}
}

// FDBAdd adds a static MAC table entry for mac in vlan on the port with
// interface iface (`ovs-appctl fdb/add`), or makes the entry there static.
// It returns OVS's note when that overrides an entry on another port or a
// learned one.
func (br *Bridge) FDBAdd(iface string, vlan uint16, mac flow.MAC) (string, error) {
	s := br.snap.Load()
	p := s.byName[iface]
	if p == nil {
		return "", errors.New("software error, odp port is present but no ofp port")
	}
	br.ml.mu.Lock()
	prev, wasStatic := br.ml.addStatic(mac, vlan, p.learnName(), br.now())
	br.ml.mu.Unlock()
	br.backer.dp.RequestRevalidation()
	if prev == "" {
		return "", nil
	}
	kind, where := "dynamic", prev
	if wasStatic {
		kind = "static"
	}
	if pp := s.learned(prev); pp != nil {
		where = ofportString(pp.ofport)
	}
	return fmt.Sprintf("Overriding already existing %s entry on %s\n", kind, where), nil
}

// FDBDel removes the static MAC table entry for mac in vlan (`ovs-appctl
// fdb/del`).
func (br *Bridge) FDBDel(vlan uint16, mac flow.MAC) error {
	br.ml.mu.Lock()
	ok := br.ml.delStatic(mac, vlan)
	br.ml.mu.Unlock()
	if !ok {
		return errors.New("could not find static mac entry\n")
	}
	br.backer.dp.RequestRevalidation()
	return nil
}

// FDBStatsShow returns the MAC table counters as `ovs-appctl
// fdb/stats-show` prints them.
func (br *Bridge) FDBStatsShow() string {
	br.ml.mu.Lock()
	if br.ml.run(br.now()) {
		defer br.backer.dp.RequestRevalidation()
	}
	t := br.ml
	s := fmt.Sprintf("Statistics for bridge \"%s\":\n"+
		"  Current/maximum MAC entries in the table: %d/%d\n"+
		"  Current static MAC entries in the table : %d\n"+
		"  Total number of learned MAC entries     : %d\n"+
		"  Total number of expired MAC entries     : %d\n"+
		"  Total number of evicted MAC entries     : %d\n"+
		"  Total number of port moved MAC entries  : %d\n",
		br.name, len(t.entries), t.max, t.statics, t.learned, t.expired, t.evicted, t.moved)
	br.ml.mu.Unlock()
	return s
}

// FDBStatsClear zeroes the MAC table counters (`ovs-appctl
// fdb/stats-clear`).
func (br *Bridge) FDBStatsClear() {
	br.ml.mu.Lock()
	br.ml.learned, br.ml.expired, br.ml.evicted, br.ml.moved = 0, 0, 0, 0
	br.ml.mu.Unlock()
}

// ofportString formats an OpenFlow port number as OVS's
// ofputil_port_to_string does for the numbers a bridge port can have.
func ofportString(n int) string {
	if n == LocalOFPort {
		return "LOCAL"
	}
	return strconv.Itoa(n)
}
