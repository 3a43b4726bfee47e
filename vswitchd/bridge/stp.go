package bridge

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/govs/govs/schema/vswitchd"
	"github.com/govs/govs/vswitchd/ofproto"
	"github.com/govs/govs/vswitchd/stp"
)

// STP on bridges, as OVS's bridge.c bridge_configure_stp and
// ofproto-dpif's stp_run: a bridge with stp_enable=true runs a stp.STP;
// the BPDUs its ports receive come from the datapath (SlowProtocols) into
// a queue that RunSTP drains, and the BPDUs it sends leave through the
// ports' datapath ports. Each port's state becomes its ofproto.PortGate.

// STPSpec is a bridge's STP configuration, from its row.
type STPSpec struct {
	// SystemID is other_config:stp-system-id, nil for the bridge's MAC;
	// BadSystemID: it is set but no MAC (the bridge's MAC is used).
	SystemID    net.HardwareAddr
	BadSystemID bool
	// Priority is other_config:stp-priority or 32768.
	Priority uint16
	// HelloTime, MaxAge and ForwardDelay are other_config:stp-hello-time,
	// stp-max-age and stp-forward-delay in ms, before the STP clamps them.
	HelloTime, MaxAge, ForwardDelay int
}

// PortSTPSpec is a port's STP settings, from its other_config.
type PortSTPSpec struct {
	// Off is stp-enable=false.
	Off bool
	// Num is stp-port-num, 0 when unset, -1 when it is no number 1..255.
	Num int
	// Priority is stp-port-priority or 128.
	Priority uint8
	// PathCost is stp-path-cost, -1 when unset (the link speed's).
	PathCost int
}

// stpSpec reads br's STP settings as bridge_configure_stp; nil when
// stp_enable is false, or when rstp_enable is true too (RSTP runs then,
// as OVS's bridge_configure_spanning_tree).
func stpSpec(br vswitchd.Bridge) *STPSpec {
	if !br.STPEnable || br.RSTPEnable {
		return nil
	}
	oc := br.OtherConfig
	s := &STPSpec{
		Priority:     uint16(smapULLong(oc, "stp-priority", stp.DefaultBridgePriority)),
		HelloTime:    int(smapULLong(oc, "stp-hello-time", stp.DefaultHelloTime/1000)) * 1000,
		MaxAge:       int(smapULLong(oc, "stp-max-age", stp.DefaultMaxAge/1000)) * 1000,
		ForwardDelay: int(smapULLong(oc, "stp-forward-delay", stp.DefaultForwardDelay/1000)) * 1000,
	}
	if v, ok := oc["stp-system-id"]; ok {
		if mac, err := net.ParseMAC(v); err == nil && len(mac) == 6 {
			s.SystemID = mac
		} else {
			s.BadSystemID = true
		}
	}
	return s
}

// portSTPSpec reads p's STP settings as port_configure_stp.
func portSTPSpec(p vswitchd.Port) PortSTPSpec {
	oc := p.OtherConfig
	s := PortSTPSpec{Off: oc["stp-enable"] == "false", Priority: stp.DefaultPortPriority, PathCost: -1}
	if v, ok := oc["stp-port-num"]; ok {
		if n := strtoul(v, 0); n >= 1 && n <= stp.MaxPorts {
			s.Num = int(n)
		} else {
			s.Num = -1
		}
	}
	if v, ok := oc["stp-port-priority"]; ok {
		s.Priority = uint8(strtoul(v, 0))
	}
	if v, ok := oc["stp-path-cost"]; ok {
		s.PathCost = int(uint16(strtoul(v, 10)))
	}
	return s
}

// smapULLong is OVS's smap_get_ullong: the whole value as a decimal
// number, def if absent or not one.
func smapULLong(m map[string]string, key string, def uint64) uint64 {
	v, ok := m[key]
	if !ok {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return def
	}
	return n
}

// strtoul is C's strtoul as OVS calls it on these keys: leading digits
// (base 0: 0x for hex, 0 for octal), junk after them ignored, 0 if none.
func strtoul(s string, base int) uint64 {
	s = strings.TrimLeft(s, " \t\n")
	if base == 0 {
		switch {
		case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
			base, s = 16, s[2:]
		case len(s) > 1 && s[0] == '0':
			base = 8
		default:
			base = 10
		}
	}
	end := 0
	for end < len(s) {
		if _, err := strconv.ParseUint(s[end:end+1], base, 8); err != nil {
			break
		}
		end++
	}
	n, err := strconv.ParseUint(s[:end], base, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return math.MaxUint64 // ULONG_MAX
	case err != nil:
		return 0
	}
	return n
}

// stpRun is one bridge's running STP.
type stpRun struct {
	stp *stp.STP
	// names are the interfaces on the STP's port numbers ("" if none);
	// entered is when each port's state last changed.
	names   [stp.MaxPorts]string
	entered [stp.MaxPorts]time.Time
	// last is when the STP last ran.
	last time.Time
}

// stpFrame is one BPDU a port received.
type stpFrame struct {
	dpPort uint32
	frame  []byte
}

// stpQueueLen bounds the BPDUs waiting for RunSTP: a BPDU a hello time
// (1 s at least) per port from a sane peer; beyond, they are dropped.
const stpQueueLen = 256

// stpInterval is how often RunSTP runs while a bridge runs STP: the
// timers count in 1/256 s, their shortest timeout is a second.
const stpInterval = 100 * time.Millisecond

// SetSTPLog makes the STP log to l (OVS's stp module) rather than the
// switch's logger.
func (s *Switch) SetSTPLog(l Logger) {
	s.mu.Lock()
	s.stpLog = l
	s.mu.Unlock()
}

// gate is what port no's STP state lets it do.
func stpGate(st stp.State) ofproto.PortGate {
	switch st {
	case stp.Forwarding:
		return ofproto.GateForward
	case stp.Learning:
		return ofproto.GateLearn
	case stp.Listening, stp.Blocking:
		return ofproto.GateDiscard
	}
	return ofproto.GateOpen
}

// stpGateOf returns ifc's gate and whether its bridge runs STP. Caller
// holds mu.
func (s *Switch) stpGateOf(ifc *iface) (ofproto.PortGate, bool) {
	r := s.stps[ifc.bridge]
	if r == nil {
		return ofproto.GateOpen, false
	}
	for no, n := range r.names {
		if n == ifc.spec.Name {
			return stpGate(r.stp.Port(no).State()), true
		}
	}
	return ofproto.GateOpen, true
}

// syncSTP starts, reconfigures or stops each bridge's STP to follow the
// last snapshot, as bridge_configure_stp and port_configure_stp. Caller
// holds mu.
func (s *Switch) syncSTP() {
	want := map[string]bool{}
	var problems []string
	if s.last != nil {
		for i := range s.last.Bridges {
			br := &s.last.Bridges[i]
			rb := s.bridges[br.Name]
			if br.STP == nil || rb == nil {
				continue
			}
			if s.configureSTP(br, rb, &problems) {
				want[br.Name] = true
			}
		}
	}
	for name := range s.stps {
		if !want[name] {
			delete(s.stps, name)
		}
	}
	if !slices.Equal(problems, s.stpProblems) {
		for _, p := range problems {
			s.log.Errorf("%s", p)
		}
		s.stpProblems = problems
	}
	s.takeSTPChanges(time.Now())
	s.armSTP()
}

// configureSTP applies br's STP configuration; false if STP cannot run
// on br. Caller holds mu.
func (s *Switch) configureSTP(br *BridgeSpec, rb *runBridge, problems *[]string) bool {
	spec := br.STP
	var sysID [6]byte
	switch {
	case spec.SystemID != nil:
		copy(sysID[:], spec.SystemID)
	default:
		copy(sysID[:], rb.mac)
		if spec.BadSystemID {
			*problems = append(*problems, fmt.Sprintf("bridge %s: invalid stp-system-id, defaulting to %s", br.Name, rb.mac))
		}
	}
	// Which port runs STP on which number: every port given one by
	// stp-port-num, or none, the others in order.
	var nums [stp.MaxPorts]string
	counter, manual := 0, false
	for _, p := range br.Ports {
		ps := p.STP
		if !ps.Off && len(p.Ifaces) > 1 {
			*problems = append(*problems, fmt.Sprintf("port %s: cannot enable STP on bonds, disabling", p.Name))
			continue
		}
		ifc := s.stpCandidate(br, p)
		if ifc == nil {
			continue
		}
		switch {
		case ps.Num < 0:
			*problems = append(*problems, fmt.Sprintf("port %s: invalid stp-port-num", p.Name))
		case ps.Num > 0 && nums[ps.Num-1] != "":
			*problems = append(*problems, fmt.Sprintf("port %s: duplicate stp-port-num %d, disabling", p.Name, ps.Num))
		case ps.Num > 0:
			nums[ps.Num-1], manual = ifc.spec.Name, true
		case counter >= stp.MaxPorts:
			*problems = append(*problems, fmt.Sprintf("port %s: too many STP ports, disabling", p.Name))
		default:
			counter++
		}
	}
	if manual && counter > 0 {
		*problems = append(*problems, fmt.Sprintf("bridge %s: must manually configure all STP port IDs or none, disabling", br.Name))
		return false
	}
	if !manual {
		next := 0
		for _, p := range br.Ports {
			if ifc := s.stpCandidate(br, p); ifc != nil && p.STP.Num == 0 && next < stp.MaxPorts {
				nums[next] = ifc.spec.Name
				next++
			}
		}
	}

	r := s.stps[br.Name]
	id := stp.NewID(spec.Priority, sysID)
	if r == nil {
		r = &stpRun{last: time.Now()}
		r.stp = stp.New(br.Name, id, func(no int, bpdu []byte) { s.sendBPDU(r, no, bpdu) }, s.stpLogger())
		s.stps[br.Name] = r
	} else {
		r.stp.SetSystemID(sysID)
		r.stp.SetPriority(spec.Priority)
	}
	r.stp.SetTimes(spec.HelloTime, spec.MaxAge, spec.ForwardDelay)
	specs := map[string]PortSpec{}
	for _, p := range br.Ports {
		if len(p.Ifaces) == 1 {
			specs[p.Ifaces[0].Name] = p
		}
	}
	for no, name := range nums {
		port := r.stp.Port(no)
		if r.names[no] != name && r.names[no] != "" {
			port.Disable()
		}
		r.names[no] = name
		if name == "" {
			continue
		}
		ifc, ps := s.ifaces[name], specs[name].STP
		port.SetName(name)
		if ifc.kind() == KindKernel && ifc.link != nil && !ifc.link.OperUp {
			// Without carrier the port keeps its number but is
			// disabled, as Debian's ovs-vswitchd does.
			port.Disable()
			continue
		}
		port.Enable()
		port.SetPriority(ps.Priority)
		cost := ps.PathCost
		if cost < 0 {
			var mbps uint32
			if ifc.link != nil {
				mbps = ifc.link.Speed
			}
			cost = int(stp.SpeedCost(mbps))
		}
		port.SetPathCost(uint16(cost))
	}
	return true
}

// stpCandidate returns the interface of p if it may run STP: one
// attached interface of br, not stp-enable=false, not internal (internal
// ports take no part in the spanning tree). Caller holds mu.
func (s *Switch) stpCandidate(br *BridgeSpec, p PortSpec) *iface {
	if p.STP.Off || len(p.Ifaces) != 1 || p.Ifaces[0].Type == TypeInternal {
		return nil
	}
	ifc := s.ifaces[p.Ifaces[0].Name]
	if ifc == nil || ifc.bridge != br.Name || ifc.state != StateAttached || ifc.local {
		return nil
	}
	return ifc
}

func (s *Switch) stpLogger() Logger {
	if s.stpLog != nil {
		return s.stpLog
	}
	return s.log
}

// sendBPDU sends bpdu out of r's port no. Caller holds mu (the STP calls
// it from its methods).
func (s *Switch) sendBPDU(r *stpRun, no int, bpdu []byte) {
	if ifc := s.ifaces[r.names[no]]; ifc != nil {
		s.sendSpanningFrame(ifc, ifc.dpPort, "BPDU", func(src [6]byte) []byte { return stp.Frame(src, bpdu) })
	}
}

// sendSpanningFrame sends the frame build makes from ifc's MAC out of
// datapath port dpPort, for STP or RSTP (what names the frame in the
// warning). Caller holds mu.
func (s *Switch) sendSpanningFrame(ifc *iface, dpPort uint32, what string, build func(src [6]byte) []byte) {
	sp, _ := s.backer.(SlowProtocols)
	if sp == nil || dpPort == 0 {
		return
	}
	var src [6]byte
	if ifc.link != nil {
		copy(src[:], ifc.link.MAC)
	}
	if err := sp.SendFrame(dpPort, build(src)); err != nil {
		s.lacpWarn("port %s: failed to send %s: %v", ifc.spec.Name, what, err)
	}
}

// queueBPDU queues a BPDU the packet path received on q for the
// protocol's run, without blocking: woken by wake, or counted as dropped
// under counter when the queue is full.
func (s *Switch) queueBPDU(q chan stpFrame, wake func(), counter string, dpPort uint32, frame []byte) {
	select {
	case q <- stpFrame{dpPort, frame}:
		wake()
	default:
		s.count(counter)
	}
}

// wakeSTP asks the daemon to run the STPs (STPChanged).
func (s *Switch) wakeSTP() {
	select {
	case s.stpWake <- struct{}{}:
	default:
	}
}

// STPChanged is signalled when BPDUs arrived or the STP timers are due:
// the daemon then calls RunSTP.
func (s *Switch) STPChanged() <-chan struct{} { return s.stpWake }

// RunSTP runs every bridge's STP (stp_run): received BPDUs, then the
// timers. It reports whether the root, a port's state or a role changed,
// so that the status columns are written.
func (s *Switch) RunSTP() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	before := s.stpView()
	for {
		var f stpFrame
		select {
		case f = <-s.stpRx:
		default:
		}
		if f.frame == nil {
			break
		}
		s.receiveBPDU(f)
	}
	for _, r := range s.stps {
		r.stp.Tick(int(now.Sub(r.last) / time.Millisecond))
		r.last = now
	}
	changed := s.takeSTPChanges(now)
	s.armSTP()
	return changed || s.stpView() != before
}

// stpView sums up what the STP status columns show but the counters and
// times. Caller holds mu.
func (s *Switch) stpView() string {
	var w strings.Builder
	for _, name := range slices.Sorted(maps.Keys(s.stps)) {
		r := s.stps[name]
		fmt.Fprintf(&w, "%s %s %d;", r.stp.BridgeID(), r.stp.DesignatedRoot(), r.stp.RootPathCost())
		for no, n := range r.names {
			if n != "" {
				p := r.stp.Port(no)
				fmt.Fprintf(&w, "%s %s %s;", n, p.State(), p.Role())
			}
		}
	}
	return w.String()
}

// receiveBPDU hands f to the STP of the port that received it. Caller
// holds mu.
func (s *Switch) receiveBPDU(f stpFrame) {
	for _, ifc := range s.ifaces {
		if ifc.dpPort != f.dpPort || ifc.state != StateAttached {
			continue
		}
		r := s.stps[ifc.bridge]
		if r == nil {
			return
		}
		no := slices.Index(r.names[:], ifc.spec.Name)
		payload, ok := stp.Payload(f.frame)
		if no < 0 || !ok {
			return
		}
		if err := r.stp.Received(no, payload); err != nil {
			s.stpWarn("%s: %v", r.stp.Name(), err)
		}
		return
	}
}

// takeSTPChanges notes the ports whose state changed, flushes the MAC
// tables of bridges with a topology change and pushes the new gates. It
// reports whether any state changed. Caller holds mu.
func (s *Switch) takeSTPChanges(now time.Time) bool {
	changed := false
	for _, name := range slices.Sorted(maps.Keys(s.stps)) {
		r := s.stps[name]
		for _, no := range r.stp.TakeChanged() {
			r.entered[no] = now
			changed = true
		}
		if r.stp.TakeFDBFlush() {
			if rb := s.bridges[name]; rb != nil {
				rb.of.FDBFlush()
			}
		}
	}
	s.pushConfigs()
	return changed
}

// armSTP schedules the next RunSTP while some bridge runs STP. Caller
// holds mu.
func (s *Switch) armSTP() {
	if s.stpTimer != nil {
		s.stpTimer.Stop()
		s.stpTimer = nil
	}
	if len(s.stps) > 0 {
		s.stpTimer = time.AfterFunc(stpInterval, s.wakeSTP)
	}
}

// stpWarn logs a warning about STP at most once in lacpWarnEvery, as OVS
// rate-limits them. Caller holds mu.
func (s *Switch) stpWarn(format string, args ...any) {
	if now := time.Now(); now.Sub(s.stpWarned) >= lacpWarnEvery {
		s.stpWarned = now
		s.stpLogger().Warnf(format, args...)
	}
}

// stpBridgeStatus is Bridge.status for a bridge running STP
// (br_refresh_stp_status); nil otherwise. Caller holds mu.
func (s *Switch) stpBridgeStatus(name string) map[string]string {
	r := s.stps[name]
	if r == nil {
		return nil
	}
	return map[string]string{
		"stp_bridge_id":       r.stp.BridgeID().String(),
		"stp_designated_root": r.stp.DesignatedRoot().String(),
		"stp_root_path_cost":  strconv.Itoa(r.stp.RootPathCost()),
	}
}

// stpPortStatus is Port.status and Port.statistics for a port running
// STP (port_refresh_stp_status, port_refresh_stp_stats); nil otherwise.
// Caller holds mu.
func (s *Switch) stpPortStatus(bridge string, p PortSpec) (map[string]string, map[string]int) {
	r := s.stps[bridge]
	if r == nil || len(p.Ifaces) != 1 {
		return nil, nil
	}
	no := slices.Index(r.names[:], p.Ifaces[0].Name)
	if no < 0 {
		return nil, nil
	}
	port := r.stp.Port(no)
	tx, rx, errs := port.Counts()
	return map[string]string{
			"stp_port_id":      strconv.Itoa(int(port.ID())),
			"stp_state":        port.State().String(),
			"stp_sec_in_state": strconv.Itoa(int(time.Since(r.entered[no]) / time.Second)),
			"stp_role":         port.Role().String(),
		}, map[string]int{
			"stp_tx_count": tx, "stp_rx_count": rx, "stp_error_count": errs,
		}
}

// STPShow is `ovs-appctl stp/show [bridge]`.
func (s *Switch) STPShow(args []string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return showSpanning(s.stps, args, "no such stp object", func(r *stpRun, w *strings.Builder) { r.stp.Show(w) })
}

// showSpanning is stp/show and rstp/show: the bridge named in args, or
// every bridge in name order; unknown is the error for an unknown one.
func showSpanning[R any](runs map[string]R, args []string, unknown string, show func(R, *strings.Builder)) (string, error) {
	var w strings.Builder
	names := slices.Sorted(maps.Keys(runs))
	if len(args) > 0 {
		if _, ok := runs[args[0]]; !ok {
			return "", errors.New(unknown)
		}
		names = args[:1]
	}
	for _, name := range names {
		show(runs[name], &w)
	}
	return w.String(), nil
}

// STPTCN is `ovs-appctl stp/tcn [bridge]`: a topology change on the
// bridge, or on every bridge running STP.
func (s *Switch) STPTCN(args []string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(args) > 0 {
		r := s.stps[args[0]]
		if r == nil {
			return "", fmt.Errorf("no such stp object")
		}
		r.stp.TopologyChange()
	} else {
		for _, r := range s.stps {
			r.stp.TopologyChange()
		}
	}
	s.takeSTPChanges(time.Now())
	return "OK\n", nil
}
