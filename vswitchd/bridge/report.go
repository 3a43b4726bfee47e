package bridge

import (
	"fmt"
	"slices"
	"syscall"

	"github.com/govs/govs/netdev"
	"github.com/govs/govs/vswitchd/ofproto/connmgr"
)

// DatapathTypes and IfaceTypes are what Open_vSwitch.datapath_types and
// iface_types advertise: every bridge runs on govs' userspace datapath
// whatever its datapath_type; IfaceTypes are the registered port drivers'
// types, sorted (registerPort).
var (
	DatapathTypes = []string{"netdev", "system"}
	IfaceTypes    []string
)

// Report is what the database should show about the running switch for
// one snapshot: the write-back's input.
type Report struct {
	OVSUUID string
	// CurCfg is the next_cfg of the snapshot that is now live.
	CurCfg  int
	Bridges []BridgeStatus
	Ifaces  []IfaceStatus
	// Controllers are every bridge's Controller rows.
	Controllers []ControllerStatus
	// Ports are every bridge's Port rows.
	Ports []PortStatus
	// Mirrors are the bridges' Mirror rows.
	Mirrors []MirrorStatus
}

// PortStatus is the Port columns the switch writes: bond_active_slave,
// the MAC of the bond's active member ("" clears it), as OVS's
// port_refresh_bond_status; status and statistics, the STP's keys (nil
// clears them), as port_refresh_stp_status and port_refresh_stp_stats;
// rstp_status and rstp_statistics (nil clears them), as
// port_refresh_rstp_status.
type PortStatus struct {
	UUID            string
	BondActiveSlave string
	Status          map[string]string
	Stats           map[string]int
	RSTPStatus      map[string]string
	RSTPStatistics  map[string]int
}

// ControllerStatus is the Controller columns the switch writes:
// is_connected, role ("" clears it) and status (nil clears it), as OVS's
// refresh_controller_status.
type ControllerStatus struct {
	UUID string
	connmgr.ControllerStatus
}

// BridgeStatus is the Bridge columns the switch writes.
type BridgeStatus struct {
	UUID       string
	DatapathID string // 16 hex digits
	// Status is the status column: the STP's keys, nil to clear it.
	Status map[string]string
	// RSTPStatus is rstp_status, nil (cleared) unless it runs RSTP.
	RSTPStatus map[string]string
}

// IfaceStatus is the Interface columns the switch writes.
type IfaceStatus struct {
	UUID   string
	OFPort int    // -1 when the interface does not run
	Error  string // "" when fine
	// Link is nil when the status columns are to be cleared.
	Link *LinkStatus
	// Stats is nil when the statistics column is to be cleared.
	Stats map[string]int
	// Status is the status column's map (the Status* keys); nil clears it.
	Status map[string]string
	// LACPCurrent is lacp_current: nil (empty) unless the interface is a
	// member of a bond running LACP.
	LACPCurrent *bool
}

// LinkStatus is the Interface status columns; zero values of MTU, Ifindex,
// Speed and an empty Duplex or MAC mean "unknown", written as empty.
type LinkStatus struct {
	AdminUp, LinkUp bool
	Speed           int // bit/s
	Duplex          string
	MTU             int
	MAC             string
	Ifindex         int
	HasIfindex      bool
	LinkResets      int
}

// Report renders what the database should hold once d is applied.
func (s *Switch) Report(d *Desired) Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := Report{OVSUUID: d.OVSUUID, CurCfg: d.NextCfg}
	for _, br := range d.Bridges {
		if rb := s.bridges[br.Name]; rb != nil {
			r.Bridges = append(r.Bridges, BridgeStatus{UUID: br.UUID, DatapathID: fmt.Sprintf("%016x", rb.dpid), Status: s.stpBridgeStatus(br.Name),
				RSTPStatus: s.rstpBridgeStatus(br.Name)})
			var ctrl map[string]connmgr.ControllerStatus
			if rb.mgmt != nil {
				ctrl = rb.mgmt.ControllerStatus()
			}
			for _, c := range br.Controllers {
				r.Controllers = append(r.Controllers, ControllerStatus{UUID: c.UUID, ControllerStatus: ctrl[c.Target]})
			}
			r.Mirrors = append(r.Mirrors, s.mirrorStatus(&br)...)
		}
		for _, p := range br.Ports {
			ps := PortStatus{UUID: p.UUID}
			if b := s.bonds[p.Name]; b != nil && p.Bond != nil && !p.Bond.Single {
				ps.BondActiveSlave = s.activeMAC(b)
			}
			ps.Status, ps.Stats = s.stpPortStatus(br.Name, p)
			ps.RSTPStatus, ps.RSTPStatistics = s.rstpPortStatus(br.Name, &p)
			r.Ports = append(r.Ports, ps)
			for _, spec := range p.Ifaces {
				if spec.UUID == "" {
					continue
				}
				ifc := s.ifaces[spec.Name]
				switch {
				case ifc == nil:
				case ifc.bridge != br.Name:
					// The name is taken by another bridge's port.
					r.Ifaces = append(r.Ifaces, IfaceStatus{UUID: spec.UUID, OFPort: -1,
						Error: fmt.Sprintf("could not add network device %s to ofproto (%s)", spec.Name, Strerror(syscall.EEXIST))})
				default:
					st := ifc.status(spec.UUID)
					st.LACPCurrent = s.lacpCurrent(ifc)
					r.Ifaces = append(r.Ifaces, st)
				}
			}
		}
	}
	return r
}

func (ifc *iface) status(uuid string) IfaceStatus {
	st := IfaceStatus{UUID: uuid, OFPort: -1, Error: ifc.err}
	switch ifc.state {
	case StateAttached:
		st.OFPort = ifc.ofport
		ifc.driver().status(ifc, &st)
		if st.Stats != nil && (ifc.policing.Enabled() || ifc.policed > 0) {
			// netdev-dpdk's counter of frames its ingress policer
			// dropped, which it also counts in rx_dropped.
			st.Stats["rx_dropped"] += int(ifc.policed)
			st.Stats["ovs_rx_qos_drops"] = int(ifc.policed)
		}
		if st.Stats != nil && (ifc.qos.Type != "" || ifc.qosPoliced > 0) {
			// netdev-dpdk's counter of frames its QoS dropped, also in
			// tx_dropped.
			st.Stats["tx_dropped"] += int(ifc.qosPoliced)
			st.Stats["ovs_tx_qos_drops"] = int(ifc.qosPoliced)
		}
	case StateMissing:
		if ifc.ofport > 0 {
			// An interface that ran and vanished keeps its number and
			// shows as down until it is back.
			st.OFPort = ifc.ofport
			st.Link = &LinkStatus{}
		}
	}
	return st
}

// statsColumn renders counters under the keys OVS uses in
// Interface.statistics.
func statsColumn(st netdev.Stats) map[string]int {
	return map[string]int{
		"rx_packets": int(st.RxPackets), "rx_bytes": int(st.RxBytes),
		"rx_dropped": int(st.RxDropped), "rx_errors": int(st.RxErrors),
		"tx_packets": int(st.TxPackets), "tx_bytes": int(st.TxBytes),
		"tx_dropped": int(st.TxDropped), "tx_errors": int(st.TxErrors),
	}
}

// Refresh reads the kernel state and counters of every running interface,
// for the periodic status write-back.
func (s *Switch) Refresh() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ifc := range s.ifaces {
		if ifc.state != StateAttached || ifc.dev == nil {
			continue
		}
		s.count("netdev_get_stats")
		ifc.stats = ifc.dev.Stats()
		if pd, ok := s.dp.(PolicingDatapath); ok && ifc.dpPort != 0 {
			ifc.policed = pd.PolicingDrops(ifc.dpPort)
		}
		if ed, ok := s.dp.(EgressPolicingDatapath); ok && ifc.dpPort != 0 {
			ifc.qosPoliced = ed.EgressPolicingDrops(ifc.dpPort)
		}
		ifc.driver().refresh(s, ifc)
	}
	s.refreshMirrors()
	s.syncUnderlays()
	if len(s.stps) > 0 {
		// In case a carrier change went unnoticed.
		s.syncSTP()
	}
}

// bridgeNames returns the running bridges' names, sorted. Caller holds mu.
func (s *Switch) bridgeNames() []string {
	names := make([]string, 0, len(s.bridges))
	for n := range s.bridges {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
