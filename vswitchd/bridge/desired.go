package bridge

import (
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/govs/govs/datapath"
	"github.com/govs/govs/datapath/conntrack"
	"github.com/govs/govs/netdev"
	"github.com/govs/govs/schema/vswitchd"
	"github.com/govs/govs/vswitchd/ofproto"
	"github.com/govs/govs/vswitchd/ofproto/connmgr"
	"github.com/govs/govs/vswitchd/ofproto/ofp"
)

// Interface types govs runs. The database's "" means "system".
const (
	TypeSystem   = "system"
	TypeInternal = "internal"
	TypeTap      = "tap"
)

// Defaults of the MAC learning table (Documentation/ref/ovs-actions.7.rst).
const (
	DefaultMACAgingTime = 300
	DefaultMACTableSize = 8192
)

// LocalOFPort is OFPP_LOCAL, the OpenFlow port of a bridge's own interface.
const LocalOFPort = ofproto.LocalOFPort

// Desired is an immutable snapshot of what the database asks the switch to
// run. Build makes one; nothing modifies it afterwards, so it can be shared
// between the reconciler and the write-back.
type Desired struct {
	// OVSUUID is the Open_vSwitch row, "" before the database has one.
	OVSUUID string
	NextCfg int
	// SockBufSize is other_config:userspace-sock-buf-size in bytes, 0 for
	// the kernel default.
	SockBufSize Option[int]
	// TSO is other_config:userspace-tso-enable, true unless "false".
	TSO Option[bool]
	// FlowLimit is other_config:flow-limit, the most datapath flows
	// (DefaultFlowLimit when unset).
	FlowLimit Option[int]
	// MaxIdle is other_config:max-idle, how long an unused datapath flow
	// lives (DefaultMaxIdle when unset).
	MaxIdle Option[time.Duration]
	// PMDCPUMask is other_config:pmd-cpu-mask as set ("" for none) and
	// PMDCPUs the CPUs it selects, ascending (pmd.go).
	PMDCPUMask string
	PMDCPUs    []int
	// BundleIdle is other_config:bundle-idle-timeout, how long an idle
	// OpenFlow bundle lives (connmgr.DefaultBundleIdleTimeout when unset).
	BundleIdle Option[time.Duration]
	// VhostSockDir is where dpdkvhostuser ports serve their sockets:
	// other_config:vhost-sock-dir under the rundir.
	VhostSockDir string
	// CTZones are the conntrack zones' timeout policies: the ct_zones of
	// the Datapath row datapaths:netdev names.
	CTZones map[uint16]conntrack.TimeoutPolicy
	// Bridges are sorted by name; names are unique.
	Bridges []BridgeSpec
	// Problems are configuration errors that have no Interface row to be
	// reported in; the caller logs them.
	Problems []string
	// Notes are what OVS logs at INFO of the configuration (a table's
	// prefix fields); the caller logs them.
	Notes []string
}

// BridgeSpec is one Bridge row with its ports resolved.
type BridgeSpec struct {
	UUID, Name   string
	DatapathType string
	// HWAddr is other_config:hwaddr, nil if absent or invalid.
	HWAddr net.HardwareAddr
	// DatapathID is other_config:datapath-id (16 hex digits), 0 if absent
	// or invalid.
	DatapathID uint64
	// FailSecure is fail_mode=secure.
	FailSecure   bool
	MACAgingTime int
	MACTableSize int
	// FloodVLANs is Bridge.flood_vlans: NORMAL neither learns nor looks
	// up MACs on these VLANs, it floods them.
	FloodVLANs []int
	// Ports are sorted by name.
	Ports []PortSpec
	// Controllers are the Bridge.controller rows, sorted by target.
	Controllers []ControllerSpec
	// Protocols is Bridge.protocols, 0 for the default (every version).
	Protocols ofp.Versions
	// Mirrors are the Bridge.mirrors rows that run, in UUID order.
	Mirrors []MirrorSpec
	// STP is the bridge's STP configuration, nil unless stp_enable.
	STP *STPSpec
	// RSTP is the bridge's RSTP configuration, nil when it runs none.
	RSTP *RSTPSpec
	// Prefixes are the prefix fields of the tables whose Flow_Table row
	// configures others than OVS's default (ofproto.ParsePrefixes), nil
	// if none does.
	Prefixes map[uint8][]string
}

// ControllerSpec is one Controller row.
type ControllerSpec struct {
	UUID string
	connmgr.Controller
}

// PortSpec is one Port row.
type PortSpec struct {
	UUID, Name string
	// Tag is the access VLAN, -1 for none.
	Tag      int
	Trunks   []int
	VLANMode string
	// QoS is the port's qos, parsed; its zero value is none.
	QoS QoSSpec
	// QueueDSCP are the dscp of its queues that have one, by queue id,
	// whatever QoS type runs (OVS's iface_configure_qos).
	QueueDSCP map[uint32]uint8
	// Ifaces are sorted by name. A port with more than one is a bond.
	Ifaces []IfaceSpec
	// Bond is the bond's configuration; nil unless Ifaces has more than
	// one, or the one runs LACP (Bond.Single).
	Bond *BondSpec
	// STP is the port's STP settings, used when its bridge runs STP.
	STP PortSTPSpec
	// RSTP is the port's RSTP configuration, zero unless its bridge
	// runs RSTP.
	RSTP RSTPPortSpec
}

// IfaceSpec is one Interface row.
type IfaceSpec struct {
	UUID, Name string
	// Type is normalised: "" becomes TypeSystem.
	Type    string
	Options map[string]string
	// OFPortRequest is ofport_request, 0 if unset.
	OFPortRequest int
	// StoredOFPort is the ofport the database holds, so that a restarted
	// switch gives each interface the number it had; 0 if none.
	StoredOFPort int
	// MTURequest is mtu_request, 0 if unset.
	MTURequest int
	// SockBufSize is other_config:userspace-sock-buf-size, 0 if unset:
	// the Open_vSwitch setting applies.
	SockBufSize Option[int]
	// TunnelUDPGSO is a tunnel's other_config:tunnel-udp-gso, false if
	// unset.
	TunnelUDPGSO Option[bool]
	// Policing is ingress_policing_rate/_burst and _kpkts_rate/_burst.
	Policing datapath.Policing
	// ConfigError is the Interface.error its driver's parse found in the
	// options, "" if none.
	ConfigError string

	// The options as the type's driver parsed them (portDriver.parse).

	// VhostPath is a vhost-user interface's socket: the one it serves
	// (dpdkvhostuser) or connects to (dpdkvhostuserclient, "" without
	// options:vhost-server-path).
	VhostPath string
	// ZeroCopy and TxRetries are a vhost-user interface's dq-zero-copy
	// and tx-retries-max.
	ZeroCopy  bool
	TxRetries int
	// RxQueues is a kernel interface's options:n_rxq, 1 if unset.
	RxQueues int
	// AFXDP is an afxdp interface's xdp-mode, use-need-wakeup and n_rxq.
	AFXDP netdev.AFXDPConfig
	// PatchPeer is a patch port's options:peer.
	PatchPeer string
	// DummyRxPcap and DummyTxPcap are a dummy interface's pcap files for
	// the frames it receives and sends (options:rxq_pcap, tx_pcap, or
	// pcap for both), "" for none.
	DummyRxPcap, DummyTxPcap string
	// Tunnel is a tunnel port's options (vxlan, geneve, gre).
	Tunnel *ofproto.TunnelConfig
	// LACPPortID and LACPPortPriority are other_config:lacp-port-id and
	// lacp-port-priority, 0 if absent or not integers (bond_lacp.go).
	LACPPortID, LACPPortPriority int
}

// identity is what, when it changes, requires the interface to be
// re-created rather than reconfigured in place.
func (s IfaceSpec) identity() string {
	keys := make([]string, 0, len(s.Options))
	drv := driverOf(s.Type)
	for k := range s.Options {
		if !drv.live(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	// A server port's socket moves with vhost-sock-dir.
	fmt.Fprintf(&b, "%s|%d|path=%s", s.Type, s.OFPortRequest, s.VhostPath)
	for _, k := range keys {
		fmt.Fprintf(&b, "|%s=%s", k, s.Options[k])
	}
	return b.String()
}

// Rows is the part of the database that Build reads.
type Rows struct {
	OpenVSwitch []vswitchd.OpenvSwitch
	Bridges     []vswitchd.Bridge
	Ports       []vswitchd.Port
	Interfaces  []vswitchd.Interface
	QoS         []vswitchd.QoS
	Queues      []vswitchd.Queue
	Controllers []vswitchd.Controller
	Mirrors     []vswitchd.Mirror
	FlowTables  []vswitchd.FlowTable
	Datapaths   []vswitchd.Datapath
	CTZones     []vswitchd.CTZone
	CTPolicies  []vswitchd.CTTimeoutPolicy
}

// Build resolves the rows into a Desired. Dangling references are skipped;
// a port or interface claimed twice goes to the first claimant in name
// order and the rest is reported in Problems.
func Build(rows Rows) *Desired { return BuildIn(rows, DefaultRundir) }

// DefaultRundir is OVS's rundir when $OVS_RUNDIR is unset.
const DefaultRundir = "/var/run/openvswitch"

// BuildIn is Build with the rundir (the daemon's, $OVS_RUNDIR) that
// other_config:vhost-sock-dir is relative to.
func BuildIn(rows Rows, rundir string) *Desired {
	d := &Desired{}
	if len(rows.OpenVSwitch) == 0 {
		return d
	}
	ovs := rows.OpenVSwitch[0]
	d.OVSUUID = ovs.UUID
	d.NextCfg = ovs.NextCfg
	d.SockBufSize = parseOption(ovs.OtherConfig, KeySockBufSize, "Open_vSwitch", 0, ParseSockBufSize, &d.Problems)
	d.TSO = parseOption(ovs.OtherConfig, KeyTSOEnable, "Open_vSwitch", true, ParseTSOEnable, &d.Problems)
	d.FlowLimit = parseOption(ovs.OtherConfig, KeyFlowLimit, "Open_vSwitch", DefaultFlowLimit, ParseFlowLimit, &d.Problems)
	d.MaxIdle = parseOption(ovs.OtherConfig, KeyMaxIdle, "Open_vSwitch", DefaultMaxIdle, ParseMaxIdle, &d.Problems)
	d.BundleIdle = parseOption(ovs.OtherConfig, KeyBundleIdleTimeout, "Open_vSwitch", connmgr.DefaultBundleIdleTimeout, ParseBundleIdleTimeout, &d.Problems)
	d.PMDCPUMask = ovs.OtherConfig[KeyPMDCPUMask]
	d.PMDCPUs = ParsePMDCPUMask(d.PMDCPUMask, &d.Problems)
	d.VhostSockDir = vhostSockDir(rundir, ovs.OtherConfig, &d.Problems)
	d.CTZones = ctZones(ovs, rows, &d.Problems)

	bridges := index(rows.Bridges, func(b vswitchd.Bridge) string { return b.UUID })
	ports := index(rows.Ports, func(p vswitchd.Port) string { return p.UUID })
	ifaces := index(rows.Interfaces, func(i vswitchd.Interface) string { return i.UUID })
	qoses := index(rows.QoS, func(q vswitchd.QoS) string { return q.UUID })
	queues := index(rows.Queues, func(q vswitchd.Queue) string { return q.UUID })
	controllers := index(rows.Controllers, func(c vswitchd.Controller) string { return c.UUID })
	mirrors := index(rows.Mirrors, func(m vswitchd.Mirror) string { return m.UUID })
	flowTables := index(rows.FlowTables, func(f vswitchd.FlowTable) string { return f.UUID })

	var brs []vswitchd.Bridge
	for _, u := range ovs.Bridges {
		if b, ok := bridges[u]; ok {
			brs = append(brs, b)
		}
	}
	slices.SortFunc(brs, func(a, b vswitchd.Bridge) int { return strings.Compare(a.Name, b.Name) })

	claimedPort := map[string]string{}  // port UUID -> bridge name
	claimedIface := map[string]string{} // interface name -> bridge name
	for i, br := range brs {
		if i > 0 && brs[i-1].Name == br.Name {
			d.Problems = append(d.Problems, fmt.Sprintf("bridge %s specified twice", br.Name))
			continue
		}
		spec := BridgeSpec{
			UUID:         br.UUID,
			Name:         br.Name,
			DatapathType: br.DatapathType,
			MACAgingTime: DefaultMACAgingTime,
			MACTableSize: DefaultMACTableSize,
		}
		spec.FailSecure = br.FailMode != nil && *br.FailMode == vswitchd.BridgeFailModeSecure
		spec.FloodVLANs = slices.Sorted(slices.Values(br.FloodVLANs))
		spec.parseOtherConfig(br.OtherConfig, &d.Problems)
		reportUnsupportedBridge(br, &d.Problems)
		spec.STP = stpSpec(br)
		spec.RSTP = rstpSpec(br, &d.Problems)
		spec.Protocols = protocols(br.Protocols)
		spec.Controllers = controllerSpecs(br, controllers, rundir, &d.Problems)
		spec.Prefixes = tablePrefixes(br, flowTables, d)

		var prs []vswitchd.Port
		for _, u := range br.Ports {
			if p, ok := ports[u]; ok {
				prs = append(prs, p)
			}
		}
		slices.SortFunc(prs, func(a, b vswitchd.Port) int { return strings.Compare(a.Name, b.Name) })
		for j, p := range prs {
			if j > 0 && prs[j-1].Name == p.Name {
				d.Problems = append(d.Problems, fmt.Sprintf("bridge %s: %s specified twice as bridge port", br.Name, p.Name))
				continue
			}
			if owner, dup := claimedPort[p.UUID]; dup {
				d.Problems = append(d.Problems, fmt.Sprintf("bridge %s: port %s is already in bridge %s", br.Name, p.Name, owner))
				continue
			}
			claimedPort[p.UUID] = br.Name
			ps := PortSpec{UUID: p.UUID, Name: p.Name, Tag: -1, Trunks: slices.Sorted(slices.Values(p.Trunks)), STP: portSTPSpec(p)}
			if p.Tag != nil {
				ps.Tag = *p.Tag
			}
			if p.VLANMode != nil {
				ps.VLANMode = *p.VLANMode
			}
			for _, u := range p.Interfaces {
				row, ok := ifaces[u]
				if !ok {
					continue
				}
				if owner, dup := claimedIface[row.Name]; dup {
					d.Problems = append(d.Problems, fmt.Sprintf("bridge %s: interface %s is already in bridge %s", br.Name, row.Name, owner))
					continue
				}
				claimedIface[row.Name] = br.Name
				reportUnsupportedIface(row, &d.Problems)
				is := ifaceSpec(row, &d.Problems)
				if is.Type == TypeInternal {
					is.Type = internalType(br.DatapathType)
				}
				is.ConfigError = driverOf(is.Type).parse(&is, parseEnv{VhostSockDir: d.VhostSockDir}, &d.Problems)
				ps.Ifaces = append(ps.Ifaces, is)
			}
			if len(ps.Ifaces) == 0 {
				continue
			}
			reportUnsupportedPort(br.Name, p, &d.Problems)
			if len(ps.Ifaces) > 1 {
				ps.Bond = bondSpec(p, &d.Problems)
			} else if l := lacpSpec(p, &d.Problems); l != nil {
				// OVS runs LACP on a port of one interface too, whose
				// default system priority is 65535 (a bond's 65534).
				if pri := smapInt(p.OtherConfig, "lacp-system-priority", 0); pri <= 0 || pri > 65535 {
					l.SysPriority = 65535
				}
				ps.Bond = &BondSpec{Mode: BondActiveBackup, LACP: l, Single: true}
			}
			if spec.RSTP != nil {
				ps.RSTP = rstpPortSpec(br.Name, p, &d.Problems)
				if ps.RSTP.Enable && len(ps.Ifaces) > 1 {
					d.Problems = append(d.Problems, fmt.Sprintf("port %s: cannot enable RSTP on bonds, disabling", p.Name))
					ps.RSTP.Enable = false
				}
			}
			if p.QOS != nil {
				if q, ok := qoses[*p.QOS]; ok {
					ps.QoS = qosSpec(p.Name, &q, queues, &d.Problems)
					ps.QueueDSCP = queueDSCP(&q, queues)
				}
			}
			slices.SortFunc(ps.Ifaces, func(a, b IfaceSpec) int { return strings.Compare(a.Name, b.Name) })
			spec.Ports = append(spec.Ports, ps)
		}
		spec.Mirrors = mirrorSpecs(br, &spec, mirrors, ports, &d.Problems)
		d.Bridges = append(d.Bridges, spec)
	}
	return d
}

func ifaceSpec(row vswitchd.Interface, problems *[]string) IfaceSpec {
	s := IfaceSpec{UUID: row.UUID, Name: row.Name, Type: row.Type, Options: row.Options,
		SockBufSize:  parseOption(row.OtherConfig, KeySockBufSize, "interface "+row.Name, 0, ParseSockBufSize, problems),
		TunnelUDPGSO: parseOption(row.OtherConfig, KeyTunnelUDPGSO, "interface "+row.Name, false, ParseTSOEnable, problems),
		LACPPortID:   smapInt(row.OtherConfig, "lacp-port-id", 0), LACPPortPriority: smapInt(row.OtherConfig, "lacp-port-priority", 0)}
	if s.Type == "" {
		s.Type = TypeSystem
	}
	if s.TunnelUDPGSO.Value && s.Type != "vxlan" && s.Type != "geneve" {
		*problems = append(*problems, fmt.Sprintf("interface %s: other_config:%s has no effect on type %s (VXLAN and Geneve tunnels only)",
			row.Name, KeyTunnelUDPGSO, s.Type))
	}
	if row.OfportRequest != nil {
		s.OFPortRequest = *row.OfportRequest
	}
	if row.Ofport != nil && *row.Ofport > 0 {
		s.StoredOFPort = *row.Ofport
	}
	if row.MTURequest != nil {
		s.MTURequest = *row.MTURequest
	}
	s.Policing = policingOf(row.IngressPolicingRate, row.IngressPolicingBurst, row.IngressPolicingKpktsRate, row.IngressPolicingKpktsBurst)
	return s
}

func (s *BridgeSpec) parseOtherConfig(oc map[string]string, problems *[]string) {
	bad := func(key, val string) {
		*problems = append(*problems, fmt.Sprintf("bridge %s: ignoring invalid other_config:%s=%q", s.Name, key, val))
	}
	if v, ok := oc["hwaddr"]; ok {
		mac, err := net.ParseMAC(v)
		if err != nil || len(mac) != 6 || mac[0]&1 != 0 || isZero(mac) {
			bad("hwaddr", v)
		} else {
			s.HWAddr = mac
		}
	}
	if v, ok := oc["datapath-id"]; ok {
		// Exactly 16 hex digits, nonzero (lib/dpif.c dpid_from_string).
		id, err := strconv.ParseUint(v, 16, 64)
		if err != nil || len(v) != 16 || id == 0 {
			bad("datapath-id", v)
		} else {
			s.DatapathID = id
		}
	}
	if v, ok := oc["mac-aging-time"]; ok {
		if n, err := strconv.Atoi(v); err != nil || n < 1 {
			bad("mac-aging-time", v)
		} else {
			s.MACAgingTime = n
		}
	}
	if v, ok := oc["mac-table-size"]; ok {
		if n, err := strconv.Atoi(v); err != nil || n < 1 {
			bad("mac-table-size", v)
		} else {
			s.MACTableSize = n
		}
	}
}

func index[T any](rows []T, key func(T) string) map[string]T {
	m := make(map[string]T, len(rows))
	for _, r := range rows {
		m[key(r)] = r
	}
	return m
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// protocols parses Bridge.protocols ("OpenFlow10".."OpenFlow15"); the
// schema allows nothing else.
func protocols(names []string) ofp.Versions {
	var vs ofp.Versions
	for _, n := range names {
		if d, ok := strings.CutPrefix(n, "OpenFlow1"); ok && len(d) == 1 && d[0] >= '0' && d[0] <= '5' {
			vs |= 1 << (ofp.V10 + ofp.Version(d[0]-'0'))
		}
	}
	return vs
}

// controllerSpecs resolves a bridge's Controller rows. Unix socket
// targets outside the rundir are refused as OVS refuses them.
func controllerSpecs(br vswitchd.Bridge, rows map[string]vswitchd.Controller, rundir string, problems *[]string) []ControllerSpec {
	var specs []ControllerSpec
	for _, u := range br.Controller {
		c, ok := rows[u]
		if !ok {
			continue
		}
		if msg := socketTargetProblem(br.Name, c.Target, rundir); msg != "" {
			*problems = append(*problems, msg)
			continue
		}
		typ := ""
		if c.Type != nil {
			typ = *c.Type
		}
		specs = append(specs, ControllerSpec{UUID: c.UUID,
			Controller: connmgr.ParseController(c.Target, typ, c.MaxBackoff, c.InactivityProbe, c.EnableAsyncMessages).
				WithRateLimit(c.ControllerRateLimit, c.ControllerBurstLimit)})
	}
	slices.SortFunc(specs, func(a, b ControllerSpec) int { return strings.Compare(a.Target, b.Target) })
	return specs
}

// socketTargetProblem refuses, as OVS's bridge_configure_remotes, a
// unix: controller outside the rundir and a punix: one anywhere but
// <rundir>/<bridge>.*: the switch would connect to, or overwrite, any
// file an OVSDB client names.
func socketTargetProblem(bridge, target, rundir string) string {
	if path, ok := strings.CutPrefix(target, "unix:"); ok {
		if !filepath.IsAbs(path) || inDir(filepath.Clean(path), rundir) {
			return ""
		}
		return fmt.Sprintf("bridge %s: Not connecting to socket controller \"%s\" due to possibility for remote exploit.  Instead, specify socket in permitted directory \"%s\" or connect to \"unix:%s/%s.mgmt\" (which is always available without special configuration).",
			bridge, target, rundir, rundir, bridge)
	}
	if path, ok := strings.CutPrefix(target, "punix:"); ok {
		if !filepath.IsAbs(path) {
			path = filepath.Join(rundir, path)
		}
		if strings.HasPrefix(filepath.Clean(path), filepath.Join(rundir, bridge)+".") {
			return ""
		}
		return fmt.Sprintf("bridge %s: Not adding Unix domain socket controller \"%s\" due to possibility of overwriting local files. Instead, specify path in permitted format \"punix:%s/%s.*\" or connect to \"unix:%s/%s.mgmt\" (which is always available without special configuration).",
			bridge, target, rundir, bridge, rundir, bridge)
	}
	return ""
}

func inDir(path, dir string) bool {
	rel, err := filepath.Rel(filepath.Clean(dir), path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// ctZones reads the zones' timeout policies of the Datapath row that
// Open_vSwitch.datapaths names for "netdev" (OVS's ct_zones_reconfigure):
// a zone without a policy row gets an empty policy, the default's
// timeouts. govs runs every datapath type on one tracker: another type's
// zones are reported, not applied.
func ctZones(ovs vswitchd.OpenvSwitch, rows Rows, problems *[]string) map[uint16]conntrack.TimeoutPolicy {
	dps := index(rows.Datapaths, func(d vswitchd.Datapath) string { return d.UUID })
	zones := index(rows.CTZones, func(z vswitchd.CTZone) string { return z.UUID })
	pols := index(rows.CTPolicies, func(p vswitchd.CTTimeoutPolicy) string { return p.UUID })
	var out map[uint16]conntrack.TimeoutPolicy
	for _, typ := range slices.Sorted(maps.Keys(ovs.Datapaths)) {
		dp, ok := dps[ovs.Datapaths[typ]]
		if !ok || len(dp.CTZones) == 0 {
			continue
		}
		if typ != "netdev" {
			*problems = append(*problems, fmt.Sprintf("datapath %s: ct_zones not applied: govs applies the timeout policies of datapath netdev, whose conntrack it runs", typ))
			continue
		}
		out = map[uint16]conntrack.TimeoutPolicy{}
		for z, u := range dp.CTZones {
			zr, ok := zones[u]
			if !ok || z < 0 || z > 65535 {
				continue
			}
			tp := conntrack.TimeoutPolicy{}
			if zr.TimeoutPolicy != nil {
				for k, v := range pols[*zr.TimeoutPolicy].Timeouts {
					tp[k] = uint32(v)
				}
			}
			out[uint16(z)] = tp
		}
	}
	return out
}

// tablePrefixes reads the prefixes of br's Flow_Table rows as OVS's
// bridge_configure_tables, its warnings to d's Problems and what it logs
// at INFO to d's Notes.
func tablePrefixes(br vswitchd.Bridge, rows map[string]vswitchd.FlowTable, d *Desired) map[uint8][]string {
	var m map[uint8][]string
	for _, id := range slices.Sorted(maps.Keys(br.FlowTables)) {
		ft, ok := rows[br.FlowTables[id]]
		if !ok || id < 0 || id >= ofproto.NumTables {
			continue
		}
		// The row's other columns are not implemented: reported, as
		// nothing accepted is ignored silently.
		var unused []string
		if ft.FlowLimit != nil {
			unused = append(unused, "flow_limit")
		}
		if ft.OverflowPolicy != nil {
			unused = append(unused, "overflow_policy")
		}
		if len(ft.Groups) > 0 {
			unused = append(unused, "groups")
		}
		if ft.Name != nil {
			unused = append(unused, "name")
		}
		if len(unused) > 0 {
			d.Problems = append(d.Problems, fmt.Sprintf("bridge %s table %d: Flow_Table %s not implemented by govs, not applied",
				br.Name, id, strings.Join(unused, ", ")))
		}
		// In the order of OVS's IDL, which sorts a set's strings.
		fields, def, warns, info := ofproto.ParsePrefixes(br.Name, id, slices.Sorted(slices.Values(ft.Prefixes)))
		d.Problems = append(d.Problems, warns...)
		if def {
			continue
		}
		d.Notes = append(d.Notes, info)
		if m == nil {
			m = map[uint8][]string{}
		}
		m[uint8(id)] = fields
	}
	return m
}
