package bridge

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/govs/govs/schema/vswitchd"
	"github.com/govs/govs/vswitchd/ofproto"
	"github.com/govs/govs/vswitchd/rstp"
)

// RSTP on a bridge, as OVS's bridge.c bridge_configure_rstp and
// ofproto-dpif's rstp_run: a bridge with rstp_enable=true runs an
// rstp.Bridge over its ports but internal ports, bonds and mirror
// outputs; the BPDUs its ports receive come from the datapath
// (slowFrame) into a queue that runRSTP drains, a tick a second runs its
// timers, and the ports' states gate NORMAL (ofproto.STPGate).

// RSTPSpec is a bridge's RSTP configuration, from its Bridge row.
type RSTPSpec struct {
	// Address is other_config:rstp-address, nil for the bridge's MAC.
	Address net.HardwareAddr
	// Config is the rest; its Address is filled in when it runs.
	Config rstp.Config
}

// RSTPPortSpec is a port's RSTP configuration, from its Port row.
type RSTPPortSpec struct {
	// Enable is other_config:rstp-enable (default true).
	Enable bool
	// Config is the rest; PathCost 0 is "from the link speed".
	Config rstp.PortConfig
}

// rstpKeys are the other_config keys OVS's bridge.c reads for RSTP;
// unsupported.go reports the other rstp-* keys.
var rstpKeys = map[string]bool{
	"rstp-address": true, "rstp-priority": true, "rstp-ageing-time": true,
	"rstp-force-protocol-version": true, "rstp-max-age": true, "rstp-forward-delay": true,
	"rstp-transmit-hold-count": true,
	"rstp-enable":              true, "rstp-port-priority": true, "rstp-port-num": true, "rstp-path-cost": true,
	"rstp-port-admin-edge": true, "rstp-port-auto-edge": true, "rstp-port-mcheck": true,
}

// smapBool is OVS's smap_get_bool: with default true anything but
// "false" is true, with default false only "true" is.
func smapBool(m map[string]string, key string, def bool) bool {
	v, ok := m[key]
	if !ok {
		return def
	}
	if def {
		return !strings.EqualFold(v, "false")
	}
	return strings.EqualFold(v, "true")
}

// smapUint reads key as an unsigned integer in base (0: C's prefixes),
// def if absent; an invalid value is reported and def used.
func smapUint(m map[string]string, key string, base int, def int, where string, problems *[]string) int {
	v, ok := m[key]
	if !ok {
		return def
	}
	n, err := strconv.ParseUint(strings.TrimSpace(v), base, 31)
	if err != nil {
		*problems = append(*problems, fmt.Sprintf("%s: ignoring invalid other_config:%s=%q, using %d", where, key, v, def))
		return def
	}
	return int(n)
}

// rstpSpec reads br's RSTP settings (bridge_configure_rstp), reporting
// what OVS would not take; nil when RSTP is off.
func rstpSpec(br vswitchd.Bridge, problems *[]string) *RSTPSpec {
	if !br.RSTPEnable {
		return nil
	}
	where := "bridge " + br.Name
	oc := br.OtherConfig
	s := &RSTPSpec{}
	if v, ok := oc["rstp-address"]; ok {
		mac, err := net.ParseMAC(v)
		if err != nil || len(mac) != 6 {
			*problems = append(*problems, fmt.Sprintf("bridge %s: invalid rstp-address, defaulting to the bridge's address", br.Name))
		} else {
			s.Address = mac
		}
	}
	c := rstp.DefaultConfig([6]byte{})
	c.Priority = smapUint(oc, "rstp-priority", 10, c.Priority, where, problems)
	c.AgeingTime = smapUint(oc, "rstp-ageing-time", 10, c.AgeingTime, where, problems)
	c.ForceVersion = smapUint(oc, "rstp-force-protocol-version", 10, c.ForceVersion, where, problems)
	c.MaxAge = smapUint(oc, "rstp-max-age", 10, c.MaxAge, where, problems)
	c.ForwardDelay = smapUint(oc, "rstp-forward-delay", 10, c.ForwardDelay, where, problems)
	c.TransmitHoldCount = smapUint(oc, "rstp-transmit-hold-count", 10, c.TransmitHoldCount, where, problems)
	for _, p := range c.Check() {
		*problems = append(*problems, where+": "+p)
	}
	s.Config = c
	return s
}

// rstpPortSpec reads p's RSTP settings (port_configure_rstp).
func rstpPortSpec(br string, p vswitchd.Port, problems *[]string) RSTPPortSpec {
	oc := p.OtherConfig
	where := "port " + p.Name
	s := RSTPPortSpec{Enable: smapBool(oc, "rstp-enable", true)}
	if !s.Enable {
		return s
	}
	c := &s.Config
	if _, ok := oc["rstp-port-num"]; ok {
		c.Number = smapUint(oc, "rstp-port-num", 0, 0, where, problems)
		if c.Number < 1 || c.Number > rstp.MaxPorts {
			*problems = append(*problems, fmt.Sprintf("port %s: invalid rstp-port-num", p.Name))
			s.Enable = false
			return s
		}
	}
	c.Priority = smapUint(oc, "rstp-port-priority", 0, rstp.DefaultPortPriority, where, problems)
	if _, ok := oc["rstp-path-cost"]; ok {
		c.PathCost = uint32(smapUint(oc, "rstp-path-cost", 10, rstp.DefaultPathCost, where, problems))
	}
	c.AdminEdge = smapBool(oc, "rstp-port-admin-edge", false)
	c.AutoEdge = smapBool(oc, "rstp-port-auto-edge", true)
	c.Mcheck = smapBool(oc, "rstp-port-mcheck", false)
	cost := c.PathCost
	if cost == 0 {
		c.PathCost = rstp.DefaultPathCost // checked with the default
	}
	for _, bad := range c.Check() {
		*problems = append(*problems, where+": "+bad)
	}
	if cost == 0 {
		c.PathCost = 0
	}
	return s
}

// rstpRun is a bridge's running RSTP.
type rstpRun struct {
	b *rstp.Bridge
	// ports are the ports it runs on, by name.
	ports map[string]*rstpPort
	// lastTick is when the timers last ticked.
	lastTick time.Time
	timer    *time.Timer
}

type rstpPort struct {
	dpPort uint32
	up     bool
}

// portFlusher is implemented by an OFBridge that forgets one port's MACs.
type portFlusher interface{ FDBFlushPort(name string) }

// syncRSTP makes s.rstps the bridges of the last snapshot that run RSTP,
// over their eligible ports, and runs them. Caller holds mu.
func (s *Switch) syncRSTP() {
	want := map[string]bool{}
	if s.last != nil {
		for i := range s.last.Bridges {
			spec := &s.last.Bridges[i]
			rb := s.bridges[spec.Name]
			if spec.RSTP == nil || rb == nil {
				continue
			}
			want[spec.Name] = true
			s.configureRSTP(rb, spec)
		}
	}
	dropUnwanted(s.rstps, want, func(r *rstpRun) *time.Timer { return r.timer })
	s.runRSTP(true)
}

// configureRSTP starts or reconfigures rb's RSTP. Caller holds mu.
func (s *Switch) configureRSTP(rb *runBridge, spec *BridgeSpec) {
	cfg := spec.RSTP.Config
	switch {
	case spec.RSTP.Address != nil:
		copy(cfg.Address[:], spec.RSTP.Address)
	default:
		copy(cfg.Address[:], rb.mac)
	}
	r := s.rstps[rb.name]
	if r == nil {
		name := rb.name
		r = &rstpRun{ports: map[string]*rstpPort{}, lastTick: time.Now()}
		r.b = rstp.New(name, cfg, func(port string, bpdu []byte) { s.sendRSTPBPDU(name, port, bpdu) },
			func(port string) {
				if rb := s.bridges[name]; rb != nil {
					if f, ok := rb.of.(portFlusher); ok {
						f.FDBFlushPort(port)
					}
				}
			})
		s.rstps[name] = r
	} else {
		r.b.Configure(cfg)
	}
	mirrorOut := map[string]bool{}
	for _, m := range spec.Mirrors {
		mirrorOut[m.Out] = true
	}
	keep := map[string]bool{}
	for _, p := range spec.Ports {
		if !p.RSTP.Enable || len(p.Ifaces) != 1 || mirrorOut[p.Name] {
			continue
		}
		ifc := s.ifaces[p.Ifaces[0].Name]
		if ifc == nil || ifc.bridge != rb.name || ifc.state != StateAttached || ifc.local || ifc.dpPort == 0 ||
			ifc.spec.Type == TypeInternal || ifc.spec.PatchPeer != "" || ifc.spec.Tunnel != nil {
			continue
		}
		c := p.RSTP.Config
		if c.PathCost == 0 {
			var mbps uint64
			if ifc.link != nil {
				mbps = uint64(ifc.link.Speed)
			}
			if mbps == 0 {
				mbps = 100 // OVS's default for a device without features
			}
			c.PathCost = rstp.SpeedToCost(mbps)
		}
		keep[ifc.spec.Name] = true
		if r.ports[ifc.spec.Name] == nil {
			r.ports[ifc.spec.Name] = &rstpPort{}
		}
		r.ports[ifc.spec.Name].dpPort = ifc.dpPort
		r.b.SetPort(ifc.spec.Name, c)
	}
	for n := range r.ports {
		if !keep[n] {
			delete(r.ports, n)
			r.b.DelPort(n)
		}
	}
}

// inRSTP reports whether ifc is a port of a bridge running RSTP. Caller
// holds mu.
func (s *Switch) inRSTP(ifc *iface) bool {
	r := s.rstps[ifc.bridge]
	return r != nil && r.ports[ifc.spec.Name] != nil
}

// sendRSTPBPDU sends bpdu out of port of bridge br. Caller holds mu.
func (s *Switch) sendRSTPBPDU(br, port string, bpdu []byte) {
	r, ifc := s.rstps[br], s.ifaces[port]
	if r == nil || r.ports[port] == nil || ifc == nil {
		return
	}
	s.sendSpanningFrame(ifc, r.ports[port].dpPort, "RSTP BPDU", func(src [6]byte) []byte { return rstp.Frame(src, bpdu) })
}

// runRSTP is rstp_run for every bridge: queued BPDUs, carrier changes,
// a tick per second gone by. It reports whether a port's state or a
// status changed. Caller holds mu.
func (s *Switch) runRSTP(fresh bool) bool {
	now := time.Now()
	for {
		var f stpFrame
		select {
		case f = <-s.rstpRx:
		default:
			goto received
		}
		for name, r := range s.rstps {
			for pn, p := range r.ports {
				if p.dpPort != f.dpPort {
					continue
				}
				b, err := rstp.ParseFrame(f.frame)
				if err == nil {
					err = r.b.Receive(pn, b)
				}
				if err != nil {
					s.lacpWarn("%s: port %s: received an invalid BPDU: %v", name, pn, err)
				}
			}
		}
	}
received:
	changed := false
	for _, r := range s.rstps {
		for n, p := range r.ports {
			ifc := s.ifaces[n]
			up := ifc != nil && s.carrier(ifc, fresh)
			if up != p.up {
				p.up = up
				r.b.SetEnabled(n, up)
			}
		}
		for now.Sub(r.lastTick) >= time.Second {
			r.lastTick = r.lastTick.Add(time.Second)
			// The counters move too: the daemon's periodic write-back
			// writes them, as OVS's statistics.
			r.b.Tick()
		}
		if r.b.Changed() {
			changed = true
		}
		if r.timer != nil {
			r.timer.Stop()
		}
		r.timer = time.AfterFunc(r.lastTick.Add(time.Second).Sub(now), s.wakeRSTP)
	}
	s.pushConfigs()
	return changed
}

// wakeRSTP asks the daemon to run RSTP (RSTPChanged).
func (s *Switch) wakeRSTP() { wake(s.rstpWake) }

// RSTPChanged is signalled when a BPDU arrived or a second went
// by on a bridge running RSTP: the daemon then calls RunRSTP.
func (s *Switch) RSTPChanged() <-chan struct{} { return s.rstpWake }

// RunRSTP runs RSTP; it reports whether the status columns are
// to be written again.
func (s *Switch) RunRSTP() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runRSTP(false)
}

// rstpGateOf is port name's RSTP gate for NORMAL and whether bridge br
// runs RSTP. Caller holds mu.
func (s *Switch) rstpGateOf(br, name string) (ofproto.PortGate, bool) {
	r := s.rstps[br]
	if r == nil {
		return ofproto.GateOpen, false
	}
	if r.ports[name] == nil {
		return ofproto.GateOpen, true
	}
	_, st := r.b.PortState(name)
	switch {
	case st.Forwards():
		return ofproto.GateForward, true
	case st.Learns():
		return ofproto.GateLearn, true
	}
	return ofproto.GateDiscard, true
}

// rstpBridgeStatus is Bridge.rstp_status (br_refresh_rstp_status), nil
// when the bridge runs no RSTP. Caller holds mu.
func (s *Switch) rstpBridgeStatus(br string) map[string]string {
	r := s.rstps[br]
	if r == nil {
		return nil
	}
	st := r.b.Status()
	return map[string]string{
		"rstp_bridge_id":          st.BridgeID.String(),
		"rstp_root_path_cost":     strconv.FormatUint(uint64(st.RootPathCost), 10),
		"rstp_root_id":            st.RootID.String(),
		"rstp_designated_id":      st.DesignatedID.String(),
		"rstp_designated_port_id": fmt.Sprintf("%04x", st.DesignatedPortID),
		"rstp_bridge_port_id":     fmt.Sprintf("%04x", st.BridgePortID),
	}
}

// rstpPortStatus is Port.rstp_status and rstp_statistics
// (port_refresh_rstp_status), nil when the port runs no RSTP. Caller
// holds mu.
func (s *Switch) rstpPortStatus(br string, p *PortSpec) (map[string]string, map[string]int) {
	r := s.rstps[br]
	if r == nil || len(p.Ifaces) != 1 || r.ports[p.Ifaces[0].Name] == nil {
		return nil, nil
	}
	st, ok := r.b.PortStatus(p.Ifaces[0].Name)
	if !ok {
		return nil, nil
	}
	return map[string]string{
			"rstp_port_id":              fmt.Sprintf("%04x", st.ID),
			"rstp_port_role":            st.Role.String(),
			"rstp_port_state":           st.State.String(),
			"rstp_designated_bridge_id": st.DesignatedBridgeID.String(),
			"rstp_designated_port_id":   fmt.Sprintf("%04x", st.DesignatedPortID),
			"rstp_designated_path_cost": strconv.FormatUint(uint64(st.DesignatedPathCost), 10),
		}, map[string]int{
			"rstp_tx_count":    int(st.TxCount),
			"rstp_rx_count":    int(st.RxCount),
			"rstp_uptime":      st.Uptime,
			"rstp_error_count": int(st.Errs),
		}
}

// RSTPShow is `ovs-appctl rstp/show [bridge]`.
func (s *Switch) RSTPShow(args []string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return showSpanning(s.rstps, args, "No such RSTP object", func(r *rstpRun, w *strings.Builder) { r.b.Show(w) })
}
