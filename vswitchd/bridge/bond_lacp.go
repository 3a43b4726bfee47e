package bridge

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/govs/govs/schema/vswitchd"
	"github.com/govs/govs/vswitchd/lacp"
	"github.com/govs/govs/vswitchd/stp"
)

// LACP on bonds, as OVS's bridge.c port_configure_lacp and
// ofproto-dpif's bundle_run: each bond with lacp=active|passive runs a
// lacp.LACP; its members' slow protocols frames come from the datapath
// (SlowProtocols) into a queue that runBonds drains, and the PDUs it
// sends leave through the member's datapath port. A member is enabled
// only while LACP lets it (attached to the partner's aggregator, partner
// in sync).

// LACPSpec is a bond's LACP configuration, from its Port row.
type LACPSpec struct {
	Active bool
	// Fast is other_config:lacp-time=fast.
	Fast bool
	// SysID is other_config:lacp-system-id, nil for the bridge's MAC.
	SysID net.HardwareAddr
	// SysPriority is other_config:lacp-system-priority, or 65534.
	SysPriority uint16
	// Key is other_config:lacp-aggregation-key, 0 for the key member's
	// port ID.
	Key uint16
	// FallbackAB is other_config:lacp-fallback-ab.
	FallbackAB bool
}

// SlowProtocols is implemented by a Backer that hands bond members' slow
// protocols frames to the switch and sends frames on datapath ports.
type SlowProtocols interface {
	SetSlowProtocolsHandler(f func(dpPort uint32, frame []byte))
	SendFrame(dpPort uint32, frame []byte) error
}

// lacpFrame is one slow protocols frame a member received.
type lacpFrame struct {
	dpPort uint32
	frame  []byte
}

// lacpQueueLen bounds the frames waiting for runBonds: a PDU a second per
// member at most from a sane partner; beyond, frames are dropped.
const lacpQueueLen = 256

// smapInt is OVS's smap_get_int: the integer value of key, def if it is
// absent or not an integer.
func smapInt(m map[string]string, key string, def int) int {
	v, err := strconv.Atoi(m[key])
	if err != nil {
		return def
	}
	return v
}

// lacpSpec reads p's LACP settings as port_configure_lacp, adding to
// problems what OVS warns about; nil when LACP is off.
func lacpSpec(p vswitchd.Port, problems *[]string) *LACPSpec {
	if p.LACP == nil || *p.LACP == vswitchd.PortLACPOff {
		return nil
	}
	l := &LACPSpec{Active: *p.LACP == vswitchd.PortLACPActive}
	if id, ok := p.OtherConfig["lacp-system-id"]; ok {
		mac, err := net.ParseMAC(id)
		if err != nil || len(mac) != 6 {
			*problems = append(*problems, fmt.Sprintf("port %s: Invalid lacp-system-id (%s)", p.Name, id))
			return nil
		}
		if string(mac) == string(make([]byte, 6)) {
			*problems = append(*problems, fmt.Sprintf("port %s: Invalid zero lacp-system-id", p.Name))
			return nil
		}
		l.SysID = mac
	}
	// Bondable links are preferred: a bond's default is 65534.
	l.SysPriority = 65534
	if pri := smapInt(p.OtherConfig, "lacp-system-priority", 0); pri > 0 && pri <= 65535 {
		l.SysPriority = uint16(pri)
	}
	if k := smapInt(p.OtherConfig, "lacp-aggregation-key", 0); k > 0 && k <= 65535 {
		l.Key = uint16(k)
	}
	l.Fast = strings.EqualFold(p.OtherConfig["lacp-time"], "fast")
	l.FallbackAB = p.OtherConfig["lacp-fallback-ab"] == "true"
	return l
}

// configureLACP starts, reconfigures or stops b's LACP to follow its
// spec. Caller holds mu.
func (s *Switch) configureLACP(b *bondRun) {
	spec := b.spec.LACP
	if spec == nil {
		b.lacp = nil
		return
	}
	set := lacp.Settings{Name: b.name, SysPriority: spec.SysPriority, Active: spec.Active, Fast: spec.Fast, FallbackAB: spec.FallbackAB}
	switch {
	case spec.SysID != nil:
		copy(set.SysID[:], spec.SysID)
	case s.bridges[b.bridge] != nil:
		copy(set.SysID[:], s.bridges[b.bridge].mac)
	}
	if b.lacp == nil {
		b.lacp = lacp.New(set, func(f string, args ...any) { s.log.Warnf(f, args...) })
		for n := range b.members {
			if ifc := s.ifaces[n]; ifc != nil {
				s.registerLACPMember(b, ifc)
			}
		}
		return
	}
	b.lacp.Configure(set)
}

// registerLACPMember registers ifc with b's LACP (iface_configure_lacp):
// port ID other_config:lacp-port-id or the OpenFlow port number, priority
// lacp-port-priority or 65535. Caller holds mu.
func (s *Switch) registerLACPMember(b *bondRun, ifc *iface) {
	if b.lacp == nil {
		return
	}
	id := ifc.spec.LACPPortID
	if id <= 0 || id > 65535 {
		id = ifc.ofport
	}
	pri := ifc.spec.LACPPortPriority
	if pri <= 0 || pri > 65535 {
		pri = 65535
	}
	var key uint16
	if b.spec.LACP != nil {
		key = b.spec.LACP.Key
	}
	b.lacp.Register(ifc.spec.Name, lacp.MemberSettings{PortID: uint16(id), PortPriority: uint16(pri), Key: key}, time.Now())
}

// removeMember takes member n out of b. Caller holds mu.
func (s *Switch) removeMember(b *bondRun, n string) {
	delete(b.members, n)
	if b.lacp != nil {
		b.lacp.Unregister(n)
	}
}

// slowFrame is the SlowProtocols handler: it queues the frame for
// runBonds, from the packet path, without blocking.
func (s *Switch) slowFrame(dpPort uint32, frame []byte) {
	if len(frame) >= 6 && stp.IsBPDU([6]byte(frame[:6])) {
		// To the bridge's STP or RSTP: each ignores the ports it
		// does not run on.
		s.queueBPDU(s.stpRx, s.wakeSTP, "stp_rx_dropped", dpPort, frame)
		s.queueBPDU(s.rstpRx, s.wakeRSTP, "rstp_rx_dropped", dpPort, frame)
		return
	}
	select {
	case s.lacpRx <- lacpFrame{dpPort, frame}:
		s.wakeBonds()
	default:
		s.count("lacp_rx_dropped")
	}
}

// receiveLACP hands the queued slow protocols frames to their bonds'
// LACP. Caller holds mu.
func (s *Switch) receiveLACP(now time.Time) {
	for {
		var f lacpFrame
		select {
		case f = <-s.lacpRx:
		default:
			return
		}
		for _, ifc := range s.ifaces {
			if ifc.dpPort != f.dpPort || ifc.state != StateAttached {
				continue
			}
			b := s.bondOf(ifc)
			if b == nil || b.lacp == nil {
				break
			}
			pdu, err := lacp.ParseFrame(f.frame)
			if err == nil {
				_, err = b.lacp.Process(ifc.spec.Name, pdu, now)
			}
			if err != nil {
				s.lacpWarn("%s: received an unparsable LACP PDU.", b.name)
			}
			break
		}
	}
}

// runLACP runs b's LACP (lacp_run): carrier changes first, then PDUs due
// leave on their members. It returns when it must run again, zero if
// never. fresh reads the carriers from the kernel. Caller holds mu.
func (s *Switch) runLACP(b *bondRun, fresh bool, now time.Time) time.Time {
	if b.lacp == nil {
		for _, n := range b.names() {
			s.carrier(s.ifaces[n], fresh)
		}
		return time.Time{}
	}
	for _, n := range b.names() {
		m := b.members[n]
		if up := s.carrier(s.ifaces[n], fresh); up != m.link {
			m.link = up
			b.lacp.CarrierChanged(n, up, now)
		}
	}
	sp, _ := s.backer.(SlowProtocols)
	b.lacp.Run(now, func(n string, p lacp.PDU) {
		ifc := s.ifaces[n]
		if sp == nil || ifc == nil || ifc.dpPort == 0 || !b.members[n].link {
			return
		}
		var src [6]byte
		if ifc.link != nil {
			copy(src[:], ifc.link.MAC)
		}
		if err := sp.SendFrame(ifc.dpPort, p.Frame(src)); err != nil {
			s.lacpWarn("member %s: failed to send LACP PDU: %v", n, err)
		}
	})
	return b.lacp.Next()
}

// lacpCurrent is Interface.lacp_current for ifc: nil when its port runs
// no LACP. Caller holds mu.
func (s *Switch) lacpCurrent(ifc *iface) *bool {
	b := s.bondOf(ifc)
	if b == nil || b.lacp == nil {
		return nil
	}
	cur := b.lacp.IsCurrent(ifc.spec.Name)
	return &cur
}

// LACPShow is `ovs-appctl lacp/show [port]`.
func (s *Switch) LACPShow(args []string) (string, error) {
	return s.lacpPrint(args, (*lacp.LACP).Show)
}

// LACPShowStats is `ovs-appctl lacp/show-stats [port]`.
func (s *Switch) LACPShowStats(args []string) (string, error) {
	return s.lacpPrint(args, (*lacp.LACP).ShowStats)
}

func (s *Switch) lacpPrint(args []string, print func(*lacp.LACP, *strings.Builder)) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var w strings.Builder
	if len(args) > 0 {
		b := s.bonds[args[0]]
		if b == nil || b.lacp == nil {
			return "", fmt.Errorf("no such lacp object")
		}
		print(b.lacp, &w)
		return w.String(), nil
	}
	for _, n := range s.bondNames() {
		if b := s.bonds[n]; b.lacp != nil {
			print(b.lacp, &w)
		}
	}
	return w.String(), nil
}

// lacpWarn logs a warning about LACP at most once in lacpWarnEvery, as
// OVS rate-limits them. Caller holds mu.
func (s *Switch) lacpWarn(format string, args ...any) {
	if now := time.Now(); now.Sub(s.lacpWarned) >= lacpWarnEvery {
		s.lacpWarned = now
		s.log.Warnf(format, args...)
	}
}

// lacpWarnEvery is OVS's rate limit of LACP's warnings (one a 5 s).
const lacpWarnEvery = 5 * time.Second
